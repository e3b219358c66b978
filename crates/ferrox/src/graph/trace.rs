//! Traces: the state of a running transform, owned by the arrays in it.
//!
//! A transform (vjp, jvp, vmap, compile) opens a [`Trace`] and feeds the
//! function *tracers*: arrays that belong to it. Every node built from a
//! traced input belongs to the same traces (the union of its inputs'), so
//! "is this computation being differentiated?" is a question about the
//! arrays involved — never about the calling thread or the process
//! (contract item 6). Another thread's forward pass, built from untraced
//! arrays, cannot observe the trace; a gradient on one thread changes
//! nothing on another.
//!
//! While a trace is live its nodes keep their inputs after evaluation, so
//! `eval` inside a transformed function does not cut the graph the
//! transform still needs. When the transform ends the trace dies and the
//! membership becomes inert.

// Plain std atomics: trace liveness is a flag, not a protocol to model.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a trace is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// Reverse-mode differentiation (vjp, grad, value_and_grad).
    Vjp,
    /// Forward-mode differentiation (jvp).
    Jvp,
    /// Vectorisation (vmap).
    Vmap,
    /// Tracing for compile.
    Compile,
}

impl TraceKind {
    /// True for the differentiating kinds.
    pub fn differentiates(self) -> bool {
        matches!(self, TraceKind::Vjp | TraceKind::Jvp)
    }
}

#[derive(Debug)]
pub(crate) struct TraceInner {
    pub(crate) id: u64,
    pub(crate) kind: TraceKind,
    live: AtomicBool,
}

/// A running transform's identity. Dropping (or [`Trace::end`]) ends it.
#[derive(Debug, Clone)]
pub struct Trace(pub(crate) Arc<TraceInner>);

static NEXT_TRACE: AtomicU64 = AtomicU64::new(1);

impl Trace {
    /// Opens a new live trace of `kind`.
    pub fn new(kind: TraceKind) -> Trace {
        Trace(Arc::new(TraceInner {
            id: NEXT_TRACE.fetch_add(1, Ordering::Relaxed),
            kind,
            live: AtomicBool::new(true),
        }))
    }
    /// The trace's unique id.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// The trace's kind.
    pub fn kind(&self) -> TraceKind {
        self.0.kind
    }
    /// True until the transform that opened it returns.
    pub fn is_live(&self) -> bool {
        self.0.live.load(Ordering::Acquire)
    }
    /// Ends the trace: its arrays stop counting as traced.
    pub fn end(&self) {
        self.0.live.store(false, Ordering::Release);
    }
}

/// Ends the trace when the transform's scope exits, also on error or unwind.
pub(crate) struct EndOnDrop(pub(crate) Trace);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The live traces a node belongs to, sorted by id; `None` when untraced
/// (the common case, which costs one pointer-sized check per input).
pub(crate) type TraceSet = Option<Arc<[Trace]>>;

/// The live traces of all `sets`, merged; `None` if there are none.
pub(crate) fn union<'a>(sets: impl Iterator<Item = &'a TraceSet>) -> TraceSet {
    let mut merged: Vec<Trace> = Vec::new();
    for set in sets.flatten() {
        for t in set.iter() {
            if t.is_live() && !merged.iter().any(|m| m.id() == t.id()) {
                merged.push(t.clone());
            }
        }
    }
    if merged.is_empty() {
        return None;
    }
    merged.sort_by_key(|t| t.id());
    Some(merged.into())
}

/// True if `set` contains the live trace `id`.
pub(crate) fn contains(set: &TraceSet, id: u64) -> bool {
    set.as_ref()
        .is_some_and(|s| s.iter().any(|t| t.id() == id && t.is_live()))
}

/// True if `set` has any live trace.
pub(crate) fn any_live(set: &TraceSet) -> bool {
    set.as_ref().is_some_and(|s| s.iter().any(|t| t.is_live()))
}
