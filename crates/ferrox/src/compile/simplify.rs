//! Graph simplification of a tape: forward no-ops, merge equal scalar
//! constants, eliminate common subexpressions, drop dead instructions.
//!
//! Every rewrite keeps results bitwise identical: CSE merges only
//! instructions whose primitive is equivalent (same type and parameters,
//! `Primitive::is_equivalent`) and whose inputs are the same refs, so the
//! same operations run in the same order on the same values.

use super::tape::{Instr, Ref, Tape};
use crate::graph::array::Array;
use crate::transforms::tracer::{Identity, StopGradient};
use std::collections::HashMap;

/// Byte-exact key of a small evaluated constant (dtype, shape, bytes).
fn constant_key(a: &Array) -> Option<(crate::dtype::DType, Vec<usize>, Vec<u8>)> {
    if a.primitive().is_some() || a.size() != 1 || !a.is_available() {
        return None;
    }
    let d = a.data().ok()?;
    let size = a.dtype().size();
    let bytes = d
        .storage
        .as_slice::<u8>()
        .get(d.offset * size..(d.offset + 1) * size)?
        .to_vec();
    Some((a.dtype(), a.shape().to_vec(), bytes))
}

fn is_noop(ins: &Instr) -> bool {
    let any = ins.op.as_any();
    (any.is::<Identity>() || any.is::<StopGradient>()) && ins.inputs.len() == 1
}

/// What CSE compares before asking `is_equivalent`: op name, input refs,
/// shape and dtype.
type InstrKey = (
    &'static str,
    Vec<(u8, u64)>,
    Vec<usize>,
    crate::dtype::DType,
);

/// Returns the simplified tape.
pub(crate) fn simplify(tape: Tape) -> Tape {
    let mut consts: HashMap<(crate::dtype::DType, Vec<usize>, Vec<u8>), Array> = HashMap::new();
    let mut canonical = |r: Ref| -> Ref {
        if let Ref::Const(a) = &r {
            if let Some(k) = constant_key(a) {
                return Ref::Const(consts.entry(k).or_insert_with(|| a.clone()).clone());
            }
        }
        r
    };
    let mut remap: Vec<Ref> = Vec::with_capacity(tape.instrs.len());
    let mut kept: Vec<Instr> = Vec::with_capacity(tape.instrs.len());
    let mut seen: HashMap<InstrKey, Vec<usize>> = HashMap::new();
    let resolve = |r: &Ref, remap: &[Ref]| match r {
        Ref::Node(k) => remap[*k].clone(),
        other => other.clone(),
    };
    for ins in tape.instrs {
        let inputs: Vec<Ref> = ins
            .inputs
            .iter()
            .map(|r| canonical(resolve(r, &remap)))
            .collect();
        let ins = Instr { inputs, ..ins };
        if is_noop(&ins) {
            remap.push(ins.inputs[0].clone());
            continue;
        }
        let key = (
            ins.op.name(),
            ins.inputs.iter().map(Ref::key).collect(),
            ins.shape.clone(),
            ins.dtype,
        );
        let candidates = seen.entry(key).or_default();
        if let Some(&k) = candidates
            .iter()
            .find(|&&k| kept[k].op.is_equivalent(ins.op.as_ref()))
        {
            remap.push(Ref::Node(k));
            continue;
        }
        candidates.push(kept.len());
        remap.push(Ref::Node(kept.len()));
        kept.push(ins);
    }
    let outputs: Vec<Ref> = tape
        .outputs
        .iter()
        .map(|r| canonical(resolve(r, &remap)))
        .collect();
    drop_dead(Tape {
        instrs: kept,
        outputs,
        key_draws: tape.key_draws,
    })
}

/// Removes instructions no output depends on, renumbering the rest.
pub(crate) fn drop_dead(tape: Tape) -> Tape {
    let n = tape.instrs.len();
    let mut live = vec![false; n];
    for r in &tape.outputs {
        if let Ref::Node(k) = r {
            live[*k] = true;
        }
    }
    for k in (0..n).rev() {
        if live[k] {
            for r in &tape.instrs[k].inputs {
                if let Ref::Node(j) = r {
                    live[*j] = true;
                }
            }
        }
    }
    let mut new_index = vec![usize::MAX; n];
    let mut instrs = Vec::with_capacity(n);
    let renumber = |r: &Ref, new_index: &[usize]| match r {
        Ref::Node(k) => Ref::Node(new_index[*k]),
        other => other.clone(),
    };
    for (k, ins) in tape.instrs.into_iter().enumerate() {
        if !live[k] {
            continue;
        }
        new_index[k] = instrs.len();
        let inputs = ins.inputs.iter().map(|r| renumber(r, &new_index)).collect();
        instrs.push(Instr { inputs, ..ins });
    }
    let outputs = tape
        .outputs
        .iter()
        .map(|r| renumber(r, &new_index))
        .collect();
    Tape {
        instrs,
        outputs,
        key_draws: tape.key_draws,
    }
}
