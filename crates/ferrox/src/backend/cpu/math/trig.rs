//! Circular functions and their inverses.
//!
//! `sin`, `cos` and `tan` reduce the argument in `f64`: below 2^28 with the
//! 25 + 53-bit split of pi/2 from FreeBSD's `__rem_pio2f` (enough for every
//! float there), above it with a branch-free Payne–Hanek reduction that
//! multiplies the float's 24-bit integer mantissa by the bits of 2/pi that
//! matter for its exponent. The reduced argument goes through FreeBSD's
//! `f64` kernels (`__sindf`, `__cosdf`, `__tandf`), so the only rounding
//! that matters is the final one to `f32`: results are within 1 ulp over the
//! whole range.
//!
//! The FreeBSD constants carry this notice:
//! Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//! Developed at SunPro, a Sun Microsystems, Inc. business.
//! Permission to use, copy, modify, and distribute this software is freely
//! granted, provided that this notice is preserved.

use super::{horner64, sel, sel64};

/// 2/pi to 53 bits.
const INV_PIO2: f64 = std::f64::consts::FRAC_2_PI;
/// The first 25 bits of pi/2, so that `n * PIO2_1` is exact for `n < 2^28`.
const PIO2_1: f64 = 1.570_796_310_901_641_8;
/// pi/2 - PIO2_1.
const PIO2_1T: f64 = 1.589_325_477_352_819_7e-8;
/// Adding 1.5 * 2^52 rounds an `f64` below 2^51 to the nearest integer and
/// leaves it in the low mantissa bits.
const TOINT: f64 = 6_755_399_441_055_744.0;
/// The `*_medium` trig functions are exact below this magnitude (2^28);
/// the full-range ones take the Payne–Hanek path at and above it.
///
/// ```
/// use ferrox::backend::cpu::math::{sin_f32, sin_f32_medium, TRIG_MEDIUM_LIMIT};
/// let x = TRIG_MEDIUM_LIMIT * 0.75;
/// assert_eq!(sin_f32_medium(x), sin_f32(x));
/// ```
pub const TRIG_MEDIUM_LIMIT: f32 = 268_435_456.0;

/// The binary expansion of 2/pi in 24-bit words: 2/pi = sum D[j] 2^(-24 (j + 1)).
/// The reduction needs words `j0..j0 + 5` for `j0` in `0..=4`.
const TWO_OVER_PI_24: [f64; 9] = [
    0xA2_F983 as f64,
    0x6E_4E44 as f64,
    0x15_29FC as f64,
    0x27_57D1 as f64,
    0xF5_34DD as f64,
    0xC0_DB62 as f64,
    0x95_993C as f64,
    0x43_9041 as f64,
    0xFE_5163 as f64,
];

/// `2^e` for `e` in the normal `f64` range.
#[inline(always)]
fn pow2_f64(e: i32) -> f64 {
    f64::from_bits((e.wrapping_add(1023) as u64) << 52)
}

/// `v mod 4` for `0 <= v < 2^52`, exact.
#[inline(always)]
fn mod4(v: f64) -> f64 {
    v - 4.0 * (v * 0.25).floor()
}

/// Payne–Hanek reduction of `|x| >= 2^28` (finite): returns `(r, n)` with
/// `|x| = (n + r / (pi/2)) pi/2 (mod 2 pi)`, `|r| <= ~pi/4`.
///
/// `|x| = m 2^s` with `m` a 24-bit integer and `s` in `5..=104`. In
/// `m 2^s 2/pi = sum m D[j] 2^(s - 24 (j + 1))` every term before
/// `j0 = (s - 2) / 24` is a multiple of 4 and drops out of the quadrant;
/// the five terms from `j0` on are exact `f64` products (24 x 24 bits times
/// a power of two) and the first two are reduced mod 4 exactly. The
/// truncated tail is below 2^-71, far under the ~2^-32 closest approach of
/// a float to a multiple of pi/2, so `r` keeps `f64` relative accuracy.
/// Words are chosen with selects rather than table loads so that the loop
/// stays vectorisable. Inputs below 2^28 give garbage the caller discards.
#[inline(always)]
fn rem_pio2_huge(x: f32) -> (f64, i32) {
    let bits = x.to_bits() & 0x7FFF_FFFF;
    let s = ((bits >> 23) as i32 - 150).clamp(5, 104);
    let m = ((bits & 0x7F_FFFF) | 0x80_0000) as f64;
    let j0 = (s - 2) / 24;
    let e0 = s - 24 * j0 - 24; // in -22..=1
    let word = |k: usize| {
        let t = &TWO_OVER_PI_24;
        sel64(
            j0 >= 4,
            t[k + 4],
            sel64(
                j0 >= 3,
                t[k + 3],
                sel64(j0 >= 2, t[k + 2], sel64(j0 >= 1, t[k + 1], t[k])),
            ),
        )
    };
    let term = |k: usize| m * word(k) * pow2_f64(e0 - 24 * k as i32);
    let a = mod4(mod4(term(0)) + mod4(term(1)));
    let (t2, t3, t4) = (term(2), term(3), term(4));
    let w = (a + t2) + TOINT;
    let nf = w - TOINT;
    // a - nf is exact; each later sum rounds relative to its (small) result.
    let f = (((a - nf) + t2) + t3) + t4;
    (f * std::f64::consts::FRAC_PI_2, w.to_bits() as i32)
}

