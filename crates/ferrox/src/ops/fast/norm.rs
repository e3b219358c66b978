//! `rms_norm` and `layer_norm` over the last axis: one primitive each with
//! a fused kernel ([`crate::backend::cpu::fast::norm`]); derivative rules
//! composed of ops (so they differentiate again), computed in float32.

use super::{check_param, float_result};
use crate::backend::cpu::fast::norm as kernel;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::binary::{add, multiply, subtract};
use crate::ops::cast::astype;
use crate::ops::grad_helpers::{batch_front, sum_terms};
use crate::ops::reduce::{mean, sum};
use crate::ops::unary::rsqrt;
use crate::ops::views::{expand_dims, reshape};

/// Which statistics a normalisation removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `x / rms(x)`.
    Rms,
    /// `(x - mean) / std`.
    Layer,
}

/// The primitive of [`rms_norm`]; inputs `[x]` or `[x, weight]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RmsNorm {
    /// Added to the mean square.
    pub eps: f32,
    /// Whether a weight is the second input.
    pub has_weight: bool,
}

impl crate::graph::export::Exportable for RmsNorm {
    const KIND: &'static str = "rms_norm";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        match (self.has_weight, inputs) {
            (false, [x]) => rms_norm(x, None, self.eps),
            (true, [x, w]) => rms_norm(x, Some(w), self.eps),
            _ => Err(crate::graph::export::wrong_inputs("rms_norm", inputs.len())),
        }
    }
}

/// The primitive of [`layer_norm`]; inputs `[x, weight?, bias?]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerNorm {
    /// Added to the variance.
    pub eps: f32,
    /// Whether a weight is an input (right after `x`).
    pub has_weight: bool,
    /// Whether a bias is an input (last).
    pub has_bias: bool,
}

impl crate::graph::export::Exportable for LayerNorm {
    const KIND: &'static str = "layer_norm";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let eps = self.eps;
        match (self.has_weight, self.has_bias, inputs) {
            (false, false, [x]) => layer_norm(x, None, None, eps),
            (true, false, [x, w]) => layer_norm(x, Some(w), None, eps),
            (false, true, [x, b]) => layer_norm(x, None, Some(b), eps),
            (true, true, [x, w, b]) => layer_norm(x, Some(w), Some(b), eps),
            _ => Err(crate::graph::export::wrong_inputs(
                "layer_norm",
                inputs.len(),
            )),
        }
    }
}

/// Root-mean-square normalisation over the last axis:
/// `x / sqrt(mean(x^2, -1) + eps) * weight`, as `mlx.core.fast.rms_norm`.
///
/// `weight` (optional) is one-dimensional with `x.shape[-1]` elements. The
/// result has the promoted dtype of `x` and `weight`, which must be a float;
/// statistics are accumulated in float32.
///
/// ```
/// use ferrox::*;
/// let x = Array::from_slice(&[3.0f32, 4.0], &[1, 2])?;
/// let y = fast::rms_norm(&x, None, 0.0)?.to_vec::<f32>()?;
/// let r = (12.5f32).sqrt();
/// assert!((y[0] - 3.0 / r).abs() < 1e-6 && (y[1] - 4.0 / r).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let name = "rms_norm";
    check_input(name, x)?;
    check_param(name, "weight", weight, x)?;
    let dtype = float_result(name, x, &[weight])?;
    if dtype == DType::Float64 {
        return reference(Kind::Rms, x, weight, None, eps);
    }
    let mut inputs = vec![astype(x, dtype)?];
    inputs.extend(weight.map(|w| astype(w, dtype)).transpose()?);
    let op = RmsNorm {
        eps,
        has_weight: weight.is_some(),
    };
    Ok(Array::from_op(x.shape().to_vec(), dtype, op, inputs))
}

