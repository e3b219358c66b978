//! f32 products with few output columns (at most [`NARROW`]): a
//! classifier's logits and their weight gradient, a low-rank adapter's
//! down-projection, a matrix times a vector.
//!
//! gemm packs both operands on every call and tiles the output for large
//! blocks, which costs more than the arithmetic when one side is ten
//! columns. Here the narrow side stays in registers:
//!
//! - **rows of `a` contiguous** ([`RowDots`]): each output is a dot product
//!   of a row of `a` and a column of `b`; a pair of rows is multiplied by
//!   every column at once, a vector of the inner dimension at a time.
//! - **columns of `a` contiguous** (a transposed view, [`ColumnSums`]): a
//!   block of rows gathers `a[:, p] * b[p, j]` over `p`, vectors running
//!   down the rows.
//!
//! On 2 cores (AVX-512), medians of 3000 calls including the graph: the
//! perceptron step's 256x512x10 went from 18.3 to 10.1 us and its
//! 512x256x10 with a transposed `a` from 18.7 to 8.4. A short inner
//! dimension with a wide output (256x10x512) gained nothing over gemm on
//! one thread (13.6 against 12.7 us: writing the output dominates), so it
//! stays with gemm.
//!
//! Each output element is summed by one thread in an order fixed by the
//! shapes and the SIMD width alone, so the result does not depend on the
//! number of threads. It is not gemm's result bit for bit (no two BLAS
//! agree on summation order either).

use super::{MatMut, MatRef, SPLIT_PRODUCT};
use crate::backend::cpu::reduce::dispatch;
use crate::backend::cpu::team::try_for_each_part;
use crate::error::{Error, Result};
use pulp::{Simd, WithSimd};
use std::array::from_fn;

/// The widest side these kernels call narrow.
pub(super) const NARROW: usize = 16;

/// Parts per pool thread a split product is cut into: threads claim parts
/// one at a time, so a helper that wakes late takes less of the work
/// (on 2 cores, the step's two narrow products took 15.1 and 16.9 us in
/// one part per thread, 15.2 and 8.4 in two, 10.1 and 8.4 in four, 10.4
/// and 8.9 in eight).
const PARTS_PER_THREAD: usize = 4;

/// Rows of the transposed-`a` kernel's block, an upper bound on two vectors
/// of any SIMD width pulp dispatches to (16 f32 lanes at most).
const COLUMN_BLOCK: usize = 32;

/// How a computed sum meets the output: `alpha * sum`, plus `beta * old`
/// when the output is read (gemm's `dst := beta * dst + alpha * (a @ b)`).
/// `alpha == 1` and no `beta` store the sum itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Combine {
    pub(crate) alpha: f32,
    pub(crate) beta: Option<f32>,
}

impl Combine {
    #[inline(always)]
    fn apply(self, sum: f32, old: f32) -> f32 {
        match self.beta {
            None => self.alpha * sum,
            Some(beta) => self.alpha * sum + beta * old,
        }
    }
}

/// The kernel for a product with few output columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Narrow {
    /// Rows of `a` contiguous.
    RowDots,
    /// Columns of `a` contiguous.
    ColumnSums,
}

impl Narrow {
    /// The kernel for an `m x k` by `k x n` product whose `a` has row
    /// stride `a_rs` and column stride `a_cs`, or `None` for gemm: at most
    /// [`NARROW`] columns, an inner dimension that fills vectors, and `a`
    /// contiguous one way or the other.
    pub(super) fn choose(m: usize, k: usize, n: usize, a_rs: usize, a_cs: usize) -> Option<Self> {
        if m == 0 || n == 0 || k == 0 {
            return None;
        }
        if n <= NARROW && k >= NARROW {
            if a_cs == 1 {
                return Some(Narrow::RowDots);
            }
            if a_rs == 1 {
                return Some(Narrow::ColumnSums);
            }
        }
        None
    }
}

