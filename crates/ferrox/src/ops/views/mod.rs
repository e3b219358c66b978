//! Shape ops that are views: reshape, flatten, unflatten, squeeze,
//! expand_dims, transpose, swapaxes, moveaxis, broadcast_to,
//! broadcast_arrays, slice (and Python-style [`Array::index`]), diagonal,
//! the rearranging views of `arrange.rs` (flip, atleast_*d, unstack,
//! as_strided, ...);
//! plus `contiguous`, which copies into row-major order.
//!
//! A view's `eval_cpu` returns a [`Data`] over the *input's* storage (an
//! `Arc` clone) with new strides and offset: no element is copied. Strides
//! may be 0 (broadcast) or negative (reversed slices; the offset then points
//! at the view's first element). `reshape` is a view whenever the input's
//! strides allow it (numpy's rule) and copies otherwise.

mod arrange;
mod broadcast_like;
mod index;
mod strides;
#[cfg(test)]
mod tests;

// Public paths kept: the copy kernels live in the backend.
use crate::backend::cpu::copy::copy_to_storage;
pub use crate::backend::cpu::copy::{copy_to_contiguous, ensure_contiguous};
pub use arrange::{
    AsStrided, as_strided, atleast_1d, atleast_2d, atleast_3d, flip, matrix_transpose, unstack,
};
pub use broadcast_like::{BroadcastLike, broadcast_like};
pub use index::SliceArg;
pub(crate) use strides::slice_axis;

use super::shape_rules::{broadcast_many, normalize_axes, normalize_axis};
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use std::sync::Arc;

/// A `Data` over `input`'s storage with the given layout. `offset` is only
/// meaningful (and checked) when the view has elements.
fn view_of(
    op: &str,
    input: &Operand<'_>,
    strides: Vec<isize>,
    offset: isize,
    out: OutSpec<'_>,
) -> Result<Data> {
    // An empty view reads nothing: give it the input's offset and row-major
    // strides, so kernels that still walk its (non-empty) batch axes never
    // compute offsets before the storage (a reversed axis with stride -1
    // from offset 0 would).
    let (offset, strides) = if out.shape.contains(&0) {
        (
            input.data.offset,
            crate::graph::layout::row_major_strides(out.shape),
        )
    } else {
        let offset = usize::try_from(offset).map_err(|_| {
            Error::runtime(op, format!("view offset {offset} lies before its storage"))
        })?;
        (offset, strides)
    };
    Ok(Data {
        storage: Arc::clone(&input.data.storage),
        strides,
        offset,
    })
}

// ---------------------------------------------------------------- reshape

/// Reads the input with a new shape: a view when the strides allow it,
/// otherwise a row-major copy. Also serves flatten, unflatten, squeeze and
/// expand_dims (all of which only regroup dimensions).
///
/// ```
/// let a = ferrox::zeros(&[6], ferrox::DType::Float32)?.reshape(&[2, 3])?;
/// assert_eq!(a.primitive().unwrap().name(), "reshape");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reshape {
    /// The output shape.
    pub shape: Vec<usize>,
    /// How the shape follows from the input's, for a shapeless compiled
    /// function replayed on other shapes.
    pub rule: ReshapeRule,
}

impl crate::graph::export::Exportable for Reshape {
    const KIND: &'static str = "reshape";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "reshape")?;
        // Each rule through the builder that records it, so its arguments
        // are validated as the user's were.
        let y = match &self.rule {
            ReshapeRule::Fixed => reshape(x, &crate::graph::export::signed(&self.shape))?,
            ReshapeRule::Infer(spec) => reshape(x, spec)?,
            ReshapeRule::Flatten(s, e) => flatten(
                x,
                isize::try_from(*s).unwrap_or(isize::MAX),
                isize::try_from(*e).unwrap_or(isize::MAX),
            )?,
            ReshapeRule::Unflatten(ax, parts) => {
                unflatten(x, isize::try_from(*ax).unwrap_or(isize::MAX), parts)?
            }
            ReshapeRule::Squeeze(axes) => squeeze(x, Some(&crate::graph::export::signed(axes)))?,
            ReshapeRule::ExpandDims(axes) => expand_dims(x, &crate::graph::export::signed(axes))?,
        };
        if y.shape() != self.shape.as_slice() {
            return Err(Error::value(
                "reshape",
                format!(
                    "an exported reshape of shape {:?} by {:?} gives {:?}, not {:?}",
                    x.shape(),
                    self.rule,
                    y.shape(),
                    self.shape
                ),
            ));
        }
        Ok(y)
    }
}

/// How a [`Reshape`]'s output shape derives from its input's: what the
/// user asked for, so a shapeless trace can apply it to other shapes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ReshapeRule {
    /// Exactly [`Reshape::shape`] (input sizes must match).
    Fixed,
    /// `reshape` with one dimension possibly `-1`.
    Infer(Vec<isize>),
    /// `flatten(start, end)`, axes normalised (a 0-d input gives `[1]`).
    Flatten(usize, usize),
    /// `unflatten(axis, parts)`, one part possibly `-1`.
    Unflatten(usize, Vec<isize>),
    /// `squeeze` of these (normalised) axes.
    Squeeze(Vec<usize>),
    /// `expand_dims` at these (normalised, output) positions.
    ExpandDims(Vec<usize>),
}

