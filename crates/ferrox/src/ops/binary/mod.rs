//! Binary elementwise ops with numpy broadcasting and MLX type promotion.
//!
//! Every op here is one [`Binary`] primitive parameterised by a [`BinaryOp`].
//! The builder ([`build`]) broadcasts the shapes, promotes the dtypes
//! (weak scalars adopt the array's dtype, see [`result_dtype`]), applies the
//! op's dtype rule ([`DtypeRule`]) and casts both inputs to one compute
//! dtype, so a kernel only ever sees two operands of the same element type.
//!
//! The kernels (element functions per dtype family, the half-precision
//! path) are in [`crate::backend::cpu::binary`].
//!
//! Semantics follow numpy where MLX does:
//! - integer `divide` computes in float32 (MLX's `at_least_float`);
//! - `floor_divide`/`remainder` floor towards negative infinity, so the
//!   remainder has the divisor's sign; integer division by zero gives 0;
//!   float `floor_divide` uses numpy's `divmod` algorithm (`1 // 0.1 == 9`);
//! - integer `power` is exact repeated squaring (wrapping on overflow); a
//!   negative integer exponent is a [`crate::ErrorKind::Value`] error when
//!   the kernel runs, as numpy raises (MLX would loop forever);
//! - `maximum`/`minimum` propagate NaN; comparisons with NaN are false
//!   except `not_equal`;
//! - shifts by at least the bit width (or by a negative amount) give 0, or
//!   the sign fill for `right_shift` of a negative value; bool shifts
//!   compute in uint8 (MLX).

pub mod diff;
pub mod divmod;
mod grad;
use super::shape_rules::broadcast_shapes;
use crate::backend::cpu::binary;
// The selector and its kernel family are the kernels' vocabulary; their
// public paths stay here, beside the builders.
pub use crate::backend::cpu::binary::{BinaryOp, DtypeRule};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

// The dtype rules of each op (the selector itself lives with its kernels).
impl BinaryOp {
    /// The dtype the op computes in and the dtype it outputs, given the
    /// promoted dtype of its operands; an error if the op rejects it.
    ///
    /// ```
    /// use ferrox::{DType, ops::binary::BinaryOp};
    /// assert_eq!(BinaryOp::Divide.dtypes(DType::Int32)?, (DType::Float32, DType::Float32));
    /// assert_eq!(BinaryOp::Less.dtypes(DType::Int8)?, (DType::Int8, DType::Bool));
    /// assert!(BinaryOp::Less.dtypes(DType::Complex64).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn dtypes(self, promoted: DType) -> Result<(DType, DType)> {
        let at_least_float = |d: DType| if d.is_inexact() { d } else { DType::Float32 };
        let not_complex = || -> Result<()> {
            if promoted == DType::Complex64 {
                return Err(Error::dtype(
                    self.name(),
                    "complex64 inputs are not supported",
                ));
            }
            Ok(())
        };
        let compute = match self.rule() {
            DtypeRule::Any | DtypeRule::Equality => promoted,
            DtypeRule::AtLeastFloat => at_least_float(promoted),
            DtypeRule::Real | DtypeRule::Ordering => {
                not_complex()?;
                promoted
            }
            DtypeRule::RealAtLeastFloat => {
                not_complex()?;
                at_least_float(promoted)
            }
            DtypeRule::Logical => DType::Bool,
            DtypeRule::Bitwise | DtypeRule::Shift => {
                if !(promoted.is_integer() || promoted == DType::Bool) {
                    return Err(Error::dtype(
                        self.name(),
                        format!("only integer and bool inputs are supported, got {promoted}"),
                    ));
                }
                if promoted == DType::Bool && self.rule() == DtypeRule::Shift {
                    DType::UInt8
                } else {
                    promoted
                }
            }
        };
        let output = match self.rule() {
            DtypeRule::Equality | DtypeRule::Ordering | DtypeRule::Logical => DType::Bool,
            _ => compute,
        };
        Ok((compute, output))
    }
}

/// A binary elementwise primitive; both inputs have the compute dtype of
/// the op (see [`BinaryOp::dtypes`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Binary(pub BinaryOp);

impl crate::graph::export::Exportable for Binary {
    const KIND: &'static str = "binary";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, b] = crate::graph::export::args(inputs, self.0.name())?;
        build(self.0, a, b)
    }
}

impl Primitive for Binary {
    fn is_elementwise(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.0;
        let [a, b] = inputs else {
            return Err(Error::runtime(
                op.name(),
                format!("expected 2 inputs, got {}", inputs.len()),
            ));
        };
        binary::eval(op, a, b, out)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        grad::vjp(self.0, primals, cotangent, output, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        grad::jvp(self.0, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        grad::vmap(self.0, inputs, axes)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        match input_shapes {
            [a, b] => Some(broadcast_shapes(self.0.name(), a, b)),
            _ => None,
        }
    }
    crate::primitive_common!();
}

// ---------------------------------------------------------------------------
// Builders.
// ---------------------------------------------------------------------------

/// The dtype two operands compute in, honouring weak scalars.
///
/// ```
/// use ferrox::{Array, DType, ops::binary::result_dtype};
/// let a = ferrox::ones(&[2], DType::Int8)?;
/// assert_eq!(result_dtype(&a, &Array::from(2.5)), DType::Float32);
/// assert_eq!(result_dtype(&a, &Array::from(2)), DType::Int8);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn result_dtype(a: &Array, b: &Array) -> DType {
    match (a.weak_kind(), b.weak_kind()) {
        (Some(k), None) => DType::promote_weak(b.dtype(), k),
        (None, Some(k)) => DType::promote_weak(a.dtype(), k),
        _ => DType::promote(a.dtype(), b.dtype()),
    }
}

/// [`result_dtype`], after checking that a weak Python-int scalar fits the
/// integer dtype it adopts (`int8_array + 300` is an error, as in numpy 2
/// and MLX, rather than a silent wrap).
///
/// ```
/// use ferrox::{Array, DType, ops::binary::checked_result_dtype};
/// let a = ferrox::ones(&[2], DType::Int8)?;
/// assert_eq!(checked_result_dtype("add", &a, &Array::from(100))?, DType::Int8);
/// assert!(checked_result_dtype("add", &a, &Array::from(300)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn checked_result_dtype(op: &str, a: &Array, b: &Array) -> Result<DType> {
    let dtype = result_dtype(a, b);
    if dtype.is_integer() {
        for w in [a, b] {
            // Only leaf constants: a weak result of two weak scalars is
            // not evaluated here.
            let leaf = w.primitive().is_none();
            if !leaf || w.weak_kind() != Some(crate::dtype::ScalarKind::Int) || w.dtype() == dtype {
                continue;
            }
            let v: i128 = match w.dtype() {
                DType::Int32 => w.item::<i32>()? as i128,
                DType::Int64 => w.item::<i64>()? as i128,
                _ => continue,
            };
            let info = crate::dtype::iinfo(dtype)?;
            if v < info.min || v > info.max {
                return Err(Error::value(
                    op,
                    format!(
                        "converting the Python integer {v} to {dtype} would overflow (range {}..={})",
                        info.min, info.max
                    ),
                ));
            }
        }
    }
    Ok(dtype)
}

