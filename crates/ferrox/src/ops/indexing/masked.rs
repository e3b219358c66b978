//! [`masked_scatter`]: `a[mask] = values` with a boolean mask.
//!
//! A composite: the k-th selected position (in row-major order) reads entry
//! k of the flattened values through a [`take`] whose indices are a running
//! count of the mask. Shapes stay static (the number of selected positions
//! is data), so it composes with compile, vmap and both differentiation
//! modes through the rules of `take`, `where` and `cumsum`.

use super::take::take;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::cast::astype;
use crate::ops::creation::zeros;
use crate::ops::grad_helpers::reshape_to;
use crate::ops::join::concatenate;
use crate::ops::scan::cumsum;
use crate::ops::select::r#where;
use crate::ops::views::{broadcast_to, reshape};

/// `a` with the positions where `mask` is true set, in row-major order, to
/// the entries of `values` (MLX's `masked_scatter`, what `a[mask] = values`
/// does).
///
/// `mask` is boolean and its shape is a prefix of `a`'s: a mask over the
/// leading `k` axes selects whole trailing slices. `values` is broadcast to
/// `[n, *a.shape[k..]]` when it has fewer than `a.ndim() - k + 1` axes (a
/// scalar fills every selected position); otherwise its first axis counts
/// the slices it provides. Fewer values than selected positions makes
/// evaluation fail with an index error; extra values are ignored.
///
/// ```
/// use ferrox::{masked_scatter, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let mask = Array::from_slice(&[true, false, true], &[3])?;
/// let v = Array::from_slice(&[5.0f32, 6.0], &[2])?;
/// assert_eq!(masked_scatter(&a, &mask, &v)?.to_vec::<f32>()?, vec![5.0, 2.0, 6.0]);
/// let rows = Array::from_slice(&[false, true, true], &[3])?;
/// let m = Array::from_slice(&[0.0f32; 6], &[3, 2])?;
/// let v = Array::from_slice(&[7.0f32, 8.0], &[2])?; // one row, broadcast
/// assert_eq!(masked_scatter(&m, &rows, &v)?.to_vec::<f32>()?, vec![0.0, 0.0, 7.0, 8.0, 7.0, 8.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn masked_scatter(a: &Array, mask: &Array, values: &Array) -> Result<Array> {
    const OP: &str = "masked_scatter";
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(
            OP,
            format!("the mask must be bool, got {}", mask.dtype()),
        ));
    }
    let (shape, k) = (a.shape(), mask.ndim());
    if k > a.ndim() || mask.shape() != &shape[..k] {
        return Err(Error::shape(
            OP,
            format!(
                "the mask's shape {:?} must be the leading axes of the target's shape {:?}",
                mask.shape(),
                shape
            ),
        ));
    }
    let trailing = &shape[k..];
    if values.ndim() > trailing.len() + 1 {
        return Err(Error::shape(
            OP,
            format!(
                "values of shape {:?} have more than the {} axes a selection of the \
                 target's shape {:?} takes",
                values.shape(),
                trailing.len() + 1,
                shape
            ),
        ));
    }
    // Values as [slices, *trailing], flattened.
    let slices = if values.ndim() == trailing.len() + 1 {
        values.shape()[0]
    } else {
        mask.size()
    };
    let lifted: Vec<usize> = std::iter::repeat_n(1, trailing.len() + 1 - values.ndim())
        .chain(values.shape().iter().copied())
        .collect();
    let values = reshape_to(&astype(values, a.dtype())?, &lifted)?;
    let per_slice: Vec<usize> = std::iter::once(slices)
        .chain(trailing.iter().copied())
        .collect();
    let values = broadcast_to(&values, &per_slice).map_err(|_| {
        Error::shape(
            OP,
            format!(
                "values of shape {:?} do not broadcast to the selected slices {:?}",
                lifted, per_slice
            ),
        )
    })?;
    // One leading filler entry, so unselected positions read index 0 and a
    // selected position past the last value is out of bounds (not silently
    // the filler).
    let filler = zeros(&[1], a.dtype())?;
    let flat = concatenate(&[filler, reshape(&values, &[-1])?], 0)?;
    let lifted_mask: Vec<usize> = mask
        .shape()
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, trailing.len()))
        .collect();
    let full_mask = broadcast_to(&reshape_to(mask, &lifted_mask)?, shape)?;
    let count_dtype = if a.size() < i32::MAX as usize {
        DType::Int32
    } else {
        DType::Int64
    };
    let flat_mask = reshape(&full_mask, &[-1])?;
    let position = cumsum(&astype(&flat_mask, count_dtype)?, Some(0), false, true)?;
    let index = r#where(&flat_mask, &position, &zeros(&[], count_dtype)?)?;
    let picked = reshape_to(&take(&flat, &index, None)?, shape)?;
    r#where(&full_mask, &picked, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn f32s(a: &Array) -> Vec<f32> {
        a.to_vec::<f32>().expect("f32 data")
    }

    #[test]
    fn selected_positions_take_values_in_order() -> Result<()> {
        let a = Array::from_slice(&[0.0f32; 6], &[2, 3])?;
        let mask = Array::from_slice(&[true, false, true, false, false, true], &[2, 3])?;
        let v = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
        assert_eq!(
            f32s(&masked_scatter(&a, &mask, &v)?),
            vec![1.0, 0.0, 2.0, 0.0, 0.0, 3.0]
        );
        // A scalar fills; an all-false mask changes nothing; empty is empty.
        let s = Array::scalar(9.0f32);
        assert_eq!(
            f32s(&masked_scatter(&a, &mask, &s)?),
            vec![9.0, 0.0, 9.0, 0.0, 0.0, 9.0]
        );
        let none = Array::from_slice(&[false; 6], &[2, 3])?;
        assert_eq!(f32s(&masked_scatter(&a, &none, &v)?), vec![0.0; 6]);
        let e = zeros(&[0], DType::Float32)?;
        let em = zeros(&[0], DType::Bool)?;
        assert_eq!(masked_scatter(&e, &em, &e)?.shape(), &[0]);
        Ok(())
    }

    #[test]
    fn leading_masks_select_slices() -> Result<()> {
        let a = Array::from_slice(&[0.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], &[2, 3])?;
        let mask = Array::from_slice(&[true, false], &[2])?;
        let v = Array::from_slice(&[2.0f32, 3.0, 4.0], &[3])?;
        assert_eq!(
            f32s(&masked_scatter(&a, &mask, &v)?),
            vec![2.0, 3.0, 4.0, 1.0, 1.0, 1.0]
        );
        let rows = Array::from_slice(&[5.0f32, 6.0, 7.0], &[1, 3])?;
        assert_eq!(
            f32s(&masked_scatter(&a, &mask, &rows)?),
            vec![5.0, 6.0, 7.0, 1.0, 1.0, 1.0]
        );
        Ok(())
    }

    #[test]
    fn bad_masks_and_too_few_values_are_errors() -> Result<()> {
        let a = zeros(&[3], DType::Float32)?;
        let v = zeros(&[2], DType::Float32)?;
        let int_mask = Array::from_slice(&[1i32, 0, 1], &[3])?;
        let e = masked_scatter(&a, &int_mask, &v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Dtype);
        assert!(e.to_string().starts_with("masked_scatter:"), "{e}");
        let wrong = Array::from_slice(&[true, false], &[2])?;
        let e = masked_scatter(&a, &wrong, &v).unwrap_err();
        assert!(
            e.to_string().contains("[2]") && e.to_string().contains("[3]"),
            "{e}"
        );
        let all = Array::from_slice(&[true; 3], &[3])?;
        assert_eq!(
            masked_scatter(&a, &all, &v)?.eval().unwrap_err().kind(),
            ErrorKind::Index
        );
        Ok(())
    }
}
