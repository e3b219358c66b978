//! `cross_entropy`: a composite (logsumexp and a gather), so its
//! derivative rules are those of the ops it is made of.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::subtract;
use crate::ops::cast::astype;
use crate::ops::indexing::take_along_axis;
use crate::ops::softmax::logsumexp;
use crate::ops::views::{expand_dims, squeeze};

/// Cross entropy with class indices: `logsumexp(logits, -1) -
/// logits[..., targets]`, in float32, with the shape of `targets`, as
/// `mlx.core.fast.cross_entropy`. `targets` are integers in
/// `[0, logits.shape[-1])`; its shape is `logits.shape[:-1]`. A target
/// out of range is an index error (from `take_along_axis`) at evaluation.
///
/// ```
/// use ferrox::*;
/// let logits = Array::from_slice(&[0.0f32, 0.0, 0.0, 0.0], &[2, 2])?;
/// let t = Array::from_slice(&[0i32, 1], &[2])?;
/// let l = fast::cross_entropy(&logits, &t)?.to_vec::<f32>()?;
/// assert!((l[0] - 2f32.ln()).abs() < 1e-6 && (l[1] - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cross_entropy(logits: &Array, targets: &Array) -> Result<Array> {
    let name = "cross_entropy";
    if logits.ndim() == 0 {
        return Err(Error::shape(
            name,
            "logits must have at least 1 dimension, got a scalar",
        ));
    }
    if !logits.dtype().is_float() {
        return Err(Error::dtype(
            name,
            format!("logits must be a float, got {}", logits.dtype()),
        ));
    }
    if !targets.dtype().is_integer() {
        return Err(Error::dtype(
            name,
            format!("targets must be integers, got {}", targets.dtype()),
        ));
    }
    let lead = &logits.shape()[..logits.ndim() - 1];
    if targets.shape() != lead {
        return Err(Error::shape(
            name,
            format!(
                "targets must have shape {lead:?} (logits {:?} without the last axis), got {:?}",
                logits.shape(),
                targets.shape()
            ),
        ));
    }
    let x = astype(logits, DType::Float32)?;
    let picked = squeeze(
        &take_along_axis(&x, &expand_dims(targets, &[-1])?, Some(-1))?,
        Some(&[-1]),
    )?;
    subtract(&logsumexp(&x, Some(&[-1]), false)?, &picked)
}
