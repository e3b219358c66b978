//! Reductions composed from other ops (no primitive of their own):
//! [`count_nonzero`], [`trace`], [`median`] and [`minmax`]. Their
//! derivatives and batching come from the ops they are built of.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::shape_rules::normalize_axes;

/// The number of non-zero elements over `axes` (`None`: all), as int32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 1.0, 2.0, 0.0], &[2, 2])?;
/// assert_eq!(ferrox::count_nonzero(&a, None, false)?.item::<i32>()?, 2);
/// assert_eq!(ferrox::count_nonzero(&a, Some(&[0]), true)?.to_vec::<i32>()?, vec![1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn count_nonzero(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let nonzero = crate::ops::binary::not_equal(a, &Array::weak_i64(0))?;
    crate::ops::reduce::sum(&nonzero, axes, keepdims)?.astype(DType::Int32)
}

/// The sum of the diagonal `offset` of the plane (`axis1`, `axis2`), over
/// the remaining axes; `dtype` casts the input first (`None`: the sum's
/// usual dtype).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// assert_eq!(ferrox::trace(&a, 0, 0, 1, None)?.item::<i32>()?, 5);
/// assert_eq!(ferrox::trace(&a, 1, 0, 1, None)?.item::<i32>()?, 2);
/// let f = ferrox::trace(&a, 0, 0, 1, Some(ferrox::DType::Float32))?;
/// assert_eq!(f.dtype(), ferrox::DType::Float32);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn trace(
    a: &Array,
    offset: isize,
    axis1: isize,
    axis2: isize,
    dtype: Option<DType>,
) -> Result<Array> {
    if a.ndim() < 2 {
        return Err(Error::value(
            "trace",
            format!("needs at least 2 dimensions, got shape {:?}", a.shape()),
        ));
    }
    let a = match dtype {
        Some(d) => a.astype(d)?,
        None => a.clone(),
    };
    let d = crate::ops::views::diagonal(&a, offset, axis1, axis2)?;
    let s = crate::ops::reduce::sum(&d, Some(&[-1]), false)?;
    match dtype {
        Some(d) => s.astype(d),
        None => Ok(s),
    }
}

/// The median over `axes` (`None`: all): the middle element of the sorted
/// values, or the mean of the two middle ones for an even count. Integer
/// and bool inputs give float32; float inputs keep their dtype. NaN inputs
/// sort last, as in [`crate::sort`]. Reducing an empty axis is an error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 5, 3, 2, 2, 9], &[2, 3])?;
/// assert_eq!(ferrox::median(&a, Some(&[1]), false)?.to_vec::<f32>()?, vec![3.0, 2.0]);
/// assert_eq!(ferrox::median(&a, None, false)?.item::<f32>()?, 2.5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn median(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let op = "median";
    let axes = normalize_axes(op, axes, a.ndim())?;
    let x = match a.dtype() {
        DType::Complex64 => {
            return Err(Error::dtype(op, "complex64 is not supported".to_string()));
        }
        d if d.is_float() => a.clone(),
        _ => a.astype(DType::Float32)?,
    };
    // Move the reduced axes last and merge them into one.
    let nd = x.ndim();
    let kept: Vec<usize> = (0..nd).filter(|d| !axes.contains(d)).collect();
    let perm: Vec<usize> = kept.iter().chain(&axes).copied().collect();
    let n: usize = axes.iter().map(|&d| x.shape()[d]).product();
    if n == 0 {
        return Err(Error::value(
            op,
            format!(
                "cannot take the median of an empty axis (shape {:?}, axes {axes:?})",
                a.shape()
            ),
        ));
    }
    let mut merged: Vec<isize> = kept.iter().map(|&d| x.shape()[d] as isize).collect();
    merged.push(n as isize);
    let flat =
        crate::ops::views::reshape(&crate::ops::views::transpose(&x, Some(&perm))?, &merged)?;
    let sorted = crate::ops::sort::sort(&flat, Some(-1))?;
    let pick = |i: usize| -> Result<Array> {
        let idx = Array::from(i as i32);
        crate::ops::indexing::take(&sorted, &idx, Some(-1))
    };
    let mid = if n % 2 == 1 {
        pick(n / 2)?
    } else {
        let lo = pick(n / 2 - 1)?;
        let hi = pick(n / 2)?;
        let sum = crate::ops::binary::add(&lo, &hi)?;
        crate::ops::binary::multiply(&sum, &Array::weak_f64(0.5))?
    };
    if !keepdims {
        return Ok(mid);
    }
    let shape: Vec<isize> = (0..nd)
        .map(|d| {
            if axes.contains(&d) {
                1
            } else {
                x.shape()[d] as isize
            }
        })
        .collect();
    crate::ops::views::reshape(&mid, &shape)
}

/// The minimum and the maximum over `axes` (`None`: all), as
/// [`crate::min`] and [`crate::max`] would give them.
///
/// ```
/// let a = ferrox::Array::from_slice(&[3i32, 1, 2], &[3])?;
/// let (lo, hi) = ferrox::minmax(&a, None, false)?;
/// assert_eq!((lo.item::<i32>()?, hi.item::<i32>()?), (1, 3));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn minmax(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<(Array, Array)> {
    Ok((
        crate::ops::reduce::min(a, axes, keepdims)?,
        crate::ops::reduce::max(a, axes, keepdims)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_halves_keeps_the_dtype_and_rejects_empty_axes() {
        let a =
            Array::from_slice(&[half::f16::from_f32(1.0), half::f16::from_f32(3.0)], &[2]).unwrap();
        let m = median(&a, None, false).unwrap();
        assert_eq!(m.dtype(), DType::Float16);
        assert_eq!(m.item::<half::f16>().unwrap().to_f32(), 2.0);
        let e = crate::ops::creation::zeros(&[0], DType::Float32).unwrap();
        assert!(median(&e, None, false).is_err());
        let k = median(
            &Array::from_slice(&[4.0f32, 1.0, 2.0, 8.0], &[2, 2]).unwrap(),
            Some(&[0]),
            true,
        )
        .unwrap();
        assert_eq!(k.shape(), &[1, 2]);
        assert_eq!(k.to_vec::<f32>().unwrap(), vec![3.0, 4.5]);
    }

    #[test]
    fn trace_of_a_batch_sums_each_matrix() {
        let a = crate::ops::creation::arange(0.0, 8.0, 1.0, DType::Int32).unwrap();
        let a = crate::ops::views::reshape(&a, &[2, 2, 2]).unwrap();
        assert_eq!(
            trace(&a, 0, 0, 1, None).unwrap().to_vec::<i32>().unwrap(),
            vec![6, 8]
        );
        assert!(trace(&Array::scalar(1.0f32), 0, 0, 1, None).is_err());
    }
}
