//! Vectorisation: vmap.
//!
//! The function is traced once on placeholders shaped like one example;
//! the traced graph is then replayed on the real batched inputs with each
//! primitive's batching rule, which also says where the batch axis of its
//! output lies.

use super::graph::trace_order;
use super::tracer::placeholder;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::trace::{EndOnDrop, Trace, TraceKind};
use crate::ops::shape_rules::normalize_axis;
use std::collections::HashMap;
use std::sync::Arc;

/// Vectorises `f` over a batch axis of its inputs.
///
/// `in_axes[i]` is the batch axis of argument `i` (`None`: not batched,
/// shared by every example); `out_axes[j]` is where output `j` gets its
/// batch axis (`None`: the output must not depend on the batch); a single
/// entry applies to every output. Negative axes count from the end.
///
/// ```
/// use ferrox::*;
/// // Row-wise dot products of two (3, 2) matrices.
/// let f = vmap(|xs| Ok(vec![sum(&multiply(&xs[0], &xs[1])?, None, false)?]), &[Some(0), Some(0)], &[Some(0)]);
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?;
/// assert_eq!(f(&[a.clone(), a])?[0].to_vec::<f32>()?, vec![5.0, 25.0, 61.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn vmap(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
    in_axes: &[Option<isize>],
    out_axes: &[Option<isize>],
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Clone + Send + Sync + 'static {
    let (in_axes, out_axes) = (Arc::new(in_axes.to_vec()), Arc::new(out_axes.to_vec()));
    let f = Arc::new(f);
    move |args: &[Array]| vmap_call(&*f, &in_axes, &out_axes, args)
}

fn vmap_call(
    f: &dyn Fn(&[Array]) -> Result<Vec<Array>>,
    in_axes: &[Option<isize>],
    out_axes: &[Option<isize>],
    args: &[Array],
) -> Result<Vec<Array>> {
    if in_axes.len() != args.len() {
        return Err(Error::value(
            "vmap",
            format!("{} in_axes for {} arguments", in_axes.len(), args.len()),
        ));
    }
    let mut batch: Option<usize> = None;
    let mut axes = Vec::with_capacity(args.len());
    for (i, (a, ax)) in args.iter().zip(in_axes).enumerate() {
        let ax = match ax {
            Some(ax) => Some(normalize_axis("vmap", *ax, a.ndim())?),
            None => None,
        };
        if let Some(ax) = ax {
            let n = a.shape()[ax];
            match batch {
                Some(b) if b != n => {
                    return Err(Error::shape(
                        "vmap",
                        format!("argument {i} has batch size {n} along axis {ax}, others have {b}"),
                    ));
                }
                _ => batch = Some(n),
            }
        }
        axes.push(ax);
    }
    let Some(batch) = batch else {
        return Err(Error::value(
            "vmap",
            "at least one argument must have a batch axis",
        ));
    };
    let trace = Trace::new(TraceKind::Vmap);
    let _end = EndOnDrop(trace.clone());
    let mut mapped: HashMap<u64, (Array, Option<usize>)> = HashMap::new();
    let mut example_args = Vec::with_capacity(args.len());
    for (a, ax) in args.iter().zip(&axes) {
        match ax {
            Some(ax) => {
                let mut shape = a.shape().to_vec();
                shape.remove(*ax);
                let p = placeholder(shape, a.dtype(), &trace);
                mapped.insert(p.id(), (a.clone(), Some(*ax)));
                example_args.push(p);
            }
            None => example_args.push(a.clone()),
        }
    }
    let outputs = f(&example_args)?;
    // One entry applies to every output (callers that do not know the
    // output count up front pass one).
    let every = out_axes.len() == 1 && outputs.len() != 1;
    let out_axes: Vec<Option<isize>> = if every {
        vec![out_axes[0]; outputs.len()]
    } else {
        out_axes.to_vec()
    };
    let out_axes = out_axes.as_slice();
    if outputs.len() != out_axes.len() {
        return Err(Error::value(
            "vmap",
            format!(
                "the function returned {} outputs but {} out_axes were given",
                outputs.len(),
                out_axes.len()
            ),
        ));
    }
    // The batched outputs of a group node (see `crate::graph::outputs`).
    let mut group_mapped: HashMap<u64, Vec<(Array, Option<usize>)>> = HashMap::new();
    for node in trace_order(&outputs, trace.id()) {
        if mapped.contains_key(&node.id()) {
            continue;
        }
        if let Some((group, index)) = node.output_of() {
            let Some(out) = group_mapped.get(&group.id()).and_then(|o| o.get(index)) else {
                return Err(Error::runtime("vmap", "an output node before its group"));
            };
            mapped.insert(node.id(), out.clone());
            continue;
        }
        let Some(op) = node.primitive() else {
            return Err(Error::runtime("vmap", "a traced leaf has no batched value"));
        };
        let (inputs, in_ax): (Vec<Array>, Vec<Option<usize>>) = node
            .inputs()
            .into_iter()
            .map(|i| mapped.get(&i.id()).cloned().unwrap_or((i, None)))
            .unzip();
        if let Some(specs) = node.output_specs() {
            let outs = op.vmap_multi(&inputs, &in_ax)?;
            if outs.len() != specs.len() {
                return Err(Error::runtime(
                    op.name(),
                    "vmap rule returned the wrong number of outputs",
                ));
            }
            group_mapped.insert(node.id(), outs);
            continue;
        }
        let out = op.vmap(&inputs, &in_ax)?;
        mapped.insert(node.id(), out);
    }
    outputs
        .iter()
        .zip(out_axes)
        .enumerate()
        .map(|(j, (o, out_ax))| {
            let (v, ax) = mapped.get(&o.id()).cloned().unwrap_or((o.clone(), None));
            place_batch_axis(j, v, ax, *out_ax, batch)
        })
        .collect()
}

/// Moves (or, for an unbatched value, broadcasts in) the batch axis of
/// output `j` to `out_ax`.
fn place_batch_axis(
    j: usize,
    v: Array,
    ax: Option<usize>,
    out_ax: Option<isize>,
    batch: usize,
) -> Result<Array> {
    match (ax, out_ax) {
        (None, None) => Ok(v),
        (Some(_), None) => Err(Error::value(
            "vmap",
            format!("output {j} depends on the batch but its out_axes entry is None"),
        )),
        (Some(ax), Some(to)) => {
            let to = normalize_axis("vmap", to, v.ndim())?;
            crate::ops::views::moveaxis(&v, ax as isize, to as isize)
        }
        (None, Some(to)) => {
            let to = normalize_axis("vmap", to, v.ndim() + 1)?;
            let e = crate::ops::views::expand_dims(&v, &[to as isize])?;
            let mut shape = e.shape().to_vec();
            shape[to] = batch;
            crate::ops::views::broadcast_to(&e, &shape)
        }
    }
}
