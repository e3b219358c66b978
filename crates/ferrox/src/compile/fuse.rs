//! The fusion pass: chains of elementwise instructions become one
//! [`Fused`] instruction.
//!
//! A group grows backwards from a root (an elementwise instruction) over
//! inputs that are elementwise, have the root's shape, and are read only
//! inside the group (possibly by several members: a shared intermediate is
//! one step that later steps read twice). Values needed elsewhere (by other
//! instructions or as outputs) stay separate instructions and enter groups
//! as inputs, so nothing is computed twice. Groups of one instruction are
//! left alone.

use super::fused::{Fused, FusedConst, Reg, Step};
use super::tape::{Instr, Ref, Tape};
use crate::Array;
use crate::primitives::binary::Binary;
use crate::primitives::cast::AsType;
use crate::primitives::ternary::Select;
use crate::primitives::unary::Unary;
use std::collections::HashMap;
use std::sync::Arc;

/// True for instructions whose output element i depends only on element i
/// of each (broadcast) input.
fn is_elementwise(ins: &Instr) -> bool {
    let any = ins.op.as_any();
    any.is::<Unary>() || any.is::<Binary>() || any.is::<Select>() || any.is::<AsType>()
}

/// A captured single-element array that is already evaluated, as a
/// constant to embed in a fused program (see [`FusedConst`]).
fn embeddable(a: &Array) -> Option<FusedConst> {
    if a.shape().iter().product::<usize>() != 1 {
        return None;
    }
    let data = a.0.cell.get_ref()?.ok()?;
    Some(FusedConst::new(data, a.shape(), a.dtype()))
}

/// Returns the tape with elementwise chains fused.
pub(crate) fn fuse(tape: Tape) -> Tape {
    let n = tape.instrs.len();
    // consumers[j]: the instructions reading j's value (once per reader).
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, ins) in tape.instrs.iter().enumerate() {
        for r in &ins.inputs {
            if let Ref::Node(j) = *r {
                if consumers[j].last() != Some(&k) {
                    consumers[j].push(k);
                }
            }
        }
    }
    let mut is_output = vec![false; n];
    for r in &tape.outputs {
        if let Ref::Node(j) = r {
            is_output[*j] = true;
        }
    }
    let fusible: Vec<bool> = tape.instrs.iter().map(is_elementwise).collect();
    // root[k]: the group instruction k belongs to. Consumers come later in
    // the tape, so in a backward sweep every consumer of k is placed before
    // k is: k joins a group when all its consumers are in that group (a
    // value read twice inside one chain is computed once, in the chain),
    // and otherwise starts a group of its own.
    let mut root: Vec<Option<usize>> = vec![None; n];
    for k in (0..n).rev() {
        if !fusible[k] {
            continue;
        }
        let mut groups = consumers[k].iter().map(|&c| root[c]);
        let joined = match groups.next() {
            Some(Some(g)) if !is_output[k] && groups.all(|h| h == Some(g)) => {
                (tape.instrs[k].shape == tape.instrs[g].shape).then_some(g)
            }
            _ => None,
        };
        root[k] = Some(joined.unwrap_or(k));
    }
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (k, g) in root.iter().enumerate() {
        if let Some(g) = g {
            members.entry(*g).or_default().push(k);
        }
    }

    let mut new_ref: Vec<Option<Ref>> = vec![None; n];
    let remap = |r: &Ref, new_ref: &[Option<Ref>]| match r {
        Ref::Node(j) => new_ref[*j].clone().unwrap_or_else(|| r.clone()),
        other => other.clone(),
    };
    let mut instrs: Vec<Instr> = Vec::with_capacity(n);
    for k in 0..n {
        let group = root[k].and_then(|g| members.get(&g).map(|m| (g, m)));
        match group {
            Some((g, _)) if g != k => continue, // emitted with its root
            Some((_, m)) if m.len() > 1 => {
                let mut inputs: Vec<Ref> = Vec::new();
                let mut consts: Vec<(u64, FusedConst)> = Vec::new();
                let mut step_of: HashMap<usize, usize> = HashMap::new();
                let mut steps = Vec::with_capacity(m.len());
                for &j in m {
                    let args = tape.instrs[j]
                        .inputs
                        .iter()
                        .map(|r| match r {
                            Ref::Node(i) if step_of.contains_key(i) => Reg::Step(step_of[i]),
                            Ref::Const(a) if let Some(c) = embeddable(a) => {
                                let pos = consts.iter().position(|(id, _)| *id == a.id());
                                Reg::Const(pos.unwrap_or_else(|| {
                                    consts.push((a.id(), c));
                                    consts.len() - 1
                                }))
                            }
                            other => {
                                let r = remap(other, &new_ref);
                                let pos = inputs.iter().position(|x| x.key() == r.key());
                                Reg::Input(pos.unwrap_or_else(|| {
                                    inputs.push(r);
                                    inputs.len() - 1
                                }))
                            }
                        })
                        .collect();
                    step_of.insert(j, steps.len());
                    steps.push(Step {
                        op: tape.instrs[j].op.clone(),
                        args,
                        dtype: tape.instrs[j].dtype,
                    });
                }
                new_ref[k] = Some(Ref::Node(instrs.len()));
                instrs.push(Instr {
                    op: Arc::new(Fused::new(
                        steps,
                        consts.into_iter().map(|(_, c)| c).collect(),
                    )),
                    inputs,
                    shape: tape.instrs[k].shape.clone(),
                    dtype: tape.instrs[k].dtype,
                });
            }
            _ => {
                let ins = &tape.instrs[k];
                let inputs = ins.inputs.iter().map(|r| remap(r, &new_ref)).collect();
                new_ref[k] = Some(Ref::Node(instrs.len()));
                instrs.push(Instr {
                    inputs,
                    ..ins.clone()
                });
            }
        }
    }
    let outputs = tape.outputs.iter().map(|r| remap(r, &new_ref)).collect();
    Tape { instrs, outputs }
}
