//! The graph node behind an [`Array`] handle.

use super::array::Array;
use crate::dtype::DType;
use crate::graph::cell::EvalCell;
use crate::graph::outputs::{OutputSpecs, Value};
use crate::graph::primitive::Primitive;
use crate::graph::stream::Stream;
use crate::graph::trace::{TraceSet, any_live};
use crate::sync::{RwLock, read, write};
use std::cell::Cell;
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
    /// For a weak float scalar, the value it was made from: its data is
    /// that value rounded to float32, and a cast to float64 starts from
    /// this instead (so `float64_array * 0.1` multiplies by the double 0.1).
    pub(crate) weak_exact: Option<f64>,
    /// `None` for leaves created from data.
    pub(crate) op: Option<Arc<dyn Primitive>>,
    /// Read-locked by the evaluating thread for the whole kernel (it
    /// borrows the inputs instead of cloning their handles) and by graph
    /// walks; write-locked only by `detach`, after the value is published.
    pub(crate) inputs: RwLock<Vec<Array>>,
    /// `Some` for a group node (see [`crate::graph::outputs`]): its outputs'
    /// shapes and dtypes. Its own `shape` is then `[]` and its `dtype` the
    /// first output's; its value is [`Value::Several`].
    pub(crate) outputs: Option<OutputSpecs>,
    pub(crate) cell: EvalCell<Value>,
    /// The live transform traces this node belongs to (see
    /// [`crate::graph::trace`]); fixed at construction.
    pub(crate) traces: TraceSet,
}

/// Node ids are handed out in blocks: a thread takes [`ID_BLOCK`] ids from
/// the global counter at a time and numbers its nodes from its block.
/// Without blocks every node creation would write one global counter, whose
/// cache line then bounces between threads that build graphs at the same
/// time (and slows every other static that shares the line). Ids stay
/// unique process-wide; they are not ordered across threads, and nothing
/// relies on that. The per-thread state is two integers with no destructor.
const ID_BLOCK: u64 = 1024;

static NEXT_ID_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// `(next, end)` of this thread's current block.
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

pub(crate) fn next_id() -> u64 {
    let fresh_block = || {
        let start = NEXT_ID_BLOCK.fetch_add(ID_BLOCK, Ordering::Relaxed);
        (start, start + ID_BLOCK)
    };
    IDS.try_with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            (next, end) = fresh_block();
        }
        ids.set((next + 1, end));
        next
    })
    // During thread teardown the thread-local may be gone: a block of one.
    .unwrap_or_else(|_| NEXT_ID_BLOCK.fetch_add(1, Ordering::Relaxed))
}

impl Node {
    pub(crate) fn inputs(&self) -> Vec<Array> {
        read(&self.inputs).clone()
    }
    /// True while a transform that this node belongs to is running: its
    /// graph must then survive evaluation.
    pub(crate) fn in_live_trace(&self) -> bool {
        any_live(&self.traces)
    }
    /// Runs `f` on the inputs with them write-locked, then drops them
    /// before the lock is released: while `f` runs and after, no one can
    /// reach an input through this node. For kernels that may overwrite an
    /// input's buffer (see `Primitive::eval_cpu_donating`).
    pub(crate) fn consume_inputs<R>(&self, f: impl FnOnce(&mut [Array]) -> R) -> R {
        let mut inputs = write(&self.inputs);
        let result = f(&mut inputs);
        let taken = std::mem::take(&mut *inputs);
        drop(inputs);
        drop_iteratively(taken);
        result
    }
    pub(crate) fn detach(&self) {
        let taken = std::mem::take(&mut *write(&self.inputs));
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

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = 3 * ID_BLOCK as usize + 7;
        let handles: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(move || (0..per_thread).map(|_| next_id()).collect()))
            .collect();
        let mut seen = HashSet::new();
        for h in handles {
            let ids: Vec<u64> = h.join().expect("thread");
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "increasing per thread");
            for id in ids {
                assert!(seen.insert(id), "id {id} handed out twice");
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
    }
}
