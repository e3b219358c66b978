//! Joins and copies that rearrange elements: concatenate, stack, split,
//! tile, repeat, pad, roll, meshgrid, tril, triu, diag.
//!
//! Only four ops have kernels of their own (concatenate, constant pad,
//! tril/triu, 1-d diag), in `backend::cpu::join`; they move bytes with the
//! size-generic copy kernels (`memcpy` of contiguous runs). The others are
//! compositions, as in MLX: split is slices, stack is expand + concatenate,
//! tile and repeat are broadcast + reshape (one gather copy), roll and edge
//! padding are slices + concatenate, meshgrid is reshape + broadcast (views).
//! Compositions need no kernels and will get their derivatives from the
//! parts.

use super::views::{broadcast_to, diagonal, flatten, reshape_to, slice_axis, slice_parts};
use crate::backend::cpu::join;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;
use crate::ops::shape_rules::normalize_axis;

#[cfg(test)]
mod tests;

// ------------------------------------------------------------ concatenate

/// Joins inputs of one dtype along `axis`.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let c = ferrox::concatenate(&[a.clone(), a], 0)?;
/// assert_eq!(c.primitive().unwrap().name(), "concatenate");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Concatenate {
    /// The (normalised) axis.
    pub axis: usize,
}

impl crate::graph::export::Exportable for Concatenate {
    const KIND: &'static str = "concatenate";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let axis = isize::try_from(self.axis).unwrap_or(isize::MAX);
        concatenate(inputs, axis)
    }
}

