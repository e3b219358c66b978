//! The graph behind some arrays in Graphviz DOT form, for looking at what
//! a computation builds (`mx.export_to_dot`).

use crate::graph::array::Array;
use std::collections::HashSet;
use std::fmt::Write as _;

/// The DOT text of the graph that computes `outputs`: one node per array
/// (its primitive or `leaf`, shape and dtype; evaluated arrays are leaves)
/// and one edge per input. `names` labels chosen arrays. Nodes are listed
/// inputs first.
///
/// ```
/// let x = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// let y = ferrox::exp(&(&x * 2.0)?)?;
/// let dot = ferrox::graph::dot::to_dot(&[y], &[("x".to_string(), x)]);
/// assert!(dot.starts_with("digraph {") && dot.contains("exp") && dot.contains("x\\n"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn to_dot(outputs: &[Array], names: &[(String, Array)]) -> String {
    let mut order: Vec<Array> = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    // Iterative post-order walk: deep graphs must not overflow the stack.
    let mut stack: Vec<(Array, bool)> = outputs.iter().rev().map(|a| (a.clone(), false)).collect();
    while let Some((a, expanded)) = stack.pop() {
        if expanded {
            order.push(a);
            continue;
        }
        if !seen.insert(a.id()) {
            continue;
        }
        let inputs = a.inputs();
        stack.push((a, true));
        for i in inputs.into_iter().rev() {
            if !seen.contains(&i.id()) {
                stack.push((i, false));
            }
        }
    }
    let mut out = String::from("digraph {\n");
    for a in &order {
        let name = names
            .iter()
            .find(|(_, n)| n.id() == a.id())
            .map(|(n, _)| format!("{n}\\n"))
            .unwrap_or_default();
        let op = match a.primitive() {
            Some(p) if !a.inputs().is_empty() => p.name(),
            _ => "leaf",
        };
        let shape = if a.shape().is_empty() {
            "()".to_string()
        } else {
            format!("{:?}", a.shape())
        };
        let shape_style = if op == "leaf" { "box" } else { "ellipse" };
        let _ = writeln!(
            out,
            "  n{} [label=\"{name}{op}\\n{shape} {}\", shape={shape_style}];",
            a.id(),
            a.dtype()
        );
    }
    for a in &order {
        for i in a.inputs() {
            let _ = writeln!(out, "  n{} -> n{};", i.id(), a.id());
        }
    }
    out.push_str("}\n");
    out
}
