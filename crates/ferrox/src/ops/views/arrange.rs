//! Views that rearrange axes or elements without computing anything:
//! [`flip`], [`atleast_1d`]/[`atleast_2d`]/[`atleast_3d`],
//! [`matrix_transpose`], [`unstack`] and the raw-layout view [`as_strided`].

use super::{reshape_to, slice_along, slice_parts, squeeze, swapaxes, view_of};
use crate::backend::cpu::copy::ensure_contiguous;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::{Data, checked_numel};
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::shape_rules::{normalize_axes, normalize_axis};

/// `a` with the order of elements reversed along `axes` (`None`: every
/// axis). A view (negative strides).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
/// assert_eq!(ferrox::flip(&a, Some(&[1]))?.to_vec::<i32>()?, vec![3, 2, 1, 6, 5, 4]);
/// assert_eq!(ferrox::flip(&a, None)?.to_vec::<i32>()?, vec![6, 5, 4, 3, 2, 1]);
/// assert!(ferrox::flip(&a, Some(&[2])).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn flip(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let axes = normalize_axes("flip", axes, a.ndim())?;
    let parts: Vec<(isize, usize, isize)> = a
        .shape()
        .iter()
        .enumerate()
        .map(|(ax, &n)| {
            if axes.contains(&ax) {
                (n as isize - 1, n, -1)
            } else {
                (0, n, 1)
            }
        })
        .collect();
    Ok(slice_parts(a, &parts))
}

/// `a` with at least `n` dimensions: a scalar becomes `[1]`, `[1, 1]` or
/// `[1, 1, 1]`; a vector `[k]` becomes `[1, k]` (2-D) or `[1, k, 1]` (3-D);
/// a matrix `[m, k]` becomes `[m, k, 1]` (3-D), as numpy.
fn atleast(a: &Array, n: usize) -> Result<Array> {
    let s = a.shape();
    let shape = match (s.len(), n) {
        (d, n) if d >= n => return Ok(a.clone()),
        (0, n) => vec![1; n],
        (1, 2) => vec![1, s[0]],
        (1, 3) => vec![1, s[0], 1],
        (2, 3) => vec![s[0], s[1], 1],
        (d, n) => {
            return Err(Error::runtime(
                "atleast_nd",
                format!("internal error: atleast_{n}d of a {d}-d array"),
            ));
        }
    };
    Ok(reshape_to(a, shape))
}

/// `a` with at least one dimension (a scalar becomes shape `[1]`).
///
/// ```
/// assert_eq!(ferrox::atleast_1d(&ferrox::Array::scalar(1.0f32))?.shape(), &[1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn atleast_1d(a: &Array) -> Result<Array> {
    atleast(a, 1)
}

/// `a` with at least two dimensions (a vector `[k]` becomes `[1, k]`).
///
/// ```
/// let v = ferrox::zeros(&[3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::atleast_2d(&v)?.shape(), &[1, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn atleast_2d(a: &Array) -> Result<Array> {
    atleast(a, 2)
}

/// `a` with at least three dimensions (`[k]` becomes `[1, k, 1]`, `[m, k]`
/// becomes `[m, k, 1]`).
///
/// ```
/// let m = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::atleast_3d(&m)?.shape(), &[2, 3, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn atleast_3d(a: &Array) -> Result<Array> {
    atleast(a, 3)
}

/// The last two axes swapped (an error for fewer than two dimensions).
///
/// ```
/// let a = ferrox::zeros(&[4, 2, 3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::matrix_transpose(&a)?.shape(), &[4, 3, 2]);
/// assert!(ferrox::matrix_transpose(&ferrox::zeros(&[3], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn matrix_transpose(a: &Array) -> Result<Array> {
    if a.ndim() < 2 {
        return Err(Error::value(
            "matrix_transpose",
            format!("needs at least 2 dimensions, got shape {:?}", a.shape()),
        ));
    }
    swapaxes(a, -1, -2)
}