impl Primitive for Concatenate {
    fn name(&self) -> &'static str {
        "concatenate"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        join::concatenate(inputs, self.axis, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // Each input gets its block of the cotangent.
        let mut offsets = Vec::with_capacity(p.len() + 1);
        offsets.push(0usize);
        for x in p {
            offsets.push(offsets[offsets.len() - 1] + x.shape()[self.axis]);
        }
        argnums
            .iter()
            .map(|&i| {
                let nd = g.ndim();
                let mut start = vec![0isize; nd];
                let mut stop: Vec<isize> = g.shape().iter().map(|&d| d as isize).collect();
                start[self.axis] = offsets[i] as isize;
                stop[self.axis] = offsets[i + 1] as isize;
                crate::ops::views::slice(g, &start, &stop, &vec![1; nd])
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], _output: &Array) -> Result<Array> {
        let ts = (0..p.len())
            .map(|i| grad_helpers::tangent_or_zeros(p, tangents, i))
            .collect::<Result<Vec<_>>>()?;
        concatenate(&ts, self.axis as isize)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(b) = inputs
            .iter()
            .zip(axes)
            .find_map(|(x, ax)| ax.map(|ax| x.shape()[ax]))
        else {
            return Ok((concatenate(inputs, self.axis as isize)?, None));
        };
        let xs = inputs
            .iter()
            .zip(axes)
            .map(|(x, ax)| match ax {
                Some(_) => grad_helpers::batch_front(x, *ax),
                None => {
                    let shape: Vec<usize> = std::iter::once(b)
                        .chain(x.shape().iter().copied())
                        .collect();
                    crate::ops::views::broadcast_to(
                        &crate::ops::views::expand_dims(x, &[0])?,
                        &shape,
                    )
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((concatenate(&xs, self.axis as isize + 1)?, Some(0)))
    }
    crate::primitive_common!();
}

/// Joins arrays along an existing axis. Dtypes promote to a common one
/// (MLX's rules); all other dimensions must match.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[1, 2])?;
/// let b = ferrox::Array::from_slice(&[3.5f32, 4.5], &[1, 2])?;
/// let c = ferrox::concatenate(&[a.clone(), b], 0)?;
/// assert_eq!(c.dtype(), ferrox::DType::Float32);
/// assert_eq!(c.to_vec::<f32>()?, vec![1.0, 2.0, 3.5, 4.5]);
/// assert_eq!(ferrox::concatenate(&[a.clone(), a], -1)?.shape(), &[1, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn concatenate(arrays: &[Array], axis: isize) -> Result<Array> {
    let op = "concatenate";
    let Some(first) = arrays.first() else {
        return Err(Error::value(op, "need at least one array to concatenate"));
    };
    if first.ndim() == 0 {
        return Err(Error::shape(
            op,
            "zero-dimensional arrays cannot be concatenated",
        ));
    }
    let ax = normalize_axis(op, axis, first.ndim())?;
    let mut shape = first.shape().to_vec();
    shape[ax] = 0;
    for (i, a) in arrays.iter().enumerate() {
        let same_rest = a.ndim() == shape.len()
            && a.shape()
                .iter()
                .zip(first.shape())
                .enumerate()
                .all(|(d, (x, y))| d == ax || x == y);
        if !same_rest {
            return Err(Error::shape(
                op,
                format!(
                    "array {i} has shape {:?} but array 0 has shape {:?}; all dimensions except axis {ax} must match",
                    a.shape(),
                    first.shape()
                ),
            ));
        }
        shape[ax] = shape[ax]
            .checked_add(a.shape()[ax])
            .ok_or_else(|| Error::value(op, "the result has too many elements"))?;
    }
    checked_numel(op, &shape)?;
    let dtype = arrays
        .iter()
        .skip(1)
        .fold(first.dtype(), |d, a| DType::promote(d, a.dtype()));
    let inputs = arrays
        .iter()
        .map(|a| a.astype(dtype))
        .collect::<Result<Vec<_>>>()?;
    Ok(Array::from_op(
        shape,
        dtype,
        Concatenate { axis: ax },
        inputs,
    ))
}

/// Joins equally shaped arrays along a new axis `axis` (of the result).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// let b = ferrox::Array::from_slice(&[3i32, 4], &[2])?;
/// let s = ferrox::stack(&[a, b], 1)?;
/// assert_eq!(s.shape(), &[2, 2]);
/// assert_eq!(s.to_vec::<i32>()?, vec![1, 3, 2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn stack(arrays: &[Array], axis: isize) -> Result<Array> {
    let Some(first) = arrays.first() else {
        return Err(Error::value("stack", "need at least one array to stack"));
    };
    let ax = normalize_axis("stack", axis, first.ndim() + 1)?;
    if let Some((i, a)) = arrays
        .iter()
        .enumerate()
        .find(|(_, a)| a.shape() != first.shape())
    {
        return Err(Error::shape(
            "stack",
            format!(
                "all arrays must have the same shape; array 0 has shape {:?} but array {i} has shape {:?}",
                first.shape(),
                a.shape()
            ),
        ));
    }
    let mut shape = first.shape().to_vec();
    shape.insert(ax, 1);
    let expanded: Vec<Array> = arrays
        .iter()
        .map(|a| reshape_to(a, shape.clone()))
        .collect();
    concatenate(&expanded, ax as isize)
}

// ------------------------------------------------------------------ split

/// How [`split`] divides an axis; a `usize` converts to `Count`, a
/// `Vec<isize>` or `&[isize]` to `Indices`.
///
/// ```
/// use ferrox::Sections;
/// assert_eq!(Sections::from(3), Sections::Count(3));
/// assert_eq!(Sections::from(vec![1, -1]), Sections::Indices(vec![1, -1]));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sections {
    /// Into this many equal parts (the axis size must be divisible).
    Count(usize),
    /// At these indices: parts `a[..i0]`, `a[i0..i1]`, ..., `a[ik..]`, each
    /// with Python slice semantics (negative indices count from the end).
    Indices(Vec<isize>),
}

impl From<usize> for Sections {
    fn from(n: usize) -> Sections {
        Sections::Count(n)
    }
}
impl From<Vec<isize>> for Sections {
    fn from(v: Vec<isize>) -> Sections {
        Sections::Indices(v)
    }
}
impl From<&[isize]> for Sections {
    fn from(v: &[isize]) -> Sections {
        Sections::Indices(v.to_vec())
    }
}

/// Most parts [`split`] makes of an empty axis.
const MAX_EMPTY_SECTIONS: usize = 1 << 16;

/// Splits `a` along `axis` into views: `sections` equal parts, or at the
/// given indices.
///
/// ```
/// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Int32)?;
/// let parts = ferrox::split(&a, 3, 0)?;
/// assert_eq!(parts[1].to_vec::<i32>()?, vec![2, 3]);
/// let parts = ferrox::split(&a, vec![1, -2], 0)?;
/// assert_eq!(parts.iter().map(|p| p.size()).collect::<Vec<_>>(), vec![1, 3, 2]);
/// assert!(ferrox::split(&a, 4, 0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn split(a: &Array, sections: impl Into<Sections>, axis: isize) -> Result<Vec<Array>> {
    let ax = normalize_axis("split", axis, a.ndim())?;
    let n = a.shape()[ax];
    let bounds: Vec<isize> = match sections.into() {
        Sections::Count(0) => {
            return Err(Error::value(
                "split",
                "number of sections must be larger than 0",
            ));
        }
        Sections::Count(k) => {
            // An empty axis splits into k empty parts; bound k so the list
            // of parts cannot exhaust memory.
            if n == 0 && k > MAX_EMPTY_SECTIONS {
                return Err(Error::value(
                    "split",
                    format!(
                        "axis {ax} of size 0 cannot be split into {k} sections (at most \
                         {MAX_EMPTY_SECTIONS})"
                    ),
                ));
            }
            if n % k != 0 {
                return Err(Error::value(
                    "split",
                    format!("axis {ax} of size {n} cannot be split into {k} equal sections"),
                ));
            }
            (0..=k).map(|i| (i * (n / k)) as isize).collect()
        }
        Sections::Indices(idx) => {
            let mut b = Vec::with_capacity(idx.len() + 2);
            b.push(0);
            b.extend(idx);
            b.push(n as isize);
            b
        }
    };
    let whole: Vec<(isize, usize, isize)> = a.shape().iter().map(|&d| (0, d, 1)).collect();
    Ok(bounds
        .windows(2)
        .map(|w| {
            let mut parts = whole.clone();
            let (start, len) = slice_axis(n, Some(w[0]), Some(w[1]), 1);
            parts[ax] = (start, len, 1);
            slice_parts(a, &parts)
        })
        .collect())
}

