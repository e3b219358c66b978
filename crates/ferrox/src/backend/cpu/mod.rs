//! CPU kernels: elementwise engines, SIMD math, parallel helpers.

pub mod binary;
pub mod cast;
pub mod closeness;
pub mod conv;
pub mod copy;
pub mod elementwise;
pub mod factor;
pub mod fft;
pub mod fill;
pub mod fused;
pub mod half;
pub mod join;
pub mod math;
pub mod matmul;
pub mod nan_to_num;
pub mod parallel;
pub mod reduce;
pub mod scan;
pub mod select;
pub mod softmax;
pub mod sort;
pub mod stream_store;
pub mod strided;
pub mod threefry;
pub mod unary;
