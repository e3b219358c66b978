//! Reverse mode: vjp, grad, value_and_grad.

use super::graph::trace_order;
use super::tracer::tracer;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::trace::{self, EndOnDrop, Trace, TraceKind};
use std::collections::HashMap;
use std::sync::Arc;

/// Vector-Jacobian product: runs `f` on `primals` and pulls `cotangents`
/// (one per output, same shapes) back to the primals. Returns
/// `(outputs, primal cotangents)`.
///
/// ```
/// use ferrox::*;
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let (out, ct) = vjp(|xs| Ok(vec![multiply(&xs[0], &xs[0])?]), &[x], &[ones(&[2], DType::Float32)?])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![1.0, 4.0]);
/// assert_eq!(ct[0].to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn vjp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    cotangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    let trace = Trace::new(TraceKind::Vjp);
    let _end = EndOnDrop(trace.clone());
    let tracers: Vec<Array> = primals.iter().map(|p| tracer(p, &trace)).collect();
    let outputs = f(&tracers)?;
    if outputs.len() != cotangents.len() {
        return Err(Error::value(
            "vjp",
            format!(
                "the function returned {} outputs but {} cotangents were given",
                outputs.len(),
                cotangents.len()
            ),
        ));
    }
    for (i, (o, c)) in outputs.iter().zip(cotangents).enumerate() {
        if o.shape() != c.shape() {
            return Err(Error::shape(
                "vjp",
                format!(
                    "output {i} has shape {:?} but its cotangent has shape {:?}",
                    o.shape(),
                    c.shape()
                ),
            ));
        }
    }
    let grads = backward(&trace, &tracers, &outputs, cotangents)?;
    Ok((outputs, grads))
}

/// Pulls `cotangents` of `outputs` back through the nodes of `trace` to
/// `tracers`. Primals the outputs do not depend on get zeros.
fn backward(
    trace: &Trace,
    tracers: &[Array],
    outputs: &[Array],
    cotangents: &[Array],
) -> Result<Vec<Array>> {
    let id = trace.id();
    let mut cots: HashMap<u64, Array> = HashMap::new();
    for (o, c) in outputs.iter().zip(cotangents) {
        if trace::contains(&o.0.traces, id) {
            accumulate(&mut cots, o.id(), c.astype(o.dtype())?)?;
        }
    }
    let tracer_ids: Vec<u64> = tracers.iter().map(|t| t.id()).collect();
    // Cotangents of a group node's outputs (see `crate::graph::outputs`),
    // gathered from its output nodes until the group node's turn.
    let mut group_cots: HashMap<u64, Vec<Option<Array>>> = HashMap::new();
    for node in trace_order(outputs, id).iter().rev() {
        if tracer_ids.contains(&node.id()) {
            continue; // a tracer's cotangent is the result; stop here
        }
        if let Some((group, index)) = node.output_of() {
            if let Some(ct) = cots.remove(&node.id()) {
                let n = group.output_specs().map_or(0, |s| s.len());
                let slots = group_cots
                    .entry(group.id())
                    .or_insert_with(|| vec![None; n]);
                // Two output nodes may name one output: their cotangents add.
                if let Some(slot) = slots.get_mut(index) {
                    *slot = Some(match slot.take() {
                        Some(prev) => crate::ops::binary::add(&prev, &ct)?,
                        None => ct,
                    });
                }
            }
            continue;
        }
        // A group node's rule takes one (optional) cotangent per output.
        let ct = match node.output_specs() {
            Some(_) => group_cots.remove(&node.id()).map(Cotangent::Several),
            None => cots.remove(&node.id()).map(Cotangent::One),
        };
        let (Some(ct), Some(op)) = (ct, node.primitive()) else {
            continue;
        };
        let inputs = node.inputs();
        let argnums: Vec<usize> = (0..inputs.len())
            .filter(|&i| trace::contains(&inputs[i].0.traces, id))
            .collect();
        if argnums.is_empty() {
            continue;
        }
        let grads = match ct {
            Cotangent::One(ct) => op.vjp(&inputs, &ct, node, &argnums)?,
            Cotangent::Several(slots) => {
                let siblings = node.group_outputs().unwrap_or_default();
                op.vjp_multi(&inputs, &slots, &siblings, &argnums)?
            }
        };
        if grads.len() != argnums.len() {
            return Err(Error::runtime(
                op.name(),
                "vjp rule returned the wrong number of cotangents",
            ));
        }
        for (g, &i) in grads.into_iter().zip(&argnums) {
            accumulate(&mut cots, inputs[i].id(), g)?;
        }
    }
    tracers
        .iter()
        .map(|t| match cots.remove(&t.id()) {
            Some(c) => c.astype(t.dtype()),
            None => crate::ops::creation::zeros_like(t),
        })
        .collect()
}

