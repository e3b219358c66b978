//! CPU kernels: elementwise engines, SIMD math, parallel helpers.

pub mod elementwise;
pub mod parallel;
