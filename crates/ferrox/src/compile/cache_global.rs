//! The process-wide compile caches: one per (key, value) type pair, created
//! on first use and kept for the life of the process.
//!
//! Rust has no generic statics, so the caches live in one registry of
//! type-erased boxes and [`CompileCache::global`] finds its own by
//! downcasting. The compile layer uses a single `(Signature, Tape)` pair, so
//! in practice this is the one cache of the process; [`clear_all`] clears
//! every pair anyway. The registry is locked only to find or create a cache
//! (when a function is compiled, or for introspection) and to clear — never
//! on a call through an [`FnIdentity`](super::FnIdentity).
//!
//! Under loom the registry is a loom `lazy_static` (one per model
//! execution, dropped at its end) so that the crate compiles and behaves the
//! same; the loom models themselves build private caches.

use super::{CacheKey, CompileCache};
use crate::sync::{Arc, Mutex, lock};
use std::any::Any;

/// What the registry needs from a cache without knowing its types.
trait AnyCache: Send + Sync {
    fn clear(&self);
    fn as_any(&self) -> &dyn Any;
    fn boxed_clone(&self) -> Box<dyn AnyCache>;
}

impl<K: CacheKey, V: Send + Sync + 'static> AnyCache for Arc<CompileCache<K, V>> {
    fn clear(&self) {
        CompileCache::clear(self);
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn boxed_clone(&self) -> Box<dyn AnyCache> {
        Box::new(self.clone())
    }
}

/// Every process-wide cache, one per type pair. Lock order: outermost; held
/// only to search or extend the list, never while a cache is cleared.
type Registry = Mutex<Vec<Box<dyn AnyCache>>>;

#[cfg(not(loom))]
static CACHES: Registry = Mutex::new(Vec::new());

#[cfg(loom)]
loom::lazy_static! {
    static ref CACHES: Registry = Mutex::new(Vec::new());
}

fn registry() -> &'static Registry {
    &CACHES
}

impl<K: CacheKey, V: Send + Sync + 'static> CompileCache<K, V> {
    /// The process-wide cache for keys `K` and values `V`: every call from
    /// every thread returns the same cache.
    ///
    /// ```
    /// use ferrox::compile::cache::CompileCache;
    /// use ferrox::sync::Arc;
    /// let a = CompileCache::<(u32, u64), Vec<u8>>::global();
    /// let b = std::thread::spawn(CompileCache::<(u32, u64), Vec<u8>>::global).join().unwrap();
    /// assert!(Arc::ptr_eq(&a, &b));
    /// ```
    pub fn global() -> Arc<Self> {
        let mut caches = lock(registry());
        let found = caches
            .iter()
            .find_map(|cache| cache.as_any().downcast_ref::<Arc<Self>>());
        if let Some(cache) = found {
            return cache.clone();
        }
        let created = Arc::new(Self::new());
        caches.push(Box::new(created.clone()));
        created
    }
}

/// Clears every process-wide compile cache (all functions, all signatures),
/// from any thread. Traces in flight still deliver their results to their
/// callers but insert nothing. Registered functions stay registered; their
/// next call traces again.
///
/// ```
/// use ferrox::compile::cache::{clear_all, CompileCache, FnIdentity};
/// let f = FnIdentity::<(u8, u16), String>::new();
/// f.get_or_trace((1, 2), || Ok("tape".into()))?;
/// clear_all();
/// assert!(!CompileCache::<(u8, u16), String>::global().contains(f.id(), &(1, 2)));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn clear_all() {
    // Clone the handles out so no cache is cleared under the registry lock.
    let caches: Vec<Box<dyn AnyCache>> = lock(registry())
        .iter()
        .map(|cache| cache.boxed_clone())
        .collect();
    for cache in caches {
        cache.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::compile::cache::FnIdentity;

    #[derive(Clone, PartialEq, Eq, Hash)]
    struct OnlyHere(u32);

    #[test]
    fn one_cache_per_type_pair() {
        let a = CompileCache::<OnlyHere, u8>::global();
        let b = CompileCache::<OnlyHere, u8>::global();
        let c = CompileCache::<OnlyHere, u16>::global();
        assert!(Arc::ptr_eq(&a, &b));
        assert_ne!(Arc::as_ptr(&a) as *const u8, Arc::as_ptr(&c) as *const u8);
    }

    #[test]
    fn clear_all_reaches_every_pair() {
        let f = FnIdentity::<OnlyHere, u32>::new();
        let g = FnIdentity::<OnlyHere, u64>::new();
        f.get_or_trace(OnlyHere(1), || Ok(1)).unwrap();
        g.get_or_trace(OnlyHere(1), || Ok(1)).unwrap();
        clear_all();
        assert!(!f.cache().contains(f.id(), &OnlyHere(1)));
        assert!(!g.cache().contains(g.id(), &OnlyHere(1)));
        assert_eq!((f.traces(), g.traces()), (1, 1));
    }
}
