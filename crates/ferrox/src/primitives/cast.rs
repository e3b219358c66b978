//! Dtype conversion: `astype` (value conversion) and `view` (bit reinterpretation).

use super::{OutSpec, Operand, Primitive};
use crate::array::{checked_numel, for_each_offset, row_major_strides, Data};
use crate::backend::cpu::elementwise::{map_slices, out_storage, unary};
use crate::dtype::Element;
use crate::runtime::memory::{Pod, Storage};
use crate::{with_dtype, Array, DType, Error, Result};
use std::sync::Arc;

/// Converts one element between any two dtypes with numpy's semantics:
/// integers wrap, floats to integers truncate (saturating), complex to real
/// keeps the real part, anything to bool is `!= 0`. Same-type conversion
/// is exact on every path.
#[inline(always)]
pub fn convert<T: Element, U: Element>(x: T) -> U {
    if U::DTYPE == DType::Complex64 || T::DTYPE == DType::Complex64 {
        return U::from_c64(x.to_c64());
    }
    if U::DTYPE.is_integer() && (T::DTYPE.is_integer() || T::DTYPE == DType::Bool) {
        return U::from_i128(x.to_i128());
    }
    if U::DTYPE == DType::Float32 && matches!(T::DTYPE, DType::Int64 | DType::UInt64) {
        // Through f64 would round twice (64 -> 53 -> 24 bits); i128 -> f32
        // rounds once, and f32 -> f64 -> f32 is exact.
        return U::from_f64((x.to_i128() as f32) as f64);
    }
    U::from_f64(x.to_f64())
}

/// Converts values to another dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct AsType;

impl Primitive for AsType {
    fn name(&self) -> &'static str {
        "astype"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        with_dtype!(x.dtype, T => with_dtype!(out.dtype, U => cast_kernel::<T, U>(x, out)))
    }
    primitive_common!();
}

fn cast_kernel<T: Element + Pod, U: Element + Pod>(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    unary(x, out, |v: T| convert::<T, U>(v))
}

/// `a` converted to `dtype`. Converting to the same dtype returns `a` itself.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.7f32, -2.5], &[2])?;
/// assert_eq!(ferrox::astype(&a, ferrox::DType::Int32)?.to_vec::<i32>()?, vec![1, -2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn astype(a: &Array, dtype: DType) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    Ok(Array::from_op(a.shape().to_vec(), dtype, AsType, vec![a.clone()]))
}

impl Array {
    /// Method form of [`astype`].
    ///
    /// ```
    /// let a = ferrox::ones(&[2], ferrox::DType::Float32)?.astype(ferrox::DType::Float16)?;
    /// assert_eq!(a.dtype(), ferrox::DType::Float16);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn astype(&self, dtype: DType) -> Result<Array> {
        astype(self, dtype)
    }

    /// Method form of [`view`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(a.view(ferrox::DType::UInt32)?.to_vec::<u32>()?, vec![0x3f80_0000]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn view(&self, dtype: DType) -> Result<Array> {
        view(self, dtype)
    }
}

/// Reinterprets the bytes of its input as another dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The dtype the bytes are read as.
    pub dtype: DType,
}

impl Primitive for View {
    fn name(&self) -> &'static str {
        "view"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [x] = inputs else {
            return Err(Error::runtime("view", format!("expected 1 input, got {}", inputs.len())));
        };
        let (in_size, out_size) = (x.dtype.size(), out.dtype.size());
        if out.dtype == DType::Bool && x.dtype != DType::Bool {
            // A bool must be 0 or 1 (see `Pod for bool`): normalise bytes.
            return view_as_bool(x, out);
        }
        if in_size == out_size {
            // Same element size: the input's layout, whatever it is, holds.
            return Ok(Data { storage: Arc::clone(&x.data.storage), strides: x.data.strides.clone(), offset: x.data.offset });
        }
        let first_byte = x.data.offset * in_size;
        if x.data.is_contiguous(x.shape) && first_byte % out_size == 0 {
            return Ok(Data {
                storage: Arc::clone(&x.data.storage),
                strides: row_major_strides(out.shape),
                offset: first_byte / out_size,
            });
        }
        // Strided, or not aligned for the wider type: copy the bytes first.
        Ok(Data::contiguous(contiguous_copy(x)?, out.shape))
    }
    primitive_common!();
}

