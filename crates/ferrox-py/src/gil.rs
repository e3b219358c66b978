//! Leaving the interpreter and coming back: the one way the binding does it.
//!
//! # Why this exists
//! During finalization, CPython 3.11–3.13 ends a thread that tries to take
//! the interpreter lock (GIL) again with `pthread_exit`. On glibc that is a
//! forced unwind: it runs the cleanup code of every frame it crosses. Through
//! Rust frames it would drop Python objects without the GIL, and the
//! `catch_unwind` at pyo3's boundary would catch it ("FATAL: exception not
//! rethrown", SIGABRT). So no Rust frame of ours may ever be unwound that way.
//!
//! # The two mechanisms
//! * **The gate**, for every re-attach the binding does itself ([`detach`],
//!   [`attach`]): a thread about to take the GIL back registers with the gate
//!   (or, once the gate is closed, parks for good). An `atexit` hook, which
//!   CPython runs before it marks the interpreter as finalizing, closes the
//!   gate and waits (with the GIL released) until every registered thread
//!   holds the GIL. So no thread of ours is between "decided to re-attach"
//!   and "attached" when finalization starts, and none decides to afterwards.
//!   The thread that closed the gate (the finalizing one) passes through it.
//! * **The park guard**, for Python code the binding runs from Rust
//!   ([`call`]): that code may give the GIL up and take it back itself (a
//!   `time.sleep`, the eval loop's periodic switch), where the gate cannot
//!   be. The call is made with raw pointers from a frame that registers a
//!   glibc cleanup handler; glibc runs that handler when the forced unwind
//!   reaches the frame, before any Rust frame is unwound, and the handler
//!   parks the thread for good. The exiting process then ends it.
//!
//! (`Send` bounds stand for pyo3's `Ungil`, which is `Send` on stable Rust.)
//!
//! A parked thread holds what it held; the process is exiting, so nothing
//! waits for it (contract item 8: waits never hold the GIL).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

struct Gate {
    /// Set by the `atexit` hook: from then on only `closer` may re-attach.
    closed: bool,
    closer: Option<ThreadId>,
    /// Threads that passed the gate and have not re-attached yet.
    reattaching: usize,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    closed: false,
    closer: None,
    reattaching: 0,
});
static REATTACHED: Condvar = Condvar::new();

fn gate() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers this thread as about to take the GIL back; parks for good if
/// the interpreter is exiting.
fn enter_gate() {
    let mut g = gate();
    if g.closed && g.closer != Some(std::thread::current().id()) {
        drop(g);
        park_forever();
    }
    g.reattaching += 1;
}

/// This thread holds the GIL again.
fn leave_gate() {
    let mut g = gate();
    g.reattaching = g.reattaching.saturating_sub(1);
    if g.reattaching == 0 {
        REATTACHED.notify_all();
    }
}

fn park_forever() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// The `atexit` hook (registered at import): closes the gate and waits,
/// with the GIL released, until every thread that passed it holds the GIL.
#[pyfunction]
fn _close_gate(py: Python<'_>) {
    py.detach(|| {
        let mut g = gate();
        g.closed = true;
        g.closer = Some(std::thread::current().id());
        while g.reattaching > 0 {
            g = REATTACHED.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    });
}

/// Runs `f` with the GIL released, then takes it back through the gate.
/// Every evaluation, wait and compiled call of the binding that may take
/// long goes through here (see also [`keep_or_detach`]).
pub fn detach<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    /// Set once this thread has passed the gate (also when `f` panics).
    struct Passed<'a>(&'a AtomicBool);
    impl Drop for Passed<'_> {
        fn drop(&mut self) {
            enter_gate();
            self.0.store(true, Ordering::Relaxed);
        }
    }
    struct Reattached<'a>(&'a AtomicBool);
    impl Drop for Reattached<'_> {
        fn drop(&mut self) {
            if self.0.load(Ordering::Relaxed) {
                leave_gate();
            }
        }
    }
    let passed = AtomicBool::new(false);
    let _reattached = Reattached(&passed);
    py.detach(|| {
        let _pass = Passed(&passed);
        f()
    })
}

/// Below this much pending work (elements read and written, see
/// `ferrox::runtime::eval::pending_work`) the binding keeps the GIL: tens
/// of microseconds of work cost less than handing the GIL to another
/// thread and back, so releasing it would only lower the total throughput
/// of many Python threads.
pub const KEEP_GIL_WORK: usize = 1 << 16;