// ---------------------------------------------------------- tile / repeat

/// Repeats the whole array `reps[i]` times along axis `i` (numpy's `tile`:
/// the shorter of `reps` and the shape is padded with leading 1s).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// let t = ferrox::tile(&a, &[2, 2])?;
/// assert_eq!(t.shape(), &[2, 4]);
/// assert_eq!(t.to_vec::<i32>()?, vec![1, 2, 1, 2, 1, 2, 1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tile(a: &Array, reps: &[usize]) -> Result<Array> {
    let nd = a.ndim().max(reps.len());
    let pad = |v: &[usize]| -> Vec<usize> {
        let mut p = vec![1; nd - v.len()];
        p.extend_from_slice(v);
        p
    };
    let (shape, reps) = (pad(a.shape()), pad(reps));
    let mut out = Vec::with_capacity(nd);
    for (&d, &r) in shape.iter().zip(&reps) {
        out.push(d.checked_mul(r).ok_or_else(|| {
            Error::value("tile", format!("reps {reps:?} give too many elements"))
        })?);
    }
    checked_numel("tile", &out)?;
    // [1, d0, 1, d1, ...] broadcast to [r0, d0, r1, d1, ...], then merged.
    let spread: Vec<usize> = shape.iter().flat_map(|&d| [1, d]).collect();
    // An empty axis stays empty whatever its reps: use 0 so the
    // intermediate shape is no bigger than the output.
    let target: Vec<usize> = shape
        .iter()
        .zip(&reps)
        .flat_map(|(&d, &r)| [if d == 0 { 0 } else { r }, d])
        .collect();
    let b = broadcast_to(&reshape_to(a, spread), &target)?;
    Ok(reshape_to(&b, out))
}