/// Layer normalisation over the last axis:
/// `(x - mean) / sqrt(var + eps) * weight + bias`, as
/// `mlx.core.fast.layer_norm`.
///
/// `weight` and `bias` (each optional) are one-dimensional with
/// `x.shape[-1]` elements; the result has their promoted float dtype.
///
/// ```
/// use ferrox::*;
/// let x = Array::from_slice(&[1.0f32, 3.0], &[1, 2])?;
/// let y = fast::layer_norm(&x, None, None, 0.0)?.to_vec::<f32>()?;
/// assert!((y[0] + 1.0).abs() < 1e-6 && (y[1] - 1.0).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn layer_norm(
    x: &Array,
    weight: Option<&Array>,
    bias: Option<&Array>,
    eps: f32,
) -> Result<Array> {
    let name = "layer_norm";
    check_input(name, x)?;
    check_param(name, "weight", weight, x)?;
    check_param(name, "bias", bias, x)?;
    let dtype = float_result(name, x, &[weight, bias])?;
    if dtype == DType::Float64 {
        return reference(Kind::Layer, x, weight, bias, eps);
    }
    let mut inputs = vec![astype(x, dtype)?];
    inputs.extend(weight.map(|w| astype(w, dtype)).transpose()?);
    inputs.extend(bias.map(|b| astype(b, dtype)).transpose()?);
    let op = LayerNorm {
        eps,
        has_weight: weight.is_some(),
        has_bias: bias.is_some(),
    };
    Ok(Array::from_op(x.shape().to_vec(), dtype, op, inputs))
}

fn check_input(name: &str, x: &Array) -> Result<()> {
    if x.ndim() == 0 {
        return Err(Error::shape(
            name,
            "the input must have at least 1 dimension, got a scalar",
        ));
    }
    Ok(())
}

/// The normalisation composed of ops (float64 inputs, and the reference
/// the tests compare with).
pub(crate) fn reference(
    kind: Kind,
    x: &Array,
    weight: Option<&Array>,
    bias: Option<&Array>,
    eps: f32,
) -> Result<Array> {
    let dtype = x.dtype();
    let compute = if dtype == DType::Float64 {
        dtype
    } else {
        DType::Float32
    };
    let x32 = astype(x, compute)?;
    let (n, _) = normalized(kind, &x32, eps)?;
    let mut y = astype(&n, dtype)?;
    if let Some(w) = weight {
        y = multiply(&y, w)?;
    }
    if let Some(b) = bias {
        y = add(&y, b)?;
    }
    Ok(y)
}

/// `(n, r)`: the normalised `x` and the per-row `1 / sqrt(stat + eps)`
/// (kept dims), of a float32 or float64 `x`.
fn normalized(kind: Kind, x: &Array, eps: f32) -> Result<(Array, Array)> {
    let last: &[isize] = &[-1];
    let centred = match kind {
        Kind::Rms => x.clone(),
        Kind::Layer => subtract(x, &mean(x, Some(last), true)?)?,
    };
    let stat = mean(&multiply(&centred, &centred)?, Some(last), true)?;
    let eps = Array::scalar(eps).astype(x.dtype())?;
    let r = rsqrt(&add(&stat, &eps)?)?;
    Ok((multiply(&centred, &r)?, r))
}

/// The parts of a normalisation node's inputs.
struct Parts<'a> {
    x: &'a Array,
    weight: Option<&'a Array>,
    bias: Option<&'a Array>,
}

fn parts<'a>(name: &str, p: &'a [Array], has_weight: bool, has_bias: bool) -> Result<Parts<'a>> {
    let want = 1 + usize::from(has_weight) + usize::from(has_bias);
    if p.len() != want {
        return Err(Error::runtime(
            name,
            format!("internal: {} inputs, expected {want}", p.len()),
        ));
    }
    Ok(Parts {
        x: &p[0],
        weight: has_weight.then(|| &p[1]),
        bias: has_bias.then(|| &p[want - 1]),
    })
}