/// [`rem_pio2`] for `|x| < 2^28`: `n = round(x 2/pi)` and `r = x - n pi/2`
/// with pi/2 to 78 bits; `n PIO2_1` is exact because `n < 2^28`.
#[inline(always)]
fn rem_pio2_medium(x: f32) -> (f64, i32) {
    let xd = x as f64;
    let t = xd.mul_add(INV_PIO2, TOINT);
    let nf = t - TOINT;
    let n = t.to_bits() as i32; // low bits of the mantissa: n mod 2^32
    ((-nf).mul_add(PIO2_1T, (-nf).mul_add(PIO2_1, xd)), n)
}

/// `x` reduced to `r` in about `[-pi/4, pi/4]` and the quadrant `n`
/// (only `n mod 4` matters): `x = n pi/2 + r`. Non-finite `x` give garbage.
#[inline(always)]
fn rem_pio2(x: f32) -> (f64, i32) {
    let (r_medium, n_medium) = rem_pio2_medium(x);
    let (r_huge, n_huge) = rem_pio2_huge(x);
    let (r_huge, n_huge) = if x < 0.0 {
        (-r_huge, n_huge.wrapping_neg())
    } else {
        (r_huge, n_huge)
    };
    let medium = x.abs() < TRIG_MEDIUM_LIMIT;
    (
        sel64(medium, r_medium, r_huge),
        if medium { n_medium } else { n_huge },
    )
}

/// sin(r) on `|r| <= pi/4` (FreeBSD `__sindf`, error below 2^-37 relative).
#[inline(always)]
fn k_sin(r: f64) -> f64 {
    let z = r * r;
    let w = z * z;
    let s = z * r;
    let tail = 2.718_311_493_989_822e-6f64.mul_add(z, -1.983_933_483_609_663_2e-4);
    (r + s * 8.333_329_385_889_463e-3f64.mul_add(z, -1.666_666_664_162_652_4e-1)) + s * w * tail
}

/// cos(r) on `|r| <= pi/4` (FreeBSD `__cosdf`).
#[inline(always)]
fn k_cos(r: f64) -> f64 {
    let z = r * r;
    let w = z * z;
    let tail = 2.439_044_879_627_741e-5f64.mul_add(z, -1.388_676_377_460_993e-3);
    ((1.0 + z * -4.999_999_972_510_31e-1) + w * 4.166_662_332_373_906e-2) + (w * z) * tail
}

/// sin or cos of `x = n pi/2 + r` by quadrant, as `f32`.
#[inline(always)]
fn sin_by_quadrant(r: f64, n: i32) -> f32 {
    let (s, c) = (k_sin(r), k_cos(r));
    let v = sel64(n & 1 == 1, c, s);
    sel64(n & 2 == 2, -v, v) as f32
}

/// Sine, within 1 ulp for every finite `f32` (huge arguments included).
/// The Payne–Hanek reduction it carries for `|x| >= 2^28` costs several
/// times the rest; kernels that can check their input range use
/// [`sin_f32_medium`] when every element is below [`TRIG_MEDIUM_LIMIT`].
///
/// ```
/// use ferrox::backend::cpu::math::sin_f32;
/// assert_eq!(sin_f32(0.0), 0.0);
/// assert_eq!(sin_f32(std::f32::consts::FRAC_PI_2), 1.0);
/// assert_eq!(sin_f32(1e30), (1e30f32 as f64).sin() as f32);
/// assert!(sin_f32(f32::INFINITY).is_nan());
/// ```
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    sin_from(x, rem_pio2(x))
}

