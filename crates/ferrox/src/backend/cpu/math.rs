//! Branch-free `f32` math for vectorised elementwise kernels.
//!
//! Every function here is `#[inline(always)]`, free of branches (conditions
//! are written as selects the compiler turns into blends), of table lookups
//! and of calls, so a plain loop over a slice run under
//! [`super::parallel::simd`] compiles to AVX2+FMA vector code. The recipe is
//! the classic one: reduce the argument with bit tricks and an FMA-based
//! Cody–Waite split, evaluate a minimax or Cephes-style polynomial with
//! `mul_add`, rebuild the result by writing exponent bits, then patch the
//! special inputs (NaN, ±inf, ±0, overflow, underflow) with selects.
//!
//! `mul_add` is an FMA instruction under `simd`; elsewhere it is the
//! correctly rounded software `fmaf`, so results are the same on every
//! path, only slower.
//!
//! Accuracy, as maximum error in units in the last place against the `f64`
//! standard library (proved by the tests in `math/accuracy.rs` over random
//! bit patterns of the whole domain plus special values):
//!
//! | function | max ulp | notes |
//! |---|---|---|
//! | `exp_f32`, `expm1_f32` | 1 | gradual underflow and overflow to inf |
//! | `log_f32`, `log1p_f32`, `log2_f32`, `log10_f32` | 2 | subnormal inputs |
//! | `sin_f32`, `cos_f32`, `tan_f32` | 1 | whole range (Payne–Hanek above 2^28) |
//! | `tanh_f32`, `sigmoid_f32` | 3 | |
//! | `sinh_f32`, `cosh_f32` | 3 | |
//! | `asin_f32`, `acos_f32`, `atan_f32` | 2 | |
//! | `asinh_f32`, `acosh_f32`, `atanh_f32` | 3 | |
//! | `erf_f32` | 2 | |
//! | `erfinv_f32` | 8 | Giles' single-precision approximation |
//!
//! `f64` kernels use the standard library except for [`erf_f64`],
//! [`erfc_f64`] and [`erfinv_f64`], which the standard library lacks.
//! Half-precision types compute through `f32` with the branch-free
//! conversions in [`f16_to_f32`] and friends (the `half` crate's own
//! conversions detect F16C per call, which stops vectorisation).

mod erf;
mod exp_log;
mod half_conv;
mod hyperbolic;
mod trig;

#[cfg(test)]
mod accuracy;

pub use erf::{erf_f32, erf_f64, erfc_f64, erfinv_f32, erfinv_f64};
pub use exp_log::{exp_f32, expm1_f32, log10_f32, log1p_f32, log2_f32, log_f32};
pub use half_conv::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
pub use hyperbolic::{acosh_f32, asinh_f32, atanh_f32, cosh_f32, sigmoid_f32, sinh_f32, tanh_f32};
pub use trig::{
    acos_f32, asin_f32, atan_f32, cos_f32, cos_f32_medium, sin_f32, sin_f32_medium, tan_f32,
    tan_f32_medium, TRIG_MEDIUM_LIMIT,
};

/// `if c { a } else { b }` for `f32`, written to become a blend.
#[inline(always)]
fn sel(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// `if c { a } else { b }` for `f64`.
#[inline(always)]
fn sel64(c: bool, a: f64, b: f64) -> f64 {
    if c {
        a
    } else {
        b
    }
}

/// Horner evaluation of `c[0] * x^(N-1) + ... + c[N-1]` with FMAs
/// (highest degree first, the order minimax tools print).
#[inline(always)]
fn horner<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut acc = c[0];
    for &k in &c[1..] {
        acc = acc.mul_add(x, k);
    }
    acc
}

/// [`horner`] for `f64`.
#[inline(always)]
fn horner64<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut acc = c[0];
    for &k in &c[1..] {
        acc = acc.mul_add(x, k);
    }
    acc
}

/// `2^n` for `n` in `-126..=127`, by writing the exponent field.
#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}
