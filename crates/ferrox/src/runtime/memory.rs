//! Memory: the public counters and limits (MLX's names), and the marker of
//! an evaluation in flight.
//!
//! The buffers themselves ([`Storage`], [`Pod`]) and the buffer cache with
//! its counters are graph state, in `graph/storage.rs` and `graph/pool.rs`
//! (a `Storage` must update the counters on every allocation and free, and
//! the graph may not import the runtime); this module reads and configures
//! them, and re-exports `Storage`, `Pod` and `ALIGN` under their old path.

use crate::graph::pool;
pub use crate::graph::storage::{ALIGN, EXTERNAL_ALIGN, Pod, Storage};

/// Marks an evaluation in flight on this thread for as long as it lives.
pub(crate) struct EvalInFlight {
    stripe: usize,
}

impl EvalInFlight {
    /// Enters an evaluation.
    pub(crate) fn enter() -> EvalInFlight {
        EvalInFlight {
            stripe: pool::eval_entered(),
        }
    }
}

impl Drop for EvalInFlight {
    fn drop(&mut self) {
        pool::eval_exited(self.stripe);
    }
}

/// Bytes held by live arrays.
///
/// ```
/// let before = ferrox::get_active_memory();
/// let a = ferrox::ones(&[1 << 16], ferrox::DType::Float32).unwrap();
/// a.eval().unwrap();
/// assert!(ferrox::get_active_memory() >= before);
/// ```
pub fn get_active_memory() -> usize {
    pool::active_bytes()
}
/// High-water mark of [`get_active_memory`] over the allocations made since
/// start or the last [`reset_peak_memory`]; 0 right after a reset, until the
/// next allocation (as MLX counts it).
///
/// ```
/// let x = ferrox::full(&[4096], 1.0, ferrox::DType::Float32).unwrap();
/// x.eval().unwrap();
/// assert!(ferrox::get_peak_memory() >= 4096 * 4);
/// ```
pub fn get_peak_memory() -> usize {
    pool::peak_bytes()
}
/// Resets the peak to 0: [`get_peak_memory`] then reports the high-water
/// mark of the allocations made after this call.
///
/// ```
/// ferrox::reset_peak_memory();
/// ```
pub fn reset_peak_memory() {
    pool::reset_peak();
}
/// Bytes held in the buffer cache for reuse.
///
/// ```
/// ferrox::clear_cache();
/// assert_eq!(ferrox::get_cache_memory(), 0);
/// ```
pub fn get_cache_memory() -> usize {
    pool::cache_bytes()
}
/// Sets the memory limit and returns the previous one. An allocation larger
/// than the limit fails at once with a `Memory` error. One that would take
/// the active memory over it first releases the buffer cache, then, while
/// other evaluations are in flight, waits up to 20 ms for them to free
/// memory, then proceeds (the limit bounds what is cached and held back,
/// it does not fail work that fits on its own).
///
/// ```
/// let old = ferrox::set_memory_limit(1 << 40);
/// ferrox::set_memory_limit(old);
/// ```
pub fn set_memory_limit(bytes: usize) -> usize {
    pool::swap_memory_limit(bytes)
}
/// The memory limit in bytes (see [`set_memory_limit`]); by default one
/// and a half times the machine's memory.
///
/// ```
/// let old = ferrox::set_memory_limit(1 << 30);
/// assert_eq!(ferrox::get_memory_limit(), 1 << 30);
/// ferrox::set_memory_limit(old);
/// ```
pub fn get_memory_limit() -> usize {
    pool::memory_limit()
}
/// Sets the cache limit and returns the previous one; 0 disables caching.
///
/// ```
/// let old = ferrox::set_cache_limit(0);
/// ferrox::set_cache_limit(old);
/// ```
pub fn set_cache_limit(bytes: usize) -> usize {
    pool::swap_cache_limit(bytes)
}
/// Returns every cached buffer to the system. Works from any thread.
///
/// ```
/// ferrox::clear_cache();
/// ```
pub fn clear_cache() {
    pool::clear_cache();
}

/// The bytes of the buffers behind `arrays`, each buffer counted once
/// (views of one buffer share it). Unevaluated arrays are evaluated first.
///
/// ```
/// let a = ferrox::zeros(&[256], ferrox::DType::Float32)?;
/// let b = a.reshape(&[16, 16])?;
/// assert_eq!(ferrox::runtime::memory::buffer_size(&[a, b])?, 1024);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn buffer_size(arrays: &[crate::graph::array::Array]) -> crate::error::Result<usize> {
    let mut seen = std::collections::HashSet::with_capacity(arrays.len());
    let mut total = 0usize;
    for a in arrays {
        let data = a.data()?;
        if seen.insert(std::sync::Arc::as_ptr(&data.storage)) {
            total += data.storage.len();
        }
    }
    Ok(total)
}
