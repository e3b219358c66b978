//! The one error type of ferrox.
//!
//! Every op validates its inputs when it builds its node and returns an
//! [`Error`] naming the op and the offending values. Nothing a user passes in
//! may panic: bindings map [`ErrorKind`] onto their own exception types
//! (`ValueError`, `TypeError`, `IndexError`, ...).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// What went wrong, coarsely: bindings choose an exception type from this.
///
/// ```
/// use ferrox::{Array, ErrorKind};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
/// let err = a.reshape(&[2, 2]).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Shape);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Shapes that do not fit together (broadcasting, reshape, matmul, ...).
    Shape,
    /// A dtype the op does not accept.
    Dtype,
    /// An axis out of range or repeated.
    Axis,
    /// An index out of range.
    Index,
    /// A value that is not allowed (negative size, zero step, ...).
    Value,
    /// A transform rule or feature that does not exist for this op.
    Unsupported,
    /// Memory could not be allocated.
    Memory,
    /// A failure while computing (for example a kernel that failed); shared
    /// by every thread that waited on the failed node.
    Runtime,
    /// A file that could not be opened, read, written or renamed (the
    /// operating system's error; `OSError` in Python). A file that opened
    /// but holds bad contents is a [`Value`](ErrorKind::Value) error.
    Io,
    /// A file that does not exist (`FileNotFoundError` in Python).
    NotFound,
}

/// An error from an op, a transform or the runtime.
///
/// The message always starts with the name of the op, e.g.
/// `matmul: a has shape [3, 4] and b has shape [5, 2]; 4 != 5`.
///
/// ```
/// use ferrox::Array;
/// let a = ferrox::zeros(&[3, 4], ferrox::DType::Float32).unwrap();
/// let b = ferrox::zeros(&[5, 2], ferrox::DType::Float32).unwrap();
/// let err = ferrox::matmul(&a, &b).unwrap_err();
/// assert!(err.to_string().starts_with("matmul:"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    kind: ErrorKind,
    op: String,
    message: String,
    payload: Payload,
}

/// What a binding attached to an error (see [`Error::with_payload`]). Two
/// errors compare equal only when they carry the same attachment (or none).
#[derive(Clone, Default)]
struct Payload(Option<Arc<dyn Any + Send + Sync>>);

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Payload {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, self.message)
    }
}

impl Error {
    /// Builds an error of `kind` raised by `op`.
    ///
    /// ```
    /// use ferrox::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::Value, "arange", "step must not be 0");
    /// assert_eq!(e.to_string(), "arange: step must not be 0");
    /// ```
    pub fn new(kind: ErrorKind, op: impl Into<String>, message: impl Into<String>) -> Self {
        Error {
            kind,
            op: op.into(),
            message: message.into(),
            payload: Payload::default(),
        }
    }
    /// Attaches a value that caused this error, for the face that raised it
    /// to find again: the Python binding attaches the exception a traced
    /// Python function raised, so every thread that waited on that trace
    /// (and received a clone of this error) re-raises that very exception.
    /// Clones share the attachment.
    ///
    /// ```
    /// use ferrox::{Error, ErrorKind};
    /// let e = Error::new(ErrorKind::Runtime, "python", "boom").with_payload(42u32);
    /// let waiter = e.clone();
    /// assert_eq!(waiter.payload::<u32>(), Some(&42));
    /// assert_eq!(waiter.payload::<String>(), None);
    /// ```
    pub fn with_payload(mut self, payload: impl Any + Send + Sync) -> Self {
        self.payload = Payload(Some(Arc::new(payload)));
        self
    }
    /// The attachment of [`with_payload`](Self::with_payload), if it is a `T`.
    pub fn payload<T: Any>(&self) -> Option<&T> {
        self.payload.0.as_deref()?.downcast_ref()
    }
    /// The coarse category of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The op (or transform) that raised the error.
    pub fn op(&self) -> &str {
        &self.op
    }
    /// The message without the op prefix.
    pub fn message(&self) -> &str {
        &self.message
    }
    pub(crate) fn shape(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Shape, op, message)
    }
    pub(crate) fn dtype(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Dtype, op, message)
    }
    pub(crate) fn axis(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Axis, op, message)
    }
    pub(crate) fn index(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, op, message)
    }
    pub(crate) fn value(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, op, message)
    }
    pub(crate) fn unsupported(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, op, message)
    }
    pub(crate) fn runtime(op: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, op, message)
    }
    /// An operating-system error on `path` during `op`: [`ErrorKind::NotFound`]
    /// for a missing file, [`ErrorKind::Io`] otherwise.
    pub(crate) fn io(op: &str, path: &std::path::Path, e: &std::io::Error) -> Self {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            _ => ErrorKind::Io,
        };
        Self::new(kind, op, format!("{}: {e}", path.display()))
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
