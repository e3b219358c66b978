//! Elementwise engines: apply a scalar function over (broadcast) operands.
//!
//! Fast paths: contiguous inputs (one flat loop, split over cores, run under
//! the best SIMD instruction set so the loop vectorises) and a scalar operand
//! (broadcast without materialising). The general path walks the output in
//! row-major order with per-input strides (0 for broadcast dimensions); its
//! innermost dimension is a flat loop.

use super::parallel::{chunk_len, simd, worth_splitting};
use super::stream_store::{fill_streaming, worth_streaming};
use super::team::for_each_part;
use crate::error::Result;
use crate::graph::layout::{Data, for_each_offset};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::{collapse, for_each_segment, inner_strides, walk};

/// Strides of `op` broadcast to `out_shape` (0 on broadcast dimensions).
pub fn broadcast_strides(op: &Operand<'_>, out_shape: &[usize]) -> Vec<isize> {
    let pad = out_shape.len() - op.shape.len();
    let mut strides = vec![0isize; out_shape.len()];
    for (i, (&d, &s)) in op.shape.iter().zip(&op.data.strides).enumerate() {
        strides[pad + i] = if d == 1 { 0 } else { s };
    }
    strides
}

/// Maps `f` over one operand into a new contiguous array.
pub fn unary<I: Pod, O: Pod>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(I) -> O + Sync + Send + Copy,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<O>();
    if let Some(src) = x.data.as_contiguous::<I>(x.shape) {
        map_slices(src, dst, f);
    } else {
        let raw = x.data.raw::<I>();
        let mut k = 0;
        for_each_offset(x.shape, &x.data.strides, x.data.offset, |o| {
            dst[k] = f(raw[o]);
            k += 1;
        });
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// Maps `f` over two broadcast operands into a new contiguous array.
pub fn binary<A: Pod, B: Pod, O: Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(A, B) -> O + Sync + Send + Copy,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let n: usize = out.shape.iter().product();
    let dst = storage.as_mut_slice::<O>();
    let a_flat = if a.shape == out.shape {
        a.data.as_contiguous::<A>(a.shape)
    } else {
        None
    };
    let b_flat = if b.shape == out.shape {
        b.data.as_contiguous::<B>(b.shape)
    } else {
        None
    };
    let a_scalar =
        (a.shape.iter().product::<usize>() == 1).then(|| a.data.raw::<A>()[a.data.offset]);
    let b_scalar =
        (b.shape.iter().product::<usize>() == 1).then(|| b.data.raw::<B>()[b.data.offset]);
    match (a_flat, b_flat, a_scalar, b_scalar) {
        (Some(x), Some(y), _, _) => zip_slices(x, y, dst, f),
        (Some(x), None, _, Some(s)) => map_slices(x, dst, move |v| f(v, s)),
        (None, Some(y), Some(s), _) => map_slices(y, dst, move |v| f(s, v)),
        _ if n == 0 => {}
        _ => binary_broadcast(a, b, out.shape, dst, f),
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// The general path of [`binary`]: the output in row-major segments of
/// the collapsed broadcast layout, split over cores when large. A segment
/// whose operands each step by 1 or 0 (a slice, or one element repeated:
/// a bias row, a per-row scale) runs the vectorised loop; others go
/// element by element.
fn binary_broadcast<A: Pod, B: Pod, O: Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    shape: &[usize],
    dst: &mut [O],
    f: impl Fn(A, B) -> O + Sync + Send + Copy,
) {
    let (sa, sb) = (broadcast_strides(a, shape), broadcast_strides(b, shape));
    let (dims, strides) = collapse(shape, [&sa, &sb]);
    let base = [a.data.offset as isize, b.data.offset as isize];
    let [ia, ib] = inner_strides(&strides);
    let (ra, rb) = (a.data.raw::<A>(), b.data.raw::<B>());
    let fill = |from: usize, d: &mut [O]| {
        let mut done = 0;
        // The callback never fails.
        let _ = for_each_segment(&dims, &strides, base, from, d.len(), |[oa, ob], count| {
            let seg = &mut d[done..done + count];
            done += count;
            let (oa, ob) = (oa as usize, ob as usize);
            match (ia, ib) {
                (1, 1) => zip_into(&ra[oa..oa + count], &rb[ob..ob + count], seg, f),
                (1, 0) => {
                    let y = rb[ob];
                    map_into(&ra[oa..oa + count], seg, move |x| f(x, y));
                }
                (0, 1) => {
                    let x = ra[oa];
                    map_into(&rb[ob..ob + count], seg, move |y| f(x, y));
                }
                _ => {
                    for (j, o) in seg.iter_mut().enumerate() {
                        let j = j as isize;
                        *o = f(
                            ra[(oa as isize + j * ia) as usize],
                            rb[(ob as isize + j * ib) as usize],
                        );
                    }
                }
            }
            Ok(())
        });
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        for_each_part(dst.chunks_mut(c).enumerate().collect(), |(i, d)| {
            fill(i * c, d)
        });
    } else {
        fill(0, dst);
    }
}

/// A broadcast operand read by flat output index: a contiguous slice of
/// the output's shape, or one element. The fast path of kernels that zip
/// several operands (`binary_pair`, `where`).
#[derive(Clone, Copy)]
pub(crate) enum Lane<'a, T> {
    Flat(&'a [T]),
    Scalar(T),
}

impl<'a, T: Pod> Lane<'a, T> {
    /// The operand as a lane of `out_shape`, if it is one.
    pub(crate) fn of(x: &Operand<'a>, out_shape: &[usize]) -> Option<Lane<'a, T>> {
        if x.shape.iter().product::<usize>() == 1 {
            return x
                .data
                .raw::<T>()
                .get(x.data.offset)
                .map(|&v| Lane::Scalar(v));
        }
        if x.shape != out_shape {
            return None;
        }
        x.data.as_contiguous::<T>(x.shape).map(Lane::Flat)
    }
    /// Element `i` of the output's flat order.
    #[inline(always)]
    pub(crate) fn get(self, i: usize) -> T {
        match self {
            Lane::Flat(v) => v[i],
            Lane::Scalar(v) => v,
        }
    }
}

/// Maps `f` over two broadcast operands into two outputs of one shape in
/// a single pass: the kernel of an op with two results (`divmod`).
///
/// ```
/// use ferrox::{array::Data, backend::cpu::elementwise::binary_pair, graph::primitive::*, *};
/// let a = Array::from_slice(&[7i32, 8], &[2])?;
/// let b = Array::from(3i32);
/// let (da, db) = (a.data()?, b.data()?);
/// let a = Operand { data: &da, shape: a.shape(), dtype: a.dtype() };
/// let b = Operand { data: &db, shape: b.shape(), dtype: b.dtype() };
/// let out = OutSpec { shape: &[2], dtype: DType::Int32 };
/// let [q, r] = binary_pair(&a, &b, [out, out], |x: i32, y: i32| (x / y, x % y))?;
/// assert_eq!((q.to_vec::<i32>(&[2]), r.to_vec::<i32>(&[2])), (vec![2, 2], vec![1, 2]));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn binary_pair<A: Pod, B: Pod, O: Pod, P: Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    outs: [OutSpec<'_>; 2],
    f: impl Fn(A, B) -> (O, P) + Sync + Send + Copy,
) -> Result<[Data; 2]> {
    let shape = outs[0].shape;
    if outs[1].shape != shape {
        return Err(crate::error::Error::runtime(
            "binary_pair",
            format!(
                "internal error: outputs of shapes {shape:?} and {:?}",
                outs[1].shape
            ),
        ));
    }
    let (mut s0, mut s1) = (out_storage(outs[0])?, out_storage(outs[1])?);
    let (d0, d1) = (s0.as_mut_slice::<O>(), s1.as_mut_slice::<P>());
    match (Lane::<A>::of(a, shape), Lane::<B>::of(b, shape)) {
        (Some(la), Some(lb)) => {
            let body = |start: usize, d0: &mut [O], d1: &mut [P]| {
                simd(|| {
                    for (k, (o, p)) in d0.iter_mut().zip(d1.iter_mut()).enumerate() {
                        (*o, *p) = f(la.get(start + k), lb.get(start + k));
                    }
                })
            };
            if worth_splitting(d0.len()) {
                let c = chunk_len(d0.len());
                let parts = d0.chunks_mut(c).zip(d1.chunks_mut(c)).enumerate();
                for_each_part(parts.collect(), |(i, (x, y))| body(i * c, x, y));
            } else {
                body(0, d0, d1);
            }
        }
        _ => {
            let (sa, sb) = (broadcast_strides(a, shape), broadcast_strides(b, shape));
            let (ra, rb) = (a.data.raw::<A>(), b.data.raw::<B>());
            let mut k = 0;
            for_each_offset2(shape, &sa, a.data.offset, &sb, b.data.offset, |oa, ob| {
                (d0[k], d1[k]) = f(ra[oa], rb[ob]);
                k += 1;
            });
        }
    }
    Ok([Data::contiguous(s0, shape), Data::contiguous(s1, shape)])
}

/// Maps `f` over three broadcast operands (e.g. `where`).
pub fn ternary<A: Pod, B: Pod, C: Pod, O: Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    c: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(A, B, C) -> O + Sync + Send + Copy,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<O>();
    let sa = broadcast_strides(a, out.shape);
    let sb = broadcast_strides(b, out.shape);
    let sc = broadcast_strides(c, out.shape);
    let (ra, rb, rc) = (a.data.raw::<A>(), b.data.raw::<B>(), c.data.raw::<C>());
    let (oa, ob, oc) = (
        a.data.offset as isize,
        b.data.offset as isize,
        c.data.offset as isize,
    );
    let mut k = 0;
    // Walk with a combined stride set: offsets are advanced in lock step.
    let strides3: Vec<[isize; 3]> = (0..out.shape.len())
        .map(|d| [sa[d], sb[d], sc[d]])
        .collect();
    walk(out.shape, &strides3, [oa, ob, oc], |o| {
        dst[k] = f(ra[o[0] as usize], rb[o[1] as usize], rc[o[2] as usize]);
        k += 1;
    });
    Ok(Data::contiguous(storage, out.shape))
}

