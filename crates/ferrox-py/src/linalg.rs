//! `ferrox.core.linalg`: norm, cross, inv, solve, cholesky, tri_inv,
//! solve_triangular, the decompositions (qr, svd, eigh, eigvalsh, eig,
//! eigvals, lu, lu_factor) and pinv, det, slogdet, cholesky_inv, as in
//! mlx.core.linalg.

use crate::array::PyArr;
use crate::convert::to_array;
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::Ints;
use ferrox::linalg::NormOrd;
use pyo3::exceptions::{PyTypeError, PyValueError};
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

/// `UPLO=`: "L" reads the lower triangle, "U" the upper one.
fn uplo_upper(op: &str, uplo: &str) -> PyResult<bool> {
    match uplo {
        "L" => Ok(false),
        "U" => Ok(true),
        _ => Err(PyValueError::new_err(format!(
            "{op}: UPLO must be 'L' or 'U', got {uplo:?}"
        ))),
    }
}

/// qr(a, *, stream=None) -> tuple[array, array]
///
/// The reduced QR decomposition of the matrices in the last two axes of
/// ``a`` (float32 or float64): ``Q`` (``(..., m, k)``, orthonormal
/// columns) and ``R`` (``(..., k, n)``, upper triangular), ``k = min(m, n)``.
///
/// Example:
///     >>> Q, R = mx.linalg.qr(mx.array([[2.0, 3.0], [1.0, 2.0]]))
///     >>> mx.allclose(Q @ R, mx.array([[2.0, 3.0], [1.0, 2.0]])).item()
///     True
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn qr(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let a = to_array(a)?;
    let (q, r) = on(stream, || ferrox::linalg::qr(&a))?.py()?;
    Ok((PyArr::new(q), PyArr::new(r)))
}

/// svd(a, compute_uv=True, *, stream=None) -> tuple[array, array, array] | array
///
/// The singular value decomposition of the matrices in the last two axes
/// of ``a`` (float32, float64 or complex64): ``(U, S, Vt)`` with ``a = U[...,
/// :, :k] @ diag(S) @ Vt[..., :k, :]`` and ``S`` in non-increasing order,
/// or ``S`` alone with ``compute_uv=False``.
///
/// Example:
///     >>> mx.linalg.svd(mx.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
///     array([4, 3], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, compute_uv = true, *, stream = None))]
fn svd(
    py: Python<'_>,
    a: &Any<'_>,
    compute_uv: bool,
    stream: Stream<'_, '_>,
) -> PyResult<Py<PyAny>> {
    let a = to_array(a)?;
    let outs = on(stream, || ferrox::linalg::svd(&a, compute_uv))?.py()?;
    let mut outs = outs.into_iter().map(PyArr::new);
    match (outs.next(), outs.next(), outs.next()) {
        (Some(u), Some(s), Some(vt)) => Ok((u, s, vt).into_pyobject(py)?.into_any().unbind()),
        (Some(s), None, None) => Ok(s.into_pyobject(py)?.into_any().unbind()),
        _ => Err(PyValueError::new_err("svd: unexpected number of outputs")),
    }
}

/// eigh(a, UPLO='L', *, stream=None) -> tuple[array, array]
///
/// Eigenvalues (ascending, real) and orthonormal eigenvectors (columns) of
/// the real symmetric or complex Hermitian matrices in the last two axes of
/// ``a``; only the triangle ``UPLO`` names is read.
///
/// Example:
///     >>> w, v = mx.linalg.eigh(mx.array([[2.0, 1.0], [1.0, 2.0]]))
///     >>> w
///     array([1, 3], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigh(a: &Any<'_>, UPLO: &str, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let upper = uplo_upper("eigh", UPLO)?;
    let a = to_array(a)?;
    let (w, v) = on(stream, || ferrox::linalg::eigh(&a, upper))?.py()?;
    Ok((PyArr::new(w), PyArr::new(v)))
}

/// eigvalsh(a, UPLO='L', *, stream=None) -> array
///
/// The eigenvalues (ascending, real) of the real symmetric or complex
/// Hermitian matrices in the last two axes of ``a``.
///
/// Example:
///     >>> mx.linalg.eigvalsh(mx.array([[2.0, 1.0], [1.0, 2.0]]))
///     array([1, 3], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, UPLO = "L", *, stream = None))]
#[allow(non_snake_case)]
fn eigvalsh(a: &Any<'_>, UPLO: &str, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let upper = uplo_upper("eigvalsh", UPLO)?;
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::eigvalsh(&a, upper))?
        .py()
        .map(PyArr::new)
}

/// eig(a, *, stream=None) -> tuple[array, array]
///
/// Eigenvalues and right eigenvectors (unit-norm columns) of the square
/// matrices in the last two axes of ``a``, both complex64:
/// ``a @ v == w[..., None, :] * v``.
///
/// Example:
///     >>> w, v = mx.linalg.eig(mx.array([[0.0, -1.0], [1.0, 0.0]]))
///     >>> w.dtype
///     mlx.core.complex64
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn eig(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let a = to_array(a)?;
    let (w, v) = on(stream, || ferrox::linalg::eig(&a))?.py()?;
    Ok((PyArr::new(w), PyArr::new(v)))
}

/// eigvals(a, *, stream=None) -> array
///
/// The eigenvalues (complex64) of the square matrices in the last two axes
/// of ``a``, in the same order as ``eig``'s.
///
/// Example:
///     >>> mx.linalg.eigvals(mx.array([[2.0, 0.0], [0.0, 3.0]])).shape
///     (2,)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn eigvals(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::eigvals(&a))?
        .py()
        .map(PyArr::new)
}

