//! Continuous distributions: uniform, normal, truncated normal, Gumbel,
//! Laplace.

use super::bits::key_or_default;
use super::support::{
    check_broadcast, check_float, check_order, constant, prev_float, to_shape, unit_closed_open,
    unit_open, work_dtype,
};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::array::Array;
use crate::ops::shape_rules::broadcast_shapes;
use std::f64::consts::SQRT_2;

/// Uniform samples on `[low, high)` of shape `shape` and float `dtype`.
///
/// `low` and `high` are scalars or arrays that broadcast to `shape`. Each
/// sample is `low + (high - low) * u` for a uniform `u` on `[0, 1)` with a
/// 24-bit (f32, f16, bf16) or 53-bit (f64) grid, computed in f32 (f64 for
/// f64), rounded once to `dtype` and kept below `high`: rounding can never
/// return `high` itself. `key` of `None` draws from the thread's default
/// key (see [the module docs](crate::random)).
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(0)?;
/// let u = random::uniform(-1.0, 1.0, &[1000], DType::BFloat16, Some(&k))?;
/// assert!(u.to_vec::<half::bf16>()?.iter().all(|v| v.to_f32() >= -1.0 && v.to_f32() < 1.0));
/// assert!(random::uniform(2.0, 1.0, &[3], DType::Float32, Some(&k)).is_err());
/// assert!(random::uniform(0.0, 1.0, &[3], DType::Int32, Some(&k)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn uniform(
    low: impl Into<Array>,
    high: impl Into<Array>,
    shape: &[usize],
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "uniform";
    check_float(op, dtype)?;
    let (low, high) = (low.into(), high.into());
    check_broadcast(op, shape, &[("low", &low), ("high", &high)])?;
    check_order(op, ("low", "high"), &low, &high)?;
    let key = key_or_default(op, key)?;
    let w = work_dtype(dtype);
    let (lo_w, hi_w) = (
        crate::ops::cast::astype(&low, w)?,
        crate::ops::cast::astype(&high, w)?,
    );
    let u = unit_closed_open(op, shape, w, &key)?;
    let r = crate::ops::binary::add(
        &lo_w,
        &crate::ops::binary::multiply(&crate::ops::binary::subtract(&hi_w, &lo_w)?, &u)?,
    )?;
    let r = crate::ops::cast::astype(&r, dtype)?;
    // Clamp in the output type: below `high` and not below `low`.
    let (lo, hi) = (
        crate::ops::cast::astype(&low, dtype)?,
        crate::ops::cast::astype(&high, dtype)?,
    );
    let r = crate::ops::binary::minimum(&r, &prev_float(&hi)?)?;
    to_shape(crate::ops::binary::maximum(&r, &lo)?, shape)
}

/// Standard normal variates in the work type: `sqrt(2) * erfinv(v)` for `v`
/// uniform on the open interval `(-1, 1)`.
fn standard_normal(op: &str, shape: &[usize], w: DType, key: &Array) -> Result<Array> {
    let u = unit_open(op, shape, w, key)?;
    // 2u - 1 is exact: u is an odd multiple of 2^-p.
    let v = crate::ops::binary::subtract(
        &crate::ops::binary::multiply(&u, &constant(2.0, w)?)?,
        &constant(1.0, w)?,
    )?;
    crate::ops::binary::multiply(&crate::ops::unary::erfinv(&v)?, &constant(SQRT_2, w)?)
}

/// Normal samples with mean `loc` and standard deviation `scale`.
///
/// `loc` and `scale` are scalars or arrays broadcasting to `shape`. A
/// sample is `loc + scale * sqrt(2) * erfinv(v)` for `v` uniform on the
/// open interval `(-1, 1)` (a symmetric grid of odd multiples of 2^-23,
/// or 2^-52 for f64), computed in f32 (f64 for f64) and rounded once to
/// `dtype`; every sample is finite (|z| < 5.5 in f32, < 8.3 in f64).
/// For complex64 the real and imaginary parts are independent normals of
/// variance `scale^2 / 2` around the (complex) `loc`.
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(1)?;
/// let z = random::normal(&[10_000], DType::Float32, 0.0, 1.0, Some(&k))?;
/// let mean = ferrox::mean(&z, None, false)?.item::<f32>()?;
/// assert!(mean.abs() < 0.05);
/// let y = random::normal(&[2, 3], DType::Float16, 10.0, 0.5, Some(&k))?;
/// assert_eq!((y.shape(), y.dtype()), (&[2usize, 3][..], DType::Float16));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn normal(
    shape: &[usize],
    dtype: DType,
    loc: impl Into<Array>,
    scale: impl Into<Array>,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "normal";
    let (loc, scale) = (loc.into(), scale.into());
    if dtype == DType::Complex64 {
        return complex_normal(shape, loc, scale, key);
    }
    location_scale(op, shape, dtype, loc, scale, key, standard_normal)
}

