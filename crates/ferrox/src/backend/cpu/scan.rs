//! CPU kernels of the cumulative scans (cumsum, cumprod, cummax, cummin):
//! the [`ScanOp`] selector, accumulators, and line/row/slice scans, spread
//! over cores. The semantics are listed in [`crate::ops::scan`].

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::{MIN_PAR_ELEMS, worth_splitting};
use crate::backend::cpu::reduce::{
    AccNum, Cursor, Dim, LogSumExpReducer, MaxReducer, MinReducer, Reducer, accumulating_reducer,
    dispatch, lanes, merge_dims, offset_of,
};
use crate::backend::cpu::softmax::with_float;
use crate::dtype::{Complex64, DType, Element};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::{Pod, Storage};
use crate::with_dtype;
use half::{bf16, f16};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// The scans computed by [`Scan`](crate::ops::scan::Scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ScanOp {
    /// Running sum.
    Sum,
    /// Running product.
    Prod,
    /// Running maximum.
    Max,
    /// Running minimum.
    Min,
    /// Running `log(sum(exp(x)))` (floating point inputs only).
    LogAddExp,
}

impl ScanOp {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
            ScanOp::Max => "cummax",
            ScanOp::Min => "cummin",
            ScanOp::LogAddExp => "logcumsumexp",
        }
    }
}

/// Scans `x` along `axis` (`None`: flattened) in direction `dir` into a
/// new contiguous output described by `out`.
pub fn eval(
    op: ScanOp,
    axis: Option<usize>,
    dir: Dir,
    x: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut st = out_storage(out)?;
    match op {
        ScanOp::LogAddExp => with_float!(op.name(), x.dtype, T => {
            run::<T, _>(op, axis, dir, x, &LogSumExpReducer, &mut st, out)
        }),
        ScanOp::Sum => {
            with_dtype!(x.dtype, T => run::<T, _>(op, axis, dir, x, &CumSum, &mut st, out))
        }
        ScanOp::Prod => {
            with_dtype!(x.dtype, T => run::<T, _>(op, axis, dir, x, &CumProd, &mut st, out))
        }
        ScanOp::Max => {
            with_dtype!(x.dtype, T => run::<T, _>(op, axis, dir, x, &MaxReducer, &mut st, out))
        }
        ScanOp::Min => {
            with_dtype!(x.dtype, T => run::<T, _>(op, axis, dir, x, &MinReducer, &mut st, out))
        }
    }?;
    Ok(Data::contiguous(st, out.shape))
}

fn run<T: Pod, C: Reducer<T>>(
    op: ScanOp,
    axis: Option<usize>,
    dir: Dir,
    x: &Operand<'_>,
    c: &C,
    st: &mut Storage,
    out: OutSpec<'_>,
) -> Result<()>
where
    C::Out: Pod + Element,
{
    if C::Out::DTYPE != out.dtype {
        return Err(Error::runtime(
            op.name(),
            format!(
                "kernel for {} produces {} but the node is {}",
                x.dtype,
                C::Out::DTYPE,
                out.dtype
            ),
        ));
    }
    scan(op.name(), x, axis, dir, c, st.as_mut_slice::<C::Out>())
}

/// An element type's running-sum/product accumulator: like the input
/// (bool: `int32`; half floats: `f32`).
pub trait ScanInput: Pod {
    /// The accumulator.
    type Acc: AccNum;
    /// The output element.
    type Out: Pod;
    /// Converts an element to the accumulator type.
    fn widen(self) -> Self::Acc;
    /// Converts the accumulator to the output type.
    fn narrow(acc: Self::Acc) -> Self::Out;
}

macro_rules! scan_same {($($t:ty),*) => {$(
    impl ScanInput for $t {
        type Acc = $t;
        type Out = $t;
        #[inline(always)] fn widen(self) -> $t { self }
        #[inline(always)] fn narrow(acc: $t) -> $t { acc }
    }
)*}}
scan_same!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64, Complex64);

macro_rules! scan_half {($($t:ty),*) => {$(
    impl ScanInput for $t {
        type Acc = f32;
        type Out = $t;
        #[inline(always)] fn widen(self) -> f32 { self.to_f32() }
        #[inline(always)] fn narrow(acc: f32) -> $t { <$t>::from_f32(acc) }
    }
)*}}
scan_half!(f16, bf16);

impl ScanInput for bool {
    type Acc = i32;
    type Out = i32;
    #[inline(always)]
    fn widen(self) -> i32 {
        self as i32
    }
    #[inline(always)]
    fn narrow(acc: i32) -> i32 {
        acc
    }
}

accumulating_reducer!(
    /// Running sum with [`ScanInput`]'s accumulator.
    CumSum, ScanInput, ZERO, add
);
accumulating_reducer!(
    /// Running product with [`ScanInput`]'s accumulator.
    CumProd, ScanInput, ONE, mul
);