/// lu(a, *, stream=None) -> tuple[array, array, array]
///
/// The LU factorisation with partial pivoting of the matrices in the last
/// two axes of ``a`` (float32 or float64): ``(P, L, U)`` with ``P`` the
/// uint32 row permutation such that ``a == L[P, :] @ U`` (per matrix).
///
/// Example:
///     >>> P, L, U = mx.linalg.lu(mx.array([[1.0, 2.0], [3.0, 4.0]]))
///     >>> P
///     array([1, 0], dtype=uint32)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr, PyArr)> {
    let a = to_array(a)?;
    let (p, l, u) = on(stream, || ferrox::linalg::lu(&a))?.py()?;
    Ok((PyArr::new(p), PyArr::new(l), PyArr::new(u)))
}

/// lu_factor(a, *, stream=None) -> tuple[array, array]
///
/// The LU factorisation with partial pivoting in LAPACK's packed form:
/// ``(LU, pivots)``, where row ``i`` was swapped with row ``pivots[i]``
/// (uint32, 0-based), in order.
///
/// Example:
///     >>> LU, piv = mx.linalg.lu_factor(mx.array([[1.0, 2.0], [3.0, 4.0]]))
///     >>> piv
///     array([1, 1], dtype=uint32)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn lu_factor(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let a = to_array(a)?;
    let (lu, piv) = on(stream, || ferrox::linalg::lu_factor(&a))?.py()?;
    Ok((PyArr::new(lu), PyArr::new(piv)))
}

/// pinv(a, *, stream=None) -> array
///
/// The Moore-Penrose pseudo-inverse of the matrices in the last two axes of
/// ``a`` (float32 or float64), from the SVD.
///
/// Example:
///     >>> mx.linalg.pinv(mx.array([[2.0, 0.0], [0.0, 4.0]]))
///     array([[0.5, 0],
///            [0, 0.25]], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn pinv(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::pinv(&a))?
        .py()
        .map(PyArr::new)
}

/// det(a, *, stream=None) -> array
///
/// The determinant of the square matrices in the last two axes of ``a``
/// (integers give float32; complex inputs are not supported).
///
/// Example:
///     >>> mx.linalg.det(mx.array([[1.0, 2.0], [3.0, 4.0]]))
///     array(-2, dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn det(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::det(&a))?.py().map(PyArr::new)
}

/// slogdet(a, *, stream=None) -> tuple[array, array]
///
/// The sign and log of the absolute determinant of the square matrices in
/// the last two axes of ``a``: ``det == sign * exp(logabsdet)``; singular
/// matrices give ``(0, -inf)``.
///
/// Example:
///     >>> sign, logabsdet = mx.linalg.slogdet(mx.array([[1.0, 2.0], [3.0, 4.0]]))
///     >>> sign
///     array(-1, dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, *, stream = None))]
fn slogdet(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let a = to_array(a)?;
    let (s, l) = on(stream, || ferrox::linalg::slogdet(&a))?.py()?;
    Ok((PyArr::new(s), PyArr::new(l)))
}

/// cholesky_inv(a, upper=False, *, stream=None) -> array
///
/// The inverse of ``L @ L.T`` (``U.T @ U`` with ``upper=True``) from its
/// Cholesky factor ``a`` (float32 or float64).
///
/// Example:
///     >>> L = mx.linalg.cholesky(mx.array([[4.0, 2.0], [2.0, 5.0]]))
///     >>> mx.linalg.cholesky_inv(L) @ mx.array([[4.0, 2.0], [2.0, 5.0]])
///     array([[1, 0],
///            [0, 1]], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, upper = false, *, stream = None))]
fn cholesky_inv(a: &Any<'_>, upper: bool, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    on(stream, || ferrox::linalg::cholesky_inv(&a, upper))?
        .py()
        .map(PyArr::new)
}

/// Registers `ferrox.core.linalg`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = crate::fft::submodule(
        parent,
        "linalg",
        "Linear algebra: norms, solves, inverses and the decompositions (qr, svd, eigh, eig, lu).",
    )?;
    m.add_function(wrap_pyfunction!(norm, &m)?)?;
    m.add_function(wrap_pyfunction!(cross, &m)?)?;
    m.add_function(wrap_pyfunction!(inv, &m)?)?;
    m.add_function(wrap_pyfunction!(solve, &m)?)?;
    m.add_function(wrap_pyfunction!(cholesky, &m)?)?;
    m.add_function(wrap_pyfunction!(tri_inv, &m)?)?;
    m.add_function(wrap_pyfunction!(solve_triangular, &m)?)?;
    m.add_function(wrap_pyfunction!(qr, &m)?)?;
    m.add_function(wrap_pyfunction!(svd, &m)?)?;
    m.add_function(wrap_pyfunction!(eigh, &m)?)?;
    m.add_function(wrap_pyfunction!(eigvalsh, &m)?)?;
    m.add_function(wrap_pyfunction!(eig, &m)?)?;
    m.add_function(wrap_pyfunction!(eigvals, &m)?)?;
    m.add_function(wrap_pyfunction!(lu, &m)?)?;
    m.add_function(wrap_pyfunction!(lu_factor, &m)?)?;
    m.add_function(wrap_pyfunction!(pinv, &m)?)?;
    m.add_function(wrap_pyfunction!(det, &m)?)?;
    m.add_function(wrap_pyfunction!(slogdet, &m)?)?;
    m.add_function(wrap_pyfunction!(cholesky_inv, &m)?)?;
    Ok(())
}
