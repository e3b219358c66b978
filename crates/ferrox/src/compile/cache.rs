//! The compile cache: traced graphs ("tapes") of compiled functions, keyed by
//! the function's identity and its call signature, shared by every thread.
//!
//! `compile(f)` returns a function whose first call per signature traces `f`
//! and whose later calls replay the trace. This module stores those traces.
//! It is generic: values are `Arc<V>` for any `V: Send + Sync + 'static`,
//! keys are `(FnId, K)` for any [`CacheKey`] `K` (the signature).
//!
//! # Promises (DESIGN.md §2, items 2–5)
//!
//! * **One cache for the process.** The compile layer keeps one
//!   `CompileCache<Signature, Tape>` for the process
//!   ([`crate::compile::tape_cache`]) and registers every compiled function
//!   there ([`FnIdentity::new_in`]). The cache is generic over key and value
//!   so that the loom models and the tests run this very code on small
//!   types, in private caches of their own ([`CompileCache::new`]).
//! * **Single flight.** Concurrent first calls with one key trace exactly
//!   once ([`CompileCache::get_or_trace`]). The tracer runs the trace with no
//!   cache lock held; the others block on a condvar of that one trace (a
//!   `Flight`), holding no lock the trace needs. A trace for one key never
//!   blocks a hit on another key (the function's shard mutex is held only
//!   for a map lookup) or on another function (each function has its own
//!   shard, found through a read-mostly map, or directly from its
//!   [`FnIdentity`]). A failed or panicking trace leaves no entry: its error
//!   goes to its caller and to every caller waiting on it (a panic
//!   continues to unwind in the tracer), and the next call traces again.
//! * **Recursion cannot deadlock.** A trace may call the cache for another
//!   key or function on the same thread. A trace that asks for its own key
//!   gets an error (the slot records the tracing thread). A thread that is
//!   inside any trace never waits on another thread's trace: it traces
//!   privately (its result is returned, not cached), so threads can never
//!   wait on each other in a cycle.
//! * **Entries are owned.** Callers get `Arc<V>`; [`CompileCache::erase`],
//!   [`CompileCache::clear`], eviction and release only drop the cache's own
//!   references.
//! * **Erase follows identity.** When the last clone of an [`FnIdentity`]
//!   drops, on any thread, the function's entries leave the cache and the
//!   function is unregistered; a trace still running for it inserts
//!   nothing. [`CompileCache::clear`] works from any thread, also while
//!   traces run (they insert nothing).
//! * **Bounded.** At most [`CompileCache::max_entries`] entries (default
//!   [`DEFAULT_MAX_ENTRIES`]); the least recently used entry is evicted.
//!
//! # Locks, in the order they may be taken
//!
//! 1. `CompileCache::evicting` — one evictor at a time.
//! 2. `CompileCache::functions` (read or write) — never held while taking
//!    any other lock: readers clone the shard `Arc`s they need and unlock.
//! 3. one shard's `state` — never two at once.
//! 4. one flight's `outcome` — nothing else is held with it.
//!
//! No lock is held while a trace runs, and no value, key or shard removed
//! from the cache is dropped while a lock is held (a value's `Drop` may
//! re-enter the cache, e.g. a tape that owns another function's identity).
//! All primitives come from [`crate::sync`], so the loom models in
//! `tests/loom_cache.rs` check this very code.
//!
//! ```
//! use ferrox::compile::cache::{CompileCache, FnIdentity};
//! use ferrox::sync::Arc;
//! let cache = Arc::new(CompileCache::<Vec<usize>, String>::new());
//! let f = FnIdentity::new_in(&cache);
//! let first = f.get_or_trace(vec![2, 3], || Ok("tape for [2, 3]".to_string()))?;
//! let again = f.get_or_trace(vec![2, 3], || unreachable!("a hit does not trace"))?;
//! assert!(Arc::ptr_eq(&first, &again));
//! assert_eq!((cache.len(), f.traces()), (1, 1));
//! drop(f); // the last handle: its entries leave the cache
//! assert!(cache.is_empty());
//! # Ok::<(), ferrox::Error>(())
//! ```