/// Scan direction and inclusiveness.
#[derive(Debug, Clone, Copy)]
pub struct Dir {
    /// Scan from the last element to the first.
    pub reverse: bool,
    /// Include each element in its own output.
    pub inclusive: bool,
}

/// Elements per chunk of the parallel scan of one long line. Fixed (not
/// derived from the thread count) so results do not depend on it.
pub(crate) const SCAN_CHUNK: usize = 1 << 16;

/// Scans `x` into `out` (row-major, the input's shape; flattened for
/// `axis: None`).
fn scan<T: Pod, C: Reducer<T>>(
    name: &str,
    x: &Operand<'_>,
    axis: Option<usize>,
    dir: Dir,
    c: &C,
    out: &mut [C::Out],
) -> Result<()> {
    let total: usize = x.shape.iter().product();
    if out.len() != total {
        return Err(Error::runtime(
            name,
            format!("output has {} elements, input {total}", out.len()),
        ));
    }
    if total == 0 {
        return Ok(());
    }
    let Some(axis) = axis else {
        match x.data.as_contiguous::<T>(x.shape) {
            Some(xs) => scan_long(c, xs, out, dir),
            None => scan_long(c, &x.data.to_vec::<T>(x.shape), out, dir),
        }
        return Ok(());
    };
    let (n, s) = (x.shape[axis], x.data.strides[axis]);
    let dims = |r: std::ops::Range<usize>| -> Vec<Dim> {
        x.shape[r.clone()]
            .iter()
            .zip(&x.data.strides[r])
            .map(|(&n, &s)| Dim { n, s })
            .collect()
    };
    let pre = dims(0..axis);
    let post = dims(axis + 1..x.shape.len());
    let merged_post = merge_dims(post.iter().copied().filter(|d| d.n != 1).collect());
    let p: usize = post.iter().map(|d| d.n).product();
    let block = n * p;
    let raw = x.data.raw::<T>();
    let offset = x.data.offset as isize;
    if block == total && p == 1 && s == 1 {
        let start = offset as usize;
        scan_long(c, &raw[start..start + n], out, dir);
        return Ok(());
    }
    let rows_contiguous = merged_post.len() == 1 && merged_post[0].s == 1;
    let task = |first: usize, dst: &mut [C::Out]| {
        for (k, blk) in dst.chunks_mut(block).enumerate() {
            let base = offset_of(&pre, offset, first + k);
            if p > 1 && rows_contiguous {
                dispatch(ScanRows {
                    c,
                    raw,
                    base,
                    s,
                    n,
                    block: blk,
                    dir,
                });
            } else {
                // One strided line per post index.
                let mut cur = Cursor::new(&post, base, 0);
                for j in 0..p {
                    let line = Line {
                        start: cur.offset() as isize,
                        stride: s,
                        n,
                    };
                    dispatch(ScanLine {
                        c,
                        raw,
                        line,
                        out: &mut blk[j..],
                        out_stride: p,
                        dir,
                    });
                    cur.advance();
                }
            }
        }
    };
    if worth_splitting(total) && total / block > 1 {
        let per_task = MIN_PAR_ELEMS.div_ceil(block).max(1);
        out.par_chunks_mut(block * per_task)
            .enumerate()
            .for_each(|(t, d)| task(t * per_task, d));
    } else {
        task(0, out);
    }
    Ok(())
}

/// A strided line of the input.
#[derive(Clone, Copy)]
struct Line {
    start: isize,
    stride: isize,
    n: usize,
}

/// Scans one strided line into `out[0], out[out_stride], ...`.
#[inline(always)]
fn scan_line<T: Pod, C: Reducer<T>>(
    c: &C,
    raw: &[T],
    line: Line,
    out: &mut [C::Out],
    out_stride: usize,
    dir: Dir,
) {
    let mut acc = c.init();
    for k in 0..line.n {
        let i = if dir.reverse { line.n - 1 - k } else { k };
        let x = raw[(line.start + i as isize * line.stride) as usize];
        let o = &mut out[i * out_stride];
        if dir.inclusive {
            acc = c.step(acc, x);
            *o = c.finish(acc, 0);
        } else {
            *o = c.finish(acc, 0);
            acc = c.step(acc, x);
        }
    }
}