/// Repeats each element `repeats` times along `axis` (`None`: of the
/// flattened array).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// assert_eq!(ferrox::repeat(&a, 2, Some(1))?.to_vec::<i32>()?, vec![1, 1, 2, 2, 3, 3, 4, 4]);
/// assert_eq!(ferrox::repeat(&a, 2, None)?.shape(), &[8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn repeat(a: &Array, repeats: usize, axis: Option<isize>) -> Result<Array> {
    let (a, ax) = match axis {
        None => (flatten(a, 0, -1)?, 0),
        Some(axis) => (a.clone(), normalize_axis("repeat", axis, a.ndim())?),
    };
    let mut out = a.shape().to_vec();
    out[ax] = out[ax].checked_mul(repeats).ok_or_else(|| {
        Error::value(
            "repeat",
            format!("{repeats} repeats give too many elements"),
        )
    })?;
    checked_numel("repeat", &out)?;
    let mut spread = a.shape().to_vec();
    spread.insert(ax + 1, 1);
    let mut target = spread.clone();
    // An empty axis stays empty: use 0 repeats so the intermediate shape is
    // no bigger than the output.
    target[ax + 1] = if out[ax] == 0 { 0 } else { repeats };
    let b = broadcast_to(&reshape_to(&a, spread), &target)?;
    Ok(reshape_to(&b, out))
}

// -------------------------------------------------------------------- pad

/// How [`pad`] fills the new elements.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// let p = ferrox::pad(&a, &[(1, 0)], ferrox::PadMode::Constant(-1.0))?;
/// assert_eq!(p.to_vec::<f32>()?, vec![-1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PadMode {
    /// This value (cast to the array's dtype).
    Constant(f64),
    /// The nearest edge element of the array.
    Edge,
    /// The array mirrored about its edge elements, which are not repeated
    /// (numpy's `reflect`: `[3, 2 | 1, 2, 3 | 2, 1]`); repeats past the
    /// array's length keep mirroring.
    Reflect,
    /// The array mirrored with its edge elements repeated (numpy's
    /// `symmetric`: `[2, 1 | 1, 2, 3 | 3, 2]`).
    Symmetric,
}

/// Places the input at offset `low` inside an output filled with `value`.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let p = ferrox::pad(&a, &[(1, 1)], ferrox::PadMode::Constant(0.0))?;
/// assert_eq!(p.primitive().unwrap().name(), "pad");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pad {
    /// Elements before the input, per axis.
    pub low: Vec<usize>,
    /// Elements after the input, per axis.
    pub high: Vec<usize>,
    /// The fill value (cast to the dtype).
    pub value: f64,
}

impl crate::graph::export::Exportable for Pad {
    const KIND: &'static str = "pad";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "pad")?;
        if self.low.len() != self.high.len() {
            return Err(Error::value(
                "pad",
                format!(
                    "an exported pad has {} low and {} high widths",
                    self.low.len(),
                    self.high.len()
                ),
            ));
        }
        let widths: Vec<(usize, usize)> = self
            .low
            .iter()
            .copied()
            .zip(self.high.iter().copied())
            .collect();
        pad(x, &widths, PadMode::Constant(self.value))
    }
}

impl Pad {
    /// This padding applied to `a` with fill `value`.
    fn apply(&self, a: &Array, value: f64) -> Result<Array> {
        let widths: Vec<(usize, usize)> = self
            .low
            .iter()
            .copied()
            .zip(self.high.iter().copied())
            .collect();
        pad(a, &widths, PadMode::Constant(value))
    }
}

