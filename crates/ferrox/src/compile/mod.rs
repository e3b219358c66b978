//! compile: trace once, simplify, fuse, replay — behind one process-wide
//! cache shared by every thread (contract items 2–6).

pub mod cache;
mod compiled;
pub(crate) mod fuse;
mod isolated;
mod signature;
pub(crate) mod simplify;
pub(crate) mod tape;

pub use compiled::{
    CompiledFn, cache_len, clear_compile_cache, compile, compile_shapeless, compile_with,
    disable_compile, enable_compile, tape_cache,
};
// Public paths kept: the fused chunk engine lives in the backend.
pub use crate::backend::cpu::fused::Fused;
pub use signature::{Constant, Signature};
pub use tape::Tape;
