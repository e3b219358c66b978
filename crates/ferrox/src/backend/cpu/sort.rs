//! CPU kernels of the sorts: the [`SortKind`] selector, the element order
//! (`SortKey`; numpy's, see [`crate::ops::sort`]) and the row engine.
//!
//! A *row* is the run of elements along the axis for one position of
//! the other axes (with `axis = None`, the whole flattened array). Rows are
//! gathered into a contiguous scratch buffer — strided and transposed inputs
//! are read in place, no copy first — processed there, and the needed part
//! written to the output in row-major order. Rows are independent: large
//! inputs split over cores in groups of rows, and a single huge row uses
//! rayon's parallel sort. Argsorts break ties by position, which makes them
//! stable while using the faster unstable sort.

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::worth_splitting;
use crate::backend::cpu::strided::{numel, par_blocks, par_chunks};
use crate::dtype::{Complex64, Element};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::{for_each_segment, inner_strides, zip_strides};
use crate::with_dtype;
use rayon::slice::ParallelSliceMut;
use std::cmp::Ordering;

/// Element types in sort order (see the module docs).
pub(crate) trait SortKey: Element + Pod {
    /// The total order sorts use.
    fn sort_cmp(a: &Self, b: &Self) -> Ordering;
}

macro_rules! sort_key_ord {($($t:ty),*) => {$(
    impl SortKey for $t {
        #[inline(always)]
        fn sort_cmp(a: &Self, b: &Self) -> Ordering { a.cmp(b) }
    }
)*}}
sort_key_ord!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

macro_rules! sort_key_float {($($t:ty),*) => {$(
    impl SortKey for $t {
        #[inline(always)]
        fn sort_cmp(a: &Self, b: &Self) -> Ordering {
            // Incomparable only with a NaN: the NaN is the larger one.
            a.partial_cmp(b).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
        }
    }
)*}}
sort_key_float!(f32, f64, half::f16, half::bf16);

impl SortKey for Complex64 {
    #[inline(always)]
    fn sort_cmp(a: &Self, b: &Self) -> Ordering {
        f32::sort_cmp(&a.re, &b.re).then_with(|| f32::sort_cmp(&a.im, &b.im))
    }
}

/// What a sort computes for each row.
///
/// ```
/// use ferrox::ops::sort::SortKind;
/// assert_eq!(SortKind::TopK { k: 2 }.name(), "topk");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SortKind {
    /// The sorted values.
    Sort,
    /// The (stable) sorting permutation, as uint32.
    ArgSort,
    /// The values, partitioned around position `kth` (normalised).
    Partition {
        /// The position that holds its sorted value.
        kth: usize,
    },
    /// The partitioning permutation, as uint32.
    ArgPartition {
        /// The position that holds its sorted value.
        kth: usize,
    },
    /// The `k` largest values, in ascending order.
    TopK {
        /// How many values.
        k: usize,
    },
}

impl SortKind {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            SortKind::Sort => "sort",
            SortKind::ArgSort => "argsort",
            SortKind::Partition { .. } => "partition",
            SortKind::ArgPartition { .. } => "argpartition",
            SortKind::TopK { .. } => "topk",
        }
    }
}

/// Sorts, partitions or selects each row of `a` along `axis` (`None`: the
/// flattened array) into the output `out`.
pub fn eval(
    kind: SortKind,
    axis: Option<usize>,
    a: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let rows = Rows::of(a, axis);
    with_dtype!(a.dtype, T => kernel::<T>(kind, a, &rows, out))
}

/// The rows of an operand: a walk over its elements in row order (the
/// axis moved last), and how rows map onto the output.
struct Rows {
    /// The walk: the other axes in order, then the axis.
    shape: Vec<usize>,
    strides: Vec<[isize; 1]>,
    /// Elements per row.
    n: usize,
    /// Rows (`outer * inner`).
    count: usize,
    /// Product of the dimensions before / after the axis.
    outer: usize,
    inner: usize,
}

impl Rows {
    fn of(a: &Operand<'_>, axis: Option<usize>) -> Rows {
        let Some(axis) = axis else {
            let n = numel(a.shape);
            let strides = zip_strides([&a.data.strides]);
            return Rows {
                shape: a.shape.to_vec(),
                strides,
                n,
                count: 1,
                outer: 1,
                inner: 1,
            };
        };
        let order: Vec<usize> = (0..a.shape.len())
            .filter(|&d| d != axis)
            .chain([axis])
            .collect();
        Rows {
            shape: order.iter().map(|&d| a.shape[d]).collect(),
            strides: order.iter().map(|&d| [a.data.strides[d]]).collect(),
            n: a.shape[axis],
            count: numel(a.shape) / a.shape[axis].max(1),
            outer: numel(&a.shape[..axis]),
            inner: numel(&a.shape[axis + 1..]),
        }
    }
}

