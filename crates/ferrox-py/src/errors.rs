//! `ferrox::Error` → Python exceptions, by [`ErrorKind`].

use ferrox::{Error, ErrorKind};
use pyo3::exceptions::{
    PyFileNotFoundError, PyIndexError, PyMemoryError, PyNotImplementedError, PyOSError,
    PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;

/// The Python exception for a ferrox error: shape, axis and value errors
/// are `ValueError`, dtype errors `DtypeError` (a `TypeError` and a
/// `ValueError`), index errors `IndexError`,
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
        ErrorKind::Dtype => dtype_error(msg),
        ErrorKind::Index => PyIndexError::new_err(msg),
        ErrorKind::Unsupported => PyNotImplementedError::new_err(msg),
        ErrorKind::Memory => PyMemoryError::new_err(msg),
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
        ErrorKind::Io => PyOSError::new_err(msg),
        ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
    }
}

/// `ferrox.core.DtypeError`, a subclass of both `TypeError` (numpy raises
/// that for an unsupported dtype) and `ValueError` (MLX does), so code
/// written for either catches it.
static DTYPE_ERROR: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();

fn dtype_error_type(py: Python<'_>) -> PyResult<&Bound<'_, pyo3::types::PyType>> {
    DTYPE_ERROR
        .get_or_try_init(py, || {
            let builtins = py.import("builtins")?;
            let bases = pyo3::types::PyTuple::new(
                py,
                [builtins.getattr("TypeError")?, builtins.getattr("ValueError")?],
            )?;
            let ns = pyo3::types::PyDict::new(py);
            ns.set_item("__module__", "ferrox.core")?;
            ns.set_item(
                "__doc__",
                "An op does not support a dtype: both a TypeError (as numpy) and a ValueError (as MLX).",
            )?;
            let t = builtins.getattr("type")?.call1(("DtypeError", bases, ns))?;
            Ok(t.cast_into::<pyo3::types::PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

fn dtype_error(msg: String) -> PyErr {
    crate::gil::attach(|py| match dtype_error_type(py) {
        Ok(t) => PyErr::from_type(t.clone(), msg),
        Err(e) => e,
    })
}

/// Registers `DtypeError`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DtypeError", dtype_error_type(m.py())?)
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
