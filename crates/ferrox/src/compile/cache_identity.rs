//! Identities of compiled functions: a never-reused number ([`FnId`]) and the
//! owning handle ([`FnIdentity`]) whose last drop erases the function's
//! entries from its cache.

use super::cache_shard::Shard;
use super::{CacheKey, CompileCache};
use crate::error::Result;
use crate::sync::Arc;
use std::fmt;

/// The identity of a compiled function in the compile cache.
///
/// A process-wide counter hands out ids, so an id is never reused — unlike
/// an address, which the allocator recycles (MLX keys its cache by the
/// callable's address, so a new function at an old address can replay a
/// stale trace). Ids come from [`FnIdentity`]; a bare `FnId` does not keep
/// anything alive.
///
/// ```
/// use ferrox::compile::cache::{CompileCache, FnIdentity};
/// use ferrox::sync::Arc;
/// let cache = Arc::new(CompileCache::<u32, String>::new());
/// let (f, g) = (FnIdentity::new_in(&cache), FnIdentity::new_in(&cache));
/// assert_ne!(f.id(), g.id());
/// assert!(f.id().as_u64() > 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FnId(u64);

impl FnId {
    /// A fresh id. The counter is a plain std atomic even under loom: it is
    /// not part of any protocol the model checks, only a source of unique
    /// numbers (and it must be a `static`, which loom's atomics cannot be).
    /// 2^64 allocations do not happen, so it never wraps in practice.
    pub(super) fn fresh() -> FnId {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        FnId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The id as a number (for logs and bindings).
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let f = FnIdentity::new_in(&Arc::new(CompileCache::<u8, u8>::new()));
    /// assert_eq!(f.id().to_string(), format!("function #{}", f.id().as_u64()));
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "function #{}", self.0)
    }
}

/// The owning handle of a compiled function's identity.
///
/// Clones share one identity. When the last clone drops — on any thread —
/// every entry of the function leaves its cache and the id is unregistered;
/// values that callers still hold stay valid (they are `Arc`s). The drop
/// takes two short internal locks and never waits for a trace: a trace of
/// the function that is still running lands its result for its waiters but
/// inserts nothing.
///
/// Calls through the handle go straight to the function's own shard, so a
/// hit takes one uncontended per-function mutex and no cache-wide lock.
///
/// ```
/// use ferrox::compile::cache::{CompileCache, FnIdentity};
/// use ferrox::sync::Arc;
/// let cache = Arc::new(CompileCache::<Vec<usize>, String>::new());
/// let f = FnIdentity::new_in(&cache);
/// let tape = f.get_or_trace(vec![2, 3], || Ok("traced".to_string()))?;
/// let g = f.clone();
/// drop(f);
/// assert!(cache.contains(g.id(), &vec![2, 3])); // a clone is still alive
/// drop(g);
/// assert!(cache.is_empty());
/// assert_eq!(*tape, "traced"); // what a caller holds stays valid
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct FnIdentity<K: CacheKey, V: Send + Sync + 'static> {
    registration: Arc<Registration<K, V>>,
}

/// What the clones of one [`FnIdentity`] share; dropping it releases the
/// function from its cache.
struct Registration<K: CacheKey, V: Send + Sync + 'static> {
    id: FnId,
    /// The function's shard, so calls skip the cache's function map.
    shard: Arc<Shard<K, V>>,
    /// The cache the function is registered in; kept alive by the identity
    /// (the cache never holds identities, so this is not a cycle unless a
    /// cached value owns the identity of its own function — then both live
    /// until the entry is evicted or cleared).
    cache: Arc<CompileCache<K, V>>,
}

