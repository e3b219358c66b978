//! CPU kernels of dtype conversion: value conversion ([`convert`], with
//! vectorised f32 <-> f16/bf16 blocks) and bit reinterpretation (views
//! that share storage where the layout allows, byte copies otherwise).

use crate::backend::cpu::elementwise::{map_slices, out_storage, unary};
use crate::backend::cpu::half::HalfBlock;
use crate::backend::cpu::parallel::{chunk_len, worth_splitting};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::graph::layout::{Data, for_each_offset, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::{Pod, Storage};
use crate::with_dtype;
use half::{bf16, f16};
use rayon::prelude::*;
use std::sync::Arc;

/// Converts one element between any two dtypes with numpy's semantics:
/// integers wrap, floats to integers truncate (saturating), complex to real
/// keeps the real part, anything to bool is `!= 0`. Same-type conversion
/// is exact on every path.
#[inline(always)]
pub fn convert<T: Element, U: Element>(x: T) -> U {
    if U::DTYPE == DType::Complex64 || T::DTYPE == DType::Complex64 {
        return U::from_c64(x.to_c64());
    }
    if U::DTYPE.is_integer() && (T::DTYPE.is_integer() || T::DTYPE == DType::Bool) {
        return U::from_i128(x.to_i128());
    }
    if U::DTYPE == DType::Float32 && matches!(T::DTYPE, DType::Int64 | DType::UInt64) {
        // Through f64 would round twice (64 -> 53 -> 24 bits); i128 -> f32
        // rounds once, and f32 -> f64 -> f32 is exact.
        return U::from_f64((x.to_i128() as f32) as f64);
    }
    U::from_f64(x.to_f64())
}

/// `x` converted to `out.dtype` (numpy's value semantics, see [`convert`]).
pub fn astype(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let block = match (x.dtype, out.dtype) {
        (DType::Float32, DType::Float16) => convert_blocks(x, out, f16::narrow),
        (DType::Float32, DType::BFloat16) => convert_blocks(x, out, bf16::narrow),
        (DType::Float16, DType::Float32) => convert_blocks(x, out, f16::widen),
        (DType::BFloat16, DType::Float32) => convert_blocks(x, out, bf16::widen),
        _ => None,
    };
    if let Some(result) = block {
        return result;
    }
    with_dtype!(x.dtype, T => with_dtype!(out.dtype, U => cast_kernel::<T, U>(x, out)))
}

/// Converts a contiguous input with a slice conversion (f32 <-> f16/bf16:
/// the same values as [`convert`], vectorised), split over cores when
/// large; `None` for strided inputs.
fn convert_blocks<T: Pod, U: Pod>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
    f: fn(&[T], &mut [U]),
) -> Option<Result<Data>> {
    let src = x.data.as_contiguous::<T>(x.shape)?;
    let mut storage = match out_storage(out) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let dst = storage.as_mut_slice::<U>();
    if src.len() != dst.len() {
        return Some(Err(Error::runtime(
            "astype",
            "internal error: input and output sizes differ",
        )));
    }
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        dst.par_chunks_mut(c)
            .zip(src.par_chunks(c))
            .for_each(|(d, s)| f(s, d));
    } else {
        f(src, dst);
    }
    Some(Ok(Data::contiguous(storage, out.shape)))
}

fn cast_kernel<T: Element + Pod, U: Element + Pod>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    unary(x, out, |v: T| convert::<T, U>(v))
}

/// The bytes of `x` read as `out.dtype`: a view of the same storage when
/// the element sizes match or `x` is contiguous and aligned, a copy otherwise.
pub fn view(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let (in_size, out_size) = (x.dtype.size(), out.dtype.size());
    if out.dtype == DType::Bool && x.dtype != DType::Bool {
        // A bool must be 0 or 1 (see `Pod for bool`): normalise bytes.
        return view_as_bool(x, out);
    }
    if in_size == out_size {
        // Same element size: the input's layout, whatever it is, holds.
        return Ok(Data {
            storage: Arc::clone(&x.data.storage),
            strides: x.data.strides.clone(),
            offset: x.data.offset,
        });
    }
    let first_byte = x.data.offset * in_size;
    if x.data.is_contiguous(x.shape) && first_byte % out_size == 0 {
        return Ok(Data {
            storage: Arc::clone(&x.data.storage),
            strides: row_major_strides(out.shape),
            offset: first_byte / out_size,
        });
    }
    // Strided, or not aligned for the wider type: copy the bytes first.
    Ok(Data::contiguous(contiguous_copy(x)?, out.shape))
}

/// The elements of `x` in row-major order in a fresh storage.
fn contiguous_copy(x: &Operand<'_>) -> Result<Storage> {
    let n: usize = x.shape.iter().product();
    let mut storage = Storage::new(n * x.dtype.size(), x.dtype == DType::Bool)?;
    with_dtype!(x.dtype, T => {
        let (raw, dst) = (x.data.raw::<T>(), storage.as_mut_slice::<T>());
        let mut k = 0;
        for_each_offset(x.shape, &x.data.strides, x.data.offset, |o| {
            dst[k] = raw[o];
            k += 1;
        });
    });
    Ok(storage)
}

fn view_as_bool(x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let n: usize = x.shape.iter().product();
    let bytes = n * x.dtype.size();
    let copied;
    let src: &[u8] = if x.data.is_contiguous(x.shape) {
        let start = x.data.offset * x.dtype.size();
        x.data
            .storage
            .as_slice::<u8>()
            .get(start..start + bytes)
            .unwrap_or(&[])
    } else {
        copied = contiguous_copy(x)?;
        copied.as_slice::<u8>()
    };
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<bool>();
    if src.len() != dst.len() {
        return Err(Error::runtime(
            "view",
            format!(
                "internal error: {} input bytes for {} bools",
                src.len(),
                dst.len()
            ),
        ));
    }
    map_slices(src, dst, |b: u8| b != 0);
    Ok(Data::contiguous(storage, out.shape))
}
