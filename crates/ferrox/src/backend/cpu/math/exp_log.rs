//! Exponentials and logarithms.

use super::{horner, pow2i, sel};

const LOG2E: f32 = std::f32::consts::LOG2_E;
/// `ln 2` rounded to `f32`, and the rest. With FMA, `x - n * LN2_HI` is
/// exact for every `n` the exponentials produce, so `r` carries only the
/// rounding of the second step.
const LN2_HI: f32 = std::f32::consts::LN_2;
const LN2_LO: f32 = -1.904_654_2e-9;
/// Adding 1.5 * 2^23 rounds an `f32` of magnitude < 2^22 to the nearest
/// integer (ties to even) and leaves that integer in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
const ROUND_MAGIC_BITS: i32 = 0x4B40_0000;

/// `(n, x - n ln 2)` with `n = round(x / ln 2)`; `|r| <= ln(2) / 2`.
/// `x` must already be clamped to `|x| < 2^21` (NaN passes through as NaN).
#[inline(always)]
fn reduce_ln2(x: f32) -> (i32, f32) {
    let t = x.mul_add(LOG2E, ROUND_MAGIC);
    let nf = t - ROUND_MAGIC;
    let n = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC_BITS);
    let r = (-nf).mul_add(LN2_HI, x);
    (n, (-nf).mul_add(LN2_LO, r))
}

/// `e^x`, within 1 ulp; overflows to `inf` above 88.72 and underflows
/// gradually through the subnormals to `0`.
///
/// ```
/// use ferrox::backend::cpu::math::exp_f32;
/// assert_eq!(exp_f32(0.0), 1.0);
/// assert!((exp_f32(1.0) - std::f32::consts::E).abs() <= f32::EPSILON * 2.0);
/// assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
/// assert!(exp_f32(f32::NAN).is_nan());
/// ```
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    // Outside [-104, 89] the result is 0 or inf anyway; clamping keeps n in
    // [-150, 128]. Comparisons are false for NaN, so NaN passes through.
    let x = sel(x < -104.0, -104.0, sel(x > 89.0, 89.0, x));
    let (n, r) = reduce_ln2(x);
    // Cephes expf polynomial: e^r = 1 + r + r^2 p(r) on |r| <= ln(2)/2.
    let p = horner(
        r,
        [
            1.987_569_1e-4,
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            1.666_666_5e-1,
            0.5,
        ],
    );
    let y = (r * r).mul_add(p, r) + 1.0;
    // 2^n as two factors so that both stay normal for n in [-150, 128];
    // the second product is the only rounding, so subnormal results are
    // correctly rounded from y * 2^n and overflow gives inf.
    let n1 = n >> 1;
    y * pow2i(n1) * pow2i(n.wrapping_sub(n1))
}

/// `e^x - 1`, within 2 ulp, accurate near 0 (where `exp_f32(x) - 1` is not).
///
/// ```
/// use ferrox::backend::cpu::math::expm1_f32;
/// assert_eq!(expm1_f32(1e-10), 1e-10);
/// assert_eq!(expm1_f32(-0.0).to_bits(), (-0.0f32).to_bits());
/// assert_eq!(expm1_f32(-100.0), -1.0);
/// assert_eq!(expm1_f32(100.0), f32::INFINITY);
/// ```
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    // Below -40 the result rounds to -1; above 88.8 it overflows. The clamp
    // keeps 2^(n-1) normal.
    let xc = sel(x < -40.0, -40.0, sel(x > 88.8, 88.8, x));
    // The doubling overflows to inf exactly when the result does.
    let y = 2.0 * half_expm1_bounded(xc);
    // expm1(-0) = -0 (the formula gives +0).
    sel(x == 0.0, x, y)
}

/// `(e^x - 1) / 2` for `x` in `[-40, 88.8]` (NaN propagates): the core of
/// [`expm1_f32`] without its clamps and its `-0` patch, for callers that
/// bound their argument themselves (`tanh_f32`). Halving the result keeps
/// it finite up to 88.8 and lets the last operation be one FMA.
#[inline(always)]
pub(super) fn half_expm1_bounded(x: f32) -> f32 {
    let (n, r) = reduce_ln2(x);
    // expm1(r) = r + r^2 (1/2 + r/6 + ... + r^6/8!): the Taylor tail is below
    // 2^-30 relative on |r| <= ln(2)/2, and the last FMA rounds once.
    let p = horner(
        r,
        [
            1.0 / 40320.0,
            1.0 / 5040.0,
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
        ],
    );
    let u = (r * r).mul_add(p, r);
    // (e^x - 1) / 2 = 2^(n-1) (1 + u) - 1/2 = s u + (s - 1/2) with
    // s = 2^(n-1): s - 1/2 is exact while n <= 24 and the FMA rounds once.
    let s = pow2i(n.wrapping_sub(1));
    s.mul_add(u, s - 0.5)
}

// Cephes logf: ln(1 + f) = f - f^2/2 + f^3 P(f) on f in [sqrt(1/2) - 1, sqrt(2) - 1].
const LOG_P: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_9e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_8e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];
/// Split of ln 2 for `k * LN2_HI_K` to be exact for |k| < 2^9 (few bits).
const LN2_HI_K: f32 = 0.693_359_4;
const LN2_LO_K: f32 = -2.121_944_4e-4;
const SQRT_HALF_BITS: u32 = 0x3F35_04F3;