fn kernel<T: SortKey>(
    kind: SortKind,
    a: &Operand<'_>,
    rows: &Rows,
    out: OutSpec<'_>,
) -> Result<Data> {
    let by_value = |x: &T, y: &T| T::sort_cmp(x, y);
    // Ties broken by position: a stable order from an unstable sort.
    let by_pair = |x: &(T, u32), y: &(T, u32)| T::sort_cmp(&x.0, &y.0).then(x.1.cmp(&y.1));
    let value = |x: T, _| x;
    let pair = |x: T, i: u32| (x, i);
    let n = rows.n;
    match kind {
        SortKind::Sort => run_rows(
            a,
            rows,
            n,
            out,
            value,
            |r, par| sort_row(r, par, by_value),
            |x| x,
        ),
        SortKind::ArgSort => run_rows(
            a,
            rows,
            n,
            out,
            pair,
            |r, par| sort_row(r, par, by_pair),
            |x| x.1,
        ),
        SortKind::Partition { kth } => run_rows(
            a,
            rows,
            n,
            out,
            value,
            |r, _| select(r, kth, by_value),
            |x| x,
        ),
        SortKind::ArgPartition { kth } => run_rows(
            a,
            rows,
            n,
            out,
            pair,
            |r, _| select(r, kth, by_pair),
            |x| x.1,
        ),
        SortKind::TopK { k } => run_rows(
            a,
            rows,
            k,
            out,
            value,
            |r, par| top_k(r, k, par, by_value),
            |x| x,
        ),
    }
}

fn sort_row<S: Send>(row: &mut [S], parallel: bool, cmp: impl Fn(&S, &S) -> Ordering + Sync) {
    if parallel {
        row.par_sort_unstable_by(cmp);
    } else {
        row.sort_unstable_by(cmp);
    }
}

/// Puts the `kth` smallest value of `row` at `kth`, smaller ones before it.
fn select<S>(row: &mut [S], kth: usize, cmp: impl Fn(&S, &S) -> Ordering) {
    row.select_nth_unstable_by(kth, cmp);
}

/// Moves the `k` largest values to the end of `row`, in ascending order.
fn top_k<S: Send>(
    row: &mut [S],
    k: usize,
    parallel: bool,
    cmp: impl Fn(&S, &S) -> Ordering + Sync,
) {
    let n = row.len();
    if k == 0 {
        return;
    }
    if k < n {
        row.select_nth_unstable_by(n - k, &cmp);
    }
    sort_row(&mut row[n - k..], parallel, cmp);
}

/// Loads every row into scratch (`load(value, position in row)`), runs
/// `work(row, parallel)` on it and writes `emit` of the last `k_out`
/// elements of each row to the output, axis back in place.
fn run_rows<T: SortKey, S: Copy + Send + Sync, O: Pod>(
    a: &Operand<'_>,
    rows: &Rows,
    k_out: usize,
    out: OutSpec<'_>,
    load: impl Fn(T, u32) -> S + Sync + Send,
    work: impl Fn(&mut [S], bool) + Sync + Send,
    emit: impl Fn(S) -> O + Sync + Send,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let n = rows.n;
    if rows.count * k_out == 0 {
        return Ok(Data::contiguous(storage, out.shape));
    }
    let raw = a.data.raw::<T>();
    let [step] = inner_strides(&rows.strides);
    let mut scratch = vec![load(T::default(), 0); rows.count * n];
    let fill_and_work = |first_row: usize, chunk: &mut [S], parallel: bool| {
        let (mut k, mut pos) = (0, 0u32);
        for_each_segment(
            &rows.shape,
            &rows.strides,
            [a.data.offset as isize],
            first_row * n,
            chunk.len(),
            |[o], count| {
                for (t, s) in chunk[k..k + count].iter_mut().enumerate() {
                    *s = load(raw[(o + t as isize * step) as usize], pos);
                    // Chunks start at a row boundary; `n - 1` fits u32 (builder).
                    pos = if pos as usize + 1 == n { 0 } else { pos + 1 };
                }
                k += count;
                Ok(())
            },
        )?;
        chunk
            .chunks_exact_mut(n)
            .for_each(|row| work(row, parallel));
        Ok(())
    };
    if rows.count == 1 {
        fill_and_work(0, &mut scratch, worth_splitting(n))?;
    } else {
        par_blocks(&mut scratch, n, |first_row, chunk| {
            fill_and_work(first_row, chunk, false)
        })?;
    }
    // out[o, j, i] = scratch[(o * inner + i) * n + (n - k_out) + j].
    let (shape, strides) = if rows.inner == 1 {
        (vec![rows.outer, k_out], vec![[n as isize], [1]])
    } else {
        (
            vec![rows.outer, k_out, rows.inner],
            vec![[(rows.inner * n) as isize], [1], [n as isize]],
        )
    };
    let [sstep] = inner_strides(&strides);
    let dst = storage.as_mut_slice::<O>();
    let scratch = &scratch;
    par_chunks(dst, |first, d| {
        let mut k = 0;
        for_each_segment(
            &shape,
            &strides,
            [(n - k_out) as isize],
            first,
            d.len(),
            |[o], count| {
                for (t, x) in d[k..k + count].iter_mut().enumerate() {
                    *x = emit(scratch[(o + t as isize * sstep) as usize]);
                }
                k += count;
                Ok(())
            },
        )
    })?;
    Ok(Data::contiguous(storage, out.shape))
}
