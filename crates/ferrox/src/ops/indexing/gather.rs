//! MLX's general `gather`.

use super::{index_axes, index_shape, require_indices};
use crate::backend::cpu::gather;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// Copies a slice of `a` for every index tuple (MLX's `Gather`).
///
/// Inputs are `a` followed by one index array per entry of `axes`.
///
/// ```
/// use ferrox::{gather, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let g = gather(&a, &[Array::scalar(1i32)], &[0], &[1])?;
/// assert_eq!(g.primitive().unwrap().name(), "gather");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Gather {
    /// The axis each index array indexes (normalised, distinct).
    pub axes: Vec<usize>,
    /// The extent of the slice taken at each index tuple, per axis of `a`.
    pub slice_sizes: Vec<usize>,
}

impl crate::graph::export::Exportable for Gather {
    const KIND: &'static str = "gather";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let (a, indices) = inputs
            .split_first()
            .ok_or_else(|| crate::graph::export::wrong_inputs("gather", 0))?;
        gather(
            a,
            indices,
            &crate::graph::export::signed(&self.axes),
            &self.slice_sizes,
        )
    }
}

impl Primitive for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, indices) = (&inputs[0], &inputs[1..]);
        gather::gather(a, indices, &self.axes, &self.slice_sizes, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // Gathered slices are scatter-added back; indices get zeros.
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        argnums
            .iter()
            .map(|&i| match i {
                0 => crate::ops::indexing::scatter_add(
                    &crate::ops::creation::zeros_like(&p[0])?,
                    &p[1..],
                    g,
                    &axes,
                ),
                _ => crate::ops::creation::zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        gather(t, &p[1..], &axes, &self.slice_sizes)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, indices) = (&inputs[0], &inputs[1..]);
        let signed: Vec<isize> = self.axes.iter().map(|&x| x as isize).collect();
        let idx_batched = axes[1..].iter().any(Option::is_some);
        match (axes[0], idx_batched) {
            (None, false) => Ok((gather(a, indices, &signed, &self.slice_sizes)?, None)),
            (Some(ax), false) => {
                // The batch axis is taken whole: it lands after the index dims.
                let a2 = grad_helpers::batch_front(a, Some(ax))?;
                let ax2: Vec<isize> = signed.iter().map(|&x| x + 1).collect();
                let sizes: Vec<usize> = std::iter::once(a2.shape()[0])
                    .chain(self.slice_sizes.iter().copied())
                    .collect();
                let ni = crate::ops::shape_rules::broadcast_many(
                    "gather",
                    &indices.iter().collect::<Vec<_>>(),
                )?
                .len();
                Ok((gather(&a2, indices, &ax2, &sizes)?, Some(ni)))
            }
            (None, true) => {
                let (idx, _) = grad_helpers::align_batch(indices, &axes[1..])?;
                Ok((gather(a, &idx, &signed, &self.slice_sizes)?, Some(0)))
            }
            (Some(ax), true) => {
                // Index the batch axis of `a` with the batch position.
                let a2 = grad_helpers::batch_front(a, Some(ax))?;
                let b = a2.shape()[0];
                let (mut idx, _) = grad_helpers::align_batch(indices, &axes[1..])?;
                let rank = idx.iter().map(Array::ndim).max().unwrap_or(1);
                let mut shape = vec![1; rank.max(1)];
                shape[0] = b;
                let pos =
                    crate::ops::creation::arange(0.0, b as f64, 1.0, crate::dtype::DType::Int64)?;
                idx.insert(0, grad_helpers::reshape_to(&pos, &shape)?);
                let ax2: Vec<isize> = std::iter::once(0)
                    .chain(signed.iter().map(|&x| x + 1))
                    .collect();
                let sizes: Vec<usize> = std::iter::once(1)
                    .chain(self.slice_sizes.iter().copied())
                    .collect();
                let out = gather(&a2, &idx, &ax2, &sizes)?;
                let batch_slice = out.ndim() - sizes.len();
                Ok((
                    crate::ops::views::squeeze(&out, Some(&[batch_slice as isize]))?,
                    Some(0),
                ))
            }
        }
    }
    crate::primitive_common!();
}

