//! The error function and its inverse.
//!
//! `erf_f32` is branch-free: a polynomial in `x^2` near 0 and
//! `1 - exp(Q(|x|))` beyond, with `Q` a fit of `ln(erfc)`; both are
//! near-minimax (Chebyshev) fits made with mpmath for this file.
//! `erfinv_f32` is Giles' single-precision approximation ("Approximating
//! the erfinv function", GPU Computing Gems, 2011), the one MLX uses.
//!
//! The `f64` versions back the `float64` kernels: `erf_f64`/`erfc_f64` are
//! FreeBSD's `s_erf.c`, whose notice is:
//! Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//! Developed at SunPro, a Sun Microsystems, Inc. business.
//! Permission to use, copy, modify, and distribute this software is freely
//! granted, provided that this notice is preserved.
//! `erfinv_f64` refines Giles' estimate with Halley steps on `erf`/`erfc`.

use super::exp_log::{exp_f32, log_f32};
use super::{horner, horner64, sel};

/// Below this, erf(x) = x + x P(x^2); at and above it, 1 - exp(Q(x)).
const ERF_SPLIT: f32 = 0.921_875;

/// Error function, within 2 ulp.
///
/// ```
/// use ferrox::backend::cpu::math::erf_f32;
/// assert_eq!(erf_f32(0.0), 0.0);
/// assert!((erf_f32(1.0) - 0.842_700_8).abs() <= 1e-7);
/// assert_eq!(erf_f32(-5.0), -1.0);
/// ```
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let a = x.abs();
    // |x| < 0.921875: P(s) ~ erf(sqrt s)/sqrt s - 1, error 4e-10 relative.
    let s = x * x;
    let p = horner(
        s,
        [
            8.387_591e-5,
            -8.147_202_3e-4,
            5.201_467e-3,
            -2.685_959_3e-2,
            1.128_369_9e-1,
            -3.761_263_5e-1,
            1.283_791_7e-1,
        ],
    );
    let near = x.mul_add(p, x);
    // Beyond, Q(t) ~ ln(erfc(t)) on [0.921875, 4], absolute error 3.4e-9,
    // i.e. erfc to 3.4e-9 relative; erf(4) rounds to 1 (clamping keeps
    // the polynomial in range and maps inf to 1).
    let t = sel(a > 4.0, 4.0, a);
    let q = horner(
        t,
        [
            -4.825_063e-8,
            1.147_128_2e-6,
            -1.035_850_4e-5,
            2.652_851_8e-5,
            3.155_666_6e-4,
            -4.030_938_3e-3,
            2.514_290_6e-2,
            -1.085_806_9e-1,
            -6.329_522e-1,
            -1.129_743_9,
            2.265_759e-4,
        ],
    );
    let far = (1.0 - exp_f32(q)).copysign(x);
    // NaN fails the comparison and takes the `near` path, which keeps it.
    sel(a >= ERF_SPLIT, far, near)
}

/// Inverse error function (Giles' approximation, within 4 ulp); ±inf at
/// ±1 and NaN outside `[-1, 1]`.
///
/// ```
/// use ferrox::backend::cpu::math::erfinv_f32;
/// assert_eq!(erfinv_f32(0.0), 0.0);
/// assert!((erfinv_f32(0.5) - 0.476_936_3).abs() <= 1e-6);
/// assert_eq!(erfinv_f32(1.0), f32::INFINITY);
/// assert!(erfinv_f32(1.5).is_nan());
/// ```
#[inline(always)]
pub fn erfinv_f32(x: f32) -> f32 {
    // w = -ln(1 - x^2), with 1 - x exact near |x| = 1. |x| > 1 makes the
    // product negative and w NaN; |x| = 1 makes w = inf and the result inf.
    let w = -log_f32((1.0 - x) * (1.0 + x));
    let central = horner(
        w - 2.5,
        [
            2.810_226_4e-8,
            3.432_739_4e-7,
            -3.523_387_7e-6,
            -4.391_506_5e-6,
            2.185_808_7e-4,
            -1.253_725e-3,
            -4.177_681_6e-3,
            2.466_407_3e-1,
            1.501_409_4,
        ],
    );
    let tail = horner(
        w.sqrt() - 3.0,
        [
            -2.002_142_6e-4,
            1.009_505_6e-4,
            1.349_343_2e-3,
            -3.673_428_4e-3,
            5.739_507_7e-3,
            -7.622_461_3e-3,
            9.438_870_5e-3,
            1.001_674,
            2.832_976_8,
        ],
    );
    let y = sel(w < 5.0, central, tail) * x;
    sel(x.abs() == 1.0, f32::INFINITY.copysign(x), y)
}

