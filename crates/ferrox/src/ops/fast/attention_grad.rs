//! Attention's composed pieces: the reference forward (float64 inputs, and
//! what the tests compare the kernels with), the jvp, and the batching
//! helpers the vmap rules share.
//!
//! The jvp is composed of ops and so materialises the score matrix of
//! each head; the vjp (in `attention.rs`) does not.

use super::attention::ScaledDotProductAttention;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::primitive::no_rule;
use crate::ops::binary::{add, greater_equal, multiply, subtract};
use crate::ops::creation::{arange, full};
use crate::ops::grad_helpers::batch_front;
use crate::ops::join::{concatenate, repeat};
use crate::ops::matmul::matmul;
use crate::ops::reduce::sum;
use crate::ops::select::r#where;
use crate::ops::softmax::softmax;
use crate::ops::views::{broadcast_to, expand_dims, reshape, slice, swapaxes};

/// The parts of a forward node's inputs.
struct Inputs<'a> {
    q: &'a Array,
    k: &'a Array,
    v: &'a Array,
    mask: Option<&'a Array>,
    sinks: Option<&'a Array>,
}

fn split<'a>(op: &ScaledDotProductAttention, p: &'a [Array]) -> Inputs<'a> {
    Inputs {
        q: &p[0],
        k: &p[1],
        v: &p[2],
        mask: op.has_mask.then(|| &p[3]),
        sinks: op.has_sinks.then(|| &p[3 + usize::from(op.has_mask)]),
    }
}

/// `k` (or `v`) with each head repeated for the query heads it serves.
fn repeat_heads(x: &Array, nq: usize) -> Result<Array> {
    let n = x.shape()[1];
    if n == nq {
        Ok(x.clone())
    } else {
        repeat(x, nq / n, Some(1))
    }
}

/// The visibility of each score, when a boolean or causal mask applies.
fn visible(op: &ScaledDotProductAttention, i: &Inputs<'_>) -> Result<Option<Array>> {
    if op.causal {
        let (tq, tk) = (i.q.shape()[2] as f64, i.k.shape()[2] as f64);
        let rows = expand_dims(&arange(tk - tq, tk, 1.0, DType::Int32)?, &[1])?;
        let cols = expand_dims(&arange(0.0, tk, 1.0, DType::Int32)?, &[0])?;
        return Ok(Some(greater_equal(&rows, &cols)?));
    }
    Ok(i.mask.filter(|m| m.dtype() == DType::Bool).cloned())
}

/// Scores (masked, in the compute dtype) and the softmax probabilities
/// (without the sink column) of every head: `[B, N_q, T_q, T_kv]` each.
fn probabilities(
    op: &ScaledDotProductAttention,
    i: &Inputs<'_>,
    compute: DType,
) -> Result<(Array, Option<Array>)> {
    let nq = i.q.shape()[1];
    let q = i.q.astype(compute)?;
    let k = repeat_heads(&i.k.astype(compute)?, nq)?;
    let scale = Array::scalar(op.scale).astype(compute)?;
    let mut s = matmul(&multiply(&q, &scale)?, &swapaxes(&k, -1, -2)?)?;
    let vis = visible(op, i)?;
    if let Some(vis) = &vis {
        s = r#where(vis, &s, &full(&[], f32::MIN as f64, compute)?)?;
    } else if let Some(m) = i.mask {
        s = add(&s, &m.astype(compute)?)?;
    }
    let p = match i.sinks {
        Some(sinks) => {
            let sh = s.shape().to_vec();
            let col = broadcast_to(
                &reshape(&sinks.astype(compute)?, &[1, -1, 1, 1])?,
                &[sh[0], sh[1], sh[2], 1],
            )?;
            let p = softmax(&concatenate(&[col, s.clone()], -1)?, Some(&[-1]), true)?;
            let last = sh[3] as isize + 1;
            slice(
                &p,
                &[0, 0, 0, 1],
                &[sh[0] as isize, sh[1] as isize, sh[2] as isize, last],
                &[1, 1, 1, 1],
            )?
        }
        None => softmax(&s, Some(&[-1]), true)?,
    };
    Ok((p, vis))
}

/// The attention composed of ops.
pub(super) fn reference(op: &ScaledDotProductAttention, inputs: &[Array]) -> Result<Array> {
    let i = split(op, inputs);
    let dtype = i.q.dtype();
    let compute = if dtype == DType::Float64 {
        dtype
    } else {
        DType::Float32
    };
    let (p, _) = probabilities(op, &i, compute)?;
    let v = repeat_heads(&i.v.astype(compute)?, i.q.shape()[1])?;
    matmul(&p, &v)?.astype(dtype)
}