/// MLX's general gather: for every index tuple, a slice of `a`.
///
/// `indices[k]` holds positions along `axes[k]`; the index arrays broadcast
/// to a common shape `I`. For each entry of `I` the slice of `a` of shape
/// `slice_sizes` starting at those positions (and at 0 on the other axes)
/// is copied, so the result has shape `I + slice_sizes`. Slices must fit:
/// `slice_sizes[d] <= a.shape[d]`, and an index `p` along axis `d` needs
/// `p + slice_sizes[d] <= a.shape[d]` (checked at evaluation; negative
/// indices count from the end). `take` is `gather` with one index array
/// and a slice size of 1 on its axis.
///
/// ```
/// use ferrox::{gather, Array};
/// let a = Array::from_slice(&(0..12).collect::<Vec<i32>>(), &[3, 4])?;
/// let rows = Array::from_slice(&[2i32, 0], &[2])?;
/// let cols = Array::from_slice(&[1i32, 3], &[2])?;
/// // Elements a[2, 1] and a[0, 3].
/// let g = gather(&a, &[rows.clone(), cols], &[0, 1], &[1, 1])?;
/// assert_eq!(g.shape(), &[2, 1, 1]);
/// assert_eq!(g.to_vec::<i32>()?, vec![9, 3]);
/// // Row slices of 2 elements starting at rows 2 and 0, column 0.
/// let g = gather(&a, &[rows], &[0], &[1, 2])?;
/// assert_eq!(g.to_vec::<i32>()?, vec![8, 9, 0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gather(
    a: &Array,
    indices: &[Array],
    axes: &[isize],
    slice_sizes: &[usize],
) -> Result<Array> {
    let op = "gather";
    for idx in indices {
        require_indices(op, idx)?;
    }
    let axes = index_axes(op, axes, indices.len(), a.ndim())?;
    check_slice_sizes(op, a.shape(), slice_sizes)?;
    let shape = [index_shape(op, indices)?, slice_sizes.to_vec()].concat();
    checked_numel(op, &shape)?;
    let inputs = std::iter::once(a.clone())
        .chain(indices.iter().cloned())
        .collect();
    Ok(Array::from_op(
        shape,
        a.dtype(),
        Gather {
            axes,
            slice_sizes: slice_sizes.to_vec(),
        },
        inputs,
    ))
}

