//! The `where` kernel: contiguous condition and values (or single-element
//! values) get one vectorised loop per combination, in parallel when
//! large; everything else goes through the broadcasting
//! [`ternary`](super::elementwise::ternary()) engine.

use super::elementwise::{Lane, out_storage, ternary};
use super::parallel::{chunk_len, simd, worth_splitting};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::with_dtype;
use rayon::prelude::*;

/// `x` where `c` (bool) is true, `y` elsewhere; `x`, `y` and the output
/// share a dtype.
pub fn select(c: &Operand<'_>, x: &Operand<'_>, y: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    with_dtype!(out.dtype, T => select_kernel::<T>(c, x, y, out))
}

fn select_kernel<T: Pod>(
    c: &Operand<'_>,
    x: &Operand<'_>,
    y: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let cond = if c.shape == out.shape {
        c.data.as_contiguous::<bool>(c.shape)
    } else {
        None
    };
    let (Some(cond), Some(xl), Some(yl)) = (
        cond,
        Lane::<T>::of(x, out.shape),
        Lane::<T>::of(y, out.shape),
    ) else {
        return ternary(c, x, y, out, |c: bool, x: T, y: T| if c { x } else { y });
    };
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    // Each combination gets its own loop so that it vectorises.
    match (xl, yl) {
        (Lane::Flat(xs), Lane::Flat(ys)) => chunked(cond, dst, |c, start, d| {
            let (xs, ys) = (&xs[start..start + d.len()], &ys[start..start + d.len()]);
            for (((o, &c), &x), &y) in d.iter_mut().zip(c).zip(xs).zip(ys) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Flat(xs), Lane::Scalar(y)) => chunked(cond, dst, |c, start, d| {
            let xs = &xs[start..start + d.len()];
            for ((o, &c), &x) in d.iter_mut().zip(c).zip(xs) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Scalar(x), Lane::Flat(ys)) => chunked(cond, dst, |c, start, d| {
            let ys = &ys[start..start + d.len()];
            for ((o, &c), &y) in d.iter_mut().zip(c).zip(ys) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Scalar(x), Lane::Scalar(y)) => chunked(cond, dst, |c, _, d| {
            for (o, &c) in d.iter_mut().zip(c) {
                *o = if c { x } else { y };
            }
        }),
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// Runs `body(cond_chunk, start, dst_chunk)` over matching chunks of `cond`
/// and `dst` (`start` is the chunk's first index), in parallel when large
/// and under the best SIMD instruction set. `cond.len() == dst.len()`.
fn chunked<T: Pod>(cond: &[bool], dst: &mut [T], body: impl Fn(&[bool], usize, &mut [T]) + Sync) {
    let run = |c: &[bool], start: usize, d: &mut [T]| simd(|| body(c, start, d));
    if worth_splitting(dst.len()) {
        let len = chunk_len(dst.len());
        dst.par_chunks_mut(len)
            .zip(cond.par_chunks(len))
            .enumerate()
            .for_each(|(k, (d, c))| run(c, k * len, d));
    } else {
        run(cond, 0, dst);
    }
}
