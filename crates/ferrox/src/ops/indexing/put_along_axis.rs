//! `put_along_axis`: the inverse of `take_along_axis`.

use super::require_indices;
use super::take;
use super::take::along_axis_shape;
use crate::backend::cpu::scatter;
use crate::backend::cpu::strided::broadcasts_to;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use crate::ops::shape_rules::normalize_axis;

/// Writes `values` into a copy of `a` at `indices` along an axis.
///
/// ```
/// use ferrox::{put_along_axis, zeros, Array, DType};
/// let p = put_along_axis(&zeros(&[2], DType::Int32)?, &Array::from_slice(&[1i32], &[1])?, &Array::from(5), None)?;
/// assert_eq!(p.primitive().unwrap().name(), "put_along_axis");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PutAlongAxis {
    /// The axis (normalised); `None` for flattened `a` and 1-d indices.
    pub axis: Option<usize>,
}

impl crate::graph::export::Exportable for PutAlongAxis {
    const KIND: &'static str = "put_along_axis";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, i, v] = crate::graph::export::args(inputs, "put_along_axis")?;
        put_along_axis(
            a,
            i,
            v,
            self.axis.map(|x| isize::try_from(x).unwrap_or(isize::MAX)),
        )
    }
}

impl Primitive for PutAlongAxis {
    fn name(&self) -> &'static str {
        "put_along_axis"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, idx, values) = (&inputs[0], &inputs[1], &inputs[2]);
        // The index grid: the indices' shape, or broadcast with `a` off `axis`.
        let grid = match self.axis {
            None => idx.shape.to_vec(),
            Some(axis) => along_axis_shape("put_along_axis", a.shape, idx.shape, axis as isize)?,
        };
        scatter::put_along_axis(a, idx, values, self.axis, &grid, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // Overwritten entries of `a` get no cotangent; the values get the
        // cotangent at their positions (every duplicate gets it).
        let (idx, axis) = (&p[1], self.axis.map(|a| a as isize));
        argnums
            .iter()
            .map(|&i| match i {
                0 => put_along_axis(g, idx, &crate::ops::creation::zeros(&[], g.dtype())?, axis),
                2 => {
                    let taken = crate::ops::indexing::take_along_axis(g, idx, axis)?;
                    grad_helpers::unbroadcast(&taken, p[2].shape())
                }
                _ => crate::ops::creation::zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        if tangents[0].is_none() && tangents[2].is_none() {
            return crate::ops::creation::zeros_like(output);
        }
        let ta = grad_helpers::tangent_or_zeros(p, tangents, 0)?;
        let tv = grad_helpers::tangent_or_zeros(p, tangents, 2)?;
        put_along_axis(&ta, &p[1], &tv, self.axis.map(|a| a as isize))
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, idx, v) = (&inputs[0], &inputs[1], &inputs[2]);
        if axes.iter().all(Option::is_none) {
            return Ok((
                put_along_axis(a, idx, v, self.axis.map(|x| x as isize))?,
                None,
            ));
        }
        let b = axes
            .iter()
            .zip(inputs)
            .find_map(|(ax, x)| ax.map(|ax| x.shape()[ax]))
            .unwrap_or(1);
        let example = a.shape()[usize::from(axes[0].is_some())..].to_vec();
        let a2 = match axes[0] {
            Some(_) => grad_helpers::batch_front(a, axes[0])?,
            None => {
                let shape: Vec<usize> = std::iter::once(b).chain(example.iter().copied()).collect();
                crate::ops::views::broadcast_to(&crate::ops::views::expand_dims(a, &[0])?, &shape)?
            }
        };
        let i2 = take::batch_or_one(idx, axes[1])?;
        let grid_rank = if self.axis.is_some() {
            example.len()
        } else {
            1
        };
        let v2 = match axes[2] {
            Some(_) => {
                grad_helpers::pad_example_rank(&grad_helpers::batch_front(v, axes[2])?, grid_rank)?
            }
            None => v.clone(),
        };
        let out = match self.axis {
            Some(ax) => put_along_axis(&a2, &i2, &v2, Some(ax as isize + 1))?,
            None => {
                let flat = grad_helpers::reshape_to(&a2, &[b, a2.size() / b.max(1)])?;
                let r = put_along_axis(&flat, &i2, &v2, Some(1))?;
                grad_helpers::reshape_to(&r, a2.shape())?
            }
        };
        Ok((out, Some(0)))
    }
    crate::primitive_common!();
}

