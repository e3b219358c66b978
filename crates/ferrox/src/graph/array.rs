//! [`Array`]: a cheap-to-clone, thread-safe handle to a lazy graph node,
//! and the ways a node is built (leaves from data, nodes from a primitive).

use super::cell::{Claimed, EvalCell};
use super::layout::Data;
use super::node::{self, Node};
use super::outputs::{OutputSpecs, Value};
use super::primitive::Primitive;
use super::stream::{Stream, current_stream};
use super::trace::{TraceKind, TraceSet, union};
use crate::dtype::DType;
use crate::dtype::{Category, ScalarKind};
use crate::error::{Error, ErrorKind};
use crate::sync::RwLock;
use std::sync::Arc;

/// A lazy n-dimensional array.
///
/// Cloning is an `Arc` clone. Ops build graph nodes; nothing computes until
/// [`Array::eval`], [`crate::runtime::eval::eval`], [`Array::item`] or [`Array::to_vec`].
/// Arrays are `Send + Sync`: any thread may evaluate or read an array built
/// on any other, also after that thread has exited (contract item 1).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let b = (&a * 2.0)? ;
/// assert_eq!(b.to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone)]
pub struct Array(pub(crate) Arc<Node>);

// Compile-time proof of contract item 1.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Array>();
};

impl Array {
    /// A leaf whose evaluation reports an allocation failure (only built
    /// when a 1-element allocation failed, so constructors stay infallible).
    pub(crate) fn unavailable(dtype: DType) -> Array {
        let node = Node {
            id: node::next_id(),
            shape: vec![],
            dtype,
            stream: current_stream(),
            weak: false,
            weak_exact: None,
            op: None,
            inputs: RwLock::new(vec![]),
            outputs: None,
            cell: EvalCell::pending(),
            traces: None,
        };
        let a = Array(Arc::new(node));
        if let Claimed::Mine(c) = a.0.cell.claim() {
            c.publish(Err(Error::new(ErrorKind::Memory, "array", "out of memory")));
        }
        a
    }

    /// Wraps evaluated data as a leaf array.
    pub(crate) fn from_data(data: Data, shape: Vec<usize>, dtype: DType) -> Array {
        Array(Arc::new(Node {
            id: node::next_id(),
            shape,
            dtype,
            stream: current_stream(),
            weak: false,
            weak_exact: None,
            op: None,
            inputs: RwLock::new(vec![]),
            outputs: None,
            cell: EvalCell::ready(Value::One(data)),
            traces: None,
        }))
    }

    /// Builds an unevaluated node on the current stream. Ops call this after
    /// they validated their inputs and inferred `shape` and `dtype`.
    pub(crate) fn from_op(
        shape: Vec<usize>,
        dtype: DType,
        op: impl Primitive,
        inputs: Vec<Array>,
    ) -> Array {
        Self::from_op_arc(shape, dtype, Arc::new(op), inputs)
    }