impl ReshapeRule {
    /// The output shape for an input of `shape`.
    fn apply(&self, fixed: &[usize], shape: &[usize]) -> Result<Vec<usize>> {
        let size: usize = shape.iter().product();
        match self {
            ReshapeRule::Fixed => {
                if fixed.iter().product::<usize>() == size {
                    Ok(fixed.to_vec())
                } else {
                    Err(Error::shape(
                        "reshape",
                        format!("cannot reshape array of shape {shape:?} into shape {fixed:?}"),
                    ))
                }
            }
            ReshapeRule::Infer(spec) => infer_shape("reshape", shape, size, spec),
            ReshapeRule::Flatten(s, e) if *e < shape.len() => {
                let mut out = shape[..*s].to_vec();
                out.push(shape[*s..=*e].iter().product());
                out.extend_from_slice(&shape[e + 1..]);
                Ok(out)
            }
            ReshapeRule::Flatten(..) if shape.is_empty() => Ok(vec![1]),
            ReshapeRule::Unflatten(ax, parts) if *ax < shape.len() => {
                let dim = shape[*ax];
                let mut out = shape[..*ax].to_vec();
                out.extend(infer_shape("unflatten", &[dim], dim, parts)?);
                out.extend_from_slice(&shape[ax + 1..]);
                Ok(out)
            }
            ReshapeRule::Squeeze(axes) if axes.iter().all(|&a| shape.get(a) == Some(&1)) => Ok((0
                ..shape.len())
                .filter(|i| !axes.contains(i))
                .map(|i| shape[i])
                .collect()),
            ReshapeRule::ExpandDims(axes) => {
                let nd = shape.len() + axes.len();
                let mut rest = shape.iter();
                Ok((0..nd)
                    .map(|i| {
                        if axes.contains(&i) {
                            1
                        } else {
                            rest.next().copied().unwrap_or(1)
                        }
                    })
                    .collect())
            }
            _ => Err(Error::shape(
                "reshape",
                format!(
                    "the traced reshape {self:?} does not apply to an input of shape {shape:?}"
                ),
            )),
        }
    }
}

impl Primitive for Reshape {
    fn name(&self) -> &'static str {
        "reshape"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        Some(self.rule.apply(&self.shape, shape))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        match strides::reshape_strides(x.shape, &x.data.strides, out.shape) {
            Some(strides) => view_of("reshape", x, strides, x.data.offset as isize, out),
            None => Ok(Data::contiguous(copy_to_storage(x)?, out.shape)),
        }
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![grad_helpers::reshape_to(g, p[0].shape())?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => grad_helpers::reshape_to(t, &self.shape),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((grad_helpers::reshape_to(&inputs[0], &self.shape)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let mut shape = vec![x.shape()[0]];
        shape.extend_from_slice(&self.shape);
        Ok((grad_helpers::reshape_to(&x, &shape)?, Some(0)))
    }
    crate::primitive_common!();
}

/// Builds a reshape node; `shape` must hold as many elements as `a`.
pub(crate) fn reshape_to(a: &Array, shape: Vec<usize>) -> Array {
    reshape_by(a, shape, ReshapeRule::Fixed)
}

/// A reshape node that records how its shape was asked for.
fn reshape_by(a: &Array, shape: Vec<usize>, rule: ReshapeRule) -> Array {
    Array::from_op(
        shape.clone(),
        a.dtype(),
        Reshape { shape, rule },
        vec![a.clone()],
    )
}

/// Resolves a requested shape with at most one `-1` against `size` elements.
fn infer_shape(op: &str, from: &[usize], size: usize, shape: &[isize]) -> Result<Vec<usize>> {
    let mut unknown = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if unknown.is_some() {
                return Err(Error::shape(
                    op,
                    format!("can only specify one unknown dimension, got shape {shape:?}"),
                ));
            }
            unknown = Some(i);
        } else if d < 0 {
            return Err(Error::value(
                op,
                format!("invalid dimension {d} in shape {shape:?}"),
            ));
        } else {
            known = known.checked_mul(d as usize).ok_or_else(|| {
                Error::value(op, format!("shape {shape:?} has too many elements"))
            })?;
        }
    }
    let mismatch = || {
        Error::shape(
            op,
            format!("cannot reshape array of shape {from:?} into shape {shape:?}"),
        )
    };
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    match unknown {
        Some(i) => {
            if known == 0 || size % known != 0 {
                return Err(mismatch());
            }
            out[i] = size / known;
        }
        None if known != size => return Err(mismatch()),
        None => {}
    }
    checked_numel(op, &out)?;
    Ok(out)
}

