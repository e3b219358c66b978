//! Shape rules shared by many ops: broadcasting and axis normalisation.

use crate::error::{Error, Result};
use crate::graph::array::Array;

/// numpy broadcasting of two shapes, or an error naming `op`.
///
/// ```
/// use ferrox::ops::shape_rules::broadcast_shapes;
/// assert_eq!(broadcast_shapes("add", &[3, 1], &[4]).unwrap(), vec![3, 4]);
/// assert!(broadcast_shapes("add", &[3], &[4]).is_err());
/// ```
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!("shapes {a:?} and {b:?} cannot be broadcast together"),
            ));
        };
    }
    Ok(out)
}

/// The shape `shapes` broadcast together (numpy rules): the public face
/// of broadcasting without arrays (`mx.broadcast_shapes`).
///
/// ```
/// assert_eq!(ferrox::broadcast_shapes(&[&[1, 3], &[2, 1], &[3]])?, vec![2, 3]);
/// assert!(ferrox::broadcast_shapes(&[&[2], &[3]]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn broadcast_all(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    let mut shape: Vec<usize> = vec![];
    for s in shapes {
        shape = broadcast_shapes("broadcast_shapes", &shape, s)?;
    }
    Ok(shape)
}

/// Broadcast shape of many arrays.
pub fn broadcast_many(op: &str, arrays: &[&Array]) -> Result<Vec<usize>> {
    let mut shape: Vec<usize> = vec![];
    for a in arrays {
        shape = broadcast_shapes(op, &shape, a.shape())?;
    }
    Ok(shape)
}

/// Maps a possibly negative axis into `0..ndim`.
///
/// ```
/// use ferrox::ops::shape_rules::normalize_axis;
/// assert_eq!(normalize_axis("sum", -1, 3).unwrap(), 2);
/// assert!(normalize_axis("sum", 3, 3).is_err());
/// ```
pub fn normalize_axis(op: &str, axis: isize, ndim: usize) -> Result<usize> {
    let n = ndim as isize;
    if axis < -n || axis >= n {
        return Err(Error::axis(
            op,
            format!("axis {axis} is out of bounds for an array with {ndim} dimensions"),
        ));
    }
    Ok(if axis < 0 {
        (axis + n) as usize
    } else {
        axis as usize
    })
}

/// Normalises a set of axes; `None` means every axis. Repeats are errors.
/// The result is sorted.
pub fn normalize_axes(op: &str, axes: Option<&[isize]>, ndim: usize) -> Result<Vec<usize>> {
    let Some(axes) = axes else {
        return Ok((0..ndim).collect());
    };
    let mut out = Vec::with_capacity(axes.len());
    for &ax in axes {
        let a = normalize_axis(op, ax, ndim)?;
        if out.contains(&a) {
            return Err(Error::axis(op, format!("repeated axis {ax} in {axes:?}")));
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}
