//! Reduction kernels: a layout planner, two vectorised engines, the
//! arg-reduction kernel and the online max-and-sum kernel behind softmax
//! and logsumexp.
//!
//! # Planning
//!
//! Every reduction is planned the same way ([`Plan`]): size-1 dimensions
//! are dropped; reduced dimensions are flipped to non-negative strides and
//! sorted by stride (their order only changes rounding, never where a
//! result goes); kept dimensions stay in output order; neighbours that are
//! contiguous with each other are merged. A transposed or reversed input
//! therefore usually becomes as simple as a contiguous one.
//!
//! # Engines
//!
//! * **Per output** — used when the innermost reduced dimension has stride
//!   1: each output reduces contiguous slices with [`LANES`] independent
//!   accumulators, so the loop vectorises without reassociating anything.
//!   Also the fallback for strided layouts (a scalar strided loop).
//! * **Row accumulation** — used when the innermost kept dimension has
//!   stride 1: an accumulator row is combined with whole input rows, which
//!   vectorises across the row.
//!
//! Both sum pairwise: slices longer than [`BLOCK`] and row ranges longer
//! than a leaf are split in halves and the halves merged, so the rounding
//! error grows with `log n` rather than `n`. The split points depend only on
//! sizes, never on the thread count, so results are bitwise reproducible;
//! rayon runs the two halves in parallel above
//! [`super::parallel::MIN_PAR_ELEMS`]. When there are enough outputs (or
//! column chunks of them) for every thread, they are the tasks of one
//! parallel section instead ([`super::team`]), each summed on one thread.

use super::half::HalfBlock;
use super::parallel::{MIN_PAR_ELEMS, worth_splitting};
use super::team::{for_each_part, pairwise};
use crate::dtype::Complex64;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::primitive::Operand;
use crate::graph::storage::Pod;
use half::{bf16, f16};
use pulp::{Simd, WithSimd};
use std::marker::PhantomData;

/// Runs a kernel body compiled for the best available instruction set
/// (AVX-512 where present, else AVX2 + FMA: pulp's `x86-v4` feature is on,
/// which gemm needs for its AVX-512 kernels).
///
/// Every hot loop in this module is a small struct implementing
/// [`WithSimd`] with an `#[inline(always)]` body, rather than a closure
/// passed to [`super::parallel::simd`]: LLVM compiles a closure whose
/// inlined body is large as a function of its own, *without* the dispatched
/// target features, which silently stops AVX2 vectorisation and turns every
/// `mul_add` into a libm call (measured: a softmax row 40x slower). An
/// `#[inline(always)]` `with_simd` is always part of the dispatched function.
#[inline(always)]
pub fn dispatch<K: WithSimd>(kernel: K) -> K::Output {
    pulp::Arch::new().dispatch(kernel)
}

/// Ranges of a parallel fold over `total` elements that are at most this
/// long stay one task: at least eight tasks per thread for balance, but no
/// finer. Tasks are claimed one at a time by whichever thread is free, so
/// with many short ones each thread's reads hop over the others' instead of
/// streaming. A 16M-element f32 sum on 2 cores, cut down to the 64k-element
/// minimum, took 1.27-1.42 ms (7 runs); with this floor 1.10-1.22 (6 of 7
/// runs), as it did when the halves forked on rayon (1.08-1.34).
fn task_floor(total: usize) -> usize {
    total / (8 * rayon::current_num_threads().max(1))
}

/// Independent accumulators per contiguous slice (two to eight SIMD
/// registers' worth, enough to hide the latency of a dependent add).
pub const LANES: usize = 32;
/// Longest slice reduced in one sequential pass; longer ones split pairwise.
pub const BLOCK: usize = 4096;
/// Output columns per row-accumulation task: 1024 accumulators stay in L1.
const COL_CHUNK: usize = 1024;

/// How to fold elements of type `T` into one output value.
///
/// `step` folds one element into an accumulator, `merge` combines two
/// partial accumulators (it must be associative up to rounding, so that the
/// engines may split the work), `finish` turns the accumulator of `count`
/// elements into the output value.
pub trait Reducer<T: Copy>: Sync {
    /// The running state.
    type Acc: Copy + Send + Sync;
    /// The output element.
    type Out: Copy + Send + Sync;
    /// The state of an empty reduction.
    fn init(&self) -> Self::Acc;
    /// Folds `x` into `acc`.
    fn step(&self, acc: Self::Acc, x: T) -> Self::Acc;
    /// Combines two partial states (`a` covers elements before `b`).
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The result for `count` folded elements.
    fn finish(&self, acc: Self::Acc, count: usize) -> Self::Out;
    /// Reduces a contiguous slice of at most a few [`BLOCK`]s. Called inside
    /// [`dispatch`], so the default lane loop vectorises; reducers with a
    /// cheaper blocked algorithm (logsumexp) override it. Implementations
    /// must be `#[inline(always)]`.
    #[inline(always)]
    fn reduce_slice(&self, xs: &[T]) -> Self::Acc {
        lanes(self, xs)
    }
}

/// Folds `xs` with [`LANES`] independent accumulators, then merges them as
/// a balanced tree. Inlined into the caller's [`dispatch`] kernel.
#[inline(always)]
pub fn lanes<T: Copy, R: Reducer<T> + ?Sized>(r: &R, xs: &[T]) -> R::Acc {
    let mut acc = [r.init(); LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = r.step(*a, x);
        }
    }
    let mut tail = r.init();
    for &x in chunks.remainder() {
        tail = r.step(tail, x);
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] = r.merge(acc[i], acc[i + width]);
        }
    }
    r.merge(acc[0], tail)
}

/// One dimension of a plan: its size and its stride in elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim {
    /// Number of indices.
    pub n: usize,
    /// Elements to step per index.
    pub s: isize,
}

/// A reduction's layout after simplification (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Kept dimensions in output (row-major) order, merged, sizes > 1.
    pub kept: Vec<Dim>,
    /// Reduced dimensions, strides >= 0, outermost first, merged; never
    /// empty (a reduction over nothing gets one dimension of size 1).
    pub reduced: Vec<Dim>,
    /// Storage offset of the first element, after flipping reduced dims.
    pub offset: isize,
    /// Elements folded into each output.
    pub count: usize,
    /// Number of outputs.
    pub n_out: usize,
}

impl Plan {
    /// Plans the reduction of `axes` (sorted, distinct, in range) of a
    /// strided array.
    pub fn new(shape: &[usize], strides: &[isize], offset: usize, axes: &[usize]) -> Plan {
        let mut offset = offset as isize;
        let (mut kept, mut reduced) = (vec![], vec![]);
        let (mut count, mut n_out) = (1usize, 1usize);
        for (d, (&n, &s)) in shape.iter().zip(strides).enumerate() {
            if axes.contains(&d) {
                count *= n;
                if n != 1 {
                    // The order of reduced elements does not matter: walk
                    // reversed dimensions forwards.
                    if s < 0 {
                        offset += (n as isize - 1) * s;
                    }
                    reduced.push(Dim { n, s: s.abs() });
                }
            } else {
                n_out *= n;
                if n != 1 {
                    kept.push(Dim { n, s });
                }
            }
        }
        // Outermost first; broadcast (stride 0) dimensions outermost of all,
        // so the innermost loop runs over real memory.
        reduced.sort_by_key(|d| std::cmp::Reverse(if d.s == 0 { isize::MAX } else { d.s }));
        let mut reduced = merge_dims(reduced);
        if reduced.is_empty() {
            reduced.push(Dim { n: 1, s: 0 });
        }
        kept = merge_dims(kept);
        Plan {
            kept,
            reduced,
            offset,
            count,
            n_out,
        }
    }
}

/// The shape of `shape` reduced over `axes`: the axes are dropped, or kept
/// as size 1 with `keepdims`.
///
/// ```
/// use ferrox::ops::reduce::reduced_shape;
/// assert_eq!(reduced_shape(&[2, 3, 4], &[1], false), vec![2, 4]);
/// assert_eq!(reduced_shape(&[2, 3, 4], &[0, 2], true), vec![1, 3, 1]);
/// ```
pub fn reduced_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(d, &n)| match (axes.contains(&d), keepdims) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Merges neighbours (outer, inner) that walk memory as one dimension.
pub fn merge_dims(dims: Vec<Dim>) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(dims.len());
    for d in dims {
        if let Some(last) = out.last_mut() {
            if last.s == d.s * d.n as isize {
                last.n *= d.n;
                last.s = d.s;
                continue;
            }
        }
        out.push(d);
    }
    out
}

/// Walks the storage offsets of a strided index space in row-major order.
pub struct Cursor<'a> {
    dims: &'a [Dim],
    idx: Vec<usize>,
    off: isize,
}

impl<'a> Cursor<'a> {
    /// Positioned at row-major index `linear` of `dims`, relative to `base`.
    pub fn new(dims: &'a [Dim], base: isize, linear: usize) -> Self {
        let mut idx = vec![0; dims.len()];
        let mut off = base;
        let mut rest = linear;
        for (i, d) in dims.iter().enumerate().rev() {
            idx[i] = rest % d.n;
            rest /= d.n;
            off += idx[i] as isize * d.s;
        }
        Cursor { dims, idx, off }
    }

    /// The current storage offset.
    #[inline(always)]
    pub fn offset(&self) -> usize {
        self.off as usize
    }

