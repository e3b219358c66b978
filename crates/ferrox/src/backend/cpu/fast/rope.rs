//! Rotary positional embeddings: each pair of features of a row at
//! position `t` is rotated by `(t + offset) * scale * inv_freq[i]`.

use super::{RowFloat, with_row_float};
use crate::backend::cpu::copy::ensure_contiguous;
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::MIN_PAR_ELEMS;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use rayon::prelude::*;

/// The parameters of one rotary embedding.
#[derive(Debug, Clone, Copy)]
pub struct RopeSpec {
    /// Leading features rotated (even, at most the last dimension).
    pub dims: usize,
    /// Rotate consecutive pairs `(2i, 2i+1)` instead of `(i, i + dims/2)`.
    pub traditional: bool,
    /// Frequencies `base^(-i / (dims/2))` when no explicit ones are given.
    pub base: f32,
    /// Scale of the positions.
    pub scale: f32,
    /// `false` rotates by the negative angle (the inverse, i.e. the vjp).
    pub forward: bool,
}

/// Applies the rotation to `x` (`[B, ..., T, D]`), with `offset` an int32
/// scalar or one offset per batch element and optional `freqs`
/// (`dims / 2` periods, used instead of `base`).
pub fn rope(
    x: &Operand<'_>,
    offset: &Operand<'_>,
    freqs: Option<&Operand<'_>>,
    spec: RopeSpec,
    out: OutSpec<'_>,
) -> Result<Data> {
    let nd = x.shape.len();
    if nd < 3 {
        return Err(Error::shape(
            "rope",
            format!("input shape {:?} has fewer than 3 dimensions", x.shape),
        ));
    }
    let (b, t, d) = (x.shape[0], x.shape[nd - 2], x.shape[nd - 1]);
    let half = spec.dims / 2;
    if spec.dims > d || spec.dims % 2 != 0 {
        return Err(Error::value(
            "rope",
            format!("dims {} for rows of {d}", spec.dims),
        ));
    }
    let offsets: Vec<i64> = match offset.dtype {
        DType::Int32 => offset
            .data
            .to_vec::<i32>(offset.shape)
            .into_iter()
            .map(i64::from)
            .collect(),
        d => {
            return Err(Error::dtype(
                "rope",
                format!("internal: offset of dtype {d}"),
            ));
        }
    };
    if offsets.len() != 1 && offsets.len() != b {
        return Err(Error::shape(
            "rope",
            format!("{} offsets for a batch of {b}", offsets.len()),
        ));
    }
    let inv_freq: Vec<f32> = match freqs {
        Some(f) => {
            let v = super::F32View::of("rope", f)?;
            let step = v.strides.last().copied().unwrap_or(1);
            (0..half)
                .map(|i| 1.0 / v.data[v.offset + i * step])
                .collect()
        }
        None => {
            let k = spec.base.ln() / half as f32;
            (0..half).map(|i| (-(i as f32) * k).exp()).collect()
        }
    };
    // One cos/sin table per distinct offset: [T, half] each.
    let tables: Vec<(Vec<f32>, Vec<f32>)> = offsets
        .iter()
        .map(|&o| {
            let mut cos = vec![0f32; t * half];
            let mut sin = vec![0f32; t * half];
            for ti in 0..t {
                let pos = (ti as i64 + o) as f32 * spec.scale;
                for (i, &f) in inv_freq.iter().enumerate() {
                    let (s, c) = (pos * f).sin_cos();
                    cos[ti * half + i] = c;
                    sin[ti * half + i] = if spec.forward { s } else { -s };
                }
            }
            (cos, sin)
        })
        .collect();
    let xs = ensure_contiguous(x)?;
    let n: usize = x.shape.iter().product();
    let mut st = out_storage(out)?;
    if n == 0 {
        return Ok(Data::contiguous(st, out.shape));
    }
    let per_batch = n / b.max(1);
    let plane = t * d;
    with_row_float!("rope", x.dtype, T => {
        let src = &xs.raw::<T>()[xs.offset..xs.offset + n];
        let dst = st.as_mut_slice::<T>();
        let work = |(p, (s, o)): (usize, (&[T], &mut [T]))| {
            let bi = (p * plane) / per_batch;
            let (cos, sin) = &tables[if tables.len() == 1 { 0 } else { bi }];
            let mut xs = vec![0f32; d];
            let mut ys = vec![0f32; d];
            for (ti, (sr, orow)) in s.chunks_exact(d).zip(o.chunks_exact_mut(d)).enumerate() {
                T::load(sr, &mut xs);
                let (c, sn) = (&cos[ti * half..(ti + 1) * half], &sin[ti * half..(ti + 1) * half]);
                rotate(&xs, &mut ys, c, sn, spec.traditional);
                ys[spec.dims..].copy_from_slice(&xs[spec.dims..]);
                T::store(&ys, orow);
            }
        };
        let planes = src.chunks_exact(plane).zip(dst.chunks_exact_mut(plane)).enumerate();
        if n >= 2 * MIN_PAR_ELEMS {
            src.par_chunks_exact(plane).zip(dst.par_chunks_exact_mut(plane)).enumerate().for_each(work);
        } else {
            planes.for_each(work);
        }
        Ok(())
    })?;
    Ok(Data::contiguous(st, out.shape))
}

/// Rotates the leading `2 * cos.len()` features of `xs` into `ys`.
#[inline(always)]
fn rotate(xs: &[f32], ys: &mut [f32], cos: &[f32], sin: &[f32], traditional: bool) {
    let half = cos.len();
    if traditional {
        for i in 0..half {
            let (x1, x2) = (xs[2 * i], xs[2 * i + 1]);
            ys[2 * i] = x1 * cos[i] - x2 * sin[i];
            ys[2 * i + 1] = x1 * sin[i] + x2 * cos[i];
        }
    } else {
        for i in 0..half {
            let (x1, x2) = (xs[i], xs[i + half]);
            ys[i] = x1 * cos[i] - x2 * sin[i];
            ys[i + half] = x1 * sin[i] + x2 * cos[i];
        }
    }
}
