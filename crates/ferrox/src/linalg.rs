//! Linear algebra: `ferrox::linalg`.
//!
//! [`norm`], [`cross`], [`solve`], [`tri_inv`], [`solve_triangular`],
//! [`det`], [`slogdet`], [`pinv`] and [`cholesky_inv`] are built from
//! public ops, so every transform (grad, jvp, vmap, compile) goes through
//! them; [`inv`] and [`cholesky`] are primitives with their own rules. The
//! decompositions [`qr`], [`svd`], [`eigh`] / [`eigvalsh`], [`eig`] /
//! [`eigvals`] and [`lu_factor`] / [`lu`] are primitives with several
//! outputs (kernels: faer) that batch under vmap but, as in MLX, have no
//! derivative rules.
//!
//! ```
//! use ferrox::{Array, linalg};
//! let v = Array::from_slice(&[3.0f32, 4.0], &[2])?;
//! assert_eq!(linalg::norm(&v, None, None, false)?.item::<f32>()?, 5.0);
//! # Ok::<(), ferrox::Error>(())
//! ```

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
pub use crate::ops::cholesky::cholesky;
pub use crate::ops::decomp::eig::{eig, eigvals};
pub use crate::ops::decomp::eigh::{eigh, eigvalsh};
pub use crate::ops::decomp::lu::{lu, lu_factor};
pub use crate::ops::decomp::qr::qr;
pub use crate::ops::decomp::svd::svd;
pub use crate::ops::lu::inv;
pub use det::{det, slogdet};
pub use inverse::{cholesky_inv, pinv};

mod det;
mod inverse;
use crate::ops::shape_rules::normalize_axis;

/// The `ord` of a [`norm`]: a number (`f64::INFINITY` and
/// `f64::NEG_INFINITY` included), the Frobenius norm or the nuclear norm.
///
/// ```
/// use ferrox::linalg::NormOrd;
/// assert_eq!(NormOrd::from(2.0), NormOrd::P(2.0));
/// assert_eq!(NormOrd::from(1), NormOrd::P(1.0));
/// assert_eq!("fro".parse::<NormOrd>()?, NormOrd::Fro);
/// assert!("max".parse::<NormOrd>().is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NormOrd {
    /// A numeric order: `p` for vectors; `1`, `-1`, `inf`, `-inf` (and,
    /// with singular values, `2`, `-2`) for matrices.
    P(f64),
    /// `"fro"`: the square root of the sum of squared magnitudes.
    Fro,
    /// `"nuc"`: the sum of the singular values.
    Nuc,
}

impl From<f64> for NormOrd {
    fn from(p: f64) -> NormOrd {
        NormOrd::P(p)
    }
}

impl From<i32> for NormOrd {
    fn from(p: i32) -> NormOrd {
        NormOrd::P(p as f64)
    }
}

impl std::str::FromStr for NormOrd {
    type Err = Error;
    fn from_str(s: &str) -> Result<NormOrd> {
        match s {
            "fro" => Ok(NormOrd::Fro),
            "nuc" => Ok(NormOrd::Nuc),
            _ => Err(Error::value(
                "norm",
                format!("invalid ord {s:?}; the string orders are \"fro\" and \"nuc\""),
            )),
        }
    }
}

impl std::fmt::Display for NormOrd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NormOrd::P(p) => write!(f, "{p}"),
            NormOrd::Fro => write!(f, "'fro'"),
            NormOrd::Nuc => write!(f, "'nuc'"),
        }
    }
}

/// `|a|` in a float dtype: complex gives `float32`, integers and bool
/// give `float32`, floats keep their dtype.
fn magnitude(a: &Array) -> Result<Array> {
    let m = crate::ops::unary::abs(a)?;
    if m.dtype().is_inexact() {
        Ok(m)
    } else {
        m.astype(DType::Float32)
    }
}

/// `v` as a scalar that keeps `like`'s float dtype (weak scalars are
/// single precision, which would round float64 exponents).
fn scalar_like(v: f64, like: &Array) -> Array {
    if like.dtype() == DType::Float64 {
        Array::scalar(v)
    } else {
        Array::from(v)
    }
}

fn signed(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&a| a as isize).collect()
}

