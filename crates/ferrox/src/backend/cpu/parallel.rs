//! When and how to spread work over cores.
//!
//! Work below [`MIN_PAR_ELEMS`] runs on the calling thread: a rayon task costs
//! about a microsecond, which only pays off for tens of thousands of
//! elements. Above it, work is split into chunks of at least that size.

/// Elements per parallel task, at least.
pub const MIN_PAR_ELEMS: usize = 1 << 15;

/// Chunk length for `n` elements so every core gets work but no task is
/// smaller than [`MIN_PAR_ELEMS`].
pub fn chunk_len(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    // A few chunks per thread for balance.
    n.div_ceil(threads * 4).max(MIN_PAR_ELEMS)
}

/// True if `n` elements are worth splitting.
pub fn worth_splitting(n: usize) -> bool {
    n >= 2 * MIN_PAR_ELEMS && rayon::current_num_threads() > 1
}

/// Runs `f` on a thread of the rayon pool, so that the parallel sections
/// inside it fork and join among warm workers.
///
/// A parallel section entered from a thread outside the pool is queued for
/// the pool while the caller sleeps on a latch: a wake-up on each side,
/// about 15-20 µs on a 2-core VM. A kernel that opens several sections in
/// a row (gemm opens one or two per depth block) pays that once here
/// instead of once per section. `f` must not wait on graph values: a
/// worker waiting in a join may pick up other callers' work, and that work
/// must always be able to finish (kernels only read their operands).
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() || rayon::current_num_threads() < 2 {
        f()
    } else {
        rayon::scope(|_| f())
    }
}

/// Runs `f` with pulp's best instruction set (AVX-512 where available, else
/// AVX2+FMA), so simple loops inside it are auto-vectorised for that set.
#[inline(always)]
pub fn simd<R>(f: impl FnOnce() -> R) -> R {
    pulp::Arch::new().dispatch(f)
}
