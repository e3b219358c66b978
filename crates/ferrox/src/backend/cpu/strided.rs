//! Strided-walk helpers shared by the indexing kernels (and `sort`).
//!
//! Offsets are `isize` element indices into a storage slice; a walk over a
//! shape with no elements never calls back, so its offsets may be anything.
//! Walks visit *segments*: runs of consecutive elements of the innermost
//! dimension, so callers write tight inner loops (or `copy_from_slice` when
//! the inner stride is 1) instead of paying a multi-index update per element.

use crate::backend::cpu::parallel::{chunk_len, worth_splitting};
use crate::error::Result;
use crate::graph::layout::row_major_strides;
use crate::graph::primitive::Operand;
use crate::graph::storage::Pod;
use crate::graph::walk::{for_each_segment, inner_strides, zip_strides};
use rayon::prelude::*;

/// Number of elements of `shape`.
pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Offsets of every element of a walk over `shape`, in row-major order.
pub(crate) fn offsets<const K: usize>(
    shape: &[usize],
    strides: &[[isize; K]],
    base: [isize; K],
) -> Vec<[isize; K]> {
    let n = numel(shape);
    let step = inner_strides(strides);
    let mut out = Vec::with_capacity(n);
    // The callback never fails.
    let _ = for_each_segment(shape, strides, base, 0, n, |o, count| {
        out.extend((0..count as isize).map(|t| std::array::from_fn(|k| o[k] + t * step[k])));
        Ok(())
    });
    out
}

/// Strides of an array of `shape` with `strides`, broadcast (numpy rules,
/// right-aligned) to `target`: 0 where it has size 1 or no dimension.
/// Leading dimensions beyond `target`'s rank must have size 1 (checked by the
/// builders) and are ignored.
pub(crate) fn broadcast_strides_to(
    shape: &[usize],
    strides: &[isize],
    target: &[usize],
) -> Vec<isize> {
    let mut out = vec![0isize; target.len()];
    for (o, (&n, &s)) in out
        .iter_mut()
        .rev()
        .zip(shape.iter().rev().zip(strides.iter().rev()))
    {
        if n != 1 {
            *o = s;
        }
    }
    out
}

/// Strides of a contiguous buffer of `shape` broadcast to `target`.
pub(crate) fn contiguous_strides_to(shape: &[usize], target: &[usize]) -> Vec<isize> {
    broadcast_strides_to(shape, &row_major_strides(shape), target)
}

/// True if `from` broadcasts to exactly `to` (extra leading 1s allowed).
pub(crate) fn broadcasts_to(from: &[usize], to: &[usize]) -> bool {
    let pad = from.len().saturating_sub(to.len());
    from[..pad].iter().all(|&d| d == 1)
        && from[pad..]
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&f, &t)| f == t || f == 1)
}

/// Runs `f(first, chunk)` over `dst`, split into chunks on the rayon pool
/// when it is large; `first` is the chunk's index in `dst`.
pub(crate) fn par_chunks<T: Send>(
    dst: &mut [T],
    f: impl Fn(usize, &mut [T]) -> Result<()> + Sync + Send,
) -> Result<()> {
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        dst.par_chunks_mut(c)
            .enumerate()
            .try_for_each(|(i, d)| f(i * c, d))
    } else {
        f(0, dst)
    }
}

/// Like [`par_chunks`], but chunks hold whole blocks of `block` elements;
/// `f` gets the index of the chunk's first block.
pub(crate) fn par_blocks<T: Send>(
    dst: &mut [T],
    block: usize,
    f: impl Fn(usize, &mut [T]) -> Result<()> + Sync + Send,
) -> Result<()> {
    if block == 0 || dst.is_empty() {
        return Ok(());
    }
    if worth_splitting(dst.len()) {
        let blocks = (chunk_len(dst.len()) / block).max(1);
        dst.par_chunks_mut(blocks * block)
            .enumerate()
            .try_for_each(|(i, d)| f(i * blocks, d))
    } else {
        f(0, dst)
    }
}

/// Copies `src` into `dst` (its element count) in row-major order.
pub(crate) fn copy_into<T: Pod>(src: &Operand<'_>, dst: &mut [T]) -> Result<()> {
    if let Some(flat) = src.data.as_contiguous::<T>(src.shape) {
        return par_chunks(dst, |first, d| {
            d.copy_from_slice(&flat[first..first + d.len()]);
            Ok(())
        });
    }
    let raw = src.data.raw::<T>();
    let strides = zip_strides([&src.data.strides]);
    let [step] = inner_strides(&strides);
    par_chunks(dst, |first, d| {
        let mut k = 0;
        for_each_segment(
            src.shape,
            &strides,
            [src.data.offset as isize],
            first,
            d.len(),
            |[o], count| {
                copy_run(raw, o, step, &mut d[k..k + count]);
                k += count;
                Ok(())
            },
        )
    })
}

/// `dst[t] = raw[start + t * step]`, a memcpy when `step == 1`.
#[inline(always)]
pub(crate) fn copy_run<T: Copy>(raw: &[T], start: isize, step: isize, dst: &mut [T]) {
    if step == 1 {
        let s = start as usize;
        dst.copy_from_slice(&raw[s..s + dst.len()]);
    } else {
        for (t, x) in dst.iter_mut().enumerate() {
            *x = raw[(start + t as isize * step) as usize];
        }
    }
}

