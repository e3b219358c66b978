//! Slices whose start is an array (MLX's `slice` and `slice_update` with
//! `start_indices`): the start is data, so one traced function serves every
//! offset. Built from `take` and `scatter`; the starts are clamped so the
//! slice fits, as XLA's dynamic slices do.

use super::{scatter, take};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{add, maximum, minimum};
use crate::ops::creation::arange;
use crate::ops::shape_rules::normalize_axis;

/// Checks `start` (integer, one entry per axis) and normalises `axes`.
fn starts(op: &str, a: &Array, start: &Array, axes: &[isize]) -> Result<Vec<usize>> {
    if !start.dtype().is_integer() {
        return Err(Error::dtype(
            op,
            format!("start_indices must be integers, got {}", start.dtype()),
        ));
    }
    if start.size() != axes.len() || start.ndim() > 1 {
        return Err(Error::value(
            op,
            format!(
                "start_indices (shape {:?}) must hold one index per axis in {axes:?}",
                start.shape()
            ),
        ));
    }
    let axes = axes
        .iter()
        .map(|&ax| normalize_axis(op, ax, a.ndim()))
        .collect::<Result<Vec<_>>>()?;
    if let Some(d) = axes
        .iter()
        .enumerate()
        .find(|(i, d)| axes[..*i].contains(d))
    {
        return Err(Error::value(
            op,
            format!("axis {} repeats in {axes:?}", d.1),
        ));
    }
    Ok(axes)
}

/// Start `k` of `start`, clamped into `0..=dim - len`, as a scalar int64.
fn clamped_start(start: &Array, k: usize, dim: usize, len: usize) -> Result<Array> {
    let s = take(&start.reshape(&[-1])?, &Array::from(k as i32), Some(0))?.astype(DType::Int64)?;
    let hi = (dim - len) as i64;
    minimum(&maximum(&s, &Array::from(0i64))?, &Array::from(hi))
}

/// The `sizes[k]` elements of `a` from `start[k]` along each `axes[k]`
/// (all of the other axes). Starts are clamped so the slice fits.
///
/// ```
/// use ferrox::{dynamic_slice, Array};
/// let a = ferrox::arange(0.0, 12.0, 1.0, ferrox::DType::Int32)?.reshape(&[3, 4])?;
/// let s = dynamic_slice(&a, &Array::from_slice(&[1i32, 2], &[2])?, &[0, 1], &[2, 2])?;
/// assert_eq!(s.to_vec::<i32>()?, vec![6, 7, 10, 11]);
/// let clamped = dynamic_slice(&a, &Array::from_slice(&[5i32], &[1])?, &[0], &[2])?;
/// assert_eq!(clamped.shape(), &[2, 4]);
/// assert_eq!(clamped.to_vec::<i32>()?[0], 4);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn dynamic_slice(a: &Array, start: &Array, axes: &[isize], sizes: &[usize]) -> Result<Array> {
    let op = "slice";
    let axes = starts(op, a, start, axes)?;
    if sizes.len() != axes.len() {
        return Err(Error::value(
            op,
            format!("slice_size {sizes:?} needs one size per axis in {axes:?}"),
        ));
    }
    let mut out = a.clone();
    for (k, (&ax, &len)) in axes.iter().zip(sizes).enumerate() {
        let dim = a.shape()[ax];
        if len > dim {
            return Err(Error::value(
                op,
                format!(
                    "slice size {len} exceeds axis {ax} of size {dim} (shape {:?})",
                    a.shape()
                ),
            ));
        }
        let s = clamped_start(start, k, dim, len)?;
        let idx = add(&arange(0.0, len as f64, 1.0, DType::Int64)?, &s)?;
        out = take(&out, &idx, Some(ax as isize))?;
    }
    Ok(out)
}

/// `a` with the block `update` written from `start[k]` along each
/// `axes[k]` (from 0 along the other axes). `update` has `a`'s number of
/// dimensions, each no larger than `a`'s; starts are clamped so the block
/// fits; `update` is cast to `a`'s dtype.
///
/// ```
/// use ferrox::{dynamic_slice_update, zeros, Array, DType};
/// let a = zeros(&[2, 4], DType::Int32)?;
/// let u = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// let b = dynamic_slice_update(&a, &u, &Array::from_slice(&[1i32], &[1])?, &[1])?;
/// assert_eq!(b.to_vec::<i32>()?, vec![0, 1, 2, 0, 0, 3, 4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn dynamic_slice_update(
    a: &Array,
    update: &Array,
    start: &Array,
    axes: &[isize],
) -> Result<Array> {
    let op = "slice_update";
    let axes = starts(op, a, start, axes)?;
    if update.ndim() != a.ndim() || update.shape().iter().zip(a.shape()).any(|(u, d)| u > d) {
        return Err(Error::shape(
            op,
            format!(
                "update of shape {:?} does not fit in an array of shape {:?}",
                update.shape(),
                a.shape()
            ),
        ));
    }
    let idx = axes
        .iter()
        .enumerate()
        .map(|(k, &ax)| clamped_start(start, k, a.shape()[ax], update.shape()[ax]))
        .collect::<Result<Vec<_>>>()?;
    let ax: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
    scatter(a, &idx, &update.astype(a.dtype())?, &ax)
}