/// `sqrt(sum(|a|^2))` over `axes`.
fn frobenius(a: &Array, axes: &[usize], keepdims: bool) -> Result<Array> {
    let m = magnitude(a)?;
    let sq = crate::ops::binary::multiply(&m, &m)?;
    crate::ops::unary::sqrt(&crate::ops::reduce::sum(
        &sq,
        Some(&signed(axes)),
        keepdims,
    )?)
}

fn vector_norm(a: &Array, p: f64, axis: usize, keepdims: bool) -> Result<Array> {
    let ax = [axis as isize];
    let m = magnitude(a)?;
    if p == 2.0 {
        return frobenius(a, &[axis], keepdims);
    }
    if p == f64::INFINITY {
        return crate::ops::reduce::max(&m, Some(&ax), keepdims);
    }
    if p == f64::NEG_INFINITY {
        return crate::ops::reduce::min(&m, Some(&ax), keepdims);
    }
    if p == 0.0 {
        let nz = crate::ops::binary::not_equal(&m, &Array::from(0.0))?.astype(m.dtype())?;
        return crate::ops::reduce::sum(&nz, Some(&ax), keepdims);
    }
    if p == 1.0 {
        return crate::ops::reduce::sum(&m, Some(&ax), keepdims);
    }
    if p.is_nan() {
        return Err(Error::value("norm", "invalid ord nan"));
    }
    // (sum |a|^p)^(1/p).
    let s = crate::ops::reduce::sum(
        &crate::ops::binary::power(&m, &scalar_like(p, &m))?,
        Some(&ax),
        keepdims,
    )?;
    crate::ops::binary::power(&s, &scalar_like(1.0 / p, &s))
}

fn matrix_norm(a: &Array, ord: NormOrd, row: usize, col: usize, keepdims: bool) -> Result<Array> {
    let squeeze = |x: Array| -> Result<Array> {
        if keepdims {
            Ok(x)
        } else {
            crate::ops::views::squeeze(&x, Some(&[row as isize, col as isize]))
        }
    };
    match ord {
        NormOrd::Fro => frobenius(a, &[row, col], keepdims),
        NormOrd::P(p) if p == 1.0 || p == -1.0 || p.is_infinite() => {
            // 1: largest column sum; inf: largest row sum (min for -1, -inf).
            let (inner, outer) = if p.is_infinite() {
                (col, row)
            } else {
                (row, col)
            };
            let sums = crate::ops::reduce::sum(&magnitude(a)?, Some(&[inner as isize]), true)?;
            let r = if p > 0.0 {
                crate::ops::reduce::max(&sums, Some(&[outer as isize]), true)?
            } else {
                crate::ops::reduce::min(&sums, Some(&[outer as isize]), true)?
            };
            squeeze(r)
        }
        NormOrd::Nuc => singular_norm(a, ord, row, col, keepdims),
        NormOrd::P(p) if p.abs() == 2.0 => singular_norm(a, ord, row, col, keepdims),
        NormOrd::P(p) => Err(Error::value(
            "norm",
            format!("invalid ord {p} for a matrix norm; use 'fro', 1, -1, inf or -inf"),
        )),
    }
}

/// A matrix norm from the singular values: `"nuc"` (their sum), `2`
/// (the largest) or `-2` (the smallest). The matrix axes move to the end
/// first; integer inputs compute in float32 (the SVD takes floats only).
fn singular_norm(a: &Array, ord: NormOrd, row: usize, col: usize, keepdims: bool) -> Result<Array> {
    let x = crate::ops::views::moveaxis(
        &crate::ops::views::moveaxis(a, row as isize, -1)?,
        (if col > row { col - 1 } else { col }) as isize,
        -1,
    )?;
    // Now (..., row, col), the other axes in their order.
    let x = if x.dtype().is_inexact() {
        x
    } else {
        x.astype(DType::Float32)?
    };
    let s = svd(&x, false)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::runtime("norm", "internal error: svd output missing"))?;
    let last = [-1isize];
    let r = match ord {
        NormOrd::Nuc => crate::ops::reduce::sum(&s, Some(&last), false)?,
        NormOrd::P(p) if p > 0.0 => crate::ops::reduce::max(&s, Some(&last), false)?,
        _ => crate::ops::reduce::min(&s, Some(&last), false)?,
    };
    if !keepdims {
        return Ok(r);
    }
    let (lo, hi) = (row.min(col), row.max(col));
    crate::ops::views::expand_dims(&r, &[lo as isize, hi as isize])
}

