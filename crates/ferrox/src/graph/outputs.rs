//! Nodes with several outputs.
//!
//! A primitive that computes several results in one pass (a quotient and
//! its remainder, a value and its index, a factorisation, a fused kernel
//! with several results) is one *group node* plus one *output node* per
//! result. The group node's value holds one buffer per output
//! ([`Value::Several`]); an output node is an ordinary node whose primitive
//! is [`OutputOf`] and whose single input is the group node. Its value is
//! that output's buffer, shared with the group's value, not copied.
//!
//! So every walk over the graph still sees a plain DAG: the group node
//! comes before every user of every output, it is computed once however
//! many of its outputs are needed and whichever thread needs one first
//! (its evaluation cell is the one claim), and an output can be evaluated
//! or dropped before its siblings. A dropped, unevaluated output frees its
//! buffer when the group node goes, that is once every other output has
//! been evaluated or dropped.
//!
//! The transforms address a group through its output nodes: cotangents,
//! tangents and batched values of the outputs are gathered per group and
//! handed to the primitive's `*_multi` rules in one call.

use super::array::Array;
use super::layout::Data;
use super::primitive::{Operand, OutSpec, Primitive};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::sync::Arc;

/// A node's evaluated value: one buffer, or one per output of a group node.
#[derive(Clone, Debug)]
pub enum Value {
    /// The value of an ordinary node.
    One(Data),
    /// The outputs of a group node, in output order.
    Several(Arc<[Data]>),
}

impl Value {
    /// The single buffer; an error for a group node, whose outputs are read
    /// through its output nodes.
    pub fn single(&self) -> Result<&Data> {
        match self {
            Value::One(d) => Ok(d),
            Value::Several(parts) => Err(several_outputs(parts.len())),
        }
    }

    /// [`single`](Self::single), by value.
    pub fn into_single(self) -> Result<Data> {
        match self {
            Value::One(d) => Ok(d),
            Value::Several(parts) => Err(several_outputs(parts.len())),
        }
    }

    /// Output `index` of a group node's value.
    pub(crate) fn output(&self, index: usize) -> Result<Data> {
        match self {
            Value::Several(parts) => parts.get(index).cloned().ok_or_else(|| {
                Error::runtime(
                    "output",
                    format!("output {index} of a node with {} outputs", parts.len()),
                )
            }),
            Value::One(_) => Err(Error::runtime(
                "output",
                "internal error: an output node reads a node with one output",
            )),
        }
    }
}

fn several_outputs(n: usize) -> Error {
    Error::value(
        "array",
        format!("a node with {n} outputs has no single value; read one of its outputs"),
    )
}

/// Each output's shape and dtype, in output order.
pub type OutputSpecs = Arc<[(Vec<usize>, DType)]>;

/// The primitive of an output node: output `index` of its input, a group
/// node. The runtime evaluates it by sharing that output's buffer, and the
/// transforms route it to the group's `*_multi` rules; its own kernel and
/// rules are never called.
///
/// ```
/// use ferrox::*;
/// let (q, r) = divmod(&Array::from_slice(&[7i32, -7], &[2])?, &Array::from(2i32))?;
/// assert_eq!(q.primitive().unwrap().name(), "output");
/// let (group, index) = r.output_of().unwrap();
/// assert_eq!((group.primitive().unwrap().name(), index), ("divmod", 1));
/// assert_eq!(r.to_vec::<i32>()?, vec![1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputOf {
    /// Which output of the group node.
    pub index: usize,
}

impl Primitive for OutputOf {
    fn name(&self) -> &'static str {
        "output"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(Error::runtime(
            "output",
            "internal error: an output node is read by the runtime, not run",
        ))
    }
    crate::primitive_common!();
}

/// The output index when `op` is an [`OutputOf`].
pub(crate) fn output_index(op: &dyn Primitive) -> Option<usize> {
    op.as_any().downcast_ref::<OutputOf>().map(|o| o.index)
}

/// The error a single-output method of a primitive with several outputs
/// returns: its `eval_cpu`, which the runtime never calls for it.
///
/// ```
/// let e = ferrox::graph::outputs::not_single("divmod");
/// assert!(e.to_string().contains("several outputs"));
/// ```
pub fn not_single(op: &str) -> Error {
    Error::runtime(
        op,
        "internal error: an op with several outputs was evaluated as one",
    )
}

