//! Arrays from host data: slices, typed and weakly typed scalars.

use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::graph::array::{Array, mark_weak};
use crate::graph::layout::{Data, checked_numel};
use crate::graph::storage::{Pod, Storage};

impl Array {
    /// An array holding `data` (row-major) with `shape`.
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
    /// assert_eq!(a.shape(), &[2, 2]);
    /// assert!(ferrox::Array::from_slice(&[1i32, 2, 3], &[2, 2]).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_slice<T: Element + Pod>(data: &[T], shape: &[usize]) -> Result<Array> {
        let n = checked_numel("array", shape)?;
        if n != data.len() {
            return Err(Error::shape(
                "array",
                format!(
                    "{} elements do not fill shape {:?} ({} elements)",
                    data.len(),
                    shape,
                    n
                ),
            ));
        }
        let mut storage = Storage::new(std::mem::size_of_val(data), false)?;
        storage.as_mut_slice::<T>().copy_from_slice(data);
        Ok(Array::from_data(
            Data::contiguous(storage, shape),
            shape.to_vec(),
            T::DTYPE,
        ))
    }

    /// An array of `shape` and `dtype` that reads the row-major bytes
    /// `owner` holds in place, without copying: for buffers that belong to
    /// another library or language (the C API lends caller buffers this
    /// way). `owner` is dropped, releasing the bytes, when the last array
    /// or view reading them is dropped, on whichever thread that happens.
    ///
    /// ferrox calls `owner.as_ref()` once and never writes the bytes; the
    /// owner must not change them while it lives (a safe `AsRef` cannot).
    /// Bytes that do not start at a multiple of
    /// [`EXTERNAL_ALIGN`](crate::runtime::memory::EXTERNAL_ALIGN) (8), and
    /// bool data (any non-zero byte is true, stored as 1), are copied
    /// instead, and `owner` is dropped before this returns. External bytes
    /// are not counted as active memory, like a mapped file's.
    ///
    /// ```
    /// use ferrox::{Array, DType};
    /// let bytes: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
    /// let a = Array::from_external(bytes, &[2], DType::Float32)?;
    /// assert_eq!(a.to_vec::<f32>()?, vec![1.5, -2.0]);
    /// assert!(Array::from_external(vec![0u8; 3], &[2], DType::Float32).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_external<B>(owner: B, shape: &[usize], dtype: DType) -> Result<Array>
    where
        B: AsRef<[u8]> + Send + Sync + 'static,
    {
        let n = checked_numel("from_external", shape)?;
        let want = n.checked_mul(dtype.size()).ok_or_else(|| {
            Error::value(
                "from_external",
                format!("shape {shape:?} of {dtype} is too large to address"),
            )
        })?;
        let have = owner.as_ref().len();
        if have != want {
            return Err(Error::shape(
                "from_external",
                format!("{have} bytes do not fill shape {shape:?} of {dtype} ({want} bytes)"),
            ));
        }
        let storage = if dtype == DType::Bool {
            copy_bool(owner.as_ref())?
        } else {
            match Storage::from_external(owner) {
                Ok(s) => s,
                Err(owner) => copy_bytes(owner.as_ref(), want)?,
            }
        };
        // An owner whose `as_ref` changed length between the two calls
        // must not leave a storage shorter than the shape.
        if storage.len() != want {
            return Err(Error::value(
                "from_external",
                format!(
                    "the owner's bytes changed length: {} then {want}",
                    storage.len()
                ),
            ));
        }
        Ok(Array::from_data(
            Data::contiguous(storage, shape),
            shape.to_vec(),
            dtype,
        ))
    }

    /// A 0-d array holding `value`, strongly typed as `T`.
    ///
    /// ```
    /// let a = ferrox::Array::scalar(3u8);
    /// assert_eq!(a.dtype(), ferrox::DType::UInt8);
    /// assert_eq!(a.item::<u8>()?, 3);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn scalar<T: Element + Pod>(value: T) -> Array {
        Self::try_scalar(value, false).unwrap_or_else(|_| Self::unavailable(T::DTYPE))
    }

    /// A weakly typed scalar (MLX's Python scalars): in binary ops it adopts
    /// the other operand's dtype when the categories allow.
    ///
    /// ```
    /// use ferrox::*;
    /// let h = ones(&[2], DType::Float16)?;
    /// assert_eq!(multiply(&h, &Array::weak_f64(2.0))?.dtype(), DType::Float16);
    /// // With a float64 array it keeps its double precision.
    /// let d = ones(&[1], DType::Float64)?;
    /// assert_eq!(multiply(&d, &Array::weak_f64(0.1))?.to_vec::<f64>()?, vec![0.1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn weak_f64(value: f64) -> Array {
        match Self::try_scalar(value as f32, true) {
            Ok(a) => crate::graph::array::mark_weak_exact(a, value),
            Err(_) => Self::unavailable(DType::Float32),
        }
    }
    /// A weakly typed integer scalar (int32 unless combined with an array;
    /// int64 when the value does not fit int32, so that combined with a
    /// float array it keeps its value).
    ///
    /// ```
    /// use ferrox::*;
    /// let a = ones(&[2], DType::UInt8)?;
    /// assert_eq!(add(&a, &Array::weak_i64(1))?.dtype(), DType::UInt8);
    /// let f = ones(&[1], DType::Float32)?;
    /// assert_eq!(add(&f, &Array::weak_i64(3_000_000_000))?.to_vec::<f32>()?, vec![3e9]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn weak_i64(value: i64) -> Array {
        match i32::try_from(value) {
            Ok(v) => Self::try_scalar(v, true),
            Err(_) => Self::try_scalar(value, true),
        }
        .unwrap_or_else(|_| Self::unavailable(DType::Int32))
    }
    /// A weakly typed boolean scalar.
    ///
    /// ```
    /// assert!(ferrox::Array::weak_bool(true).is_weak());
    /// ```
    pub fn weak_bool(value: bool) -> Array {
        Self::try_scalar(value, true).unwrap_or_else(|_| Self::unavailable(DType::Bool))
    }

    fn try_scalar<T: Element + Pod>(value: T, weak: bool) -> Result<Array> {
        let mut storage = Storage::new(size_of::<T>(), T::DTYPE == DType::Bool)?;
        storage.as_mut_slice::<T>()[0] = value;
        let a = Array::from_data(Data::contiguous(storage, &[]), vec![], T::DTYPE);
        Ok(if weak { mark_weak(a) } else { a })
    }
}

/// A pooled copy of `bytes`, which must be `len` long.
fn copy_bytes(bytes: &[u8], len: usize) -> Result<Storage> {
    if bytes.len() != len {
        return Err(Error::value(
            "from_external",
            format!(
                "the owner's bytes changed length: {len} then {}",
                bytes.len()
            ),
        ));
    }
    let mut s = Storage::new(len, false)?;
    s.as_mut_slice::<u8>().copy_from_slice(bytes);
    Ok(s)
}

/// Bool elements from bytes: any non-zero byte is true (stored as 1).
fn copy_bool(bytes: &[u8]) -> Result<Storage> {
    let mut s = Storage::new(bytes.len(), false)?;
    for (d, &b) in s.as_mut_slice::<u8>().iter_mut().zip(bytes) {
        *d = u8::from(b != 0);
    }
    Ok(s)
}