/// Returns a copy of `a` with `values` written at `indices` along `axis`:
/// the inverse of [`take_along_axis`](crate::take_along_axis) (numpy's
/// `put_along_axis`, functional as in MLX).
///
/// `indices` has as many dimensions as `a` and broadcasts with it on the
/// other axes; `values` broadcasts to that index shape and is cast to `a`'s
/// dtype. With `axis = None`, `a` is treated as flattened and `indices`
/// must be 1-d. Of duplicate indices the last value (row-major) wins.
///
/// ```
/// use ferrox::{put_along_axis, zeros, Array, DType};
/// let a = zeros(&[2, 3], DType::Float32)?;
/// let idx = Array::from_slice(&[2i32, 0], &[2, 1])?;
/// let p = put_along_axis(&a, &idx, &Array::from(1.0), Some(1))?;
/// assert_eq!(p.to_vec::<f32>()?, vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn put_along_axis(
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: Option<isize>,
) -> Result<Array> {
    let op = "put_along_axis";
    // An empty index array selects nothing whatever its dtype (MLX accepts
    // `put_along_axis(e, e, e)` for an empty float `e`).
    let int_indices;
    let indices = if indices.size() == 0 && !indices.dtype().is_integer() {
        int_indices = indices.astype(crate::dtype::DType::Int32)?;
        &int_indices
    } else {
        indices
    };
    require_indices(op, indices)?;
    let (grid, axis) = match axis {
        None if indices.ndim() != 1 => {
            return Err(Error::shape(
                op,
                format!(
                    "with axis None the indices must be 1-d, got shape {:?}",
                    indices.shape()
                ),
            ));
        }
        None => (indices.shape().to_vec(), None),
        Some(ax) => (
            along_axis_shape(op, a.shape(), indices.shape(), ax)?,
            Some(normalize_axis(op, ax, a.ndim())?),
        ),
    };
    if !broadcasts_to(values.shape(), &grid) {
        return Err(Error::shape(
            op,
            format!(
                "values with shape {:?} cannot be broadcast to the index shape {grid:?}",
                values.shape()
            ),
        ));
    }
    let values = values.astype(a.dtype())?;
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        PutAlongAxis { axis },
        vec![a.clone(), indices.clone(), values],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::error::ErrorKind;
    use crate::ops::creation::zeros;
    use crate::ops::indexing::tests_support::{contiguous, eval_kernel, permuted};

    fn arr(v: &[i32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn put_along_axis_cases() {
        let a = zeros(&[2, 3], DType::Int32).unwrap();
        let idx = arr(&[0, 2, 1, 1], &[2, 2]);
        let vals = arr(&[1, 2, 3, 4], &[2, 2]);
        let p = put_along_axis(&a, &idx, &vals, Some(-1)).unwrap();
        assert_eq!(p.to_vec::<i32>().unwrap(), [1, 0, 2, 0, 4, 0]);
        let err = put_along_axis(&a, &arr(&[4, -1], &[2]), &vals, None).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Shape,
            "values [2, 2] do not broadcast to [2]"
        );
        let p = put_along_axis(&a, &arr(&[4, -6], &[2]), &arr(&[7, 8], &[2]), None).unwrap();
        assert_eq!(p.to_vec::<i32>().unwrap(), [8, 0, 0, 0, 7, 0]);
        let p = put_along_axis(&a, &arr(&[1, 1, 1], &[1, 3]), &Array::from(9), Some(0)).unwrap();
        assert_eq!(p.to_vec::<i32>().unwrap(), [0, 0, 0, 9, 9, 9]);
        let err = put_along_axis(&a, &arr(&[2, 0, 0], &[1, 3]), &Array::from(9), Some(0))
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "put_along_axis: index 2 is out of bounds for axis 0 with size 2"
        );
        assert_eq!(
            put_along_axis(&a, &arr(&[0], &[1]), &Array::from(1), Some(0))
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        // Empty float indices select nothing; non-empty ones are refused.
        let e = Array::from_slice::<f32>(&[], &[0]).unwrap();
        let p = put_along_axis(&e, &e, &e, None).unwrap();
        assert_eq!(p.shape(), &[0]);
        assert_eq!(p.to_vec::<f32>().unwrap(), Vec::<f32>::new());
        let f = Array::from_slice(&[0.0f32], &[1]).unwrap();
        assert!(put_along_axis(&f, &f, &f, None).is_err());
    }

    #[test]
    fn put_into_a_strided_operand() {
        // a = [[0, 1, 2], [3, 4, 5]] stored column-major; values broadcast.
        let (a_data, a_shape) = permuted(&[0i32, 3, 1, 4, 2, 5], &[3, 2], &[1, 0]);
        let i_data = contiguous(&[2i8, -3], &[2, 1]);
        let v_data = contiguous(&[7i32, 8], &[2, 1]);
        let ops = [
            Operand {
                data: &a_data,
                shape: &a_shape,
                dtype: DType::Int32,
            },
            Operand {
                data: &i_data,
                shape: &[2, 1],
                dtype: DType::Int8,
            },
            Operand {
                data: &v_data,
                shape: &[2, 1],
                dtype: DType::Int32,
            },
        ];
        let p = PutAlongAxis { axis: Some(1) };
        assert_eq!(
            eval_kernel::<i32>(&p, &ops, &[2, 3], DType::Int32).unwrap(),
            [0, 1, 7, 8, 4, 5]
        );
    }
}
