//! Kernel times per node kind: where an evaluation's time goes.
//!
//! While profiling is on, every kernel that [`eval`](super::eval::eval)
//! runs is timed, from its claim to its result, and the time is added to a
//! process-wide table under its op's name, its output shape and its
//! inputs' shapes. A training step's table is the breakdown that says
//! which products, reductions and fused programs take its time.
//!
//! Off (the default), the cost is one relaxed load per kernel. On, each
//! kernel also formats its key and takes one lock, about a microsecond: the
//! times of tiny kernels include it.

use crate::graph::array::Array;
use crate::sync::{Mutex, lock, read};
use std::collections::HashMap;
// A process-wide flag and the table's one-time creation, outside what the
// loom models explore (as `pending`'s table); the table's lock is ours.
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);

/// (op, output shape, input shapes) -> (total time, kernels run).
type Table = HashMap<(&'static str, Vec<usize>, Vec<Vec<usize>>), (Duration, u64)>;

fn table() -> &'static Mutex<Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The kernels of one kind: op, output shape (empty for a group node with
/// several outputs) and input shapes, with their total time.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    /// The op's name (`Primitive::name`).
    pub op: &'static str,
    /// The node's shape.
    pub shape: Vec<usize>,
    /// Its inputs' shapes, in order.
    pub inputs: Vec<Vec<usize>>,
    /// How many kernels of this kind ran.
    pub calls: u64,
    /// Their time together.
    pub total: Duration,
}

/// Starts (`true`) or stops timing kernels, process-wide; the table keeps
/// what it has.
///
/// ```
/// use ferrox::*;
/// runtime::profile::profile_kernels(true);
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// exp(&x)?.eval()?;
/// runtime::profile::profile_kernels(false);
/// let times = runtime::profile::take_kernel_times();
/// assert!(times.iter().any(|t| t.op == "exp" && t.shape == [2]));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn profile_kernels(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Empties the table and returns it, the kinds that took longest first.
///
/// ```
/// use ferrox::*;
/// use ferrox::runtime::profile::{profile_kernels, take_kernel_times};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// profile_kernels(true);
/// multiply(&x, &x)?.eval()?;
/// profile_kernels(false);
/// assert_eq!(take_kernel_times()[0].op, "multiply");
/// assert!(take_kernel_times().is_empty()); // taken
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn take_kernel_times() -> Vec<KernelTime> {
    let table = std::mem::take(&mut *lock(table()));
    let mut times: Vec<KernelTime> = table
        .into_iter()
        .map(|((op, shape, inputs), (total, calls))| KernelTime {
            op,
            shape,
            inputs,
            calls,
            total,
        })
        .collect();
    times.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.op.cmp(b.op)));
    times
}

/// Runs `kernel`, the computation of `node`'s value, timing it when
/// profiling is on.
pub(crate) fn timed<T>(node: &Array, kernel: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return kernel();
    }
    let key = (
        node.0.op.as_ref().map_or("leaf", |op| op.name()),
        node.shape().to_vec(),
        read(&node.0.inputs)
            .iter()
            .map(|i| i.shape().to_vec())
            .collect(),
    );
    let start = Instant::now();
    let result = kernel();
    let elapsed = start.elapsed();
    let mut table = lock(table());
    let entry = table.entry(key).or_insert((Duration::ZERO, 0));
    entry.0 += elapsed;
    entry.1 += 1;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::*;

    /// The on/off switch is process-wide: tests that turn it take turns.
    static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn kernels_are_timed_only_while_profiling_is_on() -> Result<()> {
        // A shape no other test uses: the table is process-wide.
        let x = Array::from_slice(&[0.5f32; 7 * 13], &[7, 13])?;
        let _turn = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
        profile_kernels(true);
        for _ in 0..3 {
            sin(&x)?.eval()?;
        }
        profile_kernels(false);
        sin(&x)?.eval()?;
        let times = take_kernel_times();
        let sin_times: Vec<_> = times
            .iter()
            .filter(|t| t.op == "sin" && t.shape == [7, 13])
            .collect();
        assert_eq!(sin_times.len(), 1);
        assert_eq!(sin_times[0].calls, 3);
        assert_eq!(sin_times[0].inputs, vec![vec![7, 13]]);
        Ok(())
    }

    /// Threads that evaluate at once all land in the one table: no count
    /// is lost and nothing is kept per thread.
    #[test]
    fn kernels_from_many_threads_are_all_counted() -> Result<()> {
        const THREADS: usize = 4;
        const CALLS: usize = 25;
        // A shape no other test uses: the table is process-wide.
        let x = Array::from_slice(&[0.25f32; 5 * 17], &[5, 17])?;
        eval(std::slice::from_ref(&x))?;
        let start = std::sync::Barrier::new(THREADS);
        let _turn = SWITCH.lock().unwrap_or_else(|p| p.into_inner());
        profile_kernels(true);
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| -> Result<()> {
                        start.wait();
                        for _ in 0..CALLS {
                            cos(&x)?.eval()?;
                        }
                        Ok(())
                    })
                })
                .collect();
            runs.into_iter().try_for_each(|r| {
                r.join()
                    .map_err(|_| Error::runtime("test", "a thread panicked"))?
            })
        })?;
        profile_kernels(false);
        let calls: u64 = take_kernel_times()
            .iter()
            .filter(|t| t.op == "cos" && t.shape == [5, 17])
            .map(|t| t.calls)
            .sum();
        assert_eq!(calls, (THREADS * CALLS) as u64);
        Ok(())
    }
}
