//! CPU kernels: elementwise engines, SIMD math, parallel helpers.

pub mod binary;
pub mod copy;
pub mod elementwise;
pub mod fused;
pub mod math;
pub mod parallel;
pub mod reduce;
pub mod stream_store;
pub mod strided;
pub mod unary;