/// `dst := combine(a @ b, dst)` by the kernel `kind`, split by rows over the
/// cores when `parallel` and the product is large enough.
pub(super) fn product(
    kind: Narrow,
    dst: MatMut<'_, f32>,
    a: MatRef<'_, f32>,
    b: MatRef<'_, f32>,
    combine: Combine,
    parallel: bool,
) -> Result<()> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let lanes = dispatch(F32Lanes);
    // The narrow operands, packed once for every part.
    let packed_b = match kind {
        Narrow::RowDots => pack_for_row_dots(&b, lanes),
        Narrow::ColumnSums => b.to_row_major(|x| x),
    };
    let block = match kind {
        Narrow::RowDots => 2,
        Narrow::ColumnSums => COLUMN_BLOCK,
    };
    let work = m.saturating_mul(n).saturating_mul(k);
    let parts = if parallel && work >= SPLIT_PRODUCT {
        rayon::current_num_threads().max(1) * PARTS_PER_THREAD
    } else {
        1
    };
    let rows_per_part = m.div_ceil(parts).next_multiple_of(block);
    let mut parts = Vec::with_capacity(parts);
    let mut rest = dst;
    let mut start = 0;
    while start < m {
        let rows = rows_per_part.min(m - start);
        let (part, tail) = rest.split_rows(rows);
        parts.push((start, part));
        rest = tail;
        start += rows;
    }
    try_for_each_part(parts, |(start, dst)| {
        let a = a.rows_from(start, dst.rows)?;
        let b = packed_b.as_slice();
        let done = match kind {
            Narrow::RowDots => with_width(n, |w| w.row_dots(a, b, lanes, dst, combine))?,
            Narrow::ColumnSums => with_width(n, |w| w.column_sums(a, b, dst, combine))?,
        };
        check(done)
    })
}

/// The number of f32 lanes of the SIMD width pulp dispatches to.
struct F32Lanes;

impl WithSimd for F32Lanes {
    type Output = usize;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> usize {
        S::F32_LANES
    }
}

/// `b` laid out for [`RowDots`]: for each run of `lanes` rows, the pieces
/// of its `n` columns one after another (a vector each), so the inner
/// loop walks one pointer; then the last `k % lanes` rows, column after
/// column.
fn pack_for_row_dots(b: &MatRef<'_, f32>, lanes: usize) -> Vec<f32> {
    let (k, n) = (b.rows, b.cols);
    let full = k / lanes * lanes;
    let mut packed = Vec::with_capacity(k * n);
    for c in (0..full).step_by(lanes) {
        for j in 0..n {
            packed.extend((c..c + lanes).map(|p| b.at(p, j)));
        }
    }
    for j in 0..n {
        packed.extend((full..k).map(|p| b.at(p, j)));
    }
    packed
}

/// A vector from a slice of at most one vector's length (a masked load
/// when shorter).
#[inline(always)]
fn load<S: Simd>(simd: S, from: &[f32]) -> S::f32s {
    match S::as_simd_f32s(from).0 {
        [v] => *v,
        _ => simd.partial_load_f32s(from),
    }
}

/// Stores the first `to.len()` lanes of `v` (at most one vector's length).
#[inline(always)]
fn store<S: Simd>(simd: S, to: &mut [f32], v: S::f32s) {
    match S::as_mut_simd_f32s(to).0 {
        [slot] => *slot = v,
        _ => simd.partial_store_f32s(to, v),
    }
}

/// A narrow side's length as a const generic, with the block it allows.
/// Each returns whether the kernel ran (false: operands it cannot take,
/// an internal error).
trait Width {
    fn row_dots(
        &self,
        a: MatRef<'_, f32>,
        b: &[f32],
        lanes: usize,
        dst: MatMut<'_, f32>,
        c: Combine,
    ) -> bool;
    fn column_sums(&self, a: MatRef<'_, f32>, b: &[f32], dst: MatMut<'_, f32>, c: Combine) -> bool;
}

/// Width `W`; `R` rows (or vectors) per block, so that the `R * W`
/// accumulators and the loads stay within 32 vector registers.
struct Fixed<const W: usize, const R: usize>;

