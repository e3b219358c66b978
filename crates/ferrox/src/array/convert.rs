//! Reading arrays back: evaluation, the value's buffer, host vectors and
//! scalars, and conversions of plain numbers into (weak) arrays.

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::storage::Pod;

impl Array {
    /// Evaluates this array (see [`crate::eval`]).
    pub fn eval(&self) -> Result<()> {
        crate::runtime::eval::eval(std::slice::from_ref(self))
    }

    /// Evaluates and returns the value's buffer and layout (element
    /// strides and offset into the shared, read-only storage): what a
    /// zero-copy export (numpy, the Python buffer protocol) needs. The
    /// storage stays alive as long as the returned `Data` does.
    ///
    /// ```
    /// let a = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Float32)?.reshape(&[2, 3])?;
    /// let t = a.transpose(None)?;
    /// let d = t.data()?;
    /// assert_eq!(d.strides, vec![1, 3]);
    /// // t[1, 1] is at offset + 1 * 1 + 1 * 3, and equals a[1, 1].
    /// assert_eq!(d.storage.as_slice::<f32>()[d.offset + 1 + 3], 4.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn data(&self) -> Result<Data> {
        if let Some(r) = self.0.cell.get() {
            return r?.into_single();
        }
        self.eval()?;
        self.0.cell.wait()?.into_single()
    }

    /// Evaluates and copies the elements out in row-major order. `T` must be
    /// the array's element type.
    ///
    /// ```
    /// let a = ferrox::arange(0.0, 3.0, 1.0, ferrox::DType::Float32)?;
    /// assert_eq!(a.to_vec::<f32>()?, vec![0.0, 1.0, 2.0]);
    /// assert!(a.to_vec::<i32>().is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn to_vec<T: Element + Pod>(&self) -> Result<Vec<T>> {
        self.check_element::<T>("to_vec")?;
        Ok(self.data()?.to_vec::<T>(self.shape()))
    }

    /// Evaluates a one-element array and returns its value.
    ///
    /// ```
    /// let s = ferrox::sum(&ferrox::ones(&[4], ferrox::DType::Float32)?, None, false)?;
    /// assert_eq!(s.item::<f32>()?, 4.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn item<T: Element + Pod>(&self) -> Result<T> {
        self.check_element::<T>("item")?;
        if self.size() != 1 {
            return Err(Error::value(
                "item",
                format!(
                    "can only convert an array of size 1, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let d = self.data()?;
        Ok(d.raw::<T>()[d.offset])
    }

    fn check_element<T: Element>(&self, op: &str) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "array has dtype {} but {} was requested; use astype first",
                    self.dtype(),
                    T::DTYPE
                ),
            ));
        }
        Ok(())
    }
}

impl From<f64> for Array {
    fn from(v: f64) -> Array {
        Array::weak_f64(v)
    }
}
impl From<f32> for Array {
    fn from(v: f32) -> Array {
        Array::weak_f64(v as f64)
    }
}
impl From<i32> for Array {
    fn from(v: i32) -> Array {
        Array::weak_i64(v as i64)
    }
}
impl From<i64> for Array {
    fn from(v: i64) -> Array {
        Array::weak_i64(v)
    }
}
impl From<bool> for Array {
    fn from(v: bool) -> Array {
        Array::weak_bool(v)
    }
}
impl From<&Array> for Array {
    fn from(a: &Array) -> Array {
        a.clone()
    }
}
