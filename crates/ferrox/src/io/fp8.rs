//! 8-bit floats as files carry them: safetensors' `F8_E4M3` tensors load
//! as uint8 holding the raw bytes (ferrox has no 8-bit float dtype, nor
//! has MLX), and [`from_fp8`] turns those bytes into floats.
//!
//! E4M3 ("fn", as in safetensors and MLX): 1 sign bit, 4 exponent bits
//! (bias 7), 3 mantissa bits; no infinities, and `S.1111.111` is NaN, so
//! the largest value is 448. The 256 possible bytes are decoded once into a
//! table, and the conversion is a gather from it (exact: every E4M3 value
//! is a float32, and a bfloat16 or float16 too).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::cast::astype;
use crate::ops::indexing::take;
use std::sync::OnceLock;

/// The value of an E4M3 byte.
fn e4m3(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((b >> 3) & 0xF) as i32;
    let mant = (b & 7) as f32;
    if exp == 0xF && b & 7 == 7 {
        f32::NAN
    } else if exp == 0 {
        sign * mant / 8.0 * 2f32.powi(-6)
    } else {
        sign * (1.0 + mant / 8.0) * 2f32.powi(exp - 7)
    }
}

fn table() -> &'static [f32; 256] {
    static TABLE: OnceLock<[f32; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|i| e4m3(i as u8)))
}

/// Decodes uint8 bytes holding E4M3 8-bit floats into `dtype` (a float
/// dtype; MLX's default is bfloat16).
///
/// ```
/// use ferrox::{Array, DType};
/// let bytes = Array::from_slice(&[0x00u8, 0x7e, 0xb6, 0x38], &[4])?;
/// let x = ferrox::io::from_fp8(&bytes, DType::Float32)?;
/// assert_eq!(x.to_vec::<f32>()?, vec![0.0, 448.0, -0.875, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn from_fp8(x: &Array, dtype: DType) -> Result<Array> {
    if x.dtype() != DType::UInt8 {
        return Err(Error::dtype(
            "from_fp8",
            format!("expects uint8 bytes, got an array of dtype {}", x.dtype()),
        ));
    }
    if !dtype.is_float() {
        return Err(Error::dtype(
            "from_fp8",
            format!("the output dtype must be a float dtype, got {dtype}"),
        ));
    }
    let t = Array::from_slice(table(), &[256])?;
    astype(&take(&t, &astype(x, DType::Int32)?, None)?, dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_decodes_like_its_definition() {
        assert_eq!(e4m3(0x7e), 448.0);
        assert_eq!(e4m3(0xfe), -448.0);
        assert_eq!(e4m3(0x01), 2f32.powi(-9));
        assert!(e4m3(0x7f).is_nan() && e4m3(0xff).is_nan());
        assert_eq!(e4m3(0x38), 1.0);
    }
}
