//! The fusion pass: chains of elementwise instructions become one
//! [`Fused`] instruction.
//!
//! A group grows backwards from a root (an elementwise instruction) over
//! inputs that are elementwise, have the root's shape, and are read by the
//! group (possibly by several members: a shared intermediate is one step
//! that later steps read twice). A member that is also needed elsewhere (by
//! other instructions or as a result) becomes one more output of the group
//! when every reader outside the group comes after the root. That rule
//! keeps the fused tape acyclic and in order: a group is emitted at its
//! root's position, and each of its outputs is read only later. Anything else
//! stays a separate instruction and enters groups as an input, so nothing
//! is computed twice. Then groups that read a common input (an argument, a
//! constant or a value another group returns) merge into one kernel under
//! the same rule, so that input is read once. Groups of one instruction
//! are left alone.
//!
//! A group with several outputs is a group node (see
//! [`crate::graph::outputs`]) with one buffer per output, so a shapeless
//! replay at new shapes may give its outputs different broadcast shapes.

use super::tape::{Instr, Ref, Tape};
use crate::backend::cpu::fused::{Fused, FusedConst, Reg, Step};
use crate::backend::cpu::fused_tile::ElementOp;
use crate::graph::array::Array;
use crate::graph::outputs::{OutputOf, OutputSpecs};
use crate::graph::primitive::Primitive;
use crate::ops::binary::Binary;
use crate::ops::creation::Fill;
use crate::ops::select::Select;
use crate::ops::unary::Unary;
use std::collections::HashMap;
use std::sync::Arc;

/// True for instructions whose op says it is elementwise
/// ([`Primitive::is_elementwise`](crate::graph::primitive::Primitive::is_elementwise)):
/// the op decides, not a list here.
fn is_elementwise(ins: &Instr) -> bool {
    ins.op.is_elementwise()
}

/// The unary or binary function `op` applies, if it is one: what the fused
/// engine's tile loop needs to know (`as_any` sees through the tape's
/// `IsolatedOp`).
fn element_op(op: &dyn Primitive) -> Option<ElementOp> {
    let any = op.as_any();
    if let Some(Binary(b)) = any.downcast_ref::<Binary>() {
        return Some(ElementOp::Binary(*b));
    }
    if any.is::<Select>() {
        return Some(ElementOp::Select);
    }
    any.downcast_ref::<Unary>()
        .map(|Unary(u)| ElementOp::Unary(*u))
}

/// A captured array as a constant to embed in a fused program (see
/// [`FusedConst`]): an evaluated single element, or an array with one value
/// in every element (`zeros_like(g)` in a gradient, evaluated or still a
/// lazy fill, or a broadcast scalar) when `ins` gets its shape from another
/// operand. The latter is embedded as that one element, shaped `[1, ...]`:
/// the program then reads no buffer of repeated values, and its flat runs
/// stay flat.
fn embeddable(a: &Array, ins: &Instr, tape: &Tape) -> Option<FusedConst> {
    let evaluated = a.0.cell.get_ref().and_then(|r| r.ok()?.single().ok());
    if a.shape().iter().product::<usize>() == 1 {
        return Some(FusedConst::new(evaluated?, a.shape(), a.dtype()));
    }
    let shaped_by_other = ins.inputs.iter().any(|r| match r {
        Ref::Node(j) => tape.instrs[*j].shape == ins.shape,
        Ref::Input(_) | Ref::Const(_) => false,
    });
    if !shaped_by_other {
        return None;
    }
    let element = match evaluated {
        Some(data) if holds_one_value(data, a.shape(), a.dtype().size()) => data.clone(),
        Some(_) => return None,
        None => fill_value(a)?,
    };
    let ones = vec![1; a.ndim()];
    let element = crate::graph::layout::Data {
        strides: vec![0; ones.len()],
        ..element
    };
    Some(FusedConst::new(&element, &ones, a.dtype()))
}

