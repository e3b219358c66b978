//! `custom_function` (user-supplied vjp/jvp/vmap rules) and `checkpoint`
//! (recompute in the backward pass).
//!
//! Called on arrays no transform is tracing, a custom function is just its
//! function. Under a transform, the function runs on copies of the inputs
//! that differentiating traces do not follow, and each output becomes a
//! [`CustomOutput`] node whose inputs are the primals (then the computed
//! outputs, whose values it forwards). Differentiation therefore never
//! walks into the function's own graph: it applies the user's rule, or,
//! without one, differentiates the function again from its inputs — which
//! is exactly `checkpoint`: no intermediate of the forward pass is kept for
//! the backward pass. vmap and compile traces do follow the copies, so
//! batching and taping see the whole computation.

use super::tracer::Identity;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::trace::TraceSet;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

type Body = dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync;
/// `(primals, output cotangents, outputs) -> primal cotangents`.
pub type VjpRule = Arc<dyn Fn(&[Array], &[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync>;
/// `(primals, primal tangents) -> output tangents`.
pub type JvpRule = Arc<dyn Fn(&[Array], &[Array]) -> Result<Vec<Array>> + Send + Sync>;
/// `(inputs, batch axes) -> (outputs, output batch axes)`.
pub type VmapRule = Arc<
    dyn Fn(&[Array], &[Option<usize>]) -> Result<(Vec<Array>, Vec<Option<usize>>)> + Send + Sync,
>;

/// A function with optional custom transform rules (MLX's
/// `custom_function`). Rules not given are derived from the function.
///
/// ```
/// use ferrox::*;
/// use std::sync::Arc;
/// // exp with a (deliberately different) custom gradient: 2 * cotangent.
/// let f = custom_function(|xs: &[Array]| Ok(vec![exp(&xs[0])?]))
///     .with_vjp(Arc::new(|_p: &[Array], ct: &[Array], _o: &[Array]| Ok(vec![(&ct[0] * 2.0)?])));
/// let x = Array::from_slice(&[0.0f32, 1.0], &[2])?;
/// let (_, ct) = vjp(f.as_fn(), &[x.clone()], &[ones(&[2], DType::Float32)?])?;
/// assert_eq!(ct[0].to_vec::<f32>()?, vec![2.0, 2.0]);
/// assert_eq!(f.call(&[x])?[0].to_vec::<f32>()?, vec![1.0, 1.0f32.exp()]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone)]
pub struct CustomFunction {
    body: Arc<Body>,
    vjp: Option<VjpRule>,
    jvp: Option<JvpRule>,
    vmap: Option<VmapRule>,
}

/// Wraps `f` so that transform rules can be attached to it.
pub fn custom_function(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
) -> CustomFunction {
    CustomFunction {
        body: Arc::new(f),
        vjp: None,
        jvp: None,
        vmap: None,
    }
}

/// `f`, recomputed in the backward pass instead of keeping its
/// intermediates alive between the forward and the backward pass.
///
/// ```
/// use ferrox::*;
/// let f = |xs: &[Array]| Ok(vec![sum(&tanh(&xs[0])?, None, false)?]);
/// let x = Array::from_slice(&[0.5f64, -1.0], &[2])?;
/// let plain = grad(f, &[0])(&[x.clone()])?;
/// let recomputed = grad(checkpoint(f), &[0])(&[x])?;
/// assert_eq!(plain[0].to_vec::<f64>()?, recomputed[0].to_vec::<f64>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn checkpoint(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Clone + Send + Sync + 'static {
    custom_function(f).as_fn()
}

impl CustomFunction {
    /// Uses `rule` for reverse mode: `(primals, cotangents, outputs)` to
    /// one cotangent per primal.
    pub fn with_vjp(mut self, rule: VjpRule) -> Self {
        self.vjp = Some(rule);
        self
    }
    /// Uses `rule` for forward mode: `(primals, tangents)` to one tangent
    /// per output.
    pub fn with_jvp(mut self, rule: JvpRule) -> Self {
        self.jvp = Some(rule);
        self
    }
    /// Uses `rule` for vmap: `(inputs, batch axes)` to the outputs and
    /// their batch axes.
    pub fn with_vmap(mut self, rule: VmapRule) -> Self {
        self.vmap = Some(rule);
        self
    }

    /// The function as a closure, to pass to transforms.
    pub fn as_fn(
        &self,
    ) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Clone + Send + Sync + 'static + use<> {
        let me = self.clone();
        move |xs: &[Array]| me.call(xs)
    }

    /// Calls the function.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        if !args.iter().any(|a| a.0.in_live_trace()) {
            return (self.body)(args);
        }
        let cut: Vec<Array> = args.iter().map(undifferentiated).collect();
        let values = (self.body)(&cut)?;
        let call = Arc::new(Call {
            f: self.clone(),
            primals: args.len(),
            outputs: values.len(),
        });
        let mut inputs = args.to_vec();
        inputs.extend(values.iter().cloned());
        Ok(values
            .iter()
            .enumerate()
            .map(|(index, v)| {
                let op = CustomOutput {
                    call: call.clone(),
                    index,
                };
                Array::from_op_arc(v.shape().to_vec(), v.dtype(), Arc::new(op), inputs.clone())
            })
            .collect())
    }
}

