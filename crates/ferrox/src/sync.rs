//! Synchronisation primitives used by ferrox, in one place so that model
//! checkers can swap them in.
//!
//! Under `--cfg loom` these are loom's types, and the state machines built on
//! them (see [`crate::runtime::cell`]) are explored exhaustively by the loom
//! tests. Everything else uses the standard library's.
//!
//! ```
//! use ferrox::sync::{Arc, Mutex};
//! let m = Arc::new(Mutex::new(1));
//! *m.lock().unwrap() += 1;
//! assert_eq!(*m.lock().unwrap(), 2);
//! ```

#[cfg(loom)]
pub use loom::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

#[cfg(not(loom))]
pub use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard,
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

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