    /// Moves to the next row-major index (wrapping to the first).
    #[inline(always)]
    pub fn advance(&mut self) {
        for (i, d) in self.dims.iter().enumerate().rev() {
            self.idx[i] += 1;
            self.off += d.s;
            if self.idx[i] < d.n {
                return;
            }
            self.off -= d.s * d.n as isize;
            self.idx[i] = 0;
        }
    }
}

/// Storage offset of row-major index `linear` of `dims`.
pub fn offset_of(dims: &[Dim], base: isize, linear: usize) -> isize {
    Cursor::new(dims, base, linear).off
}

/// Reduces `axes` (sorted, distinct, in range) of `x` into `out`, the
/// row-major output without the reduced dimensions.
pub fn reduce<T: Pod, R: Reducer<T>>(
    x: &Operand<'_>,
    axes: &[usize],
    r: &R,
    out: &mut [R::Out],
) -> Result<()> {
    let plan = Plan::new(x.shape, &x.data.strides, x.data.offset, axes);
    if out.len() != plan.n_out {
        return Err(Error::runtime(
            "reduce",
            format!(
                "output has {} elements but shape {:?} reduced over {axes:?} has {}",
                out.len(),
                x.shape,
                plan.n_out
            ),
        ));
    }
    if x.shape.contains(&0) {
        let empty = r.finish(r.init(), plan.count);
        out.fill(empty);
        return Ok(());
    }
    let raw = x.data.raw::<T>();
    let inner = plan.reduced[plan.reduced.len() - 1];
    let rows_contiguous = plan.kept.last().is_some_and(|k| k.s == 1 && k.n >= 8);
    let inner_contiguous = inner.s == 1 && inner.n > 1;
    if inner_contiguous && (inner.n >= 16 || !rows_contiguous) {
        per_output(raw, &plan, r, out);
    } else if rows_contiguous {
        row_accumulate(raw, &plan, r, out);
    } else {
        per_output(raw, &plan, r, out);
    }
    Ok(())
}

/// The per-output engine: output `o` folds `plan.reduced` starting at the
/// offset of its kept index.
fn per_output<T: Pod, R: Reducer<T>>(raw: &[T], plan: &Plan, r: &R, out: &mut [R::Out]) {
    let (outer, inner) = plan.reduced.split_at(plan.reduced.len() - 1);
    let group = Group {
        raw,
        r,
        outer,
        inner: inner[0],
    };
    let outer_n: usize = outer.iter().map(|d| d.n).product();
    let count = plan.count;
    let par = worth_splitting(plan.n_out * count);
    let threads = rayon::current_num_threads();
    if par && plan.n_out >= 4 * threads {
        // Many outputs: parallel over outputs, each one sequential.
        let chunk = plan
            .n_out
            .div_ceil(4 * threads)
            .max(MIN_PAR_ELEMS.div_ceil(count));
        for_each_part(out.chunks_mut(chunk).enumerate().collect(), |(c, dst)| {
            let mut cur = Cursor::new(&plan.kept, plan.offset, c * chunk);
            for o in dst {
                *o = r.finish(group.fold(cur.off, 0, outer_n, false), count);
                cur.advance();
            }
        });
    } else {
        // Few outputs: each one may split its own work.
        let mut cur = Cursor::new(&plan.kept, plan.offset, 0);
        for o in out {
            *o = r.finish(group.fold(cur.off, 0, outer_n, par), count);
            cur.advance();
        }
    }
}

/// The elements of one output: `outer` reduced dims around one `inner` line.
struct Group<'a, T, R> {
    raw: &'a [T],
    r: &'a R,
    outer: &'a [Dim],
    inner: Dim,
}

impl<T: Pod, R: Reducer<T>> Group<'_, T, R> {
    /// Folds outer indices `lo..hi` starting from storage offset `base`.
    fn fold(&self, base: isize, lo: usize, hi: usize, par: bool) -> R::Acc {
        let len = hi - lo;
        let line = self.inner;
        if len == 1 {
            return self.fold_line(offset_of(self.outer, base, lo) as usize, 0, line.n, par);
        }
        if len * line.n <= 4 * BLOCK {
            return dispatch(GroupLeaf {
                group: self,
                cursor: Cursor::new(self.outer, base, lo),
                len,
            });
        }
        if par && worth_splitting(len * line.n) {
            // The same halves as below, the upper ones in parallel; a single
            // outer index left in a task may still split its line.
            let floor = task_floor(len * line.n);
            let split = |lo: usize, hi: usize| {
                let len = hi - lo;
                let work = len * line.n;
                (len > 1 && work > 4 * BLOCK && work > floor && worth_splitting(work))
                    .then_some(lo + len / 2)
            };
            let task = |lo: usize, hi: usize| self.fold(base, lo, hi, hi - lo == 1);
            return pairwise(lo, hi, &split, task, |a, b| self.r.merge(a, b));
        }
        let mid = lo + len / 2;
        let a = self.fold(base, lo, mid, false);
        self.r.merge(a, self.fold(base, mid, hi, false))
    }

    /// Folds indices `lo..hi` of the inner line at `start`, pairwise.
    fn fold_line(&self, start: usize, lo: usize, hi: usize, par: bool) -> R::Acc {
        let len = hi - lo;
        if len <= BLOCK {
            return dispatch(LineLeaf {
                group: self,
                start,
                lo,
                hi,
            });
        }
        if par && worth_splitting(len) {
            let floor = task_floor(len);
            let split = |lo: usize, hi: usize| {
                let len = hi - lo;
                (len > BLOCK && len > floor && worth_splitting(len)).then_some(line_mid(lo, len))
            };
            let task = |lo: usize, hi: usize| self.fold_line(start, lo, hi, false);
            return pairwise(lo, hi, &split, task, |a, b| self.r.merge(a, b));
        }
        let mid = line_mid(lo, len);
        let a = self.fold_line(start, lo, mid, false);
        self.r.merge(a, self.fold_line(start, mid, hi, false))
    }

    /// Folds indices `lo..hi` of the inner line at `start` in one pass.
    #[inline(always)]
    fn line_seq(&self, start: usize, lo: usize, hi: usize) -> R::Acc {
        let s = self.inner.s;
        if s == 1 {
            return self.r.reduce_slice(&self.raw[start + lo..start + hi]);
        }
        let mut acc = self.r.init();
        let mut o = start as isize + lo as isize * s;
        for _ in lo..hi {
            acc = self.r.step(acc, self.raw[o as usize]);
            o += s;
        }
        acc
    }
}

/// Several short lines of one group, folded in one dispatched pass.
struct GroupLeaf<'g, 'a, T, R> {
    group: &'g Group<'a, T, R>,
    cursor: Cursor<'a>,
    len: usize,
}

impl<T: Pod, R: Reducer<T>> WithSimd for GroupLeaf<'_, '_, T, R> {
    type Output = R::Acc;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> R::Acc {
        let (g, mut cur) = (self.group, self.cursor);
        let mut acc = g.r.init();
        for _ in 0..self.len {
            acc = g.r.merge(acc, g.line_seq(cur.offset(), 0, g.inner.n));
            cur.advance();
        }
        acc
    }
}

/// Indices `lo..hi` of one line, folded in one dispatched pass.
struct LineLeaf<'g, 'a, T, R> {
    group: &'g Group<'a, T, R>,
    start: usize,
    lo: usize,
    hi: usize,
}

impl<T: Pod, R: Reducer<T>> WithSimd for LineLeaf<'_, '_, T, R> {
    type Output = R::Acc;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> R::Acc {
        self.group.line_seq(self.start, self.lo, self.hi)
    }
}

/// The row-accumulation engine: the innermost kept dimension is contiguous,
/// so every reduced index contributes one contiguous input row.
fn row_accumulate<T: Pod, R: Reducer<T>>(raw: &[T], plan: &Plan, r: &R, out: &mut [R::Out]) {
    let (outer, last) = plan.kept.split_at(plan.kept.len() - 1);
    let k = last[0].n;
    let cw = k.min(COL_CHUNK);
    let rows = Rows {
        raw,
        r,
        reduced: &plan.reduced,
    };
    let count = plan.count;
    let par = worth_splitting(plan.n_out * count);
    let tasks = (plan.n_out / k) * k.div_ceil(cw);
    let run = |row: usize, c0: usize, dst: &mut [R::Out], par: bool| {
        let base = offset_of(outer, plan.offset, row) + c0 as isize;
        let acc = rows.fold(base, dst.len(), 0, count, par);
        for (o, a) in dst.iter_mut().zip(acc) {
            *o = r.finish(a, count);
        }
    };
    if par && tasks >= rayon::current_num_threads() {
        // A task per column chunk of each output row, claimed as threads
        // free up; with fewer tasks than threads each task splits its rows.
        for_each_part(column_chunks(out, k, cw), |(row, c0, d)| {
            run(row, c0, d, false)
        });
    } else {
        for (row, dst) in out.chunks_mut(k).enumerate() {
            for (c, d) in dst.chunks_mut(cw).enumerate() {
                run(row, c * cw, d, par);
            }
        }
    }
}

/// `out` as rows of `k` outputs cut into chunks of `cw` columns:
/// (row, first column, chunk), one task's worth each.
fn column_chunks<O>(out: &mut [O], k: usize, cw: usize) -> Vec<(usize, usize, &mut [O])> {
    out.chunks_mut(k)
        .enumerate()
        .flat_map(|(row, dst)| {
            dst.chunks_mut(cw)
                .enumerate()
                .map(move |(c, d)| (row, c * cw, d))
        })
        .collect()
}

