//! Transform rules of the convolution (kept beside `mod.rs`; its
//! `Convolution` primitive's rules call these), expressed with existing ops
//! so that they are themselves differentiable and batchable.
//!
//! Notation (channels-last, MLX's layout): input `x` is `[N, S..., C_in]`,
//! weight `w` is `[C_out, K..., C_in / G]`, output and cotangent `g` are
//! `[N, O..., C_out]`, with stride `s`, padding `p`, dilation `d` per
//! spatial dimension and `G` groups:
//!
//! `y[n, o, co] = sum_{k, ci} x[n, o * s + k * d - p, grp(co) * C_in/G + ci] * w[co, k, ci]`.
//!
//! - Input cotangent (a transposed convolution): `g` with `s - 1` zeros
//!   inserted between its elements, padded by `(K - 1) * d - p` before and
//!   `S + p - (O - 1) * s - 1` after (negative amounts crop), correlated
//!   with stride 1 and dilation `d` against the spatially flipped weight
//!   whose in- and out-channels are swapped within each group.
//! - Weight cotangent: a convolution with the roles of the batch and the
//!   channels swapped: the input seen as `[C_in / G, S..., G * N]`, the
//!   cotangent as a weight `[C_out, O..., N]`, stride `d`, dilation `s`,
//!   padding `p` and `G` groups; the result `[C_in / G, K'..., C_out]`
//!   (`K' >= K`) is cropped to `K` and transposed.

use super::Convolution;
use crate::error::Result;
use crate::graph::array::Array;
use crate::ops::grad_helpers::{batch_front, reshape_to};

/// A convolution node with the given parameters (any spatial rank).
fn conv(
    x: &Array,
    w: &Array,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    groups: usize,
) -> Result<Array> {
    super::convolution_nd(x, w, stride, padding, dilation, groups)
}

impl Convolution {
    fn apply(&self, x: &Array, w: &Array) -> Result<Array> {
        conv(
            x,
            w,
            &self.stride,
            &self.padding,
            &self.dilation,
            self.groups,
        )
    }

    /// The cotangent of the input.
    fn input_cotangent(&self, x: &Array, w: &Array, g: &Array) -> Result<Array> {
        let nd = self.stride.len();
        if x.size() == 0 || g.size() == 0 || w.size() == 0 {
            return crate::ops::creation::zeros_like(x);
        }
        let groups = self.groups;
        let (c_in, c_out) = (x.shape()[nd + 1], w.shape()[0]);
        // Insert `s - 1` zeros between the cotangent's elements.
        let mut gd = g.clone();
        for i in 0..nd {
            let s = self.stride[i];
            if s == 1 {
                continue;
            }
            let ax = i + 1;
            let o = gd.shape()[ax];
            let e = crate::ops::views::expand_dims(&gd, &[ax as isize + 1])?;
            let mut widths = vec![(0, 0); e.ndim()];
            widths[ax + 1] = (0, s - 1);
            let padded =
                crate::ops::join::pad(&e, &widths, crate::ops::join::PadMode::Constant(0.0))?;
            let mut shape = gd.shape().to_vec();
            shape[ax] = o * s;
            let merged = reshape_to(&padded, &shape)?;
            shape[ax] = (o - 1) * s + 1;
            gd = crop_to(&merged, &shape)?;
        }
        // Pad (or crop) so that a stride-1 correlation gives `S` positions.
        let mut lo = vec![0isize; nd + 2];
        let mut hi = vec![0isize; nd + 2];
        for i in 0..nd {
            let (s, p, d) = (
                self.stride[i] as isize,
                self.padding[i] as isize,
                self.dilation[i] as isize,
            );
            let k = w.shape()[i + 1] as isize;
            let in_len = x.shape()[i + 1] as isize;
            let o = g.shape()[i + 1] as isize;
            lo[i + 1] = (k - 1) * d - p;
            hi[i + 1] = in_len + p - (o - 1) * s - 1;
        }
        let gp = pad_or_crop(&gd, &lo, &hi)?;
        // Weight: flip the kernel, swap in/out channels within each group.
        let cog = c_out / groups;
        let mut grouped = vec![groups, cog];
        grouped.extend_from_slice(&w.shape()[1..]);
        let wg = reshape_to(w, &grouped)?;
        let nd_w = wg.ndim();
        let mut start = vec![0isize; nd_w];
        let mut stop: Vec<isize> = wg.shape().iter().map(|&v| v as isize).collect();
        let mut steps = vec![1isize; nd_w];
        for i in 0..nd {
            // Python's `[::-1]`: from the last element to before the first.
            start[i + 2] = -1;
            stop[i + 2] = -stop[i + 2] - 1;
            steps[i + 2] = -1;
        }
        let flipped = crate::ops::views::slice(&wg, &start, &stop, &steps)?;
        let mut perm = vec![0, nd + 2];
        perm.extend(2..nd + 2);
        perm.push(1);
        let wt = crate::ops::views::transpose(&flipped, Some(&perm))?;
        let mut wt_shape = vec![c_in];
        wt_shape.extend_from_slice(&w.shape()[1..nd + 1]);
        wt_shape.push(cog);
        let wt = reshape_to(&wt, &wt_shape)?;
        let ones = vec![1; nd];
        conv(&gp, &wt, &ones, &vec![0; nd], &self.dilation, groups)
    }