impl Primitive for Pad {
    fn name(&self) -> &'static str {
        "pad"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        join::pad(&inputs[0], &self.low, self.value, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        // The cotangent of the input is the interior of the padded one.
        let x = &p[0];
        let start: Vec<isize> = self.low.iter().map(|&l| l as isize).collect();
        let stop: Vec<isize> = start
            .iter()
            .zip(x.shape())
            .map(|(&s, &n)| s + n as isize)
            .collect();
        Ok(vec![crate::ops::views::slice(
            g,
            &start,
            &stop,
            &vec![1; x.ndim()],
        )?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => self.apply(t, 0.0),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((self.apply(&inputs[0], self.value)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let batched = Pad {
            low: std::iter::once(0).chain(self.low.iter().copied()).collect(),
            high: std::iter::once(0)
                .chain(self.high.iter().copied())
                .collect(),
            value: self.value,
        };
        Ok((batched.apply(&x, self.value)?, Some(0)))
    }
    crate::primitive_common!();
}

/// Pads `a` with `pad_width[i] = (before, after)` elements on axis `i` (a
/// single pair applies to every axis), filled per `mode`.
///
/// ```
/// use ferrox::PadMode;
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// let c = ferrox::pad(&a, &[(1, 2)], PadMode::Constant(9.0))?;
/// assert_eq!(c.to_vec::<i32>()?, vec![9, 1, 2, 9, 9]);
/// let e = ferrox::pad(&a, &[(2, 1)], PadMode::Edge)?;
/// assert_eq!(e.to_vec::<i32>()?, vec![1, 1, 1, 2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn pad(a: &Array, pad_width: &[(usize, usize)], mode: PadMode) -> Result<Array> {
    let nd = a.ndim();
    let widths: Vec<(usize, usize)> = match pad_width.len() {
        n if n == nd => pad_width.to_vec(),
        1 => vec![pad_width[0]; nd],
        _ => {
            return Err(Error::value(
                "pad",
                format!(
                    "pad_width {pad_width:?} needs one (before, after) pair per axis of an array of shape {:?}, or a single pair",
                    a.shape()
                ),
            ));
        }
    };
    let mut out = Vec::with_capacity(nd);
    for (&d, &(b, e)) in a.shape().iter().zip(&widths) {
        let n = d.checked_add(b).and_then(|n| n.checked_add(e));
        out.push(n.ok_or_else(|| {
            Error::value(
                "pad",
                format!("pad_width {pad_width:?} gives too many elements"),
            )
        })?);
    }
    checked_numel("pad", &out)?;
    if widths.iter().all(|&w| w == (0, 0)) {
        return Ok(a.clone());
    }
    match mode {
        PadMode::Constant(value) => {
            let low = widths.iter().map(|w| w.0).collect();
            let high = widths.iter().map(|w| w.1).collect();
            Ok(Array::from_op(
                out,
                a.dtype(),
                Pad { low, high, value },
                vec![a.clone()],
            ))
        }
        PadMode::Edge | PadMode::Reflect | PadMode::Symmetric => {
            let mut r = a.clone();
            for (ax, &(b, e)) in widths.iter().enumerate() {
                if (b, e) == (0, 0) {
                    continue;
                }
                r = if mode == PadMode::Edge {
                    pad_edge_axis(&r, ax, b, e)?
                } else {
                    pad_mirror_axis(&r, ax, b, e, mode == PadMode::Symmetric)?
                };
            }
            Ok(r)
        }
    }
}

/// Pads `a` like [`pad`] with [`PadMode::Constant`], the fill being an
/// array `value` (a scalar array, cast to `a`'s dtype) rather than a host
/// number: so the fill may come from the graph (a traced value under vmap
/// or grad).
///
/// ```
/// use ferrox::{Array, pad_with_value};
/// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let p = pad_with_value(&a, &[(1, 1)], &Array::scalar(7.0f32))?;
/// assert_eq!(p.to_vec::<f32>()?, vec![7.0, 1.0, 2.0, 7.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn pad_with_value(a: &Array, pad_width: &[(usize, usize)], value: &Array) -> Result<Array> {
    if value.size() != 1 {
        return Err(Error::shape(
            "pad",
            format!(
                "constant_values must be a scalar, got shape {:?}",
                value.shape()
            ),
        ));
    }
    let padded = pad(a, pad_width, PadMode::Constant(0.0))?;
    let inside = pad(
        &crate::ops::creation::ones(a.shape(), crate::dtype::DType::Bool)?,
        pad_width,
        PadMode::Constant(0.0),
    )?;
    let fill = crate::ops::views::reshape(&value.astype(a.dtype())?, &[])?;
    crate::ops::select::r#where(&inside, &padded, &fill)
}

/// Mirror padding of axis `ax` by `b` before and `e` after, as a gather:
/// output position `i` (from `-b`) reads source index `i` folded into one
/// period of the mirrored sequence (`2(n-1)` for reflect, `2n` for
/// symmetric), which is numpy's result also when the padding is longer
/// than the axis.
fn pad_mirror_axis(a: &Array, ax: usize, b: usize, e: usize, symmetric: bool) -> Result<Array> {
    let n = a.shape()[ax];
    if n == 0 {
        return Err(Error::value(
            "pad",
            format!(
                "cannot mirror-pad axis {ax} of size 0 (shape {:?})",
                a.shape()
            ),
        ));
    }
    let (n, b) = (n as i64, b as i64);
    let period = if symmetric { 2 * n } else { 2 * (n - 1) };
    let source: Vec<i64> = (-b..n + e as i64)
        .map(|i| {
            if period == 0 {
                return 0;
            }
            let j = i.rem_euclid(period);
            if j < n {
                j
            } else if symmetric {
                period - 1 - j
            } else {
                period - j
            }
        })
        .collect();
    let len = source.len();
    let index = Array::from_slice(&source, &[len])?;
    crate::ops::indexing::take(a, &index, Some(ax as isize))
}

/// `[first row repeated b times, a, last row repeated e times]` along `ax`.
fn pad_edge_axis(a: &Array, ax: usize, b: usize, e: usize) -> Result<Array> {
    let n = a.shape()[ax];
    if n == 0 {
        return Err(Error::value(
            "pad",
            format!(
                "cannot edge-pad axis {ax} of size 0 (shape {:?})",
                a.shape()
            ),
        ));
    }
    let edge = |at: usize, count: usize| -> Result<Array> {
        let mut parts: Vec<(isize, usize, isize)> = a.shape().iter().map(|&d| (0, d, 1)).collect();
        parts[ax] = (at as isize, 1, 1);
        let mut shape = a.shape().to_vec();
        shape[ax] = count;
        broadcast_to(&slice_parts(a, &parts), &shape)
    };
    let mut pieces = Vec::with_capacity(3);
    if b > 0 {
        pieces.push(edge(0, b)?);
    }
    pieces.push(a.clone());
    if e > 0 {
        pieces.push(edge(n - 1, e)?);
    }
    concatenate(&pieces, ax as isize)
}

// ------------------------------------------------------------------- roll

/// Shifts elements along axes, wrapping around: `out[i] = a[i - shift]`.
/// `axes: None` rolls the flattened array (shifts add up). `shift` and
/// `axes` pair up, or one of them has a single entry that applies to all of
/// the other; repeated axes add their shifts.
///
/// ```
/// let a = ferrox::arange(0.0, 5.0, 1.0, ferrox::DType::Int32)?;
/// assert_eq!(ferrox::roll(&a, &[2], None)?.to_vec::<i32>()?, vec![3, 4, 0, 1, 2]);
/// let m = a.reshape(&[1, 5])?;
/// assert_eq!(ferrox::roll(&m, &[-1], Some(&[1]))?.to_vec::<i32>()?, vec![1, 2, 3, 4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn roll(a: &Array, shift: &[isize], axes: Option<&[isize]>) -> Result<Array> {
    let Some(axes) = axes else {
        let total: i128 = shift.iter().map(|&s| s as i128).sum();
        let flat = flatten(a, 0, -1)?;
        let rolled = roll_axis(&flat, 0, total);
        return Ok(reshape_to(&rolled, a.shape().to_vec()));
    };
    let pairs: Vec<(isize, isize)> = if shift.len() == axes.len() {
        shift.iter().copied().zip(axes.iter().copied()).collect()
    } else if shift.len() == 1 {
        axes.iter().map(|&ax| (shift[0], ax)).collect()
    } else if axes.len() == 1 {
        shift.iter().map(|&s| (s, axes[0])).collect()
    } else {
        return Err(Error::value(
            "roll",
            format!("shift {shift:?} and axes {axes:?} have incompatible lengths"),
        ));
    };
    let mut per_axis = vec![0i128; a.ndim()];
    for (s, ax) in pairs {
        per_axis[normalize_axis("roll", ax, a.ndim())?] += s as i128;
    }
    let mut r = a.clone();
    for (ax, &s) in per_axis.iter().enumerate() {
        r = roll_axis(&r, ax, s);
    }
    Ok(r)
}

/// `concatenate([a[n-s:], a[:n-s]])` along `ax` for `s = shift mod n`.
fn roll_axis(a: &Array, ax: usize, shift: i128) -> Array {
    let n = a.shape()[ax];
    if n == 0 || shift.rem_euclid(n as i128) == 0 {
        return a.clone();
    }
    let s = shift.rem_euclid(n as i128) as usize;
    let whole: Vec<(isize, usize, isize)> = a.shape().iter().map(|&d| (0, d, 1)).collect();
    let (mut tail, mut head) = (whole.clone(), whole);
    tail[ax] = ((n - s) as isize, s, 1);
    head[ax] = (0, n - s, 1);
    let mut shape = a.shape().to_vec();
    shape[ax] = n;
    let inputs = vec![slice_parts(a, &tail), slice_parts(a, &head)];
    Array::from_op(shape, a.dtype(), Concatenate { axis: ax }, inputs)
}

// --------------------------------------------------------------- meshgrid

/// Coordinate grids from 1-d coordinate vectors (inputs are flattened).
/// `indexing` is `"xy"` (Cartesian: the first two output axes are swapped)
/// or `"ij"` (matrix). With `sparse` the outputs keep size-1 axes instead of
/// being broadcast. The outputs are views.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// let y = ferrox::Array::from_slice(&[4i32, 5], &[2])?;
/// let g = ferrox::meshgrid(&[x, y], false, "xy")?;
/// assert_eq!(g[0].shape(), &[2, 3]);
/// assert_eq!(g[0].to_vec::<i32>()?, vec![1, 2, 3, 1, 2, 3]);
/// assert_eq!(g[1].to_vec::<i32>()?, vec![4, 4, 4, 5, 5, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn meshgrid(arrays: &[Array], sparse: bool, indexing: &str) -> Result<Vec<Array>> {
    let xy = match indexing {
        "xy" => true,
        "ij" => false,
        other => {
            return Err(Error::value(
                "meshgrid",
                format!("indexing must be \"xy\" or \"ij\", got {other:?}"),
            ));
        }
    };
    let n = arrays.len();
    // Position of array i's axis in the outputs.
    let pos = |i: usize| if xy && n >= 2 && i < 2 { 1 - i } else { i };
    let mut full = vec![0usize; n];
    for (i, a) in arrays.iter().enumerate() {
        full[pos(i)] = a.size();
    }
    checked_numel("meshgrid", &full)?;
    arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let mut shape = vec![1usize; n];
            shape[pos(i)] = a.size();
            let r = reshape_to(a, shape);
            if sparse {
                Ok(r)
            } else {
                broadcast_to(&r, &full)
            }
        })
        .collect()
}

