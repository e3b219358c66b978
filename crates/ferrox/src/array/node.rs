//! The graph node behind an [`Array`] handle.

use super::{Array, Data};
use crate::primitives::Primitive;
use crate::runtime::cell::EvalCell;
use crate::sync::{Mutex, lock};
use crate::transforms::trace::{TraceSet, any_live};
use crate::{DType, Stream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// One node of the lazy graph.
///
/// Immutable after construction except for two things, both thread-safe:
/// `cell` (pending → running → ready/failed, see [`EvalCell`]) and `inputs`,
/// which the evaluating thread empties after publishing the value so that an
/// evaluated graph holds no intermediate buffers (it is detached).
pub(crate) struct Node {
    pub(crate) id: u64,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    pub(crate) stream: Stream,
    /// A weakly typed scalar (a plain number) that adopts the other
    /// operand's dtype in binary ops.
    pub(crate) weak: bool,
    /// `None` for leaves created from data.
    pub(crate) op: Option<Arc<dyn Primitive>>,
    pub(crate) inputs: Mutex<Vec<Array>>,
    pub(crate) cell: EvalCell<Data>,
    /// The live transform traces this node belongs to (see
    /// [`crate::transforms::trace`]); fixed at construction.
    pub(crate) traces: TraceSet,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Node {
    pub(crate) fn inputs(&self) -> Vec<Array> {
        lock(&self.inputs).clone()
    }
    /// True while a transform that this node belongs to is running: its
    /// graph must then survive evaluation.
    pub(crate) fn in_live_trace(&self) -> bool {
        any_live(&self.traces)
    }
    pub(crate) fn detach(&self) {
        let taken = std::mem::take(&mut *lock(&self.inputs));
        drop_iteratively(taken);
    }
}

/// Drops a list of arrays without recursing through their inputs: a graph a
/// million nodes deep would otherwise overflow the stack in `Drop`.
fn drop_iteratively(mut stack: Vec<Array>) {
    while let Some(a) = stack.pop() {
        if let Some(mut node) = Arc::into_inner(a.0) {
            match node.inputs.get_mut() {
                Ok(v) => stack.append(v),
                Err(p) => stack.append(p.into_inner()),
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let inputs = match self.inputs.get_mut() {
            Ok(v) => std::mem::take(v),
            Err(p) => std::mem::take(p.into_inner()),
        };
        if !inputs.is_empty() {
            drop_iteratively(inputs);
        }
    }
}
