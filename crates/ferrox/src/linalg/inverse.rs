//! Inverses built from decompositions: [`pinv`] (from [`svd`]) and
//! [`cholesky_inv`] (from a Cholesky factor).
//!
//! [`svd`]: crate::ops::decomp::svd::svd

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::decomp::{decomp_dtype, matrix_dims};
use crate::ops::matmul::matmul;
use crate::ops::views::swapaxes;

/// The Moore-Penrose pseudo-inverse of each matrix in the last two axes of
/// `a` (shape `(..., m, n)`, result `(..., n, m)`), from the SVD: singular
/// values at most `10 * max(m, n) * eps` times the largest are treated as
/// zero (MLX's cutoff).
///
/// `a` must be float32 or float64 with at least 2 axes. Not differentiable
/// (the SVD has no rule, as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[4.0f32, 1.0, 4.0, 1.0], &[2, 2])?; // singular
/// let p = ferrox::linalg::pinv(&a)?;
/// let back = ferrox::matmul(&ferrox::matmul(&a, &p)?, &a)?.to_vec::<f32>()?;
/// assert!(back.iter().zip([4.0, 1.0, 4.0, 1.0]).all(|(g, w)| (g - w).abs() < 1e-5));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn pinv(a: &Array) -> Result<Array> {
    let (m, n) = matrix_dims("pinv", a, false)?;
    let dtype = decomp_dtype("pinv", a, false)?;
    let nd = a.ndim();
    if m == 0 || n == 0 || a.size() == 0 {
        let mut shape = a.shape().to_vec();
        shape.swap(nd - 1, nd - 2);
        return crate::ops::creation::zeros(&shape, dtype);
    }
    let k = m.min(n);
    let usv = crate::ops::decomp::svd::svd(a, true)?;
    let [u, s, vh] = &usv[..] else {
        return Err(Error::runtime(
            "pinv",
            "internal error: svd outputs missing",
        ));
    };
    let keep = |x: &Array, rows: usize, cols: usize| -> Result<Array> {
        let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        (stop[nd - 2], stop[nd - 1]) = (rows as isize, cols as isize);
        crate::ops::views::slice(x, &vec![0; nd], &stop, &vec![1; nd])
    };
    let ut = swapaxes(&keep(u, m, k)?, -1, -2)?; // (k, m)
    let v = swapaxes(&keep(vh, k, n)?, -1, -2)?; // (n, k)
    let s = crate::ops::views::expand_dims(s, &[-2])?;
    let eps = if dtype == DType::Float64 {
        f64::EPSILON
    } else {
        f32::EPSILON as f64
    };
    let rcond = Array::scalar(10.0 * m.max(n) as f64 * eps).astype(dtype)?;
    let cutoff =
        crate::ops::binary::multiply(&rcond, &crate::ops::reduce::max(&s, Some(&[-1]), true)?)?;
    let zero = Array::from(0.0).astype(dtype)?;
    let big = crate::ops::binary::greater(&s, &cutoff)?;
    // Reciprocals of the kept values only (a zero singular value would
    // give inf, which `where` discards anyway, but not under every mode).
    let safe = crate::ops::select::r#where(&big, &s, &Array::from(1.0).astype(dtype)?)?;
    let rs = crate::ops::select::r#where(&big, &crate::ops::unary::reciprocal(&safe)?, &zero)?;
    matmul(&crate::ops::binary::multiply(&v, &rs)?, &ut)
}

/// The inverse of `A = L @ L^T` (or `U^T @ U` with `upper`) from its
/// Cholesky factor `l`: `inv(L)^T @ inv(L)` (or `inv(U) @ inv(U)^T`).
/// Only the named triangle of `l` is read.
///
/// `l` must be float32 or float64, square, with at least 2 axes.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[4.0f64, 2.0, 2.0, 5.0], &[2, 2])?;
/// let l = ferrox::linalg::cholesky(&a, false)?;
/// let ainv = ferrox::linalg::cholesky_inv(&l, false)?;
/// let id = ferrox::matmul(&a, &ainv)?.to_vec::<f64>()?;
/// assert!(id.iter().zip([1.0, 0.0, 0.0, 1.0]).all(|(g, w)| (g - w).abs() < 1e-12));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cholesky_inv(l: &Array, upper: bool) -> Result<Array> {
    matrix_dims("cholesky_inv", l, true)?;
    decomp_dtype("cholesky_inv", l, false)?;
    let li = super::tri_inv(l, upper).map_err(|e| super::named("cholesky_inv", e))?;
    let lt = swapaxes(&li, -1, -2)?;
    if upper {
        matmul(&li, &lt)
    } else {
        matmul(&lt, &li)
    }
}
