//! `take` and `take_along_axis`.

use super::require_indices;
use crate::backend::cpu::gather;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use crate::ops::shape_rules::normalize_axis;

/// Selects entries of `a` along `axis` (or of the flattened `a` when `None`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Take {
    /// The axis taken from (normalised); `None` takes from flattened `a`.
    pub axis: Option<usize>,
}

impl crate::graph::export::Exportable for Take {
    const KIND: &'static str = "take";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, i] = crate::graph::export::args(inputs, "take")?;
        take(
            a,
            i,
            self.axis.map(|x| isize::try_from(x).unwrap_or(isize::MAX)),
        )
    }
}

impl Primitive for Take {
    fn name(&self) -> &'static str {
        "take"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [a, idx] = input_shapes else { return None };
        match self.axis {
            None => Some(Ok(idx.to_vec())),
            Some(ax) if ax < a.len() => Some(Ok([&a[..ax], idx, &a[ax + 1..]].concat())),
            Some(_) => None,
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        gather::take(&inputs[0], &inputs[1], self.axis, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // Cotangents of the taken entries are added back at their indices.
        let (a, idx) = (&p[0], &p[1]);
        argnums
            .iter()
            .map(|&i| {
                if i != 0 {
                    return crate::ops::creation::zeros_like(&p[i]);
                }
                let (g2, idx2, axis) = self.as_along_axis(a.ndim(), g, idx)?;
                scatter_along_axis(&g2, &idx2, axis, a.shape())
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => take(t, &p[1], self.axis.map(|a| a as isize)),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, idx) = (&inputs[0], &inputs[1]);
        if axes[0].is_none() && axes[1].is_none() {
            return Ok((take(a, idx, self.axis.map(|x| x as isize))?, None));
        }
        // With the batch axis in front of both (size 1 where unbatched),
        // the take is a take_along_axis over flattened indices.
        let a2 = batch_or_one(a, axes[0])?;
        let i2 = batch_or_one(idx, axes[1])?;
        let b = a2.shape()[0].max(i2.shape()[0]);
        let idx_shape = i2.shape()[1..].to_vec();
        let k: usize = idx_shape.iter().product();
        let out = match self.axis {
            None => {
                let a3 = grad_helpers::reshape_to(
                    &a2,
                    &[a2.shape()[0], a2.size() / a2.shape()[0].max(1)],
                )?;
                let i3 = grad_helpers::reshape_to(&i2, &[i2.shape()[0], k])?;
                let t = take_along_axis(&a3, &i3, Some(1))?;
                let shape: Vec<usize> = std::iter::once(b).chain(idx_shape).collect();
                grad_helpers::reshape_to(&t, &shape)?
            }
            Some(ax) => {
                let nd = a2.ndim();
                let mut ishape = vec![1; nd];
                ishape[0] = i2.shape()[0];
                ishape[ax + 1] = k;
                let i3 = grad_helpers::reshape_to(&i2, &ishape)?;
                let t = take_along_axis(&a2, &i3, Some(ax as isize + 1))?;
                let mut shape = t.shape()[..ax + 1].to_vec();
                shape.extend(&idx_shape);
                shape.extend(&t.shape()[ax + 2..]);
                grad_helpers::reshape_to(&t, &shape)?
            }
        };
        Ok((out, Some(0)))
    }
    crate::primitive_common!();
}

impl Take {
    /// The cotangent `g` and `idx` reshaped so that this take reads as a
    /// `take_along_axis` on an input of rank `nd` (flattened indices).
    fn as_along_axis(
        &self,
        nd: usize,
        g: &Array,
        idx: &Array,
    ) -> Result<(Array, Array, Option<usize>)> {
        let k = idx.size();
        match self.axis {
            None => Ok((
                grad_helpers::reshape_to(g, &[k])?,
                grad_helpers::reshape_to(idx, &[k])?,
                None,
            )),
            Some(ax) => {
                let ni = idx.ndim();
                let mut gshape = g.shape()[..ax].to_vec();
                gshape.push(k);
                gshape.extend(&g.shape()[ax + ni..]);
                let mut ishape = vec![1; nd];
                ishape[ax] = k;
                Ok((
                    grad_helpers::reshape_to(g, &gshape)?,
                    grad_helpers::reshape_to(idx, &ishape)?,
                    Some(ax),
                ))
            }
        }
    }
}

/// `x` with its batch axis in front, or a new size-1 axis there when it is
/// not batched (the `*_along_axis` ops broadcast it).
pub(crate) fn batch_or_one(x: &Array, ax: Option<usize>) -> Result<Array> {
    match ax {
        Some(_) => grad_helpers::batch_front(x, ax),
        None => crate::ops::views::expand_dims(x, &[0]),
    }
}

/// The transpose of `take_along_axis(a, idx, axis)` for an `a` of
/// `a_shape`: zeros with every entry of `g` added at its index (duplicates
/// accumulate). `g` has the shape of the take's output.
pub(crate) fn scatter_along_axis(
    g: &Array,
    idx: &Array,
    axis: Option<usize>,
    a_shape: &[usize],
) -> Result<Array> {
    let zeros_flat = |n: usize| crate::ops::creation::zeros(&[n], g.dtype());
    match axis {
        None => {
            let n: usize = a_shape.iter().product();
            let u = crate::ops::views::expand_dims(g, &[-1])?;
            let r = crate::ops::indexing::scatter_add(
                &zeros_flat(n)?,
                std::slice::from_ref(idx),
                &u,
                &[0],
            )?;
            grad_helpers::reshape_to(&r, a_shape)
        }
        Some(ax) => {
            let nd = a_shape.len();
            let mut indices = Vec::with_capacity(nd);
            for (d, &n) in a_shape.iter().enumerate() {
                if d == ax {
                    indices.push(idx.clone());
                } else {
                    let mut shape = vec![1; nd];
                    shape[d] = n;
                    let r = crate::ops::creation::arange(
                        0.0,
                        n as f64,
                        1.0,
                        crate::dtype::DType::Int64,
                    )?;
                    indices.push(grad_helpers::reshape_to(&r, &shape)?);
                }
            }
            let mut ushape = g.shape().to_vec();
            ushape.extend(std::iter::repeat_n(1, nd));
            let u = grad_helpers::reshape_to(g, &ushape)?;
            let all: Vec<isize> = (0..nd as isize).collect();
            crate::ops::indexing::scatter_add(
                &crate::ops::creation::zeros(a_shape, g.dtype())?,
                &indices,
                &u,
                &all,
            )
        }
    }
}

/// Takes entries of `a` at `indices` along `axis`, MLX's `take`.
///
/// With `axis = Some(ax)` the result has shape
/// `a.shape[..ax] + indices.shape + a.shape[ax+1..]`; with `None`, `a` is
/// flattened and the result has the shape of `indices`. Indices may have any
/// integer dtype; negative ones count from the end. An index out of range
/// makes evaluation fail with an `Index` error naming it.
///
/// ```
/// use ferrox::{take, Array};
/// let a = Array::from_slice(&[10i32, 11, 12, 13, 14, 15], &[2, 3])?;
/// let idx = Array::from_slice(&[2i64, -3], &[2])?;
/// assert_eq!(take(&a, &idx, Some(1))?.to_vec::<i32>()?, vec![12, 10, 15, 13]);
/// assert_eq!(take(&a, &idx, None)?.to_vec::<i32>()?, vec![12, 13]);
/// let bad = Array::from_slice(&[7u8], &[1])?;
/// let err = take(&a, &bad, Some(0))?.eval().unwrap_err();
/// assert_eq!(err.to_string(), "take: index 7 is out of bounds for axis 0 with size 2");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn take(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    require_indices("take", indices)?;
    let (shape, axis) = match axis {
        None => (indices.shape().to_vec(), None),
        Some(ax) => {
            let ax = normalize_axis("take", ax, a.ndim())?;
            if a.shape()[ax] == 0 && indices.size() > 0 {
                return Err(Error::value(
                    "take",
                    format!(
                        "cannot take {} indices from axis {ax} of size 0 (shape {:?})",
                        indices.size(),
                        a.shape()
                    ),
                ));
            }
            let s = a.shape();
            ([&s[..ax], indices.shape(), &s[ax + 1..]].concat(), Some(ax))
        }
    };
    checked_numel("take", &shape)?;
    Ok(Array::from_op(
        shape,
        a.dtype(),
        Take { axis },
        vec![a.clone(), indices.clone()],
    ))
}

/// Picks one entry of `a` along an axis per entry of `indices`
/// (`a` and `indices` broadcast against each other on the other axes).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TakeAlongAxis {
    /// The axis (normalised); `None` for flattened `a` and 1-d indices.
    pub axis: Option<usize>,
}

