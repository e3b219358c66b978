//! Reading index arrays: every index value is checked against what it
//! indexes ([`IndexBound`]) and turned into a position, in one tight loop
//! (parallel when large), before any data moves. An index out of range is
//! an `Index` error naming the op, the index and the axis size — never a
//! panic, never an out-of-bounds read. Negative indices count from the end.

use super::strided::{contiguous_strides_to, numel, par_chunks};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::primitive::Operand;
use crate::graph::storage::Pod;
use crate::graph::walk::{for_each_segment, inner_strides, zip_strides};
use crate::with_dtype;

/// What an index points into, for range checks and error messages.
#[derive(Clone, Copy, Debug)]
pub struct IndexBound {
    /// The op named in errors.
    pub op: &'static str,
    /// The axis indexed; `None` for a flattened array.
    pub axis: Option<usize>,
    /// The axis size; negative indices count back from it.
    pub size: usize,
    /// Extent taken from each index on (gather/scatter slices); 1 otherwise.
    pub slice: usize,
}

impl IndexBound {
    /// A bound for single-element indices (slice 1).
    pub fn new(op: &'static str, axis: Option<usize>, size: usize) -> IndexBound {
        IndexBound {
            op,
            axis,
            size,
            slice: 1,
        }
    }

    /// The position `value` denotes, if it is in range.
    #[inline(always)]
    pub fn position(&self, value: i128) -> Result<usize> {
        let n = self.size as i128;
        let p = if value < 0 { value + n } else { value };
        if p >= 0 && p + (self.slice.max(1) as i128) <= n {
            Ok(p as usize)
        } else {
            Err(self.out_of_bounds(value))
        }
    }

    #[cold]
    fn out_of_bounds(&self, value: i128) -> Error {
        let place = match self.axis {
            Some(axis) => format!("axis {axis} with size {}", self.size),
            None => format!("the flattened array with size {}", self.size),
        };
        let slice = if self.slice == 1 {
            String::new()
        } else {
            format!(" and slice size {}", self.slice)
        };
        Error::index(
            self.op,
            format!("index {value} is out of bounds for {place}{slice}"),
        )
    }
}

/// The positions that the values of `idx` denote, row-major over its shape.
pub fn positions(idx: &Operand<'_>, bound: IndexBound) -> Result<Vec<usize>> {
    if !idx.dtype.is_integer() {
        return Err(Error::dtype(
            bound.op,
            format!("indices must have an integer dtype, got {}", idx.dtype),
        ));
    }
    with_dtype!(idx.dtype, I => positions_of::<I>(idx, bound))
}

fn positions_of<I: Element + Pod>(idx: &Operand<'_>, bound: IndexBound) -> Result<Vec<usize>> {
    let mut out = vec![0usize; numel(idx.shape)];
    if let Some(src) = idx.data.as_contiguous::<I>(idx.shape) {
        par_chunks(&mut out, |first, d| {
            for (p, &v) in d.iter_mut().zip(&src[first..]) {
                *p = bound.position(v.to_i128())?;
            }
            Ok(())
        })?;
        return Ok(out);
    }
    let raw = idx.data.raw::<I>();
    let strides = zip_strides([&idx.data.strides]);
    let [step] = inner_strides(&strides);
    par_chunks(&mut out, |first, d| {
        let mut k = 0;
        for_each_segment(
            idx.shape,
            &strides,
            [idx.data.offset as isize],
            first,
            d.len(),
            |[o], count| {
                for (t, p) in d[k..k + count].iter_mut().enumerate() {
                    *p = bound.position(raw[(o + t as isize * step) as usize].to_i128())?;
                }
                k += count;
                Ok(())
            },
        )
    })?;
    Ok(out)
}

/// For MLX's gather/scatter: the storage offset each index tuple selects.
///
/// `indices[k]` indexes axis `axes[k]` of an array of `shape` with `strides`
/// (slices of `slice[axis]` elements must fit); the index arrays broadcast to
/// `index_shape`. Entry `i` (row-major over `index_shape`) is
/// `base + sum_k position_k(i) * strides[axes[k]]`.
pub fn slice_starts(
    op: &'static str,
    indices: &[Operand<'_>],
    axes: &[usize],
    index_shape: &[usize],
    shape: &[usize],
    strides: &[isize],
    slice: &[usize],
    base: isize,
) -> Result<Vec<isize>> {
    let mut starts = vec![base; numel(index_shape)];
    for (idx, &axis) in indices.iter().zip(axes) {
        let bound = IndexBound {
            op,
            axis: Some(axis),
            size: shape[axis],
            slice: slice[axis],
        };
        let pos = positions(idx, bound)?;
        let pos_strides = zip_strides([&contiguous_strides_to(idx.shape, index_shape)]);
        let [step] = inner_strides(&pos_strides);
        let stride = strides[axis];
        par_chunks(&mut starts, |first, d| {
            let mut k = 0;
            for_each_segment(
                index_shape,
                &pos_strides,
                [0],
                first,
                d.len(),
                |[p], count| {
                    for (t, s) in d[k..k + count].iter_mut().enumerate() {
                        *s += pos[(p + t as isize * step) as usize] as isize * stride;
                    }
                    k += count;
                    Ok(())
                },
            )
        })?;
    }
    Ok(starts)
}