/// Input rows of one row-accumulation task.
struct Rows<'a, T, R> {
    raw: &'a [T],
    r: &'a R,
    reduced: &'a [Dim],
}

impl<T: Pod, R: Reducer<T>> Rows<'_, T, R> {
    /// Accumulators of the `w` columns at `base`, over reduced indices
    /// `lo..hi`, pairwise over blocks of rows.
    fn fold(&self, base: isize, w: usize, lo: usize, hi: usize, par: bool) -> Vec<R::Acc> {
        let len = hi - lo;
        let r = self.r;
        if len <= (BLOCK / w).clamp(32, 1024) {
            let mut acc = vec![r.init(); w];
            let cursor = Cursor::new(self.reduced, base, lo);
            dispatch(RowsLeaf {
                rows: self,
                cursor,
                len,
                acc: &mut acc,
            });
            return acc;
        }
        let merge = |mut a: Vec<R::Acc>, b: Vec<R::Acc>| {
            dispatch(MergeRows {
                r,
                a: &mut a,
                b: &b,
                t: PhantomData,
            });
            a
        };
        if par && worth_splitting(len * w) {
            // The same halves as below, the upper ones in parallel.
            let floor = task_floor(len * w);
            let split = |lo: usize, hi: usize| {
                let len = hi - lo;
                (len > (BLOCK / w).clamp(32, 1024) && len * w > floor && worth_splitting(len * w))
                    .then_some(lo + len / 2)
            };
            let task = |lo: usize, hi: usize| self.fold(base, w, lo, hi, false);
            return pairwise(lo, hi, &split, task, merge);
        }
        let mid = lo + len / 2;
        let a = self.fold(base, w, lo, mid, false);
        merge(a, self.fold(base, w, mid, hi, false))
    }
}

/// `len` input rows folded into an accumulator row in one dispatched pass.
struct RowsLeaf<'r, 'a, T: Copy, R: Reducer<T>> {
    rows: &'r Rows<'a, T, R>,
    cursor: Cursor<'a>,
    len: usize,
    acc: &'r mut [R::Acc],
}

impl<T: Pod, R: Reducer<T>> WithSimd for RowsLeaf<'_, '_, T, R> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (r, w, mut cur) = (self.rows.r, self.acc.len(), self.cursor);
        for _ in 0..self.len {
            let row = &self.rows.raw[cur.offset()..cur.offset() + w];
            for (a, &x) in self.acc.iter_mut().zip(row) {
                *a = r.step(*a, x);
            }
            cur.advance();
        }
    }
}

/// `a[i] = merge(a[i], b[i])`, dispatched.
struct MergeRows<'a, T: Copy, R: Reducer<T>> {
    r: &'a R,
    a: &'a mut [R::Acc],
    b: &'a [R::Acc],
    t: PhantomData<T>,
}

impl<T: Pod, R: Reducer<T>> WithSimd for MergeRows<'_, T, R> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        for (x, &y) in self.a.iter_mut().zip(self.b) {
            *x = self.r.merge(*x, y);
        }
    }
}

// ---------------------------------------------------------------------------
// Element arithmetic
// ---------------------------------------------------------------------------

/// Accumulator arithmetic: wrapping for integers, IEEE for floats.
pub trait AccNum: Copy + Send + Sync + 'static {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// `self + o`.
    fn add(self, o: Self) -> Self;
    /// `self * o`.
    fn mul(self, o: Self) -> Self;
}

macro_rules! acc_int {($($t:ty),*) => {$(
    impl AccNum for $t {
        const ZERO: Self = 0;
        const ONE: Self = 1;
        #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
        #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
    }
)*}}
acc_int!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! acc_float {($($t:ty),*) => {$(
    impl AccNum for $t {
        const ZERO: Self = 0.0;
        const ONE: Self = 1.0;
        #[inline(always)] fn add(self, o: Self) -> Self { self + o }
        #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
    }
)*}}
acc_float!(f32, f64);

impl AccNum for Complex64 {
    const ZERO: Self = Complex64::new(0.0, 0.0);
    const ONE: Self = Complex64::new(1.0, 0.0);
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self * o
    }
}

/// An element type's sum/prod accumulator and output (MLX's rules: bool
/// and integers up to 32 bits accumulate in `int32`/`uint32`, 64-bit
/// integers keep their type, half floats accumulate in `f32` and round once).
pub trait SumInput: Pod {
    /// The accumulator.
    type Acc: AccNum;
    /// The output element.
    type Out: Pod;
    /// Converts an element to the accumulator type.
    fn widen(self) -> Self::Acc;
    /// Converts the accumulator to the output type.
    fn narrow(acc: Self::Acc) -> Self::Out;
}

macro_rules! sum_input {($($t:ty => $acc:ty, $out:ty, |$x:ident| $widen:expr, |$a:ident| $narrow:expr;)*) => {$(
    impl SumInput for $t {
        type Acc = $acc;
        type Out = $out;
        #[inline(always)] fn widen(self) -> $acc { let $x = self; $widen }
        #[inline(always)] fn narrow(acc: $acc) -> $out { let $a = acc; $narrow }
    }
)*}}
sum_input! {
    bool => i32, i32, |x| x as i32, |a| a;
    u8 => u32, u32, |x| x as u32, |a| a;
    u16 => u32, u32, |x| x as u32, |a| a;
    u32 => u32, u32, |x| x, |a| a;
    u64 => u64, u64, |x| x, |a| a;
    i8 => i32, i32, |x| x as i32, |a| a;
    i16 => i32, i32, |x| x as i32, |a| a;
    i32 => i32, i32, |x| x, |a| a;
    i64 => i64, i64, |x| x, |a| a;
    f16 => f32, f16, |x| x.to_f32(), |a| f16::from_f32(a);
    bf16 => f32, bf16, |x| x.to_f32(), |a| bf16::from_f32(a);
    f32 => f32, f32, |x| x, |a| a;
    f64 => f64, f64, |x| x, |a| a;
    Complex64 => Complex64, Complex64, |x| x, |a| a;
}

/// An element type's mean accumulator and output: integers and bool
/// accumulate in `f64` and give `f32`; half floats accumulate in `f32` and
/// round once.
pub trait MeanInput: Pod {
    /// The accumulator.
    type Acc: AccNum;
    /// The output element.
    type Out: Pod;
    /// Converts an element to the accumulator type.
    fn widen(self) -> Self::Acc;
    /// The mean of `n` elements whose sum is `acc`.
    fn mean(acc: Self::Acc, n: usize) -> Self::Out;
}

macro_rules! mean_input {($($t:ty => $acc:ty, $out:ty, |$x:ident| $widen:expr, |$a:ident, $n:ident| $mean:expr;)*) => {$(
    impl MeanInput for $t {
        type Acc = $acc;
        type Out = $out;
        #[inline(always)] fn widen(self) -> $acc { let $x = self; $widen }
        #[inline(always)] fn mean(acc: $acc, n: usize) -> $out { let ($a, $n) = (acc, n); $mean }
    }
)*}}
mean_input! {
    bool => f64, f32, |x| x as u8 as f64, |a, n| (a / n as f64) as f32;
    u8 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    u16 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    u32 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    u64 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    i8 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    i16 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    i32 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    i64 => f64, f32, |x| x as f64, |a, n| (a / n as f64) as f32;
    f16 => f32, f16, |x| x.to_f32(), |a, n| f16::from_f32(a / n as f32);
    bf16 => f32, bf16, |x| x.to_f32(), |a, n| bf16::from_f32(a / n as f32);
    f32 => f32, f32, |x| x, |a, n| a / n as f32;
    f64 => f64, f64, |x| x, |a, n| a / n as f64;
    Complex64 => Complex64, Complex64, |x| x, |a, n| a / n as f32;
}

/// Ordering for max/min/argmax: floats order numerically with NaN handled
/// by the callers, bool as `false < true`, complex lexicographically
/// (real part, then imaginary part) like numpy and MLX.
pub trait Extremum: Pod + Element {
    /// The smallest value (identity of max).
    const LOWEST: Self;
    /// The largest value (identity of min).
    const HIGHEST: Self;
    /// `self > o`.
    fn gt(self, o: Self) -> bool;
    /// `self < o`.
    fn lt(self, o: Self) -> bool;
    /// True for NaN (complex: either part).
    fn is_nan(self) -> bool;
}

macro_rules! extremum_int {($($t:ty),*) => {$(
    impl Extremum for $t {
        const LOWEST: Self = <$t>::MIN;
        const HIGHEST: Self = <$t>::MAX;
        #[inline(always)] fn gt(self, o: Self) -> bool { self > o }
        #[inline(always)] fn lt(self, o: Self) -> bool { self < o }
        #[inline(always)] fn is_nan(self) -> bool { false }
    }
)*}}
extremum_int!(u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! extremum_float {($($t:ty),*) => {$(
    impl Extremum for $t {
        const LOWEST: Self = <$t>::NEG_INFINITY;
        const HIGHEST: Self = <$t>::INFINITY;
        #[inline(always)] fn gt(self, o: Self) -> bool { self > o }
        #[inline(always)] fn lt(self, o: Self) -> bool { self < o }
        #[inline(always)] fn is_nan(self) -> bool { self.is_nan() }
    }
)*}}
extremum_float!(f32, f64, f16, bf16);

impl Extremum for bool {
    const LOWEST: Self = false;
    const HIGHEST: Self = true;
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self & !o
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        !self & o
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
}

impl Extremum for Complex64 {
    const LOWEST: Self = Complex64::new(f32::NEG_INFINITY, f32::NEG_INFINITY);
    const HIGHEST: Self = Complex64::new(f32::INFINITY, f32::INFINITY);
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self.re > o.re || (self.re == o.re && self.im > o.im)
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self.re < o.re || (self.re == o.re && self.im < o.im)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        self.re.is_nan() || self.im.is_nan()
    }
}