impl crate::graph::export::Exportable for TakeAlongAxis {
    const KIND: &'static str = "take_along_axis";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, i] = crate::graph::export::args(inputs, "take_along_axis")?;
        take_along_axis(
            a,
            i,
            self.axis.map(|x| isize::try_from(x).unwrap_or(isize::MAX)),
        )
    }
}

impl Primitive for TakeAlongAxis {
    fn name(&self) -> &'static str {
        "take_along_axis"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        gather::take_along_axis(&inputs[0], &inputs[1], self.axis, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match i {
                0 => scatter_along_axis(g, &p[1], self.axis, p[0].shape()),
                _ => crate::ops::creation::zeros_like(&p[i]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => take_along_axis(t, &p[1], self.axis.map(|a| a as isize)),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, idx) = (&inputs[0], &inputs[1]);
        if axes[0].is_none() && axes[1].is_none() {
            return Ok((
                take_along_axis(a, idx, self.axis.map(|x| x as isize))?,
                None,
            ));
        }
        let a2 = batch_or_one(a, axes[0])?;
        let i2 = batch_or_one(idx, axes[1])?;
        let out = match self.axis {
            None => {
                let rows = a2.shape()[0];
                let a3 = grad_helpers::reshape_to(&a2, &[rows, a2.size() / rows.max(1)])?;
                take_along_axis(&a3, &i2, Some(1))?
            }
            Some(ax) => take_along_axis(&a2, &i2, Some(ax as isize + 1))?,
        };
        Ok((out, Some(0)))
    }
    crate::primitive_common!();
}

/// Takes values from `a` at `indices` along `axis`, MLX's (and numpy's)
/// `take_along_axis`.
///
/// `indices` must have as many dimensions as `a`; on every other axis the two
/// broadcast against each other. The result has the broadcast shape with
/// `indices.shape[axis]` along `axis`. With `axis = None`, `a` is flattened
/// and `indices` must be 1-d. Typical use: gathering `argsort` results.
///
/// ```
/// use ferrox::{take_along_axis, Array};
/// let a = Array::from_slice(&[3.0f32, 1.0, 2.0, 9.0, 7.0, 8.0], &[2, 3])?;
/// let idx = Array::from_slice(&[1u32, 2, 0], &[1, 3])?;
/// let v = take_along_axis(&a, &idx, Some(-1))?;
/// assert_eq!(v.shape(), &[2, 3]);
/// assert_eq!(v.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn take_along_axis(a: &Array, indices: &Array, axis: Option<isize>) -> Result<Array> {
    let op = "take_along_axis";
    require_indices(op, indices)?;
    let Some(ax) = axis else {
        if indices.ndim() != 1 {
            return Err(Error::shape(
                op,
                format!(
                    "with axis None the indices must be 1-d, got shape {:?}",
                    indices.shape()
                ),
            ));
        }
        return Ok(Array::from_op(
            indices.shape().to_vec(),
            a.dtype(),
            TakeAlongAxis { axis: None },
            vec![a.clone(), indices.clone()],
        ));
    };
    let shape = along_axis_shape(op, a.shape(), indices.shape(), ax)?;
    let axis = normalize_axis(op, ax, a.ndim())?;
    checked_numel(op, &shape)?;
    Ok(Array::from_op(
        shape,
        a.dtype(),
        TakeAlongAxis { axis: Some(axis) },
        vec![a.clone(), indices.clone()],
    ))
}