// --------------------------------------------------------- tril/triu/diag

/// Zeroes the elements above (`tril`) or below (`triu`) diagonal `k` of
/// the last two axes.
///
/// ```
/// let t = ferrox::tril(&ferrox::ones(&[2, 2], ferrox::DType::Float32)?, 0)?;
/// assert_eq!(t.primitive().unwrap().name(), "tril");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Triangle {
    /// Diagonal offset.
    pub k: isize,
    /// `triu` (keep `col - row >= k`) instead of `tril` (keep `col - row <= k`).
    pub upper: bool,
}

impl crate::graph::export::Exportable for Triangle {
    const KIND: &'static str = "triangle";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.name())?;
        if self.upper {
            triu(x, self.k)
        } else {
            tril(x, self.k)
        }
    }
}

impl Primitive for Triangle {
    fn name(&self) -> &'static str {
        if self.upper { "triu" } else { "tril" }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        join::triangle(&inputs[0], self.k, self.upper, out)
    }
    fn vjp(&self, _p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![triangle(g, self.k, self.upper)?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => triangle(t, self.k, self.upper),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        // The triangle is of the last two axes: the batch axis goes in front.
        let x = grad_helpers::batch_front(&inputs[0], axes[0])?;
        Ok((triangle(&x, self.k, self.upper)?, axes[0].map(|_| 0)))
    }
    crate::primitive_common!();
}

