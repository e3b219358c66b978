//! Branch-free conversions between `f32` and the half-precision types,
//! bit-identical to the `half` crate (round to nearest even, NaN payloads
//! kept and quieted) but vectorisable: `half` picks F16C at run time per
//! call, which keeps loops scalar.

use super::sel;
use half::{bf16, f16};

/// 2^112: rescales f16 exponent bits placed in an f32 from bias 127 to 15.
const F16_RESCALE: f32 = 5.192_297e33;

/// `f16` to `f32` (exact; NaNs are quieted).
///
/// ```
/// use ferrox::backend::cpu::math::f16_to_f32;
/// use ferrox::half::f16;
/// assert_eq!(f16_to_f32(f16::from_f32(1.5)), 1.5);
/// assert_eq!(f16_to_f32(f16::MIN_POSITIVE_SUBNORMAL), 2f32.powi(-24));
/// ```
#[inline(always)]
pub fn f16_to_f32(h: f16) -> f32 {
    let h = h.to_bits() as u32;
    let sign = (h & 0x8000) << 16;
    let magnitude = h & 0x7FFF;
    // Exponent and mantissa shifted into f32 position read as a float
    // 2^-112 times too small, for normals and subnormals alike; the
    // multiply by a power of two is exact.
    let finite = f32::from_bits(magnitude << 13) * F16_RESCALE;
    // Inf and NaN: all exponent bits set; NaNs come out quiet, as F16C does.
    let quiet = if magnitude > 0x7C00 { 0x0040_0000 } else { 0 };
    let inf_nan = f32::from_bits((magnitude << 13) | 0x7F80_0000 | quiet);
    let v = sel(magnitude >= 0x7C00, inf_nan, finite);
    f32::from_bits(v.to_bits() | sign)
}

/// `f32` to `f16`, rounding to nearest even; overflow gives ±inf.
///
/// ```
/// use ferrox::backend::cpu::math::f32_to_f16;
/// use ferrox::half::f16;
/// assert_eq!(f32_to_f16(1.0 / 3.0), f16::from_f32(1.0 / 3.0));
/// assert_eq!(f32_to_f16(1e6), f16::INFINITY);
/// ```
#[inline(always)]
pub fn f32_to_f16(x: f32) -> f16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let a = bits & 0x7FFF_FFFF;
    // |x| < 2^-14 (subnormal or zero half): adding 0.5 rounds the value to
    // a multiple of 2^-24 (the subnormal step) in hardware; the mantissa
    // bits are then the result.
    let subnormal = (f32::from_bits(a) + 0.5)
        .to_bits()
        .wrapping_sub(0x3F00_0000);
    // Normal half: rebias the exponent (-112 << 23) and round to nearest
    // even on the 13 dropped bits; a carry may bump the exponent, up to inf.
    let odd = (a >> 13) & 1;
    let normal = a.wrapping_add(0xC800_0FFF).wrapping_add(odd) >> 13;
    let nan = 0x7E00 | ((a & 0x7F_FFFF) >> 13);
    let out = if a < 0x3880_0000 { subnormal } else { normal };
    let out = if a >= 0x4780_0000 { 0x7C00 } else { out };
    let out = if a > 0x7F80_0000 { nan } else { out };
    f16::from_bits((out | sign) as u16)
}

/// `bf16` to `f32` (exact; NaNs are quieted).
///
/// ```
/// use ferrox::backend::cpu::math::bf16_to_f32;
/// use ferrox::half::bf16;
/// assert_eq!(bf16_to_f32(bf16::from_f32(-2.5)), -2.5);
/// ```
#[inline(always)]
pub fn bf16_to_f32(b: bf16) -> f32 {
    let bits = b.to_bits() as u32;
    // NaNs come out quiet, as in `half`.
    let quiet = if bits & 0x7FFF > 0x7F80 { 0x0040 } else { 0 };
    f32::from_bits((bits | quiet) << 16)
}

/// `f32` to `bf16`, rounding to nearest even.
///
/// ```
/// use ferrox::backend::cpu::math::f32_to_bf16;
/// use ferrox::half::bf16;
/// assert_eq!(f32_to_bf16(3.14159), bf16::from_f32(3.14159));
/// ```
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> bf16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) >> 16;
    let nan = (bits >> 16) | 0x0040;
    let out = if (bits & 0x7FFF_FFFF) > 0x7F80_0000 {
        nan
    } else {
        rounded
    };
    bf16::from_bits(out as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_match_half_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let ours = f16_to_f32(h);
            let theirs = h.to_f32();
            assert!(
                ours.to_bits() == theirs.to_bits(),
                "{bits:#06x}: {ours} vs {theirs}"
            );
            let back = f32_to_f16(ours).to_bits();
            if h.is_nan() {
                assert_eq!(
                    back,
                    f16::from_f32(theirs).to_bits(),
                    "{bits:#06x} NaN round trip"
                );
            } else {
                assert_eq!(back, bits, "{bits:#06x} round trip");
            }
        }
    }

    #[test]
    fn f32_to_f16_matches_half_on_a_dense_sweep() {
        // Every 97th f32 bit pattern hits all exponents, rounding ties and
        // NaN payloads; plus the exact ties around each half value.
        let mut bits = 0u32;
        loop {
            let x = f32::from_bits(bits);
            assert_eq!(
                f32_to_f16(x).to_bits(),
                f16::from_f32(x).to_bits(),
                "{x:e} ({bits:#010x})"
            );
            assert_eq!(
                f32_to_bf16(x).to_bits(),
                bf16::from_f32(x).to_bits(),
                "bf16 {x:e} ({bits:#010x})"
            );
            match bits.checked_add(97) {
                Some(b) => bits = b,
                None => break,
            }
        }
        for h in 0..0x7C00u16 {
            let lo = f16::from_bits(h).to_f32();
            let hi = f16::from_bits(h + 1).to_f32();
            let mid = ((lo as f64 + hi as f64) / 2.0) as f32;
            for x in [mid, -mid] {
                assert_eq!(
                    f32_to_f16(x).to_bits(),
                    f16::from_f32(x).to_bits(),
                    "tie {x:e}"
                );
            }
        }
    }

    #[test]
    fn bf16_to_f32_matches_half_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            let b = bf16::from_bits(bits);
            assert_eq!(
                bf16_to_f32(b).to_bits(),
                b.to_f32().to_bits(),
                "{bits:#06x}"
            );
        }
    }
}