/// `a` with a new shape holding the same elements in row-major order; one
/// dimension may be `-1` (inferred). A view when the layout allows it.
///
/// ```
/// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Int32)?;
/// let b = ferrox::reshape(&a, &[2, -1])?;
/// assert_eq!(b.shape(), &[2, 3]);
/// assert_eq!(b.to_vec::<i32>()?, vec![0, 1, 2, 3, 4, 5]);
/// assert!(ferrox::reshape(&a, &[4, -1]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn reshape(a: &Array, shape: &[isize]) -> Result<Array> {
    let out = infer_shape("reshape", a.shape(), a.size(), shape)?;
    Ok(reshape_by(a, out, ReshapeRule::Infer(shape.to_vec())))
}

/// Merges axes `start_axis..=end_axis` (negative values count from the end)
/// into one. A 0-d array becomes shape `[1]`.
///
/// ```
/// let a = ferrox::zeros(&[2, 3, 4], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::flatten(&a, 0, -1)?.shape(), &[24]);
/// assert_eq!(ferrox::flatten(&a, 1, 2)?.shape(), &[2, 12]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn flatten(a: &Array, start_axis: isize, end_axis: isize) -> Result<Array> {
    if a.ndim() == 0 {
        return Ok(reshape_by(a, vec![1], ReshapeRule::Flatten(0, 0)));
    }
    let s = normalize_axis("flatten", start_axis, a.ndim())?;
    let e = normalize_axis("flatten", end_axis, a.ndim())?;
    if s > e {
        return Err(Error::axis(
            "flatten",
            format!(
                "start_axis {start_axis} comes after end_axis {end_axis} for an array with {} dimensions",
                a.ndim()
            ),
        ));
    }
    let sh = a.shape();
    let mut out = sh[..s].to_vec();
    out.push(sh[s..=e].iter().product());
    out.extend_from_slice(&sh[e + 1..]);
    Ok(reshape_by(a, out, ReshapeRule::Flatten(s, e)))
}

/// Splits axis `axis` into `shape` (one entry may be `-1`).
///
/// ```
/// let a = ferrox::zeros(&[2, 12], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::unflatten(&a, 1, &[3, -1])?.shape(), &[2, 3, 4]);
/// assert!(ferrox::unflatten(&a, 1, &[5, -1]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn unflatten(a: &Array, axis: isize, shape: &[isize]) -> Result<Array> {
    let ax = normalize_axis("unflatten", axis, a.ndim())?;
    if shape.is_empty() {
        return Err(Error::shape("unflatten", "shape must not be empty"));
    }
    let dim = a.shape()[ax];
    let parts = infer_shape("unflatten", &[dim], dim, shape)?;
    let mut out = a.shape()[..ax].to_vec();
    out.extend(parts);
    out.extend_from_slice(&a.shape()[ax + 1..]);
    Ok(reshape_by(
        a,
        out,
        ReshapeRule::Unflatten(ax, shape.to_vec()),
    ))
}

/// Removes size-1 axes: the given ones (an error if one is not of size 1),
/// or all of them for `None`.
///
/// ```
/// let a = ferrox::zeros(&[1, 3, 1], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::squeeze(&a, None)?.shape(), &[3]);
/// assert_eq!(ferrox::squeeze(&a, Some(&[-1]))?.shape(), &[1, 3]);
/// assert!(ferrox::squeeze(&a, Some(&[1])).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn squeeze(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    let sh = a.shape();
    let drop: Vec<usize> = match axes {
        None => (0..sh.len()).filter(|&i| sh[i] == 1).collect(),
        Some(ax) => {
            let drop = normalize_axes("squeeze", Some(ax), sh.len())?;
            if let Some(&bad) = drop.iter().find(|&&i| sh[i] != 1) {
                return Err(Error::shape(
                    "squeeze",
                    format!(
                        "cannot squeeze axis {bad} of size {} (shape {sh:?})",
                        sh[bad]
                    ),
                ));
            }
            drop
        }
    };
    let out = (0..sh.len())
        .filter(|i| !drop.contains(i))
        .map(|i| sh[i])
        .collect();
    Ok(reshape_by(a, out, ReshapeRule::Squeeze(drop)))
}

/// Inserts size-1 axes at `axes`, which index the *result*.
///
/// ```
/// let a = ferrox::zeros(&[3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::expand_dims(&a, &[0, -1])?.shape(), &[1, 3, 1]);
/// assert!(ferrox::expand_dims(&a, &[2]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn expand_dims(a: &Array, axes: &[isize]) -> Result<Array> {
    let nd = a.ndim() + axes.len();
    let new = normalize_axes("expand_dims", Some(axes), nd)?;
    let mut rest = a.shape().iter();
    let out = (0..nd)
        .map(|i| {
            if new.contains(&i) {
                1
            } else {
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    Ok(reshape_by(a, out, ReshapeRule::ExpandDims(new)))
}

// -------------------------------------------------------------- transpose

/// Permutes the axes: output axis `i` is input axis `axes[i]`.
///
/// ```
/// let t = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?.t()?;
/// assert_eq!(t.primitive().unwrap().name(), "transpose");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transpose {
    /// The permutation.
    pub axes: Vec<usize>,
}

impl crate::graph::export::Exportable for Transpose {
    const KIND: &'static str = "transpose";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "transpose")?;
        transpose(x, Some(&self.axes))
    }
}