/// [`sin_f32`] for `|x| <` [`TRIG_MEDIUM_LIMIT`] (and ±inf, NaN): within
/// 1 ulp there, a finite unspecified value for larger `|x|`.
///
/// ```
/// use ferrox::backend::cpu::math::sin_f32_medium;
/// assert_eq!(sin_f32_medium(std::f32::consts::FRAC_PI_2), 1.0);
/// ```
#[inline(always)]
pub fn sin_f32_medium(x: f32) -> f32 {
    sin_from(x, rem_pio2_medium(x))
}

#[inline(always)]
fn sin_from(x: f32, (r, n): (f64, i32)) -> f32 {
    let v = sin_by_quadrant(r, n);
    // sin(±0) = ±0 and sin(±inf) = sin(NaN) = NaN.
    sel(x == 0.0, x, sel(x.is_finite(), v, f32::NAN))
}

/// Cosine, within 1 ulp for every finite `f32` (see [`sin_f32`] on cost).
///
/// ```
/// use ferrox::backend::cpu::math::cos_f32;
/// assert_eq!(cos_f32(0.0), 1.0);
/// assert_eq!(cos_f32(std::f32::consts::PI), -1.0);
/// assert!(cos_f32(f32::NAN).is_nan());
/// ```
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    cos_from(x, rem_pio2(x))
}

/// [`cos_f32`] for `|x| <` [`TRIG_MEDIUM_LIMIT`] (see [`sin_f32_medium`]).
///
/// ```
/// use ferrox::backend::cpu::math::cos_f32_medium;
/// assert_eq!(cos_f32_medium(0.0), 1.0);
/// ```
#[inline(always)]
pub fn cos_f32_medium(x: f32) -> f32 {
    cos_from(x, rem_pio2_medium(x))
}

#[inline(always)]
fn cos_from(x: f32, (r, n): (f64, i32)) -> f32 {
    let v = sin_by_quadrant(r, n.wrapping_add(1));
    sel(x.is_finite(), v, f32::NAN)
}

/// Tangent, within 1 ulp for every finite `f32` (see [`sin_f32`] on cost).
///
/// ```
/// use ferrox::backend::cpu::math::tan_f32;
/// assert_eq!(tan_f32(0.0), 0.0);
/// assert!((tan_f32(std::f32::consts::FRAC_PI_4) - 1.0).abs() <= f32::EPSILON);
/// ```
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    tan_from(x, rem_pio2(x))
}

/// [`tan_f32`] for `|x| <` [`TRIG_MEDIUM_LIMIT`] (see [`sin_f32_medium`]).
///
/// ```
/// use ferrox::backend::cpu::math::tan_f32_medium;
/// assert_eq!(tan_f32_medium(0.0), 0.0);
/// ```
#[inline(always)]
pub fn tan_f32_medium(x: f32) -> f32 {
    tan_from(x, rem_pio2_medium(x))
}

#[inline(always)]
fn tan_from(x: f32, (r, n): (f64, i32)) -> f32 {
    // FreeBSD __tandf: tan(r) on |r| <= pi/4; odd quadrants give -1/tan(r).
    let z = r * r;
    let w = z * z;
    let s = z * r;
    let u = 1.333_920_027_129_767_4e-1f64.mul_add(z, 3.333_313_950_307_914e-1);
    let t = 2.452_831_811_665_472_8e-2f64.mul_add(z, 5.338_123_784_456_704e-2);
    let q = 9.465_647_849_436_732e-3f64.mul_add(z, 2.974_357_433_599_673e-3);
    let v = (r + s * u) + (s * w) * w.mul_add(q, t);
    let v = sel64(n & 1 == 1, -1.0 / v, v) as f32;
    sel(x == 0.0, x, sel(x.is_finite(), v, f32::NAN))
}

/// asin(s) = s + s z P(z) with `z = s^2` on `|s| <= 1/2`; `P` is a
/// Chebyshev fit (mpmath) with absolute error 4e-9. Evaluated in `f64`,
/// like the reconstruction around it, so that the only rounding that
/// matters is the final one to `f32` (the `f32` version of this recipe,
/// Cephes asinf, loses up to 3.5 ulp in `pi/2 - 2 asin(s)`).
#[inline(always)]
fn asin_poly(s: f64, z: f64) -> f64 {
    let p = horner64(
        z,
        [
            3.369_084_7e-2,
            1.714_923_8e-2,
            3.110_066_2e-2,
            4.459_940_3e-2,
            7.500_094e-2,
            1.666_666_6e-1,
        ],
    );
    (s * z).mul_add(p, s)
}