#[path = "cache_identity.rs"]
mod cache_identity;
#[path = "cache_shard.rs"]
mod cache_shard;

pub use cache_identity::{FnId, FnIdentity};

use crate::error::{Error, Result};
use crate::sync::{Arc, AtomicU64, AtomicUsize, Mutex, Ordering, RwLock, lock, read, write};
use cache_shard::{Flight, Shard, Slot, SlotMap, TraceScope, current_thread};
use std::collections::BTreeMap;
use std::hash::Hash;

/// What a call signature must be: hashable, comparable, cloneable, and
/// shareable between threads. Implemented for every such type.
///
/// `Hash`, `Eq`, `Clone` and `Drop` of a key may run under a cache lock, so
/// they must not call into the cache.
///
/// ```
/// use ferrox::compile::cache::CacheKey;
/// fn is_key<K: CacheKey>() {}
/// is_key::<(Vec<usize>, u8)>();
/// ```
pub trait CacheKey: Hash + Eq + Clone + Send + Sync + 'static {}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> CacheKey for T {}

/// The entry bound of a new cache.
///
/// ```
/// use ferrox::compile::cache::{CompileCache, DEFAULT_MAX_ENTRIES};
/// assert_eq!(CompileCache::<u8, u8>::new().max_entries(), DEFAULT_MAX_ENTRIES);
/// ```
pub const DEFAULT_MAX_ENTRIES: usize = 1024;

/// A thread-safe cache of traces, keyed by function identity and signature.
///
/// See the [module documentation](self) for the promises and the lock
/// order. [`crate::compile::tape_cache`] is the process-wide one.
///
/// ```
/// use ferrox::compile::cache::{CompileCache, FnIdentity};
/// use ferrox::sync::Arc;
/// let cache = Arc::new(CompileCache::<u32, u64>::new());
/// let f = FnIdentity::new_in(&cache);
/// let handles: Vec<_> = (0..4)
///     .map(|_| {
///         let f = f.clone();
///         std::thread::spawn(move || f.get_or_trace(7, || Ok(49)).map(|v| *v))
///     })
///     .collect();
/// for h in handles {
///     assert_eq!(h.join().unwrap()?, 49);
/// }
/// assert_eq!(cache.traces(f.id()), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct CompileCache<K, V> {
    /// Every registered function's shard. Read-locked to find a shard by id
    /// (calls by id, `erase`, `contains`, `traces`) or to snapshot all
    /// shards (`clear`, eviction); write-locked only to register or
    /// unregister a function. Readers clone what they need and unlock before
    /// taking any other lock. A `BTreeMap` keeps iteration deterministic,
    /// which loom's replay requires.
    functions: RwLock<BTreeMap<FnId, Arc<Shard<K, V>>>>,
    /// Held by the one thread that evicts, so concurrent inserts do not each
    /// evict for the same excess. Outermost lock.
    evicting: Mutex<()>,
    /// The entry bound; eviction brings `len` back under it.
    max_entries: AtomicUsize,
    /// The number of `Ready` slots in all shards. Changed only inside the
    /// shard critical section that inserts or removes the slot, so it is
    /// exact whenever no call is in progress; during calls it may exceed
    /// `max_entries` by the inserts that have not finished evicting yet.
    len: AtomicUsize,
    /// Source of `last_used` stamps, advanced by every insert: an insert
    /// takes a fresh value, a hit stamps the current one. Stamps therefore
    /// order uses over all shards up to ties between hits that no insert
    /// separates, and a hit after an insert always stamps above every
    /// entry that insert's eviction scan saw.
    clock: AtomicU64,
}

/// What a call does after looking at its slot (decided under the shard
/// lock, done after releasing it).
enum Next<V> {
    /// Wait for another thread's trace.
    Wait(Arc<Flight<V>>),
    /// Run the trace and land it in the slot.
    Trace(Arc<Flight<V>>),
    /// Run the trace and cache nothing: this thread is inside another trace
    /// and must not wait on another thread's.
    TracePrivately,
}

/// The least recently used entry: its shard, key and stamp.
type Oldest<K, V> = (Arc<Shard<K, V>>, K, u64);