impl<K: CacheKey, V: Send + Sync + 'static> FnIdentity<K, V> {
    /// A fresh identity registered in `cache`.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// assert_eq!(cache.function_count(), 1);
    /// drop(f);
    /// assert_eq!(cache.function_count(), 0);
    /// ```
    pub fn new_in(cache: &Arc<CompileCache<K, V>>) -> Self {
        let id = FnId::fresh();
        let shard = cache.register(id);
        FnIdentity {
            registration: Arc::new(Registration {
                id,
                shard,
                cache: cache.clone(),
            }),
        }
    }

    /// The function's id.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let f = FnIdentity::new_in(&Arc::new(CompileCache::<u32, u32>::new()));
    /// assert_eq!(f.clone().id(), f.id());
    /// ```
    pub fn id(&self) -> FnId {
        self.registration.id
    }

    /// The cache the function is registered in.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let cache = Arc::new(CompileCache::<u32, u32>::new());
    /// let f = FnIdentity::new_in(&cache);
    /// assert!(Arc::ptr_eq(f.cache(), &cache));
    /// ```
    pub fn cache(&self) -> &Arc<CompileCache<K, V>> {
        &self.registration.cache
    }

    /// [`CompileCache::get_or_trace`] for this function: the cached value for
    /// `key`, or the result of `trace`, run once however many threads ask at
    /// the same time.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let f = FnIdentity::new_in(&Arc::new(CompileCache::<u32, u32>::new()));
    /// let a = f.get_or_trace(1, || Ok(10))?;
    /// let b = f.get_or_trace(1, || unreachable!("a hit does not trace"))?;
    /// assert!(Arc::ptr_eq(&a, &b));
    /// assert_eq!(f.traces(), 1);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn get_or_trace(&self, key: K, trace: impl FnOnce() -> Result<V>) -> Result<Arc<V>> {
        let r = &*self.registration;
        r.cache.get_or_trace_in(&r.shard, key, trace)
    }

    /// The cached value for `key` if a finished trace is there: a hit as in
    /// [`get_or_trace`](Self::get_or_trace), but a miss or a trace in
    /// progress returns `None` at once instead of tracing or waiting. A
    /// caller that holds a lock a trace may need (a binding's interpreter
    /// lock) can call this, and release the lock only on `None`.
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let f = FnIdentity::new_in(&Arc::new(CompileCache::<u32, u32>::new()));
    /// assert!(f.get_ready(&1).is_none());
    /// f.get_or_trace(1, || Ok(10))?;
    /// assert_eq!(f.get_ready(&1).as_deref(), Some(&10));
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn get_ready(&self, key: &K) -> Option<Arc<V>> {
        let r = &*self.registration;
        r.cache.get_ready_in(&r.shard, key)
    }

    /// How many traces ran for this function (see [`CompileCache::traces`]).
    ///
    /// ```
    /// use ferrox::compile::cache::{CompileCache, FnIdentity};
    /// use ferrox::sync::Arc;
    /// let f = FnIdentity::new_in(&Arc::new(CompileCache::<u32, u32>::new()));
    /// let failure = || Err(ferrox::Error::new(ferrox::ErrorKind::Value, "f", "no"));
    /// assert!(f.get_or_trace(1, failure).is_err());
    /// f.get_or_trace(1, || Ok(1))?;
    /// assert_eq!(f.traces(), 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn traces(&self) -> usize {
        self.registration
            .shard
            .traces
            .load(crate::sync::Ordering::Relaxed)
    }
}

impl<K: CacheKey, V: Send + Sync + 'static> Clone for FnIdentity<K, V> {
    fn clone(&self) -> Self {
        FnIdentity {
            registration: self.registration.clone(),
        }
    }
}

impl<K: CacheKey, V: Send + Sync + 'static> fmt::Debug for FnIdentity<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FnIdentity({})", self.registration.id)
    }
}

impl<K: CacheKey, V: Send + Sync + 'static> Drop for Registration<K, V> {
    /// Never panics and never waits for a trace (see `CompileCache::release`).
    fn drop(&mut self) {
        self.cache.release(self.id);
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused() {
        let cache = Arc::new(CompileCache::<u8, u8>::new());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let f = FnIdentity::new_in(&cache);
            assert!(seen.insert(f.id()));
        }
        assert_eq!(cache.function_count(), 0);
    }

    #[test]
    fn the_last_clone_releases_on_any_thread() {
        let cache = Arc::new(CompileCache::<u8, u8>::new());
        let f = FnIdentity::new_in(&cache);
        f.get_or_trace(1, || Ok(1)).unwrap();
        let clones: Vec<_> = (0..4).map(|_| f.clone()).collect();
        drop(f);
        assert_eq!(cache.len(), 1);
        std::thread::spawn(move || drop(clones)).join().unwrap();
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.function_count(), 0);
    }

    #[test]
    fn debug_names_the_function() {
        let f = FnIdentity::new_in(&Arc::new(CompileCache::<u8, u8>::new()));
        assert_eq!(
            format!("{f:?}"),
            format!("FnIdentity(function #{})", f.id().as_u64())
        );
    }
}
