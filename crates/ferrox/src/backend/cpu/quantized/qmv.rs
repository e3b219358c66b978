//! The decode product: a few rows of `x` times a transposed packed matrix
//! (`x @ W^T`, `W` stored `[N, K]` as a linear layer's weight), affine
//! mode, 1, 2, 4 or 8 bits.
//!
//! The kernel reads the codes straight from their words, eight words at a
//! time (a *block*, one 256-bit register): lane `i` holds word `i`, and
//! shifting all lanes right by `j * bits` and masking gives code `j` of
//! every word, i.e. elements `i * (32 / bits) + j` for the eight lanes. So
//! `x` is permuted once per call into that order (element `j` of lane `i`
//! of a block at `j * 8 + i`), and each shift-and-mask is followed by one
//! conversion and one FMA against eight consecutive floats of the permuted
//! `x`: no table, no per-element shuffle, no unpacked copy in memory.
//! Groups start on word boundaries, so every lane lies in one group; a
//! block's per-lane sums are scaled by their group's scale, and the biases
//! enter once per group as `bias * sum(x over the group)`.
//!
//! Up to four rows of `x` share each unpacked block (prefill goes through
//! the tiled gemm path instead). The loops run on pulp's AVX2 + FMA
//! instruction set through `WithSimd` structs whose bodies are
//! `#[inline(always)]`: through a closure the body was compiled outside the
//! target-feature function and nothing was vectorised.
//!
//! Measured (1 x 4096) x (4096 x 4096)^T, 4 bits, group 64, one thread, in a
//! stand-alone copy: the previous kernel (a closure, codes shifted into
//! lanes per group) 5.5 ms, this one 0.80 ms; the f32 product of the same
//! shape through gemm 2.0 ms.

use super::QMat;
use crate::error::{Error, Result};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// Words per block (the lanes of one 256-bit register).
const L: usize = 8;
/// Rows of `x` per pass over a row of `W`.
const MAX_R: usize = 4;
/// Rows of `W` (output columns) per parallel task.
const ROWS_PER_TASK: usize = 64;

/// The instruction-set token of the explicit SIMD path.
#[cfg(target_arch = "x86_64")]
type Token = pulp::x86::V3;
/// No explicit SIMD path on this architecture.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
enum Token {}

/// Whether [`qmv`] handles `q` (affine codes of a power-of-two width).
pub(super) fn supports(q: &QMat<'_>) -> bool {
    q.table.is_none() && matches!(q.bits, 1 | 2 | 4 | 8)
}

/// `out[i, r] = sum_k x[i, k] * W[r, k]` for the contiguous f32 `x`
/// (`[m, k]`) and output (`[m, n]`); `q` holds `W` (`[n, k]`), and
/// [`supports`] it.
pub(super) fn qmv(
    x: &[f32],
    q: &QMat<'_>,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [f32],
    parallel: bool,
) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    let token = pulp::x86::V3::try_new();
    #[cfg(not(target_arch = "x86_64"))]
    let token: Option<Token> = None;
    qmv_with(token, x, q, m, k, n, out, parallel)
}

