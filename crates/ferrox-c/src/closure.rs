//! Closures from C function pointers, and what takes them: compile (also
//! shapeless), vjp, jvp, value_and_grad, grad, vmap.
//!
//! A closure is a C callback plus a payload and its destructor. ferrox may
//! call the callback on any thread, several at once (a compiled function
//! shared by threads, a trace on the calling thread), with a vector of
//! arrays that may be tracers; the callback builds its outputs with the
//! ops of this API and writes them to its `res` slot. A non-zero status
//! from the callback becomes the error of the call that ran it (for a
//! trace: of every caller waiting on that trace, and nothing is cached).

use std::ffi::c_void;
use std::sync::Arc;

use ferrox::{Array, CompiledFn, ErrorKind};

use crate::array::{ferrox_vector_array, raw_slice};
use crate::error::{
    ferrox_error, ferrox_status, guard, CError, CResult, CallbackFailure, FERROX_OK,
};
use crate::handle::{arg, check_slot, free_handle, impl_handle, put, Handle};
use crate::ops::FERROX_AXIS_NONE;
use crate::stream::{ferrox_stream, stream_of};

/// A closure's C callback: reads its arguments from `args`, writes a new
/// vector of outputs to `*res` (ferrox takes it and frees it), and returns
/// `FERROX_OK`; or returns another status, optionally writing an error made
/// by `ferrox_error_new` to `*err` (ferrox takes it too). `args` is
/// borrowed for the call only. It may be called on any thread, also
/// concurrently with itself.
pub type ferrox_closure_fn = Option<
    unsafe extern "C" fn(
        res: Option<&mut Option<Box<ferrox_vector_array>>>,
        args: Option<&ferrox_vector_array>,
        payload: *mut c_void,
        err: Option<&mut Option<Box<ferrox_error>>>,
    ) -> ferrox_status,
>;

/// Frees a closure's payload. Called exactly once, on whichever thread
/// drops the last reference to the closure (a `_free`, or the last
/// compiled function or transform made from it).
pub type ferrox_destructor_fn = Option<unsafe extern "C" fn(payload: *mut c_void)>;

/// The body of a closure as ferrox sees it.
pub(crate) type Body = Arc<dyn Fn(&[Array]) -> ferrox::Result<Vec<Array>> + Send + Sync>;

/// A C callback, its payload and its destructor.
struct Callback {
    fun: ferrox_closure_fn,
    payload: *mut c_void,
    dtor: ferrox_destructor_fn,
}

// SAFETY: `Callback` holds a C function pointer and an opaque payload
// pointer, which Rust cannot check. `ferrox_closure_new` documents, as the
// condition of the API, that the callback may be called from any thread and
// concurrently with itself, with this payload, and that the destructor may
// run on any thread; the caller makes the payload safe for that (or makes
// the callback serialise). Under that contract sharing and sending the
// pair is sound: ferrox itself never reads or writes through `payload`.
unsafe impl Send for Callback {}
// SAFETY: see the `Send` impl: the same documented contract covers
// concurrent calls through a shared reference.
unsafe impl Sync for Callback {}

impl Drop for Callback {
    fn drop(&mut self) {
        if let Some(dtor) = self.dtor {
            // SAFETY: the caller gave us `dtor` to call once with `payload`
            // when the closure is released; Drop runs once.
            unsafe { dtor(self.payload) }
        }
    }
}

impl Callback {
    fn call(&self, args: &[Array]) -> ferrox::Result<Vec<Array>> {
        let Some(fun) = self.fun else {
            return Err(ferrox::Error::new(
                ErrorKind::Value,
                "closure",
                "the closure has no callback",
            ));
        };
        let input = ferrox_vector_array::new(args.to_vec());
        let mut out: Option<Box<ferrox_vector_array>> = None;
        let mut err: Option<Box<ferrox_error>> = None;
        // SAFETY: calling the caller's callback with the contract of
        // `ferrox_closure_fn`: two valid slots initialised to NULL, a live
        // input vector borrowed for the call, and the caller's payload.
        let status = unsafe { fun(Some(&mut out), Some(&input), self.payload, Some(&mut err)) };
        if status != FERROX_OK {
            let detail = match err.take() {
                Some(e) if e.is_live() => format!(": {}", e.message()),
                // Not an error we made: neither read nor free it.
                Some(e) => {
                    std::mem::forget(e);
                    String::new()
                }
                None => String::new(),
            };
            let message = format!("closure: the callback returned status {status}{detail}");
            forget_foreign(&mut out);
            return Err(
                ferrox::Error::new(ErrorKind::Runtime, "closure", message.clone())
                    .with_payload(CallbackFailure { message }),
            );
        }
        forget_foreign(&mut err);
        match out {
            Some(v) if v.is_live() => Ok(v.items()),
            Some(v) => {
                std::mem::forget(v);
                Err(ferrox::Error::new(
                    ErrorKind::Value,
                    "closure",
                    "the callback wrote something that is not a live ferrox_vector_array to `res`",
                ))
            }
            None => Err(ferrox::Error::new(
                ErrorKind::Value,
                "closure",
                "the callback returned FERROX_OK without writing a vector to `res`",
            )),
        }
    }
}

