//! `scaled_dot_product_attention`: one primitive with a tiled, fused
//! forward kernel and a fused backward primitive
//! ([`crate::backend::cpu::fast::attention`], `attention_backward`).
//!
//! Which path a call takes is decided from its inputs, never from the
//! calling thread or the process (DESIGN.md §2 item 6): when `q`, `k` or
//! `v` belong to a live reverse-mode trace the node also outputs each
//! row's softmax statistics, which the backward kernel uses to recompute
//! the probabilities tile by tile; otherwise it outputs the result alone.
//! A gradient on another thread cannot change what this call builds.

use super::attention_grad;
use crate::backend::cpu::fast::attention::{self as kernel, AttentionOperands, AttentionSpec};
use crate::backend::cpu::fast::attention_backward::{self as backward_kernel, AttentionSaved};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive, no_rule};
use crate::graph::trace::TraceKind;

const NAME: &str = "scaled_dot_product_attention";

/// The mask of an attention call.
#[derive(Debug, Clone, Copy)]
pub enum AttentionMask<'a> {
    /// Every query sees every key.
    None,
    /// Query `i` sees keys `j <= i + T_kv - T_q` (aligned lower-right, as
    /// when the queries are the last `T_q` positions of the keys).
    Causal,
    /// A boolean mask (`true`: visible) or an additive float mask,
    /// broadcastable to `[B, N_q, T_q, T_kv]`.
    Array(&'a Array),
}

/// The primitive of [`scaled_dot_product_attention`]; inputs
/// `[q, k, v, mask?, sinks?]`. With `training` it has two outputs: the
/// result and the per-row softmax statistics (`[B, N_q, T_q, 2]`,
/// float32) its vjp reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScaledDotProductAttention {
    /// Multiplies the queries.
    pub scale: f32,
    /// Whether the causal mask applies.
    pub causal: bool,
    /// Whether an array mask is the fourth input.
    pub has_mask: bool,
    /// Whether sinks are the last input.
    pub has_sinks: bool,
    /// Whether the statistics are a second output.
    pub training: bool,
}

impl crate::graph::export::Exportable for ScaledDotProductAttention {
    const KIND: &'static str = "scaled_dot_product_attention";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let op = "scaled_dot_product_attention";
        let [q, k, v] = match inputs.get(..3) {
            Some([q, k, v]) => [q, k, v],
            _ => return Err(crate::graph::export::wrong_inputs(op, inputs.len())),
        };
        let rest = &inputs[3..];
        let (mask, sinks) = match (self.has_mask, self.has_sinks, rest) {
            (false, false, []) => (None, None),
            (true, false, [m]) => (Some(m), None),
            (false, true, [s]) => (None, Some(s)),
            (true, true, [m, s]) => (Some(m), Some(s)),
            _ => return Err(crate::graph::export::wrong_inputs(op, inputs.len())),
        };
        let mask = match (mask, self.causal) {
            (Some(m), _) => AttentionMask::Array(m),
            (None, true) => AttentionMask::Causal,
            (None, false) => AttentionMask::None,
        };
        scaled_dot_product_attention(q, k, v, self.scale, mask, sinks)
    }
}

/// The backward primitive; inputs `[q, k, v, mask?, sinks?, out, stats,
/// cotangent]`, outputs `[dq, dk, dv]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaledDotProductAttentionVjp {
    /// As the forward node's.
    pub scale: f32,
    /// As the forward node's.
    pub causal: bool,
    /// As the forward node's.
    pub has_mask: bool,
    /// As the forward node's.
    pub has_sinks: bool,
}

/// Attention `softmax(scale * q k^T + mask) v` per head, as
/// `mlx.core.fast.scaled_dot_product_attention`.
///
/// `q` is `[B, N_q, T_q, D]`, `k` `[B, N_kv, T_kv, D]`, `v`
/// `[B, N_kv, T_kv, D_v]`, with `N_q` a multiple of `N_kv` (grouped-query
/// attention: query head `h` uses key/value head `h / (N_q / N_kv)`; the
/// keys are never repeated in memory). `sinks` (`[N_q]`) adds one logit per
/// head to each softmax's denominator. Boolean-masked scores become the
/// float32 minimum, as in MLX, so a fully masked row averages the values.
/// The softmax is accumulated in float32 for every input dtype; the result
/// has the promoted dtype of `q`, `k` and `v`. The `T_q x T_kv` score matrix
/// is never materialised, neither forward nor backward.
///
/// ```
/// use ferrox::*;
/// let q = ones(&[1, 2, 3, 4], DType::Float32)?;
/// let k = ones(&[1, 1, 5, 4], DType::Float32)?;
/// let v = ones(&[1, 1, 5, 4], DType::Float32)?;
/// let o = fast::scaled_dot_product_attention(&q, &k, &v, 0.5, fast::AttentionMask::Causal, None)?;
/// assert_eq!(o.shape(), &[1, 2, 3, 4]);
/// assert!(o.to_vec::<f32>()?.iter().all(|&x| (x - 1.0).abs() < 1e-6));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: AttentionMask<'_>,
    sinks: Option<&Array>,
) -> Result<Array> {
    let (inputs, op) = prepare(q, k, v, scale, mask, sinks)?;
    if inputs[0].dtype() == DType::Float64 {
        return attention_grad::reference(&op, &inputs);
    }
    let training = inputs[..3].iter().any(|x| x.is_traced(TraceKind::Vjp));
    Ok(build(ScaledDotProductAttention { training, ..op }, inputs)?.0)
}