/// Calls `f` with the offsets of two strided operands for each output index.
pub fn for_each_offset2(
    shape: &[usize],
    sa: &[isize],
    oa: usize,
    sb: &[isize],
    ob: usize,
    mut f: impl FnMut(usize, usize),
) {
    let strides: Vec<[isize; 2]> = (0..shape.len()).map(|d| [sa[d], sb[d]]).collect();
    walk(shape, &strides, [oa as isize, ob as isize], |o| {
        f(o[0] as usize, o[1] as usize)
    });
}

/// `dst[i] = f(src[i])`, vectorised and split over cores when large.
pub fn map_slices<I: Pod, O: Pod>(
    src: &[I],
    dst: &mut [O],
    f: impl Fn(I) -> O + Sync + Send + Copy,
) {
    let stream = worth_streaming(std::mem::size_of_val(dst));
    let body = |s: &[I], d: &mut [O]| {
        simd(
            #[inline(always)]
            || {
                if stream {
                    fill_streaming(
                        d,
                        #[inline(always)]
                        |start, block| {
                            for (o, &i) in block.iter_mut().zip(&s[start..]) {
                                *o = f(i);
                            }
                        },
                    );
                } else {
                    map_loop(s, d, f);
                }
            },
        )
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        for_each_part(dst.chunks_mut(c).zip(src.chunks(c)).collect(), |(d, s)| {
            body(s, d)
        });
    } else {
        body(src, dst);
    }
}

