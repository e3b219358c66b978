//! `a.at(indices)`: MLX's `x.at[idx]` functional updates.

use super::scatter::{ScatterMode, UpdatesLayout, scatter_node};
use super::{index_shape, require_indices};
use crate::backend::cpu::strided::broadcasts_to;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;

/// Index arrays for [`Array::at`]: one array, or several (one per leading
/// axis).
///
/// ```
/// use ferrox::{ops::indexing::IndexArrays, Array};
/// let i = Array::from_slice(&[0i32], &[1])?;
/// assert_eq!((&i).into_index_arrays().len(), 1);
/// assert_eq!([&i, &i].into_index_arrays().len(), 2);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait IndexArrays {
    /// The index arrays, the k-th indexing axis k.
    fn into_index_arrays(self) -> Vec<Array>;
}

impl IndexArrays for &Array {
    fn into_index_arrays(self) -> Vec<Array> {
        vec![self.clone()]
    }
}
impl IndexArrays for Array {
    fn into_index_arrays(self) -> Vec<Array> {
        vec![self]
    }
}
impl IndexArrays for Vec<Array> {
    fn into_index_arrays(self) -> Vec<Array> {
        self
    }
}
impl IndexArrays for &[Array] {
    fn into_index_arrays(self) -> Vec<Array> {
        self.to_vec()
    }
}
impl IndexArrays for &[&Array] {
    fn into_index_arrays(self) -> Vec<Array> {
        self.iter().map(|&a| a.clone()).collect()
    }
}
impl<const N: usize> IndexArrays for [&Array; N] {
    fn into_index_arrays(self) -> Vec<Array> {
        self.iter().map(|&a| a.clone()).collect()
    }
}
impl<const N: usize> IndexArrays for &[Array; N] {
    fn into_index_arrays(self) -> Vec<Array> {
        self.to_vec()
    }
}

/// A pending indexed update of an array, made by [`Array::at`]: the Rust
/// form of MLX's `x.at[idx]`.
///
/// Each method returns a new array; the original is unchanged. Unlike
/// `x[idx] += v`, duplicate indices apply every update (`add` accumulates).
///
/// ```
/// use ferrox::{zeros, Array, DType};
/// let a = zeros(&[4], DType::Float32)?;
/// let idx = Array::from_slice(&[1i32, 1, 3], &[3])?;
/// let b = a.at(&idx)?.add(1.0)?;
/// assert_eq!(b.to_vec::<f32>()?, vec![0.0, 2.0, 0.0, 1.0]);
/// assert_eq!(a.to_vec::<f32>()?, vec![0.0; 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ArrayAt {
    array: Array,
    indices: Vec<Array>,
    index_shape: Vec<usize>,
}

impl Array {
    /// Selects entries for a functional update, MLX's `x.at[idx]`.
    ///
    /// `indices` are integer arrays (any integer dtype, negative values
    /// count from the end); the k-th indexes axis k, and together they
    /// broadcast to an index shape `I`, as numpy's `x[i0, i1, ...]`. The
    /// selection has shape `I + shape[k..]`; values given to the update
    /// methods broadcast to it.
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let a = zeros(&[2, 3], DType::Int32)?;
    /// let rows = Array::from_slice(&[1i32], &[1])?;
    /// let cols = Array::from_slice(&[0i32, 2], &[2])?;
    /// let b = a.at([&rows, &cols])?.set(Array::from_slice(&[5i32, 6], &[2])?)?;
    /// assert_eq!(b.to_vec::<i32>()?, vec![0, 0, 0, 5, 0, 6]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn at(&self, indices: impl IndexArrays) -> Result<ArrayAt> {
        let indices = indices.into_index_arrays();
        if indices.len() > self.ndim() {
            return Err(Error::index(
                "at",
                format!(
                    "too many index arrays ({}) for an array with {} dimensions",
                    indices.len(),
                    self.ndim()
                ),
            ));
        }
        for idx in &indices {
            require_indices("at", idx)?;
        }
        let index_shape = index_shape("at", &indices)?;
        Ok(ArrayAt {
            array: self.clone(),
            indices,
            index_shape,
        })
    }
}

