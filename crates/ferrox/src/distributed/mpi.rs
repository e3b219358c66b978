//! The MPI engine (feature `mpi`), through the `mpi` crate.
//!
//! MPI starts once per process with `MPI_THREAD_MULTIPLE` (anything less is
//! an error: any thread may evaluate a collective). Every group owns a
//! communicator of its own (the world group a duplicate of
//! `MPI_COMM_WORLD`), so ferrox's traffic never mixes with the user's own
//! MPI calls and two groups can run at once from two threads.
//!
//! Shutdown (contract item 8): MPI is finalised by an `atexit` handler,
//! registered when ferrox starts MPI, on whatever thread exits, and only
//! if no call into MPI is running then (a thread blocked in a collective at
//! exit makes the handler leave MPI as it is: the process still exits;
//! `mpirun` then reports a rank that did not finalise). A communicator
//! dropped after finalisation (or while it runs) is leaked, never freed
//! into a finalised library. MPI started by someone else (mpi4py) is never
//! finalised by ferrox.
//!
//! Errors inside MPI follow MPI's default handler (`MPI_ERRORS_ARE_FATAL`):
//! a lost peer ends the job with MPI's message rather than leaving ranks
//! waiting; sizes and ranks are checked here before any call, so the `mpi`
//! crate's assertions never fire on user input.

use super::ops::{ReduceOp, contiguous_input};
use crate::dtype::{Complex64, DType};
use crate::error::{Error, ErrorKind, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::{Pod, Storage};
use crate::sync::{AtomicBool, Mutex, OnceLock, Ordering, lock};
use half::{bf16, f16};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::environment::Threading;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Source};
use std::mem::ManuallyDrop;

/// One communicator of a group.
pub(crate) struct MpiComm {
    comm: ManuallyDrop<SimpleCommunicator>,
}

// SAFETY: an MPI communicator handle is an opaque identifier that the
// library lets any thread use once MPI runs with MPI_THREAD_MULTIPLE,
// which `start` requires (it refuses a lower level, so no `MpiComm` exists
// without it). What MPI forbids — two threads running collectives on one
// communicator at once — is prevented above this type: every operation
// holds its group's busy flag (`Group::enter`), and a communicator is only
// used through its group. The handle itself is never mutated after
// creation; it is freed only in `Drop`, when no other reference exists.
unsafe impl Send for MpiComm {}
// SAFETY: as for `Send`: shared use goes through the group's busy flag.
unsafe impl Sync for MpiComm {}

/// Calls into MPI now running, and whether MPI was finalised.
struct Calls {
    in_flight: usize,
    finalized: bool,
}

static CALLS: Mutex<Calls> = Mutex::new(Calls {
    in_flight: 0,
    finalized: false,
});

/// Whether ferrox initialised MPI (and so finalises it at exit).
static OWNED: AtomicBool = AtomicBool::new(false);

/// One call into MPI, counted so that exit does not finalise under it.
struct InCall;

impl InCall {
    fn enter(op: &str) -> Result<InCall> {
        let mut c = lock(&CALLS);
        if c.finalized {
            return Err(Error::runtime(
                op,
                "MPI was finalised (the process is exiting)",
            ));
        }
        c.in_flight += 1;
        Ok(InCall)
    }
}

impl Drop for InCall {
    fn drop(&mut self) {
        // The lock is only ever held for a counter update or to mark
        // finalisation, never across a call into MPI: this does not block.
        let mut c = lock(&CALLS);
        c.in_flight = c.in_flight.saturating_sub(1);
    }
}

extern "C" fn finalize_at_exit() {
    let Ok(mut c) = CALLS.try_lock() else { return };
    if c.finalized || c.in_flight > 0 {
        return;
    }
    c.finalized = true;
    drop(c);
    if OWNED.load(Ordering::Acquire) {
        // SAFETY: MPI was initialised by `start` (OWNED), no call into MPI
        // is running (in_flight was 0 and `finalized` now refuses new
        // ones), and MPI_Finalize runs once (`finalized` was false).
        unsafe {
            mpi::ffi::MPI_Finalize();
        }
    }
}