impl<const W: usize, const R: usize> Width for Fixed<W, R> {
    fn row_dots(
        &self,
        a: MatRef<'_, f32>,
        b: &[f32],
        lanes: usize,
        dst: MatMut<'_, f32>,
        c: Combine,
    ) -> bool {
        let fits = a.rows == dst.rows && dst.cols == W && b.len() == W * a.cols && a.cs == 1;
        fits && dispatch(RowDots::<W, R> {
            a,
            b,
            lanes,
            dst,
            combine: c,
        })
    }
    fn column_sums(&self, a: MatRef<'_, f32>, b: &[f32], dst: MatMut<'_, f32>, c: Combine) -> bool {
        let fits = a.rows == dst.rows && dst.cols == W && b.len() == W * a.cols && a.rs == 1;
        fits && dispatch(ColumnSums::<W, R> {
            a,
            b,
            dst,
            combine: c,
        })
    }
}

fn check(ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::runtime(
            "matmul",
            "internal: narrow product operands do not match",
        ))
    }
}

/// Runs `f` with the [`Width`] of `w` (1 to [`NARROW`]).
fn with_width(w: usize, f: impl FnOnce(&dyn Width) -> bool) -> Result<bool> {
    Ok(match w {
        1 => f(&Fixed::<1, 2>),
        2 => f(&Fixed::<2, 2>),
        3 => f(&Fixed::<3, 2>),
        4 => f(&Fixed::<4, 2>),
        5 => f(&Fixed::<5, 2>),
        6 => f(&Fixed::<6, 2>),
        7 => f(&Fixed::<7, 2>),
        8 => f(&Fixed::<8, 2>),
        9 => f(&Fixed::<9, 2>),
        10 => f(&Fixed::<10, 2>),
        11 => f(&Fixed::<11, 2>),
        12 => f(&Fixed::<12, 2>),
        13 => f(&Fixed::<13, 1>),
        14 => f(&Fixed::<14, 1>),
        15 => f(&Fixed::<15, 1>),
        16 => f(&Fixed::<16, 1>),
        _ => {
            return Err(Error::runtime(
                "matmul",
                format!("internal: {w} is not a narrow width"),
            ));
        }
    })
}

/// Few output columns (`W`), rows of `a` contiguous: `R` rows at a time,
/// each output the dot product of a row of `a` and a column of `b`
/// (packed by [`pack_for_row_dots`] for `lanes`-wide vectors).
struct RowDots<'a, const W: usize, const R: usize> {
    a: MatRef<'a, f32>,
    b: &'a [f32],
    lanes: usize,
    dst: MatMut<'a, f32>,
    combine: Combine,
}

impl<const W: usize, const R: usize> WithSimd for RowDots<'_, W, R> {
    type Output = bool;
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> bool {
        let RowDots {
            a,
            b,
            lanes,
            mut dst,
            combine,
        } = self;
        if lanes != S::F32_LANES {
            return false;
        }
        let k = a.cols;
        let chunks = k / lanes;
        let (vectors, tail) = b.split_at(chunks * lanes * W);
        let packed = Packed {
            vectors: S::as_simd_f32s(vectors).0,
            tail,
            chunks,
            k,
        };
        let row = |i: usize| {
            let at = a.offset + i * a.rs;
            &a.data[at..at + k]
        };
        let mut i = 0;
        while i + R <= a.rows {
            let sums = dot_rows::<S, W, R>(simd, from_fn(|r| row(i + r)), &packed);
            for (r, sums) in sums.iter().enumerate() {
                store_row(dst.row_mut(i + r), sums, combine);
            }
            i += R;
        }
        while i < a.rows {
            let [sums] = dot_rows::<S, W, 1>(simd, [row(i)], &packed);
            store_row(dst.row_mut(i), &sums, combine);
            i += 1;
        }
        true
    }
}

/// `b` as [`dot_rows`] reads it: `chunks` groups of `W` vectors, then the
/// last `k % lanes` rows column after column.
struct Packed<'a, V> {
    vectors: &'a [V],
    tail: &'a [f32],
    chunks: usize,
    k: usize,
}

#[inline(always)]
fn store_row<const W: usize>(row: &mut [f32], sums: &[f32; W], combine: Combine) {
    for (o, &s) in row.iter_mut().zip(sums) {
        *o = combine.apply(s, *o);
    }
}

