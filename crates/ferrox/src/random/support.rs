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

/// The float type a distribution computes in: f64 for f64, else f32 (the
/// half types are rounded once, at the end).
pub(crate) fn work_dtype(dtype: DType) -> DType {
    if dtype == DType::Float64 {
        DType::Float64
    } else {
        DType::Float32
    }
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
/// `p` random bits `k`, where `p` is the type's significand width (24 for
/// f32, 53 for f64, 11 for f16, 8 for bf16), so every value is exact and
/// the largest is `1 - 2^-p`.
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

/// Uniform variates on the open interval `(0, 1)` of f32 or f64:
/// `(2k + 1) * 2^-p` for the top `p - 1` random bits `k`, symmetric about
/// 1/2 and exact.
pub(crate) fn unit_open(op: &str, shape: &[usize], dtype: DType, key: &Array) -> Result<Array> {
    let (_, _, p) = layout(dtype);
    let k = top_bits(op, shape, dtype, p - 1, key)?;
    let f = crate::ops::cast::astype(&k, dtype)?;
    let odd = crate::ops::binary::add(
        &crate::ops::binary::multiply(&f, &constant(2.0, dtype)?)?,
        &constant(1.0, dtype)?,
    )?;
    crate::ops::binary::multiply(&odd, &constant((-f64::from(p)).exp2(), dtype)?)
}

/// The largest value of `h`'s float dtype below `h` (for finite `h`),
/// computed on the bit patterns.
pub(crate) fn prev_float(h: &Array) -> Result<Array> {
    let (idt, min) = match h.dtype() {
        DType::Float64 => (DType::Int64, i64::MIN as f64),
        DType::Float32 => (DType::Int32, f64::from(i32::MIN)),
        _ => (DType::Int16, f64::from(i16::MIN)),
    };
    let i = crate::ops::cast::view(h, idt)?;
    let one = constant(1.0, idt)?;
    let zero = constant(0.0, h.dtype())?;
    // Positive: one step down in magnitude; negative: one step up; zero:
    // the negative number of least magnitude (sign bit and 1).
    let stepped = crate::ops::select::r#where(
        &crate::ops::binary::greater(h, &zero)?,
        &crate::ops::binary::subtract(&i, &one)?,
        &crate::ops::binary::add(&i, &one)?,
    )?;
    let least_negative = crate::ops::binary::add(&constant(min, idt)?, &one)?;
    let bits = crate::ops::select::r#where(
        &crate::ops::binary::equal(h, &zero)?,
        &least_negative,
        &stepped,
    )?;
    crate::ops::cast::view(&bits, h.dtype())
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
    fn prev_float_steps_down_one_ulp() -> Result<()> {
        let a = Array::from_slice(&[1.0f32, -1.0, 0.0, 2.5], &[4])?;
        let p = prev_float(&a)?.to_vec::<f32>()?;
        assert_eq!(p[0], 1.0 - f32::EPSILON / 2.0);
        assert_eq!(p[1], -1.0 - f32::EPSILON);
        assert!(p[2] < 0.0 && p[2] > -1e-44);
        assert_eq!(p[3], f32::from_bits(2.5f32.to_bits() - 1));
        let h = Array::from_slice(&[half::f16::from_f32(1.0)], &[1])?;
        let ph = prev_float(&h)?.to_vec::<half::f16>()?;
        assert_eq!(ph[0].to_f32(), 1.0 - 2f32.powi(-11));
        Ok(())
    }

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
