//! Walking the part of a graph that belongs to one trace.

use crate::graph::array::Array;
use crate::graph::trace;
use std::collections::HashSet;

/// Nodes reachable from `outputs` that belong to live trace `id`, inputs
/// before their users. Iterative: depth is bounded by memory, not stack.
pub(crate) fn trace_order(outputs: &[Array], id: u64) -> Vec<Array> {
    let mut order = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut stack: Vec<(Array, bool)> = outputs.iter().rev().map(|o| (o.clone(), false)).collect();
    while let Some((a, expanded)) = stack.pop() {
        if expanded {
            order.push(a);
            continue;
        }
        if !trace::contains(&a.0.traces, id) || !seen.insert(a.id()) {
            continue;
        }
        let inputs = a.inputs();
        stack.push((a, true));
        for i in inputs.into_iter().rev() {
            if trace::contains(&i.0.traces, id) && !seen.contains(&i.id()) {
                stack.push((i, false));
            }
        }
    }
    order
}