/// Vector or matrix norm, with numpy's conventions.
///
/// * `axis = None`, `ord = None`: the 2-norm of all elements, whatever
///   the rank.
/// * `axis = None` with an `ord`: `a` must be 1-D (vector norm) or 2-D
///   (matrix norm).
/// * one axis: a vector norm along it: `None`/`2` (Euclidean), `inf`
///   (max `|x|`), `-inf` (min `|x|`), `0` (count of non-zeros), `1` (sum
///   of `|x|`), any other `p`: `sum(|x|^p)^(1/p)`.
/// * two axes (rows, columns): a matrix norm: `None`/`"fro"`, `inf`/`-inf`
///   (max/min row sum of `|x|`), `1`/`-1` (max/min column sum), `2`/`-2`
///   (largest/smallest singular value) and `"nuc"` (their sum).
///
/// Complex, integer and bool inputs give `float32`; float inputs keep
/// their dtype. `keepdims` keeps the reduced axes with size 1.
///
/// ```
/// use ferrox::{Array, linalg::{norm, NormOrd}};
/// let m = Array::from_slice(&[1.0f32, -2.0, 3.0, -4.0], &[2, 2])?;
/// assert_eq!(norm(&m, Some(NormOrd::P(1.0)), None, false)?.item::<f32>()?, 6.0);
/// assert_eq!(norm(&m, Some(NormOrd::P(f64::INFINITY)), None, false)?.item::<f32>()?, 7.0);
/// let rows = norm(&m, Some(NormOrd::P(1.0)), Some(&[1]), true)?;
/// assert_eq!(rows.shape(), &[2, 1]);
/// assert_eq!(rows.to_vec::<f32>()?, vec![3.0, 7.0]);
/// let nuc = norm(&m, Some(NormOrd::Nuc), None, false)?.item::<f32>()?;
/// assert!((nuc - 5.8309517).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn norm(
    a: &Array,
    ord: Option<NormOrd>,
    axis: Option<&[isize]>,
    keepdims: bool,
) -> Result<Array> {
    norm_impl(a, ord, axis, keepdims).map_err(|e| named("norm", e))
}

/// `e` as an error of `op` (errors of the ops a composite is built from
/// keep their text after the composite's name).
fn named(op: &str, e: Error) -> Error {
    if e.op() == op {
        e
    } else {
        Error::new(e.kind(), op, format!("{}: {}", e.op(), e.message()))
    }
}

fn norm_impl(
    a: &Array,
    ord: Option<NormOrd>,
    axis: Option<&[isize]>,
    keepdims: bool,
) -> Result<Array> {
    let nd = a.ndim();
    let axes: Vec<usize> = match axis {
        Some(axis) => axis
            .iter()
            .map(|&ax| normalize_axis("norm", ax, nd))
            .collect::<Result<_>>()?,
        None => {
            let Some(ord) = ord else {
                // The 2-norm of everything.
                let all: Vec<usize> = (0..nd).collect();
                return frobenius(a, &all, keepdims);
            };
            if nd != 1 && nd != 2 {
                return Err(Error::value(
                    "norm",
                    format!(
                        "ord={ord} without axis needs a 1-D or 2-D array, got shape {:?}",
                        a.shape()
                    ),
                ));
            }
            (0..nd).collect()
        }
    };
    match axes[..] {
        [ax] => match ord {
            None => vector_norm(a, 2.0, ax, keepdims),
            Some(NormOrd::P(p)) => vector_norm(a, p, ax, keepdims),
            Some(o) => Err(Error::value(
                "norm",
                format!("invalid ord {o} for a vector norm"),
            )),
        },
        [r, c] if r == c => Err(Error::value(
            "norm",
            format!("axis {:?} names the same axis twice", axis.unwrap_or(&[])),
        )),
        [r, c] => matrix_norm(a, ord.unwrap_or(NormOrd::Fro), r, c, keepdims),
        _ => Err(Error::value(
            "norm",
            format!(
                "axis must name 1 or 2 axes (vector or matrix norm), got {:?}",
                axis.unwrap_or(&[])
            ),
        )),
    }
}

