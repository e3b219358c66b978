//! Evaluated data: a shared [`Storage`] seen through strides and an offset.
//!
//! Views (reshape of contiguous data, transpose, slicing, broadcasting) are
//! new [`Data`] values over the same storage: zero-copy by construction.

use super::walk::{walk, zip_strides};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::storage::{Pod, Storage};
use std::sync::Arc;

/// An evaluated array's bytes and how to walk them.
///
/// `strides` and `offset` count elements, not bytes. Broadcast dimensions
/// have stride 0; reversed slices have negative strides.
#[derive(Clone, Debug)]
pub struct Data {
    /// The shared bytes.
    pub storage: Arc<Storage>,
    /// Elements to step per index of each dimension.
    pub strides: Vec<isize>,
    /// Element index of the array's first element in `storage`.
    pub offset: usize,
}

/// Row-major strides of a contiguous array of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1) as isize;
    }
    strides
}

/// True when `strides` walk `shape` in row-major order with no gaps
/// (dimensions of size 1 may have any stride).
pub fn is_row_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected *= d as isize;
    }
    true
}

impl Data {
    /// A fresh contiguous buffer for `numel` elements of `dtype`.
    pub fn alloc(shape: &[usize], dtype: DType) -> Result<Data> {
        let numel: usize = shape.iter().product();
        let storage = Storage::new(numel * dtype.size(), dtype == DType::Bool)?;
        Ok(Data {
            storage: Arc::new(storage),
            strides: row_major_strides(shape),
            offset: 0,
        })
    }

    /// Wraps a freshly filled storage as contiguous data of `shape`.
    pub fn contiguous(storage: Storage, shape: &[usize]) -> Data {
        Data {
            storage: Arc::new(storage),
            strides: row_major_strides(shape),
            offset: 0,
        }
    }

    /// True if the elements are contiguous and in row-major order.
    pub fn is_contiguous(&self, shape: &[usize]) -> bool {
        is_row_contiguous(shape, &self.strides)
    }

    /// The elements as a slice when they are contiguous in row-major order.
    pub fn as_contiguous<T: Pod>(&self, shape: &[usize]) -> Option<&[T]> {
        if !self.is_contiguous(shape) {
            return None;
        }
        let n: usize = shape.iter().product();
        self.storage
            .as_slice::<T>()
            .get(self.offset..self.offset + n)
    }

    /// The whole underlying storage as `T`s; index it with
    /// [`Data::offset`] and strides.
    pub fn raw<T: Pod>(&self) -> &[T] {
        self.storage.as_slice::<T>()
    }

    /// Copies the elements out in row-major order.
    pub fn to_vec<T: Pod>(&self, shape: &[usize]) -> Vec<T> {
        if let Some(s) = self.as_contiguous::<T>(shape) {
            return s.to_vec();
        }
        let raw = self.raw::<T>();
        let mut out = Vec::with_capacity(shape.iter().product());
        for_each_offset(shape, &self.strides, self.offset, |o| out.push(raw[o]));
        out
    }
}

/// Calls `f` with the storage offset of each element of a strided array,
/// in row-major order of `shape` (the one-operand case of [`walk`]).
pub fn for_each_offset(
    shape: &[usize],
    strides: &[isize],
    offset: usize,
    mut f: impl FnMut(usize),
) {
    walk(shape, &zip_strides([strides]), [offset as isize], |[o]| {
        f(o as usize)
    });
}

/// Product of `shape`, or an error naming `op` if it overflows.
///
/// As in numpy, the product of the non-zero dimensions must fit too (with
/// room for 16-byte elements as `isize` byte offsets), even when another
/// dimension is 0: strides are products of dimensions and must not overflow.
pub fn checked_numel(op: &str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize / 16)
        .map(|n| if shape.contains(&0) { 0 } else { n })
        .ok_or_else(|| Error::value(op, format!("shape {shape:?} has too many elements")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_a_transposed_view() {
        // 2x3 row-major seen as its 3x2 transpose.
        let mut seen = vec![];
        for_each_offset(&[3, 2], &[1, 3], 0, |o| seen.push(o));
        assert_eq!(seen, vec![0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn contiguity_ignores_unit_dims() {
        assert!(is_row_contiguous(&[1, 4], &[99, 1]));
        assert!(!is_row_contiguous(&[2, 2], &[1, 2]));
    }
}
