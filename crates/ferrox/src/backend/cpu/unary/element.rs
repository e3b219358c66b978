//! Per-element functions of the unary ops, one trait per dtype family.
//!
//! Every method is `#[inline(always)]` and branch-free so that the kernels'
//! loops vectorise. `f32` uses the SIMD math of `backend::cpu::math`, `f64`
//! the standard library, and the half types compute in `f32` through the
//! branch-free conversions (one rounding at the end, as MLX and numpy do).

use crate::backend::cpu::math::*;
use crate::dtype::Element;
use crate::graph::storage::Pod;
use half::{bf16, f16};

/// Float element types (`f16`, `bf16`, `f32`, `f64`).
pub(crate) trait FloatElement: Element + Pod {
    /// Significand bits (with the implicit one): values at or above
    /// `2^(BITS - 1)` are integers.
    const BITS: i32;
    fn abs(self) -> Self;
    fn neg(self) -> Self;
    fn sign(self) -> Self;
    fn square(self) -> Self;
    fn sqrt(self) -> Self;
    fn rsqrt(self) -> Self;
    fn recip(self) -> Self;
    fn exp(self) -> Self;
    fn expm1(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    /// `sin` valid below `TRIG_MEDIUM_LIMIT` (the fast path of the kernel).
    fn sin_medium(self) -> Self;
    fn cos_medium(self) -> Self;
    fn tan_medium(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn tanh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn erf(self) -> Self;
    fn erfinv(self) -> Self;
    fn floor(self) -> Self;
    /// Round towards zero.
    fn trunc(self) -> Self;
    fn ceil(self) -> Self;
    /// Round half to even.
    fn rint(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_inf(self) -> bool;
    fn is_finite(self) -> bool;
    fn is_zero(self) -> bool;
    /// The value as `f64` (exact) and back with one rounding.
    fn widen(self) -> f64;
    fn narrow(v: f64) -> Self;
    /// True when `|self| >= TRIG_MEDIUM_LIMIT` (finite or not).
    fn beyond_trig_medium(self) -> bool;
}

/// numpy's sign for floats: -1, 0 (also for -0) or 1; NaN stays NaN.
#[inline(always)]
fn sign_f32(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

impl FloatElement for f32 {
    const BITS: i32 = 24;
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
    #[inline(always)]
    fn sign(self) -> Self {
        sign_f32(self)
    }
    #[inline(always)]
    fn square(self) -> Self {
        self * self
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        1.0 / f32::sqrt(self)
    }
    #[inline(always)]
    fn recip(self) -> Self {
        1.0 / self
    }
    #[inline(always)]
    fn exp(self) -> Self {
        exp_f32(self)
    }
    #[inline(always)]
    fn expm1(self) -> Self {
        expm1_f32(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        log_f32(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        log1p_f32(self)
    }
    #[inline(always)]
    fn log2(self) -> Self {
        log2_f32(self)
    }
    #[inline(always)]
    fn log10(self) -> Self {
        log10_f32(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        sin_f32(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        cos_f32(self)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        tan_f32(self)
    }
    #[inline(always)]
    fn sin_medium(self) -> Self {
        sin_f32_medium(self)
    }
    #[inline(always)]
    fn cos_medium(self) -> Self {
        cos_f32_medium(self)
    }
    #[inline(always)]
    fn tan_medium(self) -> Self {
        tan_f32_medium(self)
    }
    #[inline(always)]
    fn asin(self) -> Self {
        asin_f32(self)
    }
    #[inline(always)]
    fn acos(self) -> Self {
        acos_f32(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        atan_f32(self)
    }
    #[inline(always)]
    fn sinh(self) -> Self {
        sinh_f32(self)
    }
    #[inline(always)]
    fn cosh(self) -> Self {
        cosh_f32(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        tanh_f32(self)
    }
    #[inline(always)]
    fn asinh(self) -> Self {
        asinh_f32(self)
    }
    #[inline(always)]
    fn acosh(self) -> Self {
        acosh_f32(self)
    }
    #[inline(always)]
    fn atanh(self) -> Self {
        atanh_f32(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> Self {
        sigmoid_f32(self)
    }
    #[inline(always)]
    fn erf(self) -> Self {
        erf_f32(self)
    }
    #[inline(always)]
    fn erfinv(self) -> Self {
        erfinv_f32(self)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        f32::floor(self)
    }
    #[inline(always)]
    fn trunc(self) -> Self {
        f32::trunc(self)
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        f32::ceil(self)
    }
    #[inline(always)]
    fn rint(self) -> Self {
        f32::round_ties_even(self)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline(always)]
    fn is_inf(self) -> bool {
        f32::is_infinite(self)
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        self == 0.0
    }
    #[inline(always)]
    fn widen(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn narrow(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn beyond_trig_medium(self) -> bool {
        f32::abs(self) >= TRIG_MEDIUM_LIMIT || f32::is_nan(self)
    }
}

impl FloatElement for f64 {
    const BITS: i32 = 53;
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    #[inline(always)]
    fn neg(self) -> Self {
        -self
    }
    #[inline(always)]
    fn sign(self) -> Self {
        if self > 0.0 {
            1.0
        } else if self < 0.0 {
            -1.0
        } else if self == 0.0 {
            0.0
        } else {
            self
        }
    }
    #[inline(always)]
    fn square(self) -> Self {
        self * self
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        1.0 / f64::sqrt(self)
    }
    #[inline(always)]
    fn recip(self) -> Self {
        1.0 / self
    }
    #[inline(always)]
    fn exp(self) -> Self {
        f64::exp(self)
    }
    #[inline(always)]
    fn expm1(self) -> Self {
        f64::exp_m1(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f64::ln(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        f64::ln_1p(self)
    }
    #[inline(always)]
    fn log2(self) -> Self {
        f64::log2(self)
    }
    #[inline(always)]
    fn log10(self) -> Self {
        f64::log10(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f64::cos(self)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        f64::tan(self)
    }
    #[inline(always)]
    fn sin_medium(self) -> Self {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos_medium(self) -> Self {
        f64::cos(self)
    }
    #[inline(always)]
    fn tan_medium(self) -> Self {
        f64::tan(self)
    }
    #[inline(always)]
    fn asin(self) -> Self {
        f64::asin(self)
    }
    #[inline(always)]
    fn acos(self) -> Self {
        f64::acos(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        f64::atan(self)
    }
    #[inline(always)]
    fn sinh(self) -> Self {
        f64::sinh(self)
    }
    #[inline(always)]
    fn cosh(self) -> Self {
        f64::cosh(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    #[inline(always)]
    fn asinh(self) -> Self {
        f64::asinh(self)
    }
    #[inline(always)]
    fn acosh(self) -> Self {
        f64::acosh(self)
    }
    #[inline(always)]
    fn atanh(self) -> Self {
        f64::atanh(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> Self {
        // e = e^-|x| <= 1 never overflows; x < 0 gives e / (1 + e).
        let e = (-f64::abs(self)).exp();
        (if self < 0.0 { e } else { 1.0 }) / (1.0 + e)
    }
    #[inline(always)]
    fn erf(self) -> Self {
        erf_f64(self)
    }
    #[inline(always)]
    fn erfinv(self) -> Self {
        erfinv_f64(self)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        f64::floor(self)
    }
    #[inline(always)]
    fn trunc(self) -> Self {
        f64::trunc(self)
    }
    #[inline(always)]
    fn ceil(self) -> Self {
        f64::ceil(self)
    }
    #[inline(always)]
    fn rint(self) -> Self {
        f64::round_ties_even(self)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline(always)]
    fn is_inf(self) -> bool {
        f64::is_infinite(self)
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline(always)]
    fn is_zero(self) -> bool {
        self == 0.0
    }
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn beyond_trig_medium(self) -> bool {
        false // f64 uses the standard library, valid everywhere
    }
}

/// Half types: every op through `f32` with one final rounding; sign-bit
/// ops on the bits directly.
macro_rules! half_element {
    ($t:ty, $bits:expr, $to:ident, $from:ident, $sign_mask:expr) => {
        impl FloatElement for $t {
            const BITS: i32 = $bits;
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::from_bits(self.to_bits() & !$sign_mask)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                <$t>::from_bits(self.to_bits() ^ $sign_mask)
            }
            #[inline(always)]
            fn sign(self) -> Self {
                $from(sign_f32($to(self)))
            }
            #[inline(always)]
            fn square(self) -> Self {
                let x = $to(self);
                $from(x * x)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $from($to(self).sqrt())
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                $from(1.0 / $to(self).sqrt())
            }
            #[inline(always)]
            fn recip(self) -> Self {
                $from(1.0 / $to(self))
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $from(exp_f32($to(self)))
            }
            #[inline(always)]
            fn expm1(self) -> Self {
                $from(expm1_f32($to(self)))
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $from(log_f32($to(self)))
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                $from(log1p_f32($to(self)))
            }
            #[inline(always)]
            fn log2(self) -> Self {
                $from(log2_f32($to(self)))
            }
            #[inline(always)]
            fn log10(self) -> Self {
                $from(log10_f32($to(self)))
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $from(sin_f32($to(self)))
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $from(cos_f32($to(self)))
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $from(tan_f32($to(self)))
            }
            #[inline(always)]
            fn sin_medium(self) -> Self {
                $from(sin_f32_medium($to(self)))
            }
            #[inline(always)]
            fn cos_medium(self) -> Self {
                $from(cos_f32_medium($to(self)))
            }
            #[inline(always)]
            fn tan_medium(self) -> Self {
                $from(tan_f32_medium($to(self)))
            }
            #[inline(always)]
            fn asin(self) -> Self {
                $from(asin_f32($to(self)))
            }
            #[inline(always)]
            fn acos(self) -> Self {
                $from(acos_f32($to(self)))
            }
            #[inline(always)]
            fn atan(self) -> Self {
                $from(atan_f32($to(self)))
            }
            #[inline(always)]
            fn sinh(self) -> Self {
                $from(sinh_f32($to(self)))
            }
            #[inline(always)]
            fn cosh(self) -> Self {
                $from(cosh_f32($to(self)))
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $from(tanh_f32($to(self)))
            }
            #[inline(always)]
            fn asinh(self) -> Self {
                $from(asinh_f32($to(self)))
            }
            #[inline(always)]
            fn acosh(self) -> Self {
                $from(acosh_f32($to(self)))
            }
            #[inline(always)]
            fn atanh(self) -> Self {
                $from(atanh_f32($to(self)))
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                $from(sigmoid_f32($to(self)))
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $from(erf_f32($to(self)))
            }
            #[inline(always)]
            fn erfinv(self) -> Self {
                $from(erfinv_f32($to(self)))
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $from($to(self).floor())
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                $from($to(self).trunc())
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $from($to(self).ceil())
            }
            #[inline(always)]
            fn rint(self) -> Self {
                $from($to(self).round_ties_even())
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                $to(self).is_nan()
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                $to(self).is_infinite()
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                $to(self).is_finite()
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self.to_bits() & !$sign_mask == 0
            }
            #[inline(always)]
            fn widen(self) -> f64 {
                $to(self) as f64
            }
            #[inline(always)]
            fn narrow(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn beyond_trig_medium(self) -> bool {
                let x = $to(self);
                x.abs() >= TRIG_MEDIUM_LIMIT || x.is_nan()
            }
        }
    };
}
half_element!(f16, 11, f16_to_f32, f32_to_f16, 0x8000u16);
half_element!(bf16, 8, bf16_to_f32, f32_to_bf16, 0x8000u16);

/// `x` rounded to `decimals` decimal places as numpy does it: scale by
/// `10^decimals` (or divide by `10^-decimals`), round half to even, scale
/// back, each step rounded to the dtype (`narrow`). Unlike numpy, values
/// that are already integers at that scale are returned unchanged instead
/// of overflowing (numpy: `round(3e38f32, 5) = inf`).
pub(crate) fn round_decimals<T: FloatElement>(x: T, decimals: i32) -> T {
    let v = x.widen();
    if !v.is_finite() || v == 0.0 {
        return x;
    }
    let to_dtype = |y: f64| T::narrow(y).widen();
    // 10^k is inf in every dtype for k >= 400; powi is exact for small k.
    let scale = to_dtype(10f64.powi(decimals.unsigned_abs().min(400) as i32));
    if decimals >= 0 {
        let y = to_dtype(v * scale);
        if !y.is_finite() || y.abs() >= 2f64.powi(T::BITS - 1) {
            return x; // integral at this scale (or the scaling overflowed)
        }
        T::narrow(y.round_ties_even() / scale)
    } else {
        let r = to_dtype(v / scale).round_ties_even();
        if r == 0.0 {
            return T::narrow(0f64.copysign(v));
        }
        T::narrow(r * scale)
    }
}

/// Integer element types.
pub(crate) trait IntElement: Element + Pod {
    fn abs(self) -> Self;
    fn neg(self) -> Self;
    fn sign(self) -> Self;
    fn square(self) -> Self;
    fn not(self) -> Self;
    fn is_zero(self) -> bool;
}

macro_rules! signed_element {($($t:ty),*) => {$(
    impl IntElement for $t {
        #[inline(always)] fn abs(self) -> Self { self.wrapping_abs() }
        #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
        #[inline(always)] fn sign(self) -> Self { self.signum() }
        #[inline(always)] fn square(self) -> Self { self.wrapping_mul(self) }
        #[inline(always)] fn not(self) -> Self { !self }
        #[inline(always)] fn is_zero(self) -> bool { self == 0 }
    }
)*}}
signed_element!(i8, i16, i32, i64);

macro_rules! unsigned_element {($($t:ty),*) => {$(
    impl IntElement for $t {
        #[inline(always)] fn abs(self) -> Self { self }
        #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
        #[inline(always)] fn sign(self) -> Self { (self != 0) as $t }
        #[inline(always)] fn square(self) -> Self { self.wrapping_mul(self) }
        #[inline(always)] fn not(self) -> Self { !self }
        #[inline(always)] fn is_zero(self) -> bool { self == 0 }
    }
)*}}
unsigned_element!(u8, u16, u32, u64);

/// `x` rounded to a multiple of `10^-decimals` (`decimals < 0`), ties to
/// even, computed exactly (numpy's integer `round`); the result wraps to
/// the dtype like numpy's.
pub(crate) fn round_int_decimals<T: Element>(x: T, decimals: i32) -> T {
    let p = decimals.unsigned_abs();
    let v = x.to_i128();
    // Every integer dtype is below 1e20 in magnitude, so 10^21 and beyond
    // round everything to 0.
    if decimals >= 0 || p > 20 {
        return if decimals >= 0 { x } else { T::from_i128(0) };
    }
    let q = 10i128.pow(p);
    let (quot, rem) = (v.div_euclid(q), v.rem_euclid(q));
    let up = rem > q - rem || (rem == q - rem && quot % 2 != 0);
    T::from_i128((quot + up as i128) * q)
}