/// Promotes and broadcasts `a` and `b`, returning them cast to the common
/// dtype together with the output shape.
///
/// ```
/// use ferrox::{DType, ops::binary::prepare};
/// let a = ferrox::ones(&[3, 1], DType::Int8)?;
/// let b = ferrox::ones(&[4], DType::Float16)?;
/// let (a, b, shape, dtype) = prepare("add", &a, &b)?;
/// assert_eq!((shape, dtype, a.dtype(), b.dtype()), (vec![3, 4], DType::Float16, dtype, dtype));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn prepare(op: &str, a: &Array, b: &Array) -> Result<(Array, Array, Vec<usize>, DType)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = checked_result_dtype(op, a, b)?;
    Ok((a.astype(dtype)?, b.astype(dtype)?, shape, dtype))
}

/// Builds the node for `op(a, b)`: broadcasts, promotes, checks the op's
/// dtype rule and casts both inputs to the compute dtype. Two weak scalars
/// give a weak scalar.
///
/// ```
/// use ferrox::{Array, ops::binary::{build, BinaryOp}};
/// let a = Array::from_slice(&[1i32, 5], &[2])?;
/// let m = build(BinaryOp::Maximum, &a, &Array::from(3))?;
/// assert_eq!(m.to_vec::<i32>()?, vec![3, 5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn build(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let promoted = checked_result_dtype(op.name(), a, b)?;
    let (compute, output) = op.dtypes(promoted).map_err(|e| {
        Error::dtype(
            op.name(),
            format!("{} (inputs {} and {})", e.message(), a.dtype(), b.dtype()),
        )
    })?;
    let inputs = vec![a.astype(compute)?, b.astype(compute)?];
    let out = Array::from_op(shape, output, Binary(op), inputs);
    if a.is_weak() && b.is_weak() {
        return Ok(crate::graph::array::mark_weak(out));
    }
    Ok(out)
}

/// Checks that `dtype` is one of the categories an op accepts.
///
/// ```
/// use ferrox::{DType, ops::binary::require};
/// assert!(require("sqrt", DType::Int8, DType::Int8.is_inexact(), "a float dtype").is_err());
/// ```
pub fn require(op: &str, dtype: DType, ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::dtype(op, format!("expected {what}, got {dtype}")))
    }
}

/// Elementwise `a + b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::add(&a, &a)?.to_vec::<i32>()?, vec![2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Add, a, b)
}

/// Elementwise `a - b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::subtract(&a, &a)?.to_vec::<i32>()?, vec![0, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn subtract(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Subtract, a, b)
}

/// Elementwise `a * b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.5f32, 2.0], &[2])?;
/// assert_eq!(ferrox::multiply(&a, &a)?.to_vec::<f32>()?, vec![2.25, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn multiply(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Multiply, a, b)
}

/// Elementwise true division; bool and integer inputs give float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
/// assert_eq!(ferrox::divide(&a, &ferrox::Array::from(2))?.to_vec::<f32>()?, vec![0.5, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn divide(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Divide, a, b)
}

/// Elementwise division rounded towards negative infinity (Python's `//`).
/// Integers keep their dtype and give 0 when dividing by zero. Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[7i32, -7, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[2i32, 2, 0], &[3])?;
/// assert_eq!(ferrox::floor_divide(&a, &b)?.to_vec::<i32>()?, vec![3, -4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn floor_divide(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::FloorDivide, a, b)
}

/// Elementwise remainder with the sign of the divisor (Python's `%`).
/// Integer remainders by zero are 0; complex inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[7i32, -7, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[3i32, 3, -3], &[3])?;
/// assert_eq!(ferrox::remainder(&a, &b)?.to_vec::<i32>()?, vec![1, 2, -2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn remainder(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Remainder, a, b)
}

/// Elementwise `a ** b` in the promoted dtype. Integer powers are exact
/// (wrapping on overflow); a negative exponent with an integer dtype makes
/// evaluation fail with a value error, as numpy raises. A float base with
/// a one-element exponent that is an integer from -2 to 4 is computed as
/// products (`x * x * x`, `(1 / x) * (1 / x)`), as XLA and torch do: within
/// 2 ulp of the true power, correctly rounded for 2 and -1. Other float
/// powers are the C library's `pow`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i32, 3], &[2])?;
/// assert_eq!(ferrox::power(&a, &ferrox::Array::from(3))?.to_vec::<i32>()?, vec![8, 27]);
/// let neg = ferrox::power(&a, &ferrox::Array::from(-1))?;
/// assert!(neg.eval().is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn power(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Power, a, b)
}

/// Elementwise maximum; NaN if either input is NaN. Complex inputs are a
/// dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN, 5.0], &[3])?;
/// let m = ferrox::maximum(&a, &ferrox::Array::from(2.0))?.to_vec::<f32>()?;
/// assert_eq!((m[0], m[1].is_nan(), m[2]), (2.0, true, 5.0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn maximum(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Maximum, a, b)
}

/// Elementwise minimum; NaN if either input is NaN. Complex inputs are a
/// dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 5], &[2])?;
/// assert_eq!(ferrox::minimum(&a, &ferrox::Array::from(2))?.to_vec::<i32>()?, vec![1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn minimum(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Minimum, a, b)
}

/// Elementwise `atan2(a, b)`: the angle of the point `(b, a)`, in
/// `[-pi, pi]`. Bool and integer inputs give float32; complex inputs are a
/// dtype error.
///
/// ```
/// let y = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// let x = ferrox::Array::from_slice(&[-1.0f32], &[1])?;
/// let t = ferrox::arctan2(&y, &x)?.to_vec::<f32>()?;
/// assert!((t[0] - 3.0 * std::f32::consts::FRAC_PI_4).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arctan2(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::ArcTan2, a, b)
}

/// Elementwise `log(exp(a) + exp(b))`, computed without overflow. Bool and
/// integer inputs give float32; complex inputs compute
/// `m + log(1 + exp(other - m))` with `m` the operand of larger real part.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1000.0f32, 0.0], &[2])?;
/// let l = ferrox::logaddexp(&a, &a)?.to_vec::<f32>()?;
/// assert!((l[0] - (1000.0 + std::f32::consts::LN_2)).abs() < 1e-3);
/// assert!((l[1] - std::f32::consts::LN_2).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logaddexp(a: &Array, b: &Array) -> Result<Array> {
    if a.dtype() == DType::Complex64 || b.dtype() == DType::Complex64 {
        use crate::ops::unary::{exp, log, real};
        let composed = || -> Result<Array> {
            let (a, b) = (a.astype(DType::Complex64)?, b.astype(DType::Complex64)?);
            let a_larger = greater_equal(&real(&a)?, &real(&b)?)?;
            let m = crate::ops::select::r#where(&a_larger, &a, &b)?;
            let other = crate::ops::select::r#where(&a_larger, &b, &a)?;
            let rest = log(&add(&exp(&subtract(&other, &m)?)?, &Array::from(1.0))?)?;
            add(&m, &rest)
        };
        // Errors name this op, not the ones it is composed of.
        return composed().map_err(|e| Error::new(e.kind(), "logaddexp", e.message()));
    }
    build(BinaryOp::LogAddExp, a, b)
}