/// Forward-mode rule: with `P` the probabilities and `dS` the tangent of
/// the scores, `dO = (P ∘ (dS - sum(P ∘ dS))) v + P dv`.
pub(super) fn jvp(
    op: &ScaledDotProductAttention,
    p: &[Array],
    tangents: &[Option<Array>],
) -> Result<Array> {
    if tangents.iter().skip(3).any(Option::is_some) {
        return Err(no_rule(
            "scaled_dot_product_attention (mask or sinks)",
            "jvp",
        ));
    }
    let i = split(op, p);
    let dtype = i.q.dtype();
    let compute = if dtype == DType::Float64 {
        dtype
    } else {
        DType::Float32
    };
    let nq = i.q.shape()[1];
    let (probs, vis) = probabilities(op, &i, compute)?;
    let t = |n: usize| -> Result<Option<Array>> {
        tangents
            .get(n)
            .cloned()
            .flatten()
            .map(|t| t.astype(compute))
            .transpose()
    };
    let (tq, tk, tv) = (t(0)?, t(1)?, t(2)?);
    let scale = Array::scalar(op.scale).astype(compute)?;
    let mut ds: Option<Array> = None;
    if let Some(tq) = &tq {
        let k = repeat_heads(&i.k.astype(compute)?, nq)?;
        ds = Some(matmul(tq, &swapaxes(&k, -1, -2)?)?);
    }
    if let Some(tk) = &tk {
        let q = i.q.astype(compute)?;
        let term = matmul(&q, &swapaxes(&repeat_heads(tk, nq)?, -1, -2)?)?;
        ds = Some(match ds {
            Some(d) => add(&d, &term)?,
            None => term,
        });
    }
    let v = repeat_heads(&i.v.astype(compute)?, nq)?;
    let mut out: Option<Array> = None;
    if let Some(ds) = ds {
        let mut ds = multiply(&ds, &scale)?;
        if let Some(vis) = &vis {
            ds = r#where(vis, &ds, &full(&[], 0.0, compute)?)?;
        }
        let centred = subtract(&ds, &sum(&multiply(&probs, &ds)?, Some(&[-1]), true)?)?;
        out = Some(matmul(&multiply(&probs, &centred)?, &v)?);
    }
    if let Some(tv) = &tv {
        let term = matmul(&probs, &repeat_heads(tv, nq)?)?;
        out = Some(match out {
            Some(o) => add(&o, &term)?,
            None => term,
        });
    }
    match out {
        Some(o) => o.astype(dtype),
        None => {
            let (q, v) = (i.q.shape(), i.v.shape());
            full(&[q[0], q[1], q[2], v[3]], 0.0, dtype)
        }
    }
}

/// Folds a vmapped batch axis into the leading `B` axis of every
/// `[B, ...]` input (all but the mask and the sinks), broadcasting unbatched
/// ones; the mask is broadcast to match. Returns the inputs and the batch
/// size. Batched sinks are not supported.
pub(super) fn merge_batch(
    has_mask: bool,
    has_sinks: bool,
    lead: usize,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Vec<Array>, usize)> {
    let name = "scaled_dot_product_attention";
    let mask_at = has_mask.then_some(lead);
    let sinks_at = has_sinks.then_some(lead + usize::from(has_mask));
    if let Some(s) = sinks_at
        && axes.get(s).copied().flatten().is_some()
    {
        return Err(no_rule(
            "scaled_dot_product_attention (batched sinks)",
            "vmap",
        ));
    }
    let nb = inputs
        .iter()
        .zip(axes)
        .find_map(|(x, ax)| ax.map(|ax| x.shape()[ax]))
        .ok_or_else(|| Error::runtime(name, "internal error: vmap without a batched input"))?;
    // The per-example batch size `B`, read from q without its vmapped axis.
    let batch = match axes.first().copied().flatten() {
        Some(ax) => batch_front(&inputs[0], Some(ax))?.shape()[1],
        None => inputs[0].shape()[0],
    };
    let mut out = Vec::with_capacity(inputs.len());
    for (n, (x, ax)) in inputs.iter().zip(axes).enumerate() {
        if Some(n) == sinks_at {
            out.push(x.clone());
            continue;
        }
        if Some(n) == mask_at {
            out.push(merge_mask(x, *ax, nb, batch)?);
            continue;
        }
        let front = match ax {
            Some(ax) => batch_front(x, Some(*ax))?,
            None => {
                let mut shape = vec![nb];
                shape.extend_from_slice(x.shape());
                broadcast_to(&expand_dims(x, &[0])?, &shape)?
            }
        };
        let mut shape: Vec<isize> = vec![-1];
        shape.extend(front.shape()[2..].iter().map(|&d| d as isize));
        out.push(reshape(&front, &shape)?);
    }
    Ok((out, nb))
}

/// The mask for the merged `nb * B` batch: its per-example shape padded to
/// rank 4, broadcast over the vmapped axis and `B` only where it varies.
fn merge_mask(m: &Array, ax: Option<usize>, nb: usize, batch: usize) -> Result<Array> {
    let padded = |x: &Array, lead: usize| -> Result<Array> {
        // `lead` leading axes kept, the rest padded with 1s up to rank 4.
        let inner = x.ndim() - lead;
        let mut shape: Vec<isize> = x.shape()[..lead].iter().map(|&d| d as isize).collect();
        shape.extend(std::iter::repeat_n(1, 4 - inner));
        shape.extend(x.shape()[lead..].iter().map(|&d| d as isize));
        reshape(x, &shape)
    };
    let m5 = match ax {
        Some(ax) => padded(&batch_front(m, Some(ax))?, 1)?,
        None => {
            let m4 = padded(m, 0)?;
            if m4.shape()[0] == 1 {
                return Ok(m4);
            }
            expand_dims(&m4, &[0])?
        }
    };
    let mut target = m5.shape().to_vec();
    target[0] = nb;
    target[1] = batch;
    let full = broadcast_to(&m5, &target)?;
    let mut shape: Vec<isize> = vec![-1];
    shape.extend(full.shape()[2..].iter().map(|&d| d as isize));
    reshape(&full, &shape)
}

/// Splits the leading `nb * B` axis back into `[nb, B, ...]`.
pub(super) fn split_batch(x: &Array, nb: usize) -> Result<Array> {
    let mut shape = vec![nb as isize, -1];
    shape.extend(x.shape()[1..].iter().map(|&d| d as isize));
    reshape(x, &shape)
}