/// Truth value of an element for all/any: non-zero (complex: either part).
pub trait Truthy: Pod {
    /// `self != 0`.
    fn truthy(self) -> bool;
}

macro_rules! truthy_num {($($t:ty => $zero:expr),*) => {$(
    impl Truthy for $t {
        #[inline(always)] fn truthy(self) -> bool { self != $zero }
    }
)*}}
truthy_num!(u8 => 0, u16 => 0, u32 => 0, u64 => 0, i8 => 0, i16 => 0, i32 => 0, i64 => 0,
    f32 => 0.0, f64 => 0.0, f16 => f16::ZERO, bf16 => bf16::ZERO, Complex64 => Complex64::new(0.0, 0.0));

impl Truthy for bool {
    #[inline(always)]
    fn truthy(self) -> bool {
        self
    }
}

// ---------------------------------------------------------------------------
// Reducers
// ---------------------------------------------------------------------------

/// Defines a reducer that folds elements into an accumulator with `$op`
/// from `$init`, the element type's widening rule given by `$input` (a
/// trait with `Acc`, `Out`, `widen` and `narrow`): the sums and products of
/// reductions (`SumInput`) and of scans (`ScanInput`, which keeps narrow
/// integers narrow) are this one definition.
macro_rules! accumulating_reducer {
    ($(#[$doc:meta])* $name:ident, $input:ident, $init:ident, $op:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl<T: $input> Reducer<T> for $name {
            type Acc = T::Acc;
            type Out = T::Out;
            #[inline(always)]
            fn init(&self) -> T::Acc {
                T::Acc::$init
            }
            #[inline(always)]
            fn step(&self, acc: T::Acc, x: T) -> T::Acc {
                acc.$op(x.widen())
            }
            #[inline(always)]
            fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
                a.$op(b)
            }
            #[inline(always)]
            fn finish(&self, acc: T::Acc, _count: usize) -> T::Out {
                T::narrow(acc)
            }
        }
    };
}
pub(crate) use accumulating_reducer;

accumulating_reducer!(
    /// Sum with [`SumInput`]'s accumulator.
    SumReducer, SumInput, ZERO, add
);
accumulating_reducer!(
    /// Product with [`SumInput`]'s accumulator.
    ProdReducer, SumInput, ONE, mul
);

/// Arithmetic mean with [`MeanInput`]'s accumulator.
#[derive(Debug, Clone, Copy)]
pub struct MeanReducer;