/// Drops a handle the callback left behind if it is ours; leaks it if not.
fn forget_foreign<T: Handle>(slot: &mut Option<Box<T>>) {
    if let Some(h) = slot.take() {
        if !h.is_live() {
            std::mem::forget(h);
        }
    }
}

/// A function of arrays to arrays: a C callback, a compiled function or a
/// transform of another closure. Free it with [`ferrox_closure_free`]; what
/// was made from it keeps its own reference.
pub struct ferrox_closure {
    magic: u64,
    pub(crate) body: Body,
}
impl_handle!(ferrox_closure, 0xfe77_0000_0000_c105);

impl ferrox_closure {
    pub(crate) fn new(body: Body) -> ferrox_closure {
        ferrox_closure {
            magic: <Self as Handle>::MAGIC,
            body,
        }
    }
}

/// A compiled function: the first call per input signature (shapes, or
/// ranks when shapeless; dtypes) traces the closure — exactly once however
/// many threads race — and later calls on any thread replay the shared
/// trace. When the last handle of it is freed, on any thread, its traces
/// leave the process-wide compile cache.
pub struct ferrox_compiled {
    magic: u64,
    compiled: CompiledFn,
}
impl_handle!(ferrox_compiled, 0xfe77_0000_0000_c0c0);

/// A function returning values and gradients (from
/// [`ferrox_value_and_grad`]).
pub struct ferrox_closure_value_and_grad {
    magic: u64,
    #[allow(clippy::type_complexity)]
    body: Arc<dyn Fn(&[Array]) -> ferrox::Result<(Vec<Array>, Vec<Array>)> + Send + Sync>,
}
impl_handle!(ferrox_closure_value_and_grad, 0xfe77_0000_0000_7a9d);

/// A closure that calls `fun` with `payload`. ferrox owns `payload` from
/// here on and calls `dtor(payload)` (if not NULL) once when the last
/// reference is released — also if this call fails.
///
/// Contract: `fun` may be called on any thread, concurrently with itself,
/// and `dtor` on any thread; the payload must allow that.
#[no_mangle]
pub extern "C" fn ferrox_closure_new(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    fun: ferrox_closure_fn,
    payload: *mut c_void,
    dtor: ferrox_destructor_fn,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_closure_new";
    // The callback owns the payload from here on: every early return
    // below releases it through `Callback`'s Drop.
    let cb = Callback { fun, payload, dtor };
    guard(OP, err, move || {
        check_slot(&res, OP, "res")?;
        if cb.fun.is_none() {
            return Err(CError::null(OP, "fun"));
        }
        let cb = Arc::new(cb);
        put(
            res,
            ferrox_closure::new(Arc::new(move |xs: &[Array]| cb.call(xs))),
        );
        Ok(())
    })
}

/// Calls `f` on `args` (on stream `s`, NULL: the default) and writes its
/// outputs to a new vector.
#[no_mangle]
pub extern "C" fn ferrox_closure_apply(
    res: Option<&mut Option<Box<ferrox_vector_array>>>,
    f: Option<&ferrox_closure>,
    args: Option<&ferrox_vector_array>,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_closure_apply";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let f = &arg(f, OP, "f")?.body;
        let xs = arg(args, OP, "args")?.items();
        let out = ferrox::with_stream(stream_of(s, OP)?, || f(&xs))?;
        put(res, ferrox_vector_array::new(out));
        Ok(())
    })
}

/// Frees a closure handle. The payload is released when nothing made from
/// the closure needs it any more. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_closure_free(f: Option<Box<ferrox_closure>>) -> ferrox_status {
    free_handle("ferrox_closure_free", f)
}

