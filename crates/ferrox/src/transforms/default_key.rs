//! The default key of each thread, and how compile traces draw from it.
//!
//! A thread's default key is a plain `Cell` of two words: no destructor,
//! no allocation, nothing to clean up when the thread exits (contract
//! item 7). A fresh thread derives its first key from the process seed and
//! its place in a process-wide count of threads that drew, so threads
//! never share a stream unless they ask to with [`seed`].
//!
//! A compiled function that draws without a key must draw fresh numbers at
//! every call, from the key of the thread that calls it, not replay the
//! numbers of its trace. So while a thread runs a function's body for a
//! compile trace ([`recording_draws`]), each draw from the default key
//! takes a fresh placeholder of that trace instead of host words: the draws
//! become extra inputs of the tape, and each replay feeds them keys split
//! off the calling thread's default key, in the order the trace drew them.
//! Tracing itself leaves the thread's key untouched. This is the one place
//! a trace is found through the thread rather than through the arrays
//! (contract item 6): a draw without a key has no input array to carry the
//! trace, and the key it replaces is per-thread state already.

use crate::backend::cpu::threefry::split2;
use crate::backend::cpu::threefry::{block, threefry2x32};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::array::Array;
use crate::graph::trace::Trace;
use std::cell::{Cell, RefCell};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

thread_local! {
    /// This thread's default key; `None` until the thread first draws or
    /// seeds.
    static KEY: Cell<Option<[u32; 2]>> = const { Cell::new(None) };
}

thread_local! {
    /// How many compile traces this thread is running a body for; the
    /// fast check, with no destructor, that spares threads that never trace
    /// from touching [`RECORDS`].
    static RECORDING: Cell<usize> = const { Cell::new(0) };
    /// The draws of those traces, innermost last. Empty outside traces.
    static RECORDS: RefCell<Vec<Record>> = const { RefCell::new(Vec::new()) };
}

/// One compile trace's draws from the default key.
struct Record {
    trace: Trace,
    keys: Vec<Array>,
}

/// How many threads have derived a default key so far.
static THREADS: AtomicU64 = AtomicU64::new(0);

/// The words of the key made from a 64-bit seed: high word first.
pub(crate) fn seed_words(seed: u64) -> [u32; 2] {
    [(seed >> 32) as u32, seed as u32]
}

/// The process seed: the wall clock and the process id, mixed, chosen once.
fn process_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let pid = u64::from(std::process::id());
        let [a, b] = threefry2x32(seed_words(nanos), seed_words(pid));
        (u64::from(a) << 32) | u64::from(b)
    })
}

/// The first key of a thread that has not drawn or seeded: block `n` of
/// the process seed's stream, `n` counting the threads that got one.
fn fresh_key() -> [u32; 2] {
    let n = THREADS.fetch_add(1, Ordering::Relaxed);
    block(seed_words(process_seed()), n)
}

/// A key for one draw, as MLX's key sequence draws it: splits the calling
/// thread's default key in two, keeps the first key as the new default and
/// returns the second.
pub(crate) fn next_key() -> [u32; 2] {
    // `try_with` fails only while the thread is being torn down; a key from
    // the process stream is as good then.
    KEY.try_with(|k| {
        let (next, sub) = split2(k.get().unwrap_or_else(fresh_key));
        k.set(Some(next));
        sub
    })
    .unwrap_or_else(|_| split2(fresh_key()).1)
}

/// Resets the calling thread's default key to the key of `s`, so the
/// thread's following draws without a key are reproducible, and equal to
/// MLX's after `mlx.core.random.seed(s)`. Other threads' default keys are
/// unchanged.
///
/// ```
/// use ferrox::{DType, random};
/// random::seed(7);
/// let a = random::uniform(0.0, 1.0, &[3], DType::Float32, None)?;
/// random::seed(7);
/// let b = random::uniform(0.0, 1.0, &[3], DType::Float32, None)?;
/// assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn seed(s: u64) {
    let _ = KEY.try_with(|k| k.set(Some(seed_words(s))));
}

/// The calling thread's default key as it stands (the key the next draw
/// splits), without drawing: a uint32 array of shape `[2]`. MLX's
/// `mlx.core.random.state[0]`.
///
/// ```
/// use ferrox::random;
/// random::seed(5);
/// assert_eq!(random::current_key()?.to_vec::<u32>()?, random::key(5)?.to_vec::<u32>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn current_key() -> Result<Array> {
    let words = KEY
        .try_with(|k| {
            let words = k.get().unwrap_or_else(fresh_key);
            k.set(Some(words));
            words
        })
        .unwrap_or_else(|_| fresh_key());
    Array::from_slice(&words, &[2])
}

/// A key for one draw with no key given: inside a compile trace on this
/// thread, a new placeholder of the innermost such trace (recorded as a key
/// input of its tape); elsewhere, the words of [`next_key`].
pub(crate) fn default_key() -> Result<Array> {
    if RECORDING.try_with(|n| n.get()).unwrap_or(0) > 0 {
        let traced = RECORDS.with(|records| {
            let mut records = records.borrow_mut();
            records.last_mut().map(|record| {
                let key = super::tracer::placeholder(vec![2], DType::UInt32, &record.trace);
                record.keys.push(key.clone());
                key
            })
        });
        if let Some(key) = traced {
            return Ok(key);
        }
    }
    Array::from_slice(&next_key(), &[2])
}

/// Runs `f` (the body of a function being traced for compile) so that its
/// draws from the default key become placeholders of `trace`; returns `f`'s
/// result and those placeholders in the order they were drawn. Nests; the
/// record is removed on unwind too.
pub(crate) fn recording_draws<R>(trace: &Trace, f: impl FnOnce() -> R) -> (R, Vec<Array>) {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            let _ = RECORDS.try_with(|r| r.borrow_mut().pop());
            let _ = RECORDING.try_with(|n| n.set(n.get().saturating_sub(1)));
        }
    }
    RECORDS.with(|r| {
        r.borrow_mut().push(Record {
            trace: trace.clone(),
            keys: Vec::new(),
        })
    });
    RECORDING.with(|n| n.set(n.get() + 1));
    let pop = Pop;
    let out = f();
    let keys = RECORDS.with(|r| {
        r.borrow_mut()
            .last_mut()
            .map(|record| std::mem::take(&mut record.keys))
            .unwrap_or_default()
    });
    drop(pop);
    (out, keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_threads_agree_and_fresh_threads_differ() {
        let run = |s: Option<u64>| {
            std::thread::spawn(move || {
                if let Some(s) = s {
                    seed(s);
                }
                [next_key(), next_key()]
            })
            .join()
            .ok()
        };
        assert_eq!(run(Some(7)), run(Some(7)));
        assert_ne!(run(None), run(None));
    }

    #[test]
    fn the_default_key_follows_mlx() {
        // mlx: seed(7); the first draw's key is split(key(7))[1], the state
        // becomes split(key(7))[0].
        seed(7);
        let (state, first) = split2(seed_words(7));
        assert_eq!(next_key(), first);
        assert_eq!(next_key(), split2(state).1);
    }

    #[test]
    fn each_draw_takes_a_new_key() {
        seed(1);
        let (a, b) = (next_key(), next_key());
        assert_ne!(a, b);
        seed(1);
        assert_eq!(next_key(), a);
    }
}
