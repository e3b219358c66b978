//! Tapes: a traced function as a flat program over its inputs, and replay.

use super::isolated::IsolatedOp;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::outputs::{OutputSpecs, output_index};
use crate::graph::primitive::Primitive;
use crate::graph::trace::{EndOnDrop, Trace, TraceKind};
use crate::transforms::default_key::{default_key, recording_draws};
use crate::transforms::graph::trace_order;
use crate::transforms::tracer::placeholder;
use std::collections::HashMap;
use std::sync::Arc;

/// Where an instruction's input comes from.
#[derive(Clone)]
pub(crate) enum Ref {
    /// The i-th argument of the call.
    Input(usize),
    /// The output of instruction k.
    Node(usize),
    /// An array the function captured (not derived from the arguments).
    Const(Array),
}

impl Ref {
    /// Identity for comparisons: equal refs produce the same array.
    pub(crate) fn key(&self) -> (u8, u64) {
        match self {
            Ref::Input(i) => (0, *i as u64),
            Ref::Node(k) => (1, *k as u64),
            Ref::Const(a) => (2, a.id()),
        }
    }
}

/// One node of the traced graph.
#[derive(Clone)]
pub(crate) struct Instr {
    pub(crate) op: Arc<dyn Primitive>,
    pub(crate) inputs: Vec<Ref>,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    /// `Some` for a group node: its outputs (read by `OutputOf`
    /// instructions; see [`crate::graph::outputs`]).
    pub(crate) outputs: Option<OutputSpecs>,
}

/// A traced function: instructions in dependency order and the outputs.
///
/// Tapes are immutable once built and shared (`Arc`) by every caller that
/// replays them. Every replay changes the `Arc`'s reference count, so the
/// tape starts on a cache line of its own (128-byte aligned): the count's
/// line then holds nothing that replays read.
#[derive(Clone)]
#[repr(align(128))]
pub struct Tape {
    pub(crate) instrs: Vec<Instr>,
    pub(crate) outputs: Vec<Ref>,
    /// How many keys the function drew from the default key: they are the
    /// inputs after the arguments (`Ref::Input(args.len() + j)`), and each
    /// replay draws them anew from the calling thread's default key.
    pub(crate) key_draws: usize,
}

impl Tape {
    /// Traces `f` on placeholders shaped like `args`.
    pub(crate) fn trace(
        args: &[Array],
        f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    ) -> Result<Tape> {
        let specs: Vec<(Vec<usize>, DType)> = args
            .iter()
            .map(|a| (a.shape().to_vec(), a.dtype()))
            .collect();
        Tape::trace_specs(&specs, f)
    }

    /// Traces `f` on placeholders of the given shapes and dtypes (an
    /// imported function's signature: no example arrays exist).
    pub(crate) fn trace_specs(
        specs: &[(Vec<usize>, DType)],
        f: impl FnOnce(&[Array]) -> Result<Vec<Array>>,
    ) -> Result<Tape> {
        let trace = Trace::new(TraceKind::Compile);
        let _end = EndOnDrop(trace.clone());
        let inputs: Vec<Array> = specs
            .iter()
            .map(|(shape, dtype)| placeholder(shape.clone(), *dtype, &trace))
            .collect();
        let (outputs, keys) = recording_draws(&trace, || f(&inputs));
        let outputs = outputs?;
        let key_draws = keys.len();
        let mut refs: HashMap<u64, Ref> = inputs
            .iter()
            .chain(&keys)
            .enumerate()
            .map(|(i, p)| (p.id(), Ref::Input(i)))
            .collect();
        let mut instrs = Vec::new();
        for node in trace_order(&outputs, trace.id()) {
            if refs.contains_key(&node.id()) {
                continue;
            }
            let Some(op) = node.primitive() else {
                return Err(Error::runtime("compile", "a traced leaf is not an input"));
            };
            let ins = node
                .inputs()
                .iter()
                .map(|i| refs.get(&i.id()).cloned().unwrap_or(Ref::Const(i.clone())))
                .collect();
            refs.insert(node.id(), Ref::Node(instrs.len()));
            instrs.push(Instr {
                op: op.clone(),
                inputs: ins,
                shape: node.shape().to_vec(),
                dtype: node.dtype(),
                outputs: node.output_specs().cloned(),
            });
        }
        let outputs = outputs
            .iter()
            .map(|o| refs.get(&o.id()).cloned().unwrap_or(Ref::Const(o.clone())))
            .collect();
        Ok(Tape {
            instrs,
            outputs,
            key_draws,
        })
    }

