//! `compile`: the compiled-function handle and its call path.

use super::cache::{CompileCache, FnId, FnIdentity};
use super::fuse::fuse;
use super::signature::{Constant, Signature};
use super::simplify::simplify;
use super::tape::Tape;
use crate::error::Result;
use crate::graph::array::Array;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The process-wide compile cache: the tapes of every compiled function,
/// shared by every thread (contract item 2). Created on first use and kept
/// for the life of the process.
///
/// ```
/// use ferrox::*;
/// let f = compile(|xs: &[Array]| Ok(vec![(&xs[0] + 1.0)?]));
/// f.call(&[zeros(&[2], DType::Float32)?])?;
/// let cache = std::thread::spawn(compile::tape_cache).join().unwrap();
/// assert_eq!(cache.traces(f.id()), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tape_cache() -> crate::sync::Arc<CompileCache<Signature, Tape>> {
    #[cfg(not(feature = "loom"))]
    static TAPES: std::sync::LazyLock<crate::sync::Arc<CompileCache<Signature, Tape>>> =
        std::sync::LazyLock::new(|| crate::sync::Arc::new(CompileCache::new()));
    #[cfg(feature = "loom")]
    loom::lazy_static! {
        static ref TAPES: crate::sync::Arc<CompileCache<Signature, Tape>> =
            crate::sync::Arc::new(CompileCache::new());
    }
    TAPES.clone()
}

type Body = dyn Fn(&[Array], &[Constant]) -> Result<Vec<Array>> + Send + Sync;

struct Inner {
    identity: FnIdentity<Signature, Tape>,
    body: Box<Body>,
    shapeless: bool,
}

/// A compiled function: cheap to clone, `Send + Sync`, callable from any
/// thread. The first call per [`Signature`] traces the function (exactly
/// once, however many threads race), later calls replay the shared trace.
/// When the last clone drops, on any thread, its traces leave the cache.
///
/// ```
/// use ferrox::*;
/// let f = compile(|xs: &[Array]| Ok(vec![exp(&((&xs[0] * 2.0)? + 1.0)?)?]));
/// let x = zeros(&[4], DType::Float32)?;
/// let y = f.call(&[x.clone()])?;
/// assert_eq!(y[0].to_vec::<f32>()?, vec![1.0f32.exp(); 4]);
/// f.call(&[x])?; // a replay: no second trace
/// assert_eq!(f.traces(), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone)]
pub struct CompiledFn {
    inner: Arc<Inner>,
}

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns compilation off process-wide: compiled functions then call their
/// function directly (MLX's `disable_compile`).
///
/// ```
/// ferrox::disable_compile();
/// ferrox::enable_compile();
/// ```
pub fn disable_compile() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Turns compilation back on.
pub fn enable_compile() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Compiles `f` (see [`CompiledFn`]).
pub fn compile(f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static) -> CompiledFn {
    compile_with(move |xs, _| f(xs), false)
}

/// Compiles `f` so that one trace serves every input shape of the same
/// ranks; output shapes are re-inferred at each call.
///
/// ```
/// use ferrox::*;
/// let f = compile_shapeless(|xs: &[Array]| Ok(vec![(&xs[0] + 1.0)?]));
/// assert_eq!(f.call(&[zeros(&[2], DType::Float32)?])?[0].shape(), &[2]);
/// assert_eq!(f.call(&[zeros(&[5], DType::Float32)?])?[0].shape(), &[5]);
/// assert_eq!(f.traces(), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn compile_shapeless(
    f: impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + 'static,
) -> CompiledFn {
    compile_with(move |xs, _| f(xs), true)
}