/// Compiles `f`. With `shapeless`, one trace serves every input shape of
/// the same ranks.
#[no_mangle]
pub extern "C" fn ferrox_compile(
    res: Option<&mut Option<Box<ferrox_compiled>>>,
    f: Option<&ferrox_closure>,
    shapeless: bool,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compile";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(f, OP, "f")?.body.clone();
        let g = move |xs: &[Array]| body(xs);
        let compiled = if shapeless {
            ferrox::compile_shapeless(g)
        } else {
            ferrox::compile(g)
        };
        put(
            res,
            ferrox_compiled {
                magic: <ferrox_compiled as Handle>::MAGIC,
                compiled,
            },
        );
        Ok(())
    })
}

/// Calls a compiled function on `args` (on stream `s`; the trace is shared
/// by every stream) and writes its outputs to a new vector. Inside another
/// transform or a trace the function is inlined (never waits on the
/// cache), so a callback may call compiled functions freely.
#[no_mangle]
pub extern "C" fn ferrox_compiled_call(
    res: Option<&mut Option<Box<ferrox_vector_array>>>,
    f: Option<&ferrox_compiled>,
    args: Option<&ferrox_vector_array>,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compiled_call";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let f = &arg(f, OP, "f")?.compiled;
        let xs = arg(args, OP, "args")?.items();
        let out = ferrox::with_stream(stream_of(s, OP)?, || f.call(&xs))?;
        put(res, ferrox_vector_array::new(out));
        Ok(())
    })
}

/// A second handle to the same compiled function (same identity, same
/// traces); the traces stay until the last handle is freed.
#[no_mangle]
pub extern "C" fn ferrox_compiled_clone(
    res: Option<&mut Option<Box<ferrox_compiled>>>,
    f: Option<&ferrox_compiled>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compiled_clone";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let compiled = arg(f, OP, "f")?.compiled.clone();
        put(
            res,
            ferrox_compiled {
                magic: <ferrox_compiled as Handle>::MAGIC,
                compiled,
            },
        );
        Ok(())
    })
}

/// The compiled function as a closure (to pass to a transform:
/// `grad(compile(f))`, or to nest).
#[no_mangle]
pub extern "C" fn ferrox_compiled_as_closure(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    f: Option<&ferrox_compiled>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compiled_as_closure";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let c = arg(f, OP, "f")?.compiled.clone();
        put(
            res,
            ferrox_closure::new(Arc::new(move |xs: &[Array]| c.call(xs))),
        );
        Ok(())
    })
}

/// How many traces ran for this compiled function (for tests and
/// diagnostics).
#[no_mangle]
pub extern "C" fn ferrox_compiled_traces(
    out: Option<&mut usize>,
    f: Option<&ferrox_compiled>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compiled_traces";
    guard(OP, err, || {
        let out = out.ok_or_else(|| CError::null(OP, "out"))?;
        *out = arg(f, OP, "f")?.compiled.traces();
        Ok(())
    })
}

/// The compiled function's never-reused identity (for logs).
#[no_mangle]
pub extern "C" fn ferrox_compiled_id(f: Option<&ferrox_compiled>) -> u64 {
    arg(f, "", "").map_or(0, |f| f.compiled.id().as_u64())
}

/// Frees a compiled-function handle, on any thread; when it is the last,
/// the function's traces leave the cache (calls in flight keep what they
/// replay). Never waits for a trace. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_compiled_free(f: Option<Box<ferrox_compiled>>) -> ferrox_status {
    free_handle("ferrox_compiled_free", f)
}

/// The number of entries (traces) in the process-wide compile cache.
#[no_mangle]
pub extern "C" fn ferrox_compile_cache_len(
    out: Option<&mut usize>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_compile_cache_len";
    guard(OP, err, || {
        *out.ok_or_else(|| CError::null(OP, "out"))? = ferrox::compile::cache_len();
        Ok(())
    })
}

/// Empties the process-wide compile cache (from any thread; calls in
/// flight keep what they replay).
#[no_mangle]
pub extern "C" fn ferrox_compile_clear_cache(
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard("ferrox_compile_clear_cache", err, || {
        ferrox::compile::clear_compile_cache();
        Ok(())
    })
}

/// Turns compilation off (compiled functions call their closure directly)
/// or back on, process-wide.
#[no_mangle]
pub extern "C" fn ferrox_set_compile_enabled(
    enabled: bool,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard("ferrox_set_compile_enabled", err, || {
        if enabled {
            ferrox::enable_compile()
        } else {
            ferrox::disable_compile()
        }
        Ok(())
    })
}