impl Primitive for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        (shape.len() == self.axes.len()).then(|| Ok(self.axes.iter().map(|&i| shape[i]).collect()))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let strides = self.axes.iter().map(|&i| x.data.strides[i]).collect();
        view_of("transpose", x, strides, x.data.offset as isize, out)
    }
    fn vjp(&self, _p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        let mut inverse = vec![0; self.axes.len()];
        for (i, &a) in self.axes.iter().enumerate() {
            inverse[a] = i;
        }
        if let Some(product) = crate::ops::matmul::transposed_product(g, &inverse)? {
            return Ok(vec![product]);
        }
        Ok(vec![transpose(g, Some(&inverse))?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => transpose(t, Some(&self.axes)),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((transpose(&inputs[0], Some(&self.axes))?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let perm: Vec<usize> = std::iter::once(0)
            .chain(self.axes.iter().map(|&a| a + 1))
            .collect();
        Ok((transpose(&x, Some(&perm))?, Some(0)))
    }
    crate::primitive_common!();
}

fn permute(a: &Array, axes: Vec<usize>) -> Array {
    let shape = axes.iter().map(|&i| a.shape()[i]).collect();
    Array::from_op(shape, a.dtype(), Transpose { axes }, vec![a.clone()])
}

/// Permutes the axes (`None` reverses them). A view.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
/// let t = ferrox::transpose(&a, None)?;
/// assert_eq!(t.shape(), &[3, 2]);
/// assert_eq!(t.to_vec::<i32>()?, vec![1, 4, 2, 5, 3, 6]);
/// assert!(ferrox::transpose(&a, Some(&[0, 0])).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn transpose(a: &Array, axes: Option<&[usize]>) -> Result<Array> {
    let nd = a.ndim();
    let axes = match axes {
        None => (0..nd).rev().collect(),
        Some(ax) => {
            let mut seen = vec![false; nd];
            let valid = ax.len() == nd
                && ax
                    .iter()
                    .all(|&i| i < nd && !std::mem::replace(&mut seen[i], true));
            if !valid {
                return Err(Error::axis(
                    "transpose",
                    format!(
                        "axes {ax:?} are not a permutation of the {nd} axes of an array of shape {:?}",
                        a.shape()
                    ),
                ));
            }
            ax.to_vec()
        }
    };
    Ok(permute(a, axes))
}

/// Swaps two axes. A view.
///
/// ```
/// let a = ferrox::zeros(&[2, 3, 4], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::swapaxes(&a, 0, -1)?.shape(), &[4, 3, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn swapaxes(a: &Array, axis1: isize, axis2: isize) -> Result<Array> {
    let i = normalize_axis("swapaxes", axis1, a.ndim())?;
    let j = normalize_axis("swapaxes", axis2, a.ndim())?;
    let mut axes: Vec<usize> = (0..a.ndim()).collect();
    axes.swap(i, j);
    Ok(permute(a, axes))
}

/// Moves axis `source` to position `destination`, keeping the order of the
/// others. A view.
///
/// ```
/// let a = ferrox::zeros(&[2, 3, 4], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::moveaxis(&a, 0, -1)?.shape(), &[3, 4, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn moveaxis(a: &Array, source: isize, destination: isize) -> Result<Array> {
    let s = normalize_axis("moveaxis", source, a.ndim())?;
    let d = normalize_axis("moveaxis", destination, a.ndim())?;
    let mut axes: Vec<usize> = (0..a.ndim()).filter(|&i| i != s).collect();
    axes.insert(d, s);
    Ok(permute(a, axes))
}

// -------------------------------------------------------------- broadcast

/// Whether shape `x` broadcasts to `target` by numpy's rules (trailing axes
/// aligned, each equal or 1).
fn broadcasts_to(x: &[usize], target: &[usize]) -> bool {
    x.len() <= target.len()
        && x.iter()
            .rev()
            .zip(target.iter().rev())
            .all(|(&d, &t)| d == 1 || d == t)
}

/// The strides that view `x` at rank `out_rank` broadcast: 0 on the new
/// leading axes and on size-1 axes, `x`'s own elsewhere.
fn broadcast_strides(x: &Operand<'_>, out_rank: usize) -> Vec<isize> {
    let pad = out_rank - x.shape.len();
    let mut strides = vec![0isize; out_rank];
    for (i, (&d, &s)) in x.shape.iter().zip(&x.data.strides).enumerate() {
        strides[pad + i] = if d == 1 { 0 } else { s };
    }
    strides
}

/// Broadcasts the input to the output shape (stride 0 on new and size-1
/// axes).
///
/// ```
/// let b = ferrox::zeros(&[3], ferrox::DType::Float32)?.broadcast_to(&[2, 3])?;
/// assert_eq!(b.primitive().unwrap().name(), "broadcast_to");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Broadcast {
    /// The output shape.
    pub shape: Vec<usize>,
}

impl crate::graph::export::Exportable for Broadcast {
    const KIND: &'static str = "broadcast";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "broadcast_to")?;
        broadcast_to(x, &self.shape)
    }
}

