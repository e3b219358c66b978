//! Half precision through f32, once: f16 and bf16 slices widened to f32
//! and rounded back a block at a time. Every kernel that computes halves
//! in f32 a block at a time (binary, astype, softmax, logsumexp) uses this
//! trait; per-element conversions for SIMD lanes are in
//! `math::half_conv`.

use crate::graph::storage::Pod;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

/// f16 and bf16 converted to and from f32 a block at a time.
///
/// The half crate's per-element `to_f32`/`from_f32` check the CPU's
/// features on every call and cannot vectorise (f16 `add` ran about 30x
/// slower than f32 through them); its slice conversions check once and use
/// F16C. Results are identical: either way each element is computed in f32
/// and rounded once.
pub trait HalfBlock: Pod {
    /// `dst[i] = src[i] as f32`.
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = round(src[i])`.
    fn narrow(src: &[f32], dst: &mut [Self]);
}

impl HalfBlock for f16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl HalfBlock for bf16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}
