//! Scaled dot-product attention, backward: the probabilities are
//! recomputed tile by tile from the forward pass's per-row log-sum-exp, so,
//! as in the forward pass, no `T_q x T_kv` matrix is ever stored.
//!
//! With `P = exp(S - m - ln l)` (the forward statistics), `Δ_r = dO_r · O_r`, and `S = scale q k^T`:
//! `dV = P^T dO`, `dS = P ∘ (dO V^T - Δ)`, `dQ = scale dS K`,
//! `dK = scale dS^T Q`. Scores replaced by a boolean or causal mask get a
//! zero gradient. One task per (batch, key/value head) owns that head's
//! `dK`, `dV` and the `dQ` rows of its query heads, so no two tasks write
//! the same element.

use super::F32View;
use super::attention::{
    AttentionOperands, AttentionSpec, BLOCK_KEYS, BLOCK_ROWS, Geometry, MASKED,
};
use crate::backend::cpu::math::exp_f32;
use crate::backend::cpu::matmul::{Epilogue, MatMut, MatRef, gemm_product};
use crate::backend::cpu::reduce::dispatch;
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// The forward results and the output cotangent the backward pass reads.
pub struct AttentionSaved<'a> {
    /// The forward output `O` (`[B, N_q, T_q, D_v]`).
    pub out: &'a Operand<'a>,
    /// The forward statistics per row (`[B, N_q, T_q, 2]`: `m`, `ln l`).
    pub stats: &'a Operand<'a>,
    /// The cotangent of `O`.
    pub cotangent: &'a Operand<'a>,
}

/// `(dq, dk, dv)` of attention, in the dtypes of `outs`.
pub fn backward(
    ops: &AttentionOperands<'_>,
    saved: &AttentionSaved<'_>,
    spec: AttentionSpec,
    outs: [OutSpec<'_>; 3],
) -> Result<Vec<Data>> {
    let name = "scaled_dot_product_attention_vjp";
    let g = Geometry::new(ops, spec)?;
    let o = F32View::of(name, saved.out)?;
    let stats = F32View::of(name, saved.stats)?;
    let dout = F32View::of(name, saved.cotangent)?;
    let mut dq = vec![0f32; g.b * g.nq * g.tq * g.d];
    let mut dk = vec![0f32; g.b * g.nkv * g.tk * g.d];
    let mut dv = vec![0f32; g.b * g.nkv * g.tk * g.dv];
    if g.group_rows() > 0 && g.tk > 0 && g.d > 0 && g.dv > 0 {
        let tasks: Vec<(usize, usize)> = (0..g.b)
            .flat_map(|b| (0..g.nkv).map(move |kvh| (b, kvh)))
            .collect();
        let results: Vec<Result<Grads>> = tasks
            .par_iter()
            .map(|&(b, kvh)| {
                dispatch(Group {
                    g: &g,
                    o: &o,
                    stats: &stats,
                    dout: &dout,
                    b,
                    kvh,
                })
            })
            .collect();
        for (&(b, kvh), res) in tasks.iter().zip(results) {
            let gr = res?;
            for (r, row) in gr.dq.chunks_exact(g.d).enumerate() {
                let (h, i) = g.row_of(kvh, r);
                let at = ((b * g.nq + h) * g.tq + i) * g.d;
                dq[at..at + g.d].copy_from_slice(row);
            }
            let kat = (b * g.nkv + kvh) * g.tk;
            dk[kat * g.d..(kat + g.tk) * g.d].copy_from_slice(&gr.dk);
            dv[kat * g.dv..(kat + g.tk) * g.dv].copy_from_slice(&gr.dv);
        }
    }
    let [sq, sk, sv] = outs;
    Ok(vec![
        super::write_f32(name, &dq, sq)?,
        super::write_f32(name, &dk, sk)?,
        super::write_f32(name, &dv, sv)?,
    ])
}

/// The gradients one (batch, key/value head) task produces: `dq` in group
/// row order, `dk` and `dv` of the head.
struct Grads {
    dq: Vec<f32>,
    dk: Vec<f32>,
    dv: Vec<f32>,
}

/// Reads group rows of a `[B, N_q, T_q, C]` view into `rows x C`.
fn load_rows(
    g: &Geometry<'_>,
    x: &F32View<'_>,
    cols: usize,
    b: usize,
    kvh: usize,
    dst: &mut [f32],
) {
    for (r, row) in dst.chunks_exact_mut(cols).enumerate() {
        let (h, i) = g.row_of(kvh, r);
        let base = x.offset + b * x.strides[0] + h * x.strides[1] + i * x.strides[2];
        for (c, v) in row.iter_mut().enumerate() {
            *v = x.data[base + c * x.strides[3]];
        }
    }
}

/// [`group`] compiled for the best instruction set (see the forward
/// kernel's `ForwardBlock`).
struct Group<'a> {
    g: &'a Geometry<'a>,
    o: &'a F32View<'a>,
    stats: &'a F32View<'a>,
    dout: &'a F32View<'a>,
    b: usize,
    kvh: usize,
}

