//! Tape instructions' ops on cache lines of their own.
//!
//! Every replay clones each instruction's op `Arc` into a new node and
//! drops it with the node, so threads replaying one tape all write those
//! reference counts. An op allocated next to other read-mostly data (its
//! parameters, the steps of a fused program, another op) would make every
//! such read miss while another thread replays. [`IsolatedOp`] is the op
//! behind a 128-byte aligned `Arc` of its own: the count's line holds only
//! counts. It behaves exactly as the op it wraps (same name, kernel, rules,
//! and `as_any` sees through it, so downcasts and equivalence still work).

use crate::error::Result;
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// An op whose `Arc` sits alone on its cache lines (see the module doc).
#[repr(align(128))]
pub(crate) struct IsolatedOp(Arc<dyn Primitive>);

impl IsolatedOp {
    /// `op`, isolated. Applied once, to a freshly built tape, whose ops come
    /// straight from the trace (compiled functions called inside a trace
    /// are inlined, not replayed), so nothing is wrapped twice.
    pub(crate) fn wrap(op: Arc<dyn Primitive>) -> Arc<dyn Primitive> {
        Arc::new(IsolatedOp(op))
    }
}

impl fmt::Debug for IsolatedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Primitive for IsolatedOp {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        self.0.eval_cpu(inputs, out)
    }
    fn as_any(&self) -> &dyn Any {
        self.0.as_any()
    }
    fn accepts_donations(&self) -> bool {
        self.0.accepts_donations()
    }
    fn eval_cpu_donating(
        &self,
        inputs: &[Operand<'_>],
        outs: &[OutSpec<'_>],
        donated: &[bool],
    ) -> Result<Vec<Data>> {
        self.0.eval_cpu_donating(inputs, outs, donated)
    }
    fn is_equivalent(&self, other: &dyn Primitive) -> bool {
        self.0.is_equivalent(other)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        self.0.vjp(primals, cotangent, output, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        self.0.jvp(primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        self.0.vmap(inputs, axes)
    }
    fn waits_on_peers(&self) -> bool {
        self.0.waits_on_peers()
    }
    fn is_elementwise(&self) -> bool {
        self.0.is_elementwise()
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        self.0.output_shape(input_shapes)
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        self.0.eval_cpu_multi(inputs, outs)
    }
    fn vjp_multi(
        &self,
        primals: &[Array],
        cotangents: &[Option<Array>],
        outputs: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        self.0.vjp_multi(primals, cotangents, outputs, argnums)
    }
    fn jvp_multi(
        &self,
        primals: &[Array],
        tangents: &[Option<Array>],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        self.0.jvp_multi(primals, tangents, outputs)
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        self.0.vmap_multi(inputs, axes)
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        self.0.output_shapes(input_shapes)
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    /// The names of the methods `Primitive` declares, read from its source.
    fn trait_methods() -> Vec<String> {
        let src = include_str!("../graph/primitive.rs");
        let start = src.find("pub trait Primitive").expect("the trait");
        let body = &src[start..];
        let end = body.find("\n}\n").expect("the trait's end");
        body[..end]
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("fn "))
            .filter_map(|l| l.split(['(', '<']).next())
            .map(str::to_owned)
            .collect()
    }

    /// A default method added to `Primitive` but not forwarded here would
    /// silently run its default for every replayed op.
    #[test]
    fn every_primitive_method_is_forwarded() {
        let methods = trait_methods();
        assert!(methods.len() >= 12, "read the trait: {methods:?}");
        let src = include_str!("isolated.rs");
        let forwarded = &src[src.find("impl Primitive for IsolatedOp").expect("the impl")..];
        for m in methods {
            assert!(
                forwarded.contains(&format!("fn {m}(")),
                "IsolatedOp does not forward Primitive::{m}"
            );
        }
    }
}