impl Primitive for Broadcast {
    fn name(&self) -> &'static str {
        "broadcast_to"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let strides = broadcast_strides(x, out.shape.len());
        view_of("broadcast_to", x, strides, x.data.offset as isize, out)
    }
    /// The target shape is part of the op (MLX's rule for shapeless
    /// compile); an input that no longer broadcasts to it is an error.
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let x = input_shapes.first()?;
        Some(if broadcasts_to(x, &self.shape) {
            Ok(self.shape.clone())
        } else {
            Err(Error::shape(
                "broadcast_to",
                format!("cannot broadcast shape {x:?} to {:?}", self.shape),
            ))
        })
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![grad_helpers::unbroadcast(g, p[0].shape())?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => broadcast_to(t, &self.shape),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((broadcast_to(&inputs[0], &self.shape)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let x = grad_helpers::pad_example_rank(&x, self.shape.len())?;
        let mut shape = vec![x.shape()[0]];
        shape.extend_from_slice(&self.shape);
        Ok((broadcast_to(&x, &shape)?, Some(0)))
    }
    crate::primitive_common!();
}

/// `a` broadcast to `shape` with numpy's rules. A view.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// let b = ferrox::broadcast_to(&a, &[2, 2])?;
/// assert_eq!(b.to_vec::<i32>()?, vec![1, 2, 1, 2]);
/// assert!(ferrox::broadcast_to(&a, &[3]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn broadcast_to(a: &Array, shape: &[usize]) -> Result<Array> {
    let sh = a.shape();
    if !broadcasts_to(sh, shape) {
        return Err(Error::shape(
            "broadcast_to",
            format!("cannot broadcast array of shape {sh:?} to shape {shape:?}"),
        ));
    }
    if sh == shape {
        return Ok(a.clone());
    }
    checked_numel("broadcast_to", shape)?;
    Ok(Array::from_op(
        shape.to_vec(),
        a.dtype(),
        Broadcast {
            shape: shape.to_vec(),
        },
        vec![a.clone()],
    ))
}

/// Broadcasts arrays against each other. Views.
///
/// ```
/// let a = ferrox::zeros(&[3, 1], ferrox::DType::Float32)?;
/// let b = ferrox::zeros(&[4], ferrox::DType::Int32)?;
/// let r = ferrox::broadcast_arrays(&[a, b])?;
/// assert_eq!(r[0].shape(), &[3, 4]);
/// assert_eq!(r[1].shape(), &[3, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn broadcast_arrays(arrays: &[Array]) -> Result<Vec<Array>> {
    let refs: Vec<&Array> = arrays.iter().collect();
    let shape = broadcast_many("broadcast_arrays", &refs)?;
    arrays.iter().map(|a| broadcast_to(a, &shape)).collect()
}

// ------------------------------------------------------------------ slice

/// Selects `start[i] + k * step[i]` along each axis (the output shape gives
/// the counts). `start` is only read for non-empty outputs.
///
/// ```
/// let a = ferrox::zeros(&[4], ferrox::DType::Float32)?;
/// let s = ferrox::slice(&a, &[1], &[3], &[1])?;
/// assert_eq!(s.primitive().unwrap().name(), "slice");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slice {
    /// First selected index per axis.
    pub start: Vec<isize>,
    /// Step per axis (non-zero, may be negative).
    pub step: Vec<isize>,
    /// The output shape (the number of selected indices per axis).
    pub shape: Vec<usize>,
}

impl crate::graph::export::Exportable for Slice {
    const KIND: &'static str = "slice";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "slice")?;
        let nd = x.ndim();
        if self.start.len() != nd || self.step.len() != nd || self.shape.len() != nd {
            return Err(Error::value(
                "slice",
                format!(
                    "an exported slice {self:?} does not fit an input of shape {:?}",
                    x.shape()
                ),
            ));
        }
        let mut parts = Vec::with_capacity(nd);
        for d in 0..nd {
            let (b, n, k, len) = (self.start[d], self.shape[d], self.step[d], x.shape()[d]);
            // Every selected index b + i*k (i < n) must lie in [0, len).
            let last = (n as i128 - 1) * k as i128 + b as i128;
            let fits = n == 0
                || (k != 0
                    && (0..len as i128).contains(&(b as i128))
                    && (0..len as i128).contains(&last));
            if !fits || n > len {
                return Err(Error::value(
                    "slice",
                    format!(
                        "an exported slice (start {b}, {n} elements, step {k}) is out of bounds for axis {d} of size {len}"
                    ),
                ));
            }
            parts.push((b, n, k));
        }
        Ok(slice_parts(x, &parts))
    }
}

impl Slice {
    /// This slice applied to `a` (same shape as the primal input).
    fn apply(&self, a: &Array) -> Array {
        Array::from_op(self.shape.clone(), a.dtype(), self.clone(), vec![a.clone()])
    }
}