impl WithSimd for Group<'_> {
    type Output = Result<Grads>;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> Self::Output {
        group(self.g, self.o, self.stats, self.dout, self.b, self.kvh)
    }
}

#[inline(always)]
fn group(
    g: &Geometry<'_>,
    o: &F32View<'_>,
    stats: &F32View<'_>,
    dout: &F32View<'_>,
    b: usize,
    kvh: usize,
) -> Result<Grads> {
    let rows = g.group_rows();
    let (d, dv) = (g.d, g.dv);
    let mut qs = vec![0f32; rows * d];
    g.load_queries(b, kvh, 0, rows, &mut qs);
    let mut dos = vec![0f32; rows * dv];
    load_rows(g, dout, dv, b, kvh, &mut dos);
    let mut os = vec![0f32; rows * dv];
    load_rows(g, o, dv, b, kvh, &mut os);
    let mut st = vec![0f32; rows * 2];
    load_rows(g, stats, 2, b, kvh, &mut st);
    let delta: Vec<f32> = dos
        .chunks_exact(dv)
        .zip(os.chunks_exact(dv))
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum())
        .collect();
    drop(os);
    let mut dq = vec![0f32; rows * d];
    let mut dk = vec![0f32; g.tk * d];
    let mut dvv = vec![0f32; g.tk * dv];
    let mut p = vec![0f32; BLOCK_ROWS * BLOCK_KEYS];
    let mut dp = vec![0f32; BLOCK_ROWS * BLOCK_KEYS];
    let accumulate = Epilogue::Accumulate {
        alpha: 1.0,
        beta: 1.0,
    };
    let mut j0 = 0;
    while j0 < g.tk {
        let nk = BLOCK_KEYS.min(g.tk - j0);
        let kt = g.keys_t(b, kvh, j0, nk)?;
        let kk = g.keys(b, kvh, j0, nk)?;
        let vt = g.values_t(b, kvh, j0, nk)?;
        let mut r0 = 0;
        while r0 < rows {
            let n = BLOCK_ROWS.min(rows - r0);
            let r1 = r0 + n;
            if g.skips(r0, r1, j0) {
                r0 = r1;
                continue;
            }
            let (p, dp) = (&mut p[..n * nk], &mut dp[..n * nk]);
            let qm = MatRef::new(&qs, r0 * d, (n, d), (d, 1))?;
            gemm_product(MatMut::new(p, n, nk, nk)?, qm, kt, Epilogue::Store, false)?;
            g.mask_tile(b, kvh, r0, j0, nk, p);
            let dom = MatRef::new(&dos, r0 * dv, (n, dv), (dv, 1))?;
            gemm_product(MatMut::new(dp, n, nk, nk)?, dom, vt, Epilogue::Store, false)?;
            for (ri, (prow, dprow)) in p
                .chunks_exact_mut(nk)
                .zip(dp.chunks_exact_mut(nk))
                .enumerate()
            {
                let (m, ln_l, dl) = (st[2 * (r0 + ri)], st[2 * (r0 + ri) + 1], delta[r0 + ri]);
                for (s, ds) in prow.iter_mut().zip(dprow.iter_mut()) {
                    let masked = *s == MASKED;
                    *s = exp_f32((*s - m) - ln_l);
                    *ds = if masked { 0.0 } else { *s * (*ds - dl) };
                }
            }
            // dV += P^T dO, dK += dS^T (scale q), dQ += dS K.
            let pt = MatRef::new(p, 0, (nk, n), (1, nk))?;
            gemm_product(
                MatMut::new(&mut dvv[j0 * dv..], nk, dv, dv)?,
                pt,
                dom,
                accumulate,
                false,
            )?;
            let dst = MatRef::new(dp, 0, (nk, n), (1, nk))?;
            gemm_product(
                MatMut::new(&mut dk[j0 * d..], nk, d, d)?,
                dst,
                qm,
                accumulate,
                false,
            )?;
            let ds = MatRef::new(dp, 0, (n, nk), (nk, 1))?;
            gemm_product(
                MatMut::new(&mut dq[r0 * d..], n, d, d)?,
                ds,
                kk,
                accumulate,
                false,
            )?;
            r0 = r1;
        }
        j0 += nk;
    }
    let scale = g.spec.scale;
    for x in &mut dq {
        *x *= scale;
    }
    Ok(Grads { dq, dk, dv: dvv })
}