/// The cross product of 3-vectors along `axis` of `a` and `b` (the other
/// axes broadcast). A 2-vector is taken as a 3-vector with a zero third
/// component, so the result always has 3 entries along `axis`.
///
/// ```
/// use ferrox::Array;
/// let x = Array::from_slice(&[1.0f32, 0.0, 0.0], &[3])?;
/// let y = Array::from_slice(&[0.0f32, 1.0, 0.0], &[3])?;
/// let z = ferrox::linalg::cross(&x, &y, -1)?;
/// assert_eq!(z.to_vec::<f32>()?, vec![0.0, 0.0, 1.0]);
/// assert!(ferrox::linalg::cross(&x, &ferrox::ones(&[4], ferrox::DType::Float32)?, -1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cross(a: &Array, b: &Array, axis: isize) -> Result<Array> {
    let prep = |x: &Array, name: &str| -> Result<Array> {
        let ax = normalize_axis("cross", axis, x.ndim())?;
        let d = x.shape()[ax];
        if d != 2 && d != 3 {
            return Err(Error::shape(
                "cross",
                format!(
                    "{name} has shape {:?}; axis {axis} must have 2 or 3 entries, got {d}",
                    x.shape()
                ),
            ));
        }
        let x = crate::ops::views::moveaxis(x, ax as isize, -1)?;
        if d == 2 {
            let mut widths = vec![(0, 0); x.ndim()];
            widths[x.ndim() - 1] = (0, 1);
            crate::ops::join::pad(&x, &widths, crate::ops::join::PadMode::Constant(0.0))
        } else {
            Ok(x)
        }
    };
    let (a, b) = (prep(a, "a")?, prep(b, "b")?);
    crate::ops::shape_rules::broadcast_shapes("cross", a.shape(), b.shape())?;
    let part = |x: &Array, i: isize| -> Result<Array> {
        let nd = x.ndim();
        let mut start = vec![0isize; nd];
        let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        start[nd - 1] = i;
        stop[nd - 1] = i + 1;
        crate::ops::views::slice(x, &start, &stop, &vec![1; nd])
    };
    let (a0, a1, a2) = (part(&a, 0)?, part(&a, 1)?, part(&a, 2)?);
    let (b0, b1, b2) = (part(&b, 0)?, part(&b, 1)?, part(&b, 2)?);
    let term = |p: &Array, q: &Array, r: &Array, s: &Array| -> Result<Array> {
        crate::ops::binary::subtract(
            &crate::ops::binary::multiply(p, q)?,
            &crate::ops::binary::multiply(r, s)?,
        )
    };
    let c = crate::ops::join::concatenate(
        &[
            term(&a1, &b2, &a2, &b1)?,
            term(&a2, &b0, &a0, &b2)?,
            term(&a0, &b1, &a1, &b0)?,
        ],
        -1,
    )?;
    let out_axis = normalize_axis("cross", axis, c.ndim())?;
    crate::ops::views::moveaxis(&c, -1, out_axis as isize)
}

/// Solves `a @ x = b` for `x`, batched over the leading axes.
///
/// `a` has shape `(..., m, m)`. As in numpy 2, `b` is one vector per
/// system when it is 1-D (shape `(m,)`, result `(..., m)`), otherwise a
/// stack of matrices `(..., m, k)` whose leading axes broadcast against
/// `a`'s. Computed as `inv(a) @ b` (so a singular `a` is an evaluation
/// error naming `inv`), which differentiates through [`inv`]'s rules.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[3.0f64, 1.0, 1.0, 2.0], &[2, 2])?;
/// let b = Array::from_slice(&[9.0f64, 8.0], &[2])?;
/// let x = ferrox::linalg::solve(&a, &b)?.to_vec::<f64>()?;
/// assert!((x[0] - 2.0).abs() < 1e-12 && (x[1] - 3.0).abs() < 1e-12);
/// assert!(ferrox::linalg::solve(&a, &ferrox::ones(&[3], ferrox::DType::Float64)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn solve(a: &Array, b: &Array) -> Result<Array> {
    let (sa, sb) = (a.shape(), b.shape());
    let nd = sa.len();
    if nd < 2 || sa[nd - 1] != sa[nd - 2] {
        return Err(Error::shape(
            "solve",
            format!("a must hold square matrices in its last two axes, got shape {sa:?}"),
        ));
    }
    let m = sa[nd - 1];
    let rows = match sb.len() {
        0 => None,
        1 => Some(sb[0]),
        k => Some(sb[k - 2]),
    };
    if rows != Some(m) {
        return Err(Error::shape(
            "solve",
            format!("a has shape {sa:?} and b has shape {sb:?}; b needs {m} rows"),
        ));
    }
    if sb.len() > 1 {
        crate::ops::shape_rules::broadcast_shapes("solve", &sa[..nd - 2], &sb[..sb.len() - 2])?;
    }
    if a.dtype() == DType::Complex64 || b.dtype() == DType::Complex64 {
        return Err(Error::dtype("solve", "complex64 is not supported"));
    }
    let dtype = DType::promote(a.dtype(), b.dtype());
    let dtype = if dtype.is_float() {
        dtype
    } else {
        DType::Float32
    };
    crate::ops::matmul::matmul(&inv(&a.astype(dtype)?)?, &b.astype(dtype)?)
}

