//! Indexing: [`take`], [`take_along_axis`], [`put_along_axis`], MLX's general
//! [`gather`] and [`scatter`] family, the functional `a.at(idx)` updates
//! ([`ArrayAt`]), [`slice_update`] and the boolean-mask [`masked_scatter`].
//!
//! Index arrays are data. Builders check what is known when the graph is
//! built (integer dtypes, shapes, axes); the kernels check every index value
//! and return an [`ErrorKind::Index`](crate::ErrorKind::Index) error naming
//! the op, the index and the axis size — never a panic, never an
//! out-of-bounds read. Negative indices count from the end of the axis.
//!
//! The kernels are in `backend::cpu::{index, gather, scatter}` and run in
//! two passes: index values are validated and turned into
//! positions (one tight loop, parallel when large), then data moves. Moving
//! data depends only on the element size, so copies are instantiated per size
//! (1, 2, 4, 8 bytes) rather than per dtype; only the combining scatters
//! (add, prod, max, min) are instantiated per dtype. Gathers copy contiguous
//! inner runs as slices and split large outputs over cores; scatters run
//! serially in index order, which makes duplicate indices well defined
//! (accumulate for the combining modes, last write wins for `scatter`).

mod at;
mod dynamic;
pub(crate) mod gather;
mod masked;
pub(crate) mod put_along_axis;
pub(crate) mod scatter;
pub(crate) mod slice_update;
pub(crate) mod take;

pub use at::{ArrayAt, IndexArrays};
pub use dynamic::{dynamic_slice, dynamic_slice_update};
pub use gather::{Gather, gather};
pub use masked::masked_scatter;
pub use put_along_axis::{PutAlongAxis, put_along_axis};
pub use scatter::{
    Scatter, ScatterMode, UpdatesLayout, scatter, scatter_add, scatter_max, scatter_min,
    scatter_prod,
};
pub use slice_update::{SliceUpdate, slice_update};
pub(crate) use take::scatter_along_axis;
pub use take::{Take, TakeAlongAxis, take, take_along_axis};

use crate::error::{Error, Result};
use crate::graph::array::Array;

/// Checks that `indices` can index: an integer dtype (any width/sign).
fn require_indices(op: &str, indices: &Array) -> Result<()> {
    if indices.dtype().is_integer() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "indices must have an integer dtype, got {}",
                indices.dtype()
            ),
        ))
    }
}

/// Broadcast shape of the index arrays (`[]` when there are none).
fn index_shape(op: &str, indices: &[Array]) -> Result<Vec<usize>> {
    let refs: Vec<&Array> = indices.iter().collect();
    super::shape_rules::broadcast_many(op, &refs)
}

/// Normalises gather/scatter axes: in range, no repeats, one per index array.
fn index_axes(op: &str, axes: &[isize], n_indices: usize, ndim: usize) -> Result<Vec<usize>> {
    if axes.len() != n_indices {
        return Err(Error::value(
            op,
            format!(
                "{n_indices} index arrays were given for {} axes {axes:?}; they must match",
                axes.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(axes.len());
    for &ax in axes {
        let a = super::shape_rules::normalize_axis(op, ax, ndim)?;
        if out.contains(&a) {
            return Err(Error::axis(op, format!("repeated axis {ax} in {axes:?}")));
        }
        out.push(a);
    }
    Ok(out)
}

/// Builders of strided test operands.
#[cfg(test)]
pub(crate) mod tests_support {
    use crate::dtype::DType;
    use crate::error::Result;
    use crate::graph::layout::{Data, row_major_strides};
    use crate::graph::primitive::{Operand, OutSpec, Primitive};
    use crate::graph::storage::{Pod, Storage};

    /// Contiguous data holding `values`.
    pub fn contiguous<T: Pod>(values: &[T], shape: &[usize]) -> Data {
        let mut s = Storage::new(std::mem::size_of_val(values), false).unwrap();
        s.as_mut_slice::<T>().copy_from_slice(values);
        Data::contiguous(s, shape)
    }

    /// `stored` (row-major, `stored_shape`) seen with its axes permuted by
    /// `perm`; returns the view's data and shape.
    pub fn permuted<T: Pod>(
        stored: &[T],
        stored_shape: &[usize],
        perm: &[usize],
    ) -> (Data, Vec<usize>) {
        let mut d = contiguous(stored, stored_shape);
        let st = row_major_strides(stored_shape);
        d.strides = perm.iter().map(|&p| st[p]).collect();
        (d, perm.iter().map(|&p| stored_shape[p]).collect())
    }

    /// `stored` seen with every axis reversed (negative strides).
    pub fn reversed<T: Pod>(stored: &[T], shape: &[usize]) -> (Data, Vec<usize>) {
        let mut d = contiguous(stored, shape);
        d.offset = stored.len().saturating_sub(1);
        d.strides = d.strides.iter().map(|s| -s).collect();
        (d, shape.to_vec())
    }

    /// Runs a primitive's kernel directly and reads the result.
    pub fn eval_kernel<T: Pod>(
        p: &dyn Primitive,
        inputs: &[Operand<'_>],
        shape: &[usize],
        dtype: DType,
    ) -> Result<Vec<T>> {
        let d = p.eval_cpu(inputs, OutSpec { shape, dtype })?;
        Ok(d.to_vec::<T>(shape))
    }
}
