//! Unary elementwise ops.

use super::{OutSpec, Operand, Primitive};
use crate::array::Data;
use crate::backend::cpu::elementwise::unary;
use crate::{Array, DType, Error, Result};

/// The unary elementwise operations.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Negative,
    Exp,
}

impl UnaryOp {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Negative => "negative",
            UnaryOp::Exp => "exp",
        }
    }
}

/// A unary elementwise primitive.
#[derive(Debug, Clone, PartialEq)]
pub struct Unary(pub UnaryOp);

impl Primitive for Unary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        match (self.0, x.dtype) {
            (UnaryOp::Negative, DType::Float32) => unary(x, out, |v: f32| -v),
            (UnaryOp::Exp, DType::Float32) => unary(x, out, |v: f32| v.exp()),
            (op, d) => Err(Error::dtype(op.name(), format!("dtype {d} is not supported"))),
        }
    }
    primitive_common!();
}

/// Elementwise `-a`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, -2.0], &[2])?;
/// assert_eq!(ferrox::negative(&a)?.to_vec::<f32>()?, vec![-1.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn negative(a: &Array) -> Result<Array> {
    Ok(Array::from_op(a.shape().to_vec(), a.dtype(), Unary(UnaryOp::Negative), vec![a.clone()]))
}

/// Elementwise `e^a`.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::exp(&a)?.to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn exp(a: &Array) -> Result<Array> {
    Ok(Array::from_op(a.shape().to_vec(), a.dtype(), Unary(UnaryOp::Exp), vec![a.clone()]))
}
