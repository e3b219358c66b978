//! fp8 (e4m3, the "fn" variant: no infinities, one NaN pattern per sign)
//! stored in uint8: [`to_fp8`] and [`from_fp8`] (safetensors' `F8_E4M3`
//! tensors load as these codes). The encoder searches the table of the 127
//! non-negative finite codes; the decoder gathers from the table of all
//! 256.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{
    bitwise_and, bitwise_or, equal, less, logical_and, right_shift, subtract,
};
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
/// default is bfloat16): a gather from the table of all 256 codes (exact:
/// every e4m3 value is a float32, a float16 and a bfloat16).
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
    static TABLE: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        std::array::from_fn(|i| {
            let c = i as u8;
            let mag = if c & 0x7f == 0x7f {
                f64::NAN
            } else {
                code_value(c & 0x7f)
            };
            (if c & 0x80 != 0 { -mag } else { mag }) as f32
        })
    });
    let t = Array::from_slice(table, &[256])?;
    let v = crate::ops::indexing::take(&t, &x.astype(DType::Int32)?, None)?;
    v.astype(dtype)
}
