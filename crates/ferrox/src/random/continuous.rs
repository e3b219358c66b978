//! Continuous distributions: uniform, normal, truncated normal, Gumbel,
//! Laplace, multivariate normal. Each follows MLX's transform from bits to
//! values step by step (the same operations in the same dtypes), so a key
//! gives MLX's samples.

use super::bits::key_or_default;
use super::mlx_math::{self, Fun};
use super::support::{
    check_broadcast, check_float, check_order, constant, host_scalar, mlx_uniform, mlx_unit,
    to_shape, unit_closed_open,
};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::array::Array;
use crate::ops::shape_rules::broadcast_shapes;
use std::f64::consts::SQRT_2;

/// The lower bound of the uniforms behind `normal` and `laplace`: the f32
/// just above -1.
const LOW: f64 = -(1.0 - 1.0 / 16_777_216.0);

/// Uniform samples on `[low, high)` of shape `shape` and float `dtype`.
///
/// `low` and `high` are scalars or arrays that broadcast to `shape`. The
/// samples are MLX's for the same key: 32 random bits per sample, rounded
/// to float32 and divided by 2^32, clamped to the largest `dtype` value
/// below 1, rounded to `dtype` as `u`; the sample is `(high - low) * u +
/// low` in `dtype` arithmetic (so rounding can reach `high` for some
/// bounds, as in MLX). float64, which MLX does not sample, uses 53 random
/// bits per `u`. `key` of `None` draws from the thread's default key (see
/// [the module docs](crate::random)).
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(0)?;
/// let u = random::uniform(-1.0, 1.0, &[1000], DType::BFloat16, Some(&k))?;
/// assert!(u.to_vec::<half::bf16>()?.iter().all(|v| v.to_f32() >= -1.0 && v.to_f32() < 1.0));
/// // mlx.core.random.uniform(shape=[2], key=mlx.core.random.key(0))
/// let v = random::uniform(0.0, 1.0, &[2], DType::Float32, Some(&k))?;
/// assert_eq!(v.to_vec::<f32>()?, [0.216_295_45, 0.804_124_2]);
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
    let (lo, hi) = (low.astype(dtype)?, high.astype(dtype)?);
    to_shape(mlx_uniform(op, &lo, &hi, shape, dtype, &key)?, shape)
}

/// MLX's float32 uniforms on `(-1, 1)` (from the f32 above -1), the input
/// of `normal`'s and `laplace`'s transforms.
fn symmetric_unit(op: &str, shape: &[usize], key: &Array) -> Result<Array> {
    let f = DType::Float32;
    mlx_uniform(op, &constant(LOW, f)?, &constant(1.0, f)?, shape, f, key)
}

/// `erfinv` of [`symmetric_unit`]: normal variates of variance 1/2, f32.
fn half_normal_f32(op: &str, shape: &[usize], key: &Array) -> Result<Array> {
    mlx_math::apply(Fun::Erfinv, &symmetric_unit(op, shape, key)?)
}

/// Normal samples with mean `loc` and standard deviation `scale`.
///
/// `loc` and `scale` are scalars or arrays broadcasting to `shape`. The
/// samples are MLX's for the same key: `erfinv(v)` in float32 for `v`
/// uniform on `(-1, 1)` (see [`uniform`]), rounded to `dtype`, times
/// `sqrt(2) * scale` and plus `loc` in `dtype` arithmetic (so float64
/// samples carry float32's precision, as in MLX). For complex64 the real
/// and imaginary parts are `erfinv` of two uniforms, normals of variance
/// 1/2 (so `E|z|^2 = 1`), then times `scale` and plus the (complex) `loc`.
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(1)?;
/// let z = random::normal(&[10_000], DType::Float32, 0.0, 1.0, Some(&k))?;
/// let mean = ferrox::mean(&z, None, false)?.item::<f32>()?;
/// assert!(mean.abs() < 0.05);
/// // mlx.core.random.normal([3], key=mlx.core.random.key(1))
/// let z = random::normal(&[3], DType::Float32, 0.0, 1.0, Some(&k))?;
/// assert_eq!(z.to_vec::<f32>()?, [0.172_690_35, -0.647_655_67, 1.222_971_1]);
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
    check_float(op, dtype)?;
    check_broadcast(op, shape, &[("loc", &loc), ("scale", &scale)])?;
    let key = key_or_default(op, key)?;
    normal_with_key(op, shape, dtype, &loc, &scale, &key)
}

