//! The graph: the lowest layer. An [`Array`](array::Array) is a handle to
//! a node — shape, dtype, stream, the [`Primitive`](primitive::Primitive)
//! that computes it and its inputs — whose value is
//! published once through an [`EvalCell`](cell::EvalCell) as
//! [`Data`](layout::Data): shared storage seen through strides. A primitive
//! with several outputs is one group node and an output node per result
//! ([`outputs`]).
//!
//! This layer imports only `dtype`, `error`, `sync` (and, until storage
//! moves here, `runtime::memory`'s `Storage`); everything else builds on it.

pub mod array;
pub mod cell;
pub mod layout;
pub(crate) mod node;
pub mod outputs;
pub mod primitive;
pub mod stream;
pub mod trace;
pub mod walk;
