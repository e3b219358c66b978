//! RMS and layer normalisation over the last axis: one read of each row
//! from memory (the second sweep hits the row in cache) and one write.

use super::{RowFloat, lanes_sum, with_row_float};
use crate::backend::cpu::copy::ensure_contiguous;
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::MIN_PAR_ELEMS;
use crate::backend::cpu::reduce::dispatch;
use crate::backend::cpu::stream_store::{store_fence, stream_copy, worth_streaming};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// Which normalisation a row gets.
#[derive(Clone, Copy)]
enum Norm {
    /// `x / sqrt(mean(x^2) + eps)`.
    Rms,
    /// `(x - mean(x)) / sqrt(var(x) + eps)`.
    Layer,
}

/// `x * rsqrt(mean(x^2, -1) + eps) * weight` of a float input, the weight
/// (if any) of length `x.shape[-1]`.
pub fn rms_norm(
    x: &Operand<'_>,
    weight: Option<&Operand<'_>>,
    eps: f32,
    out: OutSpec<'_>,
) -> Result<Data> {
    normalize("rms_norm", Norm::Rms, x, weight, None, eps, out)
}

/// `(x - mean) * rsqrt(var + eps) * weight + bias` over the last axis.
pub fn layer_norm(
    x: &Operand<'_>,
    weight: Option<&Operand<'_>>,
    bias: Option<&Operand<'_>>,
    eps: f32,
    out: OutSpec<'_>,
) -> Result<Data> {
    normalize("layer_norm", Norm::Layer, x, weight, bias, eps, out)
}

/// A length-`d` parameter vector as `f32`, or `None`.
fn param(name: &str, p: Option<&Operand<'_>>, d: usize) -> Result<Option<Vec<f32>>> {
    let Some(p) = p else { return Ok(None) };
    let v = super::F32View::of(name, p)?;
    let n: usize = p.shape.iter().product();
    if n != d {
        return Err(Error::shape(
            name,
            format!(
                "internal: a parameter of shape {:?} for rows of {d}",
                p.shape
            ),
        ));
    }
    let step = v.strides.last().copied().unwrap_or(1);
    Ok(Some((0..d).map(|i| v.data[v.offset + i * step]).collect()))
}

fn normalize(
    name: &str,
    norm: Norm,
    x: &Operand<'_>,
    weight: Option<&Operand<'_>>,
    bias: Option<&Operand<'_>>,
    eps: f32,
    out: OutSpec<'_>,
) -> Result<Data> {
    let d = x.shape.last().copied().unwrap_or(1);
    let weight = param(name, weight, d)?;
    let bias = param(name, bias, d)?;
    let xs = ensure_contiguous(x)?;
    let mut st = out_storage(out)?;
    let n: usize = x.shape.iter().product();
    if n == 0 || d == 0 {
        return Ok(Data::contiguous(st, out.shape));
    }
    let params = Params {
        norm,
        eps,
        weight: weight.as_deref(),
        bias: bias.as_deref(),
    };
    with_row_float!(name, x.dtype, T => {
        let src = &xs.raw::<T>()[xs.offset..xs.offset + n];
        let dst = st.as_mut_slice::<T>();
        let stream = worth_streaming(std::mem::size_of_val(dst));
        rows::<T>(src, dst, d, &params, stream);
        Ok(())
    })?;
    Ok(Data::contiguous(st, out.shape))
}

struct Params<'a> {
    norm: Norm,
    eps: f32,
    weight: Option<&'a [f32]>,
    bias: Option<&'a [f32]>,
}

/// Normalises every row of `d` elements of `src` into `dst`, in tasks of
/// at least `MIN_PAR_ELEMS` elements. With `stream` (for an output larger
/// than the last-level cache) rows are written with non-temporal stores,
/// each computed into a cached scratch row and then streamed out: a plain
/// store would first read every output line, a third more memory traffic
/// for this bandwidth-bound kernel.
fn rows<T: RowFloat>(src: &[T], dst: &mut [T], d: usize, p: &Params<'_>, stream: bool) {
    let chunk = (MIN_PAR_ELEMS / d).max(1) * d;
    let work = |(src, dst): (&[T], &mut [T])| {
        dispatch(Rows {
            src,
            dst,
            d,
            p,
            stream,
        })
    };
    if src.len() >= 2 * MIN_PAR_ELEMS && rayon::current_num_threads() > 1 {
        src.par_chunks(chunk)
            .zip(dst.par_chunks_mut(chunk))
            .for_each(work);
    } else {
        work((src, dst));
    }
}

/// One task's rows, compiled for the best instruction set (the loops are
/// inlined into pulp's target-feature entry point through `with_simd`).
/// `f32` rows are read and written in place; half floats go through
/// `f32` scratch rows.
struct Rows<'a, T> {
    src: &'a [T],
    dst: &'a mut [T],
    d: usize,
    p: &'a Params<'a>,
    /// Write rows with non-temporal stores (see [`rows`]).
    stream: bool,
}

