//! `ferrox::fast`: the fused kernels models are made of, with
//! `mlx.core.fast`'s names and semantics: [`rms_norm`], [`layer_norm`],
//! [`rope`], [`scaled_dot_product_attention`] and [`cross_entropy`], and
//! custom GPU kernels from source ([`custom_kernel`]), recorded for export.
//!
//! Each (but `cross_entropy`, a composite) is one primitive whose CPU
//! kernel computes in float32 in one pass over the data where the math
//! allows; its derivative and batching rules sit beside it. Float64 inputs
//! take the composed path (the kernels are float32 inside).

pub(crate) mod attention;
mod attention_grad;
mod cross_entropy;
pub mod custom_kernel;
pub(crate) mod norm;
pub(crate) mod rope;

pub use attention::{
    AttentionMask, ScaledDotProductAttention, ScaledDotProductAttentionVjp,
    scaled_dot_product_attention,
};
pub use cross_entropy::cross_entropy;
pub use norm::{LayerNorm, RmsNorm, layer_norm, rms_norm};
pub use rope::{Rope, RopeOffset, rope};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;

/// Checks that an optional per-feature parameter is one-dimensional with
/// `x.shape[-1]` elements.
fn check_param(op: &str, what: &str, p: Option<&Array>, x: &Array) -> Result<()> {
    let Some(p) = p else { return Ok(()) };
    let d = x.shape().last().copied().unwrap_or(0);
    if p.ndim() != 1 || p.shape()[0] != d {
        return Err(Error::shape(
            op,
            format!(
                "{what} must be one-dimensional with {d} elements (the last axis of x, shape {:?}), got shape {:?}",
                x.shape(),
                p.shape()
            ),
        ));
    }
    Ok(())
}

/// The promoted dtype of `x` and the present `others`, which must be a
/// real float.
fn float_result(op: &str, x: &Array, others: &[Option<&Array>]) -> Result<DType> {
    let dtype = others
        .iter()
        .flatten()
        .fold(x.dtype(), |d, p| DType::promote(d, p.dtype()));
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            format!("expected floating-point inputs, got {dtype}"),
        ));
    }
    Ok(dtype)
}