impl Primitive for Slice {
    fn name(&self) -> &'static str {
        "slice"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let s = &x.data.strides;
        let offset = x.data.offset as isize
            + self
                .start
                .iter()
                .zip(s)
                .map(|(&b, &st)| b * st)
                .sum::<isize>();
        let strides = self.step.iter().zip(s).map(|(&k, &st)| k * st).collect();
        view_of("slice", x, strides, offset, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        // The cotangent lands on the selected positions of zeros.
        let x = &p[0];
        let zeros = crate::ops::creation::zeros_like(x)?;
        if g.size() == 0 {
            return Ok(vec![zeros]);
        }
        let start = self
            .start
            .iter()
            .map(|&b| {
                usize::try_from(b).map_err(|_| Error::runtime("slice", "negative slice start"))
            })
            .collect::<Result<Vec<_>>>()?;
        let update = crate::ops::indexing::SliceUpdate {
            start,
            strides: self.step.clone(),
            shape: self.shape.clone(),
        };
        Ok(vec![Array::from_op(
            x.shape().to_vec(),
            x.dtype(),
            update,
            vec![zeros, g.astype(x.dtype())?],
        )])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => Ok(self.apply(t)),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((self.apply(&inputs[0]), None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let batched = Slice {
            start: std::iter::once(0)
                .chain(self.start.iter().copied())
                .collect(),
            step: std::iter::once(1)
                .chain(self.step.iter().copied())
                .collect(),
            shape: std::iter::once(x.shape()[0])
                .chain(self.shape.iter().copied())
                .collect(),
        };
        Ok((batched.apply(&x), Some(0)))
    }
    crate::primitive_common!();
}

/// Builds a slice node from per-axis (start, len, step); returns `a` itself
/// when every axis is selected whole.
pub(crate) fn slice_parts(a: &Array, parts: &[(isize, usize, isize)]) -> Array {
    // The step of an axis with at most one selected element is never taken:
    // make it 1, so that a huge step (isize::MIN) cannot overflow
    // `step * stride` in the kernel. With two or more elements the step is
    // bounded by the axis size. An empty selection starts at 0 (a reversed
    // empty axis would start at -1, a negative offset for later kernels).
    let parts: Vec<(isize, usize, isize)> = parts
        .iter()
        .map(|&(b, n, k)| match n {
            0 => (0, 0, 1),
            1 => (b, 1, 1),
            _ => (b, n, k),
        })
        .collect();
    let whole = parts
        .iter()
        .zip(a.shape())
        .all(|(&(b, n, k), &d)| b == 0 && n == d && k == 1);
    if whole {
        return a.clone();
    }
    let shape: Vec<usize> = parts.iter().map(|p| p.1).collect();
    let start = parts.iter().map(|p| p.0).collect();
    let step = parts.iter().map(|p| p.2).collect();
    Array::from_op(
        shape.clone(),
        a.dtype(),
        Slice { start, step, shape },
        vec![a.clone()],
    )
}

/// `len` elements of `a` from `start` along axis `ax` (whole along the
/// others), without bounds checks: the callers derive both from the shape.
pub(crate) fn slice_along(a: &Array, ax: usize, start: usize, len: usize) -> Array {
    let parts: Vec<(isize, usize, isize)> = a
        .shape()
        .iter()
        .enumerate()
        .map(|(d, &n)| {
            if d == ax {
                (start as isize, len, 1)
            } else {
                (0, n, 1)
            }
        })
        .collect();
    slice_parts(a, &parts)
}

/// `a[start[0]:stop[0]:strides[0], ...]` with Python semantics per axis
/// (negative bounds count from the end, out-of-range bounds clamp, negative
/// strides walk backwards). One entry per axis. A view.
///
/// ```
/// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Int32)?;
/// let b = ferrox::slice(&a, &[-1], &[-7], &[-2])?; // a[::-2]
/// assert_eq!(b.to_vec::<i32>()?, vec![5, 3, 1]);
/// assert!(ferrox::slice(&a, &[0], &[6], &[0]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn slice(a: &Array, start: &[isize], stop: &[isize], strides: &[isize]) -> Result<Array> {
    let nd = a.ndim();
    if start.len() != nd || stop.len() != nd || strides.len() != nd {
        return Err(Error::value(
            "slice",
            format!(
                "start {start:?}, stop {stop:?} and strides {strides:?} need one entry per axis of an array of shape {:?}",
                a.shape()
            ),
        ));
    }
    let mut parts = Vec::with_capacity(nd);
    for ax in 0..nd {
        if strides[ax] == 0 {
            return Err(Error::value(
                "slice",
                format!("step cannot be zero (axis {ax}, strides {strides:?})"),
            ));
        }
        let (b, n) = slice_axis(a.shape()[ax], Some(start[ax]), Some(stop[ax]), strides[ax]);
        parts.push((b, n, strides[ax]));
    }
    Ok(slice_parts(a, &parts))
}

// --------------------------------------------------------------- diagonal

/// The diagonal `offset` of the plane (`axis1`, `axis2`), appended as the
/// last axis.
///
/// ```
/// let d = ferrox::eye(3, None, 0, ferrox::DType::Float32)?.diagonal(0, 0, 1)?;
/// assert_eq!(d.primitive().unwrap().name(), "diagonal");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Diagonal {
    /// Diagonal offset (positive: above the main diagonal).
    pub offset: isize,
    /// First axis of the plane.
    pub axis1: usize,
    /// Second axis of the plane.
    pub axis2: usize,
}

