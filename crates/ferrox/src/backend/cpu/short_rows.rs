//! Softmax and logsumexp over many contiguous rows shorter than one block
//! of the per-row kernels (a classifier's logits: ten classes a row).
//!
//! Per row, those kernels take a two-pass path: the max, `exp(x - max)` for
//! each element, their sum in order. A row of ten never fills the 16-lane
//! `exp` loop, so every `exp` ran in its scalar tail, and every row paid a
//! SIMD dispatch of its own: a 256x10 softmax took 7.7 us and its
//! logsumexp 11.7. Here a block of rows is shifted row by row, then one
//! flat pass computes every `exp` of the block in full vectors, then the
//! sums run per row in the same order. The values are those of the per-row
//! path bit for bit (the same operations on the same numbers), so a result
//! does not depend on which path computed it.

use super::reduce::{LseFloat, dispatch, lse_finish, nan_max, shift};
use super::team::for_each_part;
use crate::error::{Error, Result};
use pulp::{Simd, WithSimd};

/// Elements per block: a block's shifted values stay in L1.
const BLOCK: usize = 2048;
/// Elements per parallel task.
const TASK: usize = 1 << 15;

/// Softmax of each `row_len`-element row of `xs` into `out` (same length),
/// for rows shorter than [`SHORT_SOFTMAX_ROW`](super::reduce::SHORT_SOFTMAX_ROW).
pub(crate) fn softmax_short_rows<F: LseFloat>(
    xs: &[F],
    row_len: usize,
    out: &mut [F],
) -> Result<()> {
    over_row_tasks(xs, row_len, out, Reduce::Softmax)
}

/// `log(sum(exp(row)))` of each `row_len`-element row of `xs` into `out`
/// (one element per row), for rows shorter than
/// [`SHORT_LSE_ROW`](super::reduce::SHORT_LSE_ROW).
pub(crate) fn logsumexp_short_rows<F: LseFloat>(
    xs: &[F],
    row_len: usize,
    out: &mut [F],
) -> Result<()> {
    over_row_tasks(xs, row_len, out, Reduce::LogSumExp)
}

/// What a row becomes.
#[derive(Clone, Copy, PartialEq)]
enum Reduce {
    /// Its softmax: as many outputs as inputs.
    Softmax,
    /// Its logsumexp: one output.
    LogSumExp,
}

/// Splits the rows over the cores in tasks of whole rows, each one
/// dispatched [`ShortRows`] pass; an internal error if `xs` is not whole
/// rows or `out` does not have the size `kind` gives them.
fn over_row_tasks<F: LseFloat>(
    xs: &[F],
    row_len: usize,
    out: &mut [F],
    kind: Reduce,
) -> Result<()> {
    let out_per_row = if kind == Reduce::Softmax { row_len } else { 1 };
    if row_len == 0 || xs.len() % row_len != 0 || xs.len() / row_len * out_per_row != out.len() {
        return Err(Error::runtime(
            "softmax",
            format!(
                "internal error: {} inputs in rows of {row_len} for {} outputs",
                xs.len(),
                out.len()
            ),
        ));
    }
    let rows_per_task = TASK.div_ceil(row_len);
    let tasks: Vec<(&[F], &mut [F])> = xs
        .chunks(rows_per_task * row_len)
        .zip(out.chunks_mut(rows_per_task * out_per_row))
        .collect();
    let run = |(xs, out): (&[F], &mut [F])| {
        dispatch(ShortRows {
            xs,
            row_len,
            out,
            kind,
        })
    };
    if tasks.len() > 1 {
        for_each_part(tasks, run);
    } else {
        tasks.into_iter().for_each(run);
    }
    Ok(())
}

/// Rows per block of `row_len`-element rows.
fn rows_per_block(row_len: usize) -> usize {
    (BLOCK / row_len).max(1)
}

/// Writes `x - shift(max of its row)` for every row of `xs` into `shifted`,
/// and each row's max into `maxima` (when given); inside a dispatch.
#[inline(always)]
fn shift_rows<F: LseFloat>(
    xs: &[F],
    row_len: usize,
    shifted: &mut [F],
    mut maxima: Option<&mut [F]>,
) {
    for (r, (x, s)) in xs
        .chunks_exact(row_len)
        .zip(shifted.chunks_exact_mut(row_len))
        .enumerate()
    {
        let m = x.iter().fold(F::NEG_INF, |m, &v| nan_max(m, v));
        if let Some(maxima) = maxima.as_deref_mut() {
            maxima[r] = m;
        }
        let sh = shift(m);
        for (s, &v) in s.iter_mut().zip(x) {
            *s = v - sh;
        }
    }
}