// SAFETY: the declaration matches C's `int atexit(void (*)(void))`; the
// callback type is a plain `extern "C" fn()`, which has that ABI.
unsafe extern "C" {
    /// The C library's `atexit` (std links the C library).
    fn atexit(cb: extern "C" fn()) -> std::ffi::c_int;
}

/// Starts MPI once; the outcome (and its error) is the same for every call.
fn start() -> Result<()> {
    static STARTED: OnceLock<Result<()>> = OnceLock::new();
    STARTED
        .get_or_init(|| {
            let provided = if mpi::is_initialized() {
                mpi::environment::threading_support()
            } else {
                let Some((universe, provided)) =
                    mpi::initialize_with_threading(Threading::Multiple)
                else {
                    return Err(Error::runtime("init", "MPI could not be initialised"));
                };
                // The universe's Drop would finalise MPI at once; the exit
                // handler does it instead.
                std::mem::forget(universe);
                OWNED.store(true, Ordering::Release);
                // SAFETY: registering a plain `extern "C" fn()` is always
                // sound; a failed registration only means MPI is not
                // finalised at exit.
                unsafe {
                    atexit(finalize_at_exit);
                }
                provided
            };
            if provided != Threading::Multiple {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    "init",
                    format!(
                        "the MPI library provides thread level {provided:?}; ferrox needs \
                         MPI_THREAD_MULTIPLE (any thread may evaluate a collective)"
                    ),
                ));
            }
            Ok(())
        })
        .clone()
}

fn rank_size(c: &SimpleCommunicator) -> (usize, usize) {
    (
        usize::try_from(c.rank()).unwrap_or(0),
        usize::try_from(c.size()).unwrap_or(1),
    )
}

/// The job's group: a duplicate of `MPI_COMM_WORLD`.
pub(super) fn world() -> Result<(usize, usize, MpiComm)> {
    start()?;
    let _call = InCall::enter("init")?;
    let comm = SimpleCommunicator::world().duplicate();
    let (rank, size) = rank_size(&comm);
    Ok((
        rank,
        size,
        MpiComm {
            comm: ManuallyDrop::new(comm),
        },
    ))
}

impl Drop for MpiComm {
    fn drop(&mut self) {
        // Never blocks: when exit is finalising (the lock is taken) or has
        // finalised MPI, the handle is leaked instead of freed.
        let Ok(c) = CALLS.try_lock() else { return };
        if c.finalized {
            return;
        }
        // SAFETY: the communicator is dropped once, here; MPI is not
        // finalised and cannot be until `c` is released.
        unsafe { ManuallyDrop::drop(&mut self.comm) };
    }
}

/// An MPI count (a C int) for `n` elements, or the error naming `op`.
fn count(op: &str, n: usize) -> Result<()> {
    if i32::try_from(n).is_err() {
        return Err(Error::value(
            op,
            format!("{n} elements exceed MPI's count limit (2^31 - 1) for one message"),
        ));
    }
    Ok(())
}

/// The contiguous elements of an input as `T`s.
fn elems<T: Pod>(d: &Data, n: usize) -> &[T] {
    let all = d.storage.as_slice::<T>();
    all.get(d.offset..d.offset + n).unwrap_or(&[])
}

