//! The buffer cache and memory accounting behind [`Storage`](super::storage::Storage).
//!
//! Large allocations are recycled through a process-wide cache keyed by size,
//! because fresh pages cost a fault each on first touch: a 64 MB result that
//! reuses a cached block is written at memory bandwidth instead of at fault
//! speed. Small allocations go straight to the system allocator, whose
//! thread caches are faster than any shared pool.
//!
//! Counters follow MLX's names: active (bytes in live buffers), peak (high
//! water mark of active), cache (bytes held for reuse). Active and cache
//! are exact under concurrency: every change is a single atomic add or
//! subtract. Active is striped over cache lines (a thread adds to and
//! subtracts from its own stripe; readers sum them), so that threads
//! allocating small buffers at the same time write no common line. Peak is
//! exact at allocations of 16 KiB or more and at every read;
//! between those, small allocations are not compared against it.
//!
//! Why this is in `graph` and not in `runtime`: every `Storage` allocation
//! and free must update these counters, and `Storage` is graph state (every
//! evaluated node holds one), while the graph may import nothing above it.
//! So the counters and the cache live here, next to `Storage`, and
//! `runtime/memory.rs` keeps the public face (`get_active_memory`,
//! `set_memory_limit`, `clear_cache`, ...) and the evaluation-in-flight
//! marker, reading and configuring the pool through the `pub(crate)`
//! functions at the end of this file.

use crate::sync::{Condvar, LinePadded, Mutex, lock};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::storage::ALIGN;

/// The longest an allocation over the memory limit waits for other
/// evaluations to free memory before it proceeds anyway.
const BACKPRESSURE_WAIT: Duration = Duration::from_millis(20);
/// How often a waiting allocation re-checks that another evaluation is
/// still in flight (frees also wake it).
const POLL: Duration = Duration::from_millis(1);

thread_local! {
    /// How many evaluations this thread is inside (a plain integer: no
    /// destructor, nothing created behind the user's back).
    static EVAL_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Buffers at least this large go through the cache.
const POOL_MIN: usize = 16 * 1024;
const PAGE: usize = 4096;

/// An owned, 64-byte aligned, initialised byte allocation.
///
/// Invariant: `ptr` points to `capacity` initialised bytes allocated with
/// `Layout::from_size_align(capacity, ALIGN)`; `len <= capacity` bytes are the
/// logical contents. A `RawBuf` is uniquely owned.
pub(super) struct RawBuf {
    ptr: NonNull<u8>,
    capacity: usize,
}

// SAFETY: RawBuf uniquely owns a heap allocation with no thread affinity;
// moving it between threads is moving a Box<[u8]>.
unsafe impl Send for RawBuf {}

impl RawBuf {
    /// The start of the allocation (`capacity` initialised bytes).
    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn new_zeroed(capacity: usize) -> Option<RawBuf> {
        let layout = Layout::from_size_align(capacity.max(1), ALIGN).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        NonNull::new(ptr).map(|ptr| RawBuf {
            ptr,
            capacity: capacity.max(1),
        })
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in new_zeroed with exactly this layout
        // (from_size_align succeeded there with the same arguments).
        unsafe {
            dealloc(
                self.ptr.as_ptr(),
                Layout::from_size_align_unchecked(self.capacity, ALIGN),
            )
        }
    }
}

/// The counters allocations write sit on cache lines of their own, apart
/// from the read-mostly limits and from each other.
struct Pool {
    free: Mutex<BTreeMap<usize, Vec<RawBuf>>>,
    freed: Condvar,
    /// Bytes in live buffers, striped (see the module doc): the sum of the
    /// stripes, wrapping, since a buffer may be freed on another thread's
    /// stripe than the one it was counted on.
    active: [LinePadded<AtomicUsize>; STRIPES],
    peak: LinePadded<AtomicUsize>,
    /// Whether a buffer below `POOL_MIN` (which does not raise `peak` itself,
    /// to keep small allocations off the shared line) was taken since the
    /// last reset: only then may a read of the peak raise it to the current
    /// active bytes.
    small_since_reset: LinePadded<AtomicBool>,
    cache: LinePadded<AtomicUsize>,
    memory_limit: AtomicUsize,
    cache_limit: AtomicUsize,
    waiting_evals: AtomicUsize,
    /// Evaluations in flight, striped like `active` (an `eval` adds to its
    /// thread's stripe on entry and subtracts on exit, so the sum is exact
    /// when read and no two threads write one line).
    evaluating: [LinePadded<AtomicUsize>; STRIPES],
}

/// Stripes of the active-bytes counter.
const STRIPES: usize = 16;

/// The stripe of the calling thread: threads take stripes round-robin at
/// their first allocation (a plain integer per thread, no destructor).
fn my_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
    }
    STRIPE
        .try_with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
            }
            s.get()
        })
        .unwrap_or(0)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let ram = total_ram().unwrap_or(16 << 30);
        Pool {
            free: Mutex::new(BTreeMap::new()),
            freed: Condvar::new(),
            active: std::array::from_fn(|_| LinePadded(AtomicUsize::new(0))),
            peak: LinePadded(AtomicUsize::new(0)),
            small_since_reset: LinePadded(AtomicBool::new(false)),
            cache: LinePadded(AtomicUsize::new(0)),
            memory_limit: AtomicUsize::new(ram.saturating_mul(3) / 2),
            cache_limit: AtomicUsize::new(ram / 4),
            waiting_evals: AtomicUsize::new(0),
            evaluating: std::array::from_fn(|_| LinePadded(AtomicUsize::new(0))),
        }
    })
}

