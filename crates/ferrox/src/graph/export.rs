//! What an exported function's file needs from a primitive: a name, its
//! parameters as JSON, and a way to build the node again on import.
//!
//! A primitive opts in by deriving `serde::Serialize`/`Deserialize` for its
//! parameters and implementing [`Exportable`] next to its definition: one
//! constant (the kind written to the file) and one function, `rebuild`,
//! which builds the node again *through the op's builder*, so that every
//! parameter read from a file is validated exactly as the user's arguments
//! were (a file can lie; a builder rejects what its kernel could not run).
//! `crate::io::function` keeps the table of exportable kinds; a primitive
//! that is not in it is refused with "export of NAME is not supported".
//!
//! Rebuilding through builders is also why the file holds the simplified
//! but unfused tape: fusion runs again on import, on ops the builders made.

use super::array::Array;
use super::primitive::Primitive;
use crate::error::{Error, Result};

/// A primitive whose parameters can be written to an exported function's
/// file and read back.
///
/// ```
/// use ferrox::graph::export::Exportable;
/// use ferrox::ops::unary::{Unary, UnaryOp};
/// let x = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
/// let y = Unary(UnaryOp::Abs).rebuild(&[x])?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0]);
/// assert_eq!(<Unary as Exportable>::KIND, "unary");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Exportable: Primitive + serde::Serialize + serde::de::DeserializeOwned {
    /// The name this kind of primitive has in files (unique, stable).
    const KIND: &'static str;

    /// Builds this op's node on `inputs` again, through the op's builder
    /// (which validates the parameters against the inputs). Ops with several
    /// outputs implement [`rebuild_multi`](Self::rebuild_multi) instead.
    fn rebuild(&self, _inputs: &[Array]) -> Result<Array> {
        Err(Error::runtime(
            self.name(),
            "an op with several outputs is rebuilt with rebuild_multi",
        ))
    }

    /// Every output of the rebuilt node, in order.
    fn rebuild_multi(&self, inputs: &[Array]) -> Result<Vec<Array>> {
        Ok(vec![self.rebuild(inputs)?])
    }
}

/// The input `i` of a rebuilt op, or an error naming the op when a file
/// gave it fewer inputs.
///
/// ```
/// let e = ferrox::graph::export::input(&[], 0, "exp").unwrap_err();
/// assert!(e.to_string().contains("exp"));
/// ```
pub fn input<'a>(inputs: &'a [Array], i: usize, op: &str) -> Result<&'a Array> {
    inputs.get(i).ok_or_else(|| wrong_inputs(op, inputs.len()))
}

/// The error for a rebuilt op given the wrong number of inputs.
///
/// ```
/// let e = ferrox::graph::export::wrong_inputs("matmul", 3);
/// assert!(e.to_string().contains("3 inputs"));
/// ```
pub fn wrong_inputs(op: &str, got: usize) -> Error {
    Error::value(op, format!("an exported {op} has {got} inputs"))
}

/// Exactly `N` inputs, as an array to destructure, or the error naming
/// the op.
///
/// ```
/// let x = ferrox::zeros(&[1], ferrox::DType::Float32)?;
/// let inputs = [x];
/// assert!(ferrox::graph::export::args::<2>(&inputs, "add").is_err());
/// let [y] = ferrox::graph::export::args::<1>(&inputs, "exp")?;
/// assert_eq!(y.shape(), &[1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn args<'a, const N: usize>(inputs: &'a [Array], op: &str) -> Result<&'a [Array; N]> {
    inputs
        .try_into()
        .map_err(|_| wrong_inputs(op, inputs.len()))
}

/// Normalised axes (or sizes) as the signed values builders take; a value
/// past `isize::MAX` (only a corrupt file has one) saturates, so the builder
/// rejects it.
///
/// ```
/// assert_eq!(ferrox::graph::export::signed(&[0, 2]), vec![0isize, 2]);
/// assert_eq!(ferrox::graph::export::signed(&[usize::MAX]), vec![isize::MAX]);
/// ```
pub fn signed(v: &[usize]) -> Vec<isize> {
    v.iter()
        .map(|&a| isize::try_from(a).unwrap_or(isize::MAX))
        .collect()
}

thread_local! {
    // How many exports are tracing on this thread (nested exports count
    // each). A plain counter, not a resource: nothing to tear down.
    static EXPORT_TRACES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether the calling thread is inside an export's trace (MLX's
/// `in_export_tracing`). Ops that cannot run on this build but can still be
/// recorded for another one (a custom GPU kernel) build their node only
/// then.
///
/// ```
/// use ferrox::graph::export::{in_export_trace, with_export_trace};
/// assert!(!in_export_trace());
/// assert!(with_export_trace(in_export_trace));
/// ```
pub fn in_export_trace() -> bool {
    EXPORT_TRACES.try_with(|c| c.get() > 0).unwrap_or(false)
}

/// Runs `f` as (part of) an export's trace: [`in_export_trace`] is true on
/// this thread inside it, and false again afterwards, on unwind too.
///
/// ```
/// assert_eq!(ferrox::graph::export::with_export_trace(|| 3), 3);
/// ```
pub fn with_export_trace<R>(f: impl FnOnce() -> R) -> R {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            let _ = EXPORT_TRACES.try_with(|c| c.set(c.get().saturating_sub(1)));
        }
    }
    let _ = EXPORT_TRACES.try_with(|c| c.set(c.get() + 1));
    let _leave = Leave;
    f()
}
