//! Discrete distributions: randint, bernoulli, categorical, permutation.

use super::bits::{bits_of, key_or_default};
use super::continuous::standard_gumbel;
use super::support::{
    check_broadcast, constant, host_scalar, to_shape, unit_closed_open, work_dtype,
};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
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

/// Random integers on `[low, high)` of shape `shape` and integer `dtype`.
///
/// `low` and `high` are scalars or arrays broadcasting to `shape`. A
/// sample is `low + (b mod (high - low))` for 64 random bits `b`, in 64-bit
/// wrapping arithmetic, so the whole range of every integer type is
/// reachable and the bias of the modulo is below `(high - low) / 2^64`.
/// Scalar bounds are checked (`low <= high`, both in `dtype`'s range);
/// where array bounds have `high <= low` the sample is `low`.
///
/// ```
/// use ferrox::{DType, random};
/// let k = random::key(0)?;
/// let r = random::randint(-3i64, 4i64, &[1000], DType::Int8, Some(&k))?;
/// let v = r.to_vec::<i8>()?;
/// assert!(v.iter().all(|x| (-3..4).contains(x)));
/// assert!(random::randint(0, 300, &[2], DType::UInt8, Some(&k)).is_err());
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
    let op = "randint";
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
        if l > h {
            return Err(Error::value(
                op,
                format!("low {l} is greater than high {h}"),
            ));
        }
        if l < min || (h > l && h - 1 > max) {
            return Err(Error::value(
                op,
                format!("the range [{l}, {h}) does not fit dtype {dtype} ([{min}, {max}])"),
            ));
        }
    }
    let key = key_or_default(op, key)?;
    // Both bounds as u64 bit patterns of their 64-bit values.
    let wide = if dtype == DType::UInt64 {
        DType::UInt64
    } else {
        DType::Int64
    };
    let as_u64 =
        |a: &Array| crate::ops::cast::view(&crate::ops::cast::astype(a, wide)?, DType::UInt64);
    let (lo, hi) = (as_u64(&low)?, as_u64(&high)?);
    let one = constant(1.0, DType::UInt64)?;
    let zero = constant(0.0, DType::UInt64)?;
    // high - low wraps to the true span when high > low; elsewhere use 1.
    let valid = match wide {
        DType::UInt64 => crate::ops::binary::greater(&hi, &lo)?,
        _ => crate::ops::binary::greater(
            &crate::ops::cast::view(&hi, wide)?,
            &crate::ops::cast::view(&lo, wide)?,
        )?,
    };
    let span = crate::ops::select::r#where(&valid, &crate::ops::binary::subtract(&hi, &lo)?, &one)?;
    let b = bits_of(op, shape, 8, &key)?;
    let r = crate::ops::binary::remainder(&b, &span)?;
    let r = crate::ops::select::r#where(&valid, &r, &zero)?;
    let v = crate::ops::cast::view(&crate::ops::binary::add(&lo, &r)?, wide)?;
    to_shape(crate::ops::cast::astype(&v, dtype)?, shape)
}

/// Booleans that are `true` with probability `p`.
///
/// `p` is a scalar or an array; `shape` (default: `p`'s shape) must be one
/// it broadcasts to. A sample is `u < p` for `u` uniform on `[0, 1)` (24
/// bits, or 53 for an f64 `p`), so `p = 0` never and `p = 1` always gives
/// `true`.
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
    if p.dtype() == DType::Complex64 {
        return Err(Error::dtype(op, "p must be real, got complex64"));
    }
    if let Some(v) = host_scalar(&p) {
        if !(0.0..=1.0).contains(&v) {
            return Err(Error::value(op, format!("p {v} is outside [0, 1]")));
        }
    }
    let shape = shape.map_or_else(|| p.shape().to_vec(), <[usize]>::to_vec);
    check_broadcast(op, &shape, &[("p", &p)])?;
    let key = key_or_default(op, key)?;
    let w = work_dtype(p.dtype());
    let u = unit_closed_open(op, &shape, w, &key)?;
    let b = crate::ops::binary::less(&u, &crate::ops::cast::astype(&p, w)?)?;
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
/// many independent samples per distribution. Sampling takes the argmax of
/// `logits` plus Gumbel noise, so `-inf` logits are never drawn.
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
    let w = work_dtype(logits.dtype());
    let l = crate::ops::cast::astype(&crate::ops::views::moveaxis(logits, ax as isize, -1)?, w)?;
    let batch = l.shape()[..l.ndim() - 1].to_vec();
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
            (l, s.to_vec())
        }
        (None, Some(n)) => {
            let mut s = batch.clone();
            s.push(n);
            (crate::ops::views::expand_dims(&l, &[-2])?, s)
        }
        (None, None) => (l, batch),
    };
    let key = key_or_default(op, key)?;
    let mut noise_shape = out_shape.clone();
    noise_shape.push(classes);
    let g = standard_gumbel(op, &noise_shape, w, &key)?;
    crate::ops::reduce::argmax(&crate::ops::binary::add(&l, &g)?, Some(-1), false)
}

/// A random permutation of `0..n` (int32, or int64 when `n` exceeds the
/// int32 range).
///
/// ```
/// use ferrox::random;
/// let p = random::permutation(6, Some(&random::key(0)?))?;
/// let mut v = p.to_vec::<i32>()?;
/// v.sort();
/// assert_eq!(v, vec![0, 1, 2, 3, 4, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn permutation(n: usize, key: Option<&Array>) -> Result<Array> {
    let dtype = if n <= i32::MAX as usize {
        DType::Int32
    } else {
        DType::Int64
    };
    let x = crate::ops::creation::arange(0.0, n as f64, 1.0, dtype)?;
    permute("permutation", &x, 0, key)
}

/// `x` with its entries along `axis` in a random order (every order equally
/// likely: the order sorts 64 random bits per entry).
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
    let n = x.shape()[ax];
    let order = crate::ops::sort::argsort(&bits_of(op, &[n], 8, &key)?, Some(0))?;
    crate::ops::indexing::take(x, &order, Some(ax as isize))
}
