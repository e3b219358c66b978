//! Scaled dot-product attention, forward: tiled with an online softmax
//! (flash-attention style), so the `T_q x T_kv` score matrix never exists;
//! only one `rows x keys` tile per task does.
//!
//! Grouped-query attention: the query heads that share a key/value head are
//! processed together as one block of rows (row `r` is query `r / n_rep` of
//! head `kv_head * n_rep + r % n_rep`), so each key/value tile is read once
//! for the whole group and a decode step (one query) is still a matrix
//! product. Masked scores are [`MASKED`] (the float32 minimum, as MLX
//! replaces them by the dtype's minimum): a row with every key masked
//! averages the values uniformly instead of giving NaN.

use super::{F32View, lanes_max, lanes_sum};
use crate::backend::cpu::math::exp_f32;
use crate::backend::cpu::matmul::{Epilogue, MatMut, MatRef, gemm_product};
use crate::backend::cpu::reduce::dispatch;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// The score of a masked position.
pub const MASKED: f32 = f32::MIN;

/// Query rows per tile.
pub(super) const BLOCK_ROWS: usize = 64;
/// Keys per tile.
pub(super) const BLOCK_KEYS: usize = 128;

/// What the attention computes besides its inputs.
#[derive(Debug, Clone, Copy)]
pub struct AttentionSpec {
    /// Multiplies the queries.
    pub scale: f32,
    /// Lower-right aligned causal mask: query `i` sees keys `j <= i + T_kv - T_q`.
    pub causal: bool,
}

/// The evaluated inputs of an attention node, in the node's input order.
pub struct AttentionOperands<'a> {
    /// `[B, N_q, T_q, D]`.
    pub q: &'a Operand<'a>,
    /// `[B, N_kv, T_kv, D]`.
    pub k: &'a Operand<'a>,
    /// `[B, N_kv, T_kv, D_v]`.
    pub v: &'a Operand<'a>,
    /// Boolean or additive, broadcastable to `[B, N_q, T_q, T_kv]`.
    pub mask: Option<&'a Operand<'a>>,
    /// One logit per query head.
    pub sinks: Option<&'a Operand<'a>>,
}

/// A mask as additive `f32` scores with broadcast strides over
/// `[B, N_q, T_q, T_kv]` (booleans become `0` or [`MASKED`]).
pub(super) struct MaskTable {
    values: Vec<f32>,
    strides: [usize; 4],
}

impl MaskTable {
    fn new(op: &Operand<'_>, full: [usize; 4]) -> Result<MaskTable> {
        let values: Vec<f32> = match op.dtype {
            DType::Bool => op
                .data
                .to_vec::<bool>(op.shape)
                .into_iter()
                .map(|keep| if keep { 0.0 } else { MASKED })
                .collect(),
            _ => op_to_f32_rowmajor(op)?,
        };
        if op.shape.len() > 4 {
            return Err(Error::shape(
                "scaled_dot_product_attention",
                format!("mask of shape {:?} has more than 4 dimensions", op.shape),
            ));
        }
        let mut shape = [1usize; 4];
        shape[4 - op.shape.len()..].copy_from_slice(op.shape);
        let mut strides = [0usize; 4];
        let mut acc = 1usize;
        for ax in (0..4).rev() {
            if shape[ax] != 1 && shape[ax] != full[ax] {
                return Err(Error::shape(
                    "scaled_dot_product_attention",
                    format!(
                        "mask of shape {:?} does not broadcast to {full:?}",
                        op.shape
                    ),
                ));
            }
            strides[ax] = if shape[ax] == 1 { 0 } else { acc };
            acc *= shape[ax];
        }
        Ok(MaskTable { values, strides })
    }

    #[inline(always)]
    fn row(&self, b: usize, h: usize, i: usize) -> (&[f32], usize) {
        let base = b * self.strides[0] + h * self.strides[1] + i * self.strides[2];
        (&self.values[base..], self.strides[3])
    }
}

/// Rows `j0..j0+n` of head `h` of batch `b` of a `[B, H, T, C]` view, as
/// an `n x cols` matrix view or (`transposed`) its `cols x n` transpose.
fn rows_view<'v>(
    x: &'v F32View<'_>,
    cols: usize,
    b: usize,
    h: usize,
    j0: usize,
    n: usize,
    transposed: bool,
) -> Result<MatRef<'v, f32>> {
    let (st, sc) = (x.strides[2], x.strides[3]);
    let off = x.offset + b * x.strides[0] + h * x.strides[1] + j0 * st;
    if transposed {
        MatRef::new(&x.data, off, (cols, n), (sc, st))
    } else {
        MatRef::new(&x.data, off, (n, cols), (st, sc))
    }
}