/// Arcsine, within 1 ulp; NaN outside `[-1, 1]`.
///
/// ```
/// use ferrox::backend::cpu::math::asin_f32;
/// assert_eq!(asin_f32(1.0), std::f32::consts::FRAC_PI_2);
/// assert!(asin_f32(1.5).is_nan());
/// ```
#[inline(always)]
pub fn asin_f32(x: f32) -> f32 {
    let a = x.abs() as f64;
    let big = a > 0.5;
    // asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)) for a > 1/2 (NaN above 1).
    let z = sel64(big, 0.5 * (1.0 - a), a * a);
    let s = sel64(big, z.sqrt(), a);
    let y = asin_poly(s, z);
    let y = sel64(big, std::f64::consts::FRAC_PI_2 - 2.0 * y, y);
    (y as f32).copysign(x)
}

/// Arccosine, within 1 ulp; NaN outside `[-1, 1]`.
///
/// ```
/// use ferrox::backend::cpu::math::acos_f32;
/// assert_eq!(acos_f32(1.0), 0.0);
/// assert_eq!(acos_f32(-1.0), std::f32::consts::PI);
/// ```
#[inline(always)]
pub fn acos_f32(x: f32) -> f32 {
    let x = x as f64;
    let big = x.abs() > 0.5;
    // x > 1/2: 2 asin(sqrt((1 - x) / 2)); x < -1/2: pi - 2 asin(sqrt((1 + x) / 2));
    // otherwise pi/2 - asin(x).
    let z = sel64(big, 0.5 * (1.0 - x.abs()), x * x);
    let s = sel64(big, z.sqrt(), x);
    let y = asin_poly(s, z);
    let small = std::f64::consts::FRAC_PI_2 - y;
    let big_pos = 2.0 * y;
    let big_neg = std::f64::consts::PI - 2.0 * y;
    sel64(big, sel64(x > 0.0, big_pos, big_neg), small) as f32
}

/// Arctangent, within 1 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::atan_f32;
/// assert_eq!(atan_f32(0.0), 0.0);
/// assert_eq!(atan_f32(f32::INFINITY), std::f32::consts::FRAC_PI_2);
/// ```
#[inline(always)]
pub fn atan_f32(x: f32) -> f32 {
    let a = x.abs() as f64;
    // As Cephes atanf: reduce to |t| <= tan(pi/8) with atan(a) = pi/2 + atan(-1/a)
    // above tan(3pi/8) and pi/4 + atan((a - 1)/(a + 1)) above tan(pi/8);
    // one division serves both. Evaluated in `f64` (as asin is): in `f32`
    // the reduction's rounding reaches 2.01 ulp just above tan(pi/8).
    let above_3pi8 = a > 2.414_213_562_373_095;
    let above_pi8 = a > 0.414_213_562_373_095_1;
    let num = sel64(above_3pi8, -1.0, sel64(above_pi8, a - 1.0, a));
    let den = sel64(above_3pi8, a, sel64(above_pi8, a + 1.0, 1.0));
    let t = num / den;
    let base = sel64(
        above_3pi8,
        std::f64::consts::FRAC_PI_2,
        sel64(above_pi8, std::f64::consts::FRAC_PI_4, 0.0),
    );
    let z = t * t;
    // atan(t) = t + t z P(z) on |t| <= tan(pi/8); P is a Chebyshev fit
    // (mpmath) with absolute error 5e-10, far below half an f32 ulp of the
    // result.
    let p = horner64(
        z,
        [
            5.047_937_5e-2,
            -8.624_598_4e-2,
            1.107_135_5e-1,
            -1.428_415e-1,
            1.999_997_8e-1,
            -3.333_333_4e-1,
        ],
    );
    let y = base + (t * z).mul_add(p, t);
    (y as f32).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_reduction_matches_f64_std_at_exact_multiples_region() {
        // Floats near large multiples of pi/2 stress the Payne–Hanek sum.
        for &x in &[
            1e30f32,
            3.4e38,
            2.0f32.powi(28),
            1.0e10,
            123_456_789_000.0,
            8.6e37,
        ] {
            for x in [x, -x] {
                let (r, n) = rem_pio2(x);
                let want_sin = (x as f64).sin();
                let got = sin_by_quadrant(r, n) as f64;
                assert!(
                    (got - want_sin).abs() <= 1e-7 * want_sin.abs().max(1e-30) + 1e-12,
                    "{x}: {got} vs {want_sin}"
                );
            }
        }
    }
}