impl<K: CacheKey, V: Send + Sync + 'static> CompileCache<K, V> {
    /// An empty cache bounded to [`DEFAULT_MAX_ENTRIES`] entries.
    ///
    /// ```
    /// use ferrox::compile::cache::CompileCache;
    /// let cache = CompileCache::<u8, u8>::new();
    /// assert!(cache.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_max_entries(DEFAULT_MAX_ENTRIES)
    }

    /// An empty cache bounded to `max_entries` entries (0 caches nothing:
    /// every call traces, and single flight still holds for concurrent
    /// calls).
    ///
    /// ```
    /// use ferrox::compile::cache::CompileCache;
    /// assert_eq!(CompileCache::<u8, u8>::with_max_entries(8).max_entries(), 8);
    /// ```
    pub fn with_max_entries(max_entries: usize) -> Self {
        CompileCache {
            functions: RwLock::new(BTreeMap::new()),
            evicting: Mutex::new(()),
            max_entries: AtomicUsize::new(max_entries),
            len: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
        }
    }

    /// The value cached for `(fn_id, key)`, or the result of `trace`.
    ///
    /// * A hit returns the cached `Arc` and marks the entry recently used.
    /// * On a miss, exactly one of the threads asking for the key runs
    ///   `trace`, with no cache lock held; the others block until it lands
    ///   and get the same `Arc` or the same error. A successful result is
    ///   cached (unless the entry was erased, cleared or the function
    ///   released meanwhile); an error or a panic caches nothing, and the
    ///   next call traces again. A panic unwinds into the tracer's caller;
    ///   its waiters get a `Runtime` error.
    /// * A trace that asks for its own key (same function, same key, same
    ///   thread) gets an `Unsupported` error instead of deadlocking. A trace
    ///   may ask for other keys and functions; if one of them is being traced
    ///   by another thread, it traces privately instead of waiting.
    ///
    /// Errors: `fn_id` is not registered (its last [`FnIdentity`] dropped,
    /// or it belongs to another cache); the cases above; `trace`'s error.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, String>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// let tape = cache.get_or_trace(f.id(), 3, || Ok("three".to_string()))?;
    /// assert_eq!(*tape, "three");
    /// let failed = cache.get_or_trace(f.id(), 4, || {
    ///     Err(ferrox::Error::new(ferrox::ErrorKind::Shape, "f", "bad shape"))
    /// });
    /// assert_eq!(failed.unwrap_err().to_string(), "f: bad shape");
    /// assert!(!cache.contains(f.id(), &4)); // a failure leaves no entry
    /// let id = f.id();
    /// drop(f);
    /// assert!(cache.get_or_trace(id, 3, || Ok(String::new())).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn get_or_trace(
        &self,
        fn_id: FnId,
        key: K,
        trace: impl FnOnce() -> Result<V>,
    ) -> Result<Arc<V>> {
        let shard = self.shard(fn_id).ok_or_else(|| not_registered(fn_id))?;
        self.get_or_trace_in(&shard, key, trace)
    }

    /// [`get_or_trace`](Self::get_or_trace) for a shard already in hand.
    fn get_or_trace_in(
        &self,
        shard: &Shard<K, V>,
        key: K,
        trace: impl FnOnce() -> Result<V>,
    ) -> Result<Arc<V>> {
        let next = {
            let mut state = lock(&shard.state);
            if state.released {
                return Err(not_registered(shard.id));
            }
            match state.slots.get_mut(&key) {
                Some(Slot::Ready { value, last_used }) => {
                    return Ok(self.hit(value, last_used));
                }
                Some(Slot::Tracing(flight)) if flight.tracer == current_thread() => {
                    return Err(Error::unsupported(
                        "compile",
                        format!(
                            "{} was called with the signature it is being traced for, from \
                             inside that trace; a recursive compiled call must change its \
                             signature",
                            shard.id
                        ),
                    ));
                }
                Some(Slot::Tracing(_)) if TraceScope::active() => Next::TracePrivately,
                Some(Slot::Tracing(flight)) => Next::Wait(flight.clone()),
                None => {
                    let flight = Arc::new(Flight::new());
                    state
                        .slots
                        .insert(key.clone(), Slot::Tracing(flight.clone()));
                    Next::Trace(flight)
                }
            }
        };
        match next {
            Next::Wait(flight) => flight.wait(),
            Next::TracePrivately => {
                shard.traces.fetch_add(1, Ordering::Relaxed);
                let _scope = TraceScope::enter();
                trace().map(Arc::new)
            }
            Next::Trace(flight) => {
                shard.traces.fetch_add(1, Ordering::Relaxed);
                let mut landing = Landing {
                    cache: self,
                    shard,
                    key: Some(key),
                    flight,
                    _scope: TraceScope::enter(),
                };
                let result = trace().map(Arc::new);
                landing.land(&result);
                result
            }
        }
    }

    /// A hit: marks the entry recently used and returns its value.
    fn hit(&self, value: &Arc<V>, last_used: &mut u64) -> Arc<V> {
        // A hit reads the clock (inserts advance it), so the hot path writes
        // no shared counter; hits between two inserts tie, which only
        // coarsens the LRU order among them.
        let now = self.clock.load(Ordering::Relaxed);
        if *last_used != now {
            *last_used = now;
        }
        value.clone()
    }

    /// The finished value for `key` in `shard`, if there is one; never
    /// traces and never waits (a trace in progress is `None`).
    fn get_ready_in(&self, shard: &Shard<K, V>, key: &K) -> Option<Arc<V>> {
        let mut state = lock(&shard.state);
        if state.released {
            return None;
        }
        match state.slots.get_mut(key) {
            Some(Slot::Ready { value, last_used }) => Some(self.hit(value, last_used)),
            _ => None,
        }
    }

    /// Removes every entry of `fn_id` (a no-op for unknown ids). The
    /// function stays registered: its next call traces again. Traces of it
    /// that are running insert nothing. Values that callers hold stay valid.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// let held = f.get_or_trace(1, || Ok(10))?;
    /// cache.erase(f.id());
    /// assert!(cache.is_empty());
    /// assert_eq!(*held, 10);
    /// f.get_or_trace(1, || Ok(11))?;
    /// assert_eq!(f.traces(), 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn erase(&self, fn_id: FnId) {
        if let Some(shard) = self.shard(fn_id) {
            let removed = self.empty(&shard, false);
            drop(removed); // after the shard lock is released
        }
    }

    /// Removes every entry of every function, from any thread. Traces that
    /// started before `clear` was called insert nothing; their callers and
    /// waiters still get their results. Functions stay registered.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let (f, g) = (FnIdentity::new_in(&cache), FnIdentity::new_in(&cache));
    /// f.get_or_trace(1, || Ok(1))?;
    /// g.get_or_trace(1, || Ok(2))?;
    /// std::thread::scope(|s| {
    ///     s.spawn(|| cache.clear());
    /// });
    /// assert!(cache.is_empty());
    /// assert_eq!(cache.function_count(), 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn clear(&self) {
        for shard in self.snapshot() {
            let removed = self.empty(&shard, false);
            drop(removed); // after the shard lock is released
        }
    }

    /// The number of cached entries (finished traces) over all functions.
    /// Exact when no call is in progress.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// for k in 0..3 {
    ///     f.get_or_trace(k, || Ok(k))?;
    /// }
    /// assert_eq!(cache.len(), 3);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// True when no entry is cached.
    ///
    /// ```
    /// use ferrox::compile::cache::CompileCache;
    /// assert!(CompileCache::<u8, u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of registered functions (live identities).
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u8, u8>::new());
    /// let fs: Vec<_> = (0..3).map(|_| FnIdentity::new_in(&cache)).collect();
    /// assert_eq!(cache.function_count(), 3);
    /// drop(fs);
    /// assert_eq!(cache.function_count(), 0);
    /// ```
    pub fn function_count(&self) -> usize {
        read(&self.functions).len()
    }

    /// How many traces ran (or are running) for `fn_id`: successful, failed,
    /// panicked and private ones. Survives `erase` and `clear`; 0 once the
    /// function is released or for an unknown id.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// f.get_or_trace(1, || Ok(1))?;
    /// f.get_or_trace(1, || Ok(1))?;
    /// f.get_or_trace(2, || Ok(2))?;
    /// assert_eq!(cache.traces(f.id()), 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn traces(&self, fn_id: FnId) -> usize {
        self.shard(fn_id)
            .map_or(0, |shard| shard.traces.load(Ordering::Relaxed))
    }

    /// True when a finished trace for `(fn_id, key)` is cached (a trace in
    /// progress does not count). Does not count as a use for eviction.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// f.get_or_trace(1, || Ok(1))?;
    /// assert!(cache.contains(f.id(), &1));
    /// assert!(!cache.contains(f.id(), &2));
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn contains(&self, fn_id: FnId, key: &K) -> bool {
        self.shard(fn_id).is_some_and(|shard| {
            matches!(lock(&shard.state).slots.get(key), Some(Slot::Ready { .. }))
        })
    }

    /// The entry bound.
    ///
    /// ```
    /// use ferrox::compile::cache::CompileCache;
    /// assert_eq!(CompileCache::<u8, u8>::with_max_entries(3).max_entries(), 3);
    /// ```
    pub fn max_entries(&self) -> usize {
        self.max_entries.load(Ordering::Relaxed)
    }

    /// Sets the entry bound and evicts the least recently used entries that
    /// no longer fit.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// for k in 0..4 {
    ///     f.get_or_trace(k, || Ok(k))?;
    /// }
    /// f.get_or_trace(0, || Ok(0))?; // 0 is now the most recently used
    /// cache.set_max_entries(2);
    /// assert_eq!(cache.len(), 2);
    /// assert!(cache.contains(f.id(), &0) && cache.contains(f.id(), &3));
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn set_max_entries(&self, max_entries: usize) {
        self.max_entries.store(max_entries, Ordering::Relaxed);
        self.evict_over_limit();
    }

    /// Registers a fresh function and returns its shard.
    fn register(&self, fn_id: FnId) -> Arc<Shard<K, V>> {
        let shard = Arc::new(Shard::new(fn_id));
        let replaced = write(&self.functions).insert(fn_id, shard.clone());
        drop(replaced); // None: ids are never reused
        shard
    }

    /// Unregisters `fn_id` and drops its entries (its last identity handle
    /// dropped). Two short critical sections, one after the other; never
    /// waits on a trace. The shard is emptied and marked released before it
    /// leaves the map, so eviction and `len` never see its entries while it
    /// is half gone, and a trace that lands later finds the release and
    /// inserts nothing.
    fn release(&self, fn_id: FnId) {
        let Some(shard) = self.shard(fn_id) else {
            return;
        };
        let removed = self.empty(&shard, true);
        let unregistered = write(&self.functions).remove(&fn_id);
        drop(unregistered);
        drop(removed);
    }

    /// Takes every slot out of `shard` (optionally marking it released) and
    /// returns them, so the caller drops them after the lock is released.
    fn empty(&self, shard: &Shard<K, V>, release: bool) -> SlotMap<K, V> {
        let mut state = lock(&shard.state);
        state.released |= release;
        let slots = std::mem::take(&mut state.slots);
        let ready = slots
            .values()
            .filter(|slot| matches!(slot, Slot::Ready { .. }))
            .count();
        self.len.fetch_sub(ready, Ordering::Relaxed);
        slots
    }

    /// Evicts least recently used entries until `len <= max_entries`.
    ///
    /// Costs a scan of all entries per eviction: evictions happen only after
    /// a trace, which costs far more than scanning the (bounded) cache, and
    /// in exchange a hit only stores a stamp in its own shard — no shared
    /// LRU list to lock on the hot path.
    fn evict_over_limit(&self) {
        if self.len() <= self.max_entries() {
            return;
        }
        // Declared before the guard so that what was evicted (values, and
        // the keys and shard handles used to find them) is dropped after
        // the guard, with no lock held.
        let mut evicted = Vec::new();
        let _one_evictor = lock(&self.evicting);
        while self.len() > self.max_entries() {
            let Some((shard, key, stamp)) = self.least_recently_used() else {
                break;
            };
            let slot = {
                let mut state = lock(&shard.state);
                // Used (restamped) or removed since the scan: scan again.
                let unchanged = matches!(
                    state.slots.get(&key),
                    Some(Slot::Ready { last_used, .. }) if *last_used == stamp
                );
                let slot = if unchanged {
                    state.slots.remove(&key)
                } else {
                    None
                };
                if slot.is_some() {
                    self.len.fetch_sub(1, Ordering::Relaxed);
                }
                slot
            };
            evicted.push((shard, key, slot));
        }
    }

    /// The cached entry with the oldest stamp, over all shards.
    fn least_recently_used(&self) -> Option<Oldest<K, V>> {
        let shards = self.snapshot();
        // (index into `shards`, key, stamp): the shard `Arc` is taken once at
        // the end, so the number of `Arc` operations does not depend on the
        // order in which candidates are found (loom replays need that).
        let mut oldest: Option<(usize, K, u64)> = None;
        for (index, shard) in shards.iter().enumerate() {
            let state = lock(&shard.state);
            for (key, slot) in &state.slots {
                if let Slot::Ready { last_used, .. } = slot {
                    if oldest
                        .as_ref()
                        .is_none_or(|(_, _, stamp)| last_used < stamp)
                    {
                        oldest = Some((index, key.clone(), *last_used));
                    }
                }
            }
        }
        let (index, key, stamp) = oldest?;
        let shard = shards.into_iter().nth(index)?;
        Some((shard, key, stamp))
    }

    /// The shard of `fn_id`, if registered.
    fn shard(&self, fn_id: FnId) -> Option<Arc<Shard<K, V>>> {
        read(&self.functions).get(&fn_id).cloned()
    }

    /// Every registered shard (the map lock is released on return).
    fn snapshot(&self) -> Vec<Arc<Shard<K, V>>> {
        read(&self.functions).values().cloned().collect()
    }

    /// A fresh `last_used` stamp, for an insert.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }
}

