//! Dense factorisations in `f64`, batched over the leading axes: the
//! inverse (Gauss-Jordan elimination with partial pivoting) and the
//! Cholesky factor (definite, or semi-definite for covariances).
//!
//! `float32` and `float64` inputs are read as `f64`; the result is rounded
//! once to the output dtype. Large batches run in parallel over matrices,
//! and a failure reports the first failing matrix of the batch.

use super::elementwise::out_storage;
use super::parallel::worth_splitting;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use rayon::prelude::*;

/// The batch `x` as row-major `f64`s, or an error naming `op` for a dtype
/// without a kernel.
fn f64_batch(op: &str, x: &Operand<'_>) -> Result<Vec<f64>> {
    match x.dtype {
        DType::Float32 => Ok(x
            .data
            .to_vec::<f32>(x.shape)
            .into_iter()
            .map(f64::from)
            .collect()),
        DType::Float64 => Ok(x.data.to_vec::<f64>(x.shape)),
        d => Err(Error::dtype(op, format!("no kernel for {d}"))),
    }
}

/// Runs `f` on every `n x n` matrix of `vals` into the same place of a new
/// result, in parallel over matrices of a large batch. Returns the result,
/// or the index of the first matrix `f` failed on.
fn per_matrix(
    vals: &[f64],
    n: usize,
    f: impl Fn(&[f64], &mut [f64]) -> bool + Sync,
) -> std::result::Result<Vec<f64>, usize> {
    let mut result = vec![0.0f64; vals.len()];
    let mm = n * n;
    if mm == 0 {
        return Ok(result);
    }
    let run = |(i, (a, y)): (usize, (&[f64], &mut [f64]))| (!f(a, y)).then_some(i);
    let failed: Option<usize> = if worth_splitting(vals.len()) {
        vals.par_chunks(mm)
            .zip(result.par_chunks_mut(mm))
            .enumerate()
            .filter_map(run)
            .min()
    } else {
        vals.chunks(mm)
            .zip(result.chunks_mut(mm))
            .enumerate()
            .filter_map(run)
            .min()
    };
    match failed {
        Some(i) => Err(i),
        None => Ok(result),
    }
}

/// Writes `result` (computed in f64) to a new f32 or f64 output.
fn f64_output(result: &[f64], out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    match out.dtype {
        DType::Float32 => {
            for (d, s) in st.as_mut_slice::<f32>().iter_mut().zip(result) {
                *d = *s as f32;
            }
        }
        _ => st.as_mut_slice::<f64>().copy_from_slice(result),
    }
    Ok(Data::contiguous(st, out.shape))
}

/// The inverse of each square matrix in the last two axes of `x`
/// (`float32` or `float64`); a singular matrix is an error naming `inv`.
pub fn inv(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let n = x.shape[x.shape.len() - 1];
    let vals = f64_batch("inv", x)?;
    let result = per_matrix(&vals, n, |a, y| invert(a, y, n)).map_err(|i| {
        Error::value(
            "inv",
            format!("matrix {i} of the batch of shape {:?} is singular", x.shape),
        )
    })?;
    f64_output(&result, out)
}

/// The Cholesky factor of each matrix in the last two axes of `x`
/// (`float32` or `float64`; the lower triangle is read, or the upper one
/// with `upper`); a matrix that is not positive definite is an error naming
/// `cholesky`.
///
/// A slightly negative pivot, within the rounding error of the input's
/// dtype (see [`Pivots::Rounded`]), is taken as zero: a positive
/// semi-definite matrix that rounding made barely indefinite (a product
/// `B^T B` of a rank-deficient `B` in float32, say) factors, as it does by
/// luck of rounding in LAPACK's single-precision arithmetic; a zero or
/// clearly negative pivot is an error.
pub fn cholesky(x: &Operand<'_>, upper: bool, out: OutSpec<'_>) -> Result<Data> {
    let n = x.shape[x.shape.len() - 1];
    let vals = f64_batch("cholesky", x)?;
    let eps = if x.dtype == DType::Float32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let pivots = Pivots::Rounded(eps);
    let result =
        per_matrix(&vals, n, |a, y| factor(a, y, n, upper, pivots).is_ok()).map_err(|i| {
            Error::value(
                "cholesky",
                format!(
                    "matrix {i} of the batch of shape {:?} is not positive definite",
                    x.shape
                ),
            )
        })?;
    f64_output(&result, out)
}

/// The lower Cholesky factor of each `f64` matrix in the last two axes of
/// `x`, accepting positive semi-definite (singular) matrices; one that is
/// not is an error naming `op` with the failing pivot. In order, one matrix
/// at a time.
pub fn cholesky_semidefinite(op: &str, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let n = x.shape.last().copied().unwrap_or(0);
    let a = x.data.to_vec::<f64>(x.shape);
    let mut st = out_storage(out)?;
    let l = st.as_mut_slice::<f64>();
    if n > 0 {
        for (src, dst) in a.chunks_exact(n * n).zip(l.chunks_exact_mut(n * n)) {
            factor(src, dst, n, false, Pivots::Semidefinite).map_err(|p| {
                Error::value(
                    op,
                    format!(
                        "cov is not positive semi-definite (pivot {} is {})",
                        p.column, p.value
                    ),
                )
            })?;
        }
    }
    Ok(Data::contiguous(st, out.shape))
}

