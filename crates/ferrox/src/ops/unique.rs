//! `unique` with a static output size (MLX's form: the output shape never
//! depends on the values, so the op stays lazy and traceable), composed of
//! a stable argsort, a running group count and scatters.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{less, minimum, not_equal, subtract};
use crate::ops::creation::{arange, full, zeros};
use crate::ops::indexing::{scatter, scatter_add, scatter_min, take};
use crate::ops::join::concatenate;
use crate::ops::select::r#where;
use crate::ops::views::{broadcast_to, reshape, slice};

/// The results of [`unique`], each of length `size` except `inverse`.
#[derive(Debug, Clone)]
pub struct Unique {
    /// The smallest `size` distinct values, ascending, padded with the
    /// fill value.
    pub values: Array,
    /// For each value, the flat index of its first occurrence in the input
    /// (uint32; padding repeats the first entry).
    pub index: Array,
    /// For each input element, the position of its value in `values`
    /// (uint32, the input's shape; dropped values clamp to `size - 1`).
    pub inverse: Array,
    /// How often each value occurs (int32; 0 for padding).
    pub counts: Array,
}

/// The sorted distinct elements of the flattened `a`, exactly `size` of
/// them: truncated to the smallest `size`, or padded with `fill_value`
/// (default: the smallest element; required when `a` is empty and `size >
/// 0`). NaNs are all distinct, each NaN its own value, sorted last. The
/// op's parts are in [`Unique`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i32, 1, 2, 3, 1], &[5])?;
/// let u = ferrox::unique(&a, 4, Some(&ferrox::Array::from(0i32)))?;
/// assert_eq!(u.values.to_vec::<i32>()?, vec![1, 2, 3, 0]);
/// assert_eq!(u.index.to_vec::<u32>()?, vec![1, 0, 3, 1]);
/// assert_eq!(u.inverse.to_vec::<u32>()?, vec![1, 0, 1, 2, 0]);
/// assert_eq!(u.counts.to_vec::<i32>()?, vec![2, 2, 1, 0]);
/// assert_eq!(ferrox::unique(&a, 2, None)?.values.to_vec::<i32>()?, vec![1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn unique(a: &Array, size: usize, fill_value: Option<&Array>) -> Result<Unique> {
    let op = "unique";
    let n = a.size();
    let fill = |default: &Array| -> Result<Array> {
        let f = fill_value.unwrap_or(default);
        if f.size() != 1 {
            return Err(Error::value(
                op,
                format!("fill_value must be a scalar, got shape {:?}", f.shape()),
            ));
        }
        reshape(&f.astype(a.dtype())?, &[])
    };
    if n == 0 {
        let Some(f) = fill_value else {
            if size == 0 {
                return empty_result(a, size, &zeros(&[], a.dtype())?);
            }
            return Err(Error::value(
                op,
                format!("a fill_value is needed to give {size} values from an empty input"),
            ));
        };
        return empty_result(a, size, &fill(f)?);
    }
    let flat = reshape(a, &[n as isize])?;
    let perm = crate::ops::sort::argsort(&flat, Some(0))?;
    let sorted = take(&flat, &perm, Some(0))?;
    // A sorted position starts a group where it differs from the one before.
    let starts = if n > 1 {
        let later = slice(&sorted, &[1], &[n as isize], &[1])?;
        let earlier = slice(&sorted, &[0], &[n as isize - 1], &[1])?;
        concatenate(
            &[full(&[1], 1.0, DType::Bool)?, not_equal(&later, &earlier)?],
            0,
        )?
    } else {
        full(&[1], 1.0, DType::Bool)?
    };
    let group = subtract(
        &crate::ops::scan::cumsum(&starts.astype(DType::Int32)?, Some(0), false, true)?,
        &Array::from(1i32),
    )?;
    // Groups past `size` land in one extra slot that is cut off at the end.
    let slot = minimum(&group, &Array::from(size as i32))?;
    let column = |x: &Array| reshape(x, &[n as isize, 1]);
    let keep = |x: Array| slice(&x, &[0], &[size as isize], &[1]);
    let positions = arange(0.0, n as f64, 1.0, DType::Int32)?;
    let first = keep(scatter_min(
        &full(&[size + 1], n as f64, DType::Int32)?,
        std::slice::from_ref(&slot),
        &column(&positions)?,
        &[0],
    )?)?;
    let present = less(&first, &Array::from(n as i32))?;
    let at = minimum(&first, &Array::from(n as i32 - 1))?;
    let smallest = take(&sorted, &Array::from(0i32), Some(0))?;
    let values = r#where(&present, &take(&sorted, &at, Some(0))?, &fill(&smallest)?)?;
    let first_index = take(&perm, &Array::from(0i32), Some(0))?;
    let index = r#where(&present, &take(&perm, &at, Some(0))?, &first_index)?;
    let counts = keep(scatter_add(
        &zeros(&[size + 1], DType::Int32)?,
        std::slice::from_ref(&slot),
        &column(&full(&[n], 1.0, DType::Int32)?)?,
        &[0],
    )?)?;
    let last = size.saturating_sub(1) as i32;
    let inverse_sorted = minimum(&group, &Array::from(last))?.astype(DType::UInt32)?;
    let inverse = scatter(
        &zeros(&[n], DType::UInt32)?,
        std::slice::from_ref(&perm),
        &column(&inverse_sorted)?,
        &[0],
    )?;
    let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    Ok(Unique {
        values,
        index: index.astype(DType::UInt32)?,
        inverse: reshape(&inverse, &shape)?,
        counts,
    })
}