/// Compiles a function that also takes non-array constants, which become
/// part of the cache key (bindings pass Python scalars this way).
///
/// ```
/// use ferrox::{*, compile::Constant};
/// let f = compile_with(|xs: &[Array], c: &[Constant]| {
///     Ok(vec![(&xs[0] * c[0].as_f64().unwrap_or(1.0))?])
/// }, false);
/// let x = ones(&[2], DType::Float32)?;
/// assert_eq!(f.call_with_constants(&[x.clone()], &[Constant::float(3.0)])?[0].to_vec::<f32>()?, vec![3.0; 2]);
/// assert_eq!(f.call_with_constants(&[x], &[Constant::float(4.0)])?[0].to_vec::<f32>()?, vec![4.0; 2]);
/// assert_eq!(f.traces(), 2);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn compile_with(
    f: impl Fn(&[Array], &[Constant]) -> Result<Vec<Array>> + Send + Sync + 'static,
    shapeless: bool,
) -> CompiledFn {
    CompiledFn {
        inner: Arc::new(Inner {
            identity: FnIdentity::new_in(&tape_cache()),
            body: Box::new(f),
            shapeless,
        }),
    }
}

impl CompiledFn {
    /// Calls the function on `args`.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        self.call_with_constants(args, &[])
    }

    /// Calls the function on `args` with `constants` (part of the key).
    pub fn call_with_constants(
        &self,
        args: &[Array],
        constants: &[Constant],
    ) -> Result<Vec<Array>> {
        let inner = &self.inner;
        // Inside another transform (or with compile disabled) the function
        // is inlined: it never touches the cache, so nesting cannot deadlock.
        if !ENABLED.load(Ordering::Relaxed) || args.iter().any(|a| a.0.in_live_trace()) {
            return (inner.body)(args, constants);
        }
        let key = Signature::of(args, constants, inner.shapeless);
        let tape = inner.identity.get_or_trace(key, || {
            let tape = Tape::trace(args, |xs| (inner.body)(xs, constants))?;
            Ok(fuse(simplify(tape)).isolate_ops())
        })?;
        tape.replay(args, inner.shapeless)
    }

    /// Calls the function only if that needs no trace and no wait: when a
    /// finished trace for this signature is cached, replays it (building
    /// the lazy outputs, computing nothing) and returns `Some`; otherwise
    /// (first call, another thread's trace in progress, inside a transform,
    /// compile disabled) returns `None` at once, and the caller uses
    /// [`call_with_constants`](Self::call_with_constants).
    ///
    /// The Python binding calls this while holding the interpreter lock, so
    /// a cached call of small work needs no lock hand-off, and a thread
    /// holding the lock never waits on another thread's trace.
    ///
    /// ```
    /// use ferrox::*;
    /// let f = compile(|xs: &[Array]| Ok(vec![(&xs[0] + 1.0)?]));
    /// let x = zeros(&[2], DType::Float32)?;
    /// assert!(f.call_if_cached(&[x.clone()], &[]).is_none()); // not traced yet
    /// f.call(&[x.clone()])?;
    /// let y = f.call_if_cached(&[x], &[]).expect("a cached signature")?;
    /// assert_eq!(y[0].to_vec::<f32>()?, vec![1.0; 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn call_if_cached(
        &self,
        args: &[Array],
        constants: &[Constant],
    ) -> Option<Result<Vec<Array>>> {
        let inner = &self.inner;
        if !ENABLED.load(Ordering::Relaxed) || args.iter().any(|a| a.0.in_live_trace()) {
            return None;
        }
        let key = Signature::of(args, constants, inner.shapeless);
        let tape = inner.identity.get_ready(&key)?;
        Some(tape.replay(args, inner.shapeless))
    }

    /// This function's never-reused identity.
    pub fn id(&self) -> FnId {
        self.inner.identity.id()
    }
    /// How many traces ran for this function (for tests and diagnostics).
    pub fn traces(&self) -> usize {
        self.inner.identity.traces()
    }
    /// The function as a closure, to pass to transforms
    /// (`grad(compiled.as_fn(), &[0])`).
    pub fn as_fn(
        &self,
    ) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Clone + Send + Sync + 'static + use<> {
        let me = self.clone();
        move |xs: &[Array]| me.call(xs)
    }
}

/// Entries in the process-wide compile cache.
///
/// ```
/// let n = ferrox::compile::cache_len();
/// # let _ = n;
/// ```
pub fn cache_len() -> usize {
    tape_cache().len()
}

/// Clears the process-wide compile cache; works from any thread.
///
/// ```
/// ferrox::compile::clear_compile_cache();
/// ```
pub fn clear_compile_cache() {
    tape_cache().clear();
}