impl<T: MeanInput> Reducer<T> for MeanReducer {
    type Acc = T::Acc;
    type Out = T::Out;
    #[inline(always)]
    fn init(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn step(&self, acc: T::Acc, x: T) -> T::Acc {
        acc.add(x.widen())
    }
    #[inline(always)]
    fn merge(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    fn finish(&self, acc: T::Acc, count: usize) -> T::Out {
        T::mean(acc, count)
    }
}

/// Maximum; NaN wins (propagates) as in numpy and MLX.
#[derive(Debug, Clone, Copy)]
pub struct MaxReducer;

impl<T: Extremum> Reducer<T> for MaxReducer {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        T::LOWEST
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T) -> T {
        // Branch-free select: keeps a NaN accumulator, takes a NaN element.
        if x.gt(acc) || x.is_nan() { x } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        self.step(a, b)
    }
    #[inline(always)]
    fn finish(&self, acc: T, _count: usize) -> T {
        acc
    }
}

/// Minimum; NaN wins (propagates) as in numpy and MLX.
#[derive(Debug, Clone, Copy)]
pub struct MinReducer;

impl<T: Extremum> Reducer<T> for MinReducer {
    type Acc = T;
    type Out = T;
    #[inline(always)]
    fn init(&self) -> T {
        T::HIGHEST
    }
    #[inline(always)]
    fn step(&self, acc: T, x: T) -> T {
        if x.lt(acc) || x.is_nan() { x } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: T, b: T) -> T {
        self.step(a, b)
    }
    #[inline(always)]
    fn finish(&self, acc: T, _count: usize) -> T {
        acc
    }
}

/// Logical and of the elements' truth values (`true` when empty).
#[derive(Debug, Clone, Copy)]
pub struct AllReducer;

impl<T: Truthy> Reducer<T> for AllReducer {
    type Acc = bool;
    type Out = bool;
    #[inline(always)]
    fn init(&self) -> bool {
        true
    }
    #[inline(always)]
    fn step(&self, acc: bool, x: T) -> bool {
        acc & x.truthy()
    }
    #[inline(always)]
    fn merge(&self, a: bool, b: bool) -> bool {
        a & b
    }
    #[inline(always)]
    fn finish(&self, acc: bool, _count: usize) -> bool {
        acc
    }
}

/// Logical or of the elements' truth values (`false` when empty).
#[derive(Debug, Clone, Copy)]
pub struct AnyReducer;

impl<T: Truthy> Reducer<T> for AnyReducer {
    type Acc = bool;
    type Out = bool;
    #[inline(always)]
    fn init(&self) -> bool {
        false
    }
    #[inline(always)]
    fn step(&self, acc: bool, x: T) -> bool {
        acc | x.truthy()
    }
    #[inline(always)]
    fn merge(&self, a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn finish(&self, acc: bool, _count: usize) -> bool {
        acc
    }
}

/// Variance (or standard deviation) of already centred values: the sum of
/// squares divided by `max(count - ddof, 0)`, like numpy and MLX.
#[derive(Debug, Clone, Copy)]
pub struct CenteredVarReducer {
    /// Delta degrees of freedom.
    pub ddof: i64,
    /// Take the square root (standard deviation).
    pub sqrt: bool,
}

macro_rules! centered_var {($($t:ty),*) => {$(
    impl Reducer<$t> for CenteredVarReducer {
        type Acc = $t;
        type Out = $t;
        #[inline(always)] fn init(&self) -> $t { 0.0 }
        #[inline(always)] fn step(&self, acc: $t, x: $t) -> $t { acc + x * x }
        #[inline(always)] fn merge(&self, a: $t, b: $t) -> $t { a + b }
        #[inline(always)]
        fn finish(&self, acc: $t, count: usize) -> $t {
            let dof = (count as i64).saturating_sub(self.ddof).max(0);
            let v = acc / dof as $t;
            if self.sqrt { v.sqrt() } else { v }
        }
    }
)*}}
centered_var!(f32, f64);

// ---------------------------------------------------------------------------
// Online max-and-sum: logsumexp and softmax
// ---------------------------------------------------------------------------

/// Float arithmetic needed by the online max-and-sum kernel.
pub trait LseFloat:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + 'static
{
    /// `-inf`.
    const NEG_INF: Self;
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// `e^self` (exact at `-inf` -> 0).
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// True for NaN.
    fn is_nan(self) -> bool;
    /// True for `+-inf`.
    fn is_infinite(self) -> bool;
}

impl LseFloat for f32 {
    const NEG_INF: Self = f32::NEG_INFINITY;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn exp(self) -> Self {
        // Polynomial, branch-free: vectorises inside `dispatch`.
        super::math::exp_f32(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f32::ln(self)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline(always)]
    fn is_infinite(self) -> bool {
        f32::is_infinite(self)
    }
}

impl LseFloat for f64 {
    const NEG_INF: Self = f64::NEG_INFINITY;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn exp(self) -> Self {
        f64::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f64::ln(self)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline(always)]
    fn is_infinite(self) -> bool {
        f64::is_infinite(self)
    }
}

/// NaN-propagating maximum as a select (vectorises to compare + blend).
#[inline(always)]
pub(crate) fn nan_max<F: LseFloat>(a: F, b: F) -> F {
    #[allow(clippy::eq_op)] // b != b is the NaN test
    let b_nan = b != b;
    if b > a || b_nan { b } else { a }
}

/// The value subtracted before `exp`: the running max, or 0 while it is
/// `-inf` (so `exp(-inf - 0) = 0` instead of `exp(-inf + inf) = NaN`).
#[inline(always)]
pub(crate) fn shift<F: LseFloat>(m: F) -> F {
    if m == F::NEG_INF { F::ZERO } else { m }
}

/// Running `(max, sum of exp(x - shift(max)))` folded with one more element.
#[inline(always)]
pub fn online_step<F: LseFloat>((m, s): (F, F), x: F) -> (F, F) {
    let nm = nan_max(m, x);
    let sh = shift(nm);
    (nm, s * (m - sh).exp() + (x - sh).exp())
}

/// Combines two running `(max, sum)` states.
#[inline(always)]
pub fn online_merge<F: LseFloat>((m1, s1): (F, F), (m2, s2): (F, F)) -> (F, F) {
    let nm = nan_max(m1, m2);
    let sh = shift(nm);
    (nm, s1 * (m1 - sh).exp() + s2 * (m2 - sh).exp())
}

/// Slices shorter than this take [`online_max_sum`]'s two-pass path: the
/// max, then one `exp` per element, summed in order.
pub const SHORT_LSE_ROW: usize = 64;

/// `(max, sum of exp(x - shift(max)))` of a slice in one pass.
///
/// Blocked online algorithm: each of 16 lanes keeps its own running max
/// and sum; per block of 4 elements per lane the lane max is updated first
/// and the lane sum rescaled once, so the pass costs one `exp` per element
/// plus one per lane per block. Call inside [`dispatch`].
#[inline(always)]
pub fn online_max_sum<F: LseFloat>(xs: &[F]) -> (F, F) {
    const L: usize = 16;
    const B: usize = 4;
    const _: () = assert!(L * B == SHORT_LSE_ROW);
    if xs.len() < SHORT_LSE_ROW {
        return two_pass_max_sum(xs);
    }
    let mut m = [F::NEG_INF; L];
    let mut s = [F::ZERO; L];
    let mut blocks = xs.chunks_exact(L * B);
    for block in &mut blocks {
        let mut bm = m;
        for row in block.chunks_exact(L) {
            for (b, &x) in bm.iter_mut().zip(row) {
                *b = nan_max(*b, x);
            }
        }
        let mut sh = [F::ZERO; L];
        for i in 0..L {
            sh[i] = shift(bm[i]);
            s[i] = s[i] * (m[i] - sh[i]).exp();
        }
        for row in block.chunks_exact(L) {
            for ((acc, &x), &h) in s.iter_mut().zip(row).zip(&sh) {
                *acc = *acc + (x - h).exp();
            }
        }
        m = bm;
    }
    let mut state = (F::NEG_INF, F::ZERO);
    for i in 0..L {
        state = online_merge(state, (m[i], s[i]));
    }
    merge_tail(state, blocks.remainder())
}

/// `(max, sum of exp(x - shift(max)))` of a slice shorter than a block of
/// the blocked kernels, in two passes: the max, then one `exp` per element.
/// Through the blocked path such a slice cost two `exp` per element (the
/// running rescale) plus two per lane to merge 16 empty lanes: a softmax
/// row of 10 classes took about 60 `exp` instead of 10.
#[inline(always)]
fn two_pass_max_sum<F: LseFloat>(xs: &[F]) -> (F, F) {
    let m = xs.iter().fold(F::NEG_INF, |m, &x| nan_max(m, x));
    let sh = shift(m);
    (m, xs.iter().fold(F::ZERO, |s, &x| s + (x - sh).exp()))
}

/// `state` folded with the elements after the last full block.
#[inline(always)]
fn merge_tail<F: LseFloat>(state: (F, F), tail: &[F]) -> (F, F) {
    if tail.is_empty() {
        return state;
    }
    online_merge(state, two_pass_max_sum(tail))
}

/// `log(sum(exp(x)))` from a `(max, sum)` state, MLX's convention: an
/// infinite max is the result itself, NaN anywhere gives NaN.
#[inline(always)]
pub fn lse_finish<F: LseFloat>((m, s): (F, F)) -> F {
    if m.is_nan() || m.is_infinite() {
        m
    } else {
        m + s.ln()
    }
}

/// Lanes of the softmax row kernel.
pub const SOFTMAX_LANES: usize = 16;
/// Elements per lane per block of the softmax row kernel.
const SOFTMAX_BLOCK: usize = 8;
/// Rows shorter than this take [`softmax_row`]'s two-pass path (the max,
/// `exp(x - max)`, their sum in order, one scaling pass).
pub const SHORT_SOFTMAX_ROW: usize = SOFTMAX_LANES * SOFTMAX_BLOCK;

/// Softmax of one contiguous row into `out` (same length), in two passes.
///
/// The online pass keeps a running max and sum per lane like
/// [`online_max_sum`] and also stores `exp(x - block max)` in `out`,
/// recording every block's lane maxima in `maxima` (scratch). The write
/// pass then only multiplies each block's lane by
/// `exp(block max - row max) / sum`: one `exp` per element in all, plus two
/// per lane per block of 8 (against two per element for a write pass that
/// recomputes the exponentials).
pub fn softmax_row<F: LseFloat>(xs: &[F], out: &mut [F], maxima: &mut Vec<[F; SOFTMAX_LANES]>) {
    dispatch(SoftmaxRow { xs, out, maxima });
}

struct SoftmaxRow<'a, F> {
    xs: &'a [F],
    out: &'a mut [F],
    maxima: &'a mut Vec<[F; SOFTMAX_LANES]>,
}

impl<F: LseFloat> WithSimd for SoftmaxRow<'_, F> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        const L: usize = SOFTMAX_LANES;
        const LB: usize = SHORT_SOFTMAX_ROW;
        let (xs, out, maxima) = (self.xs, self.out, self.maxima);
        maxima.clear();
        if xs.len() < LB {
            short_softmax_row(xs, out);
            return;
        }
        let mut m = [F::NEG_INF; L];
        let mut s = [F::ZERO; L];
        let full = xs.len() / LB * LB;
        for (block, dst) in xs[..full]
            .chunks_exact(LB)
            .zip(out[..full].chunks_exact_mut(LB))
        {
            // Fixed-size views: the loops below compile to straight SIMD.
            let (Ok(block), Ok(dst)) = (<&[F; LB]>::try_from(block), <&mut [F; LB]>::try_from(dst))
            else {
                continue;
            };
            let mut bm = m;
            for j in 0..SOFTMAX_BLOCK {
                for i in 0..L {
                    bm[i] = nan_max(bm[i], block[j * L + i]);
                }
            }
            let mut sh = [F::ZERO; L];
            for i in 0..L {
                sh[i] = shift(bm[i]);
                s[i] = s[i] * (m[i] - sh[i]).exp();
            }
            for j in 0..SOFTMAX_BLOCK {
                for i in 0..L {
                    let e = (block[j * L + i] - sh[i]).exp();
                    dst[j * L + i] = e;
                    s[i] = s[i] + e;
                }
            }
            m = bm;
            maxima.push(bm);
        }
        let mut state = (F::NEG_INF, F::ZERO);
        for i in 0..L {
            state = online_merge(state, (m[i], s[i]));
        }
        let (row_max, sum) = merge_tail(state, &xs[full..]);
        let sh = shift(row_max);
        let inv = F::ONE / sum;
        for (dst, bm) in out[..full].chunks_exact_mut(LB).zip(maxima.iter()) {
            // exp(-inf - sh) = 0 for lanes that only saw -inf so far.
            let mut scale = [F::ZERO; L];
            for i in 0..L {
                scale[i] = (bm[i] - sh).exp() * inv;
            }
            for row in dst.chunks_exact_mut(L) {
                for (o, &k) in row.iter_mut().zip(&scale) {
                    *o = *o * k;
                }
            }
        }
        for (o, &x) in out[full..].iter_mut().zip(&xs[full..]) {
            *o = (x - sh).exp() * inv;
        }
    }
}

/// Softmax of a row shorter than one block of [`softmax_row`]: the max,
/// then `exp(x - max)` into `out` (one `exp` per element, a loop that
/// vectorises), then their sum and one scaling pass, with the same special
/// values as the blocked kernel (NaN or `+inf` anywhere: NaN; all `-inf`:
/// NaN, as `0 * (1 / 0)`).
#[inline(always)]
fn short_softmax_row<F: LseFloat>(xs: &[F], out: &mut [F]) {
    let sh = shift(xs.iter().fold(F::NEG_INF, |m, &x| nan_max(m, x)));
    for (o, &x) in out.iter_mut().zip(xs) {
        *o = (x - sh).exp();
    }
    let inv = F::ONE / out.iter().fold(F::ZERO, |s, &e| s + e);
    for o in out.iter_mut() {
        *o = *o * inv;
    }
}

/// Element types logsumexp/softmax compute on: halves compute in `f32`.
pub trait LseInput: Pod {
    /// The compute type.
    type F: LseFloat;
    /// Converts to the compute type.
    fn widen(self) -> Self::F;
    /// Rounds back from the compute type.
    fn narrow(f: Self::F) -> Self;
    /// `(max, sum)` of a contiguous slice (call inside [`dispatch`]).
    fn online(xs: &[Self]) -> (Self::F, Self::F);
}

impl LseInput for f32 {
    type F = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    #[inline(always)]
    fn narrow(f: f32) -> f32 {
        f
    }
    #[inline(always)]
    fn online(xs: &[f32]) -> (f32, f32) {
        online_max_sum(xs)
    }
}

impl LseInput for f64 {
    type F = f64;
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(f: f64) -> f64 {
        f
    }
    #[inline(always)]
    fn online(xs: &[f64]) -> (f64, f64) {
        online_max_sum(xs)
    }
}

macro_rules! lse_half {($($t:ty),*) => {$(
    impl LseInput for $t {
        type F = f32;
        #[inline(always)] fn widen(self) -> f32 { self.to_f32() }
        #[inline(always)] fn narrow(f: f32) -> $t { <$t>::from_f32(f) }
        #[inline(always)]
        fn online(xs: &[$t]) -> (f32, f32) {
            // Convert through a stack buffer so the f32 kernel does the work.
            let mut buf = [0.0f32; 256];
            let mut state = (f32::NEG_INFINITY, 0.0);
            for chunk in xs.chunks(buf.len()) {
                let b = &mut buf[..chunk.len()];
                <$t as HalfBlock>::widen(chunk, b);
                state = online_merge(state, online_max_sum(b));
            }
            state
        }
    }
)*}}
lse_half!(f16, bf16);