/// Runs `$body` with `$T` an unsigned integer of the dtype's element size
/// (moving bytes needs no arithmetic, and a wider element than `u8` keeps
/// large arrays under MPI's count limit).
macro_rules! with_bits {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype.size() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

fn alloc(out: OutSpec<'_>) -> Result<Storage> {
    let n: usize = out.shape.iter().product();
    Storage::new(n * out.dtype.size(), out.dtype == DType::Bool)
}

impl MpiComm {
    /// The group of the processes passing `color`, ordered by `key`.
    pub(super) fn split(&self, color: i32, key: i32) -> Result<(usize, usize, MpiComm)> {
        let _call = InCall::enter("split")?;
        let comm = self
            .comm
            .split_by_color_with_key(mpi::topology::Color::with_value(color), key)
            .ok_or_else(|| Error::runtime("split", "MPI returned no communicator"))?;
        let (rank, size) = rank_size(&comm);
        Ok((
            rank,
            size,
            MpiComm {
                comm: ManuallyDrop::new(comm),
            },
        ))
    }

    /// `op` over every process's `x`, elementwise.
    pub(super) fn all_reduce(
        &self,
        name: &str,
        op: ReduceOp,
        x: &Operand<'_>,
        out: OutSpec<'_>,
    ) -> Result<Data> {
        let n = x.shape.iter().product::<usize>();
        count(name, n)?;
        let src = contiguous_input(x)?;
        let mut storage = alloc(out)?;
        let _call = InCall::enter(name)?;
        macro_rules! native {
            ($T:ty, $sys:expr) => {{
                self.comm
                    .all_reduce_into(elems::<$T>(&src, n), storage.as_mut_slice::<$T>(), $sys);
            }};
        }
        let sys = match op {
            ReduceOp::Sum => SystemOperation::sum(),
            ReduceOp::Max => SystemOperation::max(),
            ReduceOp::Min => SystemOperation::min(),
        };
        match x.dtype {
            // Bool as bytes: sum and max are "or", min is "and".
            DType::Bool => native!(
                u8,
                if op == ReduceOp::Min {
                    SystemOperation::bitwise_and()
                } else {
                    SystemOperation::bitwise_or()
                }
            ),
            DType::UInt8 => native!(u8, sys),
            DType::UInt16 => native!(u16, sys),
            DType::UInt32 => native!(u32, sys),
            DType::UInt64 => native!(u64, sys),
            DType::Int8 => native!(i8, sys),
            DType::Int16 => native!(i16, sys),
            DType::Int32 => native!(i32, sys),
            DType::Int64 => native!(i64, sys),
            DType::Float32 => native!(f32, sys),
            DType::Float64 => native!(f64, sys),
            DType::Complex64 if op == ReduceOp::Sum => native!(Complex64, sys),
            // MPI has no half floats and no order on complex numbers: the
            // values are gathered and folded here, in rank order, so every
            // rank computes the same result.
            dtype => {
                let gathered = self.gather_raw(name, &src, n, dtype)?;
                fold_gathered(dtype, op, &gathered, &mut storage, self.size());
            }
        }
        Ok(Data::contiguous(storage, out.shape))
    }

    fn size(&self) -> usize {
        rank_size(&self.comm).1
    }

    /// Every process's `n` elements, in rank order, as bytes.
    fn gather_raw(&self, name: &str, src: &Data, n: usize, dtype: DType) -> Result<Storage> {
        let total = n
            .checked_mul(self.size())
            .ok_or_else(|| Error::value(name, "the gathered size overflows"))?;
        let mut all = Storage::new(total * dtype.size(), dtype == DType::Bool)?;
        with_bits!(dtype, T => self
            .comm
            .all_gather_into(elems::<T>(src, n), all.as_mut_slice::<T>()));
        Ok(all)
    }

    /// Every process's `x`, concatenated along the first axis in rank order.
    pub(super) fn all_gather(&self, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
        let n = x.shape.iter().product::<usize>();
        count("all_gather", n)?;
        let src = contiguous_input(x)?;
        let _call = InCall::enter("all_gather")?;
        let storage = self.gather_raw("all_gather", &src, n, x.dtype)?;
        Ok(Data::contiguous(storage, out.shape))
    }

    /// The sum over processes, of which this process keeps its block of
    /// rows (`out` has `1/size` of `x`'s first axis).
    pub(super) fn sum_scatter(&self, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
        let n = x.shape.iter().product::<usize>();
        let m = out.shape.iter().product::<usize>();
        count("sum_scatter", n)?;
        let src = contiguous_input(x)?;
        let mut storage = alloc(out)?;
        let _call = InCall::enter("sum_scatter")?;
        macro_rules! native {
            ($T:ty, $sys:expr) => {{
                self.comm.reduce_scatter_block_into(
                    elems::<$T>(&src, n),
                    storage.as_mut_slice::<$T>(),
                    $sys,
                );
            }};
        }
        let sum = SystemOperation::sum();
        match x.dtype {
            DType::Bool => native!(u8, SystemOperation::bitwise_or()),
            DType::UInt8 => native!(u8, sum),
            DType::UInt16 => native!(u16, sum),
            DType::UInt32 => native!(u32, sum),
            DType::UInt64 => native!(u64, sum),
            DType::Int8 => native!(i8, sum),
            DType::Int16 => native!(i16, sum),
            DType::Int32 => native!(i32, sum),
            DType::Int64 => native!(i64, sum),
            DType::Float32 => native!(f32, sum),
            DType::Float64 => native!(f64, sum),
            DType::Complex64 => native!(Complex64, sum),
            dtype => {
                let gathered = self.gather_raw("sum_scatter", &src, n, dtype)?;
                let mut whole = Storage::new(n * dtype.size(), false)?;
                fold_gathered(dtype, ReduceOp::Sum, &gathered, &mut whole, self.size());
                let rank = rank_size(&self.comm).0;
                let bytes = m * dtype.size();
                let mine = whole
                    .as_slice::<u8>()
                    .get(rank * bytes..(rank + 1) * bytes)
                    .ok_or_else(|| Error::runtime("sum_scatter", "internal error: block"))?;
                storage.as_mut_slice::<u8>().copy_from_slice(mine);
            }
        }
        Ok(Data::contiguous(storage, out.shape))
    }

    /// Sends `x` to `dst` (blocking until MPI has taken the buffer).
    pub(super) fn send(&self, x: &Operand<'_>, dst: usize) -> Result<()> {
        let n = x.shape.iter().product::<usize>();
        count("send", n)?;
        let dst = i32::try_from(dst).map_err(|_| Error::value("send", "dst out of range"))?;
        let src = contiguous_input(x)?;
        let _call = InCall::enter("send")?;
        with_bits!(x.dtype, T => self
            .comm
            .process_at_rank(dst)
            .send(elems::<T>(&src, n)));
        Ok(())
    }

    /// Receives an array of `out`'s shape and dtype from `src`.
    pub(super) fn recv(&self, out: OutSpec<'_>, src: usize) -> Result<Data> {
        let n = out.shape.iter().product::<usize>();
        count("recv", n)?;
        let src = i32::try_from(src).map_err(|_| Error::value("recv", "src out of range"))?;
        let mut storage = alloc(out)?;
        let _call = InCall::enter("recv")?;
        let got = with_bits!(out.dtype, T => {
            let status = self
                .comm
                .process_at_rank(src)
                .receive_into(storage.as_mut_slice::<T>());
            status.count(T::equivalent_datatype())
        });
        if usize::try_from(got).ok() != Some(n) {
            return Err(Error::value(
                "recv",
                format!("expected {n} elements from rank {src}, the message had {got}"),
            ));
        }
        Ok(Data::contiguous(storage, out.shape))
    }
}

/// Folds `size` blocks of `gathered` (one per rank, in rank order) with
/// `op` into `out` (bytes of one block), for the dtypes MPI cannot reduce.
fn fold_gathered(dtype: DType, op: ReduceOp, gathered: &Storage, out: &mut Storage, size: usize) {
    fn fold<T: Pod>(gathered: &Storage, out: &mut Storage, size: usize, f: impl Fn(T, T) -> T) {
        let all = gathered.as_slice::<T>();
        let n = all.len() / size.max(1);
        let mut acc: Vec<T> = all[..n].to_vec();
        for r in 1..size {
            for (a, &b) in acc.iter_mut().zip(&all[r * n..(r + 1) * n]) {
                *a = f(*a, b);
            }
        }
        if let Some(dst) = out.as_mut_slice::<T>().get_mut(..n) {
            dst.copy_from_slice(&acc);
        }
    }
    fn pick<T: PartialOrd>(op: ReduceOp, a: T, b: T) -> T {
        match op {
            ReduceOp::Max if b > a => b,
            ReduceOp::Min if b < a => b,
            _ => a,
        }
    }
    match dtype {
        DType::Float16 => fold(gathered, out, size, |a: f16, b: f16| match op {
            ReduceOp::Sum => a + b,
            _ => pick(op, a, b),
        }),
        DType::BFloat16 => fold(gathered, out, size, |a: bf16, b: bf16| match op {
            ReduceOp::Sum => a + b,
            _ => pick(op, a, b),
        }),
        // Complex numbers ordered as (real, imaginary) pairs.
        _ => fold(gathered, out, size, |a: Complex64, b: Complex64| match op {
            ReduceOp::Sum => a + b,
            _ => {
                if pick(op, (a.re, a.im), (b.re, b.im)) == (a.re, a.im) {
                    a
                } else {
                    b
                }
            }
        }),
    }
}