    /// Builds a node computed by a user-supplied primitive: the way to add
    /// a custom kernel. The primitive must produce `shape` and `dtype`.
    ///
    /// ```
    /// use ferrox::{array::Data, graph::primitive::{Operand, OutSpec, Primitive}, *};
    /// #[derive(Debug)]
    /// struct Twice;
    /// impl Primitive for Twice {
    ///     fn name(&self) -> &'static str { "twice" }
    ///     fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
    ///         ferrox::backend::cpu::elementwise::unary(&inputs[0], out, |v: f32| v * 2.0)
    ///     }
    ///     fn as_any(&self) -> &dyn std::any::Any { self }
    /// }
    /// let x = ones(&[3], DType::Float32)?;
    /// let y = Array::from_primitive(vec![3], DType::Float32, std::sync::Arc::new(Twice), vec![x]);
    /// assert_eq!(y.to_vec::<f32>()?, vec![2.0; 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_primitive(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Array {
        Self::from_op_arc(shape, dtype, op, inputs)
    }

    pub(crate) fn from_op_arc(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Array {
        let traces = union(inputs.iter().map(|i| &i.0.traces));
        Self::build(shape, dtype, op, inputs, traces)
    }

    pub(crate) fn build(
        shape: Vec<usize>,
        dtype: DType,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
        traces: TraceSet,
    ) -> Array {
        Array(Arc::new(Node {
            id: node::next_id(),
            shape,
            dtype,
            stream: current_stream(),
            weak: false,
            weak_exact: None,
            op: Some(op),
            inputs: RwLock::new(inputs),
            outputs: None,
            cell: EvalCell::pending(),
            traces,
        }))
    }

    /// Builds a group node (see [`crate::graph::outputs`]) on the current
    /// stream, without its output nodes.
    pub(crate) fn group_node(
        outputs: OutputSpecs,
        op: Arc<dyn Primitive>,
        inputs: Vec<Array>,
    ) -> Array {
        let traces = union(inputs.iter().map(|i| &i.0.traces));
        let dtype = outputs.first().map_or(DType::Bool, |(_, d)| *d);
        Array(Arc::new(Node {
            id: node::next_id(),
            shape: vec![],
            dtype,
            stream: current_stream(),
            weak: false,
            weak_exact: None,
            op: Some(op),
            inputs: RwLock::new(inputs),
            outputs: Some(outputs),
            cell: EvalCell::pending(),
            traces,
        }))
    }

    /// True if this array belongs to a live transform of `kind`, e.g. to
    /// choose a training path only when differentiated. The answer depends
    /// only on this array, never on the calling thread.
    ///
    /// ```
    /// use ferrox::{graph::trace::TraceKind, *};
    /// let x = ones(&[2], DType::Float32)?;
    /// assert!(!x.is_traced(TraceKind::Vjp));
    /// let (_, g) = vjp(|xs| {
    ///     assert!(xs[0].is_traced(TraceKind::Vjp));
    ///     Ok(vec![xs[0].clone()])
    /// }, &[x.clone()], &[ones(&[2], DType::Float32)?])?;
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_traced(&self, kind: TraceKind) -> bool {
        self.0
            .traces
            .as_ref()
            .is_some_and(|s| s.iter().any(|t| t.kind() == kind && t.is_live()))
    }

    /// True if this array is being differentiated (vjp/grad or jvp).
    ///
    /// ```
    /// assert!(!ferrox::ones(&[1], ferrox::DType::Float32)?.is_differentiated());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_differentiated(&self) -> bool {
        self.0
            .traces
            .as_ref()
            .is_some_and(|s| s.iter().any(|t| t.kind().differentiates() && t.is_live()))
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }
    /// Number of elements.
    pub fn size(&self) -> usize {
        self.0.shape.iter().product()
    }
    /// Bytes per element.
    pub fn itemsize(&self) -> usize {
        self.0.dtype.size()
    }
    /// Bytes of all elements.
    pub fn nbytes(&self) -> usize {
        self.size() * self.itemsize()
    }
    /// The stream this array's node was built on.
    pub fn stream(&self) -> Stream {
        self.0.stream
    }
    /// True for weakly typed scalars ([`Array::weak_f64`] and friends).
    pub fn is_weak(&self) -> bool {
        self.0.weak
    }
    /// The kind of a weak scalar, used by promotion.
    pub(crate) fn weak_kind(&self) -> Option<ScalarKind> {
        if !self.0.weak {
            return None;
        }
        Some(match self.dtype().category() {
            Category::Bool => ScalarKind::Bool,
            Category::Signed | Category::Unsigned => ScalarKind::Int,
            Category::Float => ScalarKind::Float,
            Category::Complex => ScalarKind::Complex,
        })
    }
    /// A unique, never reused id of this node.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// The primitive that computes this node (`None` for data leaves).
    pub fn primitive(&self) -> Option<&Arc<dyn Primitive>> {
        self.0.op.as_ref()
    }
    /// The node's inputs (empty once evaluated and detached).
    pub fn inputs(&self) -> Vec<Array> {
        self.0.inputs()
    }
    /// True once the value (or an evaluation error) is available.
    ///
    /// ```
    /// let a = ferrox::ones(&[2], ferrox::DType::Float32)?;
    /// assert!(!a.is_available());
    /// a.eval()?;
    /// assert!(a.is_available());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn is_available(&self) -> bool {
        self.0.cell.is_done()
    }
}

/// Marks a freshly built node as a weak scalar result (weak op weak).
pub(crate) fn mark_weak(mut a: Array) -> Array {
    if let Some(n) = Arc::get_mut(&mut a.0) {
        n.weak = true;
    }
    a
}

/// Records on a freshly built weak float scalar the double-precision value
/// it was rounded from (see [`Node::weak_exact`](super::node::Node)).
pub(crate) fn mark_weak_exact(mut a: Array, value: f64) -> Array {
    if let Some(n) = Arc::get_mut(&mut a.0) {
        n.weak_exact = Some(value);
    }
    a
}

impl Array {
    /// The double-precision value of a weak float scalar built by
    /// [`Array::weak_f64`] (its float32 data is that value rounded).
    pub(crate) fn weak_exact(&self) -> Option<f64> {
        self.0.weak_exact
    }
}
