//! Helpers shared by the primitives' transform rules.

use crate::error::Result;
use crate::graph::array::Array;

/// Sums `g` down to `shape`, undoing numpy broadcasting: the cotangent of
/// a broadcast operand.
///
/// ```
/// use ferrox::*;
/// let g = ones(&[2, 3], DType::Float32)?;
/// let r = ferrox::ops::grad_helpers::unbroadcast(&g, &[3])?;
/// assert_eq!(r.to_vec::<f32>()?, vec![2.0; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn unbroadcast(g: &Array, shape: &[usize]) -> Result<Array> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let extra = g.ndim() - shape.len();
    let mut axes: Vec<isize> = (0..extra as isize).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[extra + i] != 1 {
            axes.push((extra + i) as isize);
        }
    }
    let s = crate::ops::reduce::sum(g, Some(&axes), true)?;
    let target: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    crate::ops::views::reshape(&s, &target)
}

/// Moves every batched input's batch axis to the front and pads its rank
/// so that elementwise broadcasting lines examples up; unbatched inputs are
/// left alone (they broadcast from the right). Returns the inputs and the
/// output batch axis (`Some(0)`, or `None` if nothing is batched).
pub fn align_batch(
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Vec<Array>, Option<usize>)> {
    let rank = inputs
        .iter()
        .zip(axes)
        .map(|(x, a)| x.ndim() - usize::from(a.is_some()))
        .max()
        .unwrap_or(0);
    if axes.iter().all(Option::is_none) {
        return Ok((inputs.to_vec(), None));
    }
    let mut out = Vec::with_capacity(inputs.len());
    for (x, a) in inputs.iter().zip(axes) {
        match a {
            None => out.push(x.clone()),
            Some(ax) => {
                let moved = crate::ops::views::moveaxis(x, *ax as isize, 0)?;
                let example_rank = x.ndim() - 1;
                if example_rank < rank {
                    let mut shape: Vec<isize> = vec![moved.shape()[0] as isize];
                    shape.extend(std::iter::repeat_n(1, rank - example_rank));
                    shape.extend(moved.shape()[1..].iter().map(|&d| d as isize));
                    out.push(crate::ops::views::reshape(&moved, &shape)?);
                } else {
                    out.push(moved);
                }
            }
        }
    }
    Ok((out, Some(0)))
}

/// `x` with its batch axis `ax` moved to the front (`None`: unchanged).
///
/// ```
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// let y = ferrox::ops::grad_helpers::batch_front(&x, Some(1))?;
/// assert_eq!(y.shape(), &[3, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn batch_front(x: &Array, ax: Option<usize>) -> Result<Array> {
    match ax {
        Some(0) | None => Ok(x.clone()),
        Some(ax) => crate::ops::views::moveaxis(x, ax as isize, 0),
    }
}

/// Reshapes `x` to a shape given as `usize`s.
///
/// ```
/// let x = ferrox::zeros(&[6], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::ops::grad_helpers::reshape_to(&x, &[2, 3])?.shape(), &[2, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn reshape_to(x: &Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let s: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
    crate::ops::views::reshape(x, &s)
}

/// Inserts size-1 axes right after the leading batch axis of `x` until one
/// example has rank `rank`, so that the batch axis lines up when examples
/// broadcast against arrays of that rank.
///
/// ```
/// let x = ferrox::zeros(&[4, 3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::ops::grad_helpers::pad_example_rank(&x, 3)?.shape(), &[4, 1, 1, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn pad_example_rank(x: &Array, rank: usize) -> Result<Array> {
    let example = x.ndim().saturating_sub(1);
    if example >= rank {
        return Ok(x.clone());
    }
    // New axes by position, not a fixed target shape, so a shapeless
    // compiled replay on other sizes still applies.
    let new_axes: Vec<isize> = (1..=(rank - example) as isize).collect();
    crate::ops::views::expand_dims(x, &new_axes)
}

/// The cotangent `g` of a reduction over `axes` of `x` (with or without
/// kept dims), expanded and broadcast back to `x`'s shape. The broadcast
/// takes its target from `x` itself ([`broadcast_like`]), so a shapeless
/// compiled gradient follows the input's shape on replay.
///
/// [`broadcast_like`]: crate::ops::views::broadcast_like
///
/// ```
/// let g = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// let e = ferrox::ops::grad_helpers::expand_reduced(&g, &[1], false, &x)?;
/// assert_eq!(e.shape(), &[2, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn expand_reduced(g: &Array, axes: &[usize], keepdims: bool, x: &Array) -> Result<Array> {
    crate::ops::views::broadcast_like(&restore_reduced_axes(g, axes, keepdims)?, x)
}

/// `g`, the cotangent of a reduction over `axes`, with the reduced axes put
/// back as size 1 (unchanged when the reduction kept them).
///
/// ```
/// let g = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// let e = ferrox::ops::grad_helpers::restore_reduced_axes(&g, &[1], false)?;
/// assert_eq!(e.shape(), &[2, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn restore_reduced_axes(g: &Array, axes: &[usize], keepdims: bool) -> Result<Array> {
    if keepdims || axes.is_empty() {
        return Ok(g.clone());
    }
    let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    crate::ops::views::expand_dims(g, &ax)
}

/// `x * s` (`x` itself when `s == 1`); `s` is a weak scalar.
pub fn scale(x: &Array, s: f64) -> Result<Array> {
    if s == 1.0 {
        Ok(x.clone())
    } else {
        crate::ops::binary::multiply(x, &Array::from(s))
    }
}

/// The sum of the present terms (`None` if there are none).
pub fn sum_terms(terms: impl IntoIterator<Item = Option<Array>>) -> Result<Option<Array>> {
    let mut total: Option<Array> = None;
    for t in terms.into_iter().flatten() {
        total = Some(match total {
            Some(prev) => crate::ops::binary::add(&prev, &t)?,
            None => t,
        });
    }
    Ok(total)
}

/// Zero cotangents for the primals at `argnums`: the rule of an op whose
/// output does not depend differentiably on its inputs.
pub fn zero_cotangents(primals: &[Array], argnums: &[usize]) -> Result<Vec<Array>> {
    argnums
        .iter()
        .map(|&i| {
            primals
                .get(i)
                .ok_or_else(|| {
                    crate::error::Error::runtime("vjp", format!("argnum {i} out of range"))
                })
                .and_then(crate::ops::creation::zeros_like)
        })
        .collect()
}

/// The tangent of input `i`, or zeros shaped like `primals[i]`.
pub fn tangent_or_zeros(primals: &[Array], tangents: &[Option<Array>], i: usize) -> Result<Array> {
    match tangents.get(i) {
        Some(Some(t)) => Ok(t.clone()),
        _ => crate::ops::creation::zeros_like(&primals[i]),
    }
}
