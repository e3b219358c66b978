//! Discrete distributions: randint, bernoulli, categorical, permutation.
//! Each follows MLX's transform from bits to values, so a key gives MLX's
//! samples.

use super::bits::{bits_of, key_or_default};
use super::continuous::gumbel_with_key;
use super::mlx_math::{self, Fun};
use super::support::{check_broadcast, constant, host_scalar, mlx_uniform, mlx_unit, to_shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::search::Side;
use crate::ops::shape_rules::{broadcast_shapes, normalize_axis};

/// The range of an integer dtype, as i128.
fn int_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::UInt8 => (0, u8::MAX.into()),
        DType::UInt16 => (0, u16::MAX.into()),
        DType::UInt32 => (0, u32::MAX.into()),
        DType::UInt64 => (0, u64::MAX.into()),
        DType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// An exact integer value of a host scalar, if it is one.
fn host_int(a: &Array) -> Option<i128> {
    match a.dtype() {
        DType::Int64 if a.primitive().is_none() && a.is_available() && a.size() == 1 => {
            a.item::<i64>().ok().map(i128::from)
        }
        DType::UInt64 if a.primitive().is_none() && a.is_available() && a.size() == 1 => {
            a.item::<u64>().ok().map(i128::from)
        }
        _ => host_scalar(a).map(|v| v.floor() as i128),
    }
}

/// Random integers on `[low, high)` of shape `shape` and integer `dtype`
/// (or bool: the integers cast, so `randint(0, 2, .., Bool)` is a fair coin).
///
/// `low` and `high` are scalars or arrays broadcasting to `shape`. The
/// samples are MLX's for the same key: `floor` of a float32 uniform on
/// `[low, high)` (see [`uniform`](crate::random::uniform)), converted to
/// `dtype` and clamped to `[low, high - 1]`. So, as in MLX, ranges wider
/// than 2^24 are covered only as finely as float32 resolves them. Scalar
/// bounds are checked to lie in `dtype`'s range; where `high <= low` the
/// sample is `low`, as in MLX.
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(0)?;
/// let r = random::randint(-3i64, 4i64, &[1000], DType::Int8, Some(&k))?;
/// let v = r.to_vec::<i8>()?;
/// assert!(v.iter().all(|x| (-3..4).contains(x)));
/// // mlx.core.random.randint(0, 10, [4], key=mlx.core.random.key(0))
/// let r = random::randint(0, 10, &[4], DType::Int32, Some(&k))?;
/// assert_eq!(r.to_vec::<i32>()?, [9, 2, 6, 2]);
/// assert!(random::randint(0, 300, &[2], DType::UInt8, Some(&k)).is_err());
/// assert_eq!(random::randint(5, -5, &[2], DType::Int32, Some(&k))?.to_vec::<i32>()?, [5, 5]);
/// assert!(random::randint(0.0, 1.0, &[2], DType::Float32, Some(&k)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn randint(
    low: impl Into<Array>,
    high: impl Into<Array>,
    shape: &[usize],
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    use crate::ops::binary::{maximum, minimum, subtract};
    let op = "randint";
    // Bool samples are the integer samples cast, as MLX's are.
    if dtype == DType::Bool {
        return randint(low, high, shape, DType::Int32, key)?.astype(DType::Bool);
    }
    if !dtype.is_integer() {
        return Err(Error::dtype(
            op,
            format!("dtype {dtype} is not an integer type"),
        ));
    }
    let (low, high) = (low.into(), high.into());
    check_broadcast(op, shape, &[("low", &low), ("high", &high)])?;
    if let (Some(l), Some(h)) = (host_int(&low), host_int(&high)) {
        let (min, max) = int_range(dtype);
        if l < min || (h > l && h - 1 > max) {
            return Err(Error::value(
                op,
                format!("the range [{l}, {h}) does not fit dtype {dtype} ([{min}, {max}])"),
            ));
        }
    }
    let key = key_or_default(op, key)?;
    let f = DType::Float32;
    let u = mlx_uniform(op, &low.astype(f)?, &high.astype(f)?, shape, f, &key)?;
    let r = crate::ops::unary::floor(&u)?.astype(dtype)?;
    // `top` below `low` (an empty interval) leaves `low`.
    let top = subtract(&high, &Array::from(1))?.astype(dtype)?;
    to_shape(maximum(&minimum(&r, &top)?, &low.astype(dtype)?)?, shape)
}

