//! Helpers shared by the distributions: typed constants, checks of
//! user-supplied bounds, and uniform variates built from bits with public
//! ops (so every transform composes with them).

use super::bits::bits_of;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::shape_rules::broadcast_shapes;
use crate::with_dtype;

/// A 0-d constant of `dtype` (exact for the powers of two and small
/// integers used here).
pub(crate) fn constant(v: f64, dtype: DType) -> Result<Array> {
    crate::ops::creation::full(&[], v, dtype)
}

/// The value of a one-element array that already holds data (a scalar the
/// caller passed), read on the host without evaluating anything; `None`
/// for arrays that are computed, traced or larger.
pub(crate) fn host_scalar(a: &Array) -> Option<f64> {
    if a.size() != 1 || a.primitive().is_some() || !a.is_available() {
        return None;
    }
    if a.dtype() == DType::Complex64 {
        return None;
    }
    with_dtype!(a.dtype(), T => a.item::<T>().ok().map(crate::dtype::Element::to_f64))
}

/// Errors unless `dtype` is a real floating-point type.
pub(crate) fn check_float(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() && dtype != DType::Complex64 {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!("dtype {dtype} is not a real floating-point type"),
        ))
    }
}

/// Errors unless every array in `parts` broadcasts to `shape`.
pub(crate) fn check_broadcast(op: &str, shape: &[usize], parts: &[(&str, &Array)]) -> Result<()> {
    for (name, a) in parts {
        let b = broadcast_shapes(op, a.shape(), shape);
        if b.as_deref().ok() != Some(shape) {
            return Err(Error::shape(
                op,
                format!(
                    "{name} has shape {:?}, which does not broadcast to shape {shape:?}",
                    a.shape()
                ),
            ));
        }
    }
    Ok(())
}

/// Errors if both bounds are known scalars with `low > high`.
pub(crate) fn check_order(op: &str, names: (&str, &str), low: &Array, high: &Array) -> Result<()> {
    if let (Some(l), Some(h)) = (host_scalar(low), host_scalar(high)) {
        if l > h || l.is_nan() || h.is_nan() {
            return Err(Error::value(
                op,
                format!("{} {l} is greater than {} {h}", names.0, names.1),
            ));
        }
    }
    Ok(())
}

/// `(bit width in bytes, unsigned bits dtype, mantissa bits)` of a float
/// dtype: how many random bits make one uniform variate exactly.
fn layout(dtype: DType) -> (usize, DType, u32) {
    match dtype {
        DType::Float64 => (8, DType::UInt64, 53),
        DType::Float16 => (2, DType::UInt16, 11),
        DType::BFloat16 => (2, DType::UInt16, 8),
        _ => (4, DType::UInt32, 24),
    }
}

/// The top `p` bits of each random word, as an unsigned integer `< 2^p`.
fn top_bits(op: &str, shape: &[usize], dtype: DType, p: u32, key: &Array) -> Result<Array> {
    let (width, udt, _) = layout(dtype);
    let b = bits_of(op, shape, width, key)?;
    let shift = (width * 8) as u32 - p;
    if shift == 0 {
        return Ok(b);
    }
    crate::ops::binary::right_shift(&b, &constant(f64::from(shift), udt)?)
}

/// Uniform variates on `[0, 1)` of float `dtype`: `k * 2^-p` for the top
/// `p` random bits `k`, where `p` is the type's significand width (53 for
/// f64, 24 for f32), so every value is exact and the largest is `1 - 2^-p`.
/// Only float64 samples use these (MLX has no float64 sampling to match).
pub(crate) fn unit_closed_open(
    op: &str,
    shape: &[usize],
    dtype: DType,
    key: &Array,
) -> Result<Array> {
    let (_, _, p) = layout(dtype);
    let k = top_bits(op, shape, dtype, p, key)?;
    let f = crate::ops::cast::astype(&k, dtype)?;
    crate::ops::binary::multiply(&f, &constant((-f64::from(p)).exp2(), dtype)?)
}

/// The largest value below 1 of the float `dtype`, as an f32 (MLX clamps
/// its unit uniforms to it before rounding them to `dtype`).
fn below_one(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 1.0 - (-11f64).exp2(),
        DType::BFloat16 => 1.0 - (-8f64).exp2(),
        _ => 1.0 - (-24f64).exp2(),
    }
}

/// MLX's unit uniforms for `dtype`, in f32: 32 random bits rounded to f32
/// and divided by 2^32, then clamped to the largest `dtype` value below 1
/// (so rounding them to `dtype` cannot give 1).
pub(crate) fn mlx_unit(op: &str, shape: &[usize], dtype: DType, key: &Array) -> Result<Array> {
    let f = DType::Float32;
    let b = crate::ops::cast::astype(&bits_of(op, shape, 4, key)?, f)?;
    let u = crate::ops::binary::multiply(&b, &constant((-32f64).exp2(), f)?)?;
    crate::ops::binary::minimum(&u, &constant(below_one(dtype), f)?)
}

/// MLX's uniform samples on `[lo, hi)` in `dtype` (the bounds already in
/// `dtype`): `(hi - lo) * u + lo` in `dtype` arithmetic, for the unit
/// uniforms `u` of [`mlx_unit`] rounded to `dtype`. float64, which MLX
/// does not sample, uses the 53-bit unit uniforms of [`unit_closed_open`].
pub(crate) fn mlx_uniform(
    op: &str,
    lo: &Array,
    hi: &Array,
    shape: &[usize],
    dtype: DType,
    key: &Array,
) -> Result<Array> {
    use crate::ops::binary::{add, multiply, subtract};
    let u = if dtype == DType::Float64 {
        unit_closed_open(op, shape, dtype, key)?
    } else {
        crate::ops::cast::astype(&mlx_unit(op, shape, dtype, key)?, dtype)?
    };
    add(&multiply(&subtract(hi, lo)?, &u)?, lo)
}

/// `x` broadcast to `shape` unless it already has it.
pub(crate) fn to_shape(x: Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        Ok(x)
    } else {
        crate::ops::views::broadcast_to(&x, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_scalar_reads_only_given_scalars() -> Result<()> {
        assert_eq!(host_scalar(&Array::from(2.5)), Some(2.5));
        assert_eq!(host_scalar(&Array::scalar(-3i64)), Some(-3.0));
        assert_eq!(
            host_scalar(&crate::ops::creation::ones(&[], DType::Float32)?),
            None
        );
        assert_eq!(host_scalar(&Array::from_slice(&[1.0f32, 2.0], &[2])?), None);
        Ok(())
    }
}