/// A fixed-shape block inside K strided buffers, as a list of runs.
///
/// Dimensions of size 1 are dropped and neighbours merged wherever every
/// buffer is contiguous across them, so a block of contiguous buffers is a
/// single run. Run `r` starts at `rows[r]` (relative to the block's base
/// offsets) and has `run` elements stepping by `run_strides`.
#[derive(Debug)]
pub(crate) struct Runs<const K: usize> {
    pub rows: Vec<[isize; K]>,
    pub run: usize,
    pub run_strides: [isize; K],
}

impl<const K: usize> Runs<K> {
    pub fn new(shape: &[usize], strides: &[[isize; K]]) -> Runs<K> {
        if shape.contains(&0) {
            return Runs {
                rows: vec![],
                run: 0,
                run_strides: [0; K],
            };
        }
        let mut dims: Vec<(usize, [isize; K])> = vec![];
        for (&n, &s) in shape.iter().zip(strides) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                // (m, p) then (n, s) is one dimension of m*n when p == s*n.
                Some(prev) if (0..K).all(|k| prev.1[k] == s[k] * n as isize) => {
                    *prev = (prev.0 * n, s);
                }
                _ => dims.push((n, s)),
            }
        }
        let (run, run_strides) = dims.pop().unwrap_or((1, [1; K]));
        let outer: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let outer_strides: Vec<[isize; K]> = dims.iter().map(|d| d.1).collect();
        Runs {
            rows: offsets(&outer, &outer_strides, [0; K]),
            run,
            run_strides,
        }
    }

    /// Elements in the block.
    pub fn len(&self) -> usize {
        self.rows.len() * self.run
    }
}

impl Runs<1> {
    /// Copies the block at `base` of `src` into `dst` (row-major).
    #[inline]
    pub fn copy<T: Copy>(&self, src: &[T], base: isize, dst: &mut [T]) {
        if self.run == 0 {
            return;
        }
        for (r, d) in self.rows.iter().zip(dst.chunks_exact_mut(self.run)) {
            copy_run(src, base + r[0], self.run_strides[0], d);
        }
    }
}

/// Maps flat row-major positions of an array to storage offsets.
pub(crate) struct Unravel<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    offset: isize,
}

impl<'a> Unravel<'a> {
    pub fn new(op: &Operand<'a>) -> Unravel<'a> {
        Unravel {
            shape: op.shape,
            strides: &op.data.strides,
            offset: op.data.offset as isize,
        }
    }

    /// The storage offset of the element at flat position `p < numel`.
    #[inline]
    pub fn offset(&self, mut p: usize) -> isize {
        let mut off = self.offset;
        for (&n, &s) in self.shape.iter().zip(self.strides).rev() {
            off += (p % n) as isize * s;
            p /= n;
        }
        off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_a_range_starting_mid_row() {
        let mut seen = vec![];
        for_each_segment(&[2, 3], &[[3], [1]], [0], 2, 3, |[o], c| {
            seen.push((o, c));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(2, 1), (3, 2)]);
    }

    #[test]
    fn segments_of_a_transposed_walk() {
        let all = offsets(&[3, 2], &[[1], [3]], [0]);
        assert_eq!(
            all.iter().map(|o| o[0]).collect::<Vec<_>>(),
            vec![0, 3, 1, 4, 2, 5]
        );
    }

    #[test]
    fn runs_merge_contiguous_dims() {
        let r = Runs::<1>::new(&[2, 1, 3], &[[3], [99], [1]]);
        assert_eq!((r.rows.len(), r.run, r.run_strides), (1, 6, [1]));
        let r = Runs::<1>::new(&[2, 3], &[[1], [2]]);
        assert_eq!(
            (r.rows.clone(), r.run, r.run_strides),
            (vec![[0], [1]], 3, [2])
        );
        assert_eq!(Runs::<1>::new(&[], &[]).len(), 1);
        assert_eq!(Runs::<1>::new(&[2, 0], &[[1], [1]]).len(), 0);
    }

    #[test]
    fn broadcast_rules() {
        assert!(broadcasts_to(&[1, 3], &[2, 3]));
        assert!(broadcasts_to(&[1, 1, 3], &[2, 3]));
        assert!(!broadcasts_to(&[2, 1, 3], &[2, 3]));
        assert!(!broadcasts_to(&[4], &[2, 3]));
        assert_eq!(contiguous_strides_to(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
    }

    #[test]
    fn unravel_follows_strides() {
        let st = crate::graph::storage::Storage::new(6 * 4, false).unwrap();
        let data = crate::graph::layout::Data {
            storage: std::sync::Arc::new(st),
            strides: vec![1, 3],
            offset: 0,
        };
        let op = Operand {
            data: &data,
            shape: &[3, 2],
            dtype: crate::dtype::DType::Float32,
        };
        let u = Unravel::new(&op);
        assert_eq!(
            (0..6).map(|p| u.offset(p)).collect::<Vec<_>>(),
            vec![0, 3, 1, 4, 2, 5]
        );
    }
}