    /// The tape with every instruction's op behind an [`IsolatedOp`]: the
    /// last pass before a tape is shared by replaying threads.
    pub(crate) fn isolate_ops(mut self) -> Tape {
        for ins in &mut self.instrs {
            ins.op = IsolatedOp::wrap(ins.op.clone());
        }
        self
    }

    /// Number of instructions (after simplification and fusion).
    pub fn len(&self) -> usize {
        self.instrs.len()
    }
    /// True for a tape without instructions (outputs are inputs or constants).
    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }
    /// The instruction names, in order (for tests and debugging).
    pub fn op_names(&self) -> Vec<&'static str> {
        self.instrs.iter().map(|i| i.op.name()).collect()
    }

    /// Builds the traced graph anew on `args` (lazily: nothing computes).
    /// With `shapeless`, output shapes are re-inferred from the arguments.
    /// The function's draws from the default key take fresh keys of the
    /// calling thread, in the order it drew them.
    pub(crate) fn replay(&self, args: &[Array], shapeless: bool) -> Result<Vec<Array>> {
        let keys = (0..self.key_draws)
            .map(|_| default_key())
            .collect::<Result<Vec<_>>>()?;
        let mut vals: Vec<Array> = Vec::with_capacity(self.instrs.len());
        let resolve = |r: &Ref, vals: &[Array]| -> Array {
            match r {
                Ref::Input(i) if *i < args.len() => args[*i].clone(),
                Ref::Input(i) => keys[*i - args.len()].clone(),
                Ref::Node(k) => vals[*k].clone(),
                Ref::Const(a) => a.clone(),
            }
        };
        for ins in &self.instrs {
            let inputs: Vec<Array> = ins.inputs.iter().map(|r| resolve(r, &vals)).collect();
            let value = if let Some(index) = output_index(ins.op.as_ref()) {
                // Its shape is its group's (replayed just before) output's.
                let group = inputs.first().ok_or_else(|| {
                    Error::runtime("compile", "internal error: an output without its group")
                })?;
                Array::output_node(group, index, ins.op.clone())?
            } else if let Some(specs) = &ins.outputs {
                let specs = if shapeless {
                    let shapes: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
                    let shapes = ins
                        .op
                        .output_shapes(&shapes)
                        .ok_or_else(|| no_shapes(&ins.op))??;
                    shapes
                        .into_iter()
                        .zip(specs.iter().map(|(_, d)| *d))
                        .collect()
                } else {
                    specs.clone()
                };
                Array::group_node(specs, ins.op.clone(), inputs)
            } else {
                let shape = if shapeless {
                    let shapes: Vec<&[usize]> = inputs.iter().map(|a| a.shape()).collect();
                    ins.op
                        .output_shape(&shapes)
                        .ok_or_else(|| no_shapes(&ins.op))??
                } else {
                    ins.shape.clone()
                };
                Array::from_op_arc(shape, ins.dtype, ins.op.clone(), inputs)
            };
            vals.push(value);
        }
        Ok(self.outputs.iter().map(|r| resolve(r, &vals)).collect())
    }
}

/// The error for an op that cannot infer its output shapes in a shapeless
/// replay.
fn no_shapes(op: &Arc<dyn Primitive>) -> Error {
    Error::unsupported(
        op.name(),
        "cannot infer its output shape for a shapeless compiled function",
    )
}
