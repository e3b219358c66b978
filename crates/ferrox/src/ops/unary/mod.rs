//! Unary elementwise ops: arithmetic (`abs`, `negative`, `sign`, `square`,
//! `sqrt`, `rsqrt`, `reciprocal`), exponentials and logarithms, circular
//! and hyperbolic functions and their inverses, `sigmoid`, `erf`, `erfinv`,
//! rounding (`floor`, `ceil`, `round`), predicates (`logical_not`,
//! `isnan`, `isinf`, `isfinite`), `bitwise_invert`, and the complex parts
//! (`real`, `imag`, `conjugate`).
//!
//! Dtype rules follow MLX (see `dtypes.rs` for the table): transcendental
//! ops compute bool and integer inputs in float32, predicates return bool,
//! `abs`/`real`/`imag` of complex64 return float32. Values follow numpy.
//! Float kernels are vectorised (`backend::cpu::math` for `f32`, and for
//! `f16`/`bf16` through `f32`); `f64` uses the standard library.

mod builders;
mod dtypes;
mod grad;
mod methods;
#[cfg(test)]
mod tests;

pub use builders::*;
// The selector of the elementwise function is the kernel's vocabulary; its
// public path stays here, beside the builders.
pub use crate::backend::cpu::unary::UnaryOp;

use crate::backend::cpu::unary;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Unary(pub UnaryOp);

impl crate::graph::export::Exportable for Unary {
    const KIND: &'static str = "unary";
    fn rebuild(&self, inputs: &[crate::graph::array::Array]) -> Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.0.name())?;
        dtypes::build(self.0, x)
    }
}

impl Primitive for Unary {
    fn is_elementwise(&self) -> bool {
        true
    }
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
        if dtypes::output_dtype(self.0, x.dtype) != Some(out.dtype) {
            return Err(Error::runtime(
                self.name(),
                format!(
                    "cannot compute a {} output from a {} input",
                    out.dtype, x.dtype
                ),
            ));
        }
        unary::eval(self.0, x, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn vjp(
        &self,
        primals: &[crate::graph::array::Array],
        cotangent: &crate::graph::array::Array,
        output: &crate::graph::array::Array,
        _argnums: &[usize],
    ) -> Result<Vec<crate::graph::array::Array>> {
        Ok(vec![grad::vjp(self.0, &primals[0], output, cotangent)?])
    }
    fn jvp(
        &self,
        primals: &[crate::graph::array::Array],
        tangents: &[Option<crate::graph::array::Array>],
        output: &crate::graph::array::Array,
    ) -> Result<crate::graph::array::Array> {
        match &tangents[0] {
            Some(t) => grad::jvp(self.0, &primals[0], output, t),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(
        &self,
        inputs: &[crate::graph::array::Array],
        axes: &[Option<usize>],
    ) -> Result<(crate::graph::array::Array, Option<usize>)> {
        Ok((dtypes::build(self.0, &inputs[0])?, axes[0]))
    }
    crate::primitive_common!();
}
