//! The CPU kernel of `searchsorted`: a binary search of each value in one
//! sorted row, in the sorts' element order (`SortKey`: NaN last).

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::sort::SortKey;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::with_dtype;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Which insertion point a value equal to elements of the row gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Side {
    /// Before the equal elements (the count of smaller elements).
    Left,
    /// After them (the count of smaller or equal elements).
    Right,
}

/// For each element of `values` (any shape), its insertion point in the
/// sorted 1-D `sorted`, as uint32 in `values`' row-major order.
pub fn eval(
    sorted: &Operand<'_>,
    values: &Operand<'_>,
    side: Side,
    out: OutSpec<'_>,
) -> Result<Data> {
    if sorted.dtype != values.dtype {
        return Err(Error::runtime(
            "searchsorted",
            format!(
                "sequence is {} but values are {}",
                sorted.dtype, values.dtype
            ),
        ));
    }
    let mut st = out_storage(out)?;
    let dst = st.as_mut_slice::<u32>();
    with_dtype!(sorted.dtype, T => {
        let row = contiguous::<T>(sorted);
        let vals = contiguous::<T>(values);
        search::<T>(&row, &vals, side, dst);
        Ok::<(), Error>(())
    })?;
    Ok(Data::contiguous(st, out.shape))
}

/// The operand's elements in row-major order, borrowed when they already
/// are.
fn contiguous<'a, T: SortKey>(x: &'a Operand<'_>) -> std::borrow::Cow<'a, [T]> {
    match x.data.as_contiguous::<T>(x.shape) {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(x.data.to_vec::<T>(x.shape)),
    }
}

fn search<T: SortKey>(row: &[T], vals: &[T], side: Side, dst: &mut [u32]) {
    let find = |v: &T| -> u32 {
        let at = match side {
            Side::Left => row.partition_point(|x| T::sort_cmp(x, v) == Ordering::Less),
            Side::Right => row.partition_point(|x| T::sort_cmp(x, v) != Ordering::Greater),
        };
        at as u32
    };
    const PAR_MIN: usize = 1 << 14;
    if vals.len() >= PAR_MIN {
        dst.par_iter_mut()
            .zip(vals.par_iter())
            .for_each(|(d, v)| *d = find(v));
    } else {
        dst.iter_mut().zip(vals).for_each(|(d, v)| *d = find(v));
    }
}