// FreeBSD s_erf.c coefficients (see the module notice).
const ERX: f64 = 8.450_629_115_104_675e-1;
const EFX8: f64 = 1.027_033_336_764_100_7;
const PP: [f64; 5] = [
    1.283_791_670_955_125_6e-1,
    -3.250_421_072_470_015e-1,
    -2.848_174_957_559_851e-2,
    -5.770_270_296_489_442e-3,
    -2.376_301_665_665_016_3e-5,
];
const QQ: [f64; 5] = [
    3.979_172_239_591_553_5e-1,
    6.502_224_998_876_73e-2,
    5.081_306_281_875_766e-3,
    1.324_947_380_043_216_4e-4,
    -3.960_228_278_775_368e-6,
];
const PA: [f64; 7] = [
    -2.362_118_560_752_659_4e-3,
    4.148_561_186_837_483_3e-1,
    -3.722_078_760_357_013e-1,
    3.183_466_199_011_617_5e-1,
    -1.108_946_942_823_966_8e-1,
    3.547_830_432_561_823_6e-2,
    -2.166_375_594_868_791e-3,
];
const QA: [f64; 6] = [
    1.064_208_804_008_442_3e-1,
    5.403_979_177_021_71e-1,
    7.182_865_441_419_627e-2,
    1.261_712_198_087_616_4e-1,
    1.363_708_391_202_905e-2,
    1.198_449_984_679_910_7e-2,
];
const RA: [f64; 8] = [
    -9.864_944_034_847_148e-3,
    -6.938_585_727_071_818e-1,
    -1.055_862_622_532_329_1e1,
    -6.237_533_245_032_600_6e1,
    -1.623_966_694_625_734_7e2,
    -1.846_050_929_067_110_4e2,
    -8.128_743_550_630_66e1,
    -9.814_329_344_169_145,
];
const SA: [f64; 8] = [
    1.965_127_166_743_925_7e1,
    1.376_577_541_435_190_4e2,
    4.345_658_774_752_292_3e2,
    6.453_872_717_332_679e2,
    4.290_081_400_275_678_3e2,
    1.086_350_055_417_794_3e2,
    6.570_249_770_319_282,
    -6.042_441_521_485_81e-2,
];
const RB: [f64; 7] = [
    -9.864_942_924_700_1e-3,
    -7.992_832_376_805_23e-1,
    -1.775_795_491_775_475_2e1,
    -1.606_363_848_558_219_2e2,
    -6.375_664_433_683_896e2,
    -1.025_095_131_611_077_2e3,
    -4.835_191_916_086_514e2,
];
const SB: [f64; 7] = [
    3.033_806_074_348_246e1,
    3.257_925_129_965_739e2,
    1.536_729_586_084_437e3,
    3.199_858_219_508_595_5e3,
    2.553_050_406_433_164_4e3,
    4.745_285_412_069_553_7e2,
    -2.244_095_244_658_582e1,
];

/// `sum c[i] z^i` for coefficients lowest degree first (FreeBSD's order).
#[inline(always)]
fn series<const N: usize>(z: f64, c: [f64; N]) -> f64 {
    let mut rev = c;
    rev.reverse();
    horner64(z, rev)
}

/// 1 + z (q0 + z (q1 + ...)).
#[inline(always)]
fn one_plus<const N: usize>(z: f64, q: [f64; N]) -> f64 {
    z.mul_add(series(z, q), 1.0)
}

/// erfc(|x|) for 0.84375 <= |x| < 28.
fn erfc_mid(x: f64) -> f64 {
    let a = x.abs();
    if a < 1.25 {
        let s = a - 1.0;
        return 1.0 - ERX - series(s, PA) / one_plus(s, QA);
    }
    let s = 1.0 / (a * a);
    let (r, big_s) = if a < 1.0 / 0.35 {
        (series(s, RA), one_plus(s, SA))
    } else {
        (series(s, RB), one_plus(s, SB))
    };
    // exp(-a^2) split as exp(-z^2) exp((z - a)(z + a)) with z = a truncated
    // to 21 bits, so that z^2 is exact.
    let z = f64::from_bits(a.to_bits() & 0xFFFF_FFFF_0000_0000);
    (-z * z - 0.5625).exp() * ((z - a) * (z + a) + r / big_s).exp() / a
}

/// Error function in `f64` (FreeBSD `erf`, under 1 ulp).
///
/// ```
/// use ferrox::backend::cpu::math::erf_f64;
/// assert!((erf_f64(1.0) - 0.842_700_792_949_714_9).abs() < 1e-16);
/// assert_eq!(erf_f64(f64::INFINITY), 1.0);
/// ```
pub fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a < 0.84375 {
        if a < 2f64.powi(-28) {
            return 0.125 * (8.0 * x + EFX8 * x);
        }
        let z = x * x;
        return x + x * (series(z, PP) / one_plus(z, QQ));
    }
    let y = if a < 6.0 { 1.0 - erfc_mid(x) } else { 1.0 };
    y.copysign(x)
}

