//! Dtype conversion: `astype` (value conversion) and `view` (bit reinterpretation).

use super::{OutSpec, Operand, Primitive};
use crate::array::Data;
use crate::backend::cpu::elementwise::unary;
use crate::dtype::Element;
use crate::runtime::memory::Pod;
use crate::{with_dtype, Array, DType, Result};

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
}