/// Cotangents of `[x, weight?, bias?]` (in input order, then picked by
/// `argnums`): with `n` the normalised input and `gn = g * weight`,
/// `dx = r * (gn - mean(gn) - n * mean(gn * n))` (the `mean(gn)` term only
/// for layer norm), `dweight = sum(g * n)`, `dbias = sum(g)`.
fn vjp_rule(
    kind: Kind,
    name: &str,
    parts: &Parts<'_>,
    eps: f32,
    g: &Array,
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let dtype = parts.x.dtype();
    let x = astype(parts.x, DType::Float32)?;
    let g = astype(g, DType::Float32)?;
    let (n, r) = normalized(kind, &x, eps)?;
    let last: &[isize] = &[-1];
    let gn = match parts.weight {
        Some(w) => multiply(&g, &astype(w, DType::Float32)?)?,
        None => g.clone(),
    };
    let mut inner = subtract(
        &gn,
        &multiply(&n, &mean(&multiply(&gn, &n)?, Some(last), true)?)?,
    )?;
    if kind == Kind::Layer {
        inner = subtract(&inner, &mean(&gn, Some(last), true)?)?;
    }
    let leading: Vec<isize> = (0..x.ndim() as isize - 1).collect();
    let mut slots: Vec<Array> = vec![astype(&multiply(&r, &inner)?, dtype)?];
    if let Some(w) = parts.weight {
        slots.push(astype(
            &sum(&multiply(&g, &n)?, Some(&leading), false)?,
            w.dtype(),
        )?);
    }
    if let Some(b) = parts.bias {
        slots.push(astype(&sum(&g, Some(&leading), false)?, b.dtype())?);
    }
    argnums
        .iter()
        .map(|&i| {
            slots.get(i).cloned().ok_or_else(|| {
                Error::runtime(name, format!("internal: no input {i} to differentiate"))
            })
        })
        .collect()
}

/// Tangent of the output: `dn * weight + n * tweight + tbias`, with
/// `dn = r * (tx - mean(tx) - n * mean(n * tx))`.
fn jvp_rule(
    kind: Kind,
    parts: &Parts<'_>,
    eps: f32,
    tangents: &[Option<Array>],
    output: &Array,
) -> Result<Array> {
    let x = astype(parts.x, DType::Float32)?;
    let (n, r) = normalized(kind, &x, eps)?;
    let last: &[isize] = &[-1];
    let tangent_x = match tangents.first().cloned().flatten() {
        Some(t) => {
            let t = astype(&t, DType::Float32)?;
            let mut inner = subtract(
                &t,
                &multiply(&n, &mean(&multiply(&n, &t)?, Some(last), true)?)?,
            )?;
            if kind == Kind::Layer {
                inner = subtract(&inner, &mean(&t, Some(last), true)?)?;
            }
            let dn = multiply(&r, &inner)?;
            Some(match parts.weight {
                Some(w) => multiply(&dn, &astype(w, DType::Float32)?)?,
                None => dn,
            })
        }
        None => None,
    };
    let mut next = 1;
    let tangent_w = match parts.weight {
        Some(_) => {
            next += 1;
            tangents
                .get(1)
                .cloned()
                .flatten()
                .map(|t| multiply(&n, &astype(&t, DType::Float32)?))
                .transpose()?
        }
        None => None,
    };
    let tangent_b = match parts.bias {
        Some(_) => tangents
            .get(next)
            .cloned()
            .flatten()
            .map(|t| astype(&t, DType::Float32))
            .transpose()?,
        None => None,
    };
    match sum_terms([tangent_x, tangent_w, tangent_b])? {
        Some(t) => astype(&t, output.dtype()),
        None => crate::ops::creation::zeros_like(output),
    }
}