    /// The cotangent of the weight.
    fn weight_cotangent(&self, x: &Array, w: &Array, g: &Array) -> Result<Array> {
        let nd = self.stride.len();
        if x.size() == 0 || g.size() == 0 || w.size() == 0 {
            return crate::ops::creation::zeros_like(w);
        }
        let groups = self.groups;
        let n = x.shape()[0];
        let c_in = x.shape()[nd + 1];
        let cig = c_in / groups;
        // x: [N, S..., C_in] -> [N, S..., G, cig] -> [cig, S..., G, N] -> [cig, S..., G*N].
        let mut split = x.shape()[..nd + 1].to_vec();
        split.extend([groups, cig]);
        let xs = reshape_to(x, &split)?;
        let mut perm = vec![nd + 2];
        perm.extend(1..nd + 1);
        perm.extend([nd + 1, 0]);
        let xt = crate::ops::views::transpose(&xs, Some(&perm))?;
        let mut xt_shape = vec![cig];
        xt_shape.extend_from_slice(&x.shape()[1..nd + 1]);
        xt_shape.push(groups * n);
        let xt = reshape_to(&xt, &xt_shape)?;
        // g: [N, O..., C_out] -> [C_out, O..., N].
        let mut gperm = vec![nd + 1];
        gperm.extend(1..nd + 1);
        gperm.push(0);
        let gt = crate::ops::views::transpose(g, Some(&gperm))?;
        let r = conv(
            &xt,
            &gt,
            &self.dilation,
            &self.padding,
            &self.stride,
            groups,
        )?;
        // [cig, K'..., C_out] -> crop to K -> [C_out, K..., cig].
        let mut want = r.shape().to_vec();
        want[1..nd + 1].copy_from_slice(&w.shape()[1..nd + 1]);
        let r = crop_to(&r, &want)?;
        let mut back = vec![nd + 1];
        back.extend(1..nd + 1);
        back.push(0);
        crate::ops::views::transpose(&r, Some(&back))
    }
}

/// `x[:shape[0], :shape[1], ...]` (a view; `x` when nothing is cut).
fn crop_to(x: &Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let start = vec![0isize; shape.len()];
    let stop: Vec<isize> = shape.iter().map(|&v| v as isize).collect();
    let steps = vec![1isize; shape.len()];
    crate::ops::views::slice(x, &start, &stop, &steps)
}

/// Pads each axis by `lo[i]` zeros before and `hi[i]` after; negative
/// amounts remove elements instead.
fn pad_or_crop(x: &Array, lo: &[isize], hi: &[isize]) -> Result<Array> {
    let mut y = x.clone();
    if lo.iter().chain(hi).any(|&v| v < 0) {
        let start: Vec<isize> = lo.iter().map(|&v| (-v).max(0)).collect();
        let stop: Vec<isize> = x
            .shape()
            .iter()
            .zip(hi)
            .map(|(&d, &h)| d as isize - (-h).max(0))
            .collect();
        let steps = vec![1isize; lo.len()];
        y = crate::ops::views::slice(&y, &start, &stop, &steps)?;
    }
    if lo.iter().chain(hi).any(|&v| v > 0) {
        let widths: Vec<(usize, usize)> = lo
            .iter()
            .zip(hi)
            .map(|(&l, &h)| (l.max(0) as usize, h.max(0) as usize))
            .collect();
        y = crate::ops::join::pad(&y, &widths, crate::ops::join::PadMode::Constant(0.0))?;
    }
    Ok(y)
}

