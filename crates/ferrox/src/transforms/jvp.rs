//! Forward mode: jvp.

use super::graph::trace_order;
use super::tracer::tracer;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::trace::{self, EndOnDrop, Trace, TraceKind};
use std::collections::HashMap;

/// Jacobian-vector product: runs `f` on `primals` and pushes `tangents`
/// (one per primal, same shapes) forward. Returns `(outputs, output tangents)`.
///
/// ```
/// use ferrox::*;
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let (out, t) = jvp(|xs| Ok(vec![multiply(&xs[0], &xs[0])?]), &[x], &[ones(&[2], DType::Float32)?])?;
/// assert_eq!(t[0].to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn jvp(
    f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    primals: &[Array],
    tangents: &[Array],
) -> Result<(Vec<Array>, Vec<Array>)> {
    if primals.len() != tangents.len() {
        return Err(Error::value(
            "jvp",
            format!("{} primals but {} tangents", primals.len(), tangents.len()),
        ));
    }
    for (i, (p, t)) in primals.iter().zip(tangents).enumerate() {
        if p.shape() != t.shape() {
            return Err(Error::shape(
                "jvp",
                format!(
                    "primal {i} has shape {:?} but its tangent has shape {:?}",
                    p.shape(),
                    t.shape()
                ),
            ));
        }
    }
    let trace = Trace::new(TraceKind::Jvp);
    let _end = EndOnDrop(trace.clone());
    let tracers: Vec<Array> = primals.iter().map(|p| tracer(p, &trace)).collect();
    let outputs = f(&tracers)?;
    let id = trace.id();
    let mut tans: HashMap<u64, Array> = HashMap::new();
    for (t, tan) in tracers.iter().zip(tangents) {
        tans.insert(t.id(), tan.astype(t.dtype())?);
    }
    // The tangents of a group node's outputs (see `crate::graph::outputs`).
    let mut group_tans: HashMap<u64, Vec<Array>> = HashMap::new();
    for node in trace_order(&outputs, id) {
        if tans.contains_key(&node.id()) {
            continue;
        }
        if let Some((group, index)) = node.output_of() {
            if let Some(t) = group_tans.get(&group.id()).and_then(|ts| ts.get(index)) {
                tans.insert(node.id(), t.clone());
            }
            continue;
        }
        let Some(op) = node.primitive() else { continue };
        let inputs = node.inputs();
        let in_tans: Vec<Option<Array>> =
            inputs.iter().map(|i| tans.get(&i.id()).cloned()).collect();
        if in_tans.iter().all(Option::is_none) {
            continue;
        }
        if let Some(siblings) = node.group_outputs() {
            let ts = op.jvp_multi(&inputs, &in_tans, &siblings)?;
            if ts.len() != siblings.len() {
                return Err(Error::runtime(
                    op.name(),
                    "jvp rule returned the wrong number of tangents",
                ));
            }
            group_tans.insert(node.id(), ts);
            continue;
        }
        let t = op.jvp(&inputs, &in_tans, &node)?;
        tans.insert(node.id(), t);
    }
    let out_tans = outputs
        .iter()
        .map(|o| match tans.get(&o.id()) {
            Some(t) if trace::contains(&o.0.traces, id) => Ok(t.clone()),
            _ => crate::ops::creation::zeros_like(o),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outputs, out_tans))
}