/// The arrays `a[i]` along `axis` (the axis removed): the inverse of
/// `stack`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
/// let cols = ferrox::unstack(&a, 1)?;
/// assert_eq!(cols.len(), 3);
/// assert_eq!(cols[2].to_vec::<i32>()?, vec![3, 6]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn unstack(a: &Array, axis: isize) -> Result<Vec<Array>> {
    if a.ndim() == 0 {
        return Err(Error::value(
            "unstack",
            "cannot unstack a scalar (0-dimensional array)".to_string(),
        ));
    }
    let ax = normalize_axis("unstack", axis, a.ndim())?;
    (0..a.shape()[ax])
        .map(|i| squeeze(&slice_along(a, ax, i, 1), Some(&[ax as isize])))
        .collect()
}

// ------------------------------------------------------------- as_strided

/// A view of `a`'s elements, read as if `a` were row-major contiguous, with
/// the given `shape`, `strides` (in elements, may be negative or zero) and
/// `offset`. Every element the view can reach must lie inside `a`: a view
/// that would read outside it is an error (never undefined behaviour).
///
/// ```
/// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Int32)?;
/// // Overlapping windows of 3: [[0, 1, 2], [1, 2, 3], ...].
/// let w = ferrox::as_strided(&a, &[4, 3], &[1, 1], 0)?;
/// assert_eq!(w.to_vec::<i32>()?, vec![0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5]);
/// assert!(ferrox::as_strided(&a, &[4, 3], &[2, 1], 0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn as_strided(a: &Array, shape: &[usize], strides: &[isize], offset: usize) -> Result<Array> {
    let op = "as_strided";
    if shape.len() != strides.len() {
        return Err(Error::value(
            op,
            format!("shape {shape:?} and strides {strides:?} need the same length"),
        ));
    }
    let numel = checked_numel(op, shape)?;
    if numel > 0 {
        let (lo, hi) = reach(shape, strides, offset as i128);
        if lo < 0 || hi >= a.size() as i128 {
            return Err(Error::value(
                op,
                format!(
                    "shape {shape:?}, strides {strides:?} and offset {offset} read elements {lo}..={hi}, outside the {} elements of the input",
                    a.size()
                ),
            ));
        }
    }
    Ok(Array::from_op(
        shape.to_vec(),
        a.dtype(),
        AsStrided {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        },
        vec![a.clone()],
    ))
}

/// The lowest and highest element index a (non-empty) view reaches.
fn reach(shape: &[usize], strides: &[isize], offset: i128) -> (i128, i128) {
    shape
        .iter()
        .zip(strides)
        .fold((offset, offset), |(lo, hi), (&n, &s)| {
            let span = (n as i128 - 1) * s as i128;
            (lo + span.min(0), hi + span.max(0))
        })
}

/// The primitive of [`as_strided`]: a view with an explicit layout over the
/// row-major copy of its input.
///
/// ```
/// let a = ferrox::zeros(&[4], ferrox::DType::Float32)?;
/// let v = ferrox::as_strided(&a, &[2, 2], &[1, 1], 0)?;
/// assert_eq!(v.primitive().unwrap().name(), "as_strided");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AsStrided {
    /// The view's shape.
    pub shape: Vec<usize>,
    /// Element strides into the row-major input.
    pub strides: Vec<isize>,
    /// Element offset into the row-major input.
    pub offset: usize,
}

