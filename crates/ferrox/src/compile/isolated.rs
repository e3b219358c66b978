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
    fn is_elementwise(&self) -> bool {
        self.0.is_elementwise()
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        self.0.output_shape(input_shapes)
    }
}