/// Validates a call and returns the node's inputs (cast to the result
/// dtype) and its primitive (not yet training).
fn prepare(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: AttentionMask<'_>,
    sinks: Option<&Array>,
) -> Result<(Vec<Array>, ScaledDotProductAttention)> {
    for (what, x) in [("q", q), ("k", k), ("v", v)] {
        if x.ndim() != 4 {
            return Err(Error::shape(
                NAME,
                format!(
                    "{what} must have rank 4 ([B, heads, T, D]), got shape {:?}",
                    x.shape()
                ),
            ));
        }
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    if ks[0] != qs[0] || vs[0] != qs[0] {
        return Err(Error::shape(
            NAME,
            format!("batch sizes differ: q {qs:?}, k {ks:?}, v {vs:?}"),
        ));
    }
    if qs[3] != ks[3] {
        return Err(Error::shape(
            NAME,
            format!("q and k must have the same last dimension, got q {qs:?} and k {ks:?}"),
        ));
    }
    if ks[1] != vs[1] || ks[2] != vs[2] {
        return Err(Error::shape(
            NAME,
            format!("k and v must have the same heads and length, got k {ks:?} and v {vs:?}"),
        ));
    }
    if ks[1] == 0 || qs[1] % ks[1] != 0 {
        return Err(Error::shape(
            NAME,
            format!(
                "the query heads ({}) must be a multiple of the key/value heads ({})",
                qs[1], ks[1]
            ),
        ));
    }
    let dtype = DType::promote(DType::promote(q.dtype(), k.dtype()), v.dtype());
    if !dtype.is_float() {
        return Err(Error::dtype(
            NAME,
            format!(
                "q, k and v must be floats, got {}, {} and {}",
                q.dtype(),
                k.dtype(),
                v.dtype()
            ),
        ));
    }
    let mut inputs = vec![q.astype(dtype)?, k.astype(dtype)?, v.astype(dtype)?];
    let full = [qs[0], qs[1], qs[2], ks[2]];
    let (causal, has_mask) = match mask {
        AttentionMask::None => (false, false),
        AttentionMask::Causal => (true, false),
        AttentionMask::Array(m) => {
            check_mask(m, full, dtype)?;
            let m = if m.dtype() == DType::Bool {
                m.clone()
            } else {
                m.astype(dtype)?
            };
            inputs.push(m);
            (false, true)
        }
    };
    if let Some(s) = sinks {
        if s.ndim() != 1 || s.shape()[0] != qs[1] {
            return Err(Error::shape(
                NAME,
                format!(
                    "sinks must have shape [{}] (one per query head), got {:?}",
                    qs[1],
                    s.shape()
                ),
            ));
        }
        if DType::promote(s.dtype(), dtype) != dtype {
            return Err(Error::dtype(
                NAME,
                format!(
                    "sinks of dtype {} do not promote to the result dtype {dtype}",
                    s.dtype()
                ),
            ));
        }
        inputs.push(s.astype(dtype)?);
    }
    let op = ScaledDotProductAttention {
        scale,
        causal,
        has_mask,
        has_sinks: sinks.is_some(),
        training: false,
    };
    Ok((inputs, op))
}

fn check_mask(m: &Array, full: [usize; 4], dtype: DType) -> Result<()> {
    if m.ndim() > 4 {
        return Err(Error::shape(
            NAME,
            format!(
                "the mask must have at most 4 dimensions, got shape {:?}",
                m.shape()
            ),
        ));
    }
    let lead = 4 - m.ndim();
    if m.shape()
        .iter()
        .enumerate()
        .any(|(i, &d)| d != 1 && d != full[lead + i])
    {
        return Err(Error::shape(
            NAME,
            format!(
                "a mask of shape {:?} does not broadcast to [B, N_q, T_q, T_kv] = {full:?}",
                m.shape()
            ),
        ));
    }
    if m.dtype() != DType::Bool && DType::promote(m.dtype(), dtype) != dtype {
        return Err(Error::dtype(
            NAME,
            format!(
                "an additive mask of dtype {} does not promote to the result dtype {dtype}",
                m.dtype()
            ),
        ));
    }
    Ok(())
}

/// Builds the forward node: the result, and the statistics when training.
pub(super) fn build(
    op: ScaledDotProductAttention,
    inputs: Vec<Array>,
) -> Result<(Array, Option<Array>)> {
    let (q, v) = (inputs[0].shape(), inputs[2].shape());
    let out_shape = vec![q[0], q[1], q[2], v[3]];
    let dtype = inputs[0].dtype();
    if !op.training {
        return Ok((Array::from_op(out_shape, dtype, op, inputs), None));
    }
    let stats_shape = vec![q[0], q[1], q[2], 2];
    let mut outs = Array::from_op_multi(
        vec![(out_shape, dtype), (stats_shape, DType::Float32)],
        op,
        inputs,
    )
    .into_iter();
    match (outs.next(), outs.next()) {
        (Some(o), Some(s)) => Ok((o, Some(s))),
        _ => Err(Error::runtime(NAME, "internal error: outputs missing")),
    }
}

impl ScaledDotProductAttention {
    fn spec(&self) -> AttentionSpec {
        AttentionSpec {
            scale: self.scale,
            causal: self.causal,
        }
    }

    fn run(
        &self,
        inputs: &[Operand<'_>],
        out: OutSpec<'_>,
        stats: Option<OutSpec<'_>>,
    ) -> Result<Vec<Data>> {
        let ops = operands(inputs, self.has_mask, self.has_sinks)?;
        kernel::forward(&ops, self.spec(), out, stats)
    }

    /// The cotangents of `q`, `k`, `v` (picked by `argnums`) from the
    /// forward result, its statistics and the result's cotangent.
    fn backward(
        &self,
        primals: &[Array],
        out: &Array,
        stats: &Array,
        g: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        if let Some(&bad) = argnums.iter().find(|&&i| i >= 3) {
            let what = if self.has_mask && bad == 3 {
                "the mask"
            } else {
                "the sinks"
            };
            return Err(Error::unsupported(
                NAME,
                format!("no vjp with respect to {what}; only q, k and v are differentiable"),
            ));
        }
        let op = ScaledDotProductAttentionVjp {
            scale: self.scale,
            causal: self.causal,
            has_mask: self.has_mask,
            has_sinks: self.has_sinks,
        };
        let specs = primals[..3]
            .iter()
            .map(|p| (p.shape().to_vec(), p.dtype()))
            .collect();
        let mut inputs = primals.to_vec();
        inputs.extend([out.clone(), stats.clone(), g.astype(out.dtype())?]);
        let grads = Array::from_op_multi(specs, op, inputs);
        argnums
            .iter()
            .map(|&i| {
                grads
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Error::runtime(NAME, "internal error: gradient missing"))
            })
            .collect()
    }
}

/// Splits a node's evaluated inputs into the kernel's operands.
fn operands<'a>(
    inputs: &'a [Operand<'a>],
    has_mask: bool,
    has_sinks: bool,
) -> Result<AttentionOperands<'a>> {
    let want = 3 + usize::from(has_mask) + usize::from(has_sinks);
    if inputs.len() < want {
        return Err(Error::runtime(
            NAME,
            format!("internal error: {} inputs, expected {want}", inputs.len()),
        ));
    }
    Ok(AttentionOperands {
        q: &inputs[0],
        k: &inputs[1],
        v: &inputs[2],
        mask: has_mask.then(|| &inputs[3]),
        sinks: has_sinks.then(|| &inputs[3 + usize::from(has_mask)]),
    })
}