/// Complex normal samples: real and imaginary parts independent normals
/// of variance `scale^2 / 2` (so `E|z - loc|^2 = scale^2`), from one key
/// split in two; `loc` may be complex.
fn complex_normal(shape: &[usize], loc: Array, scale: Array, key: Option<&Array>) -> Result<Array> {
    use crate::ops::binary::{add, multiply};
    let op = "normal";
    check_broadcast(op, shape, &[("loc", &loc), ("scale", &scale)])?;
    let key = key_or_default(op, key)?;
    let keys = super::bits::split(&key, 2)?;
    let part = |i: i32| -> Result<Array> {
        let k = crate::ops::indexing::take(&keys, &Array::from(i), Some(0))?;
        standard_normal(op, shape, DType::Float32, &k)
    };
    let (re, im) = (part(0)?, part(1)?);
    let i = Array::scalar(crate::dtype::Complex64::new(0.0, 1.0));
    let z = add(
        &re.astype(DType::Complex64)?,
        &multiply(&im.astype(DType::Complex64)?, &i)?,
    )?;
    let half = Array::scalar(std::f32::consts::FRAC_1_SQRT_2);
    let scale = multiply(&scale.astype(DType::Float32)?, &half)?.astype(DType::Complex64)?;
    let r = add(&loc.astype(DType::Complex64)?, &multiply(&scale, &z)?)?;
    to_shape(r, shape)
}

/// Normal samples truncated to `[lower, upper]`.
///
/// `lower` and `upper` are scalars or arrays; `shape` (default: their
/// broadcast shape) must be one they broadcast to. Sampling inverts the
/// normal CDF between the bounds in f64, then clips to the bounds (which
/// absorbs rounding) and rounds to `dtype`. Bounds far in one tail (beyond
/// about 8 standard deviations) collapse onto the nearer bound.
///
/// ```
/// use ferrox::{Array, DType, random};
/// let k = random::key(2)?;
/// let t = random::truncated_normal(-0.5, 2.0, Some(&[1000]), DType::Float32, Some(&k))?;
/// assert!(t.to_vec::<f32>()?.iter().all(|&v| (-0.5..=2.0).contains(&v)));
/// assert!(random::truncated_normal(1.0, -1.0, None, DType::Float32, Some(&k)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn truncated_normal(
    lower: impl Into<Array>,
    upper: impl Into<Array>,
    shape: Option<&[usize]>,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "truncated_normal";
    check_float(op, dtype)?;
    let (lower, upper) = (lower.into(), upper.into());
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => broadcast_shapes(op, lower.shape(), upper.shape())?,
    };
    check_broadcast(op, &shape, &[("lower", &lower), ("upper", &upper)])?;
    check_order(op, ("lower", "upper"), &lower, &upper)?;
    let key = key_or_default(op, key)?;
    let w = DType::Float64;
    let (lo, hi) = (
        crate::ops::cast::astype(&lower, w)?,
        crate::ops::cast::astype(&upper, w)?,
    );
    let cdf = |x: &Array| {
        crate::ops::unary::erf(&crate::ops::binary::multiply(
            x,
            &constant(1.0 / SQRT_2, w)?,
        )?)
    };
    let (a, b) = (cdf(&lo)?, cdf(&hi)?);
    let u = unit_open(op, &shape, w, &key)?;
    let p = crate::ops::binary::add(
        &a,
        &crate::ops::binary::multiply(&crate::ops::binary::subtract(&b, &a)?, &u)?,
    )?;
    let z = crate::ops::binary::multiply(&crate::ops::unary::erfinv(&p)?, &constant(SQRT_2, w)?)?;
    let z = crate::ops::select::clip(&z, Some(&lo), Some(&hi))?;
    let z = to_shape(z, &shape)?;
    // Clip again after rounding so the bounds hold in `dtype` too.
    let (lo_d, hi_d) = (
        crate::ops::cast::astype(&lower, dtype)?,
        crate::ops::cast::astype(&upper, dtype)?,
    );
    crate::ops::select::clip(
        &crate::ops::cast::astype(&z, dtype)?,
        Some(&lo_d),
        Some(&hi_d),
    )
}

