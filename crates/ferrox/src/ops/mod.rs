//! Ops: one family per file or folder. Each family holds its builders
//! (validation, dtype and shape rules, `Array` methods), its primitive (the
//! node type, whose `eval_cpu` calls into [`crate::backend`]), its
//! derivative and batching rules, and its tests.

pub mod binary;
pub mod cast;
pub mod cholesky;
pub mod closeness;
pub mod conv;
pub mod creation;
pub mod decomp;
pub mod depends;
pub mod fast;
pub mod fft;
pub mod fp8;
pub mod grad_helpers;
pub mod hadamard;
pub mod indexing;
pub mod join;
pub mod lu;
pub mod matmul;
pub mod matmul_forms;
pub mod nan_to_num;
pub mod quantized;
pub mod reduce;
pub mod reductions;
pub mod scan;
pub mod search;
pub mod select;
pub mod shape_rules;
pub mod softmax;
pub mod sort;
pub mod spectral;
pub mod stft;
pub mod unary;
pub mod unique;
pub mod views;
pub mod windows;
