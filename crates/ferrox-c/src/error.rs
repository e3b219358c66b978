//! Statuses, the error handle, and the one guard every entry point runs in.
//!
//! No global state: an error belongs to the call that failed. Each entry
//! point returns a [`ferrox_status`]; when it is not [`FERROX_OK`] and the
//! caller passed an `err` slot, the call writes a new [`ferrox_error`] there
//! that owns its message. There is no process-wide handler and no
//! thread-local "last error", so a Swift Task that hops threads between the
//! call and reading the message still reads its own message.

use std::any::Any;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ferrox::ErrorKind;

use crate::handle::{free_handle, Handle, Slot};

/// The result of every fallible call: [`FERROX_OK`] (0) or one of the
/// `FERROX_ERROR_*` codes. A plain integer, so a binding may compare it with
/// any value safely.
pub type ferrox_status = i32;

/// Success.
pub const FERROX_OK: ferrox_status = 0;
/// Shapes that do not fit together (broadcasting, reshape, matmul, ...).
pub const FERROX_ERROR_SHAPE: ferrox_status = 1;
/// A dtype the op does not accept.
pub const FERROX_ERROR_DTYPE: ferrox_status = 2;
/// An axis out of range or repeated.
pub const FERROX_ERROR_AXIS: ferrox_status = 3;
/// An index out of range.
pub const FERROX_ERROR_INDEX: ferrox_status = 4;
/// A value that is not allowed (negative size, zero step, ...).
pub const FERROX_ERROR_VALUE: ferrox_status = 5;
/// A transform rule or feature that does not exist for this op.
pub const FERROX_ERROR_UNSUPPORTED: ferrox_status = 6;
/// Memory could not be allocated.
pub const FERROX_ERROR_MEMORY: ferrox_status = 7;
/// A failure while computing.
pub const FERROX_ERROR_RUNTIME: ferrox_status = 8;
/// A file that could not be opened, read, written or renamed.
pub const FERROX_ERROR_IO: ferrox_status = 9;
/// A file that does not exist.
pub const FERROX_ERROR_NOT_FOUND: ferrox_status = 10;
/// A required pointer argument was NULL.
pub const FERROX_ERROR_NULL_POINTER: ferrox_status = 11;
/// A handle that is not a live handle of the expected type (freed, or never
/// made by this library), as far as the library can tell.
pub const FERROX_ERROR_INVALID_HANDLE: ferrox_status = 12;
/// An argument that is malformed at the C level: an unknown dtype code, a
/// string that is not UTF-8, a negative dimension.
pub const FERROX_ERROR_INVALID_ARGUMENT: ferrox_status = 13;
/// A closure's C callback returned a non-zero status (its message, if it
/// wrote one, is in the error).
pub const FERROX_ERROR_CALLBACK: ferrox_status = 14;
/// A bug inside ferrox: a Rust panic, caught at the boundary. The library
/// stays usable.
pub const FERROX_ERROR_PANIC: ferrox_status = 15;

/// An error from one call: a status and a message that starts with the name
/// of the op that failed. Owned by the caller, who frees it with
/// [`ferrox_error_free`]; it may be read and freed on any thread.
pub struct ferrox_error {
    magic: u64,
    status: ferrox_status,
    message: CString,
}

crate::handle::impl_handle!(ferrox_error, 0xfe77_0000_0000_e770);

/// An error on its way out of an entry point: a status and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CError {
    /// One of the `FERROX_ERROR_*` codes.
    pub status: ferrox_status,
    /// The message, starting with the op's name.
    pub message: String,
}

/// What a failing callback leaves on the ferrox error it becomes, so that
/// the error keeps its status when it comes back out through a transform,
/// a trace or a waiting thread.
#[derive(Debug)]
pub(crate) struct CallbackFailure {
    pub(crate) message: String,
}

