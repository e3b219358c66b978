//! ferrox: lazy arrays with MLX's programming model and a written
//! thread-safety contract.
//!
//! ```
//! use ferrox::*;
//! let x = arange(0.0, 4.0, 1.0, DType::Float32)?;
//! let y = (&x * 2.0)?;
//! let y = (&y + 1.0)?;
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 3.0, 5.0, 7.0]);
//! # Ok::<(), ferrox::Error>(())
//! ```
#![warn(missing_docs)]
#![allow(clippy::too_many_arguments)]

pub mod array;
pub mod backend;
pub mod compile;
pub mod dtype;
mod error;
pub mod primitives;
pub mod runtime;
pub mod sync;
pub mod transforms;

/// Re-export of the `half` crate (f16, bf16 element types).
pub use half;

pub use array::Array;
pub use dtype::{Complex64, DType};
pub use error::{Error, ErrorKind, Result};
pub use runtime::device::{
    current_stream, default_device, default_stream, new_stream, set_default_device, synchronize,
    synchronize_all, with_stream, Device, DeviceType, Stream,
};
pub use runtime::eval::{async_eval, eval};
pub use transforms::jvp::jvp;
pub use transforms::tracer::stop_gradient;
pub use transforms::vjp::{grad, value_and_grad, vjp, ValueAndGradFn};
pub use transforms::ArrayFn;
pub use runtime::memory::{
    clear_cache, get_active_memory, get_cache_memory, get_peak_memory, reset_peak_memory,
    set_cache_limit, set_memory_limit,
};

pub use primitives::binary::{add, divide, multiply, subtract};
pub use primitives::cast::astype;
pub use primitives::creation::{
    arange, eye, full, full_like, identity, linspace, ones, ones_like, tri, zeros, zeros_like,
};
// One line per op family; each is edited only together with its family.
pub use primitives::unary::{exp, negative};
// binary/ternary/cast families
// reduce/scan/softmax families
// views/join families
// indexing/sort families
pub use primitives::matmul::{addmm, matmul};