impl<K: CacheKey, V: Send + Sync + 'static> Default for CompileCache<K, V> {
    /// Same as [`CompileCache::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// The duty to land one trace: settle its slot and release its waiters.
///
/// Dropped without landing (the trace panicked and is unwinding), it lands
/// a `Runtime` error, so no waiter is left blocked and no slot stays
/// `Tracing`; the panic itself keeps unwinding.
struct Landing<'a, K: CacheKey, V: Send + Sync + 'static> {
    cache: &'a CompileCache<K, V>,
    shard: &'a Shard<K, V>,
    /// `Some` until landed.
    key: Option<K>,
    flight: Arc<Flight<V>>,
    /// Marks this thread as tracing until the landing is done.
    _scope: TraceScope,
}

impl<K: CacheKey, V: Send + Sync + 'static> Landing<'_, K, V> {
    fn land(&mut self, result: &Result<Arc<V>>) {
        let Some(key) = self.key.take() else { return };
        let mut inserted = false;
        let replaced = {
            let mut state = lock(&self.shard.state);
            // Erase, clear and release take the slot out; a later call may
            // have put a new flight in. Either way the slot is not ours and
            // the result is not cached.
            let ours = matches!(
                state.slots.get(&key),
                Some(Slot::Tracing(flight)) if Arc::ptr_eq(flight, &self.flight)
            );
            match result {
                Ok(value) if ours => {
                    inserted = true;
                    self.cache.len.fetch_add(1, Ordering::Relaxed);
                    let ready = Slot::Ready {
                        value: value.clone(),
                        last_used: self.cache.tick(),
                    };
                    state.slots.insert(key, ready)
                }
                Err(_) if ours => state.slots.remove(&key),
                _ => None,
            }
        };
        drop(replaced); // after the shard lock is released
        self.flight.land(result.clone());
        if inserted {
            self.cache.evict_over_limit();
        }
    }
}