impl crate::graph::export::Exportable for Diagonal {
    const KIND: &'static str = "diagonal";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "diagonal")?;
        let ax = |a: usize| isize::try_from(a).unwrap_or(isize::MAX);
        diagonal(x, self.offset, ax(self.axis1), ax(self.axis2))
    }
}

impl Primitive for Diagonal {
    fn name(&self) -> &'static str {
        "diagonal"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let s = &x.data.strides;
        let (s1, s2) = (s[self.axis1], s[self.axis2]);
        let mut strides: Vec<isize> = (0..s.len())
            .filter(|&i| i != self.axis1 && i != self.axis2)
            .map(|i| s[i])
            .collect();
        strides.push(s1 + s2);
        let start = if self.offset >= 0 {
            self.offset * s2
        } else {
            -self.offset * s1
        };
        view_of("diagonal", x, strides, x.data.offset as isize + start, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![self.embed(g, p[0].shape())?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => diagonal(t, self.offset, self.axis1 as isize, self.axis2 as isize),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a1, a2) = (self.axis1 as isize, self.axis2 as isize);
        let Some(ax) = axes[0] else {
            return Ok((diagonal(&inputs[0], self.offset, a1, a2)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        Ok((diagonal(&x, self.offset, a1 + 1, a2 + 1)?, Some(0)))
    }
    crate::primitive_common!();
}

impl Diagonal {
    /// The transpose of taking this diagonal: `g` (the diagonal's shape)
    /// placed on the diagonal of zeros of `shape`. Built from a one-hot
    /// product so that it is differentiable again.
    pub(crate) fn embed(&self, g: &Array, shape: &[usize]) -> Result<Array> {
        let (n1, n2) = (shape[self.axis1], shape[self.axis2]);
        let len = g.shape().last().copied().unwrap_or(0);
        let (r0, c0) = ((-self.offset).max(0) as f64, self.offset.max(0) as f64);
        let dt = g.dtype();
        let f = crate::dtype::DType::Float64;
        let d = crate::ops::creation::arange(0.0, len as f64, 1.0, f)?.reshape(&[
            len as isize,
            1,
            1,
        ])?;
        let i =
            crate::ops::creation::arange(0.0, n1 as f64, 1.0, f)?.reshape(&[1, n1 as isize, 1])?;
        let j =
            crate::ops::creation::arange(0.0, n2 as f64, 1.0, f)?.reshape(&[1, 1, n2 as isize])?;
        let on_row =
            crate::ops::binary::equal(&i, &crate::ops::binary::add(&d, &Array::from(r0))?)?;
        let on_col =
            crate::ops::binary::equal(&j, &crate::ops::binary::add(&d, &Array::from(c0))?)?;
        let onehot = crate::ops::binary::logical_and(&on_row, &on_col)?
            .astype(dt)?
            .reshape(&[len as isize, (n1 * n2) as isize])?;
        // [..., len] @ [len, n1 * n2] -> [..., n1, n2], then the two axes go
        // back where they came from.
        let placed =
            crate::ops::matmul::matmul(&crate::ops::views::expand_dims(g, &[-2])?, &onehot)?;
        let placed = crate::ops::views::squeeze(&placed, Some(&[-2]))?;
        let mut planes: Vec<usize> = g.shape()[..g.ndim().saturating_sub(1)].to_vec();
        planes.extend([n1, n2]);
        let placed = grad_helpers::reshape_to(&placed, &planes)?;
        let nd = shape.len();
        let mut perm = vec![0; nd];
        let mut k = 0;
        for (a, slot) in perm.iter_mut().enumerate() {
            if a == self.axis1 {
                *slot = nd - 2;
            } else if a == self.axis2 {
                *slot = nd - 1;
            } else {
                *slot = k;
                k += 1;
            }
        }
        transpose(&placed, Some(&perm))
    }
}

/// The `offset` diagonal of the 2-d planes spanned by `axis1` and `axis2`,
/// as a new last axis (numpy's `diagonal`). A view.
///
/// ```
/// let a = ferrox::arange(0.0, 9.0, 1.0, ferrox::DType::Int32)?.reshape(&[3, 3])?;
/// assert_eq!(ferrox::diagonal(&a, 0, 0, 1)?.to_vec::<i32>()?, vec![0, 4, 8]);
/// assert_eq!(ferrox::diagonal(&a, -1, 0, 1)?.to_vec::<i32>()?, vec![3, 7]);
/// assert!(ferrox::diagonal(&a, 0, 1, -1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn diagonal(a: &Array, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
    if a.ndim() < 2 {
        return Err(Error::shape(
            "diagonal",
            format!(
                "array must have at least 2 dimensions, got shape {:?}",
                a.shape()
            ),
        ));
    }
    let i = normalize_axis("diagonal", axis1, a.ndim())?;
    let j = normalize_axis("diagonal", axis2, a.ndim())?;
    if i == j {
        return Err(Error::axis(
            "diagonal",
            format!("axis1 {axis1} and axis2 {axis2} refer to the same axis {i}"),
        ));
    }
    let (n1, n2) = (a.shape()[i] as i128, a.shape()[j] as i128);
    let k = offset as i128;
    let len = (n1 - (-k).max(0)).min(n2 - k.max(0)).max(0) as usize;
    let mut shape: Vec<usize> = (0..a.ndim())
        .filter(|&d| d != i && d != j)
        .map(|d| a.shape()[d])
        .collect();
    shape.push(len);
    // An empty diagonal never reads its start, so any in-range offset will do.
    let offset = if len == 0 { 0 } else { offset };
    Ok(Array::from_op(
        shape,
        a.dtype(),
        Diagonal {
            offset,
            axis1: i,
            axis2: j,
        },
        vec![a.clone()],
    ))
}

// ------------------------------------------------------------- contiguous

/// Row-major copy of the input (shares the input when it already is).
///
/// ```
/// let c = ferrox::contiguous(&ferrox::zeros(&[2], ferrox::DType::Float32)?)?;
/// assert_eq!(c.primitive().unwrap().name(), "contiguous");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Contiguous;

impl crate::graph::export::Exportable for Contiguous {
    const KIND: &'static str = "contiguous";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "contiguous")?;
        contiguous(x)
    }
}

impl Primitive for Contiguous {
    fn name(&self) -> &'static str {
        "contiguous"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        ensure_contiguous(&inputs[0])
    }
    fn vjp(&self, _p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![g.clone()])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => Ok(t.clone()),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((contiguous(&inputs[0])?, axes[0]))
    }
    crate::primitive_common!();
}

