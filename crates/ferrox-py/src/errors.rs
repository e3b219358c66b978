//! `ferrox::Error` → Python exceptions, by [`ErrorKind`].

use ferrox::{Error, ErrorKind};
use pyo3::exceptions::{
    PyFileNotFoundError, PyMemoryError, PyNotImplementedError, PyOSError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;

/// The Python exception for a ferrox error: shape, axis and value errors
/// are `ValueError`, dtype errors `DtypeError` (a `TypeError` and a
/// `ValueError`), index errors `IndexingError` (an `IndexError` and a
/// `ValueError`),
/// a missing transform rule `NotImplementedError`, allocation failures
/// `MemoryError`, failed kernels `RuntimeError`, file errors `OSError`
/// (`FileNotFoundError` for a missing file). The message is the error's
/// text (`op: message`). An error made from a Python exception
/// ([`from_py`]) raises that exception.
pub fn to_py(e: Error) -> PyErr {
    if let Some(raised) = e.payload::<PyErr>() {
        return crate::gil::attach(|py| raised.clone_ref(py));
    }
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Shape | ErrorKind::Axis | ErrorKind::Value => PyValueError::new_err(msg),
        ErrorKind::Dtype => DTYPE_ERROR.err(msg),
        ErrorKind::Index => INDEXING_ERROR.err(msg),
        ErrorKind::Unsupported => PyNotImplementedError::new_err(msg),
        ErrorKind::Memory => PyMemoryError::new_err(msg),
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
        ErrorKind::Io => PyOSError::new_err(msg),
        ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
    }
}

/// An exception class of `ferrox.core` deriving from two builtins, made once
/// per interpreter.
struct DualError {
    cell: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>>,
    name: &'static str,
    bases: [&'static str; 2],
    doc: &'static str,
}

impl DualError {
    const fn new(name: &'static str, bases: [&'static str; 2], doc: &'static str) -> Self {
        DualError {
            cell: pyo3::sync::PyOnceLock::new(),
            name,
            bases,
            doc,
        }
    }

    fn get<'py>(&'py self, py: Python<'py>) -> PyResult<&'py Bound<'py, pyo3::types::PyType>> {
        self.cell
            .get_or_try_init(py, || {
                let builtins = py.import("builtins")?;
                let bases = pyo3::types::PyTuple::new(
                    py,
                    [
                        builtins.getattr(self.bases[0])?,
                        builtins.getattr(self.bases[1])?,
                    ],
                )?;
                let ns = pyo3::types::PyDict::new(py);
                ns.set_item("__module__", "ferrox.core")?;
                ns.set_item("__doc__", self.doc)?;
                let t = builtins.getattr("type")?.call1((self.name, bases, ns))?;
                Ok(t.cast_into::<pyo3::types::PyType>()?.unbind())
            })
            .map(|t| t.bind(py))
    }

    fn err(&self, msg: String) -> PyErr {
        crate::gil::attach(|py| match self.get(py) {
            Ok(t) => PyErr::from_type(t.clone(), msg),
            Err(e) => e,
        })
    }
}

/// `ferrox.core.DtypeError`: numpy raises a `TypeError` for an unsupported
/// dtype, MLX a `ValueError`; code written for either catches this.
static DTYPE_ERROR: DualError = DualError::new(
    "DtypeError",
    ["TypeError", "ValueError"],
    "An op does not support a dtype: both a TypeError (as numpy) and a ValueError (as MLX).",
);

/// `ferrox.core.IndexingError`: numpy raises an `IndexError` for a bad
/// index (too many indices, out of bounds), MLX a `ValueError`.
static INDEXING_ERROR: DualError = DualError::new(
    "IndexingError",
    ["IndexError", "ValueError"],
    "A bad index: both an IndexError (as numpy) and a ValueError (as MLX).",
);

/// Registers `DtypeError` and `IndexingError`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DtypeError", DTYPE_ERROR.get(m.py())?)?;
    m.add("IndexingError", INDEXING_ERROR.get(m.py())?)
}

/// A Python exception as a ferrox error, for Rust code between a Python
/// function and its caller (a trace, a transform). The exception rides
/// along as the error's payload, and [`to_py`] raises it again: the thread
/// that ran the function and every thread that waited on that trace (a
/// clone of this error) get the same exception, type and message.
pub fn from_py(e: PyErr, py: Python<'_>) -> Error {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    let msg = format!("{kind}: {}", e.value(py));
    Error::new(ErrorKind::Runtime, "python", msg).with_payload(e)
}

/// `.map_err(to_py)` as a method.
pub trait OrPy<T> {
    /// Converts the error into a Python exception.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> OrPy<T> for Result<T, Error> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