/// One task's rows, block by block: shifted row by row, every `exp` of
/// the block in one flat pass, then each row's sum in order.
struct ShortRows<'a, F> {
    xs: &'a [F],
    row_len: usize,
    out: &'a mut [F],
    kind: Reduce,
}

impl<F: LseFloat> WithSimd for ShortRows<'_, F> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (len, rows) = (self.row_len, rows_per_block(self.row_len));
        if self.kind == Reduce::Softmax {
            // The output holds the shifted values, then the exponentials.
            for (xs, out) in self
                .xs
                .chunks(rows * len)
                .zip(self.out.chunks_mut(rows * len))
            {
                shift_rows(xs, len, out, None);
                for e in out.iter_mut() {
                    *e = e.exp();
                }
                for row in out.chunks_exact_mut(len) {
                    let inv = F::ONE / row.iter().fold(F::ZERO, |s, &e| s + e);
                    for e in row.iter_mut() {
                        *e = *e * inv;
                    }
                }
            }
            return;
        }
        let mut shifted = vec![F::ZERO; rows * len];
        for (xs, out) in self.xs.chunks(rows * len).zip(self.out.chunks_mut(rows)) {
            let shifted = &mut shifted[..xs.len()];
            // Each row's max waits in its output slot for the sum.
            shift_rows(xs, len, shifted, Some(&mut *out));
            for e in shifted.iter_mut() {
                *e = e.exp();
            }
            for (row, o) in shifted.chunks_exact(len).zip(out.iter_mut()) {
                *o = lse_finish((*o, row.iter().fold(F::ZERO, |s, &e| s + e)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::reduce::{
        SHORT_LSE_ROW, SHORT_SOFTMAX_ROW, online_max_sum, softmax_row,
    };

    /// Rows with finite values, `-inf` rows, `+inf` and NaN entries.
    fn rows(n_rows: usize, row_len: usize) -> Vec<f32> {
        let mut xs: Vec<f32> = (0..n_rows * row_len)
            .map(|i| ((i * 7919) % 211) as f32 * 0.37 - 40.0)
            .collect();
        for (r, row) in xs.chunks_exact_mut(row_len).enumerate() {
            match r % 11 {
                3 => row.fill(f32::NEG_INFINITY),
                5 => row[r % row_len] = f32::INFINITY,
                7 => row[row_len - 1] = f32::NAN,
                9 => row[0] = f32::NEG_INFINITY,
                _ => {}
            }
        }
        xs
    }

    fn same_bits(got: &[f32], want: &[f32], what: &str) {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "{what}, element {i}: {g} vs {w}"
            );
        }
    }

    #[test]
    fn short_rows_match_the_per_row_kernels_bitwise() {
        // Row counts that fill no block, several blocks and several tasks.
        for row_len in [1, 2, 10, 17, SHORT_LSE_ROW - 1, SHORT_SOFTMAX_ROW - 1] {
            for n_rows in [1, 3, 256, 5000] {
                let xs = rows(n_rows, row_len);
                let what = format!("{n_rows} rows of {row_len}");
                let mut got = vec![0.0f32; xs.len()];
                softmax_short_rows(&xs, row_len, &mut got).unwrap();
                let mut want = vec![0.0f32; xs.len()];
                let mut maxima = Vec::new();
                for (x, w) in xs.chunks_exact(row_len).zip(want.chunks_exact_mut(row_len)) {
                    softmax_row(x, w, &mut maxima);
                }
                same_bits(&got, &want, &format!("softmax of {what}"));
                if row_len < SHORT_LSE_ROW {
                    let mut got = vec![0.0f32; n_rows];
                    logsumexp_short_rows(&xs, row_len, &mut got).unwrap();
                    let want: Vec<f32> =
                        xs.chunks_exact(row_len).map(|x| dispatch(Lse(x))).collect();
                    same_bits(&got, &want, &format!("logsumexp of {what}"));
                }
            }
        }
    }

    /// The engines' per-row logsumexp, inside a dispatch as they run it.
    struct Lse<'a>(&'a [f32]);
    impl WithSimd for Lse<'_> {
        type Output = f32;
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) -> f32 {
            lse_finish(online_max_sum(self.0))
        }
    }
}