/// `dst[i] = f(a[i], b[i])`, vectorised and split over cores when large.
pub fn zip_slices<A: Pod, B: Pod, O: Pod>(
    a: &[A],
    b: &[B],
    dst: &mut [O],
    f: impl Fn(A, B) -> O + Sync + Send + Copy,
) {
    let stream = worth_streaming(std::mem::size_of_val(dst));
    let body = |x: &[A], y: &[B], d: &mut [O]| {
        simd(
            #[inline(always)]
            || {
                if stream {
                    fill_streaming(d, |start, block| {
                        for ((o, &p), &q) in block.iter_mut().zip(&x[start..]).zip(&y[start..]) {
                            *o = f(p, q);
                        }
                    });
                } else {
                    zip_loop(x, y, d, f);
                }
            },
        )
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        let parts = dst.chunks_mut(c).zip(a.chunks(c)).zip(b.chunks(c));
        for_each_part(parts.collect(), |((d, x), y)| body(x, y, d));
    } else {
        body(a, b, dst);
    }
}

/// `dst[i] = f(src[i])` on one core, vectorised: for short runs (a row
/// of a broadcast) where splitting and streaming do not pay.
#[inline(always)]
pub(crate) fn map_into<I: Pod, O: Pod>(src: &[I], dst: &mut [O], f: impl Fn(I) -> O + Copy) {
    simd(
        #[inline(always)]
        || map_loop(src, dst, f),
    )
}

/// `dst[i] = f(a[i], b[i])` on one core, vectorised (see [`map_into`]).
#[inline(always)]
pub(crate) fn zip_into<A: Pod, B: Pod, O: Pod>(
    a: &[A],
    b: &[B],
    dst: &mut [O],
    f: impl Fn(A, B) -> O + Copy,
) {
    simd(
        #[inline(always)]
        || zip_loop(a, b, dst, f),
    )
}

