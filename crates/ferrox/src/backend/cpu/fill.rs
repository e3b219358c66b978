//! Kernels that write values without reading an input: a constant, an
//! arithmetic sequence, and a band of ones (`eye`, `tri`). The band rule
//! (which columns of a row lie on or below/above diagonal `k`) is also the
//! one `tril`/`triu` mask with, in [`join`](super::join).

use super::elementwise::out_storage;
use super::parallel::{chunk_len, worth_splitting};
use crate::dtype::{Complex64, DType, Element};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::OutSpec;
use crate::with_dtype;
use rayon::prelude::*;
use std::ops::Range;

/// `dst[i] = v`, on several cores when the slice is large.
pub fn fill<T: Element>(dst: &mut [T], v: T) {
    if worth_splitting(dst.len()) {
        dst.par_chunks_mut(chunk_len(dst.len()))
            .for_each(|c| c.fill(v));
    } else {
        dst.fill(v);
    }
}

/// The output filled with `re + im i` cast to its dtype (`im` counts for
/// complex outputs only).
pub fn full(re: f64, im: f64, out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    with_dtype!(out.dtype, T => {
        let v = if out.dtype == DType::Complex64 {
            T::from_c64(Complex64::new(re as f32, im as f32))
        } else {
            T::from_f64(re)
        };
        fill(st.as_mut_slice::<T>(), v);
    });
    Ok(Data::contiguous(st, out.shape))
}

/// `out[i] = start + i * step` cast to the output dtype (integers wrap).
pub fn arange(start: f64, step: f64, out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    // Integer outputs wrap like a C cast (`arange(2**31 - 1, 2**31 + 1,
    // dtype=int32)` is `[2**31 - 1, -2**31]`, as MLX gives), not saturate.
    let integer = out.dtype.is_integer();
    with_dtype!(out.dtype, T => {
        for (i, o) in st.as_mut_slice::<T>().iter_mut().enumerate() {
            let v = start + i as f64 * step;
            *o = if integer { T::from_i128(v as i128) } else { T::from_f64(v) };
        }
    });
    Ok(Data::contiguous(st, out.shape))
}

/// Which elements of a matrix a band holds, by `d = col - row` and the
/// diagonal offset `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    /// `d == k`: one diagonal (`eye`).
    Diagonal,
    /// `d <= k`: on and below the diagonal (`tri`, `tril`).
    Lower,
    /// `d >= k`: on and above the diagonal (`triu`).
    Upper,
}

/// The columns of row `r` (of `cols`) inside `band` with offset `k`: one
/// contiguous range, possibly empty.
pub fn band_columns(r: usize, cols: usize, k: isize, band: Band) -> Range<usize> {
    // The column on the diagonal, in a type wide enough for any r and k.
    let on = r as i128 + k as i128;
    let clamp = |c: i128| c.clamp(0, cols as i128) as usize;
    match band {
        Band::Diagonal if on >= 0 && on < cols as i128 => on as usize..on as usize + 1,
        Band::Diagonal => 0..0,
        Band::Lower => 0..clamp(on + 1),
        Band::Upper => clamp(on)..cols,
    }
}

/// A 2-d output `[n, m]` with ones inside `band` (offset `k`) and zeros
/// elsewhere.
pub fn band(k: isize, band: Band, out: OutSpec<'_>) -> Result<Data> {
    let m = out.shape[1];
    let mut st = out_storage(out)?;
    with_dtype!(out.dtype, T => {
        let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
        // An empty output has nothing to fill (n may be huge when m is 0).
        if m > 0 {
            for (r, row) in st.as_mut_slice::<T>().chunks_mut(m).enumerate() {
                row.fill(zero);
                row[band_columns(r, m, k, band)].fill(one);
            }
        }
    });
    Ok(Data::contiguous(st, out.shape))
}
