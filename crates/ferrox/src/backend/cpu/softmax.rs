//! The softmax and logsumexp kernels: one online pass per row for the
//! running max and the sum of exponentials (the row engines are in
//! [`reduce`](super::reduce)), then (softmax only) one write pass. Half
//! floats compute in `f32` through [`HalfBlock`] and round once.

use super::elementwise::out_storage;
use super::half::HalfBlock;
use super::parallel::MIN_PAR_ELEMS;
use super::reduce::{
    Cursor, Dim, LogSumExpReducer, LseFloat, LseInput, MaxSumReducer, SHORT_LSE_ROW,
    SHORT_SOFTMAX_ROW, SOFTMAX_LANES, dispatch, reduce, reduced_shape,
    softmax_row as softmax_row_kernel,
};
use super::short_rows::{logsumexp_short_rows, softmax_short_rows};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::{Data, for_each_offset, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Storage;
use half::{bf16, f16};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

/// Runs `$body` with `$T` bound to the Rust type of a float dtype.
macro_rules! with_float {
    ($name:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Float16 => {
                type $T = f16;
                $body
            }
            DType::BFloat16 => {
                type $T = bf16;
                $body
            }
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float64 => {
                type $T = f64;
                $body
            }
            d => Err(Error::dtype(
                $name,
                format!("expected a float dtype, got {d}"),
            )),
        }
    };
}
pub(crate) use with_float;

/// `log(sum(exp(x)))` over `axes` (sorted, distinct) of a float input.
pub fn logsumexp(x: &Operand<'_>, axes: &[usize], out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    with_float!("logsumexp", x.dtype, T => logsumexp_kernel::<T>(x, axes, st.as_mut_slice::<T>()))?;
    Ok(Data::contiguous(st, out.shape))
}

/// logsumexp through the reduction engines, or, for short contiguous rows
/// reduced along the last axis, [`logsumexp_short_rows`] (the same values).
fn logsumexp_kernel<T: Compute>(x: &Operand<'_>, axes: &[usize], dst: &mut [T]) -> Result<()> {
    let row_len = x.shape.last().copied().unwrap_or(0);
    let last_axis_only = axes.len() == 1 && axes[0] + 1 == x.shape.len();
    if last_axis_only
        && (1..SHORT_LSE_ROW).contains(&row_len)
        && let (Some(src), Some(dst)) = (
            x.data.as_contiguous::<T>(x.shape).and_then(T::as_compute),
            T::as_compute_mut(dst),
        )
    {
        return logsumexp_short_rows(src, row_len, dst);
    }
    reduce::<T, _>(x, axes, &LogSumExpReducer, dst)
}

/// Softmax over `axes` (sorted, distinct) of a float input.
pub fn softmax(x: &Operand<'_>, axes: &[usize], out: OutSpec<'_>) -> Result<Data> {
    let mut st = out_storage(out)?;
    with_float!("softmax", x.dtype, T => softmax_kernel::<T>(x, axes, &mut st))?;
    Ok(Data::contiguous(st, out.shape))
}

/// Converting a float type to and from its compute type, a slice at a time.
trait Compute: LseInput {
    /// `xs` itself when it already is the compute type.
    fn as_compute(xs: &[Self]) -> Option<&[Self::F]>;
    /// `ys` itself when it already is the compute type.
    fn as_compute_mut(ys: &mut [Self]) -> Option<&mut [Self::F]>;
    /// Converts `xs` into `out` (same length).
    fn widen_into(xs: &[Self], out: &mut [Self::F]);
    /// Rounds `xs` into `out` (same length).
    fn narrow_into(xs: &[Self::F], out: &mut [Self]);
}

macro_rules! compute_native {($($t:ty),*) => {$(
    impl Compute for $t {
        fn as_compute(xs: &[$t]) -> Option<&[$t]> { Some(xs) }
        fn as_compute_mut(ys: &mut [$t]) -> Option<&mut [$t]> { Some(ys) }
        fn widen_into(xs: &[$t], out: &mut [$t]) { out.copy_from_slice(xs) }
        fn narrow_into(xs: &[$t], out: &mut [$t]) { out.copy_from_slice(xs) }
    }
)*}}
compute_native!(f32, f64);

macro_rules! compute_half {($($t:ty),*) => {$(
    impl Compute for $t {
        fn as_compute(_: &[$t]) -> Option<&[f32]> { None }
        fn as_compute_mut(_: &mut [$t]) -> Option<&mut [f32]> { None }
        fn widen_into(xs: &[$t], out: &mut [f32]) {
            <$t as HalfBlock>::widen(xs, out)
        }
        fn narrow_into(xs: &[f32], out: &mut [$t]) {
            <$t as HalfBlock>::narrow(xs, out)
        }
    }
)*}}
compute_half!(f16, bf16);

/// Per-task scratch of the row kernel: converted rows (half floats) and
/// the kernel's block maxima.
struct Scratch<F> {
    xs: Vec<F>,
    ys: Vec<F>,
    maxima: Vec<[F; SOFTMAX_LANES]>,
}

impl<F> Scratch<F> {
    fn new() -> Self {
        Scratch {
            xs: Vec::new(),
            ys: Vec::new(),
            maxima: Vec::new(),
        }
    }
}