/// logsumexp through the reduction engines.
#[derive(Debug, Clone, Copy)]
pub struct LogSumExpReducer;

impl<T: LseInput> Reducer<T> for LogSumExpReducer {
    type Acc = (T::F, T::F);
    type Out = T;
    #[inline(always)]
    fn init(&self) -> Self::Acc {
        (T::F::NEG_INF, T::F::ZERO)
    }
    #[inline(always)]
    fn step(&self, acc: Self::Acc, x: T) -> Self::Acc {
        online_step(acc, x.widen())
    }
    #[inline(always)]
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
        online_merge(a, b)
    }
    #[inline(always)]
    fn finish(&self, acc: Self::Acc, _count: usize) -> T {
        T::narrow(lse_finish(acc))
    }
    #[inline(always)]
    fn reduce_slice(&self, xs: &[T]) -> Self::Acc {
        T::online(xs)
    }
}

/// The `(max, sum)` states themselves, for softmax over arbitrary axes.
#[derive(Debug, Clone, Copy)]
pub struct MaxSumReducer;

impl<T: LseInput> Reducer<T> for MaxSumReducer {
    type Acc = (T::F, T::F);
    type Out = (T::F, T::F);
    #[inline(always)]
    fn init(&self) -> Self::Acc {
        (T::F::NEG_INF, T::F::ZERO)
    }
    #[inline(always)]
    fn step(&self, acc: Self::Acc, x: T) -> Self::Acc {
        online_step(acc, x.widen())
    }
    #[inline(always)]
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc {
        online_merge(a, b)
    }
    #[inline(always)]
    fn finish(&self, acc: Self::Acc, _count: usize) -> Self::Acc {
        acc
    }
    #[inline(always)]
    fn reduce_slice(&self, xs: &[T]) -> Self::Acc {
        T::online(xs)
    }
}

// ---------------------------------------------------------------------------
// argmax / argmin
// ---------------------------------------------------------------------------

/// True if `x` beats `best` for argmax (`MAX`) or argmin: strictly better,
/// or the first NaN (numpy: the first NaN is the answer).
#[inline(always)]
fn beats<T: Extremum, const MAX: bool>(x: T, best: T) -> bool {
    let better = if MAX { x.gt(best) } else { x.lt(best) };
    better || (x.is_nan() && !best.is_nan())
}

/// Picks the winner of two (value, index) candidates; ties go to the
/// smaller index.
#[inline(always)]
fn arg_merge<T: Extremum, const MAX: bool>(a: (T, u32), b: (T, u32)) -> (T, u32) {
    let (first, second) = if a.1 <= b.1 { (a, b) } else { (b, a) };
    if beats::<T, MAX>(second.0, first.0) {
        second
    } else {
        first
    }
}

/// (value, index) of the first extreme element of a non-empty slice; the
/// indices are relative to the slice.
#[inline(always)]
fn arg_slice<T: Extremum, const MAX: bool>(xs: &[T]) -> (T, u32) {
    const L: usize = 16;
    let mut best = (xs[0], 0u32);
    if xs.len() >= 2 * L {
        let mut val = [xs[0]; L];
        let mut idx = [0u32; L];
        for (i, (v, x)) in val.iter_mut().zip(&xs[..L]).enumerate() {
            *v = *x;
            idx[i] = i as u32;
        }
        let mut chunks = xs.chunks_exact(L);
        let mut base = 0u32;
        chunks.next();
        for chunk in &mut chunks {
            base += L as u32;
            for (i, ((v, j), &x)) in val.iter_mut().zip(idx.iter_mut()).zip(chunk).enumerate() {
                let take = beats::<T, MAX>(x, *v);
                *v = if take { x } else { *v };
                *j = if take { base + i as u32 } else { *j };
            }
        }
        best = (val[0], idx[0]);
        for i in 1..L {
            best = arg_merge::<T, MAX>(best, (val[i], idx[i]));
        }
        let start = xs.len() - chunks.remainder().len();
        for (i, &x) in chunks.remainder().iter().enumerate() {
            if beats::<T, MAX>(x, best.0) {
                best = (x, (start + i) as u32);
            }
        }
    } else {
        for (i, &x) in xs.iter().enumerate().skip(1) {
            if beats::<T, MAX>(x, best.0) {
                best = (x, i as u32);
            }
        }
    }
    best
}

/// Arg-reduction of a long contiguous slice, split pairwise (in parallel
/// when large); `offset` is the index of `xs[0]`.
fn arg_slice_par<T: Extremum, const MAX: bool>(xs: &[T], offset: u32) -> (T, u32) {
    if xs.len() <= 16 * BLOCK || !worth_splitting(xs.len()) {
        let (v, i) = dispatch(ArgSlice::<T, MAX>(xs));
        return (v, i + offset);
    }
    let floor = task_floor(xs.len());
    let split = |lo: usize, hi: usize| {
        let len = hi - lo;
        (len > 16 * BLOCK && len > floor && worth_splitting(len)).then_some(line_mid(lo, len))
    };
    let task = |lo: usize, hi: usize| {
        let (v, i) = dispatch(ArgSlice::<T, MAX>(&xs[lo..hi]));
        (v, i + offset + lo as u32)
    };
    pairwise(0, xs.len(), &split, task, arg_merge::<T, MAX>)
}

/// Where a pairwise fold halves `len` elements from `lo`: a multiple of
/// [`BLOCK`] from `lo`, so every leaf but the last is a full block.
fn line_mid(lo: usize, len: usize) -> usize {
    lo + (len / 2).div_ceil(BLOCK) * BLOCK
}

/// [`arg_slice`], dispatched.
struct ArgSlice<'a, T, const MAX: bool>(&'a [T]);

impl<T: Extremum, const MAX: bool> WithSimd for ArgSlice<'_, T, MAX> {
    type Output = (T, u32);
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> (T, u32) {
        arg_slice::<T, MAX>(self.0)
    }
}

/// Row-wise arg-reduction: `n` rows of `best.len()` elements at `base +
/// i * s` update a best row and an index row (vectorised blends).
struct ArgRows<'a, T, const MAX: bool> {
    raw: &'a [T],
    base: isize,
    s: isize,
    n: usize,
    best: &'a mut [T],
    idx: &'a mut [u32],
}

impl<T: Extremum, const MAX: bool> WithSimd for ArgRows<'_, T, MAX> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let w = self.best.len();
        for i in 1..self.n {
            let o = (self.base + i as isize * self.s) as usize;
            let row = &self.raw[o..o + w];
            for ((b, j), &v) in self.best.iter_mut().zip(self.idx.iter_mut()).zip(row) {
                let take = beats::<T, MAX>(v, *b);
                *b = if take { v } else { *b };
                *j = if take { i as u32 } else { *j };
            }
        }
    }
}

/// One arg-reduction line per output, dispatched.
struct ArgLines<'a, T, const MAX: bool> {
    raw: &'a [T],
    cursor: Cursor<'a>,
    n: usize,
    s: isize,
    out: &'a mut [u32],
}

impl<T: Extremum, const MAX: bool> WithSimd for ArgLines<'_, T, MAX> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (raw, n, s, mut cur) = (self.raw, self.n, self.s, self.cursor);
        for o in self.out.iter_mut() {
            let start = cur.off;
            *o = if s == 1 {
                let at = start as usize;
                arg_slice::<T, MAX>(&raw[at..at + n]).1
            } else {
                let mut best = (raw[start as usize], 0u32);
                for i in 1..n {
                    let v = raw[(start + i as isize * s) as usize];
                    if beats::<T, MAX>(v, best.0) {
                        best = (v, i as u32);
                    }
                }
                best.1
            };
            cur.advance();
        }
    }
}

fn arg_name<const MAX: bool>() -> &'static str {
    if MAX { "argmax" } else { "argmin" }
}

