//! Kernels that place inputs into a larger output: concatenation, constant
//! padding, the `tril`/`triu` masks and a vector onto a matrix diagonal.
//! They move elements with the size-generic copies of [`copy`](super::copy)
//! (`memcpy` of contiguous runs).

use super::copy::{Strided, copy_to_storage, place, with_elem_size};
use super::elementwise::out_storage;
use super::fill::{Band, band_columns, fill};
use crate::dtype::Element;
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Storage;
use crate::with_dtype;

/// The inputs one after the other along `axis`.
pub fn concatenate(inputs: &[Operand<'_>], axis: usize, out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    with_elem_size!(out.dtype.size(), T => {
        let dst = st.as_mut_slice::<T>();
        let mut origin = vec![0usize; out.shape.len()];
        for x in inputs {
            place(x.data.raw::<T>(), Strided::of(x), dst, out.shape, &origin);
            origin[axis] += x.shape[axis];
        }
    });
    Ok(Data::contiguous(st, out.shape))
}

/// `x` placed at `low` in an output filled with `value` (cast to the
/// dtype).
pub fn pad(x: &Operand<'_>, low: &[usize], value: f64, out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    with_dtype!(out.dtype, T => fill(st.as_mut_slice::<T>(), T::from_f64(value)));
    with_elem_size!(out.dtype.size(), T => {
        place(x.data.raw::<T>(), Strided::of(x), st.as_mut_slice::<T>(), out.shape, low)
    });
    Ok(Data::contiguous(st, out.shape))
}

/// `x` with the elements outside the band of the last two axes zeroed:
/// `tril` keeps `col - row <= k`, `triu` (`upper`) keeps `col - row >= k`.
pub fn triangle(x: &Operand<'_>, k: isize, upper: bool, out: OutSpec<'_>) -> Result<Data> {
    let mut st: Storage = copy_to_storage(x)?;
    let nd = out.shape.len();
    let (rows, cols) = (out.shape[nd - 2], out.shape[nd - 1]);
    let band = if upper { Band::Upper } else { Band::Lower };
    if rows * cols > 0 {
        with_elem_size!(out.dtype.size(), T => {
            for m in st.as_mut_slice::<T>().chunks_mut(rows * cols) {
                for (r, row) in m.chunks_mut(cols).enumerate() {
                    let keep = band_columns(r, cols, k, band);
                    row[..keep.start].fill(0);
                    row[keep.end..].fill(0);
                }
            }
        });
    }
    Ok(Data::contiguous(st, out.shape))
}

/// The 1-d `x` on diagonal `k` of a zeroed square output `[m, m]`.
pub fn diag_matrix(x: &Operand<'_>, k: isize, out: OutSpec<'_>) -> Result<Data> {
    let m = out.shape[0];
    let mut st = Storage::new(m * m * out.dtype.size(), true)?;
    let (r0, c0) = (k.min(0).unsigned_abs(), k.max(0) as usize);
    with_elem_size!(out.dtype.size(), T => {
        let dst = st.as_mut_slice::<T>();
        let raw = x.data.raw::<T>();
        let (off, s) = (x.data.offset as isize, x.data.strides[0]);
        for i in 0..x.shape[0] {
            dst[(i + r0) * m + i + c0] = raw[(off + i as isize * s) as usize];
        }
    });
    Ok(Data::contiguous(st, out.shape))
}