/// The cotangent a node's rule receives.
enum Cotangent {
    One(Array),
    Several(Vec<Option<Array>>),
}

fn accumulate(cots: &mut HashMap<u64, Array>, id: u64, g: Array) -> Result<()> {
    let summed = match cots.remove(&id) {
        Some(prev) => crate::ops::binary::add(&prev, &g)?,
        None => g,
    };
    cots.insert(id, summed);
    Ok(())
}

/// A function returning `(values, gradients)`.
pub type ValueAndGradFn = Arc<dyn Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>)> + Send + Sync>;

/// `f`'s outputs and the gradient of its first output (a scalar: one
/// element) with respect to the arguments at `argnums`. Further outputs are
/// auxiliary values, returned but not differentiated.
///
/// ```
/// use ferrox::*;
/// let vg = value_and_grad(|xs| Ok(vec![multiply(&xs[0], &xs[1])?]), &[0, 1]);
/// let (v, g) = vg(&[Array::from_slice(&[3.0f32], &[])?, Array::from_slice(&[4.0f32], &[])?])?;
/// assert_eq!(v[0].item::<f32>()?, 12.0);
/// assert_eq!((g[0].item::<f32>()?, g[1].item::<f32>()?), (4.0, 3.0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn value_and_grad(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    argnums: &[usize],
) -> impl Fn(&[Array]) -> Result<(Vec<Array>, Vec<Array>)> + Clone + Send + Sync + 'static {
    let argnums: Arc<[usize]> = argnums.into();
    let f = Arc::new(f);
    move |args: &[Array]| value_and_grad_call(&*f, &argnums, args)
}

fn value_and_grad_call(
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    argnums: &[usize],
    args: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    for &a in argnums {
        if a >= args.len() {
            return Err(Error::value(
                "grad",
                format!("argnum {a} is out of range for {} arguments", args.len()),
            ));
        }
    }
    if argnums.is_empty() {
        return Err(Error::value(
            "grad",
            "argnums must name at least one argument",
        ));
    }
    let trace = Trace::new(TraceKind::Vjp);
    let _end = EndOnDrop(trace.clone());
    let tracers: Vec<Array> = argnums.iter().map(|&i| tracer(&args[i], &trace)).collect();
    let mut full: Vec<Array> = args.to_vec();
    for (&i, t) in argnums.iter().zip(&tracers) {
        full[i] = t.clone();
    }
    let outs = f(&full)?;
    let Some(loss) = outs.first() else {
        return Err(Error::value("grad", "the function returned no outputs"));
    };
    if loss.size() != 1 {
        return Err(Error::shape(
            "grad",
            format!(
                "the function's first output must be a scalar, got shape {:?}",
                loss.shape()
            ),
        ));
    }
    let seed = crate::ops::creation::ones_like(loss)?;
    let grads = backward(&trace, &tracers, std::slice::from_ref(loss), &[seed])?;
    Ok((outs, grads))
}

/// The gradient of `f`'s first output (a scalar) with respect to the
/// arguments at `argnums`: one array per argnum.
///
/// ```
/// use ferrox::*;
/// let g = grad(|xs| Ok(vec![multiply(&xs[0], &xs[0])?]), &[0]);
/// assert_eq!(g(&[Array::from_slice(&[3.0f32], &[])?])?[0].item::<f32>()?, 6.0);
/// // Second derivative: grad of grad.
/// let gg = grad(g.clone(), &[0]);
/// assert_eq!(gg(&[Array::from_slice(&[3.0f32], &[])?])?[0].item::<f32>()?, 2.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn grad(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    argnums: &[usize],
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Clone + Send + Sync + 'static {
    let vg = value_and_grad(f, argnums);
    move |args: &[Array]| vg(args).map(|(_, g)| g)
}