impl ArrayAt {
    /// The shape of the selection: `I + shape[k..]`.
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let idx = Array::from_slice(&[0i32, 1, 1], &[3])?;
    /// assert_eq!(zeros(&[2, 5], DType::Int32)?.at(&idx)?.shape(), vec![3, 5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn shape(&self) -> Vec<usize> {
        [
            &self.index_shape[..],
            &self.array.shape()[self.indices.len()..],
        ]
        .concat()
    }

    fn apply(&self, mode: ScatterMode, values: &Array) -> Result<Array> {
        let target = self.shape();
        if !broadcasts_to(values.shape(), &target) {
            return Err(Error::shape(
                mode.name(),
                format!(
                    "values with shape {:?} cannot be broadcast to the selection shape {target:?}",
                    values.shape()
                ),
            ));
        }
        let k = self.indices.len();
        let slice = std::iter::repeat_n(1, k)
            .chain(self.array.shape()[k..].iter().copied())
            .collect();
        scatter_node(
            mode,
            &self.array,
            &self.indices,
            values,
            (0..k).collect(),
            slice,
            UpdatesLayout::Squeezed,
        )
    }

    /// `a[idx] = values` (the last of duplicate indices wins).
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let idx = Array::from_slice(&[-1i32], &[1])?;
    /// let b = zeros(&[3], DType::Int32)?.at(&idx)?.set(7)?;
    /// assert_eq!(b.to_vec::<i32>()?, vec![0, 0, 7]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn set(&self, values: impl Into<Array>) -> Result<Array> {
        self.apply(ScatterMode::Set, &values.into())
    }

    /// `a[idx] += values`, accumulating over duplicate indices.
    ///
    /// ```
    /// use ferrox::{ones, Array, DType};
    /// let idx = Array::from_slice(&[0i32, 0], &[2])?;
    /// let v = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
    /// let b = ones(&[2, 2], DType::Int32)?.at(&idx)?.add(&v)?;
    /// assert_eq!(b.to_vec::<i32>()?, vec![5, 7, 1, 1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn add(&self, values: impl Into<Array>) -> Result<Array> {
        self.apply(ScatterMode::Add, &values.into())
    }

    /// `a[idx] -= values`, accumulating over duplicate indices (integers
    /// wrap; not defined for bool).
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let idx = Array::from_slice(&[1i32, 1], &[2])?;
    /// let b = zeros(&[2], DType::Float32)?.at(&idx)?.subtract(1.5)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![0.0, -3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn subtract(&self, values: impl Into<Array>) -> Result<Array> {
        let dtype = self.array.dtype();
        if dtype == DType::Bool {
            return Err(Error::dtype(
                "subtract",
                "bool arrays do not support subtraction; use a logical op",
            ));
        }
        // Negating in a's dtype (integers wrap) keeps `a - v` exact.
        let negated = crate::ops::unary::negative(&values.into().astype(dtype)?)?;
        self.apply(ScatterMode::Add, &negated)
    }

    /// `a[idx] *= values`, accumulating over duplicate indices.
    ///
    /// ```
    /// use ferrox::{ones, Array, DType};
    /// let idx = Array::from_slice(&[2i32, 2], &[2])?;
    /// let b = ones(&[3], DType::Float32)?.at(&idx)?.multiply(3.0)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![1.0, 1.0, 9.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn multiply(&self, values: impl Into<Array>) -> Result<Array> {
        self.apply(ScatterMode::Prod, &values.into())
    }

    /// `a[idx] = maximum(a[idx], values)` over all duplicates (NaNs
    /// propagate).
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let idx = Array::from_slice(&[0i32, 1], &[2])?;
    /// let v = Array::from_slice(&[-1.0f32, 4.0], &[2])?;
    /// let b = zeros(&[2], DType::Float32)?.at(&idx)?.maximum(&v)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![0.0, 4.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn maximum(&self, values: impl Into<Array>) -> Result<Array> {
        self.apply(ScatterMode::Max, &values.into())
    }

    /// `a[idx] = minimum(a[idx], values)` over all duplicates (NaNs
    /// propagate).
    ///
    /// ```
    /// use ferrox::{zeros, Array, DType};
    /// let idx = Array::from_slice(&[0i32, 1], &[2])?;
    /// let v = Array::from_slice(&[-1.0f32, 4.0], &[2])?;
    /// let b = zeros(&[2], DType::Float32)?.at(&idx)?.minimum(&v)?;
    /// assert_eq!(b.to_vec::<f32>()?, vec![-1.0, 0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn minimum(&self, values: impl Into<Array>) -> Result<Array> {
        self.apply(ScatterMode::Min, &values.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::ops::creation::zeros;

    fn arr(v: &[i32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn at_broadcasts_values_over_the_selection() {
        let a = zeros(&[3, 2, 2], DType::Int32).unwrap();
        let rows = arr(&[2, 0], &[2]);
        // Values [2] broadcast to the selection [2, 2, 2].
        let b = a.at(&rows).unwrap().add(arr(&[1, 2], &[2])).unwrap();
        assert_eq!(
            b.to_vec::<i32>().unwrap(),
            [1, 2, 1, 2, 0, 0, 0, 0, 1, 2, 1, 2]
        );
        // Two index arrays broadcast ([2, 1] with [3] -> [2, 3]): selection [2, 3, 2].
        let r = arr(&[0, 2], &[2, 1]);
        let c = arr(&[1, 0, 1], &[3]);
        let at = a.at([&r, &c]).unwrap();
        assert_eq!(at.shape(), vec![2, 3, 2]);
        let b = at.add(1).unwrap();
        // a[0,1] gets 2 per element (two duplicates), a[0,0] 1, same for row 2.
        assert_eq!(
            b.to_vec::<i32>().unwrap(),
            [1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 2, 2]
        );
    }

    #[test]
    fn at_modes_and_dtypes() {
        let a = Array::from_slice(&[5u8, 5, 5], &[3]).unwrap();
        let i = arr(&[0, 0, 2], &[3]);
        let at = a.at(&i).unwrap();
        assert_eq!(
            at.subtract(6).unwrap().to_vec::<u8>().unwrap(),
            [249, 5, 255]
        );
        assert_eq!(at.multiply(2).unwrap().to_vec::<u8>().unwrap(), [20, 5, 10]);
        assert_eq!(
            at.set(arr(&[1, 2, 3], &[3]))
                .unwrap()
                .to_vec::<u8>()
                .unwrap(),
            [2, 5, 3]
        );
        assert_eq!(
            at.maximum(arr(&[9, 1, 1], &[3]))
                .unwrap()
                .to_vec::<u8>()
                .unwrap(),
            [9, 5, 5]
        );
        assert_eq!(
            at.minimum(arr(&[9, 1, 1], &[3]))
                .unwrap()
                .to_vec::<u8>()
                .unwrap(),
            [1, 5, 1]
        );
        let h = crate::ops::creation::ones(&[2], DType::Float16).unwrap();
        let b = h.at(arr(&[1, 1], &[2])).unwrap().add(0.5).unwrap();
        assert_eq!(b.dtype(), DType::Float16);
        assert_eq!(
            b.astype(DType::Float32).unwrap().to_vec::<f32>().unwrap(),
            [1.0, 2.0]
        );
    }

    #[test]
    fn at_validates() {
        let a = zeros(&[2, 2], DType::Float32).unwrap();
        let i = arr(&[0], &[1]);
        assert_eq!(a.at([&i, &i, &i]).unwrap_err().kind(), ErrorKind::Index);
        assert_eq!(
            a.at(zeros(&[1], DType::Float32).unwrap())
                .unwrap_err()
                .kind(),
            ErrorKind::Dtype
        );
        assert_eq!(
            a.at([&arr(&[0, 1], &[2]), &arr(&[0, 1, 1], &[3])])
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        let at = a.at(&i).unwrap();
        assert_eq!(
            at.add(zeros(&[3], DType::Float32).unwrap())
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        let err = a
            .at(arr(&[2], &[1]))
            .unwrap()
            .add(1.0)
            .unwrap()
            .eval()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "scatter_add: index 2 is out of bounds for axis 0 with size 2"
        );
        let b = Array::from_slice(&[true], &[1]).unwrap();
        assert_eq!(
            b.at(&i).unwrap().subtract(true).unwrap_err().kind(),
            ErrorKind::Dtype
        );
        // No index arrays: the whole array is the selection.
        let all = a.at(Vec::new()).unwrap().add(2.0).unwrap();
        assert_eq!(all.to_vec::<f32>().unwrap(), [2.0; 4]);
    }
}