/// The result of a vmap over zero examples: an empty batch of outputs of
/// the right shape (`wb` has its batch axis in front).
fn empty_batch(
    op: &Convolution,
    x: &Array,
    xa: Option<usize>,
    wb: &Array,
) -> Result<(Array, Option<usize>)> {
    let mut xe = x.shape().to_vec();
    if let Some(ax) = xa {
        xe.remove(ax);
    }
    let xe = crate::ops::creation::zeros(&xe, x.dtype())?;
    let we = crate::ops::creation::zeros(&wb.shape()[1..], wb.dtype())?;
    let mut shape = vec![0];
    shape.extend_from_slice(op.apply(&xe, &we)?.shape());
    Ok((crate::ops::creation::zeros(&shape, x.dtype())?, Some(0)))
}

/// Cotangents of `x` and/or `w` (argnums 0 and 1).
pub(super) fn vjp(
    op: &Convolution,
    primals: &[Array],
    g: &Array,
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let (x, w) = (&primals[0], &primals[1]);
    argnums
        .iter()
        .map(|&i| match i {
            0 => op.input_cotangent(x, w, g),
            _ => op.weight_cotangent(x, w, g),
        })
        .collect()
}

/// The convolution is bilinear: `conv(t_x, w) + conv(x, t_w)`.
pub(super) fn jvp(
    op: &Convolution,
    primals: &[Array],
    tangents: &[Option<Array>],
    output: &Array,
) -> Result<Array> {
    let (x, w) = (&primals[0], &primals[1]);
    let tx = match &tangents[0] {
        Some(t) => Some(op.apply(t, w)?),
        None => None,
    };
    let tw = match tangents.get(1) {
        Some(Some(t)) => Some(op.apply(x, t)?),
        _ => None,
    };
    match crate::ops::grad_helpers::sum_terms([tx, tw])? {
        Some(t) => Ok(t),
        None => crate::ops::creation::zeros_like(output),
    }
}

/// Batching: a batched input alone folds into the convolution's batch
/// dimension; a batched weight folds into the groups (the input, batched
/// or broadcast, gets `B` times the channels).
pub(super) fn vmap(
    op: &Convolution,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Array, Option<usize>)> {
    let nd = op.stride.len();
    let (x, w) = (&inputs[0], &inputs[1]);
    match (axes[0], axes[1]) {
        (None, None) => Ok((op.apply(x, w)?, None)),
        (Some(ax), None) => {
            let xb = batch_front(x, Some(ax))?;
            let b = xb.shape()[0];
            let mut merged = vec![b * xb.shape()[1]];
            merged.extend_from_slice(&xb.shape()[2..]);
            let y = op.apply(&reshape_to(&xb, &merged)?, w)?;
            let mut split = vec![b, xb.shape()[1]];
            split.extend_from_slice(&y.shape()[1..]);
            Ok((reshape_to(&y, &split)?, Some(0)))
        }
        (xa, Some(wa)) => {
            let wb = batch_front(w, Some(wa))?;
            let b = wb.shape()[0];
            if b == 0 {
                return empty_batch(op, x, xa, &wb);
            }
            // x -> [N, S..., B, C_in] -> [N, S..., B * C_in].
            let xc = match xa {
                Some(ax) => crate::ops::views::moveaxis(x, ax as isize, nd as isize + 1)?,
                None => {
                    let e = crate::ops::views::expand_dims(x, &[nd as isize + 1])?;
                    let mut shape = e.shape().to_vec();
                    shape[nd + 1] = b;
                    crate::ops::views::broadcast_to(&e, &shape)?
                }
            };
            let mut xshape = xc.shape()[..nd + 1].to_vec();
            xshape.push(b * xc.shape()[nd + 2]);
            let xc = reshape_to(&xc, &xshape)?;
            let mut wshape = vec![b * wb.shape()[1]];
            wshape.extend_from_slice(&wb.shape()[2..]);
            let wc = reshape_to(&wb, &wshape)?;
            let y = conv(
                &xc,
                &wc,
                &op.stride,
                &op.padding,
                &op.dilation,
                op.groups * b,
            )?;
            let mut yshape = y.shape()[..nd + 1].to_vec();
            yshape.extend([b, wb.shape()[1]]);
            Ok((reshape_to(&y, &yshape)?, Some(nd + 1)))
        }
    }
}
