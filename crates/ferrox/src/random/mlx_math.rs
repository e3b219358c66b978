//! The scalar functions the distributions apply to their uniforms, computed
//! the way MLX's CPU backend computes them, so that samples match MLX's bit
//! for bit: `log`, `log1p` and `exp` are the C library's (`logf`, `log1pf`,
//! `expf`, and the double versions), `erfinv` is Giles' single-precision
//! approximation in the two-branch form of Juffa's `erfinvf` on top of
//! `logf`, and `erf` is Abramowitz and Stegun's formula 7.1.26 on top of
//! `expf`. (ferrox's own `erf`/`erfinv`/`log` kernels are more accurate or
//! faster and differ from these in the last bits.)
//!
//! Only float32 (and float64 for `log`, `log1p` and `exp`) have kernels;
//! the samplers round half-precision inputs through float32, as MLX does.

// The coefficients are written with the digits they are published with
// (each parses to the float32 the published algorithm uses).
#![allow(clippy::excessive_precision)]

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::simd;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::binary::{add, divide, multiply};
use rayon::prelude::*;

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Fun {
    Log,
    Log1p,
    Exp,
    Erf,
    Erfinv,
}

/// One of [`Fun`] applied elementwise (float32, or float64 for the C
/// library functions).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct MlxMath(pub Fun);

impl crate::graph::export::Exportable for MlxMath {
    const KIND: &'static str = "random_math";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "random")?;
        match (self.0, x.dtype()) {
            (Fun::Erf | Fun::Erfinv, DType::Float32) | (_, DType::Float32 | DType::Float64) => {
                apply(self.0, x)
            }
            (_, d) => Err(Error::dtype(
                "random",
                format!("an exported {:?} has an input of dtype {d}", self.0),
            )),
        }
    }
}

/// Evaluates with float32 arithmetic for half-precision inputs: `x` goes to
/// float32, the function is applied, the result is rounded back.
pub(crate) fn apply(f: Fun, x: &Array) -> Result<Array> {
    let d = x.dtype();
    match d {
        DType::Float32 => Ok(node(f, x)),
        DType::Float64 if !matches!(f, Fun::Erf | Fun::Erfinv) => Ok(node(f, x)),
        DType::Float16 | DType::BFloat16 => node(f, &x.astype(DType::Float32)?).astype(d),
        _ => Err(Error::runtime(
            "random",
            format!("no {f:?} kernel for dtype {d}"),
        )),
    }
}

fn node(f: Fun, x: &Array) -> Array {
    Array::from_op(x.shape().to_vec(), x.dtype(), MlxMath(f), vec![x.clone()])
}

/// The tail branch of `erfinv` (`|ln(1 - x^2)| > 6.125`), in `t = ln(1 - x^2)`.
const ERFINV_TAIL: [f32; 9] = [
    3.036_975_67e-10,
    2.932_431_01e-8,
    1.221_503_34e-6,
    2.841_089_55e-5,
    3.935_529_68e-4,
    3.026_988_12e-3,
    4.831_857_98e-3,
    -2.646_461_43e-1,
    8.400_164_84e-1,
];

/// The central branch of `erfinv`, in `t = ln(1 - x^2)`.
const ERFINV_CENTRAL: [f32; 10] = [
    5.438_778_32e-9,
    1.432_854_48e-7,
    1.227_747_93e-6,
    1.129_636_26e-7,
    -5.615_307_60e-5,
    -1.476_976_32e-4,
    2.314_686_78e-3,
    1.153_925_81e-2,
    -2.320_154_76e-1,
    8.862_268_92e-1,
];

/// Horner's rule with fused multiply-adds, highest coefficient first.
#[inline(always)]
fn fma_poly(t: f32, c: &[f32]) -> f32 {
    c[1..].iter().fold(c[0], |p, &k| p.mul_add(t, k))
}

