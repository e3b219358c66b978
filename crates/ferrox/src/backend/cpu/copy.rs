//! Copy kernels shared by the view and join ops: strided views into
//! contiguous buffers and into regions of them.
//!
//! Kernels are generic over the element *size*, not the dtype: a copy moves
//! bytes unchanged, so `u8`/`u16`/`u32`/`u64` instantiations serve every
//! dtype (bool, f16, complex64, ...), which keeps compile times down. Layouts
//! are first collapsed ([`collapse`]) so that contiguous parts become long
//! rows copied with `copy_from_slice` (memcpy); a row with another stride is
//! a gather loop. Large copies split over cores.
//!
//! Offsets are `isize` element indices into the source slice; a layout with
//! no elements is never dereferenced, so its offset may be anything.

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::{chunk_len, worth_splitting};
use crate::error::Result;
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::{Pod, Storage};
use crate::graph::walk::{collapse, for_each_segment, inner_strides, zip_strides};
use rayon::prelude::*;

/// Runs `$body` with `$T` bound to the unsigned integer of `$size` bytes
/// (every dtype has 1, 2, 4 or 8 bytes).
macro_rules! with_elem_size {
    ($size:expr, $T:ident => $body:expr) => {
        match $size {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}
pub(crate) use with_elem_size;

/// A strided view into a source slice: `shape`, element `strides` and the
/// `offset` of the first element.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<'a> {
    pub shape: &'a [usize],
    pub strides: &'a [isize],
    pub offset: isize,
}

impl<'a> Strided<'a> {
    /// The layout of an evaluated operand.
    pub fn of(op: &Operand<'a>) -> Strided<'a> {
        Strided {
            shape: op.shape,
            strides: &op.data.strides,
            offset: op.data.offset as isize,
        }
    }
    fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Copies `src` (a view over `raw`) into `dst` in row-major order;
/// `dst.len()` must be the view's element count. Splits over cores when large.
pub(crate) fn gather<T: Pod>(raw: &[T], src: Strided<'_>, dst: &mut [T]) {
    let n = dst.len();
    if n == 0 {
        return;
    }
    let (shape, strides) = collapse(src.shape, [src.strides]);
    let strides: Vec<isize> = strides.iter().map(|s| s[0]).collect();
    let Some(&inner) = shape.last() else {
        dst[0] = raw[src.offset as usize];
        return;
    };
    if !worth_splitting(n) {
        gather_rows(raw, &shape, &strides, src.offset, 0, dst);
    } else if shape.len() == 1 {
        // One long row: split the row itself.
        let c = chunk_len(n);
        let s = strides[0];
        dst.par_chunks_mut(c).enumerate().for_each(|(k, d)| {
            copy_row(raw, src.offset + (k * c) as isize * s, s, d);
        });
    } else {
        let rows_per_task = chunk_len(n).div_ceil(inner);
        dst.par_chunks_mut(rows_per_task * inner)
            .enumerate()
            .for_each(|(k, d)| {
                gather_rows(raw, &shape, &strides, src.offset, k * rows_per_task, d);
            });
    }
}

/// Copies whole rows (the last dimension) of a collapsed view, starting at
/// row `first_row`, into `dst` until it is full.
fn gather_rows<T: Pod>(
    raw: &[T],
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    first_row: usize,
    dst: &mut [T],
) {
    let nd = shape.len();
    let (inner, inner_stride) = (shape[nd - 1], strides[nd - 1]);
    if nd >= 2 && strides[nd - 2] == 1 && inner_stride != 1 {
        return gather_transposed_rows(raw, shape, strides, offset, first_row, dst);
    }
    let mut at = 0;
    // The callback never fails.
    let _ = for_each_segment(
        shape,
        &zip_strides([strides]),
        [offset],
        first_row * inner,
        dst.len(),
        |[off], count| {
            copy_row(raw, off, inner_stride, &mut dst[at..at + count]);
            at += count;
            Ok(())
        },
    );
}

/// [`gather_rows`] for a source whose last two (collapsed) axes are
/// transposed: consecutive destination rows are adjacent in the source
/// (stride 1) while a row itself is strided. Walking a row at a time reads
/// one element per source cache line, and for power-of-two row lengths
/// those lines collide in the cache. This copies tiles of a few rows column
/// by column instead, reading a short contiguous run per column.
///
/// Tile height: 16 bytes of rows (clamped to 2..=8 rows), the best of 2..32
/// in a standalone `-O` measurement of u8/u16/u32/u64 matrices of
/// 1000..4096 rows: 2-3x the row walk at power-of-two sizes, on par with it
/// elsewhere (taller tiles were slower: their destination lines evict each
/// other).
fn gather_transposed_rows<T: Pod>(
    raw: &[T],
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    first_row: usize,
    dst: &mut [T],
) {
    let nd = shape.len();
    let (rows_per_plane, inner, inner_stride) = (shape[nd - 2], shape[nd - 1], strides[nd - 1]);
    let tile_rows = (16 / size_of::<T>()).clamp(2, 8);
    let mut row = first_row;
    let mut rest = dst;
    while !rest.is_empty() {
        // Source offset of `row`: unravel over all axes but the last.
        let (mut off, mut r) = (offset, row);
        for d in (0..nd - 1).rev() {
            off += (r % shape[d]) as isize * strides[d];
            r /= shape[d];
        }
        // A tile never crosses into the next plane (other outer indices).
        let in_plane = rows_per_plane - row % rows_per_plane;
        let count = tile_rows.min(in_plane).min(rest.len() / inner);
        let (tile, tail) = std::mem::take(&mut rest).split_at_mut(count * inner);
        for c in 0..inner {
            let src = (off + c as isize * inner_stride) as usize;
            let run = &raw[src..src + count];
            for (j, &v) in run.iter().enumerate() {
                tile[j * inner + c] = v;
            }
        }
        rest = tail;
        row += count;
    }
}

/// `dst[j] = raw[off + j * stride]`: a memcpy for stride 1, a fill for 0.
#[inline(always)]
fn copy_row<T: Pod>(raw: &[T], off: isize, stride: isize, dst: &mut [T]) {
    let o = off as usize;
    match stride {
        1 => dst.copy_from_slice(&raw[o..o + dst.len()]),
        0 => dst.fill(raw[o]),
        s => {
            for (j, d) in dst.iter_mut().enumerate() {
                *d = raw[(off + j as isize * s) as usize];
            }
        }
    }
}

/// Copies `src` into `dst` through the strided destination layout
/// (`dst_strides`, `dst_offset`) over the same shape. Sequential.
pub(crate) fn copy_strided<T: Pod>(
    raw: &[T],
    src: Strided<'_>,
    dst: &mut [T],
    dst_strides: &[isize],
    dst_offset: isize,
) {
    if src.numel() == 0 {
        return;
    }
    let (shape, strides) = collapse(src.shape, [src.strides, dst_strides]);
    let [s_in, d_in] = inner_strides(&strides);
    // The callback never fails.
    let _ = for_each_segment(
        &shape,
        &strides,
        [src.offset, dst_offset],
        0,
        src.numel(),
        |[so, dof], count| {
            if d_in == 1 {
                let o = dof as usize;
                copy_row(raw, so, s_in, &mut dst[o..o + count]);
            } else {
                for j in 0..count as isize {
                    dst[(dof + j * d_in) as usize] = raw[(so + j * s_in) as usize];
                }
            }
            Ok(())
        },
    );
}

/// Copies `src` into the box of the row-major buffer `dst` (of `dst_shape`)
/// that starts at `origin` and has the source's shape. The box must lie
/// inside `dst_shape`. Large copies split over slabs of `dst`'s first
/// dimension (disjoint, so each task owns its part of `dst`).
pub(crate) fn place<T: Pod>(
    raw: &[T],
    src: Strided<'_>,
    dst: &mut [T],
    dst_shape: &[usize],
    origin: &[usize],
) {
    let n = src.numel();
    if n == 0 {
        return;
    }
    // Leading dimensions of size 1 in the destination (so also in the box)
    // contribute nothing but would stop the slab split.
    let lead = dst_shape.iter().take_while(|&&d| d == 1).count();
    let (dst_shape, origin) = (&dst_shape[lead..], &origin[lead..]);
    let src = Strided {
        shape: &src.shape[lead..],
        strides: &src.strides[lead..],
        offset: src.offset,
    };
    let Some((&rows, row_shape)) = src.shape.split_first() else {
        dst[0] = raw[src.offset as usize];
        return;
    };
    let dst_strides = row_major_strides(dst_shape);
    let slab = dst_strides[0] as usize;
    let block = &mut dst[origin[0] * slab..(origin[0] + rows) * slab];
    if row_shape == &dst_shape[1..] {
        // The box spans whole slabs: one contiguous block.
        return gather(raw, src, block);
    }
    let inner_offset: isize = origin[1..]
        .iter()
        .zip(&dst_strides[1..])
        .map(|(&o, &s)| o as isize * s)
        .sum();
    let copy_slabs = |first: usize, part: &mut [T]| {
        let count = part.len() / slab;
        let mut shape = src.shape.to_vec();
        shape[0] = count;
        let sub = Strided {
            shape: &shape,
            strides: src.strides,
            offset: src.offset + first as isize * src.strides[0],
        };
        copy_strided(raw, sub, part, &dst_strides, inner_offset);
    };
    if worth_splitting(n) && rows > 1 {
        let per_task = chunk_len(n).div_ceil(n / rows).clamp(1, rows);
        block
            .par_chunks_mut(per_task * slab)
            .enumerate()
            .for_each(|(k, part)| copy_slabs(k * per_task, part));
    } else {
        copy_slabs(0, block);
    }
}

/// Copies an evaluated operand into a new row-major buffer.
///
/// Kernels that need contiguous input call this (or [`ensure_contiguous`]).
///
/// ```
/// use ferrox::{graph::primitive::Operand, ops::views::copy_to_contiguous};
/// use ferrox::array::Data;
/// // A 2x3 buffer read as its 3x2 transpose.
/// let data = Data::alloc(&[6], ferrox::DType::Int32)?;
/// let t = Data { strides: vec![1, 3], ..data };
/// let op = Operand { data: &t, shape: &[3, 2], dtype: ferrox::DType::Int32 };
/// let c = copy_to_contiguous(&op)?;
/// assert!(c.is_contiguous(&[3, 2]));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn copy_to_contiguous(op: &Operand<'_>) -> Result<Data> {
    let storage = copy_to_storage(op)?;
    Ok(Data::contiguous(storage, op.shape))
}

/// The operand's data if it is already row-major contiguous (shared, no
/// copy), else a contiguous copy.
///
/// ```
/// use ferrox::{graph::primitive::Operand, ops::views::ensure_contiguous};
/// use ferrox::array::Data;
/// let data = Data::alloc(&[4], ferrox::DType::Float32)?;
/// let op = Operand { data: &data, shape: &[2, 2], dtype: ferrox::DType::Float32 };
/// let same = ensure_contiguous(&op)?;
/// assert!(std::sync::Arc::ptr_eq(&same.storage, &data.storage));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ensure_contiguous(op: &Operand<'_>) -> Result<Data> {
    if op.data.is_contiguous(op.shape) {
        return Ok(op.data.clone());
    }
    copy_to_contiguous(op)
}

/// A fresh, owned (so still writable) row-major copy of an operand.
pub(crate) fn copy_to_storage(op: &Operand<'_>) -> Result<Storage> {
    let mut storage = out_storage(OutSpec {
        shape: op.shape,
        dtype: op.dtype,
    })?;
    with_elem_size!(op.dtype.size(), T => {
        gather(op.data.raw::<T>(), Strided::of(op), storage.as_mut_slice::<T>())
    });
    Ok(storage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Naive reference: element at each row-major index of a strided view.
    fn naive(raw: &[u32], shape: &[usize], strides: &[isize], offset: isize) -> Vec<u32> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut flat| {
                let mut o = offset;
                for d in (0..shape.len()).rev() {
                    o += (flat % shape[d]) as isize * strides[d];
                    flat /= shape[d];
                }
                raw[o as usize]
            })
            .collect()
    }

    /// A random strided layout over a buffer: dims, per-dim step (possibly
    /// negative or 0 = broadcast), and a permutation.
    fn layout() -> impl Strategy<Value = (Vec<usize>, Vec<isize>, isize, usize)> {
        (
            proptest::collection::vec((0usize..5, -2isize..3), 0..5),
            any::<u64>(),
        )
            .prop_map(|(dims, seed)| {
                let shape: Vec<usize> = dims.iter().map(|d| d.0).collect();
                // Strides of a row-major buffer big enough for |step| * shape.
                let ext: Vec<usize> = dims
                    .iter()
                    .map(|&(n, s)| n * s.unsigned_abs().max(1))
                    .collect();
                let base = row_major_strides(&ext);
                let mut strides: Vec<isize> =
                    dims.iter().zip(&base).map(|(&(_, s), &b)| s * b).collect();
                let mut shape = shape;
                // Permute dims and strides together.
                let mut seed = seed;
                for i in (1..shape.len()).rev() {
                    let j = (seed % (i as u64 + 1)) as usize;
                    seed /= i as u64 + 1;
                    shape.swap(i, j);
                    strides.swap(i, j);
                }
                // Offset so that negative strides stay in range.
                let offset: isize = shape
                    .iter()
                    .zip(&strides)
                    .map(|(&n, &s)| {
                        if s < 0 {
                            -s * (n.max(1) as isize - 1)
                        } else {
                            0
                        }
                    })
                    .sum();
                let len = ext.iter().product::<usize>().max(1) + offset as usize;
                (shape, strides, offset, len)
            })
    }

    proptest! {
        #[test]
        fn gather_matches_naive((shape, strides, offset, len) in layout()) {
            let raw: Vec<u32> = (0..len as u32).collect();
            let n: usize = shape.iter().product();
            let mut dst = vec![u32::MAX; n];
            gather(&raw, Strided { shape: &shape, strides: &strides, offset }, &mut dst);
            prop_assert_eq!(dst, naive(&raw, &shape, &strides, offset));
        }

        #[test]
        fn place_matches_naive(
            (shape, strides, offset, len) in layout(),
            pads in proptest::collection::vec((0usize..3, 0usize..3), 5),
        ) {
            let raw: Vec<u32> = (0..len as u32).collect();
            let dst_shape: Vec<usize> = shape.iter().zip(&pads).map(|(&n, &(b, a))| n + b + a).collect();
            let origin: Vec<usize> = pads.iter().take(shape.len()).map(|p| p.0).collect();
            let mut dst = vec![u32::MAX; dst_shape.iter().product()];
            place(&raw, Strided { shape: &shape, strides: &strides, offset }, &mut dst, &dst_shape, &origin);
            // Reference: the box gets the view, everything else is untouched.
            let want_box = naive(&raw, &shape, &strides, offset);
            let mut k = 0;
            let dst_strides = row_major_strides(&dst_shape);
            let mut want = vec![u32::MAX; dst.len()];
            crate::graph::layout::for_each_offset(&shape, &dst_strides, 0, |o| {
                let base: isize = origin.iter().zip(&dst_strides).map(|(&o, &s)| o as isize * s).sum();
                want[(o as isize + base) as usize] = want_box[k];
                k += 1;
            });
            prop_assert_eq!(dst, want);
        }
    }

    #[test]
    fn large_gathers_split_over_cores_and_stay_exact() {
        // Big enough for the parallel paths: a transposed matrix, a long
        // strided row, and a box placed into a larger buffer.
        let (r, c) = (300usize, 400usize);
        let raw: Vec<u32> = (0..(r * c) as u32).collect();
        let t = Strided {
            shape: &[c, r],
            strides: &[1, c as isize],
            offset: 0,
        };
        let mut dst = vec![0; r * c];
        gather(&raw, t, &mut dst);
        assert_eq!(dst, naive(&raw, &[c, r], &[1, c as isize], 0));

        // A batch of transposed matrices: tiles must not cross planes, also
        // where a parallel chunk starts mid-plane.
        let (b, p, q) = (2usize, 170usize, 200usize);
        let batch = Strided {
            shape: &[b, q, p],
            strides: &[(p * q) as isize, 1, p as isize],
            offset: 0,
        };
        let mut dst = vec![0; b * p * q];
        gather(&raw, batch, &mut dst);
        assert_eq!(dst, naive(&raw, batch.shape, batch.strides, 0));

        let row = Strided {
            shape: &[r * c / 2],
            strides: &[2],
            offset: 1,
        };
        let mut dst = vec![0; r * c / 2];
        gather(&raw, row, &mut dst);
        assert!(dst.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 1));

        let mut big = vec![0u32; (r + 2) * (c + 3)];
        let src = Strided {
            shape: &[r, c],
            strides: &[c as isize, 1],
            offset: 0,
        };
        place(&raw, src, &mut big, &[r + 2, c + 3], &[1, 2]);
        assert_eq!(big[(c + 3) + 2], 0);
        assert_eq!(big[(r) * (c + 3) + 2 + c - 1], raw[r * c - 1]);
        assert_eq!(big[0], 0);
    }
}