/// Samples of the standard Gumbel distribution, `-log(-log(u))` for `u`
/// uniform on the open interval `(0, 1)`; all finite.
///
/// ```
/// use ferrox::{DType, random};
/// let g = random::gumbel(&[4], DType::Float32, Some(&random::key(3)?))?;
/// assert!(g.to_vec::<f32>()?.iter().all(|v| v.is_finite()));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gumbel(shape: &[usize], dtype: DType, key: Option<&Array>) -> Result<Array> {
    let op = "gumbel";
    check_float(op, dtype)?;
    let key = key_or_default(op, key)?;
    let w = work_dtype(dtype);
    let g = standard_gumbel(op, shape, w, &key)?;
    crate::ops::cast::astype(&g, dtype)
}

/// Standard Gumbel variates in the work type `w`.
pub(crate) fn standard_gumbel(op: &str, shape: &[usize], w: DType, key: &Array) -> Result<Array> {
    let u = unit_open(op, shape, w, key)?;
    crate::ops::unary::negative(&crate::ops::unary::log(&crate::ops::unary::negative(
        &crate::ops::unary::log(&u)?,
    )?)?)
}

/// Laplace samples with location `loc` and scale `scale`: `loc - scale *
/// sign(v) * log(1 - |v|)` for `v` uniform on the open interval `(-1, 1)`,
/// computed in f32 (f64 for f64) and rounded once to `dtype`; all finite.
///
/// ```
/// use ferrox::{DType, random};
/// let x = random::laplace(&[10_000], DType::Float32, 1.0, 2.0, Some(&random::key(4)?))?;
/// let mean = ferrox::mean(&x, None, false)?.item::<f32>()?;
/// assert!((mean - 1.0).abs() < 0.1);
/// assert!(random::laplace(&[2], DType::Int32, 0.0, 1.0, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn laplace(
    shape: &[usize],
    dtype: DType,
    loc: impl Into<Array>,
    scale: impl Into<Array>,
    key: Option<&Array>,
) -> Result<Array> {
    let (loc, scale) = (loc.into(), scale.into());
    location_scale("laplace", shape, dtype, loc, scale, key, standard_laplace)
}

/// Standard Laplace variates in the work type: `-sign(v) * log(1 - |v|)`
/// for `v` uniform on the open interval `(-1, 1)`.
fn standard_laplace(op: &str, shape: &[usize], w: DType, key: &Array) -> Result<Array> {
    use crate::ops::binary::{multiply, subtract};
    use crate::ops::unary::{abs, log1p, negative, sign};
    let u = unit_open(op, shape, w, key)?;
    let v = subtract(&multiply(&u, &constant(2.0, w)?)?, &constant(1.0, w)?)?;
    negative(&multiply(&sign(&v)?, &log1p(&negative(&abs(&v)?)?)?)?)
}

/// `loc + scale * z` for standard variates `z` drawn by `standard` in the
/// work type of the float `dtype`, rounded once to `dtype`.
fn location_scale(
    op: &str,
    shape: &[usize],
    dtype: DType,
    loc: Array,
    scale: Array,
    key: Option<&Array>,
    standard: fn(&str, &[usize], DType, &Array) -> Result<Array>,
) -> Result<Array> {
    check_float(op, dtype)?;
    check_broadcast(op, shape, &[("loc", &loc), ("scale", &scale)])?;
    let key = key_or_default(op, key)?;
    let w = work_dtype(dtype);
    let z = standard(op, shape, w, &key)?;
    let (loc, scale) = (
        crate::ops::cast::astype(&loc, w)?,
        crate::ops::cast::astype(&scale, w)?,
    );
    let r = crate::ops::binary::add(&loc, &crate::ops::binary::multiply(&scale, &z)?)?;
    to_shape(crate::ops::cast::astype(&r, dtype)?, shape)
}