impl Primitive for ScaledDotProductAttention {
    fn name(&self) -> &'static str {
        NAME
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        if self.training {
            return Err(not_single(self.name()));
        }
        self.run(inputs, out, None)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::runtime(NAME, "internal error: no output"))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let [out, stats] = outs else {
            return Err(Error::runtime(
                NAME,
                format!("internal error: {} outputs", outs.len()),
            ));
        };
        self.run(inputs, *out, Some(*stats))
    }
    fn output_shape(&self, s: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let (q, v) = (s.first()?, s.get(2)?);
        (q.len() == 4 && v.len() == 4).then(|| Ok(vec![q[0], q[1], q[2], v[3]]))
    }
    fn output_shapes(&self, s: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let (q, v) = (s.first()?, s.get(2)?);
        (q.len() == 4 && v.len() == 4).then(|| {
            Ok(vec![
                vec![q[0], q[1], q[2], v[3]],
                vec![q[0], q[1], q[2], 2],
            ])
        })
    }
    /// A node built outside a gradient has no statistics: the forward pass
    /// runs again with them (a second forward, still no score matrix).
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        let (out, stats) = build(
            ScaledDotProductAttention {
                training: true,
                ..self.clone()
            },
            p.to_vec(),
        )?;
        let stats = stats.ok_or_else(|| Error::runtime(NAME, "internal error: no statistics"))?;
        self.backward(p, &out, &stats, g, argnums)
    }
    fn vjp_multi(
        &self,
        primals: &[Array],
        cotangents: &[Option<Array>],
        outputs: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let [out, stats] = outputs else {
            return Err(Error::runtime(NAME, "internal error: outputs missing"));
        };
        match cotangents.first().cloned().flatten() {
            Some(g) => self.backward(primals, out, stats, &g, argnums),
            None => argnums
                .iter()
                .map(|&i| crate::ops::creation::zeros_like(&primals[i]))
                .collect(),
        }
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], _output: &Array) -> Result<Array> {
        attention_grad::jvp(self, p, tangents)
    }
    fn jvp_multi(
        &self,
        primals: &[Array],
        tangents: &[Option<Array>],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        let t = attention_grad::jvp(self, primals, tangents)?;
        let zero = crate::ops::creation::zeros_like(&outputs[1])?;
        Ok(vec![t, zero])
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (merged, nb) =
            attention_grad::merge_batch(self.has_mask, self.has_sinks, 3, inputs, axes)?;
        let (o, _) = build(
            ScaledDotProductAttention {
                training: false,
                ..self.clone()
            },
            merged,
        )?;
        Ok((attention_grad::split_batch(&o, nb)?, Some(0)))
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        let (merged, nb) =
            attention_grad::merge_batch(self.has_mask, self.has_sinks, 3, inputs, axes)?;
        let (o, s) = build(
            ScaledDotProductAttention {
                training: true,
                ..self.clone()
            },
            merged,
        )?;
        let s = s.ok_or_else(|| Error::runtime(NAME, "internal error: no statistics"))?;
        Ok(vec![
            (attention_grad::split_batch(&o, nb)?, Some(0)),
            (attention_grad::split_batch(&s, nb)?, Some(0)),
        ])
    }
    crate::primitive_common!();
}

