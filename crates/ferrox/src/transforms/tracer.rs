//! The nodes transforms insert: tracers, vmap placeholders, stop_gradient.

use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::trace::{self, Trace, TraceSet};
use std::sync::Arc;

/// The identity: its output is its input (a view of the same data).
#[derive(Debug, Clone, PartialEq)]
pub struct Identity;

impl Primitive for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Ok(inputs[0].data.clone())
    }
    fn vjp(
        &self,
        _p: &[Array],
        cotangent: &Array,
        _o: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Ok(vec![cotangent.clone()])
    }
    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => Ok(t.clone()),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((inputs[0].clone(), axes[0]))
    }
    crate::primitive_common!();
}

/// A node that also belongs to `trace`: the transform's view of `primal`.
pub(crate) fn tracer(primal: &Array, trace: &Trace) -> Array {
    let mut set: Vec<Trace> = primal.0.traces.as_deref().unwrap_or(&[]).to_vec();
    set.push(trace.clone());
    let traces = trace::union(std::iter::once(&Some(Arc::from(set))));
    Array::build(
        primal.shape().to_vec(),
        primal.dtype(),
        Arc::new(Identity),
        vec![primal.clone()],
        traces,
    )
}

/// Stands for an input of a function being traced by `vmap` (one example
/// of a batch) or `compile` (any call); it has no value.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholder {
    /// The transform that traces ("vmap", "compile").
    pub transform: &'static str,
}

impl Primitive for Placeholder {
    fn name(&self) -> &'static str {
        "placeholder"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(Error::unsupported(
            self.transform,
            "cannot evaluate an array that depends on the function's inputs while the function is traced",
        ))
    }
    crate::primitive_common!();
}

pub(crate) fn placeholder(shape: Vec<usize>, dtype: crate::dtype::DType, trace: &Trace) -> Array {
    let transform = match trace.kind() {
        super::TraceKind::Compile => "compile",
        _ => "vmap",
    };
    let traces: TraceSet = Some(Arc::from(vec![trace.clone()]));
    Array::build(
        shape,
        dtype,
        Arc::new(Placeholder { transform }),
        vec![],
        traces,
    )
}

/// Identity whose output is not differentiated through.
#[derive(Debug, Clone, PartialEq)]
pub struct StopGradient;

impl Primitive for StopGradient {
    fn name(&self) -> &'static str {
        "stop_gradient"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Ok(inputs[0].data.clone())
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((stop_gradient(&inputs[0])?, axes[0]))
    }
    crate::primitive_common!();
}

/// `a` with its derivative cut: gradients do not flow through it. It still
/// takes part in vmap and compile.
///
/// ```
/// use ferrox::*;
/// let g = grad(|xs| Ok(vec![multiply(&xs[0], &stop_gradient(&xs[0])?)?]), &[0]);
/// let x = Array::from_slice(&[3.0f32], &[])?;
/// assert_eq!(g(&[x])?[0].item::<f32>()?, 3.0); // d/dx x*c = c
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn stop_gradient(a: &Array) -> Result<Array> {
    let kept: Vec<Trace> =
        a.0.traces
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .filter(|t| !t.kind().differentiates())
            .cloned()
            .collect();
    let traces = trace::union(std::iter::once(&Some(Arc::from(kept))));
    Ok(Array::build(
        a.shape().to_vec(),
        a.dtype(),
        Arc::new(StopGradient),
        vec![a.clone()],
        traces,
    ))
}