/// Samples of the multivariate normal distribution with mean `mean`
/// (`[..., n]`) and covariance `cov` (`[..., n, n]`, symmetric positive
/// semi-definite), of shape `shape ++ [n]`.
///
/// The batch shapes of `mean` and `cov` (all but their last one and two
/// axes) must broadcast to `shape`; an empty `shape` means their broadcast
/// batch shape. A sample is `mean + L z` for standard
/// normal `z` and the Cholesky factor `L` of `cov`, computed in f64; a
/// covariance that is not positive semi-definite makes evaluation fail
/// with an error naming the op. Only the first derivative with respect to
/// `mean` is available (`L` has no derivative rule).
///
/// ```
/// use ferrox::{Array, DType, random};
/// let mean = Array::from_slice(&[1.0f32, -1.0], &[2])?;
/// let cov = Array::from_slice(&[1.0f32, 0.5, 0.5, 2.0], &[2, 2])?;
/// let x = random::multivariate_normal(&mean, &cov, &[1000], DType::Float32, Some(&random::key(0)?))?;
/// assert_eq!(x.shape(), &[1000, 2]);
/// let bad = Array::from_slice(&[1.0f32, 0.0, 0.0], &[3])?;
/// assert!(random::multivariate_normal(&mean, &bad, &[], DType::Float32, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn multivariate_normal(
    mean: &Array,
    cov: &Array,
    shape: &[usize],
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "multivariate_normal";
    check_float(op, dtype)?;
    for (name, a) in [("mean", mean), ("cov", cov)] {
        if a.dtype() == DType::Complex64 {
            return Err(crate::error::Error::dtype(
                op,
                format!("{name} must be real, got complex64"),
            ));
        }
    }
    let (ms, cs) = (mean.shape(), cov.shape());
    if ms.is_empty() || cs.len() < 2 {
        return Err(crate::error::Error::shape(
            op,
            format!(
                "mean must have at least 1 axis and cov at least 2, got shapes {ms:?} and {cs:?}"
            ),
        ));
    }
    let n = ms[ms.len() - 1];
    if cs[cs.len() - 1] != n || cs[cs.len() - 2] != n {
        return Err(crate::error::Error::shape(
            op,
            format!("mean has shape {ms:?}, so cov must end in [{n}, {n}]; got {cs:?}"),
        ));
    }
    let batch_m = &ms[..ms.len() - 1];
    let batch_c = &cs[..cs.len() - 2];
    let batch;
    let shape = if shape.is_empty() {
        batch = broadcast_shapes(op, batch_m, batch_c)?;
        batch.as_slice()
    } else {
        shape
    };
    for (name, b) in [("mean", batch_m), ("cov", batch_c)] {
        if broadcast_shapes(op, b, shape).ok().as_deref() != Some(shape) {
            return Err(crate::error::Error::shape(
                op,
                format!("the batch shape {b:?} of {name} does not broadcast to shape {shape:?}"),
            ));
        }
    }
    let key = key_or_default(op, key)?;
    let w = work_dtype(dtype);
    let mut full = shape.to_vec();
    full.push(n);
    let z = standard_normal(op, &full, w, &key)?;
    let l = super::psd_cholesky::psd_cholesky(&crate::ops::cast::astype(cov, DType::Float64)?)?;
    let l = crate::ops::cast::astype(&l, w)?;
    // (L z) as a row vector: z^T L^T.
    let lz = crate::ops::matmul::matmul(
        &crate::ops::views::expand_dims(&z, &[-2])?,
        &crate::ops::views::swapaxes(&l, -1, -2)?,
    )?;
    let lz = crate::ops::views::squeeze(&lz, Some(&[-2]))?;
    let x = crate::ops::binary::add(&crate::ops::cast::astype(mean, w)?, &lz)?;
    to_shape(crate::ops::cast::astype(&x, dtype)?, &full)
}