/// The value of a lazy real fill (`zeros_like`, `full`), evaluated as one
/// element.
fn fill_value(a: &Array) -> Option<crate::graph::layout::Data> {
    let fill = a.primitive()?.as_any().downcast_ref::<Fill>()?;
    if fill.im != 0.0 {
        return None;
    }
    let one = crate::ops::creation::full(&[], fill.re, a.dtype()).ok()?;
    one.eval().ok()?;
    one.0.cell.get_ref()?.ok()?.single().ok().cloned()
}

/// True when every element of `data` (of `shape`, `size`-byte elements)
/// has the bytes of the first: a broadcast of one element, or a contiguous
/// run of equal elements. Scans at most until the first difference.
fn holds_one_value(data: &crate::graph::layout::Data, shape: &[usize], size: usize) -> bool {
    if data.strides.iter().all(|&s| s == 0) {
        return true;
    }
    if !data.is_contiguous(shape) {
        return false;
    }
    let start = data.offset * size;
    let len = shape.iter().product::<usize>() * size;
    let Some(bytes) = data.storage.as_slice::<u8>().get(start..start + len) else {
        return false;
    };
    let mut elements = bytes.chunks_exact(size);
    let first = elements.next();
    elements.all(|e| Some(e) == first)
}

/// The group instruction `k` joins, given the groups of every later
/// instruction (`root`), or `None` to start its own.
fn group_to_join(
    k: usize,
    tape: &Tape,
    readers: &[usize],
    is_output: bool,
    root: &[Option<usize>],
) -> Option<usize> {
    let ins = &tape.instrs[k];
    let mut groups: Vec<usize> = readers.iter().filter_map(|&c| root[c]).collect();
    groups.sort_unstable();
    groups.dedup();
    // The earliest group first: the most readers come after its root.
    groups.into_iter().find(|&g| {
        if tape.instrs[g].shape != ins.shape {
            return false;
        }
        // Where each reader outside g is emitted: at its group's root.
        let mut outside = readers
            .iter()
            .filter(|&&c| root[c] != Some(g))
            .map(|&c| root[c].unwrap_or(c))
            .peekable();
        if outside.peek().is_none() && !is_output {
            return true; // read only inside g: an internal step
        }
        outside.all(|e| e > g)
    })
}

/// Merges groups that read a common input into one kernel with several
/// outputs, so the input is read once: `[exp(x), sin(x)]` becomes one
/// pass over `x`. Group `a` merges into a later group `b` of the same shape
/// when every reader of `a`'s values outside `a` and `b` comes
/// after `b`'s root: the merged group is emitted there, and nothing it
/// reads can depend on such a reader.
fn merge_siblings(
    tape: &Tape,
    readers: &[Vec<usize>],
    root: &mut [Option<usize>],
    members: &mut HashMap<usize, Vec<usize>>,
) {
    // Every group reading each external operand (an argument, a captured
    // array or another instruction's value). A single element saves no
    // reading when shared, so it does not count.
    let mut groups_reading: HashMap<(u8, u64), Vec<usize>> = HashMap::new();
    for (k, ins) in tape.instrs.iter().enumerate() {
        let Some(g) = root[k] else { continue };
        for r in &ins.inputs {
            let skip = match r {
                Ref::Node(j) => root[*j] == Some(g), // inside g
                Ref::Const(c) => c.shape().iter().product::<usize>() == 1,
                Ref::Input(_) => false,
            };
            let groups = groups_reading.entry(r.key()).or_default();
            if !skip && groups.last() != Some(&g) {
                groups.push(g);
            }
        }
    }
    let mut roots: Vec<usize> = members.keys().copied().collect();
    roots.sort_unstable();
    for a in roots {
        let Some(group) = members.get(&a) else {
            continue;
        };
        let shape = &tape.instrs[a].shape;
        let mut later: Vec<usize> = group
            .iter()
            .flat_map(|&j| &tape.instrs[j].inputs)
            .filter_map(|r| groups_reading.get(&r.key()))
            .flatten()
            // A group may have merged into another since: its root's
            // entry names where it is now.
            .filter_map(|&g| root[g])
            .filter(|&b| b > a && tape.instrs[b].shape == *shape)
            .collect();
        later.sort_unstable();
        later.dedup();
        let fits = |b: usize| {
            group.iter().all(|&j| {
                readers[j]
                    .iter()
                    .all(|&c| root[c] == Some(a) || root[c] == Some(b) || c > b)
            })
        };
        let Some(b) = later.into_iter().find(|&b| fits(b)) else {
            continue;
        };
        let Some(moved) = members.remove(&a) else {
            continue;
        };
        for &j in &moved {
            root[j] = Some(b);
        }
        let merged = members.entry(b).or_default();
        merged.extend(moved);
        merged.sort_unstable();
    }
}