/// The `W` dot products of each of the rows `rows` with the columns of
/// `b`: full vectors first (lane-wise sums, then the lanes added in
/// pulp's fixed order), then the remaining elements in order.
#[inline(always)]
fn dot_rows<S: Simd, const W: usize, const RR: usize>(
    simd: S,
    rows: [&[f32]; RR],
    b: &Packed<'_, S::f32s>,
) -> [[f32; W]; RR] {
    let xs: [&[S::f32s]; RR] = from_fn(|r| {
        let v = S::as_simd_f32s(rows[r]).0;
        &v[..b.chunks.min(v.len())]
    });
    let mut acc = [[simd.splat_f32s(0.0); W]; RR];
    for (c, group) in b.vectors.chunks_exact(W).enumerate() {
        let (Ok(group), true) = (
            <&[S::f32s; W]>::try_from(group),
            xs.iter().all(|x| c < x.len()),
        ) else {
            break;
        };
        let x: [S::f32s; RR] = from_fn(|r| xs[r][c]);
        for j in 0..W {
            for r in 0..RR {
                acc[r][j] = simd.mul_add_f32s(x[r], group[j], acc[r][j]);
            }
        }
    }
    let done = b.chunks * S::F32_LANES;
    let rest = b.k - done;
    from_fn(|r| {
        from_fn(|j| {
            let mut s = simd.reduce_sum_f32s(acc[r][j]);
            for (x, y) in rows[r][done..]
                .iter()
                .zip(&b.tail[j * rest..(j + 1) * rest])
            {
                s += x * y;
            }
            s
        })
    })
}

/// Few output columns (`W`), columns of `a` contiguous (`a.rs == 1`):
/// blocks of [`COLUMN_BLOCK`] rows (`R` vectors), each accumulating
/// `a[rows, p] * b[p, j]` over `p` in order, then written out transposed;
/// `b` is row-major.
struct ColumnSums<'a, const W: usize, const R: usize> {
    a: MatRef<'a, f32>,
    b: &'a [f32],
    dst: MatMut<'a, f32>,
    combine: Combine,
}

