//! Synchronisation primitives used by ferrox, in one place so that model
//! checkers can swap them in.
//!
//! With the `loom` feature these are loom's types, and the state machines built on
//! them (see [`crate::graph::cell`]) are explored exhaustively by the loom
//! tests. Everything else uses the standard library's.
//!
//! ```
//! use ferrox::sync::{Arc, Mutex};
//! let m = Arc::new(Mutex::new(1));
//! *m.lock().unwrap() += 1;
//! assert_eq!(*m.lock().unwrap(), 2);
//! ```

#[cfg(feature = "loom")]
pub use loom::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

#[cfg(not(feature = "loom"))]
pub use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

#[cfg(feature = "loom")]
pub use loom_once::OnceLock;

/// A model of `std::sync::OnceLock` (the subset ferrox uses) for loom,
/// which has none: a value written once, then read without locking.
#[cfg(feature = "loom")]
mod loom_once {
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{AtomicBool, Ordering};

    /// Set at most once; readers see the value after an acquire load of
    /// `ready` that observes the writer's release store.
    pub struct OnceLock<T> {
        claimed: AtomicBool,
        ready: AtomicBool,
        value: UnsafeCell<Option<T>>,
    }

    // SAFETY: the value is written once, by the one thread that wins
    // `claimed`, before the release store of `ready`; after that it is only
    // read (shared `&T`), which needs `T: Sync`, and it moves in from the
    // writer's thread and drops on whichever thread drops the lock, which
    // needs `T: Send` — the same bounds as std's `OnceLock`.
    unsafe impl<T: Send + Sync> Sync for OnceLock<T> {}

    impl<T> OnceLock<T> {
        /// An empty lock.
        pub fn new() -> Self {
            OnceLock {
                claimed: AtomicBool::new(false),
                ready: AtomicBool::new(false),
                value: UnsafeCell::new(None),
            }
        }
        /// The value, if set.
        pub fn get(&self) -> Option<&T> {
            if !self.ready.load(Ordering::Acquire) {
                return None;
            }
            // SAFETY: `ready` is stored (release) only after the single
            // write below, and the value is never written again, so the
            // acquire load above orders this read after that write.
            self.value.with(|p| unsafe { (*p).as_ref() })
        }
        /// The value, if set, through exclusive access.
        pub fn get_mut(&mut self) -> Option<&mut T> {
            // SAFETY: `&mut self` excludes every other access to the cell.
            self.value.with_mut(|p| unsafe { (*p).as_mut() })
        }
        /// Sets the value unless one is set (then returns `value`).
        pub fn set(&self, value: T) -> Result<(), T> {
            if self.claimed.swap(true, Ordering::AcqRel) {
                return Err(value);
            }
            // SAFETY: only the thread that flipped `claimed` writes, once,
            // and no reader looks before `ready` is stored.
            self.value.with_mut(|p| unsafe { *p = Some(value) });
            self.ready.store(true, Ordering::Release);
            Ok(())
        }
    }

    impl<T> From<T> for OnceLock<T> {
        fn from(value: T) -> Self {
            let lock = OnceLock::new();
            let _ = lock.set(value);
            lock
        }
    }
}

/// Read-locks `l`, recovering the data if a previous holder panicked (see
/// [`lock`]).
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    match l.read() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Write-locks `l`, recovering the data if a previous holder panicked (see
/// [`lock`]).
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    match l.write() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Locks `m`, recovering the data if a previous holder panicked.
///
/// ferrox never panics while holding its own locks on purpose; if a user
/// callback did, the protected state is still consistent because every
/// critical section in the crate only performs single assignments.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A value alone on its cache line(s): 128 bytes, because adjacent-line
/// prefetchers pair 64-byte lines. Used for data that threads write often
/// (counters, reference counts) so that it does not slow the reads of
/// whatever the allocator or linker would otherwise place beside it.
///
/// ```
/// use ferrox::sync::{AtomicUsize, LinePadded, Ordering};
/// let counter = LinePadded(AtomicUsize::new(0));
/// counter.fetch_add(1, Ordering::Relaxed);
/// assert_eq!(std::mem::align_of_val(&counter), 128);
/// ```
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct LinePadded<T>(pub T);

impl<T> std::ops::Deref for LinePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