/// Complementary error function `1 - erf(x)` in `f64`, accurate where
/// `erf` is close to 1 (FreeBSD `erfc`).
///
/// ```
/// use ferrox::backend::cpu::math::erfc_f64;
/// assert!((erfc_f64(3.0) - 2.209_049_699_858_544e-5).abs() < 1e-19);
/// assert_eq!(erfc_f64(f64::NEG_INFINITY), 2.0);
/// ```
pub fn erfc_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a < 0.84375 {
        if a < 2f64.powi(-56) {
            return 1.0 - x;
        }
        let z = x * x;
        let y = series(z, PP) / one_plus(z, QQ);
        return if x < 0.25 {
            1.0 - (x + x * y)
        } else {
            0.5 - (x - 0.5 + x * y)
        };
    }
    if a < 28.0 {
        let c = erfc_mid(x);
        return if x < 0.0 { 2.0 - c } else { c };
    }
    if x < 0.0 { 2.0 } else { 0.0 }
}

/// Inverse error function in `f64`, to about 1 ulp; ±inf at ±1 and NaN
/// outside `[-1, 1]`.
///
/// ```
/// use ferrox::backend::cpu::math::{erf_f64, erfinv_f64};
/// let x = erfinv_f64(0.3);
/// assert!((erf_f64(x) - 0.3).abs() < 1e-16);
/// assert_eq!(erfinv_f64(-1.0), f64::NEG_INFINITY);
/// ```
pub fn erfinv_f64(y: f64) -> f64 {
    let a = y.abs();
    if a.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if a == 0.0 {
        return y;
    }
    // Giles' estimate (about 1e-7 relative), evaluated in f64.
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let mut x = if w < 5.0 {
        horner64(
            w - 2.5,
            [
                2.810_226_36e-8,
                3.432_739_39e-7,
                -3.523_387_7e-6,
                -4.391_506_54e-6,
                2.185_808_7e-4,
                -1.253_725_03e-3,
                -4.177_681_64e-3,
                2.466_407_27e-1,
                1.501_409_41,
            ],
        )
    } else {
        horner64(
            w.sqrt() - 3.0,
            [
                -2.002_142_57e-4,
                1.009_505_58e-4,
                1.349_343_22e-3,
                -3.673_428_44e-3,
                5.739_507_73e-3,
                -7.622_461_3e-3,
                9.438_870_47e-3,
                1.001_674_06,
                2.832_976_82,
            ],
        )
    } * a;
    // Halley steps on f(x) = erf(x) - a, with f'' = -2x f'. Near 1 the
    // residual comes from erfc to avoid cancellation (1 - a is exact there).
    // Convergence is cubic from Giles' estimate; beyond its fitted range
    // (a within 1e-7 of 1) the first steps are slower, hence the cap of 50.
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..50 {
        let f = if a <= 0.5 {
            erf_f64(x) - a
        } else {
            (1.0 - a) - erfc_f64(x)
        };
        let d = two_over_sqrt_pi * (-x * x).exp();
        let step = f / x.mul_add(f, d);
        if !step.is_finite() {
            break;
        }
        x -= step;
        if step.abs() <= 1e-17 * x {
            break;
        }
    }
    x.copysign(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf, erfc and erfinv at points computed with mpmath (50 digits).
    #[test]
    fn f64_versions_match_mpmath() {
        let erf_cases = [
            (1e-300, 1.1283791670955126e-300),
            (0.1, 0.1124629160182849),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (2.0, 0.9953222650189527),
            (-3.5, -0.9999992569016276),
        ];
        for (x, want) in erf_cases {
            let got = erf_f64(x);
            assert!(
                (got - want).abs() <= 2e-16 * want.abs(),
                "erf({x}) = {got}, want {want}"
            );
        }
        let erfc_cases = [
            (0.3, 0.6713732405408726),
            (2.5, 4.069_520_174_449_59e-4),
            (10.0, 2.088487583762545e-45),
            (-1.0, 1.842700792949715),
        ];
        for (x, want) in erfc_cases {
            let got = erfc_f64(x);
            assert!(
                (got - want).abs() <= 4e-16 * want.abs(),
                "erfc({x}) = {got}, want {want}"
            );
        }
        let erfinv_cases = [
            (0.5, 0.4769362762044699),
            (-0.9, -1.1630871536766743),
            (0.999999, 3.458_910_737_275_499),
            (1.0 - 1e-15, 5.675_915_739_744_713),
            (1e-10, 8.862_269_254_527_58e-11),
        ];
        for (y, want) in erfinv_cases {
            let got = erfinv_f64(y);
            assert!(
                (got - want).abs() <= 4e-16 * want.abs(),
                "erfinv({y}) = {got}, want {want}"
            );
        }
    }
}