/// [`normal`] for a checked key.
fn normal_with_key(
    op: &str,
    shape: &[usize],
    dtype: DType,
    loc: &Array,
    scale: &Array,
    key: &Array,
) -> Result<Array> {
    use crate::ops::binary::{add, multiply};
    let z = half_normal_f32(op, shape, key)?.astype(dtype)?;
    let s = multiply(&constant(SQRT_2, dtype)?, &scale.astype(dtype)?)?;
    let mut r = multiply(&s, &z)?;
    if host_scalar(loc) != Some(0.0) {
        r = add(&loc.astype(dtype)?, &r)?;
    }
    to_shape(r, shape)
}

/// Complex normal samples as MLX draws them: one float32 uniform per part
/// (the parts of an element are adjacent), `erfinv` of each, then
/// `loc + scale * z`.
fn complex_normal(shape: &[usize], loc: Array, scale: Array, key: Option<&Array>) -> Result<Array> {
    use crate::ops::binary::{add, multiply};
    let op = "normal";
    let c = DType::Complex64;
    check_broadcast(op, shape, &[("loc", &loc), ("scale", &scale)])?;
    let key = key_or_default(op, key)?;
    let mut parts = shape.to_vec();
    parts.push(2);
    let z = crate::ops::cast::view(&half_normal_f32(op, &parts, &key)?, c)?;
    let mut z = crate::ops::views::squeeze(&z, Some(&[-1]))?;
    if host_scalar(&scale) != Some(1.0) {
        z = multiply(&scale.astype(c)?, &z)?;
    }
    if host_scalar(&loc) != Some(0.0) {
        z = add(&loc.astype(c)?, &z)?;
    }
    to_shape(z, shape)
}

/// `erf` or `erfinv` in `dtype`: MLX's float32 functions (half precision
/// through float32), ferrox's own for float64.
fn erf_fn(f: Fun, x: &Array) -> Result<Array> {
    match (x.dtype(), f) {
        (DType::Float64, Fun::Erf) => crate::ops::unary::erf(x),
        (DType::Float64, _) => crate::ops::unary::erfinv(x),
        _ => mlx_math::apply(f, x),
    }
}

/// Normal samples truncated to `[lower, upper]`.
///
/// `lower` and `upper` are scalars or arrays; `shape` (default: their
/// broadcast shape) must be one they broadcast to. The samples are MLX's
/// for the same key: with `a = erf(lower / sqrt 2)` and `b = erf(upper /
/// sqrt 2)`, a sample is `sqrt(2) * erfinv(u)` for `u` uniform on `[a, b)`
/// (see [`uniform`]), clipped to the bounds, all in `dtype` arithmetic;
/// `erf` is MLX's float32 approximation (absolute error 1.5e-7), so bounds
/// far in one tail collapse onto a bound. float64, which MLX does not
/// sample, uses ferrox's float64 `erf` and `erfinv`.
///
/// ```
/// use ferrox::{Array, DType, random};
/// let k = random::key(2)?;
/// let t = random::truncated_normal(-0.5, 2.0, Some(&[1000]), DType::Float32, Some(&k))?;
/// assert!(t.to_vec::<f32>()?.iter().all(|&v| (-0.5..=2.0).contains(&v)));
/// // An empty interval gives its lower bound, as in MLX.
/// let e = random::truncated_normal(1.0, -1.0, Some(&[2]), DType::Float32, Some(&k))?;
/// assert_eq!(e.to_vec::<f32>()?, [1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn truncated_normal(
    lower: impl Into<Array>,
    upper: impl Into<Array>,
    shape: Option<&[usize]>,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    use crate::ops::binary::{divide, maximum, minimum, multiply};
    let op = "truncated_normal";
    check_float(op, dtype)?;
    let (lower, upper) = (lower.into(), upper.into());
    let shape = match shape {
        Some(s) => s.to_vec(),
        None => broadcast_shapes(op, lower.shape(), upper.shape())?,
    };
    check_broadcast(op, &shape, &[("lower", &lower), ("upper", &upper)])?;
    let key = key_or_default(op, key)?;
    let sqrt2 = constant(SQRT_2, dtype)?;
    let (lo, hi) = (lower.astype(dtype)?, upper.astype(dtype)?);
    let a = erf_fn(Fun::Erf, &divide(&lo, &sqrt2)?)?;
    let b = erf_fn(Fun::Erf, &divide(&hi, &sqrt2)?)?;
    let u = mlx_uniform(op, &a, &b, &shape, dtype, &key)?;
    let z = multiply(&sqrt2, &erf_fn(Fun::Erfinv, &u)?)?;
    to_shape(maximum(&minimum(&hi, &z)?, &lo)?, &shape)
}