/// Softmax of one row into `out`; rows not already in the compute type are
/// converted through the scratch buffers.
fn softmax_row<T: Compute>(row: &[T], out: &mut [T], scratch: &mut Scratch<T::F>) {
    if let (Some(xs), Some(ys)) = (T::as_compute(row), T::as_compute_mut(out)) {
        softmax_row_kernel(xs, ys, &mut scratch.maxima);
        return;
    }
    scratch.xs.resize(row.len(), T::F::ZERO);
    scratch.ys.resize(row.len(), T::F::ZERO);
    T::widen_into(row, &mut scratch.xs);
    softmax_row_kernel(&scratch.xs, &mut scratch.ys, &mut scratch.maxima);
    T::narrow_into(&scratch.ys, out);
}

fn softmax_kernel<T: Compute>(x: &Operand<'_>, axes: &[usize], st: &mut Storage) -> Result<()> {
    let nd = x.shape.len();
    let n: usize = x.shape.iter().product();
    let dst = st.as_mut_slice::<T>();
    if n == 0 {
        return Ok(());
    }
    let trailing = axes
        .iter()
        .enumerate()
        .all(|(i, &a)| a == nd - axes.len() + i);
    if !trailing {
        softmax_any_axes::<T>(x, axes, dst);
        return Ok(());
    }
    // Rows are the trailing axes: output rows are contiguous and independent.
    let lead = nd - axes.len();
    let row_len: usize = x.shape[lead..].iter().product();
    let contiguous = x.data.as_contiguous::<T>(x.shape);
    let rows_per_task = MIN_PAR_ELEMS.div_ceil(row_len).max(1);
    if row_len < SHORT_SOFTMAX_ROW
        && let (Some(src), Some(dst)) = (contiguous.and_then(T::as_compute), T::as_compute_mut(dst))
    {
        return softmax_short_rows(src, row_len, dst);
    }
    let raw = x.data.raw::<T>();
    let (outer_shape, row_shape) = x.shape.split_at(lead);
    let (outer_strides, row_strides) = x.data.strides.split_at(lead);
    let task = |first_row: usize, out_rows: &mut [T]| {
        let mut scratch = Scratch::new();
        let mut gathered = Vec::new();
        for (i, out_row) in out_rows.chunks_mut(row_len).enumerate() {
            let r = first_row + i;
            match contiguous {
                Some(src) => {
                    softmax_row(&src[r * row_len..(r + 1) * row_len], out_row, &mut scratch)
                }
                None => {
                    // Gather the strided row, then the same kernel.
                    let mut base = x.data.offset as isize;
                    let mut rest = r;
                    for (&d, &s) in outer_shape.iter().zip(outer_strides).rev() {
                        base += (rest % d) as isize * s;
                        rest /= d;
                    }
                    gathered.clear();
                    for_each_offset(row_shape, row_strides, base as usize, |o| {
                        gathered.push(raw[o])
                    });
                    softmax_row(&gathered, out_row, &mut scratch);
                }
            }
        }
    };
    if n >= 2 * MIN_PAR_ELEMS && rayon::current_num_threads() > 1 {
        dst.par_chunks_mut(rows_per_task * row_len)
            .enumerate()
            .for_each(|(c, d)| task(c * rows_per_task, d));
    } else {
        task(0, dst);
    }
    Ok(())
}

/// Softmax over axes that are not the trailing ones: the `(max, sum)` of
/// every output row through the reduction engines, then one write pass.
fn softmax_any_axes<T: Compute>(x: &Operand<'_>, axes: &[usize], dst: &mut [T]) {
    let kept_shape = reduced_shape(x.shape, axes, false);
    let n_stats: usize = kept_shape.iter().product();
    let mut stats = vec![(T::F::NEG_INF, T::F::ZERO); n_stats];
    if reduce::<T, _>(x, axes, &MaxSumReducer, &mut stats).is_err() {
        // Unreachable: `stats` has exactly the kept size.
        return;
    }
    // (shift, 1 / sum) per row, as the write pass uses them.
    let coef: Vec<(T::F, T::F)> = stats
        .iter()
        .map(|&(m, s)| {
            (
                if m == T::F::NEG_INF { T::F::ZERO } else { m },
                T::F::ONE / s,
            )
        })
        .collect();
    let kept_strides = row_major_strides(&kept_shape);
    let mut k = 0;
    let mut input_dims = Vec::with_capacity(x.shape.len());
    let mut stat_dims = Vec::with_capacity(x.shape.len());
    for (d, (&n, &s)) in x.shape.iter().zip(&x.data.strides).enumerate() {
        input_dims.push(Dim { n, s });
        let stat_stride = if axes.contains(&d) {
            0
        } else {
            k += 1;
            kept_strides[k - 1]
        };
        stat_dims.push(Dim { n, s: stat_stride });
    }
    dispatch(WritePass {
        raw: x.data.raw::<T>(),
        input: Cursor::new(&input_dims, x.data.offset as isize, 0),
        stat: Cursor::new(&stat_dims, 0, 0),
        coef: &coef,
        out: dst,
    });
}

/// The write pass of [`softmax_any_axes`]: every element in row-major
/// order, with the `(shift, 1 / sum)` of its row.
struct WritePass<'a, T: LseInput> {
    raw: &'a [T],
    input: Cursor<'a>,
    stat: Cursor<'a>,
    coef: &'a [(T::F, T::F)],
    out: &'a mut [T],
}

impl<T: LseInput> WithSimd for WritePass<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let (mut input, mut stat) = (self.input, self.stat);
        for o in self.out.iter_mut() {
            let (sh, inv) = self.coef[stat.offset()];
            *o = T::narrow((self.raw[input.offset()].widen() - sh).exp() * inv);
            input.advance();
            stat.advance();
        }
    }
}