impl<const W: usize, const R: usize> WithSimd for ColumnSums<'_, W, R> {
    type Output = bool;
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> bool {
        let ColumnSums {
            a,
            b,
            mut dst,
            combine,
        } = self;
        let lanes = S::F32_LANES;
        // R vectors of rows a block (fewer than COLUMN_BLOCK rows on
        // narrower SIMD); the last block's missing rows load as zeros.
        let block = (R * lanes).min(COLUMN_BLOCK);
        let mut i = 0;
        while i < a.rows {
            let rows = block.min(a.rows - i);
            let mut acc = [[simd.splat_f32s(0.0); W]; R];
            for (p, brow) in b.chunks_exact(W).enumerate() {
                let at = a.offset + p * a.cs + i;
                let column = &a.data[at..at + rows];
                let x: [S::f32s; R] = from_fn(|v| {
                    let lo = (v * lanes).min(rows);
                    load(simd, &column[lo..(lo + lanes).min(rows)])
                });
                let Ok(brow) = <&[f32; W]>::try_from(brow) else {
                    return false;
                };
                for j in 0..W {
                    let y = simd.splat_f32s(brow[j]);
                    for v in 0..R {
                        acc[v][j] = simd.mul_add_f32s(x[v], y, acc[v][j]);
                    }
                }
            }
            // sums[j][r]: output (i + r, j).
            let mut sums = [[0f32; COLUMN_BLOCK]; W];
            for (j, column) in sums.iter_mut().enumerate() {
                for (v, acc) in acc.iter().enumerate() {
                    let lo = (v * lanes).min(COLUMN_BLOCK);
                    store(
                        simd,
                        &mut column[lo..(lo + lanes).min(COLUMN_BLOCK)],
                        acc[j],
                    );
                }
            }
            for r in 0..rows {
                let row = dst.row_mut(i + r);
                for (o, column) in row.iter_mut().zip(&sums) {
                    *o = combine.apply(column[r], *o);
                }
            }
            i += rows;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// `a` (m x k) stored row-major with `pad` extra columns, or stored
    /// column-major (read through a transposed view) when `columns`.
    fn operand(
        m: usize,
        k: usize,
        columns: bool,
        pad: usize,
        seed: u64,
    ) -> (Vec<f32>, usize, usize) {
        if columns {
            (values((m + pad) * k, seed), 1, m + pad)
        } else {
            (values(m * (k + pad), seed), k + pad, 1)
        }
    }

    /// Runs every kind the shapes allow on both layouts of `a`, serial and
    /// split, against an f64 loop; split and serial must agree bitwise.
    fn check_shape(m: usize, k: usize, n: usize, combine: Combine) {
        for columns in [false, true] {
            let (a_data, rs, cs) = operand(m, k, columns, 3, (m * 31 + k * 7 + n) as u64);
            let a = MatRef::new(&a_data, 0, (m, k), (rs, cs)).unwrap();
            let b_data = values(k * n, 99);
            let b = MatRef::row_major(&b_data, k, n).unwrap();
            let Some(kind) = Narrow::choose(m, k, n, rs, cs) else {
                continue;
            };
            let old = values(m * n, 7);
            let mut results = Vec::new();
            for parallel in [false, true] {
                let mut out = old.clone();
                product(
                    kind,
                    MatMut::new(&mut out, m, n, n).unwrap(),
                    a,
                    b,
                    combine,
                    parallel,
                )
                .unwrap();
                results.push(out);
            }
            assert_eq!(
                results[0].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                results[1].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{kind:?} {m}x{k}x{n}: split differs from serial"
            );
            for i in 0..m {
                for j in 0..n {
                    let sum: f64 = (0..k).map(|p| a.at(i, p) as f64 * b.at(p, j) as f64).sum();
                    let mut want = combine.alpha as f64 * sum;
                    if let Some(beta) = combine.beta {
                        want += beta as f64 * old[i * n + j] as f64;
                    }
                    let got = results[0][i * n + j] as f64;
                    let scale: f64 = (0..k)
                        .map(|p| (a.at(i, p) as f64 * b.at(p, j) as f64).abs())
                        .sum::<f64>()
                        + 1.0;
                    assert!(
                        (got - want).abs() <= 1e-5 * scale,
                        "{kind:?} {m}x{k}x{n} ({i}, {j}): {got} against {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn narrow_products_match_a_loop_for_every_width_and_tail() {
        let store = Combine {
            alpha: 1.0,
            beta: None,
        };
        for w in 1..=NARROW {
            // Few columns: inner dimensions with and without a vector tail,
            // row counts off every block size.
            for (m, k) in [(1, 16), (3, 37), (33, 64), (70, 100)] {
                check_shape(m, k, w, store);
            }
        }
    }

    #[test]
    fn narrow_products_scale_and_add_the_old_output() {
        for combine in [
            Combine {
                alpha: -0.5,
                beta: None,
            },
            Combine {
                alpha: 2.0,
                beta: Some(0.25),
            },
        ] {
            check_shape(45, 70, 10, combine);
            check_shape(45, 70, 1, combine);
        }
    }

    #[test]
    fn large_narrow_products_split_and_agree() {
        let store = Combine {
            alpha: 1.0,
            beta: None,
        };
        // The perceptron step's two narrow products, over the split size.
        check_shape(256, 512, 10, store);
        check_shape(512, 256, 10, store);
    }

    #[test]
    fn wide_products_are_left_to_gemm() {
        assert_eq!(Narrow::choose(64, 64, 64, 64, 1), None);
        assert_eq!(Narrow::choose(64, 8, 8, 8, 1), None);
        // A short inner dimension with a wide output.
        assert_eq!(Narrow::choose(256, 10, 512, 10, 1), None);
        // Neither row nor column of `a` contiguous.
        assert_eq!(Narrow::choose(64, 64, 8, 128, 2), None);
        assert_eq!(Narrow::choose(0, 64, 8, 64, 1), None);
    }
}