/// Scans `n` contiguous rows of `block.len() / n` elements (row `i` at
/// `base + i * s`) with a vectorised accumulator row.
#[inline(always)]
fn scan_rows<T: Pod, C: Reducer<T>>(
    c: &C,
    raw: &[T],
    base: isize,
    s: isize,
    n: usize,
    block: &mut [C::Out],
    dir: Dir,
) {
    let p = block.len() / n;
    let mut acc = vec![c.init(); p];
    for k in 0..n {
        let i = if dir.reverse { n - 1 - k } else { k };
        let start = (base + i as isize * s) as usize;
        let row = &raw[start..start + p];
        let dst = &mut block[i * p..(i + 1) * p];
        if dir.inclusive {
            for ((a, &x), o) in acc.iter_mut().zip(row).zip(dst) {
                *a = c.step(*a, x);
                *o = c.finish(*a, 0);
            }
        } else {
            for ((a, &x), o) in acc.iter_mut().zip(row).zip(dst) {
                *o = c.finish(*a, 0);
                *a = c.step(*a, x);
            }
        }
    }
}

/// Scans a contiguous slice starting from `acc`.
#[inline(always)]
fn scan_slice<T: Pod, C: Reducer<T>>(
    c: &C,
    xs: &[T],
    out: &mut [C::Out],
    mut acc: C::Acc,
    dir: Dir,
) {
    match (dir.reverse, dir.inclusive) {
        (false, true) => {
            for (o, &x) in out.iter_mut().zip(xs) {
                acc = c.step(acc, x);
                *o = c.finish(acc, 0);
            }
        }
        (false, false) => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = c.finish(acc, 0);
                acc = c.step(acc, x);
            }
        }
        (true, true) => {
            for (o, &x) in out.iter_mut().zip(xs).rev() {
                acc = c.step(acc, x);
                *o = c.finish(acc, 0);
            }
        }
        (true, false) => {
            for (o, &x) in out.iter_mut().zip(xs).rev() {
                *o = c.finish(acc, 0);
                acc = c.step(acc, x);
            }
        }
    }
}

/// Scans one long contiguous line: above [`MIN_PAR_ELEMS`] in chunks, with
/// chunk totals (vectorised) combined into each chunk's carry-in first, so
/// the chunks scan in parallel.
fn scan_long<T: Pod, C: Reducer<T>>(c: &C, xs: &[T], out: &mut [C::Out], dir: Dir) {
    if xs.len() < 2 * MIN_PAR_ELEMS {
        dispatch(ScanSlice {
            c,
            xs,
            out,
            acc: c.init(),
            dir,
        });
        return;
    }
    let totals: Vec<C::Acc> = xs
        .par_chunks(SCAN_CHUNK)
        .map(|ch| dispatch(Lanes { c, xs: ch }))
        .collect();
    // Carry into each chunk: everything before it in scan order.
    let mut carries = vec![c.init(); totals.len()];
    let mut acc = c.init();
    let order: Box<dyn Iterator<Item = usize>> = if dir.reverse {
        Box::new((0..totals.len()).rev())
    } else {
        Box::new(0..totals.len())
    };
    for i in order {
        carries[i] = acc;
        acc = c.merge(acc, totals[i]);
    }
    out.par_chunks_mut(SCAN_CHUNK)
        .zip(xs.par_chunks(SCAN_CHUNK))
        .zip(carries)
        .for_each(|((o, x), carry)| {
            dispatch(ScanSlice {
                c,
                xs: x,
                out: o,
                acc: carry,
                dir,
            })
        });
}

// Dispatched kernel bodies (see `backend::cpu::reduce::dispatch` for why
// these are structs rather than closures).

struct ScanRows<'a, T: Copy, C: Reducer<T>> {
    c: &'a C,
    raw: &'a [T],
    base: isize,
    s: isize,
    n: usize,
    block: &'a mut [C::Out],
    dir: Dir,
}

impl<T: Pod, C: Reducer<T>> WithSimd for ScanRows<'_, T, C> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        scan_rows(
            self.c, self.raw, self.base, self.s, self.n, self.block, self.dir,
        )
    }
}

struct ScanLine<'a, T: Copy, C: Reducer<T>> {
    c: &'a C,
    raw: &'a [T],
    line: Line,
    out: &'a mut [C::Out],
    out_stride: usize,
    dir: Dir,
}

impl<T: Pod, C: Reducer<T>> WithSimd for ScanLine<'_, T, C> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        scan_line(
            self.c,
            self.raw,
            self.line,
            self.out,
            self.out_stride,
            self.dir,
        )
    }
}

struct ScanSlice<'a, T: Copy, C: Reducer<T>> {
    c: &'a C,
    xs: &'a [T],
    out: &'a mut [C::Out],
    acc: C::Acc,
    dir: Dir,
}

impl<T: Pod, C: Reducer<T>> WithSimd for ScanSlice<'_, T, C> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        scan_slice(self.c, self.xs, self.out, self.acc, self.dir)
    }
}

struct Lanes<'a, T, C> {
    c: &'a C,
    xs: &'a [T],
}

impl<T: Pod, C: Reducer<T>> WithSimd for Lanes<'_, T, C> {
    type Output = C::Acc;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> C::Acc {
        lanes(self.c, self.xs)
    }
}