/// MLX's float32 `erfinv`.
#[inline]
pub(crate) fn erfinv(x: f32) -> f32 {
    let t = x.mul_add(-x, 1.0).ln();
    let p = if t.abs() > 6.125 {
        fma_poly(t, &ERFINV_TAIL)
    } else {
        fma_poly(t, &ERFINV_CENTRAL)
    };
    x * p
}

/// MLX's float32 `exp`: `x log2(e) = i + f` with `i` the nearest integer,
/// `2^i` built from its exponent bits and `2^f` a degree-6 polynomial;
/// inf above 88, 0 below -88.
#[inline]
pub(crate) fn exp(x: f32) -> f32 {
    // MLX writes 1.442695f: the same float32 as log2(e).
    let y = x * std::f32::consts::LOG2_E;
    let i = (y + 0.5).floor();
    let f = y - i;
    let p = fma_poly(
        f,
        &[
            1.535_336_188_319_500e-4,
            1.339_887_440_266_574e-3,
            9.618_437_357_674_640e-3,
            5.550_332_471_162_809e-2,
            2.402_264_791_363_012e-1,
            6.931_472_028_550_421e-1,
            1.0,
        ],
    );
    if x.is_nan() {
        return x;
    }
    if x > 88.0 {
        return f32::INFINITY;
    }
    if x < -88.0 {
        return 0.0;
    }
    let two_i = f32::from_bits(((i as i32 + 127) << 23) as u32);
    two_i * p
}

/// MLX's float32 `erf` (Abramowitz and Stegun 7.1.26, absolute error
/// below 1.5e-7).
#[inline]
pub(crate) fn erf(x: f32) -> f32 {
    let t = 1.0 / 0.327_591_1f32.mul_add(x.abs(), 1.0);
    let r = fma_poly(
        t,
        &[
            1.061_405_429,
            -1.453_152_027,
            1.421_413_741,
            -0.284_496_736,
            0.254_829_592,
        ],
    );
    let e = -exp(-x * x);
    let v = (e * t).mul_add(r, 1.0);
    if x > 0.0 { v } else { -v }
}

fn scalar64(f: Fun) -> Option<fn(f64) -> f64> {
    match f {
        Fun::Log => Some(f64::ln),
        Fun::Log1p => Some(f64::ln_1p),
        Fun::Exp => Some(|x| f64::from(exp(x as f32))),
        Fun::Erf | Fun::Erfinv => None,
    }
}

fn map<T: Copy + Send + Sync + crate::graph::storage::Pod>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(T) -> T + Copy + Sync,
) -> Result<Data> {
    let src = x.data.to_vec::<T>(x.shape);
    let mut st = out_storage(out)?;
    let dst = st.as_mut_slice::<T>();
    let run = |d: &mut [T], s: &[T]| {
        simd(
            #[inline(always)]
            || d.iter_mut().zip(s).for_each(|(d, &s)| *d = f(s)),
        )
    };
    let chunk = crate::backend::cpu::parallel::MIN_PAR_ELEMS;
    if crate::backend::cpu::parallel::worth_splitting(dst.len()) {
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| run(d, s));
    } else {
        run(dst, &src);
    }
    Ok(Data::contiguous(st, out.shape))
}

/// `g * d/dx f(x)`, with public ops.
fn derivative(f: Fun, x: &Array, y: &Array, g: &Array) -> Result<Array> {
    use crate::ops::unary::exp;
    let c = |v: f64| crate::ops::creation::full(&[], v, x.dtype());
    match f {
        Fun::Log => divide(g, x),
        Fun::Log1p => divide(g, &add(x, &c(1.0)?)?),
        Fun::Exp => multiply(g, y),
        Fun::Erf => {
            let e = exp(&crate::ops::unary::negative(&multiply(x, x)?)?)?;
            multiply(g, &multiply(&e, &c(std::f64::consts::FRAC_2_SQRT_PI)?)?)
        }
        Fun::Erfinv => {
            let e = exp(&multiply(y, y)?)?;
            let half_sqrt_pi = std::f64::consts::PI.sqrt() / 2.0;
            multiply(g, &multiply(&e, &c(half_sqrt_pi)?)?)
        }
    }
}