/// Samples of the standard Gumbel distribution, `-log(-log(u))` for `u`
/// uniform on `[0, 1)` (see [`uniform`]), in `dtype` arithmetic: MLX's
/// samples for the same key. (`u = 0`, one draw in 2^32, gives `-inf`.)
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
    gumbel_with_key(op, shape, dtype, &key)
}

/// [`gumbel`] for a checked key.
pub(crate) fn gumbel_with_key(
    op: &str,
    shape: &[usize],
    dtype: DType,
    key: &Array,
) -> Result<Array> {
    use crate::ops::unary::negative;
    let u = if dtype == DType::Float64 {
        unit_closed_open(op, shape, dtype, key)?
    } else {
        mlx_unit(op, shape, dtype, key)?.astype(dtype)?
    };
    let inner = negative(&mlx_math::apply(Fun::Log, &u)?)?;
    negative(&mlx_math::apply(Fun::Log, &inner)?)
}

/// Laplace samples with location `loc` and scale `scale`: MLX's samples for
/// the same key, `sign(v) * log1p(-|v|)` for `v` uniform on `(-1, 1)` in
/// float32 (see [`uniform`]; float64 for a float64 `dtype`, as MLX
/// promotes), rounded to `dtype`, then times `scale` and plus `loc` in
/// `dtype` arithmetic.
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
    use crate::ops::binary::{add, multiply};
    use crate::ops::unary::{abs, sign};
    let op = "laplace";
    let (loc, scale) = (loc.into(), scale.into());
    check_float(op, dtype)?;
    check_broadcast(op, shape, &[("loc", &loc), ("scale", &scale)])?;
    let key = key_or_default(op, key)?;
    let v = symmetric_unit(op, shape, &key)?;
    let t = multiply(&constant(-1.0, dtype)?, &abs(&v)?)?;
    let mut r = multiply(&sign(&v)?, &mlx_math::apply(Fun::Log1p, &t)?)?.astype(dtype)?;
    if host_scalar(&scale) != Some(1.0) {
        r = multiply(&scale.astype(dtype)?, &r)?;
    }
    if host_scalar(&loc) != Some(0.0) {
        r = add(&loc.astype(dtype)?, &r)?;
    }
    to_shape(r, shape)
}

/// Samples of the multivariate normal distribution with mean `mean`
/// (`[..., n]`) and covariance `cov` (`[..., n, n]`, symmetric positive
/// semi-definite), of shape `shape ++ [n]`.
///
/// The batch shapes of `mean` and `cov` (all but their last one and two
/// axes) must broadcast to `shape`; an empty `shape` means their broadcast
/// batch shape. As in MLX, a sample is `mean + z S` for the standard
/// normals `z` of [`normal`] (MLX's for the same key) and the symmetric
/// square root `S` of `cov` (MLX's is `U sqrt(s) V^T` from its float32 SVD;
/// ferrox's comes from a float64 eigendecomposition, so samples agree with
/// MLX's to float32 rounding, not bit for bit). A covariance that is not
/// positive semi-definite makes evaluation fail with an error naming the
/// op. Only the first derivative with respect to `mean` is available (`S`
/// has no derivative rule).
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
    if !matches!(dtype, DType::Float32 | DType::Float64) {
        return Err(crate::error::Error::dtype(
            op,
            format!("dtype must be float32 or float64, got {dtype}"),
        ));
    }
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
    let mut full = shape.to_vec();
    full.push(n);
    let z = normal_with_key(op, &full, dtype, &Array::from(0.0), &Array::from(1.0), &key)?;
    let s = super::psd_sqrt::psd_sqrt(&cov.astype(DType::Float64)?)?.astype(dtype)?;
    let zs = crate::ops::matmul::matmul(&crate::ops::views::expand_dims(&z, &[-2])?, &s)?;
    let zs = crate::ops::views::squeeze(&zs, Some(&[-2]))?;
    let x = crate::ops::binary::add(&mean.astype(dtype)?, &zs)?;
    to_shape(x, &full)
}