/// Elementwise `a == b` (bool output; NaN is unequal to everything).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN], &[2])?;
/// assert_eq!(ferrox::equal(&a, &a)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Equal, a, b)
}

/// Elementwise `a != b` (bool output; true where either is NaN).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::NAN], &[2])?;
/// assert_eq!(ferrox::not_equal(&a, &a)?.to_vec::<bool>()?, vec![false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn not_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::NotEqual, a, b)
}

/// Elementwise `a < b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::less(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![true, false, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn less(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Less, a, b)
}

/// Elementwise `a <= b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::less_equal(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![true, true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn less_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LessEqual, a, b)
}

/// Elementwise `a > b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::greater(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![false, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn greater(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::Greater, a, b)
}

/// Elementwise `a >= b` (bool output; false where either is NaN). Complex
/// inputs are a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3], &[3])?;
/// assert_eq!(ferrox::greater_equal(&a, &ferrox::Array::from(2))?.to_vec::<bool>()?, vec![false, true, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn greater_equal(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::GreaterEqual, a, b)
}

/// Elementwise logical and; inputs of any dtype are cast to bool first
/// (non-zero is true).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 2.0, 3.0], &[3])?;
/// let b = ferrox::Array::from_slice(&[true, false, true], &[3])?;
/// assert_eq!(ferrox::logical_and(&a, &b)?.to_vec::<bool>()?, vec![false, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_and(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LogicalAnd, a, b)
}

/// Elementwise logical or; inputs of any dtype are cast to bool first
/// (non-zero is true).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0i32, 0, 7], &[3])?;
/// let b = ferrox::Array::from_slice(&[true, false, false], &[3])?;
/// assert_eq!(ferrox::logical_or(&a, &b)?.to_vec::<bool>()?, vec![true, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_or(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LogicalOr, a, b)
}

/// Elementwise logical exclusive or; inputs of any dtype are cast to bool
/// first (non-zero is true).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 0, 0], &[3])?;
/// let b = ferrox::Array::from_slice(&[1.0f32, 1.0, 0.0], &[3])?;
/// assert_eq!(ferrox::logical_xor(&a, &b)?.to_vec::<bool>()?, vec![false, true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_xor(a: &Array, b: &Array) -> Result<Array> {
    let bool_of = |x: &Array| x.astype(crate::dtype::DType::Bool);
    not_equal(&bool_of(a)?, &bool_of(b)?)
}

/// Elementwise bitwise and of integers or bools; other dtypes are a dtype
/// error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_and(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b0100, 0b0010]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_and(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseAnd, a, b)
}

/// Elementwise bitwise or of integers or bools; other dtypes are a dtype
/// error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_or(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b1110, 0b1110]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_or(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseOr, a, b)
}

/// Elementwise bitwise exclusive or of integers or bools; other dtypes are
/// a dtype error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0b1100u8, 0b1010], &[2])?;
/// assert_eq!(ferrox::bitwise_xor(&a, &ferrox::Array::from(0b0110))?.to_vec::<u8>()?, vec![0b1010, 0b1100]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_xor(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::BitwiseXor, a, b)
}

/// Elementwise `a << b` of integers (bools compute in uint8). Shifting by
/// the bit width or more, or by a negative amount, gives 0.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i8, 1, 1], &[3])?;
/// let b = ferrox::Array::from_slice(&[3i8, 8, -1], &[3])?;
/// assert_eq!(ferrox::left_shift(&a, &b)?.to_vec::<i8>()?, vec![8, 0, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn left_shift(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::LeftShift, a, b)
}

/// Elementwise `a >> b` of integers, arithmetic for signed dtypes (bools
/// compute in uint8). Shifting by the bit width or more, or by a negative
/// amount, gives 0, or -1 for negative signed values.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-16i32, -16, 16], &[3])?;
/// let b = ferrox::Array::from_slice(&[2i32, 40, 40], &[3])?;
/// assert_eq!(ferrox::right_shift(&a, &b)?.to_vec::<i32>()?, vec![-4, -1, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn right_shift(a: &Array, b: &Array) -> Result<Array> {
    build(BinaryOp::RightShift, a, b)
}

// ---------------------------------------------------------------------------
// Operators and methods.
// ---------------------------------------------------------------------------

macro_rules! operator {
    ($tr:ident, $m:ident, $f:ident) => {
        impl<R: Into<Array>> std::ops::$tr<R> for &Array {
            type Output = Result<Array>;
            fn $m(self, rhs: R) -> Result<Array> {
                $f(self, &rhs.into())
            }
        }
        impl<R: Into<Array>> std::ops::$tr<R> for Array {
            type Output = Result<Array>;
            fn $m(self, rhs: R) -> Result<Array> {
                $f(&self, &rhs.into())
            }
        }
    };
}
operator!(Add, add, add);
operator!(Sub, sub, subtract);
operator!(Mul, mul, multiply);
operator!(Div, div, divide);
operator!(Rem, rem, remainder);
operator!(BitAnd, bitand, bitwise_and);
operator!(BitOr, bitor, bitwise_or);
operator!(BitXor, bitxor, bitwise_xor);
operator!(Shl, shl, left_shift);
operator!(Shr, shr, right_shift);

/// Defines `Array::$name(&self, other: impl Into<Array>)` forwarding to the
/// free function of the same name.
macro_rules! method {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub fn $name(&self, other: impl Into<Array>) -> Result<Array> {
            $name(self, &other.into())
        }
    };
}

