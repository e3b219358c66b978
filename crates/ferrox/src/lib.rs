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

// The layers, bottom up (ARCHITECTURE.md has the rules):
// dtype, error, sync → graph → runtime, array, backend → ops → transforms
// → compile → the namespaces on top (contract, linalg, fft, random, io,
// distributed).
pub mod array;
pub mod backend;
pub mod compile;
pub mod contract;
pub mod distributed;
pub mod dtype;
mod error;
pub use ops::fast;
pub use ops::fft;
pub mod graph;
pub mod io;
pub mod linalg;
pub mod ops;
/// The op families under their former name; [`ops`] is their home.
#[doc(hidden)]
pub use ops as primitives;
pub mod random;
pub mod runtime;
pub mod sync;
pub mod transforms;

/// Re-export of the `half` crate (f16, bf16 element types).
pub use half;

pub use compile::{
    CompiledFn, compile, compile_shapeless, compile_with, disable_compile, enable_compile,
};
pub use dtype::{Complex64, DType};
pub use error::{Error, ErrorKind, Result};
pub use graph::array::Array;
pub use graph::stream::{
    Device, DeviceType, Stream, current_stream, default_device, default_stream, new_stream,
    set_default_device, set_default_stream, with_stream,
};
pub use runtime::devices::{DeviceProperty, device_count, device_info};
pub use runtime::eval::{async_eval, eval};
pub use runtime::memory::{
    clear_cache, get_active_memory, get_cache_memory, get_memory_limit, get_peak_memory,
    reset_peak_memory, set_cache_limit, set_memory_limit,
};
pub use runtime::pending::{synchronize, synchronize_all};
pub use transforms::ArrayFn;
pub use transforms::custom::{CustomFunction, checkpoint, custom_function};
pub use transforms::jvp::jvp;
pub use transforms::tracer::stop_gradient;
pub use transforms::tree::{Tree, value_and_grad_tree};
pub use transforms::vjp::{ValueAndGradFn, grad, value_and_grad, vjp};
pub use transforms::vmap::vmap;

pub use ops::binary::diff::diff;
pub use ops::binary::divmod::divmod;
pub use ops::binary::{
    add, arctan2, bitwise_and, bitwise_or, bitwise_xor, divide, equal, floor_divide, greater,
    greater_equal, left_shift, less, less_equal, logaddexp, logical_and, logical_or, logical_xor,
    maximum, minimum, multiply, not_equal, power, remainder, right_shift, subtract,
};
pub use ops::cast::{astype, view};
pub use ops::creation::{
    arange, eye, full, full_like, identity, linspace, ones, ones_like, tri, zeros, zeros_like,
};
// One line per op family; each is edited only together with its family.
pub use contract::{TensordotAxes, einsum, einsum_path, inner, kron, outer, tensordot, vecdot};
pub use ops::closeness::{allclose, array_equal, isclose};
pub use ops::conv::{
    ConvGeneralParams, ConvolveMode, conv_general, conv_transpose, conv1d, conv2d, conv3d, convolve,
};
pub use ops::depends::depends;
pub use ops::fp8::{from_fp8, to_fp8};
pub use ops::hadamard::hadamard_transform;
pub use ops::indexing::{
    ArrayAt, dynamic_slice, dynamic_slice_update, gather, masked_scatter, put_along_axis, scatter,
    scatter_add, scatter_max, scatter_min, scatter_prod, slice_update, take, take_along_axis,
};
pub use ops::join::{
    PadMode, Sections, concatenate, diag, meshgrid, pad, pad_with_value, repeat, roll, split,
    stack, tile, tril, triu,
};
pub use ops::matmul::{addmm, matmul};
pub use ops::matmul_forms::{block_masked_mm, gather_mm, segmented_mm};
pub use ops::nan_to_num::nan_to_num;
pub use ops::quantized::{
    QuantMode, dequantize, gather_qmm, gather_qqmm, qqmm, quantize, quantized_matmul,
};
pub use ops::reduce::{all, any, argmax, argmin, max, mean, min, prod, std, sum, var};
pub use ops::reductions::{count_nonzero, median, minmax, trace};
pub use ops::scan::{cummax, cummin, cumprod, cumsum, logcumsumexp};
pub use ops::search::{Side, searchsorted};
pub use ops::select::{clip, r#where};
pub use ops::shape_rules::broadcast_all as broadcast_shapes;
pub use ops::softmax::{logsumexp, softmax};
pub use ops::sort::{argpartition, argsort, partition, sort, topk};
pub use ops::unary::{
    abs, arccos, arccosh, arcsin, arcsinh, arctan, arctanh, bitwise_invert, ceil, conjugate, cos,
    cosh, degrees, erf, erfinv, exp, expm1, floor, imag, isfinite, isinf, isnan, isneginf,
    isposinf, log, log1p, log2, log10, logical_not, negative, positive, radians, real, reciprocal,
    round, rsqrt, sigmoid, sign, sin, sinh, sqrt, square, tan, tanh, trunc,
};
pub use ops::unique::{Unique, unique};
pub use ops::views::{
    SliceArg, as_strided, atleast_1d, atleast_2d, atleast_3d, broadcast_arrays, broadcast_to,
    contiguous, diagonal, expand_dims, flatten, flip, matrix_transpose, moveaxis, reshape, slice,
    squeeze, swapaxes, transpose, unflatten, unstack,
};
pub use ops::windows::{bartlett, blackman, hamming, hanning};