impl<K: CacheKey, V: Send + Sync + 'static> Drop for Landing<'_, K, V> {
    fn drop(&mut self) {
        if self.key.is_some() {
            let panicked = Error::runtime(
                "compile",
                format!("the trace of {} panicked", self.shard.id),
            );
            self.land(&Err(panicked));
        }
    }
}

fn not_registered(fn_id: FnId) -> Error {
    Error::value(
        "compile",
        format!(
            "{fn_id} is not registered in this cache (its last handle was dropped, or it belongs \
             to another cache)"
        ),
    )
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::time::Duration;

    fn cache(max_entries: usize) -> Arc<CompileCache<u32, u32>> {
        Arc::new(CompileCache::with_max_entries(max_entries))
    }

    /// Runs `f` on a thread and fails if it does not finish in 10 s
    /// (a deadlock), re-raising its panic if it panicked.
    fn within_10s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => panic!("did not finish within 10 s (deadlock?)"),
        }
    }

    #[test]
    fn a_hit_returns_the_cached_arc() {
        let cache = cache(8);
        let f = FnIdentity::new_in(&cache);
        let a = f.get_or_trace(1, || Ok(10)).unwrap();
        let b = cache.get_or_trace(f.id(), 1, || Ok(11)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!((cache.len(), f.traces(), cache.traces(f.id())), (1, 1, 1));
    }

    #[test]
    fn a_failed_or_panicking_trace_leaves_no_entry_and_counts() {
        let cache = cache(8);
        let f = FnIdentity::new_in(&cache);
        let err = Error::new(ErrorKind::Shape, "f", "no");
        assert_eq!(f.get_or_trace(1, || Err(err.clone())).unwrap_err(), err);
        assert!(cache.is_empty());
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f.get_or_trace(1, || std::panic::resume_unwind(Box::new("boom")))
        }));
        assert!(unwound.is_err());
        assert!(cache.is_empty());
        assert!(!TraceScope::active(), "the trace scope unwound");
        assert_eq!(*f.get_or_trace(1, || Ok(3)).unwrap(), 3);
        assert_eq!(f.traces(), 3);
    }

    #[test]
    fn own_key_recursion_is_an_error_other_keys_nest() {
        let cache = cache(8);
        let f = FnIdentity::new_in(&cache);
        let outer = f.get_or_trace(1, || {
            let own = f.get_or_trace(1, || Ok(0)).unwrap_err();
            assert_eq!(own.kind(), ErrorKind::Unsupported);
            assert!(own.message().contains(&f.id().to_string()), "{own}");
            let nested = f.get_or_trace(2, || Ok(*f.get_or_trace(3, || Ok(3))? + 2))?;
            Ok(*nested + 1)
        });
        assert_eq!(*outer.unwrap(), 6);
        assert_eq!((cache.len(), f.traces()), (3, 3));
    }

    #[test]
    fn unknown_and_released_ids_are_errors() {
        let cache = cache(8);
        let other = cache.clone();
        let stranger = FnIdentity::new_in(&Arc::new(CompileCache::<u32, u32>::new()));
        let e = cache.get_or_trace(stranger.id(), 1, || Ok(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value);
        assert!(
            e.to_string()
                .starts_with(&format!("compile: {} is not registered", stranger.id())),
            "{e}"
        );
        let f = FnIdentity::new_in(&other);
        let id = f.id();
        drop(f);
        assert!(cache.get_or_trace(id, 1, || Ok(1)).is_err());
        assert_eq!(cache.traces(id), 0);
    }

    #[test]
    fn clear_or_erase_during_a_trace_inserts_nothing() {
        let cache = cache(8);
        let f = FnIdentity::new_in(&cache);
        assert_eq!(
            *f.get_or_trace(1, || {
                cache.clear();
                Ok(1)
            })
            .unwrap(),
            1
        );
        assert!(cache.is_empty());
        assert_eq!(
            *f.get_or_trace(2, || {
                cache.erase(f.id());
                Ok(2)
            })
            .unwrap(),
            2
        );
        assert!(cache.is_empty());
        // Registered still: the next call traces and caches.
        f.get_or_trace(2, || Ok(2)).unwrap();
        assert!(cache.contains(f.id(), &2));
    }

    #[test]
    fn a_release_during_a_trace_resurrects_nothing() {
        let cache = cache(8);
        let f = FnIdentity::new_in(&cache);
        let id = f.id();
        let v = cache.get_or_trace(id, 1, move || {
            drop(f); // the last handle, while its function is being traced
            Ok(5)
        });
        assert_eq!(*v.unwrap(), 5);
        assert!(cache.is_empty());
        assert_eq!(cache.function_count(), 0);
        assert!(!cache.contains(id, &1));
    }

    #[test]
    fn the_least_recently_used_entry_is_evicted() {
        let cache = cache(3);
        let f = FnIdentity::new_in(&cache);
        for k in 0..3 {
            f.get_or_trace(k, || Ok(k)).unwrap();
        }
        f.get_or_trace(0, || Ok(0)).unwrap(); // 1 is now the oldest
        let held = f.get_or_trace(3, || Ok(3)).unwrap();
        assert!(!cache.contains(f.id(), &1));
        assert!([0, 2, 3].iter().all(|k| cache.contains(f.id(), k)));
        assert_eq!(cache.len(), 3);
        // Across functions too.
        let g = FnIdentity::new_in(&cache);
        g.get_or_trace(0, || Ok(0)).unwrap();
        assert!(!cache.contains(f.id(), &2));
        assert_eq!(*held, 3);
    }

    #[test]
    fn a_zero_bound_caches_nothing_but_returns_values() {
        let cache = cache(0);
        let f = FnIdentity::new_in(&cache);
        assert_eq!(*f.get_or_trace(1, || Ok(1)).unwrap(), 1);
        assert_eq!(*f.get_or_trace(1, || Ok(2)).unwrap(), 2);
        assert!(cache.is_empty());
        assert_eq!(f.traces(), 2);
    }

    /// A value whose drop re-enters the cache (it owns another function's
    /// identity, whose release locks the cache). Dropping it under a cache
    /// lock would deadlock.
    struct Reentrant(#[allow(dead_code)] Option<FnIdentity<u32, Reentrant>>);

    #[test]
    fn values_are_dropped_outside_the_cache_locks() {
        within_10s(|| {
            let cache = Arc::new(CompileCache::<u32, Reentrant>::with_max_entries(1));
            let f = FnIdentity::new_in(&cache);
            let owned = |cache: &Arc<CompileCache<u32, Reentrant>>| {
                let g = FnIdentity::new_in(cache);
                g.get_or_trace(0, || Ok(Reentrant(None))).unwrap();
                Ok(Reentrant(Some(g)))
            };
            // Erase, clear, eviction and release each drop such a value.
            f.get_or_trace(1, || owned(&cache)).unwrap();
            cache.erase(f.id());
            f.get_or_trace(1, || owned(&cache)).unwrap();
            cache.clear();
            f.get_or_trace(1, || owned(&cache)).unwrap();
            f.get_or_trace(2, || owned(&cache)).unwrap(); // evicts key 1
            drop(f); // releases key 2
            assert_eq!(cache.function_count(), 0);
            assert!(cache.is_empty());
        });
    }

    #[test]
    fn an_in_trace_call_traces_privately_instead_of_waiting() {
        within_10s(|| {
            let cache = cache(8);
            let f = FnIdentity::new_in(&cache);
            let (started_tx, started_rx) = std::sync::mpsc::channel();
            let (finish_tx, finish_rx) = std::sync::mpsc::channel::<()>();
            let tracer = {
                let f = f.clone();
                std::thread::spawn(move || {
                    f.get_or_trace(1, || {
                        started_tx.send(()).unwrap();
                        finish_rx.recv().unwrap();
                        Ok(1)
                    })
                    .map(|v| *v)
                })
            };
            started_rx.recv().unwrap();
            // Key 1 is in flight on the other thread; from inside a trace
            // this thread does not wait for it.
            let g = FnIdentity::new_in(&cache);
            let inner = g
                .get_or_trace(5, || Ok(*f.get_or_trace(1, || Ok(100))?))
                .unwrap();
            assert_eq!(*inner, 100);
            finish_tx.send(()).unwrap();
            assert_eq!(tracer.join().unwrap().unwrap(), 1);
            assert_eq!(
                *f.get_or_trace(1, || Ok(0)).unwrap(),
                1,
                "the private result was not cached"
            );
            assert_eq!(f.traces(), 2);
        });
    }
}