/// The index grid of `*_along_axis`: `a_shape` and `idx_shape` (of equal
/// rank) broadcast on every axis but `axis`, where `idx_shape` counts.
pub(super) fn along_axis_shape(
    op: &str,
    a_shape: &[usize],
    idx_shape: &[usize],
    axis: isize,
) -> Result<Vec<usize>> {
    if a_shape.len() != idx_shape.len() {
        return Err(Error::shape(
            op,
            format!(
                "indices have {} dimensions and a has {} ({idx_shape:?} vs {a_shape:?}); they must match",
                idx_shape.len(),
                a_shape.len()
            ),
        ));
    }
    let axis = normalize_axis(op, axis, a_shape.len())?;
    a_shape
        .iter()
        .zip(idx_shape)
        .enumerate()
        .map(|(d, (&n, &m))| match (d == axis, n, m) {
            (true, _, m) => Ok(m),
            (false, n, m) if n == m || m == 1 => Ok(n),
            (false, 1, m) => Ok(m),
            _ => Err(Error::shape(
                op,
                format!("indices with shape {idx_shape:?} do not broadcast with a of shape {a_shape:?} (axis {d})"),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::error::ErrorKind;
    use crate::ops::indexing::tests_support::{contiguous, eval_kernel, permuted, reversed};
    use proptest::prelude::*;

    fn arr_i32(v: &[i32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn take_rows_cols_and_flat() {
        let a = arr_i32(&(0..12).collect::<Vec<_>>(), &[3, 4]);
        let i = arr_i32(&[2, 0, -1], &[3]);
        assert_eq!(
            take(&a, &i, Some(0)).unwrap().to_vec::<i32>().unwrap(),
            [8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11]
        );
        assert_eq!(
            take(&a, &i, Some(-1)).unwrap().to_vec::<i32>().unwrap(),
            [2, 0, 3, 6, 4, 7, 10, 8, 11]
        );
        assert_eq!(
            take(&a, &i, None).unwrap().to_vec::<i32>().unwrap(),
            [2, 0, 11]
        );
    }

    #[test]
    fn take_with_multidimensional_and_scalar_indices() {
        let a = arr_i32(&(0..6).collect::<Vec<_>>(), &[2, 3]);
        let i = Array::from_slice(&[1i8, 0, 2, 2], &[2, 2]).unwrap();
        let t = take(&a, &i, Some(1)).unwrap();
        assert_eq!(t.shape(), &[2, 2, 2]);
        assert_eq!(t.to_vec::<i32>().unwrap(), [1, 0, 2, 2, 4, 3, 5, 5]);
        let s = take(&a, &Array::scalar(1u16), Some(0)).unwrap();
        assert_eq!(s.shape(), &[3]);
        assert_eq!(s.to_vec::<i32>().unwrap(), [3, 4, 5]);
    }

    #[test]
    fn take_validates_in_builder_and_kernel() {
        let a = arr_i32(&[1, 2, 3], &[3]);
        let f = Array::from_slice(&[0.0f32], &[1]).unwrap();
        assert_eq!(take(&a, &f, None).unwrap_err().kind(), ErrorKind::Dtype);
        assert_eq!(
            take(&a, &arr_i32(&[0], &[1]), Some(1)).unwrap_err().kind(),
            ErrorKind::Axis
        );
        for (bad, msg) in [
            (3, "index 3 is out of bounds for axis 0 with size 3"),
            (-4, "index -4 is out"),
        ] {
            let err = take(&a, &arr_i32(&[0, bad], &[2]), Some(0))
                .unwrap()
                .eval()
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Index);
            assert!(
                err.to_string().starts_with(&format!("take: {msg}")),
                "{err}"
            );
        }
        let err = take(&a, &arr_i32(&[5], &[1]), None)
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "take: index 5 is out of bounds for the flattened array with size 3"
        );
        let big = Array::from_slice(&[u64::MAX], &[1]).unwrap();
        assert!(take(&a, &big, None).unwrap().eval().is_err());
        let empty = Array::from_slice::<i32>(&[], &[0]).unwrap();
        // Indices into an empty axis are refused when the graph is built.
        let err = take(&empty, &arr_i32(&[0], &[1]), Some(0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "take: cannot take 1 indices from axis 0 of size 0 (shape [0])"
        );
        assert_eq!(
            take(
                &empty,
                &Array::from_slice::<i32>(&[], &[0]).unwrap(),
                Some(0)
            )
            .unwrap()
            .size(),
            0
        );
    }

    #[test]
    fn take_every_element_size() {
        let i = arr_i32(&[1, 0], &[2]);
        for dt in [
            DType::Bool,
            DType::Float16,
            DType::Float32,
            DType::Complex64,
        ] {
            let a = crate::ops::creation::arange(0.0, 2.0, 1.0, DType::Float32)
                .unwrap()
                .astype(dt)
                .unwrap();
            let t = take(&a, &i, None).unwrap().astype(DType::Float32).unwrap();
            assert_eq!(t.to_vec::<f32>().unwrap(), [1.0, 0.0], "{dt}");
        }
    }

    #[test]
    fn take_from_strided_operands() {
        // a = [[0, 1, 2], [3, 4, 5]] stored transposed (column-major).
        let (a_data, a_shape) = permuted(&[0i32, 3, 1, 4, 2, 5], &[3, 2], &[1, 0]);
        let idx_data = contiguous(&[2i32, 0], &[2]);
        let a = Operand {
            data: &a_data,
            shape: &a_shape,
            dtype: DType::Int32,
        };
        let i = Operand {
            data: &idx_data,
            shape: &[2],
            dtype: DType::Int32,
        };
        let got =
            eval_kernel::<i32>(&Take { axis: Some(1) }, &[a, i], &[2, 2], DType::Int32).unwrap();
        assert_eq!(got, [2, 0, 5, 3]);
        let got = eval_kernel::<i32>(&Take { axis: None }, &[a, i], &[2], DType::Int32).unwrap();
        assert_eq!(got, [2, 0]);
        let err = eval_kernel::<i32>(&Take { axis: Some(0) }, &[a, i], &[2, 3], DType::Int32)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Index);
        // Reversed indices (negative stride) along a transposed `a`.
        let (i_data, _) = reversed(&[0i32, 2, 1], &[3]);
        let i = Operand {
            data: &i_data,
            shape: &[3],
            dtype: DType::Int32,
        };
        let got =
            eval_kernel::<i32>(&TakeAlongAxis { axis: None }, &[a, i], &[3], DType::Int32).unwrap();
        assert_eq!(got, [1, 2, 0]);
    }

    #[test]
    fn take_along_axis_broadcasts_and_validates() {
        let a = arr_i32(&[0, 1, 2, 3, 4, 5], &[2, 3]);
        let i = arr_i32(&[2, 0], &[2, 1]);
        let t = take_along_axis(&a, &i, Some(1)).unwrap();
        assert_eq!(
            (t.shape(), t.to_vec::<i32>().unwrap()),
            (&[2usize, 1][..], vec![2, 3])
        );
        let row = arr_i32(&[1, 0, 1], &[1, 3]);
        assert_eq!(
            take_along_axis(&a, &row, Some(0))
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [3, 1, 5]
        );
        // `a` broadcasts too (size 1 along a non-axis dimension).
        let col = arr_i32(&[7, 8], &[1, 2]);
        let j = arr_i32(&[1, 0, 0, 1, 1, 1], &[3, 2]);
        assert_eq!(
            take_along_axis(&col, &j, Some(1))
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [8, 7, 7, 8, 8, 8]
        );
        assert_eq!(
            take_along_axis(&a, &arr_i32(&[5, -1], &[2]), None)
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            [5, 5]
        );
        assert_eq!(
            take_along_axis(&a, &i, None).unwrap_err().kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            take_along_axis(&a, &arr_i32(&[0], &[1]), Some(0))
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert_eq!(
            take_along_axis(&a, &arr_i32(&[0, 0], &[1, 2]), Some(0))
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        let err = take_along_axis(&a, &arr_i32(&[0, 3], &[2, 1]), Some(1))
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "take_along_axis: index 3 is out of bounds for axis 1 with size 3"
        );
    }

    #[test]
    fn large_take_runs_in_parallel_chunks() {
        let n = 1 << 17;
        let a = crate::ops::creation::arange(0.0, n as f64, 1.0, DType::Float32).unwrap();
        let idx: Vec<i64> = (0..n as i64)
            .map(|i| (i * 7919) % n as i64 - n as i64)
            .collect();
        let t = take(&a, &Array::from_slice(&idx, &[n]).unwrap(), Some(0))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(
            t.iter()
                .zip(&idx)
                .all(|(&v, &i)| v == (i + n as i64) as f32)
        );
        let rows = Array::from_slice(
            &(0..n * 2).map(|v| v as f32).collect::<Vec<_>>(),
            &[n / 2, 4],
        )
        .unwrap();
        let r = take(&rows, &arr_i32(&[3, 0], &[2]), Some(1))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(&r[..4], &[3.0, 0.0, 7.0, 4.0]);
        assert_eq!(r.len(), n);
    }

    /// Naive `take` along `axis` of a row-major `a`.
    fn naive_take(a: &[i32], shape: &[usize], idx: &[i64], axis: usize) -> Vec<i32> {
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        let n = shape[axis] as i64;
        let mut out = vec![];
        for o in 0..outer {
            for &i in idx {
                let p = if i < 0 { i + n } else { i } as usize;
                for k in 0..inner {
                    out.push(a[(o * shape[axis] + p) * inner + k]);
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn take_matches_naive_loop(
            shape in proptest::collection::vec(1usize..5, 1..4),
            axis_seed in 0usize..3,
            raw_idx in proptest::collection::vec(-100i64..100, 0..6),
        ) {
            let axis = axis_seed % shape.len();
            let n = shape[axis] as i64;
            let idx: Vec<i64> = raw_idx.iter().map(|i| i.rem_euclid(2 * n) - n).collect();
            let data: Vec<i32> = (0..shape.iter().product::<usize>() as i32).collect();
            let a = Array::from_slice(&data, &shape).unwrap();
            let got = take(&a, &Array::from_slice(&idx, &[idx.len()]).unwrap(), Some(axis as isize))
                .unwrap().to_vec::<i32>().unwrap();
            prop_assert_eq!(got, naive_take(&data, &shape, &idx, axis));
        }
    }
}
