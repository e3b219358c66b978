//! Function transforms: vjp, jvp, grad, value_and_grad, vmap, stop_gradient,
//! checkpoint and custom_function.
//!
//! Every transform traces the function into the graph and interprets it
//! with each primitive's rule (`Primitive::vjp/jvp/vmap`). The state of a
//! running transform lives in its [`Trace`](crate::graph::trace::Trace), which the traced arrays
//! carry; no thread-local or global mode exists (contract item 6), so
//! transforms nest (`grad(grad(f))`, `vmap(grad(f))`) and run on many
//! threads at once. The one exception is `default_key`: a draw without a
//! key has no array to carry a trace, so a compile trace records such draws
//! through the thread that runs its body.

pub mod custom;
pub(crate) mod default_key;
pub mod graph;
pub mod jvp;
pub mod tracer;
pub mod tree;
pub mod vjp;
pub mod vmap;

pub use crate::graph::trace::TraceKind;

use crate::error::Result;
use crate::graph::array::Array;
use std::sync::Arc;

/// A shareable function from arrays to arrays: what transforms take and
/// return, so that they compose.
pub type ArrayFn = Arc<dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync>;
