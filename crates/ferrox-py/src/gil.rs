//! Leaving the interpreter and coming back: the one way the binding does it,
//! and what keeps a thread safe when the interpreter exits under it.
//!
//! # The problem
//! During finalization, CPython 3.11–3.13 ends a thread that tries to take
//! the interpreter lock (GIL) again with `pthread_exit`. On glibc that is a
//! forced unwind: it runs the cleanup code of every frame it crosses. Through
//! Rust frames it would drop Python objects without the GIL (a crash while
//! the main thread tears the interpreter down), and the `catch_unwind` at
//! pyo3's boundary would catch it ("FATAL: exception not rethrown",
//! SIGABRT). A thread can be inside a ferrox call at that moment in many
//! ways: re-attaching after an evaluation, running a traced Python function
//! that sleeps, or running any Python code that a conversion or an import
//! starts under a Rust frame. (Python 3.14 parks such threads instead.)
//!
//! # What the binding does
//! * **Every thread that calls in is protected** ([`protect_thread`], run by
//!   every entry that may run Python code or leave the interpreter: the
//!   functions here, array creation and argument conversion). It links a
//!   glibc cleanup handler into the thread's cleanup list, once per thread.
//!   `pthread_exit` calls the handlers whose buffers its unwind has left; the
//!   buffer lives on the heap, outside every thread's stack, so glibc counts
//!   it as left at the very first frame and calls the handler before a
//!   single frame is unwound. While the interpreter exits, the handler parks
//!   the thread for good (what Python 3.14 does); the exiting process then
//!   ends it. Otherwise it returns and the thread exits as it would have.
//! * **Leaving and coming back** ([`detach`], [`attach`]): once the `atexit`
//!   hook (which CPython runs before it marks the interpreter as finalizing)
//!   has run, a thread about to take the GIL back parks instead, unless it
//!   is the thread that ran the hook (the finalizing one). The handler covers
//!   the thread that was already on its way back when the hook ran.
//! * **Small work keeps the GIL** ([`keep_or_detach`]): see there.
//!
//! A parked thread holds what it held; the process is exiting, and no wait
//! of the binding holds the GIL (contract item 3), so nothing waits for it.
//! (`Send` bounds below stand for pyo3's `Ungil`, which is `Send` on stable
//! Rust.)

use pyo3::ffi;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

/// Set by the `atexit` hook: the interpreter is exiting.
static EXITING: AtomicBool = AtomicBool::new(false);
/// The thread that ran the hook; it goes on finalizing and never parks.
static FINALIZER: Mutex<Option<ThreadId>> = Mutex::new(None);

fn park_forever() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Parks this thread for good if the interpreter is exiting and this is not
/// the thread that finalizes it. One relaxed load on the normal path.
fn park_if_exiting() {
    if EXITING.load(Ordering::Acquire) {
        let finalizer = *FINALIZER.lock().unwrap_or_else(|p| p.into_inner());
        if finalizer != Some(std::thread::current().id()) {
            park_forever();
        }
    }
}

/// The `atexit` hook (registered at import).
#[pyfunction]
fn _interpreter_exiting() {
    *FINALIZER.lock().unwrap_or_else(|p| p.into_inner()) = Some(std::thread::current().id());
    EXITING.store(true, Ordering::Release);
}

/// Runs `f` with the GIL released, then takes the GIL back (or parks, see
/// the module documentation). Every evaluation, wait and compiled call of
/// the binding that may take long goes through here.
pub fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    protect_thread();
    py.detach(|| {
        /// Runs when `f` returns or unwinds, before pyo3 re-attaches.
        struct BeforeReattach;
        impl Drop for BeforeReattach {
            fn drop(&mut self) {
                park_if_exiting();
            }
        }
        let _before = BeforeReattach;
        f()
    })
}

/// Below this much pending work (elements read and written, see
/// `ferrox::runtime::eval::pending_work`) the binding keeps the GIL: tens of
/// microseconds of work cost less than handing the GIL to another thread
/// and back, so releasing it would only lower the total throughput of many
/// Python threads (numpy keeps the GIL below a size threshold for the same
/// reason). Work that would wait on another thread's computation is never
/// small, so a thread holding the GIL never waits on anything but its own
/// small kernels.
pub const KEEP_GIL_WORK: usize = 1 << 16;

/// Evaluates `arrays` by running `f`: with the GIL held when the pending
/// work is small, else through [`detach`].
pub fn keep_or_detach<T: Send>(
    py: Python<'_>,
    arrays: &[ferrox::Array],
    f: impl Send + FnOnce() -> T,
) -> T {
    if ferrox::runtime::eval::pending_work(arrays, KEEP_GIL_WORK).is_some() {
        f()
    } else {
        detach(py, f)
    }
}