fn triangle(a: &Array, k: isize, upper: bool) -> Result<Array> {
    let op = if upper { "triu" } else { "tril" };
    if a.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "array must have at least 2 dimensions, got shape {:?}",
                a.shape()
            ),
        ));
    }
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        Triangle { k, upper },
        vec![a.clone()],
    ))
}

/// The lower triangle of the last two axes: elements with
/// `col - row > k` become zero.
///
/// ```
/// let a = ferrox::ones(&[2, 3], ferrox::DType::Int32)?;
/// assert_eq!(ferrox::tril(&a, 0)?.to_vec::<i32>()?, vec![1, 0, 0, 1, 1, 0]);
/// assert!(ferrox::tril(&ferrox::ones(&[3], ferrox::DType::Int32)?, 0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tril(a: &Array, k: isize) -> Result<Array> {
    triangle(a, k, false)
}

/// The upper triangle of the last two axes: elements with
/// `col - row < k` become zero.
///
/// ```
/// let a = ferrox::ones(&[2, 3], ferrox::DType::Int32)?;
/// assert_eq!(ferrox::triu(&a, 1)?.to_vec::<i32>()?, vec![0, 1, 1, 0, 0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn triu(a: &Array, k: isize) -> Result<Array> {
    triangle(a, k, true)
}