/// `a` laid out row-major and contiguous: copies views that are not.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// let c = ferrox::contiguous(&a.t()?)?;
/// assert_eq!(c.to_vec::<i32>()?, vec![1, 3, 2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn contiguous(a: &Array) -> Result<Array> {
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        Contiguous,
        vec![a.clone()],
    ))
}

// ---------------------------------------------------------------- methods

impl Array {
    /// Method form of [`reshape`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[6], ferrox::DType::Float32)?;
    /// assert_eq!(a.reshape(&[3, 2])?.shape(), &[3, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn reshape(&self, shape: &[isize]) -> Result<Array> {
        reshape(self, shape)
    }
    /// Method form of [`flatten`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
    /// assert_eq!(a.flatten(0, -1)?.shape(), &[6]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn flatten(&self, start_axis: isize, end_axis: isize) -> Result<Array> {
        flatten(self, start_axis, end_axis)
    }
    /// Method form of [`squeeze`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[1, 2], ferrox::DType::Float32)?;
    /// assert_eq!(a.squeeze(None)?.shape(), &[2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn squeeze(&self, axes: Option<&[isize]>) -> Result<Array> {
        squeeze(self, axes)
    }
    /// Method form of [`expand_dims`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
    /// assert_eq!(a.expand_dims(&[0])?.shape(), &[1, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn expand_dims(&self, axes: &[isize]) -> Result<Array> {
        expand_dims(self, axes)
    }
    /// Method form of [`transpose`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2, 3, 4], ferrox::DType::Float32)?;
    /// assert_eq!(a.transpose(Some(&[1, 2, 0]))?.shape(), &[3, 4, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn transpose(&self, axes: Option<&[usize]>) -> Result<Array> {
        transpose(self, axes)
    }
    /// All axes reversed (MLX's `a.T`). A view.
    ///
    /// ```
    /// let a = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
    /// assert_eq!(a.t()?.shape(), &[3, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn t(&self) -> Result<Array> {
        transpose(self, None)
    }
    /// Method form of [`swapaxes`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
    /// assert_eq!(a.swapaxes(0, 1)?.shape(), &[3, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn swapaxes(&self, axis1: isize, axis2: isize) -> Result<Array> {
        swapaxes(self, axis1, axis2)
    }
    /// Method form of [`moveaxis`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2, 3, 4], ferrox::DType::Float32)?;
    /// assert_eq!(a.moveaxis(-1, 0)?.shape(), &[4, 2, 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn moveaxis(&self, source: isize, destination: isize) -> Result<Array> {
        moveaxis(self, source, destination)
    }
    /// Method form of [`broadcast_to`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[1, 3], ferrox::DType::Float32)?;
    /// assert_eq!(a.broadcast_to(&[2, 3])?.shape(), &[2, 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        broadcast_to(self, shape)
    }
    /// Method form of [`diagonal`].
    ///
    /// ```
    /// let a = ferrox::eye(3, None, 0, ferrox::DType::Float32)?;
    /// assert_eq!(a.diagonal(0, 0, 1)?.to_vec::<f32>()?, vec![1.0; 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn diagonal(&self, offset: isize, axis1: isize, axis2: isize) -> Result<Array> {
        diagonal(self, offset, axis1, axis2)
    }
}
