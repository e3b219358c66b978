//! Matrix products with a twist, composed from `take`, masks and
//! [`matmul`]: [`gather_mm`] (batch entries picked by index arrays),
//! [`block_masked_mm`] (blocks of the operands and the result masked) and
//! [`segmented_mm`] (the inner dimension cut into segments). Derivatives
//! and batching come from the ops they are built of.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{greater_equal, less, logical_and, multiply};
use crate::ops::creation::arange;
use crate::ops::indexing::take;
use crate::ops::matmul::matmul;
use crate::ops::shape_rules::broadcast_shapes;
use crate::ops::views::{broadcast_to, expand_dims, reshape, slice};

fn require_matrices(op: &str, a: &Array, b: &Array) -> Result<()> {
    if a.ndim() < 2 || b.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "operands must have at least 2 dimensions, got shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

/// `x` (`[batch..., r, c]`) as `[B, r, c]` and the index array picking its
/// batch entries (`indices`, or every entry in order).
pub(crate) fn flat_batch(op: &str, x: &Array, indices: Option<&Array>) -> Result<(Array, Array)> {
    let nd = x.ndim();
    let (r, c) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    let batch = &x.shape()[..nd - 2];
    let b: usize = batch.iter().product();
    // One batch axis already is the flat form: no reshape, so a shapeless
    // compiled function replays with other row counts.
    let flat = if batch.len() == 1 {
        x.clone()
    } else {
        reshape(x, &[b as isize, r as isize, c as isize])?
    };
    let idx = match indices {
        Some(i) => {
            if !i.dtype().is_integer() {
                return Err(Error::dtype(
                    op,
                    format!("indices must be integers, got {}", i.dtype()),
                ));
            }
            i.clone()
        }
        None => {
            let dims: Vec<isize> = batch.iter().map(|&d| d as isize).collect();
            reshape(&arange(0.0, b as f64, 1.0, DType::UInt32)?, &dims)?
        }
    };
    Ok((flat, idx))
}

/// `matmul(a[lhs_indices], b[rhs_indices])`, where the indices pick entries
/// of the flattened batch dimensions of `a` (`[A..., M, K]`) and `b`
/// (`[B..., K, N]`); missing indices take every entry in order. The index
/// arrays broadcast together to `I`, and the result is `[I..., M, N]`.
/// Indices are checked at evaluation (an out-of-range index is an error).
///
/// ```
/// use ferrox::{gather_mm, Array};
/// let a = ferrox::arange(0.0, 8.0, 1.0, ferrox::DType::Float32)?.reshape(&[2, 2, 2])?;
/// let eye = ferrox::eye(2, None, 0, ferrox::DType::Float32)?;
/// let idx = Array::from_slice(&[1u32, 1, 0], &[3])?;
/// let y = gather_mm(&a, &eye, Some(&idx), None)?;
/// assert_eq!(y.shape(), &[3, 2, 2]);
/// assert_eq!(y.to_vec::<f32>()?[..4], [4.0, 5.0, 6.0, 7.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gather_mm(
    a: &Array,
    b: &Array,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
) -> Result<Array> {
    let op = "gather_mm";
    require_matrices(op, a, b)?;
    let (af, ai) = flat_batch(op, a, lhs_indices)?;
    let (bf, bi) = flat_batch(op, b, rhs_indices)?;
    let shape = broadcast_shapes(op, ai.shape(), bi.shape())?;
    let ai = broadcast_to(&ai, &shape)?;
    let bi = broadcast_to(&bi, &shape)?;
    matmul(&take(&af, &ai, Some(0))?, &take(&bf, &bi, Some(0))?)
}

/// `mask` (`[..., ceil(r / bs), ceil(c / bs)]`) expanded to elements and
/// cut to `[..., r, c]`.
fn expand_mask(op: &str, mask: &Array, bs: usize, r: usize, c: usize) -> Result<Array> {
    let nd = mask.ndim();
    let (br, bc) = (r.div_ceil(bs), c.div_ceil(bs));
    if nd < 2 || mask.shape()[nd - 2] != br || mask.shape()[nd - 1] != bc {
        return Err(Error::shape(
            op,
            format!(
                "a mask for a {r} x {c} operand with block size {bs} must end in [{br}, {bc}], got shape {:?}",
                mask.shape()
            ),
        ));
    }
    let m = crate::ops::join::repeat(mask, bs, Some(-2))?;
    let m = crate::ops::join::repeat(&m, bs, Some(-1))?;
    let start = vec![0isize; nd];
    let mut stop: Vec<isize> = m.shape().iter().map(|&d| d as isize).collect();
    stop[nd - 2] = r as isize;
    stop[nd - 1] = c as isize;
    slice(&m, &start, &stop, &vec![1; nd])
}