/// One slice size per axis of `shape`, none larger than its axis.
pub(super) fn check_slice_sizes(op: &str, shape: &[usize], slice: &[usize]) -> Result<()> {
    if slice.len() != shape.len() {
        return Err(Error::shape(
            op,
            format!(
                "slice sizes {slice:?} must have one entry per dimension of a (shape {shape:?})"
            ),
        ));
    }
    if let Some(d) = (0..shape.len()).find(|&d| slice[d] > shape[d]) {
        return Err(Error::shape(
            op,
            format!(
                "slice size {} along axis {d} exceeds a's size {} there (shape {shape:?})",
                slice[d], shape[d]
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::error::ErrorKind;
    use crate::ops::indexing::tests_support::{contiguous, eval_kernel, permuted};
    use proptest::prelude::*;

    fn arr(v: &[i32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn gather_broadcasts_index_arrays() {
        let a = arr(&(0..12).collect::<Vec<_>>(), &[3, 4]);
        let rows = arr(&[0, 2], &[2, 1]);
        let cols = arr(&[1, -1, 0], &[3]);
        let g = gather(&a, &[rows, cols], &[0, 1], &[1, 1]).unwrap();
        assert_eq!(g.shape(), &[2, 3, 1, 1]);
        assert_eq!(g.to_vec::<i32>().unwrap(), [1, 3, 0, 9, 11, 8]);
    }

    #[test]
    fn gather_without_indices_is_a_corner_slice() {
        let a = arr(&(0..12).collect::<Vec<_>>(), &[3, 4]);
        let g = gather(&a, &[], &[], &[2, 2]).unwrap();
        assert_eq!(
            (g.shape(), g.to_vec::<i32>().unwrap()),
            (&[2usize, 2][..], vec![0, 1, 4, 5])
        );
    }

    #[test]
    fn gather_validates() {
        let a = arr(&(0..12).collect::<Vec<_>>(), &[3, 4]);
        let i = arr(&[0], &[1]);
        let f = Array::from_slice(&[0.5f32], &[1]).unwrap();
        assert_eq!(
            gather(&a, &[f], &[0], &[1, 4]).unwrap_err().kind(),
            ErrorKind::Dtype
        );
        assert_eq!(
            gather(&a, std::slice::from_ref(&i), &[0, 1], &[1, 4])
                .unwrap_err()
                .kind(),
            ErrorKind::Value
        );
        assert_eq!(
            gather(&a, &[i.clone(), i.clone()], &[0, -2], &[1, 4])
                .unwrap_err()
                .kind(),
            ErrorKind::Axis
        );
        assert_eq!(
            gather(&a, std::slice::from_ref(&i), &[2], &[1, 4])
                .unwrap_err()
                .kind(),
            ErrorKind::Axis
        );
        assert_eq!(
            gather(&a, std::slice::from_ref(&i), &[0], &[1])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            gather(&a, std::slice::from_ref(&i), &[0], &[1, 5])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        let j = arr(&[0, 1], &[2]);
        assert_eq!(
            gather(&a, &[arr(&[0, 1, 2], &[3]), j], &[0, 1], &[1, 1])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        // The slice must fit after the start index.
        let err = gather(&a, &[arr(&[2], &[1])], &[0], &[2, 4])
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "gather: index 2 is out of bounds for axis 0 with size 3 and slice size 2"
        );
        assert!(
            gather(&a, &[arr(&[-2], &[1])], &[0], &[2, 4])
                .unwrap()
                .eval()
                .is_ok()
        );
    }

    #[test]
    fn gather_from_a_transposed_operand() {
        // a = [[0, 1, 2], [3, 4, 5]] stored column-major.
        let (a_data, a_shape) = permuted(&[0i32, 3, 1, 4, 2, 5], &[3, 2], &[1, 0]);
        let i_data = contiguous(&[2i64, 1], &[2]);
        let a = Operand {
            data: &a_data,
            shape: &a_shape,
            dtype: DType::Int32,
        };
        let i = Operand {
            data: &i_data,
            shape: &[2],
            dtype: DType::Int64,
        };
        let g = Gather {
            axes: vec![1],
            slice_sizes: vec![2, 1],
        };
        assert_eq!(
            eval_kernel::<i32>(&g, &[a, i], &[2, 2, 1], DType::Int32).unwrap(),
            [2, 5, 1, 4]
        );
        let g = Gather {
            axes: vec![1],
            slice_sizes: vec![2, 2],
        };
        assert!(eval_kernel::<i32>(&g, &[a, i], &[2, 2, 2], DType::Int32).is_err());
    }

    proptest! {
        #[test]
        fn gather_matches_naive_loop(
            rows in 1usize..5, cols in 1usize..5,
            r_idx in proptest::collection::vec(0usize..100, 0..5),
            sr_seed in 0usize..100, sc_seed in 0usize..100,
        ) {
            let (sr, sc) = (1 + sr_seed % rows, 1 + sc_seed % cols);
            let data: Vec<i32> = (0..(rows * cols) as i32).collect();
            let a = arr(&data, &[rows, cols]);
            let idx: Vec<i32> = r_idx.iter().map(|&i| (i % (rows - sr + 1)) as i32).collect();
            let g = gather(&a, &[arr(&idx, &[idx.len()])], &[0], &[sr, sc]).unwrap();
            let mut want = vec![];
            for &i in &idx {
                for r in 0..sr {
                    for c in 0..sc {
                        want.push(data[(i as usize + r) * cols + c]);
                    }
                }
            }
            prop_assert_eq!(g.to_vec::<i32>().unwrap(), want);
        }
    }
}