/// Runs `f` with the GIL, taking it (or parking, see the module
/// documentation) if this thread does not hold it: a callback from
/// detached Rust code, such as a trace.
pub fn attach<T>(f: impl for<'py> FnOnce(Python<'py>) -> T) -> T {
    protect_thread();
    // SAFETY: PyGILState_Check only reads this thread's state.
    if unsafe { ffi::PyGILState_Check() } == 0 {
        park_if_exiting();
    }
    Python::attach(f)
}

/// Links this thread's exit handler into its cleanup list if it is not
/// linked (see the module documentation). A thread-local flag check on the
/// normal path.
pub fn protect_thread() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    exit_handler::link();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod exit_handler {
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// glibc's `struct _pthread_cleanup_buffer`: routine, arg, canceltype,
    /// and the previous buffer of the thread's list.
    #[repr(C)]
    struct Buffer {
        routine: Option<extern "C" fn(*mut c_void)>,
        arg: *mut c_void,
        canceltype: c_int,
        prev: *mut Buffer,
    }

    extern "C" {
        /// Links `buffer` at the head of the thread's cleanup list; glibc
        /// calls `routine(arg)` when an unwind leaves the buffer, or a
        /// `longjmp` jumps over it, and unlinks it.
        fn _pthread_cleanup_push(
            buffer: *mut Buffer,
            routine: extern "C" fn(*mut c_void),
            arg: *mut c_void,
        );
        /// Unlinks the head `buffer` (`execute == 0`: without calling it).
        fn _pthread_cleanup_pop(buffer: *mut Buffer, execute: c_int);
    }

    /// One thread's handler: on the heap, so that glibc's "has the unwind
    /// left this buffer" test (a comparison with the frame addresses of the
    /// thread's own stack) holds from the first frame on.
    struct Slot {
        buffer: Buffer,
        /// True while `buffer` is in the thread's list.
        linked: AtomicBool,
    }

    /// Frees the slot when the thread ends (its function has returned, so
    /// nothing walks the cleanup list any more). A slot that may still be
    /// linked below another buffer is leaked rather than freed.
    struct ThreadSlot(*mut Slot);

    impl Drop for ThreadSlot {
        fn drop(&mut self) {
            // SAFETY: the pointer came from Box::into_raw and is freed only
            // here, once.
            let slot = unsafe { &mut *self.0 };
            if slot.linked.load(Ordering::Relaxed) {
                if !std::ptr::eq(head(), &slot.buffer) {
                    return;
                }
                // SAFETY: the buffer is the head of this thread's list.
                unsafe { _pthread_cleanup_pop(&mut slot.buffer, 0) };
            }
            // SAFETY: unlinked; nothing else points to the slot.
            drop(unsafe { Box::from_raw(self.0) });
        }
    }

    thread_local! {
        static SLOT: ThreadSlot = ThreadSlot(Box::into_raw(Box::new(Slot {
            buffer: Buffer {
                routine: None,
                arg: std::ptr::null_mut(),
                canceltype: 0,
                prev: std::ptr::null_mut(),
            },
            linked: AtomicBool::new(false),
        })));
    }

    /// The head of this thread's cleanup list (read by linking a probe
    /// buffer, whose `prev` glibc sets to the head, and unlinking it).
    fn head() -> *mut Buffer {
        let mut probe = Buffer {
            routine: None,
            arg: std::ptr::null_mut(),
            canceltype: 0,
            prev: std::ptr::null_mut(),
        };
        // SAFETY: the probe is linked and unlinked at once, as the head,
        // with nothing in between that could unwind or jump.
        unsafe {
            _pthread_cleanup_push(&mut probe, noop, std::ptr::null_mut());
            _pthread_cleanup_pop(&mut probe, 0);
        }
        probe.prev
    }

    extern "C" fn noop(_: *mut c_void) {}

    /// Called by glibc, which unlinks the buffer after the call.
    extern "C" fn on_exit_or_jump(arg: *mut c_void) {
        // SAFETY: `arg` is this thread's slot, freed only by its TLS
        // destructor after the thread function returned.
        let slot = unsafe { &*(arg as *const Slot) };
        slot.linked.store(false, Ordering::Relaxed);
        super::park_if_exiting();
    }

    pub fn link() {
        let _ = SLOT.try_with(|s| {
            let slot = s.0;
            // SAFETY: the slot is alive for as long as this thread's TLS.
            let linked = unsafe { &(*slot).linked };
            if !linked.load(Ordering::Relaxed) {
                // SAFETY: the buffer is not in any list (`linked` is false)
                // and stays at this address until the slot is freed, which
                // unlinks it first. It stays linked across calls: glibc
                // keeps the list per thread, and code that links and
                // unlinks its own buffers does so in nested pairs above it.
                unsafe {
                    _pthread_cleanup_push(
                        std::ptr::addr_of_mut!((*slot).buffer),
                        on_exit_or_jump,
                        slot.cast(),
                    );
                }
                linked.store(true, Ordering::Relaxed);
            }
        });
    }
}

/// Registers the `atexit` hook and protects the importing thread.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    protect_thread();
    let hook = wrap_pyfunction!(_interpreter_exiting, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