impl Primitive for ScaledDotProductAttentionVjp {
    fn name(&self) -> &'static str {
        "scaled_dot_product_attention_vjp"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let (&[sq, sk, sv], n) = (outs, inputs.len()) else {
            return Err(Error::runtime(
                self.name(),
                "internal error: expected 3 outputs",
            ));
        };
        if n < 6 {
            return Err(Error::runtime(
                self.name(),
                format!("internal error: {n} inputs"),
            ));
        }
        let ops = operands(&inputs[..n - 3], self.has_mask, self.has_sinks)?;
        let saved = AttentionSaved {
            out: &inputs[n - 3],
            stats: &inputs[n - 2],
            cotangent: &inputs[n - 1],
        };
        let spec = AttentionSpec {
            scale: self.scale,
            causal: self.causal,
        };
        backward_kernel::backward(&ops, &saved, spec, [sq, sk, sv])
    }
    fn output_shapes(&self, s: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        Some(Ok(s.get(..3)?.iter().map(|x| x.to_vec()).collect()))
    }
    fn vjp_multi(
        &self,
        _primals: &[Array],
        _cotangents: &[Option<Array>],
        _outputs: &[Array],
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Err(no_rule(
            "scaled_dot_product_attention (second derivative)",
            "vjp",
        ))
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        // q, k, v, then the optional mask and sinks, then out, stats and
        // the cotangent: all but the mask and sinks are [B, ...] arrays.
        let (merged, nb) =
            attention_grad::merge_batch(self.has_mask, self.has_sinks, 3, inputs, axes)?;
        let specs = merged[..3]
            .iter()
            .map(|p| (p.shape().to_vec(), p.dtype()))
            .collect();
        let grads = Array::from_op_multi(specs, self.clone(), merged);
        grads
            .iter()
            .map(|g| Ok((attention_grad::split_batch(g, nb)?, Some(0))))
            .collect()
    }
    crate::primitive_common!();
}