/// A view of `a` that differentiating traces do not follow (vmap and
/// compile traces still do).
fn undifferentiated(a: &Array) -> Array {
    let kept: Vec<_> =
        a.0.traces
            .iter()
            .flat_map(|set| set.iter())
            .filter(|t| !t.kind().differentiates())
            .cloned()
            .collect();
    let traces: TraceSet = (!kept.is_empty()).then(|| Arc::from(kept));
    Array::build(
        a.shape().to_vec(),
        a.dtype(),
        Arc::new(Identity),
        vec![a.clone()],
        traces,
    )
}

/// One invocation of a custom function, shared by its output nodes.
struct Call {
    f: CustomFunction,
    primals: usize,
    outputs: usize,
}

/// Output `index` of a custom function call. Inputs: the primals, then
/// every computed output; its value is that of computed output `index`.
#[derive(Clone)]
pub struct CustomOutput {
    call: Arc<Call>,
    index: usize,
}

impl fmt::Debug for CustomOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomOutput({} of {})", self.index, self.call.outputs)
    }
}

impl CustomOutput {
    fn split<'a>(&self, inputs: &'a [Array]) -> (&'a [Array], &'a [Array]) {
        inputs.split_at(self.call.primals.min(inputs.len()))
    }
}

impl Primitive for CustomOutput {
    fn name(&self) -> &'static str {
        "custom_function"
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        inputs
            .get(self.call.primals + self.index)
            .map(|x| x.data.clone())
            .ok_or_else(|| Error::runtime("custom_function", "internal error: missing output"))
    }

    fn vjp(
        &self,
        inputs: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (primals, outputs) = self.split(inputs);
        // The rule sees every output's cotangent; this node contributes
        // its own (the others' nodes add theirs: vjp is linear in them).
        let cotangents = outputs
            .iter()
            .enumerate()
            .map(|(j, o)| {
                if j == self.index {
                    Ok(cotangent.clone())
                } else {
                    crate::ops::creation::zeros_like(o)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let grads = match &self.call.f.vjp {
            Some(rule) => rule(primals, &cotangents, outputs)?,
            None => {
                let body = self.call.f.body.clone();
                crate::transforms::vjp::vjp(|xs| body(xs), primals, &cotangents)?.1
            }
        };
        if grads.len() != primals.len() {
            return Err(Error::value(
                "custom_function",
                format!(
                    "the vjp rule returned {} cotangents for {} primals",
                    grads.len(),
                    primals.len()
                ),
            ));
        }
        argnums
            .iter()
            .map(|&i| match grads.get(i) {
                Some(g) => Ok(g.clone()),
                None => crate::ops::creation::zeros_like(&inputs[i]),
            })
            .collect()
    }

    fn jvp(&self, inputs: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let (primals, _) = self.split(inputs);
        let tangents = primals
            .iter()
            .zip(tangents)
            .map(|(p, t)| match t {
                Some(t) => Ok(t.clone()),
                None => crate::ops::creation::zeros_like(p),
            })
            .collect::<Result<Vec<_>>>()?;
        let outs = match &self.call.f.jvp {
            Some(rule) => rule(primals, &tangents)?,
            None => {
                let body = self.call.f.body.clone();
                crate::transforms::jvp::jvp(|xs| body(xs), primals, &tangents)?.1
            }
        };
        match outs.into_iter().nth(self.index) {
            Some(t) => Ok(t),
            None => crate::ops::creation::zeros_like(output),
        }
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (primals, _) = self.split(inputs);
        let axes = &axes[..primals.len()];
        let missing = || Error::value("custom_function", "the vmap rule returned too few outputs");
        if let Some(rule) = &self.call.f.vmap {
            let (outs, out_axes) = rule(primals, axes)?;
            let out = outs.into_iter().nth(self.index).ok_or_else(missing)?;
            return Ok((out, out_axes.get(self.index).copied().flatten()));
        }
        if axes.iter().all(Option::is_none) {
            let out = (self.call.f.body)(primals)?;
            return Ok((out.into_iter().nth(self.index).ok_or_else(missing)?, None));
        }
        let in_axes: Vec<Option<isize>> = axes.iter().map(|a| a.map(|a| a as isize)).collect();
        let out_axes = vec![Some(0); self.call.outputs];
        let body = self.call.f.body.clone();
        let outs = super::vmap::vmap(move |xs| body(xs), &in_axes, &out_axes)(primals)?;
        Ok((
            outs.into_iter().nth(self.index).ok_or_else(missing)?,
            Some(0),
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn is_equivalent(&self, other: &dyn Primitive) -> bool {
        other
            .as_any()
            .downcast_ref::<CustomOutput>()
            .is_some_and(|o| Arc::ptr_eq(&o.call, &self.call) && o.index == self.index)
    }
}