impl CError {
    /// An error with `status` and `message` (which should name the op).
    pub fn new(status: ferrox_status, message: impl Into<String>) -> CError {
        CError {
            status,
            message: message.into(),
        }
    }
    /// `op: argument `arg` is NULL`.
    pub fn null(op: &str, arg: &str) -> CError {
        CError::new(
            FERROX_ERROR_NULL_POINTER,
            format!("{op}: argument `{arg}` is NULL"),
        )
    }
    /// A malformed C-level argument.
    pub fn invalid(op: &str, message: impl std::fmt::Display) -> CError {
        CError::new(FERROX_ERROR_INVALID_ARGUMENT, format!("{op}: {message}"))
    }
    fn panic(op: &str, payload: &(dyn Any + Send)) -> CError {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        CError::new(
            FERROX_ERROR_PANIC,
            format!("{op}: internal error (a panic inside ferrox): {what}"),
        )
    }
}

/// The status of each [`ErrorKind`].
pub fn status_of(kind: ErrorKind) -> ferrox_status {
    match kind {
        ErrorKind::Shape => FERROX_ERROR_SHAPE,
        ErrorKind::Dtype => FERROX_ERROR_DTYPE,
        ErrorKind::Axis => FERROX_ERROR_AXIS,
        ErrorKind::Index => FERROX_ERROR_INDEX,
        ErrorKind::Value => FERROX_ERROR_VALUE,
        ErrorKind::Unsupported => FERROX_ERROR_UNSUPPORTED,
        ErrorKind::Memory => FERROX_ERROR_MEMORY,
        ErrorKind::Runtime => FERROX_ERROR_RUNTIME,
        ErrorKind::Io => FERROX_ERROR_IO,
        ErrorKind::NotFound => FERROX_ERROR_NOT_FOUND,
    }
}

impl From<ferrox::Error> for CError {
    fn from(e: ferrox::Error) -> CError {
        if let Some(cb) = e.payload::<CallbackFailure>() {
            return CError::new(FERROX_ERROR_CALLBACK, cb.message.clone());
        }
        CError::new(status_of(e.kind()), e.to_string())
    }
}

/// The result type of entry-point bodies.
pub type CResult<T> = Result<T, CError>;

/// Runs an entry point's body: catches any panic (none may cross the C
/// boundary), turns the result into a status, and on failure writes a new
/// [`ferrox_error`] to `err` (when the caller gave a slot; an error it
/// already held there is freed first).
pub(crate) fn guard(
    op: &'static str,
    err: Slot<'_, ferrox_error>,
    body: impl FnOnce() -> CResult<()>,
) -> ferrox_status {
    let result =
        catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|p| Err(CError::panic(op, &*p)));
    match result {
        Ok(()) => FERROX_OK,
        Err(e) => {
            let status = e.status;
            if let Some(slot) = err {
                // An old error of ours is replaced (and freed); anything
                // else in the slot is overwritten without being freed.
                let new = Some(Box::new(ferrox_error::from_cerror(e)));
                match slot.take() {
                    Some(old) if !old.is_live() => std::mem::forget(old),
                    _ => {}
                }
                *slot = new;
            }
            status
        }
    }
}

impl ferrox_error {
    pub(crate) fn from_cerror(e: CError) -> ferrox_error {
        ferrox_error::wrap(e.status, cstring_lossy(e.message))
    }
    fn wrap(status: ferrox_status, message: CString) -> ferrox_error {
        ferrox_error {
            magic: Self::MAGIC,
            status,
            message,
        }
    }
    pub(crate) fn message(&self) -> String {
        self.message.to_string_lossy().into_owned()
    }
}

/// `s` as a C string; interior NUL bytes become U+FFFD.
pub(crate) fn cstring_lossy(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let s = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{fffd}");
        CString::new(s).unwrap_or_default()
    })
}

/// A new error with `status` and `message`, for a closure's C callback to
/// report why it failed (write it to the callback's `err` slot and return a
/// non-zero status). `message` may be NULL. Returns NULL only if `status` is
/// [`FERROX_OK`]. Free it with [`ferrox_error_free`] unless ferrox took it.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_error_new(
    status: ferrox_status,
    message: *const c_char,
) -> Option<Box<ferrox_error>> {
    if status == FERROX_OK {
        return None;
    }
    let text = if message.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string (documented).
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    };
    catch_unwind(|| Box::new(ferrox_error::wrap(status, cstring_lossy(text)))).ok()
}