/// A float operand as a row-major `f32` vector.
fn op_to_f32_rowmajor(op: &Operand<'_>) -> Result<Vec<f32>> {
    let v = F32View::of("scaled_dot_product_attention", op)?;
    let n: usize = op.shape.iter().product();
    let mut out = Vec::with_capacity(n);
    crate::graph::layout::for_each_offset(
        op.shape,
        &v.strides.iter().map(|&s| s as isize).collect::<Vec<_>>(),
        v.offset,
        |o| out.push(v.data[o]),
    );
    Ok(out)
}

/// Sizes and views shared by the forward and backward kernels.
pub(super) struct Geometry<'a> {
    pub b: usize,
    pub nq: usize,
    pub nkv: usize,
    pub tq: usize,
    pub tk: usize,
    pub d: usize,
    pub dv: usize,
    pub q: F32View<'a>,
    pub k: F32View<'a>,
    pub v: F32View<'a>,
    pub mask: Option<MaskTable>,
    pub sinks: Option<Vec<f32>>,
    pub spec: AttentionSpec,
}

impl<'a> Geometry<'a> {
    pub(super) fn new(ops: &AttentionOperands<'a>, spec: AttentionSpec) -> Result<Geometry<'a>> {
        let name = "scaled_dot_product_attention";
        let dims = |op: &Operand<'_>| -> Result<[usize; 4]> {
            <[usize; 4]>::try_from(op.shape).map_err(|_| {
                Error::shape(name, format!("internal: an input of shape {:?}", op.shape))
            })
        };
        let [b, nq, tq, d] = dims(ops.q)?;
        let [_, nkv, tk, _] = dims(ops.k)?;
        let [_, _, _, dv] = dims(ops.v)?;
        if nkv == 0 || nq % nkv != 0 {
            return Err(Error::shape(
                name,
                format!("{nq} query heads for {nkv} key heads"),
            ));
        }
        let mask = ops
            .mask
            .map(|m| MaskTable::new(m, [b, nq, tq, tk]))
            .transpose()?;
        let sinks = ops.sinks.map(|s| op_to_f32_rowmajor(s)).transpose()?;
        if sinks.as_ref().is_some_and(|s| s.len() != nq) {
            return Err(Error::shape(name, format!("sinks for {nq} heads expected")));
        }
        Ok(Geometry {
            b,
            nq,
            nkv,
            tq,
            tk,
            d,
            dv,
            q: F32View::of(name, ops.q)?,
            k: F32View::of(name, ops.k)?,
            v: F32View::of(name, ops.v)?,
            mask,
            sinks,
            spec,
        })
    }

    pub(super) fn n_rep(&self) -> usize {
        self.nq / self.nkv
    }

    /// Rows of a key/value group: `n_rep * T_q`.
    pub(super) fn group_rows(&self) -> usize {
        self.n_rep() * self.tq
    }

    /// `(head, query)` of group row `r` of key/value head `kvh`.
    #[inline(always)]
    pub(super) fn row_of(&self, kvh: usize, r: usize) -> (usize, usize) {
        let n = self.n_rep();
        (kvh * n + r % n, r / n)
    }

    /// `T_kv - T_q`: the causal diagonal's offset.
    pub(super) fn causal_offset(&self) -> isize {
        self.tk as isize - self.tq as isize
    }

    /// Whether rows `r0..r1` of a group see none of keys `j0..` (causal),
    /// so the key block can be skipped. Never true when some row sees no
    /// key at all: such rows average over every key.
    pub(super) fn skips(&self, r0: usize, r1: usize, j0: usize) -> bool {
        if !self.spec.causal {
            return false;
        }
        let n = self.n_rep();
        let (i_min, i_max) = ((r0 / n) as isize, ((r1 - 1) / n) as isize);
        let off = self.causal_offset();
        i_min + off >= 0 && (j0 as isize) > i_max + off
    }

    /// Copies `scale * q` of group rows `r0..r1` into `dst` (rows of `d`).
    pub(super) fn load_queries(&self, b: usize, kvh: usize, r0: usize, r1: usize, dst: &mut [f32]) {
        let s = self.spec.scale;
        for (r, row) in (r0..r1).zip(dst.chunks_exact_mut(self.d)) {
            let (h, i) = self.row_of(kvh, r);
            let base = self.q.offset
                + b * self.q.strides[0]
                + h * self.q.strides[1]
                + i * self.q.strides[2];
            let st = self.q.strides[3];
            for (c, x) in row.iter_mut().enumerate() {
                *x = self.q.data[base + c * st] * s;
            }
        }
    }