/// The symmetric square root `S` (`S S = A`) of each positive
/// semi-definite matrix in an f64 batch `[..., n, n]`: `V sqrt(w) V^T`
/// from the eigendecomposition of the lower triangle, eigenvalues that
/// rounding made negative taken as zero. A matrix that is not positive
/// semi-definite (its semi-definite Cholesky factorisation fails) is an
/// error naming `op`.
pub fn psd_sqrt(op: &str, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let n = x.shape.last().copied().unwrap_or(0);
    let a = x.data.to_vec::<f64>(x.shape);
    let mut st = out_storage(out)?;
    let s = st.as_mut_slice::<f64>();
    if n > 0 {
        let mut l = vec![0.0; n * n];
        for (src, dst) in a.chunks_exact(n * n).zip(s.chunks_exact_mut(n * n)) {
            factor(src, &mut l, n, false, Pivots::Semidefinite).map_err(|p| {
                Error::value(
                    op,
                    format!(
                        "cov is not positive semi-definite (pivot {} is {})",
                        p.column, p.value
                    ),
                )
            })?;
            let m = faer::Mat::from_fn(n, n, |i, j| {
                if i >= j {
                    src[i * n + j]
                } else {
                    src[j * n + i]
                }
            });
            let e = m
                .as_ref()
                .self_adjoint_eigen(faer::Side::Lower)
                .map_err(|e| Error::value(op, format!("cov: no eigendecomposition ({e:?})")))?;
            let (w, v) = (e.S().column_vector(), e.U());
            let r: Vec<f64> = (0..n).map(|k| w[k].max(0.0).sqrt()).collect();
            for i in 0..n {
                for j in 0..n {
                    dst[i * n + j] = (0..n).map(|k| v[(i, k)] * r[k] * v[(j, k)]).sum();
                }
            }
        }
    }
    Ok(Data::contiguous(st, out.shape))
}

/// Inverts the row-major `n x n` matrix `a` into `y`; `false` if a
/// pivot is zero (or not a number).
fn invert(a: &[f64], y: &mut [f64], n: usize) -> bool {
    let mut m = a.to_vec();
    for (i, v) in y.iter_mut().enumerate() {
        *v = if i / n == i % n { 1.0 } else { 0.0 };
    }
    for col in 0..n {
        let mut p = col;
        for r in col + 1..n {
            if m[r * n + col].abs() > m[p * n + col].abs() {
                p = r;
            }
        }
        let pivot = m[p * n + col];
        if pivot == 0.0 || pivot.is_nan() {
            return false;
        }
        if p != col {
            for k in 0..n {
                m.swap(p * n + k, col * n + k);
                y.swap(p * n + k, col * n + k);
            }
        }
        let inv = 1.0 / pivot;
        for k in 0..n {
            m[col * n + k] *= inv;
            y[col * n + k] *= inv;
        }
        for r in 0..n {
            if r == col {
                continue;
            }
            let f = m[r * n + col];
            if f == 0.0 {
                continue;
            }
            for k in 0..n {
                m[r * n + k] -= f * m[col * n + k];
                y[r * n + k] -= f * y[col * n + k];
            }
        }
    }
    true
}

/// A pivot that stopped a factorisation: its column and value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BadPivot {
    /// The column of the failing pivot.
    pub column: usize,
    /// Its value (not positive, or NaN).
    pub value: f64,
}

/// Which pivots a Cholesky factorisation accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pivots {
    /// Positive pivots; also negative ones within `8 n eps` of zero
    /// (relative to the largest diagonal entry, `eps` the input dtype's
    /// machine epsilon), which give a zero column. A zero pivot fails.
    Rounded(f64),
    /// Pivots within `8 n eps` (float64) of zero, of either sign or zero,
    /// give a zero column, so singular positive semi-definite matrices
    /// factor; only a clearly negative pivot fails.
    Semidefinite,
}

/// Factors the row-major `n x n` matrix `a` into `y`: the lower factor
/// (reading the lower triangle), or with `upper` its transpose (reading
/// the upper triangle). Which pivots fail is `pivots`' rule.
pub fn factor(
    a: &[f64],
    y: &mut [f64],
    n: usize,
    upper: bool,
    pivots: Pivots,
) -> std::result::Result<(), BadPivot> {
    // Element (i, j) of the lower triangle that is read.
    let at = |i: usize, j: usize| if upper { a[j * n + i] } else { a[i * n + j] };
    let semidefinite = pivots == Pivots::Semidefinite;
    let eps = match pivots {
        Pivots::Rounded(eps) => eps,
        Pivots::Semidefinite => f64::EPSILON,
    };
    let scale = (0..n).map(|i| at(i, i).abs()).fold(0.0, f64::max);
    let tol = scale * eps * (n as f64) * 8.0;
    y.fill(0.0);
    let mut l = vec![0.0f64; n * n];
    for j in 0..n {
        let mut d = at(j, j);
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        let fails = if semidefinite {
            d < -tol
        } else {
            d == 0.0 || d <= -tol
        };
        if fails || d.is_nan() {
            return Err(BadPivot {
                column: j,
                value: d,
            });
        }
        let zero = if semidefinite { d <= tol } else { d < 0.0 };
        let d = if zero { 0.0 } else { d.sqrt() };
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = at(i, j);
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = if d == 0.0 { 0.0 } else { s / d };
        }
    }
    for i in 0..n {
        for j in 0..=i {
            let v = l[i * n + j];
            if upper {
                y[j * n + i] = v;
            } else {
                y[i * n + j] = v;
            }
        }
    }
    Ok(())
}
