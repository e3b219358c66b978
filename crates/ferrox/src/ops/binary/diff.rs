//! `diff`: the n-th discrete difference along an axis, composed of slices
//! and `subtract` (derivatives and batching come from those).

use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::shape_rules::normalize_axis;
use crate::ops::views::slice_along;

/// The `n`-th discrete difference along `axis`: `a[1:] - a[:-1]`, applied
/// `n` times (the axis shrinks by `n`, to 0 at most). bool inputs give
/// `a[1:] != a[:-1]`, as numpy. `n == 0` returns `a`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 4, 9, 16], &[4])?;
/// assert_eq!(ferrox::diff(&a, 1, -1)?.to_vec::<i32>()?, vec![3, 5, 7]);
/// assert_eq!(ferrox::diff(&a, 2, 0)?.to_vec::<i32>()?, vec![2, 2]);
/// assert_eq!(ferrox::diff(&a, 9, 0)?.shape(), &[0]);
/// assert!(ferrox::diff(&ferrox::Array::scalar(1i32), 1, -1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn diff(a: &Array, n: usize, axis: isize) -> Result<Array> {
    if a.ndim() == 0 {
        return Err(Error::value(
            "diff",
            "needs at least one dimension, got a scalar".to_string(),
        ));
    }
    let ax = normalize_axis("diff", axis, a.ndim())?;
    let mut x = a.clone();
    for _ in 0..n {
        let len = x.shape()[ax];
        if len == 0 {
            break;
        }
        let (hi, lo) = (
            slice_along(&x, ax, 1, len - 1),
            slice_along(&x, ax, 0, len - 1),
        );
        x = if x.dtype() == crate::dtype::DType::Bool {
            super::not_equal(&hi, &lo)?
        } else {
            super::subtract(&hi, &lo)?
        };
    }
    Ok(x)
}