impl Primitive for MlxMath {
    fn name(&self) -> &'static str {
        match self.0 {
            Fun::Log => "random_log",
            Fun::Log1p => "random_log1p",
            Fun::Exp => "random_exp",
            Fun::Erf => "random_erf",
            Fun::Erfinv => "random_erfinv",
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        match (x.dtype, scalar64(self.0)) {
            // Each function by name, not through a pointer: inlined into
            // the SIMD-dispatched loop, its `mul_add`s are FMA
            // instructions rather than libm's `fmaf` (bit for bit the
            // same: both round once).
            (DType::Float32, _) => match self.0 {
                Fun::Log => map(x, out, f32::ln),
                Fun::Log1p => map(x, out, f32::ln_1p),
                Fun::Exp => map(x, out, exp),
                Fun::Erf => map(x, out, erf),
                Fun::Erfinv => map(x, out, erfinv),
            },
            (DType::Float64, Some(f)) => map::<f64>(x, out, f),
            (d, _) => Err(Error::runtime(
                self.name(),
                format!("no kernel for dtype {d}"),
            )),
        }
    }
    fn vjp(&self, p: &[Array], g: &Array, o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|_| derivative(self.0, &p[0], o, g))
            .collect()
    }
    fn jvp(&self, p: &[Array], t: &[Option<Array>], output: &Array) -> Result<Array> {
        match &t[0] {
            Some(t) => derivative(self.0, &p[0], output, t),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((node(self.0, &inputs[0]), axes[0]))
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_erfinv_are_close_to_the_true_functions() {
        for i in -99..100 {
            let x = i as f32 / 100.0;
            let y = erfinv(x);
            assert!((erf(y) - x).abs() < 4e-7, "{x}: {y}");
            let r = crate::backend::cpu::math::erfinv_f32(x);
            assert!(
                (y - r).abs() <= 4.0 * f32::EPSILON * r.abs().max(1e-30),
                "{x}"
            );
        }
        assert_eq!(erfinv(0.0), 0.0);
        assert!(erfinv(1.5).is_nan());
        assert!((erf(1.0) - 0.842_700_8).abs() < 2e-7);
    }

    #[test]
    fn grads_and_vmap_follow_the_function() -> Result<()> {
        let x = Array::from_slice(&[0.1f32, 0.5, 0.9], &[3])?;
        for f in [Fun::Log, Fun::Log1p, Fun::Exp, Fun::Erf, Fun::Erfinv] {
            let g = crate::transforms::vjp::grad(
                move |xs: &[Array]| {
                    Ok(vec![crate::ops::reduce::sum(
                        &apply(f, &xs[0])?,
                        None,
                        false,
                    )?])
                },
                &[0],
            )(std::slice::from_ref(&x))?;
            let h = 1e-3f32;
            let v = x.to_vec::<f32>()?;
            let g = g[0].to_vec::<f32>()?;
            for (i, &xi) in v.iter().enumerate() {
                let at =
                    |d: f32| -> Result<f32> { apply(f, &Array::scalar(xi + d))?.item::<f32>() };
                let num = (at(h)? - at(-h)?) / (2.0 * h);
                assert!((num - g[i]).abs() < 2e-2 * num.abs().max(1.0), "{f:?} {xi}");
            }
        }
        let m = Array::from_slice(&[0.1f32, 0.2, 0.3, 0.4], &[2, 2])?;
        let f = crate::transforms::vmap::vmap(
            |xs| Ok(vec![apply(Fun::Erfinv, &xs[0])?]),
            &[Some(1)],
            &[Some(0)],
        );
        let want = apply(Fun::Erfinv, &crate::ops::views::swapaxes(&m, 0, 1)?)?;
        assert_eq!(f(&[m])?[0].to_vec::<f32>()?, want.to_vec::<f32>()?);
        Ok(())
    }
}