    /// `K[b, kvh, j0..j0+n]^T` as a `d x n` matrix view.
    pub(super) fn keys_t(
        &self,
        b: usize,
        kvh: usize,
        j0: usize,
        n: usize,
    ) -> Result<MatRef<'_, f32>> {
        rows_view(&self.k, self.d, b, kvh, j0, n, true)
    }

    /// `K[b, kvh, j0..j0+n]` as an `n x d` matrix view.
    pub(super) fn keys(
        &self,
        b: usize,
        kvh: usize,
        j0: usize,
        n: usize,
    ) -> Result<MatRef<'_, f32>> {
        rows_view(&self.k, self.d, b, kvh, j0, n, false)
    }

    /// `V[b, kvh, j0..j0+n]` as an `n x d_v` matrix view.
    pub(super) fn values(
        &self,
        b: usize,
        kvh: usize,
        j0: usize,
        n: usize,
    ) -> Result<MatRef<'_, f32>> {
        rows_view(&self.v, self.dv, b, kvh, j0, n, false)
    }

    /// `V[b, kvh, j0..j0+n]^T` as a `d_v x n` matrix view.
    pub(super) fn values_t(
        &self,
        b: usize,
        kvh: usize,
        j0: usize,
        n: usize,
    ) -> Result<MatRef<'_, f32>> {
        rows_view(&self.v, self.dv, b, kvh, j0, n, true)
    }

    /// Applies the causal and array masks to a `rows x n` score tile of
    /// group rows `r0..` and keys `j0..j0+n`.
    pub(super) fn mask_tile(
        &self,
        b: usize,
        kvh: usize,
        r0: usize,
        j0: usize,
        n: usize,
        tile: &mut [f32],
    ) {
        let off = self.causal_offset();
        for (ri, row) in tile.chunks_exact_mut(n).enumerate() {
            let (h, i) = self.row_of(kvh, r0 + ri);
            if let Some(m) = &self.mask {
                let (mrow, step) = m.row(b, h, i);
                for (c, s) in row.iter_mut().enumerate() {
                    let mv = mrow[(j0 + c) * step];
                    *s = if mv == MASKED { MASKED } else { *s + mv };
                }
            }
            if self.spec.causal {
                let last = i as isize + off; // last visible key
                let first_hidden = (last + 1 - j0 as isize).clamp(0, n as isize) as usize;
                row[first_hidden..].fill(MASKED);
            }
        }
    }
}

/// `softmax(scale * q k^T + mask) v`, and when `stats_out` is given also
/// every row's softmax statistics (`[B, N_q, T_q, 2]`, float32: the maximum
/// score `m` and `ln(sum(exp(s - m)))`), from which the backward kernel
/// recomputes the probabilities. They are kept apart, not summed to a
/// log-sum-exp, because `m` is the float32 minimum for a fully masked row
/// and adding to it would round the sum away.
pub fn forward(
    ops: &AttentionOperands<'_>,
    spec: AttentionSpec,
    out: OutSpec<'_>,
    stats_out: Option<OutSpec<'_>>,
) -> Result<Vec<Data>> {
    let g = Geometry::new(ops, spec)?;
    let rows = g.group_rows();
    let mut o = vec![0f32; g.b * g.nq * g.tq * g.dv];
    let mut stats = vec![0f32; 2 * g.b * g.nq * g.tq];
    if o.is_empty() {
        return finish(&o, &stats, out, stats_out);
    }
    let blocks = rows.div_ceil(BLOCK_ROWS).max(1);
    let tasks: Vec<(usize, usize, usize)> = (0..g.b)
        .flat_map(|b| (0..g.nkv).flat_map(move |kvh| (0..blocks).map(move |qb| (b, kvh, qb))))
        .collect();
    let results: Vec<Result<(Vec<f32>, Vec<f32>)>> = tasks
        .par_iter()
        .map(|&(b, kvh, qb)| {
            let r0 = qb * BLOCK_ROWS;
            let r1 = (r0 + BLOCK_ROWS).min(rows);
            dispatch(ForwardBlock {
                g: &g,
                b,
                kvh,
                r0,
                r1,
            })
        })
        .collect();
    for (&(b, kvh, qb), res) in tasks.iter().zip(results) {
        let (acc, st) = res?;
        let r0 = qb * BLOCK_ROWS;
        for (ri, (orow, sv)) in acc.chunks_exact(g.dv).zip(st.chunks_exact(2)).enumerate() {
            let (h, i) = g.row_of(kvh, r0 + ri);
            let at = (b * g.nq + h) * g.tq + i;
            o[at * g.dv..(at + 1) * g.dv].copy_from_slice(orow);
            stats[2 * at..2 * at + 2].copy_from_slice(sv);
        }
    }
    finish(&o, &stats, out, stats_out)
}

