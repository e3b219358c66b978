//! The stride walker: the one loop that visits a strided layout in
//! row-major order. Every kernel that walks N-d strides (elementwise
//! broadcasting, copies, gathers, `to_vec`) goes through
//! [`for_each_segment`], which hands out *segments* — runs of consecutive
//! elements of the innermost dimension — so callers write tight inner loops
//! (or a `copy_from_slice` when the inner stride is 1) instead of paying a
//! multi-index update per element.
//!
//! Offsets are `isize` element indices into a storage slice; a walk over a
//! shape with no elements never calls back, so its offsets may be anything.

use crate::error::Result;

/// Visits the flat range `from..from + len` of a row-major walk over `shape`
/// in segments that stay inside one innermost row. `f(offsets, count)` gets
/// the K offsets of the segment's first element; along the segment each
/// offset advances by its stride of the last dimension. A 0-d shape is one
/// segment of one element. Requires `from + len <= numel(shape)`.
pub fn for_each_segment<const K: usize>(
    shape: &[usize],
    strides: &[[isize; K]],
    base: [isize; K],
    from: usize,
    len: usize,
    mut f: impl FnMut([isize; K], usize) -> Result<()>,
) -> Result<()> {
    if len == 0 || shape.contains(&0) {
        return Ok(());
    }
    let nd = shape.len();
    if nd == 0 {
        return f(base, 1);
    }
    // Multi-index and offsets of element `from`.
    let mut idx = vec![0usize; nd];
    let mut off = base;
    let mut rest = from;
    for d in (0..nd).rev() {
        idx[d] = rest % shape[d];
        rest /= shape[d];
        for k in 0..K {
            off[k] += idx[d] as isize * strides[d][k];
        }
    }
    let last = nd - 1;
    let mut left = len;
    loop {
        let count = (shape[last] - idx[last]).min(left);
        f(off, count)?;
        left -= count;
        if left == 0 {
            return Ok(());
        }
        // Back to the start of this row, then carry into the outer dims.
        for k in 0..K {
            off[k] -= idx[last] as isize * strides[last][k];
        }
        idx[last] = 0;
        let mut d = last;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            for k in 0..K {
                off[k] += strides[d][k];
            }
            if idx[d] < shape[d] {
                break;
            }
            for k in 0..K {
                off[k] -= strides[d][k] * shape[d] as isize;
            }
            idx[d] = 0;
        }
    }
}

/// The strides of the last dimension (what a segment steps by).
pub fn inner_strides<const K: usize>(strides: &[[isize; K]]) -> [isize; K] {
    strides.last().copied().unwrap_or([0; K])
}

/// Zips K stride vectors (one per buffer) into per-dimension stride sets.
pub fn zip_strides<const K: usize>(per_buffer: [&[isize]; K]) -> Vec<[isize; K]> {
    let nd = per_buffer.first().map_or(0, |s| s.len());
    (0..nd)
        .map(|d| std::array::from_fn(|k| per_buffer[k][d]))
        .collect()
}

/// Calls `f` with the K offsets of every element of a walk over `shape`, in
/// row-major order: [`for_each_segment`] with the segments unrolled.
#[inline(always)]
pub fn walk<const K: usize>(
    shape: &[usize],
    strides: &[[isize; K]],
    start: [isize; K],
    mut f: impl FnMut([isize; K]),
) {
    let n: usize = shape.iter().product();
    let step = inner_strides(strides);
    // The callback never fails.
    let _ = for_each_segment(shape, strides, start, 0, n, |mut o, count| {
        for _ in 0..count {
            f(o);
            for k in 0..K {
                o[k] += step[k];
            }
        }
        Ok(())
    });
}

/// Merges dimensions that can be walked as one for every stride set and
/// drops size-1 dimensions, so copy loops run over as few, as long rows as
/// the layouts allow. The element order (row-major over `shape`) is kept.
///
/// Returns the collapsed shape and, per collapsed dimension, one stride per
/// stride set. An array with one element collapses to no dimensions.
pub fn collapse<const K: usize>(
    shape: &[usize],
    strides: [&[isize]; K],
) -> (Vec<usize>, Vec<[isize; K]>) {
    let mut dims: Vec<usize> = Vec::with_capacity(shape.len());
    let mut out: Vec<[isize; K]> = Vec::with_capacity(shape.len());
    for (d, &n) in shape.iter().enumerate() {
        if n == 1 {
            continue;
        }
        let s: [isize; K] = std::array::from_fn(|k| strides[k][d]);
        if let (Some(last_n), Some(last_s)) = (dims.last_mut(), out.last_mut()) {
            if (0..K).all(|k| last_s[k] == s[k] * n as isize) {
                *last_n *= n;
                *last_s = s;
                continue;
            }
        }
        dims.push(n);
        out.push(s);
    }
    (dims, out)
}