/// The elements of `x` in row-major order in a fresh storage.
fn contiguous_copy(x: &Operand<'_>) -> Result<Storage> {
    let n: usize = x.shape.iter().product();
    let mut storage = Storage::new(n * x.dtype.size(), x.dtype == DType::Bool)?;
    with_dtype!(x.dtype, T => {
        let (raw, dst) = (x.data.raw::<T>(), storage.as_mut_slice::<T>());
        let mut k = 0;
        for_each_offset(x.shape, &x.data.strides, x.data.offset, |o| {
            dst[k] = raw[o];
            k += 1;
        });
    });
    Ok(storage)
}

fn view_as_bool(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let n: usize = x.shape.iter().product();
    let bytes = n * x.dtype.size();
    let copied;
    let src: &[u8] = if x.data.is_contiguous(x.shape) {
        let start = x.data.offset * x.dtype.size();
        x.data.storage.as_slice::<u8>().get(start..start + bytes).unwrap_or(&[])
    } else {
        copied = contiguous_copy(x)?;
        copied.as_slice::<u8>()
    };
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<bool>();
    if src.len() != dst.len() {
        return Err(Error::runtime("view", format!("internal error: {} input bytes for {} bools", src.len(), dst.len())));
    }
    map_slices(src, dst, |b: u8| b != 0);
    Ok(Data::contiguous(storage, out.shape))
}

/// The bytes of `a` read as `dtype` (MLX's `view`; numpy's `ndarray.view`).
///
/// With equal element sizes the shape is unchanged; otherwise the last axis
/// scales by the size ratio, and viewing as a wider type needs a last axis
/// whose byte length is a multiple of the new element size. A 0-d array can
/// only be viewed as a type of its own size. Viewing as bool maps each
/// non-zero byte to `true` (a bool must hold 0 or 1). No copy is made when
/// the element sizes match or the input is contiguous; otherwise the bytes
/// are copied into row-major order first.
///
/// ```
/// use ferrox::{view, Array, DType};
/// let a = Array::from_slice(&[1.0f32, -2.0], &[2])?;
/// let bits = view(&a, DType::UInt16)?;
/// assert_eq!(bits.shape(), &[4]);
/// assert_eq!(bits.to_vec::<u16>()?, vec![0, 0x3f80, 0, 0xc000]);
/// assert!(view(&Array::from_slice(&[1u8, 2, 3], &[3])?, DType::Int16).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn view(a: &Array, dtype: DType) -> Result<Array> {
    if a.dtype() == dtype {
        return Ok(a.clone());
    }
    let (from, to) = (a.dtype().size(), dtype.size());
    let mut shape = a.shape().to_vec();
    match shape.last_mut() {
        None if from != to => {
            return Err(Error::shape(
                "view",
                format!(
                    "a 0-d array of {} ({from} bytes) can only be viewed as a type of the same size, not {dtype} ({to} bytes)",
                    a.dtype()
                ),
            ))
        }
        None => {}
        Some(last) if from < to => {
            if (*last * from) % to != 0 {
                return Err(Error::shape(
                    "view",
                    format!(
                        "the last axis of shape {:?} holds {} bytes of {}, not a multiple of the {to}-byte {dtype}",
                        a.shape(),
                        *last * from,
                        a.dtype()
                    ),
                ));
            }
            *last = *last * from / to;
        }
        Some(last) => *last *= from / to,
    }
    checked_numel("view", &shape)?;
    Ok(Array::from_op(shape, dtype, View { dtype }, vec![a.clone()]))
}