impl Array {
    /// Builds a primitive with several outputs: one group node and the
    /// output nodes, in order (see [`crate::graph::outputs`]). The primitive
    /// implements [`Primitive::eval_cpu_multi`] and must produce exactly
    /// `outputs` (shape and dtype of each).
    ///
    /// ```
    /// use ferrox::{array::Data, backend::cpu::elementwise::unary, graph::primitive::*, *};
    /// #[derive(Debug)]
    /// struct TwiceAndThrice;
    /// impl Primitive for TwiceAndThrice {
    ///     fn name(&self) -> &'static str { "twice_and_thrice" }
    ///     fn eval_cpu(&self, _: &[Operand<'_>], _: OutSpec<'_>) -> Result<Data> {
    ///         Err(ferrox::graph::outputs::not_single(self.name()))
    ///     }
    ///     fn eval_cpu_multi(&self, x: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    ///         Ok(vec![unary(&x[0], outs[0], |v: f32| 2.0 * v)?, unary(&x[0], outs[1], |v: f32| 3.0 * v)?])
    ///     }
    ///     fn as_any(&self) -> &dyn std::any::Any { self }
    /// }
    /// let x = ones(&[2], DType::Float32)?;
    /// let spec = (vec![2], DType::Float32);
    /// let ys = Array::from_primitive_multi(vec![spec.clone(), spec], std::sync::Arc::new(TwiceAndThrice), vec![x]);
    /// assert_eq!(ys[1].to_vec::<f32>()?, vec![3.0; 2]);
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![2.0; 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_primitive_multi(
        outputs: Vec<(Vec<usize>, DType)>,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Vec<Array> {
        let group = Array::group_node(outputs.into(), op, inputs);
        group.group_outputs().unwrap_or_default()
    }

    /// [`from_primitive_multi`](Self::from_primitive_multi) for the ops of
    /// this crate.
    pub(crate) fn from_op_multi(
        outputs: Vec<(Vec<usize>, DType)>,
        op: impl Primitive,
        inputs: Vec<Array>,
    ) -> Vec<Array> {
        Self::from_primitive_multi(outputs, Arc::new(op), inputs)
    }

    /// The output node `index` of `group`, computed by `op` (an
    /// [`OutputOf`] for that index: replays pass the one they hold).
    pub(crate) fn output_node(
        group: &Array,
        index: usize,
        op: Arc<dyn Primitive>,
    ) -> Result<Array> {
        let Some((shape, dtype)) = group.output_specs().and_then(|s| s.get(index)).cloned() else {
            return Err(Error::runtime(
                "output",
                format!(
                    "internal error: no output {index} on a {:?} node",
                    group.primitive()
                ),
            ));
        };
        let traces = group.0.traces.clone();
        Ok(Array::build(shape, dtype, op, vec![group.clone()], traces))
    }

    /// For an output node: the group node and which of its outputs this is.
    /// `None` once the node is evaluated, since an evaluated graph is detached
    /// (as [`Array::inputs`] is empty then).
    ///
    /// ```
    /// use ferrox::*;
    /// let (q, _) = divmod(&Array::from(7i32), &Array::from(2i32))?;
    /// assert_eq!(q.output_of().map(|(_, i)| i), Some(0));
    /// assert!(add(&q, &q)?.output_of().is_none());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn output_of(&self) -> Option<(Array, usize)> {
        let index = output_index(self.primitive()?.as_ref())?;
        let group = crate::sync::read(&self.0.inputs).first()?.clone();
        Some((group, index))
    }

    /// For a group node: each output's shape and dtype.
    pub fn output_specs(&self) -> Option<&OutputSpecs> {
        self.0.outputs.as_ref()
    }

    /// For a group node: fresh output nodes, one per output (they share the
    /// group's one evaluation with every other output node of it).
    pub fn group_outputs(&self) -> Option<Vec<Array>> {
        let n = self.output_specs()?.len();
        (0..n)
            .map(|index| Self::output_node(self, index, Arc::new(OutputOf { index })))
            .collect::<Result<_>>()
            .ok()
    }
}