/// The mapping loop itself; inlined into the caller's SIMD context.
#[inline(always)]
fn map_loop<I: Pod, O: Pod>(src: &[I], dst: &mut [O], f: impl Fn(I) -> O + Copy) {
    for (o, &i) in dst.iter_mut().zip(src) {
        *o = f(i);
    }
}

/// The zipping loop itself; inlined into the caller's SIMD context.
#[inline(always)]
fn zip_loop<A: Pod, B: Pod, O: Pod>(a: &[A], b: &[B], dst: &mut [O], f: impl Fn(A, B) -> O + Copy) {
    for ((o, &p), &q) in dst.iter_mut().zip(a).zip(b) {
        *o = f(p, q);
    }
}

/// A buffer for the output described by `out`: the bytes a caller lent
/// for it (see `backend::cpu::destination`), else a fresh one.
/// Bool outputs start zeroed (every byte a valid `bool`).
pub fn out_storage(out: OutSpec<'_>) -> Result<crate::graph::storage::Storage> {
    let len = out.shape.iter().product::<usize>() * out.dtype.size();
    let zeroed = out.dtype == crate::dtype::DType::Bool;
    if let Some(mut lent) = super::destination::take(len) {
        if zeroed {
            lent.as_mut_slice::<u8>().fill(0);
        }
        return Ok(lent);
    }
    crate::graph::storage::Storage::new(len, zeroed)
}

#[cfg(test)]
mod tests {
    use crate::ops::views::as_strided;
    use crate::{Array, subtract};

    /// Element `flat` of a row-major walk over `shape` in a strided layout.
    fn strided_at(
        base: &[f32],
        shape: &[usize],
        strides: &[isize],
        offset: usize,
        flat: usize,
    ) -> f32 {
        let mut rest = flat;
        let mut at = offset as isize;
        for d in (0..shape.len()).rev() {
            at += (rest % shape[d]) as isize * strides[d];
            rest /= shape[d];
        }
        base[at as usize]
    }

    /// `a - b` over layouts that take every segment kind of the broadcast
    /// path (slice-slice, slice-repeat, repeat-slice, strided), at sizes
    /// that run on one core and split over cores, against a loop.
    #[test]
    fn broadcast_segments_match_a_loop() -> crate::Result<()> {
        let base_a: Vec<f32> = (0..80_000).map(|i| (i % 997) as f32 * 0.5).collect();
        let base_b: Vec<f32> = (0..80_000).map(|i| (i % 113) as f32 - 7.0).collect();
        let (a0, b0) = (
            Array::from_slice(&base_a, &[80_000])?,
            Array::from_slice(&base_b, &[80_000])?,
        );
        type Layout = (&'static [isize], usize);
        let cases: &[(&[usize], Layout, Layout)] = &[
            // A bias row and a per-row column.
            (&[7, 5], (&[5, 1], 0), (&[0, 1], 3)),
            (&[7, 5], (&[0, 1], 2), (&[5, 1], 1)),
            (&[7, 5], (&[5, 1], 0), (&[1, 0], 4)),
            // Transposed and reversed operands.
            (&[6, 4], (&[1, 6], 0), (&[0, 1], 0)),
            (&[3, 4, 5], (&[20, 5, 1], 0), (&[0, -1, 0], 9)),
            // Large: split over cores, rows straddling the chunk edges.
            (&[300, 257], (&[257, 1], 1), (&[0, 1], 0)),
            (&[300, 257], (&[1, 300], 0), (&[1, 0], 5)),
            (&[2, 150, 257], (&[0, 257, 1], 0), (&[38_550, 0, 1], 0)),
        ];
        for &(shape, (sa, oa), (sb, ob)) in cases {
            let a = as_strided(&a0, shape, sa, oa)?;
            let b = as_strided(&b0, shape, sb, ob)?;
            let got = subtract(&a, &b)?.to_vec::<f32>()?;
            let n: usize = shape.iter().product();
            let want: Vec<f32> = (0..n)
                .map(|i| {
                    strided_at(&base_a, shape, sa, oa, i) - strided_at(&base_b, shape, sb, ob, i)
                })
                .collect();
            assert_eq!(got, want, "shape {shape:?}, a {sa:?}+{oa}, b {sb:?}+{ob}");
        }
        Ok(())
    }
}