fn total_ram() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn rounded(len: usize) -> usize {
    if len >= POOL_MIN {
        len.div_ceil(PAGE) * PAGE
    } else {
        len.div_ceil(ALIGN) * ALIGN
    }
}

impl Pool {
    fn take(&self, len: usize, zeroed: bool) -> crate::error::Result<RawBuf> {
        let cap = rounded(len);
        self.apply_backpressure(len, cap)?;
        let reused = if cap >= POOL_MIN {
            self.take_cached(cap)
        } else {
            None
        };
        let buf = match reused {
            Some(buf) => {
                if zeroed {
                    // SAFETY: buf owns `capacity` initialised bytes.
                    unsafe { std::ptr::write_bytes(buf.ptr.as_ptr(), 0, buf.capacity) };
                }
                buf
            }
            None => match RawBuf::new_zeroed(cap) {
                Some(b) => b,
                None => {
                    self.clear_cache();
                    RawBuf::new_zeroed(cap).ok_or_else(|| {
                        crate::error::Error::new(
                            crate::error::ErrorKind::Memory,
                            "malloc",
                            format!("could not allocate {len} bytes"),
                        )
                    })?
                }
            },
        };
        self.active[my_stripe()].fetch_add(buf.capacity, Ordering::Relaxed);
        if buf.capacity >= POOL_MIN {
            self.note_peak();
        } else if !self.small_since_reset.load(Ordering::Relaxed) {
            // Read first: the flag is set once per reset, so the line stays
            // shared between threads.
            self.small_since_reset.store(true, Ordering::Relaxed);
        }
        Ok(buf)
    }

    fn take_cached(&self, cap: usize) -> Option<RawBuf> {
        let mut free = lock(&self.free);
        // Smallest cached block that fits without wasting more than half.
        let key = *free.range(cap..=cap.saturating_mul(2)).next()?.0;
        let list = free.get_mut(&key)?;
        let buf = list.pop()?;
        if list.is_empty() {
            free.remove(&key);
        }
        self.cache.fetch_sub(buf.capacity, Ordering::Relaxed);
        Some(buf)
    }

    fn give(&self, buf: RawBuf) {
        let cap = buf.capacity;
        self.active[my_stripe()].fetch_sub(cap, Ordering::Relaxed);
        let cache_limit = self.cache_limit.load(Ordering::Relaxed);
        if cap >= POOL_MIN && self.cache.load(Ordering::Relaxed) + cap <= cache_limit {
            self.cache.fetch_add(cap, Ordering::Relaxed);
            lock(&self.free).entry(cap).or_default().push(buf);
        } else {
            drop(buf);
        }
        if self.waiting_evals.load(Ordering::Relaxed) > 0 {
            self.freed.notify_all();
        }
    }