/// [`qmv`] with the explicit SIMD path (`Some`) or the portable loops.
#[allow(clippy::too_many_arguments)]
fn qmv_with(
    token: Option<Token>,
    x: &[f32],
    q: &QMat<'_>,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [f32],
    parallel: bool,
) -> Result<()> {
    let bits = q.bits;
    if !supports(q)
        || x.len() != m * k
        || out.len() != m * n
        || q.wpr * 32 != k * bits
        || q.gpr * q.gs != k
        || q.words.len() < n * q.wpr
        || q.scales.len() < n * q.gpr
    {
        return Err(Error::runtime(
            "quantized_matmul",
            "internal: qmv operand sizes",
        ));
    }
    let xp = permute(x, k, bits);
    let xsum: Vec<f32> = x.chunks_exact(q.gs).map(|c| c.iter().sum()).collect();
    let mut out_t = if m == 1 {
        Vec::new()
    } else {
        vec![0f32; n * m]
    };
    let dst: &mut [f32] = if m == 1 { out } else { &mut out_t };
    let task = |t: usize, chunk: &mut [f32]| {
        let rows = RowsTask {
            token,
            q,
            xp: &xp,
            xsum: &xsum,
            m,
            k,
            row0: t * ROWS_PER_TASK,
            out: chunk,
        };
        match token {
            #[cfg(target_arch = "x86_64")]
            Some(simd) => Simd::vectorize(simd, rows),
            _ => pulp::Arch::new().dispatch(rows),
        }
    };
    if parallel {
        dst.par_chunks_mut(ROWS_PER_TASK * m)
            .enumerate()
            .for_each(|(t, c)| task(t, c));
    } else {
        dst.chunks_mut(ROWS_PER_TASK * m)
            .enumerate()
            .for_each(|(t, c)| task(t, c));
    }
    if m > 1 {
        for (j, col) in out_t.chunks_exact(m).enumerate() {
            for (i, &v) in col.iter().enumerate() {
                out[i * n + j] = v;
            }
        }
    }
    Ok(())
}

/// The rows of `x` (each `k` long) in block-lane order: in each whole
/// block of `8 * 32 / bits` elements, element `i * (32 / bits) + j` moves
/// to `j * 8 + i`; the elements past the last whole block stay in order.
fn permute(x: &[f32], k: usize, bits: usize) -> Vec<f32> {
    let c = 32 / bits;
    let blk = L * c;
    let full = k / blk * blk;
    let mut out = vec![0f32; x.len()];
    for (xr, or) in x.chunks_exact(k).zip(out.chunks_exact_mut(k)) {
        for (xb, ob) in xr[..full]
            .chunks_exact(blk)
            .zip(or[..full].chunks_exact_mut(blk))
        {
            for i in 0..L {
                for j in 0..c {
                    ob[j * L + i] = xb[i * c + j];
                }
            }
        }
        or[full..].copy_from_slice(&xr[full..]);
    }
    out
}

/// One task: rows `row0..` of `W` (one per `m` outputs of `out`, which is
/// `[rows, m]`).
struct RowsTask<'a> {
    token: Option<Token>,
    q: &'a QMat<'a>,
    xp: &'a [f32],
    xsum: &'a [f32],
    m: usize,
    k: usize,
    row0: usize,
    out: &'a mut [f32],
}

impl WithSimd for RowsTask<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        match self.q.bits {
            1 => rows::<1>(self),
            2 => rows::<2>(self),
            4 => rows::<4>(self),
            _ => rows::<8>(self),
        }
    }
}

#[inline(always)]
fn rows<const B: usize>(t: RowsTask<'_>) {
    let RowsTask {
        token,
        q,
        xp,
        xsum,
        m,
        k,
        row0,
        out,
    } = t;
    let c = 32 / B;
    let mask = (1u32 << B) - 1;
    let wpg = q.gs * B / 32;
    let nblk = q.wpr / L;
    let gpr = q.gpr;
    let mut sb = vec![0f32; 2 * gpr];
    let (srow, brow) = sb.split_at_mut(gpr);
    for (j, o) in out.chunks_exact_mut(m).enumerate() {
        let row = row0 + j;
        q.row_scales(row, srow, brow);
        let words = &q.words[row * q.wpr..(row + 1) * q.wpr];
        let mut r0 = 0;
        while r0 < m {
            let nr = (m - r0).min(MAX_R);
            let xr = |r: usize| &xp[(r0 + r) * k..(r0 + r + 1) * k];
            let mut sums = [0f32; MAX_R];
            macro_rules! dots {
                ($r:literal, [$($i:literal),*]) => {{
                    let xs = [$(xr($i)),*];
                    let d: [f32; $r] = match token {
                        #[cfg(target_arch = "x86_64")]
                        Some(simd) => v3::row_dot::<B, $r>(simd, words, srow, xs, nblk, wpg),
                        _ => row_dot::<B, $r>(words, srow, xs, nblk, wpg),
                    };
                    sums[..$r].copy_from_slice(&d);
                }};
            }
            match nr {
                1 => dots!(1, [0]),
                2 => dots!(2, [0, 1]),
                3 => dots!(3, [0, 1, 2]),
                _ => dots!(4, [0, 1, 2, 3]),
            }
            for (rr, &s0) in sums[..nr].iter().enumerate() {
                let r = r0 + rr;
                let mut s = s0;
                // The words past the last whole block, element by element.
                for (t, &w) in words.iter().enumerate().skip(nblk * L) {
                    let mut d = 0f32;
                    for jj in 0..c {
                        let code = ((w >> (jj * B)) & mask) as i32 as f32;
                        d += code * xp[r * k + t * c + jj];
                    }
                    s += srow[t / wpg] * d;
                }
                s += dot(brow, &xsum[r * gpr..(r + 1) * gpr]);
                o[r] = s;
            }
            r0 += nr;
        }
    }
}