/// Splits a positive finite `x` as `2^k (1 + f)` with `1 + f` in
/// `[sqrt(1/2), sqrt(2))` and returns `(k, f, y)` where `ln(1 + f) = f + y`.
/// Other inputs give garbage that the callers replace.
#[inline(always)]
fn log_parts(x: f32) -> (f32, f32, f32) {
    // Subnormals: scale into the normal range first.
    let sub = x < f32::MIN_POSITIVE;
    let xs = sel(sub, x * 8_388_608.0, x);
    let k_adj = sel(sub, -23.0, 0.0);
    // Offsetting the bits by those of sqrt(1/2) puts the exponent boundary
    // at sqrt(1/2), so m lands in [sqrt(1/2), sqrt(2)) without a branch.
    let ix = xs.to_bits().wrapping_add(0x3F80_0000 - SQRT_HALF_BITS);
    let k = ((ix >> 23) as i32 - 0x7F) as f32 + k_adj;
    let m = f32::from_bits((ix & 0x007F_FFFF) + SQRT_HALF_BITS);
    let f = m - 1.0;
    let z = f * f;
    let y = (-0.5f32).mul_add(z, f * z * horner(f, LOG_P));
    (k, f, y)
}

/// Replaces the garbage of [`log_parts`] for non-positive and non-finite
/// inputs: `log(±0) = -inf`, `log(inf) = inf`, `log(x < 0) = NaN`.
#[inline(always)]
fn log_specials(x: f32, r: f32) -> f32 {
    let r = sel(x == f32::INFINITY, f32::INFINITY, r);
    let r = sel(x == 0.0, f32::NEG_INFINITY, r);
    sel(x < 0.0, f32::NAN, sel(x.is_nan(), x, r))
}

/// Natural logarithm, within 2 ulp, including subnormal inputs.
///
/// ```
/// use ferrox::backend::cpu::math::log_f32;
/// assert_eq!(log_f32(1.0), 0.0);
/// assert!((log_f32(std::f32::consts::E) - 1.0).abs() <= f32::EPSILON);
/// assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
/// assert!(log_f32(-1.0).is_nan());
/// ```
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    let (k, f, y) = log_parts(x);
    let y = k.mul_add(LN2_LO_K, y);
    let r = k.mul_add(LN2_HI_K, f + y);
    log_specials(x, r)
}

const LOG2E_LO: f32 = 1.925_963e-8;

/// Base-2 logarithm, within 2 ulp; exact for powers of two.
///
/// ```
/// use ferrox::backend::cpu::math::log2_f32;
/// assert_eq!(log2_f32(8.0), 3.0);
/// assert_eq!(log2_f32(0.25), -2.0);
/// ```
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    let (k, f, y) = log_parts(x);
    // (f + y) log2(e) with the large product f * LOG2E rounded only once.
    let t = f.mul_add(LOG2E, y.mul_add(LOG2E, f * LOG2E_LO));
    log_specials(x, k + t)
}

const LOG10E: f32 = std::f32::consts::LOG10_E;
const LOG10E_LO: f32 = -1.010_305e-8;
/// log10(2) with 12 significant bits (so `k * LOG10_2_HI` is exact) and the rest.
const LOG10_2_HI: f32 = 0.301_025_4;
const LOG10_2_LO: f32 = 4.605_039e-6;

/// Base-10 logarithm, within 2 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::log10_f32;
/// assert_eq!(log10_f32(1000.0), 3.0);
/// assert_eq!(log10_f32(1.0), 0.0);
/// ```
#[inline(always)]
pub fn log10_f32(x: f32) -> f32 {
    let (k, f, y) = log_parts(x);
    let t = f.mul_add(LOG10E, y.mul_add(LOG10E, f * LOG10E_LO));
    let r = k.mul_add(LOG10_2_HI, k.mul_add(LOG10_2_LO, t));
    log_specials(x, r)
}

/// `ln(1 + x)`, within 2 ulp, accurate near 0.
///
/// ```
/// use ferrox::backend::cpu::math::log1p_f32;
/// assert_eq!(log1p_f32(1e-10), 1e-10);
/// assert_eq!(log1p_f32(-1.0), f32::NEG_INFINITY);
/// assert!(log1p_f32(-2.0).is_nan());
/// ```
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let (k, f, y) = log_parts(u);
    // ln(1 + x) = ln(u) + ln(1 + (1 + x - u) / u) ~ ln(u) + c: c recovers
    // the bits of x that rounding 1 + x dropped (u - 1 is exact here).
    let c = (x - (u - 1.0)) / u;
    let y = k.mul_add(LN2_LO_K, y + c);
    let r = k.mul_add(LN2_HI_K, f + y);
    let r = sel(x == f32::INFINITY, f32::INFINITY, r);
    let r = sel(x == -1.0, f32::NEG_INFINITY, r);
    // ±0 and NaN map to themselves; below -1 is outside the domain.
    sel(x < -1.0, f32::NAN, sel(x == 0.0 || x.is_nan(), x, r))
}