/// A square matrix with a 1-d input on diagonal `k` and zeros elsewhere.
///
/// ```
/// let d = ferrox::diag(&ferrox::ones(&[2], ferrox::DType::Float32)?, 0)?;
/// assert_eq!(d.primitive().unwrap().name(), "diag");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiagMatrix {
    /// Diagonal offset.
    pub k: isize,
}

impl crate::graph::export::Exportable for DiagMatrix {
    const KIND: &'static str = "diag_matrix";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "diag")?;
        if x.ndim() != 1 {
            return Err(Error::shape(
                "diag",
                format!(
                    "an exported diagonal matrix has an input of shape {:?}",
                    x.shape()
                ),
            ));
        }
        diag(x, self.k)
    }
}

impl Primitive for DiagMatrix {
    fn name(&self) -> &'static str {
        "diag"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        join::diag_matrix(&inputs[0], self.k, out)
    }
    fn vjp(&self, _p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![diagonal(g, self.k, 0, 1)?])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => diag(t, self.k),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((diag(&inputs[0], self.k)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let m = x.shape()[1] + self.k.unsigned_abs();
        let placer = crate::ops::views::Diagonal {
            offset: self.k,
            axis1: 1,
            axis2: 2,
        };
        Ok((placer.embed(&x, &[x.shape()[0], m, m])?, Some(0)))
    }
    crate::primitive_common!();
}

/// numpy's `diag`: a 1-d input becomes a matrix with it on diagonal `k`; a
/// 2-d input gives its diagonal `k` (a view).
///
/// ```
/// let v = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// let m = ferrox::diag(&v, 1)?;
/// assert_eq!(m.to_vec::<i32>()?, vec![0, 1, 0, 0, 0, 2, 0, 0, 0]);
/// assert_eq!(ferrox::diag(&m, 1)?.to_vec::<i32>()?, vec![1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn diag(a: &Array, k: isize) -> Result<Array> {
    match a.ndim() {
        1 => {
            let m = a.shape()[0]
                .checked_add(k.unsigned_abs())
                .filter(|&m| checked_numel("diag", &[m, m]).is_ok());
            let m = m.ok_or_else(|| {
                Error::value("diag", format!("offset {k} gives too many elements"))
            })?;
            Ok(Array::from_op(
                vec![m, m],
                a.dtype(),
                DiagMatrix { k },
                vec![a.clone()],
            ))
        }
        2 => diagonal(a, k, 0, 1),
        _ => Err(Error::shape(
            "diag",
            format!("input must be 1-d or 2-d, got shape {:?}", a.shape()),
        )),
    }
}