/// Wraps the row-major outputs in the node's dtypes.
fn finish(
    o: &[f32],
    stats: &[f32],
    out: OutSpec<'_>,
    stats_out: Option<OutSpec<'_>>,
) -> Result<Vec<Data>> {
    let mut outs = vec![super::write_f32("scaled_dot_product_attention", o, out)?];
    if let Some(spec) = stats_out {
        outs.push(super::write_f32(
            "scaled_dot_product_attention",
            stats,
            spec,
        )?);
    }
    Ok(outs)
}

/// [`forward_block`] compiled for the best instruction set: the block's
/// loops (and the `mul_add`s of `exp_f32`) are inlined into pulp's
/// target-feature entry point through `with_simd`; through a closure they
/// were not, and every `mul_add` became a call to `fmaf`.
struct ForwardBlock<'a> {
    g: &'a Geometry<'a>,
    b: usize,
    kvh: usize,
    r0: usize,
    r1: usize,
}

impl WithSimd for ForwardBlock<'_> {
    type Output = Result<(Vec<f32>, Vec<f32>)>;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> Self::Output {
        forward_block(self.g, self.b, self.kvh, self.r0, self.r1)
    }
}

/// One block of group rows `r0..r1`: returns the normalised outputs
/// (`rows x d_v`) and each row's statistics `(m, ln l)`.
#[inline(always)]
fn forward_block(
    g: &Geometry<'_>,
    b: usize,
    kvh: usize,
    r0: usize,
    r1: usize,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let n = r1 - r0;
    let mut qs = vec![0f32; n * g.d];
    g.load_queries(b, kvh, r0, r1, &mut qs);
    let qm = MatRef::new(&qs, 0, (n, g.d), (g.d, 1))?;
    let mut m = vec![f32::NEG_INFINITY; n];
    let mut l = vec![0f32; n];
    if let Some(sinks) = &g.sinks {
        for (ri, (m, l)) in m.iter_mut().zip(&mut l).enumerate() {
            *m = sinks[g.row_of(kvh, r0 + ri).0];
            *l = 1.0;
        }
    }
    let mut acc = vec![0f32; n * g.dv];
    let mut tile = vec![0f32; n * BLOCK_KEYS];
    let mut j0 = 0;
    while j0 < g.tk {
        let nk = BLOCK_KEYS.min(g.tk - j0);
        if g.skips(r0, r1, j0) {
            break; // causal: every later block is hidden too
        }
        let tile = &mut tile[..n * nk];
        gemm_product(
            MatMut::new(tile, n, nk, nk)?,
            qm,
            g.keys_t(b, kvh, j0, nk)?,
            Epilogue::Store,
            false,
        )?;
        g.mask_tile(b, kvh, r0, j0, nk, tile);
        for ((row, (m, l)), arow) in tile
            .chunks_exact_mut(nk)
            .zip(m.iter_mut().zip(l.iter_mut()))
            .zip(acc.chunks_exact_mut(g.dv))
        {
            let bmax = lanes_max(row);
            let m_new = m.max(bmax);
            // All scores -inf so far: keep the state empty (no NaN from
            // -inf - -inf); the row stays 0 / 0 = NaN, as softmax gives.
            let shift = if m_new == f32::NEG_INFINITY {
                0.0
            } else {
                m_new
            };
            let alpha = exp_f32(*m - shift);
            for x in row.iter_mut() {
                *x = exp_f32(*x - shift);
            }
            let sum = lanes_sum(row, |x| x);
            *l = *l * alpha + sum;
            *m = m_new;
            if alpha != 1.0 {
                for a in arow.iter_mut() {
                    *a *= alpha;
                }
            }
        }
        let pm = MatRef::new(tile, 0, (n, nk), (nk, 1))?;
        gemm_product(
            MatMut::new(&mut acc, n, g.dv, g.dv)?,
            pm,
            g.values(b, kvh, j0, nk)?,
            Epilogue::Accumulate {
                alpha: 1.0,
                beta: 1.0,
            },
            false,
        )?;
        j0 += nk;
    }
    let mut stats = Vec::with_capacity(2 * n);
    for ((arow, &l), &m) in acc.chunks_exact_mut(g.dv).zip(&l).zip(&m) {
        let inv = 1.0 / l;
        for a in arow.iter_mut() {
            *a *= inv;
        }
        stats.extend([m, l.ln()]);
    }
    Ok((acc, stats))
}
