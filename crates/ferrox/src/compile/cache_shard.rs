//! Per-function state of the compile cache: one compiled function's slots
//! (a [`Shard`]), the single-flight record of a trace in progress (a
//! [`Flight`]), and the thread-local "this thread is tracing" marker
//! ([`TraceScope`]).
//!
//! Nothing here runs user code. The cache (`cache.rs`) decides what to do
//! with a slot; this file only holds the data and the blocking hand-off.

use super::FnId;
use crate::error::Result;
use crate::sync::{Arc, AtomicUsize, Condvar, Mutex, lock};
use std::cell::Cell;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::BuildHasherDefault;

/// The slots of one compiled function: every signature it was called with.
///
/// A shard is created when the function's identity is registered and lives
/// in the cache's function map until the last handle of the identity drops.
/// Callers that found it keep it alive through their `Arc`, so a shard can
/// outlive its registration; it then has `released` set and no slots.
///
/// Aligned to its own cache lines: every call of the function locks
/// `state`, and that write must not slow reads of unrelated neighbours.
#[repr(align(128))]
pub(super) struct Shard<K, V> {
    /// The function these slots belong to.
    pub(super) id: FnId,
    /// Lock order: taken after the cache's `evicting` mutex and after (not
    /// inside) its `functions` lock, never while another shard's state or any
    /// flight's outcome is locked. Held only for map operations: no trace runs
    /// and no value is dropped while it is held (values are moved out and
    /// dropped after unlocking, because a value's `Drop` may re-enter the
    /// cache, e.g. a tape that owns another function's identity). The only
    /// user code that runs under it is `K`'s `Hash`, `Eq` and `Clone`.
    pub(super) state: Mutex<ShardState<K, V>>,
    /// Traces started for this function (successful, failed, panicked or
    /// private). Only ever incremented; survives `erase` and `clear`.
    pub(super) traces: AtomicUsize,
}

/// What [`Shard::state`] guards.
pub(super) struct ShardState<K, V> {
    /// Set once, when the function's last identity handle drops; never
    /// cleared. Invariant: `released` implies `slots` is empty, and nothing
    /// is inserted into a released shard (so no entry can be resurrected by a
    /// trace that lands after the release).
    pub(super) released: bool,
    /// One slot per signature. Invariant: the cache's `len` counter equals
    /// the number of `Ready` slots over all shards, updated in the same
    /// critical section that inserts or removes a `Ready` slot.
    pub(super) slots: SlotMap<K, V>,
}

/// The slots of one function, by signature. The hasher has fixed keys, so
/// iteration (and therefore drop) order depends only on the operations
/// done: loom replays executions and requires the same sequence of
/// synchronisation operations (value drops release `Arc`s) each time.
/// Signatures are not attacker-chosen, so a seeded hasher buys nothing.
pub(super) type SlotMap<K, V> = HashMap<K, Slot<V>, BuildHasherDefault<DefaultHasher>>;

/// One signature of one function.
pub(super) enum Slot<V> {
    /// A finished trace. `last_used` is a stamp from the cache's clock,
    /// refreshed on every hit (see `CompileCache::clock`); the smallest
    /// stamp is evicted first.
    Ready { value: Arc<V>, last_used: u64 },
    /// A trace in progress. The tracer replaces this slot with `Ready` (or
    /// removes it) only if the slot still holds this very flight
    /// (`Arc::ptr_eq`): `erase`, `clear` and the release of the function
    /// remove in-flight slots, and a later call may have started a new
    /// flight for the same signature since.
    Tracing(Arc<Flight<V>>),
}

impl<K, V> Shard<K, V> {
    pub(super) fn new(id: FnId) -> Self {
        Shard {
            id,
            state: Mutex::new(ShardState {
                released: false,
                slots: SlotMap::default(),
            }),
            traces: AtomicUsize::new(0),
        }
    }
}

/// The hand-off between the one thread that traces a signature and the
/// threads that asked for it meanwhile.
///
/// Waiters block on `landed` holding only `outcome`'s mutex, which the trace
/// never needs, so waiting cannot block the trace (nor hits on other slots:
/// the shard is not locked while waiting). The outcome is written exactly
/// once, under the mutex, before `notify_all`; a waiter checks it under the
/// same mutex before sleeping, so no wake-up is lost.
pub(super) struct Flight<V> {
    /// The thread running the trace: a call for the same slot from this
    /// thread is a recursive trace and fails instead of waiting on itself.
    pub(super) tracer: ThreadId,
    /// `None` until the trace lands. Lock order: innermost; nothing else is
    /// locked while it is held.
    outcome: Mutex<Option<Result<Arc<V>>>>,
    landed: Condvar,
}