/// Indices of the extreme elements along `axis` (or of the flattened array
/// for `None`) into `out`, row-major over the other dimensions. The reduced
/// length must be non-empty and fit in `u32` (checked by the op builder).
pub fn arg_reduce<T: Extremum, const MAX: bool>(
    x: &Operand<'_>,
    axis: Option<usize>,
    out: &mut [u32],
) -> Result<()> {
    let Some(axis) = axis else {
        let Some(dst) = out.first_mut() else {
            return Ok(());
        };
        if x.shape.contains(&0) {
            return Err(Error::value(
                arg_name::<MAX>(),
                "cannot reduce an empty array",
            ));
        }
        *dst = match x.data.as_contiguous::<T>(x.shape) {
            Some(xs) => arg_slice_par::<T, MAX>(xs, 0).1,
            None => arg_slice_par::<T, MAX>(&x.data.to_vec::<T>(x.shape), 0).1,
        };
        return Ok(());
    };
    let n = x.shape[axis];
    let s = x.data.strides[axis];
    if out.is_empty() {
        return Ok(());
    }
    if n == 0 {
        return Err(Error::value(
            arg_name::<MAX>(),
            "cannot reduce an empty axis",
        ));
    }
    let pre: Vec<Dim> = x.shape[..axis]
        .iter()
        .zip(&x.data.strides[..axis])
        .map(|(&n, &s)| Dim { n, s })
        .collect();
    let post = merge_dims(
        x.shape[axis + 1..]
            .iter()
            .zip(&x.data.strides[axis + 1..])
            .filter(|&(&n, _)| n != 1)
            .map(|(&n, &s)| Dim { n, s })
            .collect(),
    );
    let p: usize = x.shape[axis + 1..].iter().product();
    let raw = x.data.raw::<T>();
    let offset = x.data.offset as isize;
    let par = worth_splitting(out.len() * n);
    if post.len() == 1 && post[0].s == 1 && p >= 8 {
        // Rows along the axis are contiguous: keep a best row and an index
        // row, updated with whole input rows (vectorised blends).
        let cw = p.min(COL_CHUNK);
        let run = |pre_idx: usize, c0: usize, dst: &mut [u32]| {
            let base = offset_of(&pre, offset, pre_idx) + c0 as isize;
            let first = base as usize;
            let mut best = raw[first..first + dst.len()].to_vec();
            dst.fill(0);
            dispatch(ArgRows::<T, MAX> {
                raw,
                base,
                s,
                n,
                best: &mut best,
                idx: dst,
            });
        };
        if par {
            for_each_part(column_chunks(out, p, cw), |(r, c0, d)| run(r, c0, d));
        } else {
            for (r, dst) in out.chunks_mut(p).enumerate() {
                for (c, d) in dst.chunks_mut(cw).enumerate() {
                    run(r, c * cw, d);
                }
            }
        }
        return Ok(());
    }
    // One line per output: contiguous lines use the lane kernel.
    let mut outer = pre;
    outer.extend(
        x.shape[axis + 1..]
            .iter()
            .zip(&x.data.strides[axis + 1..])
            .map(|(&n, &s)| Dim { n, s }),
    );
    let fill = |first: usize, dst: &mut [u32]| {
        let cursor = Cursor::new(&outer, offset, first);
        dispatch(ArgLines::<T, MAX> {
            raw,
            cursor,
            n,
            s,
            out: dst,
        });
    };
    if par {
        let chunk = out
            .len()
            .div_ceil(4 * rayon::current_num_threads())
            .max(MIN_PAR_ELEMS.div_ceil(n));
        for_each_part(out.chunks_mut(chunk).enumerate().collect(), |(c, d)| {
            fill(c * chunk, d)
        });
    } else {
        fill(0, out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::layout::{Data, row_major_strides};
    use crate::graph::storage::Storage;
    use proptest::prelude::*;

    /// A strided operand over `storage` (kept alive by the caller).
    fn operand<'a>(data: &'a Data, shape: &'a [usize], dtype: DType) -> Operand<'a> {
        Operand { data, shape, dtype }
    }

    fn data_of<T: Pod>(values: &[T], strides: Vec<isize>, offset: usize) -> Data {
        let mut st = Storage::new(std::mem::size_of_val(values), false).unwrap();
        st.as_mut_slice::<T>().copy_from_slice(values);
        Data {
            storage: std::sync::Arc::new(st),
            strides,
            offset,
        }
    }

    /// Naive reference: fold every output's elements in row-major order.
    fn naive<T: Pod, R: Reducer<T>>(
        values: &[T],
        shape: &[usize],
        axes: &[usize],
        r: &R,
    ) -> Vec<R::Out> {
        let strides = row_major_strides(shape);
        let out_shape: Vec<usize> = shape
            .iter()
            .enumerate()
            .filter(|(d, _)| !axes.contains(d))
            .map(|(_, &n)| n)
            .collect();
        let n_out: usize = out_shape.iter().product();
        let mut acc = vec![r.init(); n_out];
        let total: usize = shape.iter().product();
        for lin in 0..total {
            let mut rest = lin;
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            let mut o = 0;
            for d in 0..shape.len() {
                if !axes.contains(&d) {
                    o = o * shape[d] + idx[d];
                }
            }
            let off: isize = idx
                .iter()
                .zip(&strides)
                .map(|(&i, &s)| i as isize * s)
                .sum();
            acc[o] = r.step(acc[o], values[off as usize]);
        }
        let count: usize = axes.iter().map(|&a| shape[a]).product();
        acc.into_iter().map(|a| r.finish(a, count)).collect()
    }

    fn run<T: Pod, R: Reducer<T>>(
        d: &Data,
        shape: &[usize],
        dtype: DType,
        axes: &[usize],
        r: &R,
    ) -> Vec<R::Out>
    where
        R::Out: Default,
    {
        let n_out: usize = shape
            .iter()
            .enumerate()
            .filter(|(d, _)| !axes.contains(d))
            .map(|(_, &n)| n)
            .product();
        let mut out = vec![R::Out::default(); n_out];
        reduce(&operand(d, shape, dtype), axes, r, &mut out).unwrap();
        out
    }

    #[test]
    fn plan_merges_a_transposed_full_reduction() {
        // (3, 4) stored column-major: strides (1, 3).
        let p = Plan::new(&[3, 4], &[1, 3], 0, &[0, 1]);
        assert_eq!(p.reduced, vec![Dim { n: 12, s: 1 }]);
        assert!(p.kept.is_empty());
        assert_eq!((p.count, p.n_out), (12, 1));
    }

    #[test]
    fn plan_flips_reversed_reduced_dims() {
        let p = Plan::new(&[5], &[-1], 4, &[0]);
        assert_eq!(p.reduced, vec![Dim { n: 5, s: 1 }]);
        assert_eq!(p.offset, 0);
    }

    #[test]
    fn plan_of_no_axes_has_a_unit_reduced_dim() {
        let p = Plan::new(&[2, 3], &[3, 1], 0, &[]);
        assert_eq!(p.reduced, vec![Dim { n: 1, s: 0 }]);
        assert_eq!(p.kept, vec![Dim { n: 6, s: 1 }]);
    }

    #[test]
    fn sum_of_a_large_slice_is_accurate_and_reproducible() {
        let n = 3 * BLOCK * 64 + 17;
        let xs: Vec<f32> = (0..n).map(|i| ((i % 1000) as f32) * 0.001).collect();
        let d = data_of(&xs, vec![1], 0);
        let got = run::<f32, _>(&d, &[n], DType::Float32, &[0], &SumReducer)[0];
        let want: f64 = xs.iter().map(|&x| x as f64).sum();
        assert!(((got as f64 - want) / want).abs() < 1e-6, "{got} vs {want}");
        // Same bits single-threaded (split points depend only on sizes).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let single = pool.install(|| run::<f32, _>(&d, &[n], DType::Float32, &[0], &SumReducer)[0]);
        assert_eq!(got.to_bits(), single.to_bits());
    }

    #[test]
    fn max_propagates_nan_in_every_engine() {
        let mut xs: Vec<f32> = (0..64 * 40).map(|i| i as f32).collect();
        xs[77] = f32::NAN;
        let d = data_of(&xs, vec![40, 1], 0);
        let inner = run::<f32, _>(&d, &[64, 40], DType::Float32, &[1], &MaxReducer);
        assert!(inner[1].is_nan() && !inner[0].is_nan());
        let outer = run::<f32, _>(&d, &[64, 40], DType::Float32, &[0], &MaxReducer);
        assert!(outer[37].is_nan() && !outer[36].is_nan());
        assert_eq!(outer[0], 63.0 * 40.0);
    }

    #[test]
    fn online_max_sum_handles_infinities() {
        // Blocked with a tail, and shorter than a block (two passes).
        for n in [100, 10] {
            let all_neg_inf = vec![f32::NEG_INFINITY; n];
            assert_eq!(lse_finish(online_max_sum(&all_neg_inf)), f32::NEG_INFINITY);
            let mut xs = vec![0.0f32; n];
            xs[3] = f32::INFINITY;
            assert_eq!(lse_finish(online_max_sum(&xs)), f32::INFINITY);
            xs[5] = f32::NAN;
            assert!(lse_finish(online_max_sum(&xs)).is_nan());
            let mut ys = vec![f32::NEG_INFINITY; n];
            ys[n - 7] = 1.0;
            assert!((lse_finish(online_max_sum(&ys)) - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn logsumexp_of_every_length_matches_f64() {
        for n in (1..=140).chain([255, 256, 300]) {
            let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 23) as f32 * 0.7 - 8.0).collect();
            let m = xs.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
            let want = m + xs.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
            let got = lse_finish(online_max_sum(&xs)) as f64;
            assert!(
                (got - want).abs() <= 2e-6 * want.abs().max(1.0),
                "{n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn softmax_rows_with_special_values() {
        fn reference(xs: &[f32]) -> Vec<f32> {
            let m = xs.iter().fold(f64::NEG_INFINITY, |m, &x| {
                if x as f64 > m || x.is_nan() {
                    x as f64
                } else {
                    m
                }
            });
            let e: Vec<f64> = xs.iter().map(|&x| (x as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| (v / s) as f32).collect()
        }
        let mut maxima = Vec::new();
        // Two full blocks of 128 and a tail, one block and a tail, rows
        // shorter than a block (the two-pass kernel), one element.
        for n in [300, 129, 127, 10, 1] {
            let finite: Vec<f32> = (0..n).map(|i| -200.0 + (i % 17) as f32 * 0.5).collect();
            let mut first_block_neg_inf = finite.clone();
            first_block_neg_inf[..128.min(n - 1)].fill(f32::NEG_INFINITY);
            let mut one_pos_inf = finite.clone();
            one_pos_inf[n / 2] = f32::INFINITY;
            let mut one_nan = finite.clone();
            one_nan[n - 1] = f32::NAN;
            for xs in [
                finite,
                first_block_neg_inf,
                vec![f32::NEG_INFINITY; n],
                one_pos_inf,
                one_nan,
            ] {
                let mut out = vec![0.0f32; n];
                softmax_row(&xs, &mut out, &mut maxima);
                for (i, (&g, w)) in out.iter().zip(reference(&xs)).enumerate() {
                    assert!(
                        (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-6 * w.abs() + 1e-12,
                        "{n} {i}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn argmax_prefers_first_occurrence_and_first_nan() {
        let xs: Vec<f32> = (0..100).map(|i| (i % 7) as f32).collect();
        assert_eq!(arg_slice::<f32, true>(&xs), (6.0, 6));
        assert_eq!(arg_slice::<f32, false>(&xs), (0.0, 0));
        let mut ys = xs.clone();
        ys[50] = f32::NAN;
        ys[70] = f32::NAN;
        assert_eq!(arg_slice::<f32, true>(&ys).1, 50);
        assert_eq!(arg_slice::<f32, false>(&ys).1, 50);
    }

    /// A random shape, a random subset of its axes, and a permutation
    /// (to build a transposed view of the same logical array).
    fn case() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>, bool)> {
        prop::collection::vec(1usize..9, 1..5).prop_flat_map(|shape| {
            let nd = shape.len();
            (
                Just(shape),
                prop::collection::vec(any::<bool>(), nd),
                Just((0..nd).collect::<Vec<usize>>()).prop_shuffle(),
                any::<bool>(),
            )
                .prop_map(|(shape, pick, perm, big)| {
                    let axes = (0..shape.len()).filter(|&d| pick[d]).collect();
                    (shape, axes, perm, big)
                })
        })
    }

    /// Lays `values` (row-major over `shape`) out in storage in the order of
    /// `perm`, returning the strides that view it as `shape` again.
    fn permuted<T: Pod + Default>(
        values: &[T],
        shape: &[usize],
        perm: &[usize],
    ) -> (Vec<T>, Vec<isize>) {
        let pshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let pstrides = row_major_strides(&pshape);
        let mut strides = vec![0isize; shape.len()];
        for (i, &p) in perm.iter().enumerate() {
            strides[p] = pstrides[i];
        }
        let mut store = vec![T::default(); values.len()];
        let lstrides = row_major_strides(shape);
        for (lin, &v) in values.iter().enumerate() {
            let mut off = 0isize;
            for (d, &ls) in lstrides.iter().enumerate() {
                off += (lin as isize / ls) % shape[d] as isize * strides[d];
            }
            store[off as usize] = v;
        }
        (store, strides)
    }

    /// Timings of the headline kernels (run with `cargo test --release -p
    /// ferrox --lib reduce -- --ignored --nocapture`); prints, asserts
    /// nothing.
    #[test]
    #[ignore]
    fn timing_report() {
        use crate::graph::array::Array;
        use std::time::Instant;
        fn best(label: &str, bytes: usize, f: impl Fn() -> Result<Array>) {
            let mut best = f64::INFINITY;
            for _ in 0..15 {
                let t = Instant::now();
                let y = f().unwrap();
                y.eval().unwrap();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{label:<44} {:>8.2} ms  {:>6.1} GB/s",
                best * 1e3,
                bytes as f64 / best / 1e9
            );
        }
        println!("rayon threads: {}", rayon::current_num_threads());
        let n = 1 << 24;
        let v: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        let flat = Array::from_slice(&v, &[n]).unwrap();
        let square = Array::from_slice(&v, &[4096, 4096]).unwrap();
        let square_t = crate::ops::views::transpose(&square, None).unwrap();
        let halves = flat.astype(DType::Float16).unwrap();
        for a in [&flat, &square, &square_t, &halves] {
            a.eval().unwrap();
        }
        let b = 4 * n;
        best("sum 16M f32 (all axes)", b, || {
            crate::ops::reduce::sum(&flat, None, false)
        });
        best("max 16M f32 (all axes)", b, || {
            crate::ops::reduce::max(&flat, None, false)
        });
        best("sum (4096,4096) f32 axis 1", b, || {
            crate::ops::reduce::sum(&square, Some(&[1]), false)
        });
        best("sum (4096,4096) f32 axis 0", b, || {
            crate::ops::reduce::sum(&square, Some(&[0]), false)
        });
        best("sum transposed (4096,4096) f32 axis 1", b, || {
            crate::ops::reduce::sum(&square_t, Some(&[1]), false)
        });
        best("sum 16M f16 (all axes)", 2 * n, || {
            crate::ops::reduce::sum(&halves, None, false)
        });
        best("argmax 16M f32 (flattened)", b, || {
            crate::ops::reduce::argmax(&flat, None, false)
        });
        best("argmax (4096,4096) f32 axis 0", b, || {
            crate::ops::reduce::argmax(&square, Some(0), false)
        });
        best("logsumexp (4096,4096) f32 axis -1", b, || {
            crate::ops::softmax::logsumexp(&square, Some(&[-1]), false)
        });
        best("softmax (4096,4096) f32 axis -1", 2 * b, || {
            crate::ops::softmax::softmax(&square, Some(&[-1]), false)
        });
        best("softmax (4096,4096) f32 axis 0", 2 * b, || {
            crate::ops::softmax::softmax(&square, Some(&[0]), false)
        });
        best("var (4096,4096) f32 axis -1", b, || {
            crate::ops::reduce::var(&square, Some(&[-1]), false, 0)
        });
        best("cumsum 16M f32 (flattened)", 2 * b, || {
            crate::ops::scan::cumsum(&flat, None, false, true)
        });
        best("cumsum (4096,4096) f32 axis 0", 2 * b, || {
            crate::ops::scan::cumsum(&square, Some(0), false, true)
        });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn integer_sums_match_naive_loops((mut shape, axes, perm, big) in case()) {
            if big {
                // Push some cases past the parallel thresholds (2^16 elements).
                let n: usize = shape.iter().product();
                shape[0] *= 70_000usize.div_ceil(n);
            }
            let n: usize = shape.iter().product();
            let values: Vec<i32> = (0..n).map(|i| (i as i32).wrapping_mul(2654435761u32 as i32) >> 20).collect();
            let want = naive(&values, &shape, &axes, &SumReducer);
            let d = data_of(&values, row_major_strides(&shape), 0);
            prop_assert_eq!(run::<i32, _>(&d, &shape, DType::Int32, &axes, &SumReducer), want.clone());
            let (store, strides) = permuted(&values, &shape, &perm);
            let t = data_of(&store, strides, 0);
            prop_assert_eq!(run::<i32, _>(&t, &shape, DType::Int32, &axes, &SumReducer), want);
            let want_max = naive(&values, &shape, &axes, &MaxReducer);
            prop_assert_eq!(run::<i32, _>(&t, &shape, DType::Int32, &axes, &MaxReducer), want_max);
        }

        #[test]
        fn float_sums_match_naive_loops_within_tolerance((mut shape, axes, perm, big) in case()) {
            if big {
                let (n, last) = (shape.iter().product::<usize>(), shape.len() - 1);
                shape[last] *= 70_000usize.div_ceil(n);
            }
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1013) as f32 / 101.0 - 5.0).collect();
            let want = naive(&values.iter().map(|&v| v as f64).collect::<Vec<_>>(), &shape, &axes, &SumReducer);
            let (store, strides) = permuted(&values, &shape, &perm);
            let t = data_of(&store, strides, 0);
            let got = run::<f32, _>(&t, &shape, DType::Float32, &axes, &SumReducer);
            let count: usize = axes.iter().map(|&a| shape[a]).product();
            for (g, w) in got.iter().zip(&want) {
                prop_assert!((*g as f64 - w).abs() <= 1e-5 * count as f64, "{} vs {}", g, w);
            }
        }

        #[test]
        fn argmax_matches_naive_loops((shape, _axes, perm, _big) in case(), axis_pick in 0usize..4) {
            let axis = axis_pick % shape.len();
            let n: usize = shape.iter().product();
            let values: Vec<i16> = (0..n).map(|i| ((i * 7919) % 31) as i16).collect();
            let (store, strides) = permuted(&values, &shape, &perm);
            let t = data_of(&store, strides, 0);
            let op = operand(&t, &shape, DType::Int16);
            let p: usize = shape[axis + 1..].iter().product();
            let n_out = n / shape[axis];
            let mut got = vec![0u32; n_out];
            arg_reduce::<i16, true>(&op, Some(axis), &mut got).unwrap();
            for (o, &g) in got.iter().enumerate() {
                let (pre, post) = (o / p, o % p);
                let at = |i: usize| values[(pre * shape[axis] + i) * p + post];
                let want = (0..shape[axis]).fold(0, |b, i| if at(i) > at(b) { i } else { b });
                prop_assert_eq!(g as usize, want);
            }
            let mut flat = [0u32];
            arg_reduce::<i16, false>(&op, None, &mut flat).unwrap();
            let want = (0..n).fold(0, |b, i| if values[i] < values[b] { i } else { b });
            prop_assert_eq!(flat[0] as usize, want);
        }
    }
}