/// Returns the tape with elementwise chains fused; a group may return
/// intermediates that are read elsewhere too.
pub(crate) fn fuse(tape: Tape) -> Tape {
    let n = tape.instrs.len();
    // readers[j]: the instructions reading j's value (once per reader).
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, ins) in tape.instrs.iter().enumerate() {
        for r in &ins.inputs {
            if let Ref::Node(j) = *r {
                if readers[j].last() != Some(&k) {
                    readers[j].push(k);
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
    // root[k]: the group instruction k belongs to (its root is its last
    // member). Readers come later in the tape, so in a backward sweep
    // every reader's group is known when k is placed.
    let mut root: Vec<Option<usize>> = vec![None; n];
    for k in (0..n).rev() {
        if is_elementwise(&tape.instrs[k]) {
            let g = group_to_join(k, &tape, &readers[k], is_output[k], &root);
            root[k] = Some(g.unwrap_or(k));
        }
    }
    let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
    for (k, g) in root.iter().enumerate() {
        if let Some(g) = g {
            members.entry(*g).or_default().push(k);
        }
    }
    merge_siblings(&tape, &readers, &mut root, &mut members);

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
                            Ref::Const(a)
                                if let Some(c) = embeddable(a, &tape.instrs[j], &tape) =>
                            {
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
                        element: element_op(tape.instrs[j].op.as_ref()),
                    });
                }
                // Outputs: the root, and members read outside the group.
                let outputs: Vec<usize> = m
                    .iter()
                    .copied()
                    .filter(|&j| {
                        j == k || is_output[j] || readers[j].iter().any(|&c| root[c] != Some(k))
                    })
                    .collect();
                let ins = &tape.instrs[k];
                let fused = Fused::new(
                    steps,
                    consts.into_iter().map(|(_, c)| c).collect(),
                    outputs.iter().map(|j| step_of[j]).collect(),
                );
                let fused = Arc::new(fused);
                if let [_] = outputs[..] {
                    new_ref[k] = Some(Ref::Node(instrs.len()));
                    instrs.push(Instr {
                        shape: ins.shape.clone(),
                        dtype: ins.dtype,
                        op: fused,
                        inputs,
                        outputs: None,
                    });
                    continue;
                }
                // Several outputs: a group node and one output node each.
                let group = Ref::Node(instrs.len());
                let specs: OutputSpecs = outputs
                    .iter()
                    .map(|&j| (ins.shape.clone(), tape.instrs[j].dtype))
                    .collect();
                instrs.push(Instr {
                    shape: vec![],
                    dtype: specs[0].1,
                    op: fused,
                    inputs,
                    outputs: Some(specs),
                });
                for (index, &j) in outputs.iter().enumerate() {
                    new_ref[j] = Some(Ref::Node(instrs.len()));
                    instrs.push(Instr {
                        op: Arc::new(OutputOf { index }),
                        inputs: vec![group.clone()],
                        shape: ins.shape.clone(),
                        dtype: tape.instrs[j].dtype,
                        outputs: None,
                    });
                }
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
    Tape {
        instrs,
        outputs,
        key_draws: tape.key_draws,
    }
}
