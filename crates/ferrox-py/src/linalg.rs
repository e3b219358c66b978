//! `ferrox.core.linalg`: norm, cross, inv, solve, cholesky, tri_inv and
//! solve_triangular, as in mlx.core.linalg.

use crate::array::PyArr;
use crate::convert::to_array;
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::Ints;
use ferrox::linalg::NormOrd;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};

type Any<'py> = Bound<'py, PyAny>;
type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// `ord=`: None, a number (inf included), or "fro" / "nuc".
fn norm_ord(ord: Option<&Any<'_>>) -> PyResult<Option<NormOrd>> {
    let Some(ord) = ord.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if ord.is_instance_of::<PyString>() {
        let s: String = ord.extract()?;
        return s.parse::<NormOrd>().map(Some).py();
    }
    if ord.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "norm: ord must be a number or a string",
        ));
    }
    if ord.is_instance_of::<PyInt>() || ord.is_instance_of::<PyFloat>() {
        return Ok(Some(NormOrd::P(ord.extract::<f64>()?)));
    }
    Err(PyTypeError::new_err(format!(
        "norm: ord must be None, a number or 'fro' / 'nuc', got {}",
        ord.get_type().name()?
    )))
}

/// norm(a, /, ord=None, axis=None, keepdims=False, *, stream=None) -> array
///
/// Vector or matrix norm (numpy's ``ord`` values, 'fro' and 'nuc' for matrices).
///
/// Example:
///     >>> ferrox.core.linalg.norm(ferrox.core.array([3.0, 4.0])).item()
///     5.0
#[pyfunction]
#[pyo3(signature = (a, /, ord = None, axis = None, keepdims = false, *, stream = None))]
fn norm(
    a: &Any<'_>,
    ord: Option<&Any<'_>>,
    axis: Option<Ints>,
    keepdims: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ord = norm_ord(ord)?;
    let axis = axis.as_ref().map(Ints::to_vec);
    on(stream, || {
        ferrox::linalg::norm(&a, ord, axis.as_deref(), keepdims)
    })?
    .py()
    .map(PyArr::new)
}

/// cross(a, b, /, axis=-1, *, stream=None) -> array
///
/// The cross product of 3-vectors along ``axis``.
///
/// Example:
///     >>> ferrox.core.linalg.cross(ferrox.core.array([1.0, 0, 0]), ferrox.core.array([0.0, 1, 0])).tolist()
///     [0.0, 0.0, 1.0]
#[pyfunction]
#[pyo3(signature = (a, b, axis = -1, *, stream = None))]
fn cross(a: &Any<'_>, b: &Any<'_>, axis: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    on(stream, || ferrox::linalg::cross(&a, &b, axis))?
        .py()
        .map(PyArr::new)
}

/// inv(a, *, stream=None) -> array
///
/// The inverse of each square matrix (batched).
///
/// Example:
///     >>> ferrox.core.linalg.inv(ferrox.core.array([[2.0, 0], [0, 4]])).tolist()
///     [[0.5, 0.0], [0.0, 0.25]]
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn inv(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::inv(&a))?.py().map(PyArr::new)
}

/// solve(a, b, *, stream=None) -> array
///
/// The solution ``x`` of ``a @ x = b`` (batched).
///
/// Example:
///     >>> ferrox.core.linalg.solve(ferrox.core.array([[2.0, 0], [0, 4]]), ferrox.core.array([2.0, 4])).tolist()
///     [1.0, 1.0]
#[pyfunction]
#[pyo3(signature = (a, b, *, stream = None))]
fn solve(a: &Any<'_>, b: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    on(stream, || ferrox::linalg::solve(&a, &b))?
        .py()
        .map(PyArr::new)
}

/// cholesky(a, upper=False, *, stream=None) -> array
///
/// The Cholesky factor of a symmetric positive definite matrix (lower, or upper).
///
/// Example:
///     >>> ferrox.core.linalg.cholesky(ferrox.core.array([[4.0, 0], [0, 9]])).tolist()
///     [[2.0, 0.0], [0.0, 3.0]]
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky(a: &Any<'_>, upper: bool, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::cholesky(&a, upper))?
        .py()
        .map(PyArr::new)
}

/// tri_inv(a, upper=False, *, stream=None) -> array
///
/// The inverse of a triangular matrix.
///
/// Example:
///     >>> ferrox.core.linalg.tri_inv(ferrox.core.array([[2.0, 0], [1, 1]])).tolist()
///     [[0.5, 0.0], [-0.5, 1.0]]
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn tri_inv(a: &Any<'_>, upper: bool, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::tri_inv(&a, upper))?
        .py()
        .map(PyArr::new)
}

/// solve_triangular(a, b, *, upper=False, stream=None) -> array
///
/// The solution of ``a @ x = b`` for triangular ``a``.
///
/// Example:
///     >>> ferrox.core.linalg.solve_triangular(ferrox.core.array([[2.0, 0], [0, 4]]), ferrox.core.array([2.0, 4])).tolist()
///     [1.0, 1.0]
#[pyfunction]
#[pyo3(signature = (a, b, *, upper = false, stream = None))]
fn solve_triangular(
    a: &Any<'_>,
    b: &Any<'_>,
    upper: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    on(stream, || ferrox::linalg::solve_triangular(&a, &b, upper))?
        .py()
        .map(PyArr::new)
}

/// Registers `ferrox.core.linalg`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = crate::fft::submodule(
        parent,
        "linalg",
        "Linear algebra: norm, cross, inv, solve, cholesky, tri_inv, solve_triangular.",
    )?;
    m.add_function(wrap_pyfunction!(norm, &m)?)?;
    m.add_function(wrap_pyfunction!(cross, &m)?)?;
    m.add_function(wrap_pyfunction!(inv, &m)?)?;
    m.add_function(wrap_pyfunction!(solve, &m)?)?;
    m.add_function(wrap_pyfunction!(cholesky, &m)?)?;
    m.add_function(wrap_pyfunction!(tri_inv, &m)?)?;
    m.add_function(wrap_pyfunction!(solve_triangular, &m)?)?;
    Ok(())
}