impl<V> Flight<V> {
    /// A flight traced by the current thread.
    pub(super) fn new() -> Self {
        Flight {
            tracer: current_thread(),
            outcome: Mutex::new(None),
            landed: Condvar::new(),
        }
    }

    /// Blocks (on a condvar, no spinning) until the trace lands.
    pub(super) fn wait(&self) -> Result<Arc<V>> {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(result) = &*outcome {
                return result.clone();
            }
            outcome = match self.landed.wait(outcome) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }

    /// Publishes the trace's result and wakes every waiter. Called once.
    pub(super) fn land(&self, result: Result<Arc<V>>) {
        *lock(&self.outcome) = Some(result);
        self.landed.notify_all();
    }
}

// Thread identity and thread-local state come from loom with the `loom` feature:
// loom runs its threads on one OS thread, so std's ids and thread-locals
// would be shared between them. `crate::sync` has no thread re-exports, so
// the switch lives here.
#[cfg(feature = "loom")]
pub(super) use loom::thread::ThreadId;
#[cfg(not(feature = "loom"))]
pub(super) use std::thread::ThreadId;

/// The id of the calling thread.
pub(super) fn current_thread() -> ThreadId {
    #[cfg(feature = "loom")]
    return loom::thread::current().id();
    #[cfg(not(feature = "loom"))]
    return std::thread::current().id();
}

#[cfg(feature = "loom")]
loom::thread_local! {
    static TRACE_DEPTH: Cell<usize> = Cell::new(0);
}
#[cfg(not(feature = "loom"))]
std::thread_local! {
    static TRACE_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Marks the calling thread as running a trace for as long as it lives.
///
/// A thread that is inside a trace never waits on another thread's flight
/// (it traces privately instead), so no cycle of threads waiting on each
/// other's traces can form: every thread in such a cycle would have to be
/// both tracing and waiting.
pub(super) struct TraceScope(());

impl TraceScope {
    pub(super) fn enter() -> Self {
        // `try_with` fails only during thread-local teardown, where nothing
        // traces; ignoring it keeps this path panic-free.
        let _ = TRACE_DEPTH.try_with(|depth| depth.set(depth.get() + 1));
        TraceScope(())
    }

    /// True while the calling thread is inside any trace.
    pub(super) fn active() -> bool {
        TRACE_DEPTH
            .try_with(|depth| depth.get() > 0)
            .unwrap_or(false)
    }
}

impl Drop for TraceScope {
    fn drop(&mut self) {
        let _ = TRACE_DEPTH.try_with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use crate::error::{Error, ErrorKind};
    use std::time::Duration;

    #[test]
    fn a_waiter_gets_the_landed_value() {
        let flight = Arc::new(Flight::<u32>::new());
        let waiter = {
            let flight = flight.clone();
            std::thread::spawn(move || flight.wait())
        };
        std::thread::sleep(Duration::from_millis(20));
        flight.land(Ok(Arc::new(5)));
        assert_eq!(*waiter.join().unwrap().unwrap(), 5);
        // Late waiters return at once.
        assert_eq!(*flight.wait().unwrap(), 5);
    }

    #[test]
    fn a_waiter_gets_the_landed_error() {
        let flight = Flight::<u32>::new();
        let err = Error::new(ErrorKind::Runtime, "compile", "failed");
        flight.land(Err(err.clone()));
        assert_eq!(flight.wait().unwrap_err(), err);
    }

    #[test]
    fn the_tracer_is_the_creating_thread() {
        let flight = Flight::<u32>::new();
        assert_eq!(flight.tracer, current_thread());
        let other = std::thread::spawn(current_thread).join().unwrap();
        assert_ne!(flight.tracer, other);
    }

    #[test]
    fn trace_scopes_nest_and_unwind() {
        assert!(!TraceScope::active());
        {
            let _outer = TraceScope::enter();
            {
                let _inner = TraceScope::enter();
                assert!(TraceScope::active());
            }
            assert!(TraceScope::active());
            // Per thread: another thread is not tracing.
            assert!(!std::thread::spawn(TraceScope::active).join().unwrap());
        }
        assert!(!TraceScope::active());
        let unwound = std::panic::catch_unwind(|| {
            let _scope = TraceScope::enter();
            panic!("trace panicked");
        });
        assert!(unwound.is_err());
        assert!(!TraceScope::active());
    }
}
