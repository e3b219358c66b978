//! Hyperbolic functions, their inverses, and the logistic sigmoid, built
//! from the exponentials and logarithms with identities that avoid
//! cancellation.

use super::exp_log::{exp_f32, expm1_f32, half_expm1_bounded, log_f32, log1p_f32};
use super::sel;

const LN2: f32 = std::f32::consts::LN_2;

/// Hyperbolic tangent, within 3 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::tanh_f32;
/// assert_eq!(tanh_f32(0.0), 0.0);
/// assert_eq!(tanh_f32(20.0), 1.0);
/// assert_eq!(tanh_f32(-1e-20), -1e-20);
/// ```
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    // tanh(a) = expm1(2a) / (expm1(2a) + 2) = h / (h + 1) with
    // h = expm1(2a) / 2: no cancellation anywhere, and accurate for tiny a
    // because expm1 is. Beyond 10 the result rounds to 1. With 2a in
    // [0, 20] expm1's clamps and its -0 patch never act, so they are left
    // out (the copysign restores -0), and halving is exact: the results
    // are bit for bit those of expm1_f32(2a) / (expm1_f32(2a) + 2), at
    // about four fifths of the cost.
    let a = x.abs();
    let a = sel(a > 10.0, 10.0, a);
    let h = half_expm1_bounded(2.0 * a);
    (h / (h + 1.0)).copysign(x)
}

/// The logistic sigmoid `1 / (1 + e^-x)`, within 3 ulp, without overflow
/// and with gradual underflow for very negative `x`.
///
/// ```
/// use ferrox::backend::cpu::math::sigmoid_f32;
/// assert_eq!(sigmoid_f32(0.0), 0.5);
/// assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
/// assert!(sigmoid_f32(-100.0) > 0.0);
/// ```
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    // With e = e^-|x| <= 1: sigmoid(x) = 1 / (1 + e) for x >= 0 and
    // e / (1 + e) for x < 0.
    let e = exp_f32(-x.abs());
    sel(x < 0.0, e, 1.0) / (1.0 + e)
}

/// Hyperbolic sine, within 3 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::sinh_f32;
/// assert_eq!(sinh_f32(0.0), 0.0);
/// assert_eq!(sinh_f32(1e-20), 1e-20);
/// assert_eq!(sinh_f32(100.0), f32::INFINITY);
/// ```
#[inline(always)]
pub fn sinh_f32(x: f32) -> f32 {
    let a = x.abs();
    // sinh(a) = (em + em / (em + 1)) / 2 with em = e^a - 1: accurate near 0
    // and finite up to a = 88.
    let em = expm1_f32(sel(a > 88.0, 88.0, a));
    let moderate = 0.5 * (em + em / (em + 1.0));
    // Above 88, e^a overflows before sinh does: e^a / 2 = (e^(a/2) / 2) e^(a/2).
    let h = exp_f32(0.5 * a);
    let large = (0.5 * h) * h;
    sel(a > 88.0, large, moderate).copysign(x)
}

/// Hyperbolic cosine, within 3 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::cosh_f32;
/// assert_eq!(cosh_f32(0.0), 1.0);
/// assert_eq!(cosh_f32(-100.0), f32::INFINITY);
/// ```
#[inline(always)]
pub fn cosh_f32(x: f32) -> f32 {
    let a = x.abs();
    let e = exp_f32(sel(a > 88.0, 88.0, a));
    let moderate = 0.5 * (e + 1.0 / e);
    let h = exp_f32(0.5 * a);
    let large = (0.5 * h) * h;
    sel(a > 88.0, large, moderate)
}

/// Inverse hyperbolic sine, within 3 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::asinh_f32;
/// assert_eq!(asinh_f32(0.0), 0.0);
/// assert!((asinh_f32(1.0) - 0.881_373_6).abs() <= 1e-7);
/// assert_eq!(asinh_f32(f32::NEG_INFINITY), f32::NEG_INFINITY);
/// ```
#[inline(always)]
pub fn asinh_f32(x: f32) -> f32 {
    let a = x.abs();
    // asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))), accurate near 0;
    // above 2^12 the 1/(4a^2) term is below half an ulp: ln(a) + ln(2).
    let a2 = a * a;
    let moderate = log1p_f32(a + a2 / (1.0 + (1.0 + a2).sqrt()));
    let large = log_f32(a) + LN2;
    sel(a > 4096.0, large, moderate).copysign(x)
}

/// Inverse hyperbolic cosine, within 3 ulp; NaN below 1.
///
/// ```
/// use ferrox::backend::cpu::math::acosh_f32;
/// assert_eq!(acosh_f32(1.0), 0.0);
/// assert!(acosh_f32(0.5).is_nan());
/// ```
#[inline(always)]
pub fn acosh_f32(x: f32) -> f32 {
    // acosh(1 + t) = log1p(t + sqrt(2t + t^2)); t = x - 1 is exact near 1,
    // where the function is steep. Above 2^12: ln(x) + ln(2).
    let t = x - 1.0;
    let moderate = log1p_f32(t + t.mul_add(t, 2.0 * t).sqrt());
    let large = log_f32(x) + LN2;
    sel(x < 1.0, f32::NAN, sel(x > 4096.0, large, moderate))
}

/// Inverse hyperbolic tangent, within 3 ulp; ±inf at ±1, NaN beyond.
///
/// ```
/// use ferrox::backend::cpu::math::atanh_f32;
/// assert_eq!(atanh_f32(0.0), 0.0);
/// assert_eq!(atanh_f32(1.0), f32::INFINITY);
/// assert!(atanh_f32(2.0).is_nan());
/// ```
#[inline(always)]
pub fn atanh_f32(x: f32) -> f32 {
    // atanh(a) = log1p(2a / (1 - a)) / 2; for a > 1 the argument is below -1
    // (or NaN), so log1p yields NaN by itself.
    let a = x.abs();
    (0.5 * log1p_f32(2.0 * a / (1.0 - a))).copysign(x)
}