/// Vector-Jacobian product: runs `f` on `primals`, writes its outputs to
/// `*res_outputs` and the cotangents pulled back to each primal to
/// `*res_cotangents`.
#[no_mangle]
pub extern "C" fn ferrox_vjp(
    res_outputs: Option<&mut Option<Box<ferrox_vector_array>>>,
    res_cotangents: Option<&mut Option<Box<ferrox_vector_array>>>,
    f: Option<&ferrox_closure>,
    primals: Option<&ferrox_vector_array>,
    cotangents: Option<&ferrox_vector_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vjp";
    guard(OP, err, || {
        check_slot(&res_outputs, OP, "res_outputs")?;
        check_slot(&res_cotangents, OP, "res_cotangents")?;
        let f = arg(f, OP, "f")?.body.clone();
        let p = arg(primals, OP, "primals")?.items();
        let c = arg(cotangents, OP, "cotangents")?.items();
        let (outs, cts) = ferrox::vjp(|xs| f(xs), &p, &c)?;
        put(res_outputs, ferrox_vector_array::new(outs));
        put(res_cotangents, ferrox_vector_array::new(cts));
        Ok(())
    })
}

/// Jacobian-vector product: runs `f` on `primals`, writes its outputs to
/// `*res_outputs` and their tangents along `tangents` to `*res_tangents`.
#[no_mangle]
pub extern "C" fn ferrox_jvp(
    res_outputs: Option<&mut Option<Box<ferrox_vector_array>>>,
    res_tangents: Option<&mut Option<Box<ferrox_vector_array>>>,
    f: Option<&ferrox_closure>,
    primals: Option<&ferrox_vector_array>,
    tangents: Option<&ferrox_vector_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_jvp";
    guard(OP, err, || {
        check_slot(&res_outputs, OP, "res_outputs")?;
        check_slot(&res_tangents, OP, "res_tangents")?;
        let f = arg(f, OP, "f")?.body.clone();
        let p = arg(primals, OP, "primals")?.items();
        let t = arg(tangents, OP, "tangents")?.items();
        let (outs, tans) = ferrox::jvp(|xs| f(xs), &p, &t)?;
        put(res_outputs, ferrox_vector_array::new(outs));
        put(res_tangents, ferrox_vector_array::new(tans));
        Ok(())
    })
}

/// The `num` argument indices at `argnums` as usizes.
///
/// # Safety
/// `argnums` points to `num` int32s (NULL if 0).
unsafe fn argnums(argnums: *const i32, num: usize, op: &str) -> CResult<Vec<usize>> {
    // SAFETY: forwarded from the caller.
    let v = unsafe { raw_slice(argnums, num, op, "argnums") }?;
    v.iter()
        .map(|&i| {
            usize::try_from(i).map_err(|_| {
                CError::invalid(op, format!("argnums must not be negative, got {v:?}"))
            })
        })
        .collect()
}

/// A function returning `f`'s outputs and the gradient of its first output
/// (a one-element array) with respect to the arguments at `argnums`.
///
/// # Safety
/// `argnums` points to `argnums_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_value_and_grad(
    res: Option<&mut Option<Box<ferrox_closure_value_and_grad>>>,
    f: Option<&ferrox_closure>,
    argnums_ptr: *const i32,
    argnums_num: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_value_and_grad";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(f, OP, "f")?.body.clone();
        // SAFETY: the caller passes `argnums_num` int32s.
        let nums = unsafe { argnums(argnums_ptr, argnums_num, OP) }?;
        let vg = ferrox::value_and_grad(move |xs: &[Array]| body(xs), &nums);
        put(
            res,
            ferrox_closure_value_and_grad {
                magic: <ferrox_closure_value_and_grad as Handle>::MAGIC,
                body: Arc::new(vg),
            },
        );
        Ok(())
    })
}

/// Calls a value-and-grad function: the values go to `*res_values`, the
/// gradients (one per argnum) to `*res_grads`.
#[no_mangle]
pub extern "C" fn ferrox_closure_value_and_grad_apply(
    res_values: Option<&mut Option<Box<ferrox_vector_array>>>,
    res_grads: Option<&mut Option<Box<ferrox_vector_array>>>,
    f: Option<&ferrox_closure_value_and_grad>,
    args: Option<&ferrox_vector_array>,
    s: Option<&ferrox_stream>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_closure_value_and_grad_apply";
    guard(OP, err, || {
        check_slot(&res_values, OP, "res_values")?;
        check_slot(&res_grads, OP, "res_grads")?;
        let f = &arg(f, OP, "f")?.body;
        let xs = arg(args, OP, "args")?.items();
        let (v, g) = ferrox::with_stream(stream_of(s, OP)?, || f(&xs))?;
        put(res_values, ferrox_vector_array::new(v));
        put(res_grads, ferrox_vector_array::new(g));
        Ok(())
    })
}