impl<T: RowFloat> WithSimd for Rows<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (src, dst, d, p, stream) = (self.src, self.dst, self.d, self.p, self.stream);
        if let Some(s) = T::as_f32(src)
            && let Some(o) = T::as_f32_mut(dst)
        {
            if stream {
                let mut scratch = vec![0f32; d];
                for (x, y) in s.chunks_exact(d).zip(o.chunks_exact_mut(d)) {
                    row(x, &mut scratch, p);
                    stream_copy(y, &scratch);
                }
                store_fence();
            } else {
                for (x, y) in s.chunks_exact(d).zip(o.chunks_exact_mut(d)) {
                    row(x, y, p);
                }
            }
            return;
        }
        let mut xs = vec![0f32; d];
        let mut ys = vec![0f32; d];
        // Any `d` values of `T` serve as the scratch row's initial contents.
        let mut scratch = match src.get(..d) {
            Some(first) if stream => first.to_vec(),
            _ => vec![],
        };
        for (s, o) in src.chunks_exact(d).zip(dst.chunks_exact_mut(d)) {
            T::load(s, &mut xs);
            row(&xs, &mut ys, p);
            if stream {
                T::store(&ys, &mut scratch);
                stream_copy(o, &scratch);
            } else {
                T::store(&ys, o);
            }
        }
        if stream {
            store_fence();
        }
    }
}

/// One row: statistics in `f32` with eight partial sums (vectorisable),
/// then the scaled write.
#[inline(always)]
fn row(xs: &[f32], ys: &mut [f32], p: &Params<'_>) {
    let d = xs.len() as f32;
    let (shift, inv) = match p.norm {
        Norm::Rms => {
            let ss = lanes_sum(xs, |x| x * x);
            (0.0, 1.0 / (ss / d + p.eps).sqrt())
        }
        Norm::Layer => {
            let mean = lanes_sum(xs, |x| x) / d;
            let var = lanes_sum(xs, |x| (x - mean) * (x - mean)) / d;
            (mean, 1.0 / (var + p.eps).sqrt())
        }
    };
    match (p.weight, p.bias) {
        (Some(w), Some(b)) => {
            for (((y, &x), &w), &b) in ys.iter_mut().zip(xs).zip(w).zip(b) {
                *y = (x - shift) * inv * w + b;
            }
        }
        (Some(w), None) => {
            for ((y, &x), &w) in ys.iter_mut().zip(xs).zip(w) {
                *y = (x - shift) * inv * w;
            }
        }
        (None, Some(b)) => {
            for ((y, &x), &b) in ys.iter_mut().zip(xs).zip(b) {
                *y = (x - shift) * inv + b;
            }
        }
        (None, None) => {
            for (y, &x) in ys.iter_mut().zip(xs) {
                *y = (x - shift) * inv;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_sum_matches_a_plain_sum() {
        let xs: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let plain: f32 = xs.iter().map(|x| x * x).sum();
        assert!((lanes_sum(&xs, |x| x * x) - plain).abs() < 1e-3);
    }

    #[test]
    fn streamed_rows_equal_cached_rows_for_f32_and_half_floats() {
        let (n, d) = (300, 37);
        let xs: Vec<f32> = (0..n * d)
            .map(|i| ((i * 7919) % 101) as f32 * 0.1 - 5.0)
            .collect();
        let w: Vec<f32> = (0..d).map(|i| 0.5 + i as f32 * 0.01).collect();
        for norm in [Norm::Rms, Norm::Layer] {
            let p = Params {
                norm,
                eps: 1e-5,
                weight: Some(&w),
                bias: None,
            };
            let (mut plain, mut streamed) = (vec![0f32; n * d], vec![0f32; n * d]);
            rows(&xs, &mut plain, d, &p, false);
            rows(&xs, &mut streamed, d, &p, true);
            assert_eq!(plain, streamed);
            let hs: Vec<half::bf16> = xs.iter().map(|&x| half::bf16::from_f32(x)).collect();
            let zero = half::bf16::from_f32(0.0);
            let (mut plain, mut streamed) = (vec![zero; n * d], vec![zero; n * d]);
            rows(&hs, &mut plain, d, &p, false);
            rows(&hs, &mut streamed, d, &p, true);
            assert_eq!(plain, streamed);
        }
    }

    #[test]
    fn layer_row_has_zero_mean_and_unit_variance() {
        let xs: Vec<f32> = (0..16).map(|i| (i * i) as f32).collect();
        let mut ys = vec![0f32; 16];
        let p = Params {
            norm: Norm::Layer,
            eps: 0.0,
            weight: None,
            bias: None,
        };
        row(&xs, &mut ys, &p);
        let mean: f32 = ys.iter().sum::<f32>() / 16.0;
        let var: f32 = ys.iter().map(|y| y * y).sum::<f32>() / 16.0;
        assert!(
            mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
            "{mean} {var}"
        );
    }
}
