//! The fused kernels behind `ferrox::fast`: normalisations, rotary
//! embeddings and attention. Every kernel computes in `f32` (half-float
//! inputs are widened once, outputs rounded once), reads its inputs through
//! their strides where it can, and splits work over rows or heads.

pub mod attention;
pub mod attention_backward;
pub mod norm;
pub mod rope;

use super::elementwise::out_storage;
use super::half::HalfBlock;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use half::{bf16, f16};
use std::borrow::Cow;

/// An operand's elements as `f32` with non-negative element strides: the
/// operand's own buffer when it already is `f32` (any such layout, no
/// copy), else a widened row-major copy.
pub(crate) struct F32View<'a> {
    pub data: Cow<'a, [f32]>,
    pub offset: usize,
    pub strides: Vec<usize>,
}

impl<'a> F32View<'a> {
    /// Views `op` as `f32`; `kernel` names the op in errors.
    pub fn of(kernel: &str, op: &Operand<'a>) -> Result<F32View<'a>> {
        let shape = op.shape;
        // Positive strides (or size-1 dimensions): the matrix products read
        // such a view in place.
        let dense = op
            .data
            .strides
            .iter()
            .zip(shape)
            .all(|(&s, &d)| s > 0 || d == 1);
        if op.dtype == DType::Float32 && dense {
            return Ok(F32View {
                data: Cow::Borrowed(op.data.raw::<f32>()),
                offset: op.data.offset,
                strides: op.data.strides.iter().map(|&s| s.max(0) as usize).collect(),
            });
        }
        let n: usize = shape.iter().product();
        let mut out = vec![0f32; n];
        match op.dtype {
            DType::Float32 => out = op.data.to_vec::<f32>(shape),
            DType::Float16 => f16::widen(&op.data.to_vec::<f16>(shape), &mut out),
            DType::BFloat16 => bf16::widen(&op.data.to_vec::<bf16>(shape), &mut out),
            d => {
                return Err(Error::dtype(
                    kernel,
                    format!("expected float32, float16 or bfloat16, got {d}"),
                ));
            }
        }
        Ok(F32View {
            data: Cow::Owned(out),
            offset: 0,
            strides: row_major_strides(shape)
                .into_iter()
                .map(|s| s as usize)
                .collect(),
        })
    }
}

/// Float element types a fused kernel reads and writes, converted to and
/// from `f32` a row at a time.
pub(crate) trait RowFloat: crate::graph::storage::Pod {
    /// `dst[i] = src[i] as f32`.
    fn load(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = round(src[i])`.
    fn store(src: &[f32], dst: &mut [Self]);
    /// The slice itself when it already holds `f32`s (no conversion).
    fn as_f32(xs: &[Self]) -> Option<&[f32]>;
    /// The slice itself when it already holds `f32`s.
    fn as_f32_mut(xs: &mut [Self]) -> Option<&mut [f32]>;
}

impl RowFloat for f32 {
    fn load(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src)
    }
    fn store(src: &[f32], dst: &mut [f32]) {
        dst.copy_from_slice(src)
    }
    fn as_f32(xs: &[f32]) -> Option<&[f32]> {
        Some(xs)
    }
    fn as_f32_mut(xs: &mut [f32]) -> Option<&mut [f32]> {
        Some(xs)
    }
}

macro_rules! row_float_half {($($t:ty),*) => {$(
    impl RowFloat for $t {
        fn load(src: &[$t], dst: &mut [f32]) {
            <$t as HalfBlock>::widen(src, dst)
        }
        fn store(src: &[f32], dst: &mut [$t]) {
            <$t as HalfBlock>::narrow(src, dst)
        }
        fn as_f32(_: &[$t]) -> Option<&[f32]> {
            None
        }
        fn as_f32_mut(_: &mut [$t]) -> Option<&mut [f32]> {
            None
        }
    }
)*}}
row_float_half!(f16, bf16);

/// Runs `$body` with `$T` bound to the element type of an `f32`, `f16` or
/// `bf16` dtype; other dtypes are an error naming `$name`.
macro_rules! with_row_float {
    ($name:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float16 => {
                type $T = half::f16;
                $body
            }
            DType::BFloat16 => {
                type $T = half::bf16;
                $body
            }
            d => Err(Error::dtype(
                $name,
                format!("expected float32, float16 or bfloat16, got {d}"),
            )),
        }
    };
}
pub(crate) use with_row_float;

/// Wraps `f32` results (row-major, `out.shape`) as the output, rounding
/// once when the output is a half float.
pub(crate) fn write_f32(kernel: &str, vals: &[f32], out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    match out.dtype {
        DType::Float32 => st.as_mut_slice::<f32>().copy_from_slice(vals),
        DType::Float16 => f16::narrow(vals, st.as_mut_slice::<f16>()),
        DType::BFloat16 => bf16::narrow(vals, st.as_mut_slice::<bf16>()),
        d => {
            return Err(Error::dtype(
                kernel,
                format!("expected a float32, float16 or bfloat16 output, got {d}"),
            ));
        }
    }
    Ok(Data::contiguous(st, out.shape))
}

/// `sum(f(x))` with eight independent accumulators, so the loop
/// vectorises and the rounding error grows with `len / 8`.
#[inline(always)]
pub(crate) fn lanes_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            acc[i] += f(c[i]);
        }
    }
    let tail: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    acc.iter().sum::<f32>() + tail
}

/// `max(xs)` with eight independent lanes (`-inf` for no elements; NaN is
/// not propagated, as the scores it is used on are never NaN unless an
/// input is, and then the row's result is NaN anyway).
#[inline(always)]
pub(crate) fn lanes_max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, &x| if x > a { x } else { a });
    acc.iter().fold(tail, |a, &x| if x > a { x } else { a })
}