/// Evaluates `arrays` by running `f`: with the GIL held when the pending
/// work is small and waits on no other thread's computation, else with the
/// GIL released.
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

/// Runs `f` with the GIL, taking it through the gate if this thread does
/// not hold it (a callback from detached Rust code, e.g. a trace).
pub fn attach<T>(f: impl for<'py> FnOnce(Python<'py>) -> T) -> T {
    // SAFETY: PyGILState_Check only reads this thread's state.
    if unsafe { ffi::PyGILState_Check() } == 1 {
        return Python::attach(f);
    }
    enter_gate();
    Python::attach(|py| {
        leave_gate();
        f(py)
    })
}

/// `fun(*args, **kwargs)`, made so that an interpreter exiting meanwhile
/// parks this thread instead of unwinding it through Rust (see the module
/// documentation). Every Python function the binding calls from Rust on
/// behalf of a transform or a trace goes through here.
pub fn call<'py>(
    fun: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = kwargs.map_or(std::ptr::null_mut(), |k| k.as_ptr());
    // SAFETY: the three pointers are live objects we hold references to (or
    // null kwargs), and the GIL is held (`'py`). `parked_on_exit` adds no
    // frame with cleanup code between here and CPython.
    let out = unsafe { parked_on_exit(fun.as_ptr(), args.as_ptr(), kwargs) };
    // SAFETY: PyObject_Call returns a new reference, or null with an error
    // set.
    unsafe { Bound::from_owned_ptr_or_err(fun.py(), out) }
}

/// [`call`] with positional arguments only, given as a Rust tuple.
pub fn call1<'py, A>(fun: &Bound<'py, PyAny>, args: A) -> PyResult<Bound<'py, PyAny>>
where
    A: IntoPyObject<'py, Target = PyTuple, Output = Bound<'py, PyTuple>>,
{
    let args = args.into_pyobject(fun.py()).map_err(Into::into)?;
    call(fun, &args, None)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod cleanup {
    use std::ffi::{c_int, c_void};

    /// glibc's `struct _pthread_cleanup_buffer` (routine, arg, canceltype,
    /// prev: 32 bytes on 64-bit targets), with room to spare.
    #[repr(C, align(16))]
    pub struct Buffer([u64; 8]);

    impl Buffer {
        pub const fn new() -> Self {
            Buffer([0; 8])
        }
    }

    extern "C" {
        /// Pushes a cleanup handler that `pthread_exit` runs when its unwind
        /// leaves the frame holding `buffer` (glibc, exported since 2.2.5).
        pub fn _pthread_cleanup_push(
            buffer: *mut Buffer,
            routine: extern "C" fn(*mut c_void),
            arg: *mut c_void,
        );
        /// Pops it again (`execute == 0`: without running it).
        pub fn _pthread_cleanup_pop(buffer: *mut Buffer, execute: c_int);
    }

    /// The handler: the thread never leaves it.
    pub extern "C" fn park(_: *mut c_void) {
        super::park_forever()
    }
}

/// `PyObject_Call` under a cleanup handler that parks the thread if
/// `pthread_exit` unwinds through this frame. This function holds no value
/// with a destructor, so nothing of Rust's runs before the handler.
///
/// # Safety
/// The GIL must be held; `fun` and `args` must be live objects, `kwargs`
/// a live dict or null.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn parked_on_exit(
    fun: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let mut buffer = cleanup::Buffer::new();
    // SAFETY: `buffer` lives in this frame until the pop below, which runs
    // on every path out of this function (PyObject_Call does not unwind
    // except by pthread_exit, which the handler stops). Push and pop nest
    // with any other handler of this thread.
    unsafe {
        cleanup::_pthread_cleanup_push(&mut buffer, cleanup::park, std::ptr::null_mut());
        let out = ffi::PyObject_Call(fun, args, kwargs);
        cleanup::_pthread_cleanup_pop(&mut buffer, 0);
        out
    }
}

/// Elsewhere the interpreter's thread exit does not unwind through our
/// frames in the same way; the call is a plain one.
///
/// # Safety
/// As the glibc version.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn parked_on_exit(
    fun: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: the caller's guarantees.
    unsafe { ffi::PyObject_Call(fun, args, kwargs) }
}

/// Registers the `atexit` hook that closes the gate.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(_close_gate, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