/// The results for an empty input: `size` copies of `fill`.
fn empty_result(a: &Array, size: usize, fill: &Array) -> Result<Unique> {
    Ok(Unique {
        values: broadcast_to(fill, &[size])?,
        index: zeros(&[size], DType::UInt32)?,
        inverse: zeros(a.shape(), DType::UInt32)?,
        counts: zeros(&[size], DType::Int32)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_padded_and_nan_inputs_follow_mlx() {
        let a = Array::from_slice(&[3i32, 1, 3, 2], &[2, 2]).unwrap();
        let u = unique(&a, 5, Some(&Array::from(-1i32))).unwrap();
        assert_eq!(u.values.to_vec::<i32>().unwrap(), vec![1, 2, 3, -1, -1]);
        assert_eq!(u.index.to_vec::<u32>().unwrap(), vec![1, 3, 0, 1, 1]);
        assert_eq!(u.inverse.shape(), &[2, 2]);
        assert_eq!(u.inverse.to_vec::<u32>().unwrap(), vec![2, 0, 2, 1]);
        assert_eq!(u.counts.to_vec::<i32>().unwrap(), vec![1, 1, 2, 0, 0]);
        let t = unique(&a, 2, None).unwrap();
        assert_eq!(t.values.to_vec::<i32>().unwrap(), vec![1, 2]);
        assert_eq!(t.inverse.to_vec::<u32>().unwrap(), vec![1, 0, 1, 1]);
        let p = unique(&a, 4, None).unwrap();
        assert_eq!(p.values.to_vec::<i32>().unwrap(), vec![1, 2, 3, 1]);
        let f = Array::from_slice(&[1.0f32, f32::NAN, f32::NAN], &[3]).unwrap();
        let nf = unique(&f, 3, None).unwrap();
        assert_eq!(nf.counts.to_vec::<i32>().unwrap(), vec![1, 1, 1]);
        let e = zeros(&[0], DType::Float32).unwrap();
        assert!(unique(&e, 2, None).is_err());
        let ue = unique(&e, 2, Some(&Array::from(7.0f32))).unwrap();
        assert_eq!(ue.values.to_vec::<f32>().unwrap(), vec![7.0, 7.0]);
        assert!(unique(&a, 2, Some(&a)).is_err());
    }
}
