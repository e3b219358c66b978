//! Branch-free `f32` math for vectorised elementwise kernels.
//!
//! Every function here is `#[inline(always)]`, free of branches (conditions
//! are written as selects the compiler turns into blends), of table lookups
//! and of calls, so a plain loop over a slice compiles to AVX2+FMA vector
//! code when it runs in a function with those features. The recipe is the
//! classic one: reduce the argument with bit tricks and an FMA-based
//! Cody–Waite split, evaluate a minimax or Cephes-style polynomial with
//! `mul_add`, rebuild the result by writing exponent bits, then patch the
//! special inputs (NaN, ±inf, ±0, overflow, underflow) with selects.
//!
//! Calling them: put the loop in a closure marked `#[inline(always)]` and
//! run it under [`super::parallel::simd`]:
//!
//! ```
//! use ferrox::backend::cpu::{math::exp_f32, parallel::simd};
//! let src = vec![0.5f32; 1000];
//! let mut dst = vec![0.0f32; 1000];
//! simd(
//!     #[inline(always)]
//!     || {
//!         for (o, &x) in dst.iter_mut().zip(&src) {
//!             *o = exp_f32(x);
//!         }
//!     },
//! );
//! assert_eq!(dst[999], exp_f32(0.5));
//! ```
//!
//! Without the attribute, a closure this large is not inlined into pulp's
//! AVX2+FMA function and compiles for the baseline target: scalar code in
//! which every `mul_add` calls the software `fmaf` (measured: `sin` 35
//! ns/element instead of 2). Results are identical on every path (`mul_add`
//! is always a correctly rounded fused multiply-add), only the speed differs.
//!
//! Accuracy, as maximum error in units in the last place against `f64`
//! references, proved by the tests in `math/accuracy.rs` (every 4099th bit
//! pattern of the whole `f32` range, special values, and proptests of
//! random bit patterns and of each function's busy ranges). The measured
//! maximum is given with the bound the tests enforce:
//!
//! | function | max ulp (bound) | notes |
//! |---|---|---|
//! | `exp_f32` | 0.95 (1) | gradual underflow, overflow to inf above 88.72 |
//! | `expm1_f32` | 1.22 (2) | |
//! | `log_f32`, `log2_f32`, `log10_f32` | 0.86 (2) | subnormal inputs |
//! | `log1p_f32` | 0.81 (2) | |
//! | `sin_f32`, `cos_f32` | 0.501 (1) | whole range: Payne–Hanek at and above 2^28 |
//! | `tan_f32` | 0.80 (1) | whole range |
//! | `asin_f32`, `acos_f32` | 0.52 (1) | |
//! | `atan_f32` | 0.51 (1) | every positive `f32` checked |
//! | `tanh_f32` | 2.29 (3) | |
//! | `sigmoid_f32` | 2.00 (3) | gradual underflow for very negative inputs |
//! | `sinh_f32`, `cosh_f32` | 1.91 (3) | |
//! | `asinh_f32`, `acosh_f32`, `atanh_f32` | 1.74 (3) | |
//! | `erf_f32` | 1.05 (2) | |
//! | `erfinv_f32` | 3.30 (4) | Giles' single-precision approximation |
//!
//! The Payne–Hanek reduction costs several times the rest of `sin_f32`;
//! [`sin_f32_medium`] and friends drop it and are exact below
//! [`TRIG_MEDIUM_LIMIT`], for kernels that check their input range first.
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
pub(crate) mod accuracy;

pub use erf::{erf_f32, erf_f64, erfc_f64, erfinv_f32, erfinv_f64};
pub use exp_log::{exp_f32, expm1_f32, log_f32, log1p_f32, log2_f32, log10_f32};
pub use half_conv::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
pub use hyperbolic::{acosh_f32, asinh_f32, atanh_f32, cosh_f32, sigmoid_f32, sinh_f32, tanh_f32};
pub use trig::{
    TRIG_MEDIUM_LIMIT, acos_f32, asin_f32, atan_f32, cos_f32, cos_f32_medium, sin_f32,
    sin_f32_medium, tan_f32, tan_f32_medium,
};

/// `if c { a } else { b }` for `f32`, written to become a blend.
#[inline(always)]
fn sel(c: bool, a: f32, b: f32) -> f32 {
    if c { a } else { b }
}

/// `if c { a } else { b }` for `f64`.
#[inline(always)]
fn sel64(c: bool, a: f64, b: f64) -> f64 {
    if c { a } else { b }
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
