//! Elementwise engines: apply a scalar function over (broadcast) operands.
//!
//! Fast paths: contiguous inputs (one flat loop, split over cores, run under
//! the best SIMD instruction set so the loop vectorises) and a scalar operand
//! (broadcast without materialising). The general path walks the output in
//! row-major order with per-input strides (0 for broadcast dimensions); its
//! innermost dimension is a flat loop.

use super::parallel::{chunk_len, simd, worth_splitting};
use super::stream_store::{fill_streaming, worth_streaming};
use crate::error::Result;
use crate::graph::layout::{Data, for_each_offset};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::walk;
use rayon::prelude::*;

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
        _ => {
            let sa = broadcast_strides(a, out.shape);
            let sb = broadcast_strides(b, out.shape);
            let (ra, rb) = (a.data.raw::<A>(), b.data.raw::<B>());
            let mut k = 0;
            for_each_offset2(
                out.shape,
                &sa,
                a.data.offset,
                &sb,
                b.data.offset,
                |oa, ob| {
                    dst[k] = f(ra[oa], rb[ob]);
                    k += 1;
                },
            );
        }
    }
    Ok(Data::contiguous(storage, out.shape))
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
                d0.par_chunks_mut(c)
                    .zip(d1.par_chunks_mut(c))
                    .enumerate()
                    .for_each(|(i, (x, y))| body(i * c, x, y));
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
                    for (o, &i) in d.iter_mut().zip(s) {
                        *o = f(i);
                    }
                }
            },
        )
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        dst.par_chunks_mut(c)
            .zip(src.par_chunks(c))
            .for_each(|(d, s)| body(s, d));
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
                    for ((o, &p), &q) in d.iter_mut().zip(x).zip(y) {
                        *o = f(p, q);
                    }
                }
            },
        )
    };
    if worth_splitting(dst.len()) {
        let c = chunk_len(dst.len());
        dst.par_chunks_mut(c)
            .zip(a.par_chunks(c))
            .zip(b.par_chunks(c))
            .for_each(|((d, x), y)| body(x, y, d));
    } else {
        body(a, b, dst);
    }
}

/// A fresh buffer for the output described by `out`.
pub fn out_storage(out: OutSpec<'_>) -> Result<crate::graph::storage::Storage> {
    let n: usize = out.shape.iter().product();
    crate::graph::storage::Storage::new(
        n * out.dtype.size(),
        out.dtype == crate::dtype::DType::Bool,
    )
}
