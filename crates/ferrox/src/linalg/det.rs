//! Determinants: [`det`] and [`slogdet`], composites of public ops.
//!
//! Matrices up to 3 x 3 use the cofactor formula (so they differentiate
//! through every transform, as in MLX); larger ones read the diagonal and
//! the pivots of [`lu_factor`](crate::ops::decomp::lu::lu_factor), which
//! has no derivative rule. Half floats compute the LU path in float32.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{add, equal, less, multiply, not_equal, remainder, subtract};
use crate::ops::reduce::{any, sum};
use crate::ops::select::r#where;
use crate::ops::unary::{abs, log, sign};

/// The validated float input of `op`: at least 2-D, square, not complex;
/// integers and bool become float32.
fn prepare(op: &str, a: &Array) -> Result<Array> {
    if a.dtype() == DType::Complex64 {
        return Err(Error::value(op, "complex inputs are not supported"));
    }
    crate::ops::decomp::matrix_dims(op, a, true)?;
    if a.dtype().is_float() {
        Ok(a.clone())
    } else {
        a.astype(DType::Float32)
    }
}

/// Entry `(i, j)` of every matrix of `a`, shape `a.shape()[..nd - 2]`.
fn entry(a: &Array, i: usize, j: usize) -> Result<Array> {
    let nd = a.ndim();
    let mut start = vec![0isize; nd];
    let mut stop: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    (start[nd - 2], stop[nd - 2]) = (i as isize, i as isize + 1);
    (start[nd - 1], stop[nd - 1]) = (j as isize, j as isize + 1);
    let e = crate::ops::views::slice(a, &start, &stop, &vec![1; nd])?;
    crate::ops::views::squeeze(&e, Some(&[-2, -1]))
}

/// The determinant of `n x n` matrices, `n <= 3`, by cofactors.
fn small(a: &Array, n: usize) -> Result<Array> {
    let e = |i, j| entry(a, i, j);
    let minor = |a: usize, b: usize, c: usize, d: usize| -> Result<Array> {
        subtract(
            &multiply(&e(1, a)?, &e(2, b)?)?,
            &multiply(&e(1, c)?, &e(2, d)?)?,
        )
    };
    match n {
        0 => {
            let batch = &a.shape()[..a.ndim() - 2];
            crate::ops::creation::ones(batch, a.dtype())
        }
        1 => e(0, 0),
        2 => subtract(
            &multiply(&e(0, 0)?, &e(1, 1)?)?,
            &multiply(&e(0, 1)?, &e(1, 0)?)?,
        ),
        _ => {
            let t0 = multiply(&e(0, 0)?, &minor(1, 2, 2, 1)?)?;
            let t1 = multiply(&e(0, 1)?, &minor(0, 2, 2, 0)?)?;
            let t2 = multiply(&e(0, 2)?, &minor(0, 1, 1, 0)?)?;
            add(&subtract(&t0, &t1)?, &t2)
        }
    }
}

/// `(sign, log|det|)` from an LU factorisation (`n > 3`).
fn by_lu(a: &Array) -> Result<(Array, Array)> {
    let dtype = a.dtype();
    let x = if dtype.is_float() && dtype != DType::Float64 {
        a.astype(DType::Float32)?
    } else {
        a.clone()
    };
    let (lu, pivots) = crate::ops::decomp::lu::lu_factor(&x)?;
    let diag = crate::ops::views::diagonal(&lu, 0, -2, -1)?;
    let n = x.shape()[x.ndim() - 1];
    let iota = crate::ops::creation::arange(0.0, n as f64, 1.0, DType::UInt32)?;
    let last = [-1isize];
    let swaps = sum(
        &not_equal(&pivots, &iota)?.astype(DType::Int32)?,
        Some(&last),
        false,
    )?;
    let zero = Array::from(0.0).astype(x.dtype())?;
    let negatives = sum(
        &less(&diag, &zero)?.astype(DType::Int32)?,
        Some(&last),
        false,
    )?;
    let odd = remainder(&add(&swaps, &negatives)?, &Array::from(2))?;
    // (-1)^(swaps + negatives): 1 - 2 * odd.
    let sgn = subtract(&Array::from(1), &multiply(&Array::from(2), &odd)?)?.astype(x.dtype())?;
    let logabs = sum(&log(&abs(&diag)?)?, Some(&last), false)?;
    let singular = any(&equal(&diag, &zero)?, Some(&last), false)?;
    let sgn = r#where(&singular, &zero, &sgn)?;
    let neg_inf = Array::from(f64::NEG_INFINITY).astype(x.dtype())?;
    let logabs = r#where(&singular, &neg_inf, &logabs)?;
    Ok((sgn.astype(dtype)?, logabs.astype(dtype)?))
}

/// The determinant of each square matrix in the last two axes of `a`.
///
/// Integer and bool inputs give float32, float inputs keep their dtype;
/// complex inputs, fewer than 2 axes and non-square matrices are a
/// `Value` / `Shape` error. An empty `0 x 0` matrix has determinant 1.
/// Matrices up to 3 x 3 differentiate (cofactor formula); larger ones go
/// through [`lu_factor`](crate::linalg::lu_factor), which does not (as in
/// MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(ferrox::linalg::det(&a)?.item::<f32>()?, -2.0);
/// let b = ferrox::multiply(&ferrox::eye(5, None, 0, ferrox::DType::Float64)?, &Array::scalar(2.0f64))?;
/// assert!((ferrox::linalg::det(&b)?.item::<f64>()? - 32.0).abs() < 1e-12);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn det(a: &Array) -> Result<Array> {
    let x = prepare("det", a)?;
    let n = x.shape()[x.ndim() - 1];
    if n <= 3 {
        return small(&x, n);
    }
    let (s, l) = by_lu(&x)?;
    multiply(&s, &crate::ops::unary::exp(&l)?)
}

/// The sign and the natural log of the absolute value of the determinant
/// of each square matrix in the last two axes of `a`: `(sign, logabsdet)`
/// with `det = sign * exp(logabsdet)`, which stays finite where the
/// determinant itself would overflow or underflow. A singular matrix has
/// `sign = 0` and `logabsdet = -inf`. Dtypes and errors as in [`det`].
///
/// ```
/// use ferrox::Array;
/// let a = ferrox::multiply(&ferrox::eye(100, None, 0, ferrox::DType::Float32)?, &Array::from(0.1))?;
/// let (s, l) = ferrox::linalg::slogdet(&a)?;
/// assert_eq!(s.item::<f32>()?, 1.0);
/// assert!((l.item::<f32>()? - 100.0 * 0.1f32.ln()).abs() < 1e-3);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn slogdet(a: &Array) -> Result<(Array, Array)> {
    let x = prepare("slogdet", a)?;
    let n = x.shape()[x.ndim() - 1];
    if n <= 3 {
        let d = small(&x, n)?;
        return Ok((sign(&d)?, log(&abs(&d)?)?));
    }
    by_lu(&x)
}
