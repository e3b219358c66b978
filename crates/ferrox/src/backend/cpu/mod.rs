//! CPU kernels: elementwise engines, SIMD math, parallel helpers.

pub mod elementwise;
pub mod math;
pub mod parallel;
pub mod reduce;
pub mod stream_store;
