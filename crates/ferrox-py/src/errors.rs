//! `ferrox::Error` → Python exceptions, by [`ErrorKind`].

use ferrox::{Error, ErrorKind};
use pyo3::exceptions::{
    PyIndexError, PyMemoryError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::PyErr;

/// The Python exception for a ferrox error: shape, axis and value errors
/// are `ValueError`, dtype errors `TypeError`, index errors `IndexError`,
/// a missing transform rule `NotImplementedError`, allocation failures
/// `MemoryError`, failed kernels `RuntimeError`. The message is the error's
/// text (`op: message`).
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e.kind() {
        ErrorKind::Shape | ErrorKind::Axis | ErrorKind::Value => PyValueError::new_err(msg),
        ErrorKind::Dtype => PyTypeError::new_err(msg),
        ErrorKind::Index => PyIndexError::new_err(msg),
        ErrorKind::Unsupported => PyNotImplementedError::new_err(msg),
        ErrorKind::Memory => PyMemoryError::new_err(msg),
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
    }
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
