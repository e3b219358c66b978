//! fp8 (e4m3, the "fn" variant: no infinities, one NaN pattern per sign)
//! stored in uint8: [`to_fp8`] and [`from_fp8`], composed of integer and
//! comparison ops (the encoder searches the table of the 127 non-negative
//! finite codes).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{
    add, bitwise_and, bitwise_or, equal, less, logical_and, multiply, right_shift, subtract,
};
use crate::ops::creation::full_like;
use crate::ops::select::r#where;

/// The value of the non-negative e4m3 code `c` (0..=126).
fn code_value(c: u8) -> f64 {
    let (e, m) = ((c >> 3) as i32, (c & 7) as f64);
    if e == 0 {
        m * 2f64.powi(-9)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

/// The e4m3 codes (uint8) of `x` (any float dtype), rounding to nearest,
/// ties to even, saturating at ±448 (as MLX); NaN becomes the NaN code
/// `0x7f` with its sign.
///
/// ```
/// use ferrox::{to_fp8, Array};
/// let x = Array::from_slice(&[1.0f32, -448.0, 1000.0, 1.0625, 0.0], &[5])?;
/// assert_eq!(to_fp8(&x)?.to_vec::<u8>()?, vec![56, 254, 126, 56, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn to_fp8(x: &Array) -> Result<Array> {
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            "to_fp8",
            format!("expected a floating point input, got {}", x.dtype()),
        ));
    }
    let xf = x.astype(DType::Float32)?;
    let table: Vec<f32> = (0..=126u8).map(|c| code_value(c) as f32).collect();
    let table = Array::from_slice(&table, &[127])?;
    let mag = crate::ops::unary::abs(&xf)?;
    let mag = crate::ops::binary::minimum(&mag, &Array::weak_f64(448.0))?;
    // hi: the first code not below |x|; lo: the one before it.
    let hi = crate::ops::search::searchsorted(&table, &mag, crate::ops::search::Side::Left)?
        .astype(DType::Int32)?;
    let hi = crate::ops::binary::minimum(&hi, &Array::from(126i32))?;
    let lo = crate::ops::binary::maximum(&subtract(&hi, &Array::from(1i32))?, &Array::from(0i32))?;
    let (vhi, vlo) = (
        crate::ops::indexing::take(&table, &hi, None)?,
        crate::ops::indexing::take(&table, &lo, None)?,
    );
    let (dhi, dlo) = (subtract(&vhi, &mag)?, subtract(&mag, &vlo)?);
    let lo_even = equal(&bitwise_and(&lo, &Array::from(1i32))?, &Array::from(0i32))?;
    let tie = equal(&dhi, &dlo)?;
    let pick_lo =
        crate::ops::binary::logical_or(&less(&dlo, &dhi)?, &logical_and(&tie, &lo_even)?)?;
    let code = r#where(&pick_lo, &lo, &hi)?;
    let code = r#where(
        &crate::ops::unary::isnan(&xf)?,
        &Array::from(0x7fi32),
        &code,
    )?;
    // The sign bit (so -0.0 keeps its sign).
    let bits = crate::ops::cast::view(&xf, DType::UInt32)?;
    let negative = crate::ops::binary::not_equal(
        &right_shift(&bits, &Array::from(31i32))?,
        &Array::from(0i32),
    )?;
    let code = r#where(&negative, &bitwise_or(&code, &Array::from(0x80i32))?, &code)?;
    code.astype(DType::UInt8)
}

/// The values of e4m3 codes (`x`, uint8) in the float `dtype` (MLX's
/// default is bfloat16).
///
/// ```
/// use ferrox::{from_fp8, Array, DType};
/// let c = Array::from_slice(&[0u8, 1, 56, 126, 254], &[5])?;
/// let v = from_fp8(&c, DType::Float32)?.to_vec::<f32>()?;
/// assert_eq!(v, vec![0.0, 2f32.powi(-9), 1.0, 448.0, -448.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn from_fp8(x: &Array, dtype: DType) -> Result<Array> {
    if x.dtype() != DType::UInt8 {
        return Err(Error::dtype(
            "from_fp8",
            format!("expected uint8 codes, got {}", x.dtype()),
        ));
    }
    if !dtype.is_float() {
        return Err(Error::dtype(
            "from_fp8",
            format!("the result must be a floating point dtype, got {dtype}"),
        ));
    }
    let c = x.astype(DType::Int32)?;
    let e = bitwise_and(&right_shift(&c, &Array::from(3i32))?, &Array::from(15i32))?;
    let m = bitwise_and(&c, &Array::from(7i32))?.astype(DType::Float32)?;
    let e_f = e.astype(DType::Float32)?;
    // 2^(e - 7) without a pow op: exp2 via exp(ln 2 * (e - 7)) is inexact,
    // so scale an exact power table instead.
    let powers: Vec<f32> = (0..16).map(|k| 2f32.powi(k - 7)).collect();
    let scale = crate::ops::indexing::take(&Array::from_slice(&powers, &[16])?, &e, None)?;
    let normal = multiply(
        &add(
            &multiply(&m, &Array::weak_f64(0.125))?,
            &Array::weak_f64(1.0),
        )?,
        &scale,
    )?;
    let subnormal = multiply(&m, &Array::weak_f64(2f64.powi(-9)))?;
    let zero_exp = equal(&e_f, &Array::weak_f64(0.0))?;
    let mag = r#where(&zero_exp, &subnormal, &normal)?;
    let nan = equal(
        &bitwise_and(&c, &Array::from(0x7fi32))?,
        &Array::from(0x7fi32),
    )?;
    let mag = r#where(&nan, &full_like(&mag, f64::NAN)?, &mag)?;
    let negative = crate::ops::binary::greater_equal(&c, &Array::from(0x80i32))?;
    let v = r#where(&negative, &crate::ops::unary::negative(&mag)?, &mag)?;
    v.astype(dtype)
}