/// `x` times the element mask (bool masks zero out, numeric ones scale).
fn apply_mask(x: &Array, mask: &Array) -> Result<Array> {
    let m = if mask.dtype() == DType::Bool {
        mask.astype(x.dtype())?
    } else {
        mask.clone()
    };
    multiply(x, &m)
}

/// `matmul(a, b)` with `block_size x block_size` blocks masked: `mask_lhs`
/// (`[..., ceil(M/bs), ceil(K/bs)]`) on `a`, `mask_rhs` on `b`, `mask_out`
/// (`[..., ceil(M/bs), ceil(N/bs)]`) on the result. A bool mask keeps or
/// zeroes a block; a numeric mask scales it.
///
/// ```
/// use ferrox::{block_masked_mm, ones, Array, DType};
/// let a = ones(&[4, 4], DType::Float32)?;
/// let keep = Array::from_slice(&[true, false, false, true], &[2, 2])?;
/// let y = block_masked_mm(&a, &a, 2, Some(&keep), None, None)?;
/// assert_eq!(y.to_vec::<f32>()?[..4], [4.0, 4.0, 0.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn block_masked_mm(
    a: &Array,
    b: &Array,
    block_size: usize,
    mask_out: Option<&Array>,
    mask_lhs: Option<&Array>,
    mask_rhs: Option<&Array>,
) -> Result<Array> {
    let op = "block_masked_mm";
    require_matrices(op, a, b)?;
    if block_size == 0 {
        return Err(Error::value(op, "block_size must be positive".to_string()));
    }
    let (m, k) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let n = b.shape()[b.ndim() - 1];
    let a = match mask_lhs {
        Some(mask) => apply_mask(a, &expand_mask(op, mask, block_size, m, k)?)?,
        None => a.clone(),
    };
    let b = match mask_rhs {
        Some(mask) => apply_mask(b, &expand_mask(op, mask, block_size, k, n)?)?,
        None => b.clone(),
    };
    let y = matmul(&a, &b)?;
    match mask_out {
        Some(mask) => apply_mask(&y, &expand_mask(op, mask, block_size, m, n)?),
        None => Ok(y),
    }
}

/// One product per segment of the inner dimension: for `segments`
/// (`[..., 2]`, integer `(start, end)` pairs), `out[s] = a[:, start:end] @
/// b[start:end, :]`, of shape `[..., M, N]`.
///
/// ```
/// use ferrox::{segmented_mm, ones, Array, DType};
/// let a = ones(&[2, 4], DType::Float32)?;
/// let b = ones(&[4, 3], DType::Float32)?;
/// let seg = Array::from_slice(&[0i32, 1, 1, 4], &[2, 2])?;
/// let y = segmented_mm(&a, &b, &seg)?;
/// assert_eq!(y.shape(), &[2, 2, 3]);
/// assert_eq!(y.to_vec::<f32>()?[0], 1.0);
/// assert_eq!(y.to_vec::<f32>()?[6], 3.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn segmented_mm(a: &Array, b: &Array, segments: &Array) -> Result<Array> {
    let op = "segmented_mm";
    require_matrices(op, a, b)?;
    if a.ndim() != 2 || b.ndim() != 2 {
        return Err(Error::value(
            op,
            format!(
                "a and b must be matrices (batched products are not supported), got shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let sn = segments.ndim();
    if sn == 0 || segments.shape()[sn - 1] != 2 || !segments.dtype().is_integer() {
        return Err(Error::value(
            op,
            format!(
                "segments must be integer (start, end) pairs of shape [..., 2], got {} of shape {:?}",
                segments.dtype(),
                segments.shape()
            ),
        ));
    }
    let k = a.shape()[a.ndim() - 1];
    let pick = |i: i32| -> Result<Array> {
        let v = take(segments, &Array::from(i), Some(-1))?;
        expand_dims(&v.astype(DType::Int64)?, &[-1])
    };
    let pos = arange(0.0, k as f64, 1.0, DType::Int64)?;
    let inside = logical_and(&greater_equal(&pos, &pick(0)?)?, &less(&pos, &pick(1)?)?)?;
    // [..., K] -> [..., 1, K]: one masked copy of `a` per segment.
    let mask = expand_dims(&inside.astype(a.dtype())?, &[-2])?;
    matmul(&multiply(a, &mask)?, b)
}