/// Frees a value-and-grad function. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_closure_value_and_grad_free(
    f: Option<Box<ferrox_closure_value_and_grad>>,
) -> ferrox_status {
    free_handle("ferrox_closure_value_and_grad_free", f)
}

/// A closure returning the gradient of `f`'s first output (a one-element
/// array) with respect to the arguments at `argnums`.
///
/// # Safety
/// `argnums` points to `argnums_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_grad(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    f: Option<&ferrox_closure>,
    argnums_ptr: *const i32,
    argnums_num: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_grad";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(f, OP, "f")?.body.clone();
        // SAFETY: the caller passes `argnums_num` int32s.
        let nums = unsafe { argnums(argnums_ptr, argnums_num, OP) }?;
        put(
            res,
            ferrox_closure::new(Arc::new(ferrox::grad(move |xs: &[Array]| body(xs), &nums))),
        );
        Ok(())
    })
}

/// A closure that maps `f` over a batch axis: `in_axes[i]` is argument
/// `i`'s batch axis and `out_axes[j]` output `j`'s (`FERROX_AXIS_NONE`:
/// not batched; a single out axis applies to every output).
///
/// # Safety
/// `in_axes` and `out_axes` point to their `_num` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_vmap(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    f: Option<&ferrox_closure>,
    in_axes: *const i32,
    in_axes_num: usize,
    out_axes: *const i32,
    out_axes_num: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vmap";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(f, OP, "f")?.body.clone();
        let axis = |&a: &i32| (a != FERROX_AXIS_NONE).then_some(a as isize);
        // SAFETY: the caller passes each list with its length.
        let (ins, outs) = unsafe {
            (
                raw_slice(in_axes, in_axes_num, OP, "in_axes")?,
                raw_slice(out_axes, out_axes_num, OP, "out_axes")?,
            )
        };
        let ins: Vec<_> = ins.iter().map(axis).collect();
        let outs: Vec<_> = outs.iter().map(axis).collect();
        put(
            res,
            ferrox_closure::new(Arc::new(ferrox::vmap(
                move |xs: &[Array]| body(xs),
                &ins,
                &outs,
            ))),
        );
        Ok(())
    })
}

/// `f`, recomputed in the backward pass instead of keeping its
/// intermediates between the forward and the backward pass (MLX's
/// `checkpoint`). The result is a new closure.
#[no_mangle]
pub extern "C" fn ferrox_checkpoint(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    f: Option<&ferrox_closure>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_checkpoint";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(f, OP, "f")?.body.clone();
        let recomputed = ferrox::checkpoint(move |xs: &[Array]| body(xs));
        put(res, ferrox_closure::new(Arc::new(recomputed)));
        Ok(())
    })
}

/// `fun` with custom transform rules (MLX's `custom_function`); a NULL
/// rule is derived from `fun` as usual. The rules are closures taking one
/// vector each:
/// - `vjp` gets the primals, then one cotangent per output, then the
///   outputs, and returns one cotangent per primal;
/// - `jvp` gets the primals, then one tangent per primal, and returns one
///   tangent per output.
#[no_mangle]
pub extern "C" fn ferrox_custom_function(
    res: Option<&mut Option<Box<ferrox_closure>>>,
    fun: Option<&ferrox_closure>,
    vjp: Option<&ferrox_closure>,
    jvp: Option<&ferrox_closure>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_custom_function";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let body = arg(fun, OP, "fun")?.body.clone();
        let mut custom = ferrox::custom_function(move |xs: &[Array]| body(xs));
        if vjp.is_some() {
            let rule = arg(vjp, OP, "vjp")?.body.clone();
            custom = custom.with_vjp(Arc::new(move |p: &[Array], ct: &[Array], out: &[Array]| {
                rule(&[p, ct, out].concat())
            }));
        }
        if jvp.is_some() {
            let rule = arg(jvp, OP, "jvp")?.body.clone();
            custom = custom.with_jvp(Arc::new(move |p: &[Array], t: &[Array]| {
                rule(&[p, t].concat())
            }));
        }
        put(res, ferrox_closure::new(Arc::new(custom.as_fn())));
        Ok(())
    })
}
