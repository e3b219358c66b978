//! Unary elementwise ops: arithmetic (`abs`, `negative`, `sign`, `square`,
//! `sqrt`, `rsqrt`, `reciprocal`), exponentials and logarithms, circular
//! and hyperbolic functions and their inverses, `sigmoid`, `erf`, `erfinv`,
//! rounding (`floor`, `ceil`, `round`), predicates (`logical_not`,
//! `isnan`, `isinf`, `isfinite`), `bitwise_invert`, and the complex parts
//! (`real`, `imag`, `conjugate`).
//!
//! Dtype rules follow MLX (see `rules.rs` for the table): transcendental
//! ops compute bool and integer inputs in float32, predicates return bool,
//! `abs`/`real`/`imag` of complex64 return float32. Values follow numpy.
//! Float kernels are vectorised (`backend::cpu::math` for `f32`, and for
//! `f16`/`bf16` through `f32`); `f64` uses the standard library.

mod derivatives;
mod element;
mod kernels;
mod methods;
mod ops;
mod rules;
#[cfg(test)]
mod tests;

pub use ops::*;

use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::{Error, Result};

/// The unary elementwise operations.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Abs,
    Negative,
    Sign,
    Square,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Exp,
    Expm1,
    Log,
    Log1p,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    ArcSin,
    ArcCos,
    ArcTan,
    Sinh,
    Cosh,
    Tanh,
    ArcSinh,
    ArcCosh,
    ArcTanh,
    Sigmoid,
    Erf,
    ErfInv,
    Floor,
    Ceil,
    /// Round half to even to this many decimal places (negative: tens,
    /// hundreds, ...).
    Round(i32),
    LogicalNot,
    BitwiseInvert,
    IsNan,
    IsInf,
    IsFinite,
    Real,
    Imag,
    Conjugate,
}

impl UnaryOp {
    /// The op's public name (MLX's).
    ///
    /// ```
    /// assert_eq!(ferrox::ops::unary::UnaryOp::ArcTanh.name(), "arctanh");
    /// ```
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Negative => "negative",
            Sign => "sign",
            Square => "square",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Reciprocal => "reciprocal",
            Exp => "exp",
            Expm1 => "expm1",
            Log => "log",
            Log1p => "log1p",
            Log2 => "log2",
            Log10 => "log10",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            ArcSin => "arcsin",
            ArcCos => "arccos",
            ArcTan => "arctan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            ArcSinh => "arcsinh",
            ArcCosh => "arccosh",
            ArcTanh => "arctanh",
            Sigmoid => "sigmoid",
            Erf => "erf",
            ErfInv => "erfinv",
            Floor => "floor",
            Ceil => "ceil",
            Round(_) => "round",
            LogicalNot => "logical_not",
            BitwiseInvert => "bitwise_invert",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
            Real => "real",
            Imag => "imag",
            Conjugate => "conjugate",
        }
    }
}

/// A unary elementwise primitive. Its input already has the dtype the op
/// computes in (the builders cast bool and integer inputs of float ops).
///
/// ```
/// use ferrox::ops::unary::{Unary, UnaryOp};
/// let y = ferrox::sqrt(&ferrox::ones(&[2], ferrox::DType::Float32)?)?;
/// let p = y.primitive().unwrap();
/// assert_eq!(p.as_any().downcast_ref::<Unary>(), Some(&Unary(UnaryOp::Sqrt)));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Unary(pub UnaryOp);

impl Primitive for Unary {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [x] = inputs else {
            return Err(Error::runtime(
                self.name(),
                format!("expected 1 input, got {}", inputs.len()),
            ));
        };
        kernels::eval(self.0, x, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn vjp(
        &self,
        primals: &[crate::Array],
        cotangent: &crate::Array,
        output: &crate::Array,
        _argnums: &[usize],
    ) -> Result<Vec<crate::Array>> {
        Ok(vec![derivatives::vjp(
            self.0,
            &primals[0],
            output,
            cotangent,
        )?])
    }
    fn jvp(
        &self,
        primals: &[crate::Array],
        tangents: &[Option<crate::Array>],
        output: &crate::Array,
    ) -> Result<crate::Array> {
        match &tangents[0] {
            Some(t) => derivatives::jvp(self.0, &primals[0], output, t),
            None => crate::zeros_like(output),
        }
    }
    fn vmap(
        &self,
        inputs: &[crate::Array],
        axes: &[Option<usize>],
    ) -> Result<(crate::Array, Option<usize>)> {
        Ok((rules::build(self.0, &inputs[0])?, axes[0]))
    }
    crate::primitive_common!();
}