impl Primitive for AsStrided {
    fn name(&self) -> &'static str {
        "as_strided"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let base = ensure_contiguous(x)?;
        let start = base.offset as isize + self.offset as isize;
        let flat = Operand {
            data: &base,
            shape: x.shape,
            dtype: x.dtype,
        };
        view_of(self.name(), &flat, self.strides.clone(), start, out)
    }
    /// Every output element's cotangent adds into the input element it
    /// reads (overlapping windows accumulate).
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        let x = &p[0];
        let idx = self.flat_indices()?;
        let zeros = crate::ops::creation::zeros(&[x.size()], g.dtype())?;
        let flat_g = reshape_to(g, vec![g.size(), 1]);
        let gx = crate::ops::indexing::scatter_add(&zeros, &[idx], &flat_g, &[0])?;
        Ok(vec![reshape_to(&gx, x.shape().to_vec())])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => as_strided(t, &self.shape, &self.strides, self.offset),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            let y = as_strided(&inputs[0], &self.shape, &self.strides, self.offset)?;
            return Ok((y, None));
        };
        // Each batch entry is its own row-major block of `per` elements.
        let x = crate::ops::grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let b = x.shape()[0];
        let per = x.size() / b.max(1);
        let shape: Vec<usize> = std::iter::once(b)
            .chain(self.shape.iter().copied())
            .collect();
        let strides: Vec<isize> = std::iter::once(per as isize)
            .chain(self.strides.iter().copied())
            .collect();
        Ok((as_strided(&x, &shape, &strides, self.offset)?, Some(0)))
    }
    crate::primitive_common!();
}

impl AsStrided {
    /// The row-major input index each output element reads, as a flat
    /// int64 array in output order.
    fn flat_indices(&self) -> Result<Array> {
        let mut idx = crate::ops::creation::full(&[], self.offset as f64, DType::Int64)?;
        let nd = self.shape.len();
        for (d, (&n, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let mut at = vec![1usize; nd];
            at[d] = n;
            let r = crate::ops::creation::arange(0.0, n as f64, 1.0, DType::Int64)?;
            let step = crate::ops::binary::multiply(&r, &Array::from(s as i64))?;
            idx = crate::ops::binary::add(&idx, &reshape_to(&step, at))?;
        }
        let idx = crate::ops::views::broadcast_to(&idx, &self.shape)?;
        Ok(reshape_to(&idx, vec![self.shape.iter().product()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atleast_follows_numpy_shapes() {
        let v = crate::ops::creation::zeros(&[3], DType::Float32).unwrap();
        let m = crate::ops::creation::zeros(&[2, 3], DType::Float32).unwrap();
        let s = Array::scalar(1.0f32);
        assert_eq!(atleast_3d(&v).unwrap().shape(), &[1, 3, 1]);
        assert_eq!(atleast_3d(&s).unwrap().shape(), &[1, 1, 1]);
        assert_eq!(atleast_2d(&s).unwrap().shape(), &[1, 1]);
        assert_eq!(atleast_1d(&m).unwrap().shape(), &[2, 3]);
        let e = crate::ops::views::expand_dims(&m, &[0]).unwrap();
        assert_eq!(atleast_3d(&e).unwrap().shape(), &[1, 2, 3]);
    }

    #[test]
    fn as_strided_gradient_accumulates_overlaps() {
        let a = crate::ops::creation::arange(0.0, 5.0, 1.0, DType::Float32).unwrap();
        let f = |x: &[Array]| -> Result<Vec<Array>> {
            let w = as_strided(&x[0], &[3, 3], &[1, 1], 0)?;
            Ok(vec![crate::ops::reduce::sum(&w, None, false)?])
        };
        let g = crate::transforms::vjp::grad(f, &[0]);
        let gx = g(&[a]).unwrap();
        assert_eq!(
            gx[0].to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 2.0, 1.0]
        );
    }

    #[test]
    fn as_strided_reads_a_transposed_input_row_major_and_rejects_overflowing_layouts() {
        let a = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
        let t = crate::ops::views::transpose(&a, None).unwrap();
        let v = as_strided(&t, &[4], &[1], 0).unwrap();
        assert_eq!(v.to_vec::<i32>().unwrap(), vec![1, 3, 2, 4]);
        let rev = as_strided(&a, &[4], &[-1], 3).unwrap();
        assert_eq!(rev.to_vec::<i32>().unwrap(), vec![4, 3, 2, 1]);
        assert!(as_strided(&a, &[usize::MAX, 2], &[1, 1], 0).is_err());
        assert!(as_strided(&a, &[2], &[isize::MAX], 0).is_err());
        assert!(as_strided(&a, &[2], &[-1], 0).is_err());
    }
}
