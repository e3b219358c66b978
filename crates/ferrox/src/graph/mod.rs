//! The graph: the lowest layer. An [`Array`](array::Array) is a handle to
//! a node — shape, dtype, stream, the [`Primitive`](primitive::Primitive)
//! that computes it and its inputs — whose value is
//! published once through an [`EvalCell`](cell::EvalCell) as
//! [`Data`](layout::Data): shared [`Storage`](storage::Storage) seen
//! through strides. A primitive with several outputs is one group node and
//! an output node per result ([`outputs`]). The buffer cache and the memory
//! counters are here too (`pool`), since every allocation updates them.
//!
//! This layer imports only `dtype`, `error`, `sync`; everything else builds
//! on it.

pub mod array;
pub mod cell;
pub mod dot;
pub mod export;
pub mod layout;
pub(crate) mod node;
pub mod outputs;
pub(crate) mod pool;
pub mod primitive;
pub mod storage;
pub mod stream;
pub mod trace;
pub mod walk;