/// Booleans that are `true` with probability `p`.
///
/// `p` is a scalar or an array; `shape` (default: `p`'s shape) must be one
/// it broadcasts to. The samples are MLX's for the same key: a sample is
/// `b < p * (2^32 + 512)` for 32 random bits `b`, compared in `p`'s float
/// type (float32 for half-precision `p`), so `p = 0` never and `p = 1`
/// always gives `true`.
///
/// ```
/// use ferrox::random;
/// let k = random::key(5)?;
/// let b = random::bernoulli(0.25, Some(&[4000]), Some(&k))?;
/// let ones = b.to_vec::<bool>()?.iter().filter(|&&x| x).count();
/// assert!((800..1200).contains(&ones));
/// assert!(random::bernoulli(1.5, None, Some(&k)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bernoulli(
    p: impl Into<Array>,
    shape: Option<&[usize]>,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "bernoulli";
    let p = p.into();
    if !p.dtype().is_float() || p.dtype() == DType::Complex64 {
        return Err(Error::dtype(
            op,
            format!("p must be a real float, got {}", p.dtype()),
        ));
    }
    if let Some(v) = host_scalar(&p) {
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::value(op, format!("p {v} is outside [0, 1]")));
        }
    }
    let shape = shape.map_or_else(|| p.shape().to_vec(), <[usize]>::to_vec);
    check_broadcast(op, &shape, &[("p", &p)])?;
    let key = key_or_default(op, key)?;
    // The f32 just above 2^32: p scales onto [0, 2^32], so p >= 1 is
    // always and p <= 0 never true.
    let t = crate::ops::binary::multiply(&p, &constant(4_294_967_808.0, DType::Float32)?)?;
    let b = bits_of(op, &shape, 4, &key)?.astype(t.dtype())?;
    let b = crate::ops::binary::less(&b, &t)?;
    if b.shape() == shape.as_slice() {
        Ok(b)
    } else {
        crate::ops::views::broadcast_to(&b, &shape)
    }
}

/// Samples category indices (uint32) from unnormalised log-probabilities.
///
/// `axis` of `logits` indexes the categories. With neither `shape` nor
/// `num_samples` there is one sample per distribution (the shape of
/// `logits` without `axis`); `shape` asks for that many samples, a shape
/// the distributions broadcast to; `num_samples` appends an axis of that
/// many independent samples per distribution. The samples are MLX's for
/// the same key: one distribution (logits of `n` elements) sampled into a
/// non-empty shape inverts its CDF at float32 uniforms (so `-inf` logits
/// are never drawn); otherwise the sample is the argmax of `logits` plus
/// float32 Gumbel noise laid out with the categories at `axis`.
///
/// ```
/// use ferrox::{Array, random};
/// let k = random::key(4)?;
/// let logits = Array::from_slice(&[0.0f32, f32::NEG_INFINITY, 0.0], &[3])?;
/// let s = random::categorical(&logits, -1, None, Some(50), Some(&k))?;
/// assert_eq!(s.shape(), &[50]);
/// assert!(s.to_vec::<u32>()?.iter().all(|&c| c != 1));
/// assert!(random::categorical(&logits, 1, None, None, Some(&k)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn categorical(
    logits: &Array,
    axis: isize,
    shape: Option<&[usize]>,
    num_samples: Option<usize>,
    key: Option<&Array>,
) -> Result<Array> {
    let op = "categorical";
    if logits.dtype() == DType::Complex64 {
        return Err(Error::dtype(op, "logits must be real, got complex64"));
    }
    if logits.ndim() == 0 {
        return Err(Error::shape(
            op,
            "logits must have at least one axis, got a 0-d array",
        ));
    }
    let ax = normalize_axis(op, axis, logits.ndim())?;
    let classes = logits.shape()[ax];
    if classes == 0 {
        return Err(Error::shape(
            op,
            format!(
                "axis {axis} of logits {:?} has no categories",
                logits.shape()
            ),
        ));
    }
    let mut batch = logits.shape().to_vec();
    batch.remove(ax);
    let (l, out_shape) = match (shape, num_samples) {
        (Some(_), Some(_)) => {
            return Err(Error::value(
                op,
                "give at most one of shape and num_samples",
            ));
        }
        (Some(s), None) => {
            if broadcast_shapes(op, &batch, s).ok().as_deref() != Some(s) {
                return Err(Error::shape(
                    op,
                    format!(
                        "logits without axis {axis} have shape {batch:?}, which does not broadcast to shape {s:?}"
                    ),
                ));
            }
            (logits.clone(), s.to_vec())
        }
        (None, Some(n)) => {
            // A trailing axis of one sample per distribution, widened.
            let l = crate::ops::views::expand_dims(logits, &[-1])?;
            let mut s = l.shape().to_vec();
            s.remove(ax);
            if let Some(last) = s.last_mut() {
                *last = n;
            }
            (l, s)
        }
        (None, None) => (logits.clone(), batch),
    };
    let key = key_or_default(op, key)?;
    if l.size() == classes && !out_shape.is_empty() {
        return inverse_cdf(&l.reshape(&[classes as isize])?, &out_shape, &key);
    }
    // Gumbel noise with the categories at `at`, where `axis` of `l` lands
    // when `l` broadcasts against `out_shape` plus that axis.
    let at = ax + out_shape.len() + 1 - l.ndim();
    let mut noise = out_shape.clone();
    noise.insert(at, classes);
    let g = gumbel_with_key(op, &noise, DType::Float32, &key)?;
    crate::ops::reduce::argmax(&crate::ops::binary::add(&g, &l)?, Some(at as isize), false)
}

