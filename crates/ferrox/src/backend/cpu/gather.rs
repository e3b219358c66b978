//! Gathers: `take`, `take_along_axis` and MLX's general `gather`. Index
//! values are checked and turned into positions first
//! ([`index`](super::index)), then data moves. Copies depend only on the
//! element size, so they are instantiated per size (1, 2, 4, 8 bytes), not
//! per dtype; contiguous inner runs are copied as slices and large outputs
//! split over cores.

use super::copy::with_elem_size;
use super::elementwise::out_storage;
use super::index::{IndexBound, positions, slice_starts};
use super::strided::{
    Runs, Unravel, broadcast_strides_to, contiguous_strides_to, numel, offsets, par_blocks,
    par_chunks,
};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::{for_each_segment, inner_strides, zip_strides};

/// MLX's gather: for each index tuple of `indices` (one array per entry of
/// `axes`, broadcast to the leading output dimensions) the slice of `a` of
/// `slice_sizes` starting there.
pub fn gather(
    a: &Operand<'_>,
    indices: &[Operand<'_>],
    axes: &[usize],
    slice_sizes: &[usize],
    out: OutSpec<'_>,
) -> Result<Data> {
    let index_shape = &out.shape[..out.shape.len() - a.shape.len()];
    let starts = slice_starts(
        "gather",
        indices,
        axes,
        index_shape,
        a.shape,
        &a.data.strides,
        slice_sizes,
        a.data.offset as isize,
    )?;
    with_elem_size!(a.dtype.size(), T => gather_slices::<T>(a, &starts, slice_sizes, out))
}

/// The entries of the flattened `a` at `idx`, with index errors naming
/// `op`: `take` and `take_along_axis` without an axis.
fn take_flattened(
    op: &'static str,
    a: &Operand<'_>,
    idx: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let pos = positions(idx, IndexBound::new(op, None, numel(a.shape)))?;
    with_elem_size!(a.dtype.size(), T => take_flat::<T>(a, &pos, out))
}

/// `take`: the entries of `a` at `idx` along `axis` (of flattened `a` when
/// `None`); the output has the index dimensions in place of `axis`.
pub fn take(
    a: &Operand<'_>,
    idx: &Operand<'_>,
    axis: Option<usize>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let Some(axis) = axis else {
        return take_flattened("take", a, idx, out);
    };
    let pos = positions(idx, IndexBound::new("take", Some(axis), a.shape[axis]))?;
    with_elem_size!(a.dtype.size(), T => take_axis::<T>(a, &pos, axis, out))
}

/// `take_along_axis`: one entry of `a` along `axis` per entry of `idx`
/// (broadcast against `a` on the other axes; 1-d over flattened `a` when
/// `None`).
pub fn take_along_axis(
    a: &Operand<'_>,
    idx: &Operand<'_>,
    axis: Option<usize>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let op = "take_along_axis";
    let Some(axis) = axis else {
        return take_flattened(op, a, idx, out);
    };
    let pos = positions(idx, IndexBound::new(op, Some(axis), a.shape[axis]))?;
    with_elem_size!(a.dtype.size(), T => take_along::<T>(a, idx.shape, &pos, axis, out))
}

/// Output block `i` (one slice of `a`) is copied from storage offset
/// `starts[i]`; runs that are contiguous in `a` are memcpys.
fn gather_slices<T: Pod>(
    a: &Operand<'_>,
    starts: &[isize],
    slice: &[usize],
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    let raw = a.data.raw::<T>();
    let block = Runs::new(slice, &zip_strides([&a.data.strides]));
    if block.len() == 1 {
        par_chunks(dst, |first, d| {
            for (x, &s) in d.iter_mut().zip(&starts[first..]) {
                *x = raw[s as usize];
            }
            Ok(())
        })?;
    } else {
        par_blocks(dst, block.len(), |first, d| {
            for (chunk, &s) in d.chunks_exact_mut(block.len()).zip(&starts[first..]) {
                block.copy(raw, s, chunk);
            }
            Ok(())
        })?;
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// `out[j] = flat(a)[pos[j]]`.
fn take_flat<T: Pod>(a: &Operand<'_>, pos: &[usize], out: OutSpec<'_>) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    if let Some(src) = a.data.as_contiguous::<T>(a.shape) {
        par_chunks(dst, |first, d| {
            for (x, &p) in d.iter_mut().zip(&pos[first..]) {
                *x = src[p];
            }
            Ok(())
        })?;
    } else {
        let raw = a.data.raw::<T>();
        let unravel = Unravel::new(a);
        par_chunks(dst, |first, d| {
            for (x, &p) in d.iter_mut().zip(&pos[first..]) {
                *x = raw[unravel.offset(p) as usize];
            }
            Ok(())
        })?;
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// `out[o, j, i] = a[o, pos[j], i]` with `o`/`i` the dimensions before and
/// after `axis`: each `(o, j)` copies one inner block (a memcpy when `a` is
/// contiguous there).
fn take_axis<T: Pod>(
    a: &Operand<'_>,
    pos: &[usize],
    axis: usize,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    let raw = a.data.raw::<T>();
    let st = &a.data.strides;
    let outer: Vec<isize> = offsets(
        &a.shape[..axis],
        &zip_strides([&st[..axis]]),
        [a.data.offset as isize],
    )
    .into_iter()
    .map(|[o]| o)
    .collect();
    let block = Runs::new(&a.shape[axis + 1..], &zip_strides([&st[axis + 1..]]));
    let (step, n_idx) = (st[axis], pos.len());
    let start = |b: usize| outer[b / n_idx] + pos[b % n_idx] as isize * step;
    if block.len() == 1 {
        par_chunks(dst, |first, d| {
            for (b, x) in d.iter_mut().enumerate() {
                *x = raw[(start(first + b) + block.rows[0][0]) as usize];
            }
            Ok(())
        })?;
    } else {
        par_blocks(dst, block.len(), |first, d| {
            for (b, chunk) in d.chunks_exact_mut(block.len()).enumerate() {
                block.copy(raw, start(first + b), chunk);
            }
            Ok(())
        })?;
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// `out[.., j, ..] = a[.., pos[.., j, ..], ..]`, elementwise over the
/// output; `a` and the positions are read through broadcast strides.
fn take_along<T: Pod>(
    a: &Operand<'_>,
    idx_shape: &[usize],
    pos: &[usize],
    axis: usize,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    let raw = a.data.raw::<T>();
    let mut a_strides = broadcast_strides_to(a.shape, &a.data.strides, out.shape);
    a_strides[axis] = 0;
    let strides = zip_strides([&a_strides, &contiguous_strides_to(idx_shape, out.shape)]);
    let [sa, sp] = inner_strides(&strides);
    let step = a.data.strides[axis];
    par_chunks(dst, |first, d| {
        let mut k = 0;
        for_each_segment(
            out.shape,
            &strides,
            [a.data.offset as isize, 0],
            first,
            d.len(),
            |[oa, op], count| {
                for (t, x) in d[k..k + count].iter_mut().enumerate() {
                    let t = t as isize;
                    let p = pos[(op + t * sp) as usize] as isize;
                    *x = raw[(oa + t * sa + p * step) as usize];
                }
                k += count;
                Ok(())
            },
        )
    })?;
    Ok(Data::contiguous(storage, out.shape))
}