/// The triangle of the last two axes that `upper` names.
fn triangle(a: &Array, upper: bool) -> Result<Array> {
    if upper {
        crate::ops::join::triu(a, 0)
    } else {
        crate::ops::join::tril(a, 0)
    }
}

/// The inverse of each triangular matrix in the last two axes of `a`
/// (lower triangular, or upper with `upper`); only that triangle is read
/// and the result is exactly triangular. Dtypes and errors as in [`inv`].
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[2.0f64, 9.0, 1.0, 4.0], &[2, 2])?; // 9 is ignored
/// let y = ferrox::linalg::tri_inv(&a, false)?.to_vec::<f64>()?;
/// assert_eq!(y, vec![0.5, 0.0, -0.125, 0.25]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tri_inv(a: &Array, upper: bool) -> Result<Array> {
    let go = || triangle(&inv(&triangle(a, upper)?)?, upper);
    go().map_err(|e| named("tri_inv", e))
}

/// Solves `a @ x = b` for triangular `a` (lower, or upper with `upper`;
/// only that triangle is read). `b` is a vector or a stack of matrices as
/// in [`solve`].
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[2.0f64, 0.0, 1.0, 4.0], &[2, 2])?;
/// let b = Array::from_slice(&[2.0f64, 9.0], &[2])?;
/// let x = ferrox::linalg::solve_triangular(&a, &b, false)?.to_vec::<f64>()?;
/// assert_eq!(x, vec![1.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn solve_triangular(a: &Array, b: &Array, upper: bool) -> Result<Array> {
    let go = || -> Result<Array> {
        let t = triangle(a, upper)?;
        solve(&t, b)
    };
    go().map_err(|e| named("solve_triangular", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(v: &[f32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn vector_orders() {
        let v = arr(&[3.0, -4.0, 0.0], &[3]);
        let n = |o: f64| {
            norm(&v, Some(NormOrd::P(o)), None, false)
                .unwrap()
                .item::<f32>()
                .unwrap()
        };
        assert_eq!(n(2.0), 5.0);
        assert_eq!(n(1.0), 7.0);
        assert_eq!(n(0.0), 2.0);
        assert_eq!(n(f64::INFINITY), 4.0);
        assert_eq!(n(f64::NEG_INFINITY), 0.0);
        assert!((n(3.0) - 91f32.powf(1.0 / 3.0)).abs() < 1e-5);
    }

    #[test]
    fn errors_name_norm() {
        let m = crate::ops::creation::ones(&[2, 2, 2], DType::Float32).unwrap();
        for r in [
            norm(&m, Some(NormOrd::P(1.0)), None, false),
            norm(&m, None, Some(&[0, 1, 2]), false),
            norm(&m, None, Some(&[0, 0]), false),
            norm(&m, Some(NormOrd::P(3.0)), Some(&[0, 1]), false),
            norm(&m, Some(NormOrd::Fro), Some(&[0]), false),
            norm(&m, None, Some(&[3]), false),
        ] {
            assert!(r.unwrap_err().to_string().starts_with("norm:"));
        }
    }

    #[test]
    fn cross_of_two_vectors() {
        let a = arr(&[1.0, 2.0], &[2]);
        let b = arr(&[3.0, 4.0], &[2]);
        assert_eq!(
            cross(&a, &b, 0).unwrap().to_vec::<f32>().unwrap(),
            vec![0.0, 0.0, -2.0]
        );
    }
}