impl Array {
    method!(
        /// Method form of [`floor_divide`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-7i32], &[1])?;
        /// assert_eq!(a.floor_divide(2)?.to_vec::<i32>()?, vec![-4]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        floor_divide
    );
    method!(
        /// Method form of [`remainder`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-7i32], &[1])?;
        /// assert_eq!(a.remainder(2)?.to_vec::<i32>()?, vec![1]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        remainder
    );
    method!(
        /// Method form of [`power`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[3.0f32], &[1])?;
        /// assert_eq!(a.power(2.0)?.to_vec::<f32>()?, vec![9.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        power
    );
    method!(
        /// Method form of [`maximum`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
        /// assert_eq!(a.maximum(0.0)?.to_vec::<f32>()?, vec![0.0, 2.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        maximum
    );
    method!(
        /// Method form of [`minimum`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
        /// assert_eq!(a.minimum(0.0)?.to_vec::<f32>()?, vec![-1.0, 0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        minimum
    );
    method!(
        /// Method form of [`arctan2`] (`self` is the y coordinate).
        ///
        /// ```
        /// let y = ferrox::Array::from_slice(&[0.0f32], &[1])?;
        /// assert_eq!(y.arctan2(1.0)?.to_vec::<f32>()?, vec![0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        arctan2
    );
    method!(
        /// Method form of [`logaddexp`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[f32::NEG_INFINITY], &[1])?;
        /// assert_eq!(a.logaddexp(0.0)?.to_vec::<f32>()?, vec![0.0]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logaddexp
    );
    method!(
        /// Method form of [`equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.equal(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        equal
    );
    method!(
        /// Method form of [`not_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.not_equal(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        not_equal
    );
    method!(
        /// Method form of [`less`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.less(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        less
    );
    method!(
        /// Method form of [`less_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
        /// assert_eq!(a.less_equal(2)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        less_equal
    );
    method!(
        /// Method form of [`greater`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
        /// assert_eq!(a.greater(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        greater
    );
    method!(
        /// Method form of [`greater_equal`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
        /// assert_eq!(a.greater_equal(2)?.to_vec::<bool>()?, vec![false, true]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        greater_equal
    );
    method!(
        /// Method form of [`logical_and`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[true, false], &[2])?;
        /// assert_eq!(a.logical_and(true)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logical_and
    );
    method!(
        /// Method form of [`logical_or`].
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[true, false], &[2])?;
        /// assert_eq!(a.logical_or(false)?.to_vec::<bool>()?, vec![true, false]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        logical_or
    );
    method!(
        /// Method form of [`bitwise_and`] (also the `&` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_and(3)?.to_vec::<u8>()?, vec![2]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_and
    );
    method!(
        /// Method form of [`bitwise_or`] (also the `|` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_or(3)?.to_vec::<u8>()?, vec![7]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_or
    );
    method!(
        /// Method form of [`bitwise_xor`] (also the `^` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[6u8], &[1])?;
        /// assert_eq!(a.bitwise_xor(3)?.to_vec::<u8>()?, vec![5]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        bitwise_xor
    );
    method!(
        /// Method form of [`left_shift`] (also the `<<` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[3u8], &[1])?;
        /// assert_eq!(a.left_shift(2)?.to_vec::<u8>()?, vec![12]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        left_shift
    );
    method!(
        /// Method form of [`right_shift`] (also the `>>` operator).
        ///
        /// ```
        /// let a = ferrox::Array::from_slice(&[12u8], &[1])?;
        /// assert_eq!(a.right_shift(2)?.to_vec::<u8>()?, vec![3]);
        /// # Ok::<(), ferrox::Error>(())
        /// ```
        right_shift
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::binary::*;
    use crate::backend::cpu::half::HalfBlock;
    use crate::dtype::Complex64;
    use crate::dtype::Element;
    use crate::error::ErrorKind;
    use crate::graph::storage::Pod;
    use crate::graph::stream::Stream;
    use half::{bf16, f16};
    use proptest::prelude::*;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    // ----- promotion ---------------------------------------------------------

    #[test]
    fn weak_scalars_adopt_the_array_dtype() {
        let h = arr(&[half::f16::from_f32(1.5)], &[1]);
        assert_eq!((&h * 2.0).unwrap().dtype(), DType::Float16);
        let i8s = arr(&[1i8], &[1]);
        let r = (&i8s + 2.5).unwrap();
        assert_eq!(r.dtype(), DType::Float32);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![3.5]);
        let u = arr(&[255u8], &[1]);
        let r = (&u + 1).unwrap();
        assert_eq!(r.dtype(), DType::UInt8);
        assert_eq!(r.to_vec::<u8>().unwrap(), vec![0]);
        // A Python int the dtype cannot hold is an error, not a wrap.
        assert!(less(&u, &Array::from(300)).is_err());
        assert_eq!(less(&u, &Array::from(200)).unwrap().dtype(), DType::Bool);
    }

    #[test]
    fn two_weak_scalars_give_a_weak_scalar() {
        let s = add(&Array::from(1), &Array::from(2)).unwrap();
        assert!(s.is_weak());
        let h = arr(&[half::f16::ONE], &[1]);
        assert_eq!(multiply(&h, &s).unwrap().dtype(), DType::Float16);
        assert!(!add(&h, &Array::from(1.0)).unwrap().is_weak());
    }

    #[test]
    fn output_dtypes_follow_the_rules() {
        use DType::*;
        let cases = [
            (BinaryOp::Divide, Int8, Float32),
            (BinaryOp::Divide, Float16, Float16),
            (BinaryOp::ArcTan2, Bool, Float32),
            (BinaryOp::LogAddExp, UInt64, Float32),
            (BinaryOp::FloorDivide, Int16, Int16),
            (BinaryOp::Equal, Complex64, Bool),
            (BinaryOp::LogicalOr, Float32, Bool),
            (BinaryOp::LeftShift, Bool, UInt8),
            (BinaryOp::BitwiseXor, Bool, Bool),
            (BinaryOp::Power, Complex64, Complex64),
        ];
        for (op, dtype, want) in cases {
            let a = crate::ops::creation::zeros(&[2], dtype).unwrap();
            assert_eq!(
                build(op, &a, &a).unwrap().dtype(),
                want,
                "{op:?} on {dtype}"
            );
        }
    }

    #[test]
    fn unsupported_dtypes_are_dtype_errors_naming_the_op() {
        use DType::*;
        let rejected = [
            (BinaryOp::Remainder, Complex64),
            (BinaryOp::FloorDivide, Complex64),
            (BinaryOp::Maximum, Complex64),
            (BinaryOp::Less, Complex64),
            (BinaryOp::GreaterEqual, Complex64),
            (BinaryOp::ArcTan2, Complex64),
            (BinaryOp::LogAddExp, Complex64),
            (BinaryOp::BitwiseAnd, Float32),
            (BinaryOp::BitwiseOr, Float16),
            (BinaryOp::BitwiseXor, Complex64),
            (BinaryOp::LeftShift, Float64),
            (BinaryOp::RightShift, BFloat16),
        ];
        for (op, dtype) in rejected {
            let a = crate::ops::creation::zeros(&[2], dtype).unwrap();
            let e = build(op, &a, &a).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Dtype, "{op:?} {dtype}");
            assert_eq!(e.op(), op.name());
            assert!(e.message().contains(dtype.name()), "{e}");
        }
        // Every dtype is accepted by the ops that take every dtype.
        for dtype in DType::ALL {
            let a = crate::ops::creation::zeros(&[2], dtype).unwrap();
            for op in [
                BinaryOp::Add,
                BinaryOp::Multiply,
                BinaryOp::Divide,
                BinaryOp::Power,
                BinaryOp::Equal,
            ] {
                build(op, &a, &a).unwrap().eval().unwrap();
            }
        }
    }

    #[test]
    fn mismatched_shapes_are_shape_errors() {
        let a = crate::ops::creation::zeros(&[3], DType::Float32).unwrap();
        let b = crate::ops::creation::zeros(&[4], DType::Float32).unwrap();
        for op in BinaryOp::ALL {
            let e = build(op, &a, &b).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Shape);
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: shapes [3] and [4] cannot be broadcast together",
                    op.name()
                )
            );
        }
    }

    #[test]
    fn every_op_on_every_accepted_dtype_evaluates() {
        for op in BinaryOp::ALL {
            for dtype in DType::ALL {
                let a = crate::ops::creation::ones(&[2, 3], dtype).unwrap();
                let b = crate::ops::creation::ones(&[3], dtype).unwrap();
                if let Ok(r) = build(op, &a, &b) {
                    assert_eq!(r.shape(), &[2, 3]);
                    r.eval().unwrap_or_else(|e| panic!("{op:?} {dtype}: {e}"));
                }
            }
        }
    }

    // ----- integer semantics -----------------------------------------------

    #[test]
    fn integer_division_by_zero_gives_zero() {
        let a = arr(&[7i32, -7, 0, i32::MIN], &[4]);
        let z = arr(&[0i32; 4], &[4]);
        assert_eq!(
            floor_divide(&a, &z).unwrap().to_vec::<i32>().unwrap(),
            vec![0; 4]
        );
        assert_eq!(
            remainder(&a, &z).unwrap().to_vec::<i32>().unwrap(),
            vec![0; 4]
        );
        let u = arr(&[7u8, 0], &[2]);
        let uz = arr(&[0u8, 0], &[2]);
        assert_eq!(
            floor_divide(&u, &uz).unwrap().to_vec::<u8>().unwrap(),
            vec![0, 0]
        );
        assert_eq!(
            remainder(&u, &uz).unwrap().to_vec::<u8>().unwrap(),
            vec![0, 0]
        );
    }

    #[test]
    fn floor_division_and_remainder_follow_python() {
        for a in -9i32..=9 {
            for b in [-4i32, -3, -1, 1, 2, 5] {
                let (q, r) = (i32::floor_div(a, b), i32::rem(a, b));
                let (fq, fr) = (
                    (a as f64 / b as f64).floor() as i32,
                    a - b * ((a as f64 / b as f64).floor() as i32),
                );
                assert_eq!((q, r), (fq, fr), "{a} // {b}");
                assert!(r == 0 || (r < 0) == (b < 0));
            }
        }
        // MIN // -1 wraps like numpy; the remainder is 0.
        assert_eq!(i8::floor_div(i8::MIN, -1), i8::MIN);
        assert_eq!(i8::rem(i8::MIN, -1), 0);
    }

    #[test]
    fn float_floor_division_and_remainder_follow_numpy() {
        assert_eq!(f64::floor_div(1.0, 0.1), 9.0);
        assert!((f64::rem(1.0, 0.1) - 0.09999999999999995).abs() < 1e-17);
        assert_eq!(f32::floor_div(-7.0, 2.0), -4.0);
        assert_eq!(f32::rem(-7.0, 2.0), 1.0);
        assert_eq!(f32::rem(7.0, -2.0), -1.0);
        // Zero remainders take the divisor's sign.
        assert!(f32::rem(4.0, -2.0).is_sign_negative());
        assert!(f32::rem(-4.0, 2.0).is_sign_positive());
        // Division by zero: inf/nan like true division; remainder is nan.
        assert_eq!(f32::floor_div(1.0, 0.0), f32::INFINITY);
        assert!(f32::floor_div(0.0, 0.0).is_nan());
        assert!(f32::rem(1.0, 0.0).is_nan());
        assert_eq!(f64::rem(-1.0, f64::INFINITY), f64::INFINITY);
        assert!(f64::floor_div(f64::NAN, 2.0).is_nan());
        let h = half::f16::from_f32;
        assert_eq!(<f16 as Real>::rem(h(-7.0), h(2.0)), h(1.0));
    }

    #[test]
    fn integer_powers_are_exact_and_wrap() {
        let a = arr(&[2i64, -3, 0, 7], &[4]);
        let b = arr(&[10i64, 3, 0, 0], &[4]);
        assert_eq!(
            power(&a, &b).unwrap().to_vec::<i64>().unwrap(),
            vec![1024, -27, 1, 1]
        );
        assert_eq!(<i8 as Arith>::pow(3, 5), 3i8.wrapping_pow(5));
        assert_eq!(<u64 as Arith>::pow(3, 40), 3u64.wrapping_pow(40));
        assert_eq!(<i32 as Arith>::pow(-1, i32::MAX), -1);
        let bools = arr(&[false, false, true, true], &[4]);
        let exps = arr(&[false, true, false, true], &[4]);
        assert_eq!(
            power(&bools, &exps).unwrap().to_vec::<bool>().unwrap(),
            vec![true, false, true, true]
        );
    }

    #[test]
    fn negative_integer_exponents_fail_at_eval() {
        let a = arr(&[2i32, 3], &[2]);
        let b = arr(&[1i32, -2], &[2]);
        let e = power(&a, &b).unwrap().eval().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value);
        assert_eq!(
            e.to_string(),
            "power: integers to negative integer powers are not allowed (exponent -2)"
        );
        // Unsigned and float exponents are fine.
        let f = power(&a, &Array::from(-1.0)).unwrap();
        assert_eq!(f.to_vec::<f32>().unwrap(), vec![0.5, 1.0 / 3.0]);
    }

    #[test]
    fn shifts_never_overflow() {
        let a = arr(&[1i8, 1, -128, -5, 5, 64], &[6]);
        let b = arr(&[7i8, 8, 1, 100, -1, 1], &[6]);
        assert_eq!(
            left_shift(&a, &b).unwrap().to_vec::<i8>().unwrap(),
            vec![-128, 0, 0, 0, 0, -128]
        );
        assert_eq!(
            right_shift(&a, &b).unwrap().to_vec::<i8>().unwrap(),
            vec![0, 0, -64, -1, 0, 32]
        );
        let u = arr(&[0x80u64, 1], &[2]);
        let s = arr(&[63u64, 64], &[2]);
        assert_eq!(
            left_shift(&u, &s).unwrap().to_vec::<u64>().unwrap(),
            vec![0, 0]
        );
        assert_eq!(
            right_shift(&u, &s).unwrap().to_vec::<u64>().unwrap(),
            vec![0, 0]
        );
        let t = arr(&[true], &[1]);
        let r = left_shift(&t, &t).unwrap();
        assert_eq!(
            (r.dtype(), r.to_vec::<u8>().unwrap()),
            (DType::UInt8, vec![2])
        );
    }

    #[test]
    fn bitwise_ops_on_bool_and_ints() {
        let a = arr(&[true, true, false], &[3]);
        let b = arr(&[true, false, false], &[3]);
        assert_eq!(
            (&a & &b).unwrap().to_vec::<bool>().unwrap(),
            vec![true, false, false]
        );
        assert_eq!(
            (&a | &b).unwrap().to_vec::<bool>().unwrap(),
            vec![true, true, false]
        );
        assert_eq!(
            (&a ^ &b).unwrap().to_vec::<bool>().unwrap(),
            vec![false, true, false]
        );
        let i = arr(&[-1i16, 0x0f0f], &[2]);
        assert_eq!(
            (&i & 0xff).unwrap().to_vec::<i16>().unwrap(),
            vec![0xff, 0x0f]
        );
        assert_eq!(
            (i.clone() ^ -1).unwrap().to_vec::<i16>().unwrap(),
            vec![0, !0x0f0f]
        );
        assert_eq!(
            (&i << 4).unwrap().to_vec::<i16>().unwrap(),
            vec![-16, 0x0f0f << 4]
        );
        assert_eq!((&i >> 4).unwrap().to_vec::<i16>().unwrap(), vec![-1, 0xf0]);
        assert_eq!(
            (&i % 7).unwrap().to_vec::<i16>().unwrap(),
            vec![6, 0x0f0f % 7]
        );
    }

    // ----- floats --------------------------------------------------------------

    #[test]
    fn nan_propagates_through_maximum_and_minimum() {
        let nan = f32::NAN;
        let a = arr(&[nan, 1.0, 2.0, nan], &[4]);
        let b = arr(&[1.0, nan, 1.0, nan], &[4]);
        let mx = maximum(&a, &b).unwrap().to_vec::<f32>().unwrap();
        let mn = minimum(&a, &b).unwrap().to_vec::<f32>().unwrap();
        assert!(mx[0].is_nan() && mx[1].is_nan() && mx[3].is_nan() && mx[2] == 2.0);
        assert!(mn[0].is_nan() && mn[1].is_nan() && mn[3].is_nan() && mn[2] == 1.0);
        let h = half::bf16::from_f32;
        assert!(<bf16 as Real>::max(h(1.0), half::bf16::NAN).is_nan());
        assert!(<bf16 as Real>::min(half::bf16::NAN, h(1.0)).is_nan());
    }

    #[test]
    fn comparisons_with_nan_are_false_except_not_equal() {
        let a = arr(&[f64::NAN], &[1]);
        for op in [
            BinaryOp::Equal,
            BinaryOp::Less,
            BinaryOp::LessEqual,
            BinaryOp::Greater,
            BinaryOp::GreaterEqual,
        ] {
            assert_eq!(
                build(op, &a, &a).unwrap().to_vec::<bool>().unwrap(),
                vec![false],
                "{op:?}"
            );
        }
        assert_eq!(
            not_equal(&a, &a).unwrap().to_vec::<bool>().unwrap(),
            vec![true]
        );
        let h = arr(&[half::f16::from_f32(1.0), half::f16::NAN], &[2]);
        assert_eq!(
            greater_equal(&h, &Array::from(1.0))
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            vec![true, false]
        );
    }

    #[test]
    fn logaddexp_is_stable() {
        assert_eq!(f32::logaddexp(f32::INFINITY, f32::INFINITY), f32::INFINITY);
        assert_eq!(
            f32::logaddexp(f32::NEG_INFINITY, f32::NEG_INFINITY),
            f32::NEG_INFINITY
        );
        assert_eq!(f32::logaddexp(f32::NEG_INFINITY, 3.0), 3.0);
        assert_eq!(f64::logaddexp(1e300, 0.0), 1e300);
        assert!(f32::logaddexp(f32::NAN, 1.0).is_nan());
        assert!(
            (f64::logaddexp(-1000.0, -1000.0) - (-1000.0 + std::f64::consts::LN_2)).abs() < 1e-12
        );
    }

    #[test]
    fn complex_arithmetic_and_powers() {
        let c = Complex64::new;
        assert_eq!(complex_pow(c(0.0, 0.0), c(0.0, 0.0)), c(1.0, 0.0));
        assert_eq!(complex_pow(c(0.0, 0.0), c(2.0, 0.0)), c(0.0, 0.0));
        assert!(complex_pow(c(0.0, 0.0), c(-1.0, 0.0)).re.is_nan());
        assert_eq!(complex_pow(c(0.0, 2.0), c(2.0, 0.0)), c(-4.0, 0.0));
        assert_eq!(complex_pow(c(1.0, 1.0), c(-2.0, 0.0)), c(0.0, -0.5));
        let p = complex_pow(c(1.0, 1.0), c(0.5, 0.0));
        assert!((p.re - 1.098_684_1).abs() < 1e-6 && (p.im - 0.455_089_86).abs() < 1e-6);
        // Smith's division is exact where the naive formula overflows.
        let q = complex_div(c(1e30, 1e30), c(1e30, 1e30));
        assert_eq!(q, c(1.0, 0.0));
        let z = complex_div(c(1.0, 1.0), c(0.0, 0.0));
        assert!(z.re.is_infinite() && z.im.is_infinite());
        let a = arr(&[c(1.0, 2.0)], &[1]);
        assert_eq!(equal(&a, &a).unwrap().to_vec::<bool>().unwrap(), vec![true]);
        assert_eq!(
            (&a * &a).unwrap().to_vec::<Complex64>().unwrap(),
            vec![c(-3.0, 4.0)]
        );
    }

    // ----- layouts -------------------------------------------------------------

    /// `values` (row-major, `shape`) stored with its axes permuted by `perm`
    /// (the storage holds the permuted array contiguously) and read back
    /// through permuted strides.
    fn permuted<T: Pod>(values: &[T], shape: &[usize], perm: &[usize]) -> Data {
        let nd = shape.len();
        let pshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let pstrides = crate::graph::layout::row_major_strides(&pshape);
        let mut strides = vec![0isize; nd];
        for k in 0..nd {
            strides[perm[k]] = pstrides[k];
        }
        let mut storage =
            crate::graph::storage::Storage::new(std::mem::size_of_val(values), false).unwrap();
        let dst = storage.as_mut_slice::<T>();
        let logical = crate::graph::layout::row_major_strides(shape);
        for (i, &v) in values.iter().enumerate() {
            let mut off = 0isize;
            let mut rest = i as isize;
            for d in 0..nd {
                let idx = rest / logical[d];
                rest %= logical[d];
                off += idx * strides[d];
            }
            dst[off as usize] = v;
        }
        Data {
            storage: Arc::new(storage),
            strides,
            offset: 0,
        }
    }

    /// `values` stored back to front and read through negative strides.
    fn reversed<T: Pod>(values: &[T], shape: &[usize]) -> Data {
        let mut storage =
            crate::graph::storage::Storage::new(std::mem::size_of_val(values), false).unwrap();
        for (d, &v) in storage.as_mut_slice::<T>().iter_mut().rev().zip(values) {
            *d = v;
        }
        let strides = crate::graph::layout::row_major_strides(shape)
            .iter()
            .map(|s| -s)
            .collect();
        Data {
            storage: Arc::new(storage),
            strides,
            offset: values.len().saturating_sub(1),
        }
    }

    use std::sync::Arc;

    fn eval_op<T: Pod>(
        op: BinaryOp,
        a: (&Data, &[usize]),
        b: (&Data, &[usize]),
        dtype: DType,
        out: DType,
    ) -> Vec<T> {
        let shape = broadcast_shapes("test", a.1, b.1).unwrap();
        let ops = [
            Operand {
                data: a.0,
                shape: a.1,
                dtype,
            },
            Operand {
                data: b.0,
                shape: b.1,
                dtype,
            },
        ];
        Binary(op)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: out,
                },
            )
            .unwrap()
            .to_vec::<T>(&shape)
    }

    /// Bit patterns, so that NaNs compare equal to themselves.
    fn bits(v: Vec<f32>) -> Vec<u32> {
        v.into_iter().map(f32::to_bits).collect()
    }

    #[test]
    fn non_contiguous_operands_match_contiguous_ones() {
        let shape = [2usize, 3, 4];
        let a: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 5.0).collect();
        let b: Vec<f32> = (0..24).map(|i| (i * 7 % 11) as f32 - 4.0).collect();
        let contiguous = |v: &[f32]| {
            Data::contiguous(
                {
                    let mut s = crate::graph::storage::Storage::new(v.len() * 4, false).unwrap();
                    s.as_mut_slice::<f32>().copy_from_slice(v);
                    s
                },
                &shape,
            )
        };
        let (ca, cb) = (contiguous(&a), contiguous(&b));
        for op in [
            BinaryOp::Subtract,
            BinaryOp::Remainder,
            BinaryOp::Maximum,
            BinaryOp::ArcTan2,
        ] {
            let want = bits(eval_op::<f32>(
                op,
                (&ca, &shape),
                (&cb, &shape),
                DType::Float32,
                DType::Float32,
            ));
            let pa = permuted(&a, &shape, &[2, 0, 1]);
            let rb = reversed(&b, &shape);
            let got = eval_op::<f32>(
                op,
                (&pa, &shape),
                (&rb, &shape),
                DType::Float32,
                DType::Float32,
            );
            assert_eq!(bits(got), want, "{op:?}");
            let got = eval_op::<f32>(
                op,
                (&ca, &shape),
                (&pa_for(&b, &shape), &shape),
                DType::Float32,
                DType::Float32,
            );
            assert_eq!(bits(got), want, "{op:?} (b permuted)");
        }
        let lt = eval_op::<bool>(
            BinaryOp::Less,
            (&permuted(&a, &shape, &[1, 2, 0]), &shape),
            (&cb, &shape),
            DType::Float32,
            DType::Bool,
        );
        let want: Vec<bool> = a.iter().zip(&b).map(|(x, y)| x < y).collect();
        assert_eq!(lt, want);
    }

    fn pa_for(v: &[f32], shape: &[usize]) -> Data {
        permuted(v, shape, &[2, 1, 0])
    }

    /// NaN-aware bit equality of two half results.
    fn same_half<H: Element>(x: H, y: H) -> bool {
        let (a, b) = (x.to_f64(), y.to_f64());
        (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
    }

    fn half_fast_path_matches_element_path<H: HalfBlock + Element>() {
        // Large enough to split over cores; specials included.
        let n = 70_001;
        let specials = [
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
            65504.0,
            1e-7,
        ];
        let va: Vec<H> = (0..n)
            .map(|i| {
                H::from_f64(if i < 7 {
                    specials[i]
                } else {
                    ((i * 37 % 1001) as f64 - 500.0) / 16.0
                })
            })
            .collect();
        let vb: Vec<H> = (0..n)
            .map(|i| {
                H::from_f64(if (7..14).contains(&i) {
                    specials[i - 7]
                } else {
                    ((i * 91 % 997) as f64 - 498.0) / 32.0
                })
            })
            .collect();
        let shape = [n];
        let contiguous = |v: &[H], shape: &[usize]| {
            let mut s =
                crate::graph::storage::Storage::new(std::mem::size_of_val(v), false).unwrap();
            s.as_mut_slice::<H>().copy_from_slice(v);
            Data::contiguous(s, shape)
        };
        let (ca, cb) = (contiguous(&va, &shape), contiguous(&vb, &shape));
        let (ra, rb) = (reversed(&va, &shape), reversed(&vb, &shape));
        let scalar = contiguous(&[H::from_f64(2.0)], &[]);
        let dtype = H::DTYPE;
        for op in BinaryOp::ALL {
            let Ok((compute, output)) = op.dtypes(dtype) else {
                continue;
            };
            if compute != dtype {
                continue;
            }
            let run = |a: &Data, b: &Data, b_shape: &[usize]| {
                let ops = [
                    Operand {
                        data: a,
                        shape: &shape,
                        dtype,
                    },
                    Operand {
                        data: b,
                        shape: b_shape,
                        dtype,
                    },
                ];
                Binary(op)
                    .eval_cpu(
                        &ops,
                        OutSpec {
                            shape: &shape,
                            dtype: output,
                        },
                    )
                    .unwrap()
            };
            let pairs = [
                (run(&ca, &cb, &shape), run(&ra, &rb, &shape)),
                (run(&ca, &scalar, &[]), run(&ra, &scalar, &[])),
            ];
            for (fast, slow) in pairs {
                if output == DType::Bool {
                    assert_eq!(
                        fast.to_vec::<bool>(&shape),
                        slow.to_vec::<bool>(&shape),
                        "{op:?} {dtype}"
                    );
                } else {
                    let (f, s) = (fast.to_vec::<H>(&shape), slow.to_vec::<H>(&shape));
                    for i in 0..n {
                        assert!(
                            same_half(f[i], s[i]),
                            "{op:?} {dtype} at {i}: {:?} vs {:?}",
                            f[i],
                            s[i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn half_fast_paths_match_the_element_path() {
        half_fast_path_matches_element_path::<f16>();
        half_fast_path_matches_element_path::<bf16>();
    }

    #[test]
    fn squaring_matches_pow() {
        let v = [
            0.0f32,
            -0.0,
            1.5,
            -3.25,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            1e20,
            1e-30,
            3.0e19,
        ];
        let sq = power(&arr(&v, &[10]), &Array::from(2.0))
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for (x, y) in v.iter().zip(&sq) {
            let p = x.powf(2.0);
            assert!(
                p.to_bits() == y.to_bits() || (p.is_nan() && y.is_nan()),
                "{x}"
            );
        }
        let h = arr(&[f16::from_f32(3.0), f16::from_f32(300.0)], &[2]);
        let sq = power(&h, &Array::from(2.0))
            .unwrap()
            .to_vec::<f16>()
            .unwrap();
        assert_eq!(sq, vec![f16::from_f32(9.0), f16::INFINITY]);
    }

    #[test]
    fn scalar_operand_on_either_side() {
        let a = arr(&[1.0f32, 2.0, 4.0], &[3]);
        let two = arr(&[2.0f32], &[]);
        assert_eq!(
            divide(&a, &two).unwrap().to_vec::<f32>().unwrap(),
            vec![0.5, 1.0, 2.0]
        );
        assert_eq!(
            divide(&two, &a).unwrap().to_vec::<f32>().unwrap(),
            vec![2.0, 1.0, 0.5]
        );
        let one_elem = arr(&[2.0f32], &[1, 1]);
        assert_eq!(subtract(&one_elem, &a).unwrap().shape(), &[1, 3]);
        assert_eq!(
            subtract(&one_elem, &a).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 0.0, -2.0]
        );
        let empty = crate::ops::creation::zeros(&[0, 3], DType::Float32).unwrap();
        assert_eq!(
            add(&empty, &a).unwrap().to_vec::<f32>().unwrap(),
            Vec::<f32>::new()
        );
        assert_eq!(add(&empty, &two).unwrap().shape(), &[0, 3]);
    }

    #[test]
    fn nodes_go_to_the_current_stream() {
        let s: Stream = crate::graph::stream::new_stream(crate::graph::stream::default_device());
        let a = arr(&[1i32], &[1]);
        let r = crate::graph::stream::with_stream(s, || maximum(&a, &a)).unwrap();
        assert_eq!(r.stream(), s);
    }

    // ----- property tests --------------------------------------------------------

    fn unravel(mut k: usize, shape: &[usize]) -> Vec<usize> {
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = k % shape[d];
            k /= shape[d];
        }
        idx
    }

    /// Flat index into `shape` of the output index `idx` (broadcast rules).
    fn broadcast_index(idx: &[usize], shape: &[usize]) -> usize {
        let pad = idx.len() - shape.len();
        shape.iter().enumerate().fold(0, |acc, (d, &n)| {
            acc * n + if n == 1 { 0 } else { idx[pad + d] }
        })
    }

    fn naive<T: Copy, O>(
        a: &[T],
        sa: &[usize],
        b: &[T],
        sb: &[usize],
        f: impl Fn(T, T) -> O,
    ) -> (Vec<usize>, Vec<O>) {
        let shape = broadcast_shapes("naive", sa, sb).unwrap();
        let n: usize = shape.iter().product();
        let out = (0..n)
            .map(|k| {
                let idx = unravel(k, &shape);
                f(a[broadcast_index(&idx, sa)], b[broadcast_index(&idx, sb)])
            })
            .collect();
        (shape, out)
    }

    /// A shape and a second shape that broadcasts with it (dims dropped
    /// from the front or replaced by 1, on either side).
    fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
        prop::collection::vec((0usize..4, 0u8..4, 0u8..4), 0..4).prop_flat_map(|dims| {
            let a: Vec<usize> = dims
                .iter()
                .map(|&(d, m, _)| if m == 0 { 1 } else { d })
                .collect();
            let b: Vec<usize> = dims
                .iter()
                .map(|&(d, _, m)| if m == 0 { 1 } else { d })
                .collect();
            (0..=b.len()).prop_map(move |drop| (a.clone(), b[drop..].to_vec()))
        })
    }

    fn values_i32(n: usize) -> impl Strategy<Value = Vec<i32>> {
        prop::collection::vec(-20i32..20, n)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn broadcast_general_path_matches_naive_loop(
            (sa, sb, va, vb) in broadcast_pair().prop_flat_map(|(sa, sb)| {
                let (na, nb) = (sa.iter().product::<usize>(), sb.iter().product::<usize>());
                (Just(sa), Just(sb), values_i32(na), values_i32(nb))
            })
        ) {
            let (a, b) = (arr(&va, &sa), arr(&vb, &sb));
            let (shape, want) = naive(&va, &sa, &vb, &sb, i32::rem);
            let got = remainder(&a, &b).unwrap();
            prop_assert_eq!(got.shape(), &shape[..]);
            prop_assert_eq!(got.to_vec::<i32>().unwrap(), want);
            let (_, want) = naive(&va, &sa, &vb, &sb, |x, y| x.wrapping_sub(y));
            prop_assert_eq!(subtract(&a, &b).unwrap().to_vec::<i32>().unwrap(), want);
            let (_, want) = naive(&va, &sa, &vb, &sb, |x, y| x <= y);
            prop_assert_eq!(less_equal(&a, &b).unwrap().to_vec::<bool>().unwrap(), want);
            let (fa, fb): (Vec<f32>, Vec<f32>) = (va.iter().map(|&x| x as f32 / 4.0).collect(), vb.iter().map(|&x| x as f32 / 4.0).collect());
            let (_, want) = naive(&fa, &sa, &fb, &sb, <f32 as Real>::max);
            prop_assert_eq!(maximum(&arr(&fa, &sa), &arr(&fb, &sb)).unwrap().to_vec::<f32>().unwrap(), want);
        }

        #[test]
        fn permuted_operands_match_naive_loop(
            (shape, perm, va, vb) in prop::collection::vec(1usize..4, 1..4).prop_flat_map(|shape| {
                let n = shape.iter().product::<usize>();
                let nd = shape.len();
                (Just(shape), Just((0..nd).collect::<Vec<_>>()).prop_shuffle(), values_i32(n), values_i32(n))
            })
        ) {
            let pa = permuted(&va, &shape, &perm);
            let rb = reversed(&vb, &shape);
            for op in [BinaryOp::FloorDivide, BinaryOp::Multiply, BinaryOp::BitwiseXor] {
                let f = match op {
                    BinaryOp::FloorDivide => i32::floor_div,
                    BinaryOp::Multiply => i32::mul,
                    _ => i32::xor,
                };
                let (_, want) = naive(&va, &shape, &vb, &shape, f);
                prop_assert_eq!(eval_op::<i32>(op, (&pa, &shape), (&rb, &shape), DType::Int32, DType::Int32), want);
            }
        }

        #[test]
        fn large_contiguous_and_scalar_paths_match_naive_loop(n in 0usize..70_000, s in -5i32..5) {
            let va: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32) >> 20).collect();
            let a = arr(&va, &[n]);
            let want: Vec<i32> = va.iter().map(|&x| i32::floor_div(x, s)).collect();
            prop_assert_eq!(floor_divide(&a, &Array::from(s)).unwrap().to_vec::<i32>().unwrap(), want);
            let want: Vec<i32> = va.iter().map(|&x| i32::rem(s, x)).collect();
            prop_assert_eq!(remainder(&Array::from(s), &a).unwrap().to_vec::<i32>().unwrap(), want);
            let want: Vec<bool> = va.iter().zip(va.iter().rev()).map(|(&x, &y)| x > y).collect();
            let rev = arr(&va.iter().rev().copied().collect::<Vec<_>>(), &[n]);
            prop_assert_eq!(greater(&a, &rev).unwrap().to_vec::<bool>().unwrap(), want);
        }
    }
}