/// The scale of each lane of block `blk` (lane `i` is word `blk * 8 + i`).
#[inline(always)]
fn lane_scales(srow: &[f32], blk: usize, wpg: usize) -> [f32; L] {
    if wpg >= L {
        [srow[blk * L / wpg]; L]
    } else {
        std::array::from_fn(|i| srow[(blk * L + i) / wpg])
    }
}

/// `sum_blocks scale * (codes . x)` of one row of `W` against `R` permuted
/// rows of `x`, over the first `nblk` blocks (portable loops).
#[inline(always)]
fn row_dot<const B: usize, const R: usize>(
    words: &[u32],
    srow: &[f32],
    xp: [&[f32]; R],
    nblk: usize,
    wpg: usize,
) -> [f32; R] {
    let c = 32 / B;
    let mask = (1u32 << B) - 1;
    let mut acc = [[0f32; L]; R];
    for (blk, w) in words.chunks_exact(L).take(nblk).enumerate() {
        let sv = lane_scales(srow, blk, wpg);
        let mut d = [[0f32; L]; R];
        for jj in 0..c {
            let qv: [f32; L] = std::array::from_fn(|i| ((w[i] >> (jj * B)) & mask) as i32 as f32);
            for (dr, x) in d.iter_mut().zip(&xp) {
                let xb = &x[(blk * c + jj) * L..(blk * c + jj + 1) * L];
                for i in 0..L {
                    dr[i] = qv[i].mul_add(xb[i], dr[i]);
                }
            }
        }
        for (a, dr) in acc.iter_mut().zip(&d) {
            for i in 0..L {
                a[i] = dr[i].mul_add(sv[i], a[i]);
            }
        }
    }
    acc.map(|a| a.iter().sum())
}

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..L {
            acc[i] = x[i].mul_add(y[i], acc[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// [`row_dot`] in AVX2 + FMA registers.
#[cfg(target_arch = "x86_64")]
mod v3 {
    use super::{L, lane_scales};
    use pulp::x86::V3;
    use pulp::{cast, f32x8, u32x8};

    #[inline(always)]
    pub(super) fn row_dot<const B: usize, const R: usize>(
        simd: V3,
        words: &[u32],
        srow: &[f32],
        xp: [&[f32]; R],
        nblk: usize,
        wpg: usize,
    ) -> [f32; R] {
        let c = 32 / B;
        let mask = simd.splat_u32x8((1u32 << B) - 1);
        let zero = simd.splat_f32x8(0.0);
        let mut acc = [zero; R];
        let (blocks, _) = pulp::as_arrays::<L, u32>(words);
        let xv: [&[[f32; L]]; R] = xp.map(|x| pulp::as_arrays::<L, f32>(x).0);
        for (blk, w) in blocks.iter().take(nblk).enumerate() {
            let w: u32x8 = cast(*w);
            let sv: f32x8 = if wpg >= L {
                simd.splat_f32x8(srow[blk * L / wpg])
            } else {
                cast(lane_scales(srow, blk, wpg))
            };
            // Two accumulators per row of x: FMA latency, not throughput,
            // bounds a single chain.
            let mut d = [[zero; 2]; R];
            for jj in 0..c {
                let shift = simd.splat_u32x8((jj * B) as u32);
                let codes = simd.and_u32x8(simd.shr_dyn_u32x8(w, shift), mask);
                let codes = simd.convert_i32x8_to_f32x8(cast(codes));
                for (dr, x) in d.iter_mut().zip(&xv) {
                    let xb: f32x8 = cast(x[blk * c + jj]);
                    dr[jj & 1] = simd.mul_add_f32x8(codes, xb, dr[jj & 1]);
                }
            }
            for (a, dr) in acc.iter_mut().zip(&d) {
                *a = simd.mul_add_f32x8(simd.add_f32x8(dr[0], dr[1]), sv, *a);
            }
        }
        acc.map(|a| {
            let a: [f32; L] = cast(a);
            a.iter().sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Vals;
    use super::*;

    /// `sum_k x[i, k] * (s * code + b)` in f64, straight from the bits.
    #[allow(clippy::too_many_arguments)]
    fn reference(
        words: &[u32],
        s: &[f32],
        b: &[f32],
        x: &[f32],
        m: usize,
        k: usize,
        n: usize,
        gs: usize,
        bits: usize,
    ) -> Vec<f32> {
        let (wpr, gpr) = (k * bits / 32, k / gs);
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for r in 0..n {
                let mut acc = 0f64;
                for e in 0..k {
                    let p = e * bits;
                    let code = (words[r * wpr + p / 32] >> (p % 32)) & ((1 << bits) - 1);
                    let g = r * gpr + e / gs;
                    acc += (code as f64 * s[g] as f64 + b[g] as f64) * x[i * k + e] as f64;
                }
                out[i * n + r] = acc as f32;
            }
        }
        out
    }

    #[test]
    fn both_paths_match_the_bits_for_every_width_and_group() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let cases = [
            (1, 256, 70, 64, 4),
            (3, 256, 70, 32, 4),
            (1, 32, 5, 32, 4),
            (5, 512, 33, 128, 8),
            (2, 128, 9, 32, 2),
            (1, 96, 7, 32, 2),
            (4, 192, 9, 64, 1),
            (7, 32, 3, 32, 1),
            (1, 2048, 130, 64, 4),
        ];
        for (m, k, n, gs, bits) in cases {
            let (wpr, gpr) = (k * bits / 32, k / gs);
            let words: Vec<u32> = (0..n * wpr).map(|_| next() as u32).collect();
            let mut f = || (next() % 2001) as f32 / 1000.0 - 1.0;
            let s: Vec<f32> = (0..n * gpr).map(|_| f()).collect();
            let b: Vec<f32> = (0..n * gpr).map(|_| f()).collect();
            let x: Vec<f32> = (0..m * k).map(|_| f()).collect();
            let want = reference(&words, &s, &b, &x, m, k, n, gs, bits);
            let q = QMat {
                words: &words,
                wpr,
                scales: Vals::F32(&s),
                biases: Some(Vals::F32(&b)),
                gpr,
                gs,
                bits,
                table: None,
            };
            #[cfg(target_arch = "x86_64")]
            let tokens = [None, pulp::x86::V3::try_new()];
            #[cfg(not(target_arch = "x86_64"))]
            let tokens: [Option<Token>; 1] = [None];
            for (path, token) in tokens.into_iter().enumerate() {
                for parallel in [false, true] {
                    let mut got = vec![0f32; m * n];
                    qmv_with(token, &x, &q, m, k, n, &mut got, parallel).unwrap();
                    let err = want
                        .iter()
                        .zip(&got)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0f32, f32::max);
                    let tol = 1e-5 * (k as f32) * (1 << bits) as f32;
                    assert!(
                        err <= tol,
                        "m={m} k={k} n={n} gs={gs} bits={bits} path={path}: {err} > {tol}"
                    );
                }
            }
        }
    }
}