/// Batching: the batch axis of `x` goes to the front (the rows stay the
/// last axis); a batched weight or bias multiplies or adds afterwards.
fn vmap_rule(
    parts: &Parts<'_>,
    axes: &[Option<usize>],
    has_weight: bool,
    apply: impl Fn(&Array, Option<&Array>, Option<&Array>) -> Result<Array>,
) -> Result<(Array, Option<usize>)> {
    let x_ax = axes.first().copied().flatten();
    let w_ax = if has_weight {
        axes.get(1).copied().flatten()
    } else {
        None
    };
    let b_ax = if parts.bias.is_some() {
        axes.last().copied().flatten()
    } else {
        None
    };
    if x_ax.is_none() && w_ax.is_none() && b_ax.is_none() {
        return Ok((apply(parts.x, parts.weight, parts.bias)?, None));
    }
    let nb = [
        (x_ax, Some(parts.x)),
        (w_ax, parts.weight),
        (b_ax, parts.bias),
    ]
    .iter()
    .find_map(|(ax, a)| ax.zip(*a).map(|(ax, a)| a.shape()[ax]))
    .unwrap_or(1);
    // x as [nb, ..., D] (broadcast when unbatched).
    let x = match x_ax {
        Some(ax) => batch_front(parts.x, Some(ax))?,
        None => expand_dims(parts.x, &[0])?,
    };
    let rank = x.ndim();
    // A batched parameter [nb, D] viewed as [nb, 1, ..., 1, D].
    let as_rows = |p: &Array, ax: usize| -> Result<Array> {
        let p = batch_front(p, Some(ax))?;
        let mut shape = vec![nb as isize];
        shape.extend(std::iter::repeat_n(1, rank - 2));
        shape.push(p.shape()[1] as isize);
        reshape(&p, &shape)
    };
    let (w_inner, w_outer) = match (parts.weight, w_ax) {
        (Some(w), Some(ax)) => (None, Some(as_rows(w, ax)?)),
        (w, _) => (w.cloned(), None),
    };
    let (b_inner, b_outer) = match (parts.bias, b_ax) {
        (Some(b), Some(ax)) => (None, Some(as_rows(b, ax)?)),
        (b, _) => (b.cloned(), None),
    };
    let mut y = apply(
        &x,
        w_inner.as_ref(),
        if w_outer.is_some() {
            None
        } else {
            b_inner.as_ref()
        },
    )?;
    if let Some(w) = w_outer {
        y = multiply(&y, &w)?;
        if let Some(b) = &b_inner {
            y = add(&y, b)?;
        }
    }
    if let Some(b) = b_outer {
        y = add(&y, &b)?;
    }
    Ok((y, Some(0)))
}

impl Primitive for RmsNorm {
    fn name(&self) -> &'static str {
        "rms_norm"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        kernel::rms_norm(&inputs[0], inputs.get(1), self.eps, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        let parts = parts(self.name(), p, self.has_weight, false)?;
        vjp_rule(Kind::Rms, self.name(), &parts, self.eps, g, argnums)
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let parts = parts(self.name(), p, self.has_weight, false)?;
        jvp_rule(Kind::Rms, &parts, self.eps, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let parts = parts(self.name(), inputs, self.has_weight, false)?;
        vmap_rule(&parts, axes, self.has_weight, |x, w, _| {
            rms_norm(x, w, self.eps)
        })
    }
    crate::primitive_common!();
}

impl Primitive for LayerNorm {
    fn name(&self) -> &'static str {
        "layer_norm"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let weight = self.has_weight.then(|| &inputs[1]);
        let bias = self.has_bias.then(|| &inputs[inputs.len() - 1]);
        kernel::layer_norm(&inputs[0], weight, bias, self.eps, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        let parts = parts(self.name(), p, self.has_weight, self.has_bias)?;
        vjp_rule(Kind::Layer, self.name(), &parts, self.eps, g, argnums)
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let parts = parts(self.name(), p, self.has_weight, self.has_bias)?;
        jvp_rule(Kind::Layer, &parts, self.eps, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let parts = parts(self.name(), inputs, self.has_weight, self.has_bias)?;
        vmap_rule(&parts, axes, self.has_weight, |x, w, b| {
            layer_norm(x, w, b, self.eps)
        })
    }
    crate::primitive_common!();
}
