//! Binary elementwise ops with numpy broadcasting and MLX type promotion.

use super::shape_rules::broadcast_shapes;
use super::{OutSpec, Operand, Primitive};
use crate::array::Data;
use crate::backend::cpu::elementwise::binary;
use crate::dtype::Element;
use crate::runtime::memory::Pod;
use crate::{with_dtype, Array, DType, Error, Result};

/// The binary elementwise operations.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

impl BinaryOp {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Subtract => "subtract",
            BinaryOp::Multiply => "multiply",
            BinaryOp::Divide => "divide",
        }
    }
}

/// A binary elementwise primitive; inputs are already of one dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Binary(pub BinaryOp);

/// Arithmetic on one element type.
pub trait Arith: Element + Pod {
    /// a + b (wrapping for integers, `or` for bool).
    fn add(a: Self, b: Self) -> Self;
    /// a - b (wrapping for integers, `xor` for bool).
    fn sub(a: Self, b: Self) -> Self;
    /// a * b (wrapping for integers, `and` for bool).
    fn mul(a: Self, b: Self) -> Self;
    /// a / b; integer division by zero gives 0.
    fn div(a: Self, b: Self) -> Self;
}

macro_rules! arith_int {($($t:ty),*) => {$(
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { a.wrapping_sub(b) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { if b == 0 { 0 } else { a.wrapping_div(b) } }
    }
)*}}
arith_int!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! arith_float {($($t:ty),*) => {$(
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a + b }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { a - b }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a * b }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { a / b }
    }
)*}}
arith_float!(f32, f64, crate::Complex64);

macro_rules! arith_half {($($t:ty),*) => {$(
    // Computed in f32 and rounded once, as MLX does on CPU.
    impl Arith for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() + b.to_f32()) }
        #[inline(always)] fn sub(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() - b.to_f32()) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() * b.to_f32()) }
        #[inline(always)] fn div(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() / b.to_f32()) }
    }
)*}}
arith_half!(half::f16, half::bf16);

impl Arith for bool {
    fn add(a: Self, b: Self) -> Self {
        a | b
    }
    fn sub(a: Self, b: Self) -> Self {
        a ^ b
    }
    fn mul(a: Self, b: Self) -> Self {
        a & b
    }
    fn div(a: Self, b: Self) -> Self {
        a & b
    }
}

fn arith_kernel<T: Arith>(op: BinaryOp, a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    match op {
        BinaryOp::Add => binary(a, b, out, T::add),
        BinaryOp::Subtract => binary(a, b, out, T::sub),
        BinaryOp::Multiply => binary(a, b, out, T::mul),
        BinaryOp::Divide => binary(a, b, out, T::div),
    }
}

impl Primitive for Binary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, b) = (&inputs[0], &inputs[1]);
        with_dtype!(a.dtype, T => arith_kernel::<T>(self.0, a, b, out))
    }
    primitive_common!();
}

/// The dtype two operands compute in, honouring weak scalars.
pub fn result_dtype(a: &Array, b: &Array) -> DType {
    match (a.weak_kind(), b.weak_kind()) {
        (Some(k), None) => DType::promote_weak(b.dtype(), k),
        (None, Some(k)) => DType::promote_weak(a.dtype(), k),
        _ => DType::promote(a.dtype(), b.dtype()),
    }
}

/// Promotes and broadcasts `a` and `b`, returning them cast to the common
/// dtype together with the output shape.
pub fn prepare(op: &str, a: &Array, b: &Array) -> Result<(Array, Array, Vec<usize>, DType)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = result_dtype(a, b);
    Ok((a.astype(dtype)?, b.astype(dtype)?, shape, dtype))
}

fn arith(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    let (a, b, shape, dtype) = prepare(op.name(), a, b)?;
    let dtype = if op == BinaryOp::Divide && !dtype.is_inexact() { DType::Float32 } else { dtype };
    let (a, b) = (a.astype(dtype)?, b.astype(dtype)?);
    let out = Array::from_op(shape, dtype, Binary(op), vec![a.clone(), b.clone()]);
    if a.is_weak() && b.is_weak() {
        return Ok(crate::array::mark_weak(out));
    }
    Ok(out)
}

/// Elementwise `a + b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::add(&a, &a)?.to_vec::<i32>()?, vec![2, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn add(a: &Array, b: &Array) -> Result<Array> {
    arith(BinaryOp::Add, a, b)
}
/// Elementwise `a - b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2], &[2])?;
/// assert_eq!(ferrox::subtract(&a, &a)?.to_vec::<i32>()?, vec![0, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn subtract(a: &Array, b: &Array) -> Result<Array> {
    arith(BinaryOp::Subtract, a, b)
}
/// Elementwise `a * b`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.5f32, 2.0], &[2])?;
/// assert_eq!(ferrox::multiply(&a, &a)?.to_vec::<f32>()?, vec![2.25, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn multiply(a: &Array, b: &Array) -> Result<Array> {
    arith(BinaryOp::Multiply, a, b)
}
/// Elementwise true division; integer inputs give float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 3], &[2])?;
/// assert_eq!(ferrox::divide(&a, &ferrox::Array::from(2))?.to_vec::<f32>()?, vec![0.5, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn divide(a: &Array, b: &Array) -> Result<Array> {
    arith(BinaryOp::Divide, a, b)
}

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

/// Checks that `dtype` is one of the categories an op accepts.
pub fn require(op: &str, dtype: DType, ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::dtype(op, format!("expected {what}, got {dtype}")))
    }
}