    /// Over the memory limit, an allocation first returns cached blocks to
    /// the system. An allocation larger than the limit itself can never fit
    /// and fails at once. Otherwise, while another evaluation is in flight
    /// (it may free memory), it waits for frees, for at most
    /// [`BACKPRESSURE_WAIT`] in all, then proceeds over the limit: with no
    /// other evaluation running nothing will be freed, so it does not wait
    /// at all. Allocations under [`POOL_MIN`] bytes are not held back (and
    /// do not sum the active stripes).
    fn apply_backpressure(&self, len: usize, cap: usize) -> crate::error::Result<()> {
        let limit = self.memory_limit.load(Ordering::Relaxed);
        if cap < POOL_MIN || self.active() + cap <= limit {
            return Ok(());
        }
        if cap > limit {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::Memory,
                "malloc",
                format!("{len} bytes exceed the memory limit of {limit} bytes (set_memory_limit)"),
            ));
        }
        self.clear_cache();
        if self.active() + cap <= limit || self.others_evaluating() == 0 {
            return Ok(());
        }
        let deadline = Instant::now() + BACKPRESSURE_WAIT;
        self.waiting_evals.fetch_add(1, Ordering::Relaxed);
        let mut guard = lock(&self.free);
        while self.active() + cap > limit && self.others_evaluating() > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            guard = match self.freed.wait_timeout(guard, (deadline - now).min(POLL)) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        drop(guard);
        self.waiting_evals.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }

    /// Evaluations in flight on other threads than this one.
    fn others_evaluating(&self) -> usize {
        let all = self
            .evaluating
            .iter()
            .fold(0usize, |sum, s| sum.wrapping_add(s.load(Ordering::Relaxed)));
        all.saturating_sub(EVAL_DEPTH.try_with(|d| d.get()).unwrap_or(0))
    }

    /// Bytes in live buffers: the sum of the stripes.
    fn active(&self) -> usize {
        self.active
            .iter()
            .fold(0usize, |sum, s| sum.wrapping_add(s.load(Ordering::Relaxed)))
    }

    /// Raises the peak to the current active bytes; returns the peak.
    fn note_peak(&self) -> usize {
        let now = self.active();
        // Read first: a new peak is rare, and a read leaves the line shared.
        let peak = self.peak.load(Ordering::Relaxed);
        if now > peak {
            self.peak.fetch_max(now, Ordering::Relaxed).max(now)
        } else {
            peak
        }
    }

    fn clear_cache(&self) {
        let drained: Vec<RawBuf> = {
            let mut free = lock(&self.free);
            std::mem::take(&mut *free).into_values().flatten().collect()
        };
        for buf in drained {
            self.cache.fetch_sub(buf.capacity, Ordering::Relaxed);
            drop(buf);
        }
    }
}

/// A buffer of at least `len` bytes for a new `Storage` (zeroed if asked;
/// otherwise a recycled block holds stale but initialised bytes).
pub(super) fn take(len: usize, zeroed: bool) -> crate::error::Result<RawBuf> {
    pool().take(len, zeroed)
}

/// Returns a dropped `Storage`'s buffer to the cache (or the system).
pub(super) fn give(buf: RawBuf) {
    pool().give(buf);
}

/// Bytes in live buffers.
pub(crate) fn active_bytes() -> usize {
    pool().active()
}

/// The high-water mark of the active bytes over the allocations made since
/// start or the last reset (0 right after a reset, as in MLX). Small buffers
/// do not raise the mark when taken, so a read raises it to the current
/// active bytes if one was taken since the reset.
pub(crate) fn peak_bytes() -> usize {
    let p = pool();
    if p.small_since_reset.load(Ordering::Relaxed) {
        p.note_peak()
    } else {
        p.peak.load(Ordering::Relaxed)
    }
}

/// Resets the peak to 0: the next allocation starts a new high-water mark.
pub(crate) fn reset_peak() {
    let p = pool();
    p.small_since_reset.store(false, Ordering::Relaxed);
    p.peak.store(0, Ordering::Relaxed);
}

/// Bytes held in the cache for reuse.
pub(crate) fn cache_bytes() -> usize {
    pool().cache.load(Ordering::Relaxed)
}

/// The memory limit in bytes.
pub(crate) fn memory_limit() -> usize {
    pool().memory_limit.load(Ordering::Relaxed)
}

/// The machine's physical memory in bytes, if the system says.
pub(crate) fn physical_memory() -> Option<usize> {
    total_ram()
}

/// Sets the memory limit; returns the previous one.
pub(crate) fn swap_memory_limit(bytes: usize) -> usize {
    pool().memory_limit.swap(bytes, Ordering::Relaxed)
}

/// Sets the cache limit, releasing the cache if it holds more; returns the
/// previous limit.
pub(crate) fn swap_cache_limit(bytes: usize) -> usize {
    let old = pool().cache_limit.swap(bytes, Ordering::Relaxed);
    if pool().cache.load(Ordering::Relaxed) > bytes {
        pool().clear_cache();
    }
    old
}

/// Returns every cached buffer to the system.
pub(crate) fn clear_cache() {
    pool().clear_cache();
}

/// Counts an evaluation entered on this thread (allocations over the
/// memory limit wait only while other evaluations are in flight); returns
/// the stripe to hand back to [`eval_exited`].
pub(crate) fn eval_entered() -> usize {
    let stripe = my_stripe();
    pool().evaluating[stripe].fetch_add(1, Ordering::Relaxed);
    let _ = EVAL_DEPTH.try_with(|d| d.set(d.get() + 1));
    stripe
}

/// Ends an evaluation counted by [`eval_entered`].
pub(crate) fn eval_exited(stripe: usize) {
    pool().evaluating[stripe].fetch_sub(1, Ordering::Relaxed);
    let _ = EVAL_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
}