/// Samples of one distribution (`logits` 1-D) by inverting its CDF: the
/// index `i` with `cdf[i] <= u * total < cdf[i + 1]` for float32 uniforms
/// `u`, the weights `exp(logits - max)` (or, when the max is infinite, 1
/// for the maximal logits and 0 elsewhere).
fn inverse_cdf(logits: &Array, shape: &[usize], key: &Array) -> Result<Array> {
    use crate::ops::binary::{equal, multiply, subtract};
    let op = "categorical";
    let d = DType::promote(logits.dtype(), DType::Float32);
    let x = logits.astype(d)?;
    let m = crate::ops::reduce::max(&x, None, false)?;
    let w = crate::ops::select::r#where(
        &crate::ops::unary::isinf(&m)?,
        &equal(&x, &m)?.astype(d)?,
        &mlx_math::apply(Fun::Exp, &subtract(&x, &m)?)?,
    )?;
    let cdf = crate::ops::scan::cumsum(&w, Some(0), false, false)?;
    // The total in the scan's order: the last inclusive partial sum.
    let total = crate::ops::indexing::take(
        &crate::ops::scan::cumsum(&w, Some(0), false, true)?,
        &Array::from(-1),
        Some(0),
    )?;
    let u = multiply(&mlx_unit(op, shape, DType::Float32, key)?, &total)?;
    let i = crate::ops::search::searchsorted(&cdf, &u, Side::Right)?;
    subtract(&i, &constant(1.0, DType::UInt32)?)
}

/// A random permutation of `0..n` (uint32, as MLX's): the order that
/// sorts `n` random 32-bit words (stably), MLX's for the same key.
///
/// ```
/// use ferrox::random;
/// let p = random::permutation(6, Some(&random::key(0)?))?;
/// let mut v = p.to_vec::<u32>()?;
/// v.sort();
/// assert_eq!(v, vec![0, 1, 2, 3, 4, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn permutation(n: usize, key: Option<&Array>) -> Result<Array> {
    let key = key_or_default("permutation", key)?;
    order("permutation", n, &key)
}

/// The sorting order of `n` random words of `key`.
fn order(op: &str, n: usize, key: &Array) -> Result<Array> {
    crate::ops::sort::argsort(&bits_of(op, &[n], 4, key)?, Some(0))
}

/// `x` with its entries along `axis` in a random order: `x` taken along
/// `axis` at [`permutation`] of its length, as MLX does.
///
/// ```
/// use ferrox::{Array, random};
/// let x = Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[3, 2])?;
/// let y = random::permutation_of(&x, 0, Some(&random::key(1)?))?;
/// let rows: Vec<Vec<i32>> = y.to_vec::<i32>()?.chunks(2).map(|r| r.to_vec()).collect();
/// assert!(rows.iter().all(|r| r[1] == r[0] + 1));
/// assert!(random::permutation_of(&x, 2, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn permutation_of(x: &Array, axis: isize, key: Option<&Array>) -> Result<Array> {
    permute("permutation", x, axis, key)
}

fn permute(op: &str, x: &Array, axis: isize, key: Option<&Array>) -> Result<Array> {
    if x.ndim() == 0 {
        return Err(Error::shape(op, "cannot permute a 0-d array"));
    }
    let ax = normalize_axis(op, axis, x.ndim())?;
    let key = key_or_default(op, key)?;
    let order = order(op, x.shape()[ax], &key)?;
    crate::ops::indexing::take(x, &order, Some(ax as isize))
}