/// The status of `err`, or [`FERROX_ERROR_INVALID_HANDLE`] if `err` is NULL
/// or not a live error.
#[no_mangle]
pub extern "C" fn ferrox_error_status(err: Option<&ferrox_error>) -> ferrox_status {
    match err {
        Some(e) if e.is_live() => e.status,
        _ => FERROX_ERROR_INVALID_HANDLE,
    }
}

/// The message of `err`: a NUL-terminated UTF-8 string owned by `err`,
/// valid until `err` is freed. NULL if `err` is NULL or not a live error.
#[no_mangle]
pub extern "C" fn ferrox_error_message(err: Option<&ferrox_error>) -> *const c_char {
    match err {
        Some(e) if e.is_live() => e.message.as_ptr(),
        _ => std::ptr::null(),
    }
}

/// Frees an error. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_error_free(err: Option<Box<ferrox_error>>) -> ferrox_status {
    free_handle("ferrox_error_free", err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrox::Error;

    #[test]
    fn every_kind_has_its_own_status() {
        let kinds = [
            ErrorKind::Shape,
            ErrorKind::Dtype,
            ErrorKind::Axis,
            ErrorKind::Index,
            ErrorKind::Value,
            ErrorKind::Unsupported,
            ErrorKind::Memory,
            ErrorKind::Runtime,
            ErrorKind::Io,
            ErrorKind::NotFound,
        ];
        let mut seen: Vec<_> = kinds.iter().map(|&k| status_of(k)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), kinds.len());
        assert!(!seen.contains(&FERROX_OK));
    }

    #[test]
    fn conversion_keeps_the_op_and_the_message() {
        let e: CError = Error::new(ErrorKind::Shape, "matmul", "[3, 4] @ [5, 2]").into();
        assert_eq!(e.status, FERROX_ERROR_SHAPE);
        assert_eq!(e.message, "matmul: [3, 4] @ [5, 2]");
    }

    #[test]
    fn a_callback_failure_keeps_its_status_through_clones() {
        let e = Error::new(ErrorKind::Runtime, "closure", "x").with_payload(CallbackFailure {
            message: "closure: the callback returned status 7: boom".into(),
        });
        let waiter = e.clone();
        let c: CError = waiter.into();
        assert_eq!(c.status, FERROX_ERROR_CALLBACK);
        assert!(c.message.contains("boom"));
    }

    #[test]
    fn guard_writes_an_error_and_catches_panics() {
        let mut slot: Option<Box<ferrox_error>> = None;
        let s = guard("t", Some(&mut slot), || Err(CError::invalid("t", "bad")));
        assert_eq!(s, FERROX_ERROR_INVALID_ARGUMENT);
        assert_eq!(slot.as_ref().map(|e| e.message()), Some("t: bad".into()));
        // A second failure replaces (and frees) the first error.
        let s = guard("p", Some(&mut slot), || panic!("oops"));
        assert_eq!(s, FERROX_ERROR_PANIC);
        let msg = slot.as_ref().map(|e| e.message()).unwrap_or_default();
        assert!(
            msg.starts_with("p: internal error") && msg.ends_with("oops"),
            "{msg}"
        );
        // Success leaves the slot alone; no slot is fine too.
        assert_eq!(guard("ok", Some(&mut slot), || Ok(())), FERROX_OK);
        assert!(slot.is_some());
        assert_eq!(
            guard("x", None, || Err(CError::null("x", "a"))),
            FERROX_ERROR_NULL_POINTER
        );
    }

    #[test]
    fn nul_bytes_do_not_truncate_messages() {
        let c = cstring_lossy("a\0b".into());
        assert_eq!(c.to_str().ok(), Some("a\u{fffd}b"));
    }
}
