//! Scatters: MLX's `scatter` family, `put_along_axis` and `slice_update`.
//! Each output is a copy of `a` with updates written (or combined) into it.
//! They run serially in row-major index order, so duplicate indices are
//! well defined: the combining modes accumulate every update, `Set` (and
//! `put_along_axis`) keep the last one. Plain writes are instantiated per
//! element size; only the combining modes (add, prod, max, min) per dtype.

use super::copy::with_elem_size;
use super::elementwise::out_storage;
use super::index::{IndexBound, positions, slice_starts};
use super::strided::{
    Runs, broadcast_strides_to, contiguous_strides_to, copy_into, numel, offsets,
};
use crate::dtype::Complex64;
use crate::dtype::Element;
use crate::error::Result;
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::{for_each_segment, inner_strides, zip_strides};
use crate::with_dtype;

/// How a scatter combines each update with the value it lands on.
///
/// ```
/// assert_eq!(ferrox::ops::indexing::ScatterMode::Add.name(), "scatter_add");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ScatterMode {
    /// Replace (`scatter`); of duplicate indices the last update wins.
    Set,
    /// Add (`scatter_add`); wrapping for integers, `or` for bool.
    Add,
    /// Multiply (`scatter_prod`); wrapping for integers, `and` for bool.
    Prod,
    /// numpy's `maximum` (`scatter_max`): a NaN on either side wins;
    /// complex numbers compare lexicographically.
    Max,
    /// numpy's `minimum` (`scatter_min`), NaN and complex as for `Max`.
    Min,
}

impl ScatterMode {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            ScatterMode::Set => "scatter",
            ScatterMode::Add => "scatter_add",
            ScatterMode::Prod => "scatter_prod",
            ScatterMode::Max => "scatter_max",
            ScatterMode::Min => "scatter_min",
        }
    }
}

/// How the updates operand of a scatter lines up with its index grid.
///
/// ```
/// use ferrox::ops::indexing::UpdatesLayout;
/// assert_ne!(UpdatesLayout::Full, UpdatesLayout::Squeezed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UpdatesLayout {
    /// MLX's layout: updates have exactly the shape `index_shape + slice`.
    Full,
    /// The `a.at(..)` layout: updates broadcast to `index_shape + slice`
    /// with the indexed axes (whose slices have size 1) left out.
    Squeezed,
}

/// What a scatter node fixes: the mode, how the updates line up, the
/// indexed axes, the slice per index tuple and the broadcast index shape.
#[derive(Debug, Clone, Copy)]
pub struct ScatterPlan<'a> {
    /// How updates combine with the values they land on.
    pub mode: ScatterMode,
    /// How the updates operand maps onto `index_shape + slice`.
    pub layout: UpdatesLayout,
    /// The axis each index array indexes.
    pub axes: &'a [usize],
    /// The slice each index tuple updates (one entry per axis of `a`).
    pub slice: &'a [usize],
    /// The broadcast shape of the index arrays.
    pub index_shape: &'a [usize],
}

/// A copy of `a` with a slice of `updates` (already `a`'s dtype) combined
/// in at every index tuple of `indices`, in order.
pub fn scatter(
    p: &ScatterPlan<'_>,
    a: &Operand<'_>,
    indices: &[Operand<'_>],
    updates: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let op = p.mode.name();
    let out_strides = row_major_strides(a.shape);
    let starts = slice_starts(
        op,
        indices,
        p.axes,
        p.index_shape,
        a.shape,
        &out_strides,
        p.slice,
        0,
    )?;
    let plan = Plan {
        index_shape: p.index_shape,
        starts: &starts,
        slice: p.slice,
        out_strides: &out_strides,
        update_strides: update_strides(p, updates),
    };
    match p.mode {
        ScatterMode::Set => {
            with_elem_size!(a.dtype.size(), T => scatter_with::<T>(a, updates, &plan, out, |_, u| u))
        }
        mode => with_dtype!(a.dtype, T => combine::<T>(mode, a, updates, &plan, out)),
    }
}

/// Strides of the updates over the grid `index_shape + slice`.
fn update_strides(p: &ScatterPlan<'_>, updates: &Operand<'_>) -> Vec<isize> {
    let index_shape = p.index_shape;
    let grid = [index_shape, p.slice].concat();
    match p.layout {
        UpdatesLayout::Full => broadcast_strides_to(updates.shape, &updates.data.strides, &grid),
        UpdatesLayout::Squeezed => {
            let kept: Vec<usize> = (0..p.slice.len()).filter(|d| !p.axes.contains(d)).collect();
            let target: Vec<usize> = index_shape
                .iter()
                .copied()
                .chain(kept.iter().map(|&d| p.slice[d]))
                .collect();
            let squeezed = broadcast_strides_to(updates.shape, &updates.data.strides, &target);
            let (index_part, slice_part) = squeezed.split_at(index_shape.len());
            let mut kept_strides = slice_part.iter();
            let slice_strides = (0..p.slice.len()).map(|d| {
                if p.axes.contains(&d) {
                    0
                } else {
                    kept_strides.next().copied().unwrap_or(0)
                }
            });
            index_part.iter().copied().chain(slice_strides).collect()
        }
    }
}

/// Where a scatter writes: one slice per index tuple.
struct Plan<'a> {
    index_shape: &'a [usize],
    /// Output offset of each index tuple's slice (row-major over the index shape).
    starts: &'a [isize],
    slice: &'a [usize],
    /// Row-major strides of the output (= `a`'s shape).
    out_strides: &'a [isize],
    /// Strides of the updates over `index_shape + slice`.
    update_strides: Vec<isize>,
}

/// `out = a; out[slice at starts[i]] = f(out[..], updates[i, ..])` for each
/// index tuple `i` in order.
fn scatter_with<T: Pod>(
    a: &Operand<'_>,
    updates: &Operand<'_>,
    plan: &Plan<'_>,
    out: OutSpec<'_>,
    f: impl Fn(T, T) -> T,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    copy_into(a, dst)?;
    let raw = updates.data.raw::<T>();
    let (index_part, slice_part) = plan.update_strides.split_at(plan.index_shape.len());
    let runs = Runs::new(plan.slice, &zip_strides([plan.out_strides, slice_part]));
    let [ds, us] = runs.run_strides;
    let update_starts = offsets(
        plan.index_shape,
        &zip_strides([index_part]),
        [updates.data.offset as isize],
    );
    for (&start, [update_start]) in plan.starts.iter().zip(update_starts) {
        for r in &runs.rows {
            let (d0, u0) = (start + r[0], update_start + r[1]);
            if ds == 1 && us == 1 {
                let (d0, u0) = (d0 as usize, u0 as usize);
                let (d, u) = (&mut dst[d0..d0 + runs.run], &raw[u0..u0 + runs.run]);
                for (x, &y) in d.iter_mut().zip(u) {
                    *x = f(*x, y);
                }
            } else {
                for t in 0..runs.run as isize {
                    let di = (d0 + t * ds) as usize;
                    dst[di] = f(dst[di], raw[(u0 + t * us) as usize]);
                }
            }
        }
    }
    Ok(Data::contiguous(storage, out.shape))
}

fn combine<T: Combine>(
    mode: ScatterMode,
    a: &Operand<'_>,
    updates: &Operand<'_>,
    plan: &Plan<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    match mode {
        ScatterMode::Set => scatter_with::<T>(a, updates, plan, out, |_, u| u),
        ScatterMode::Add => scatter_with::<T>(a, updates, plan, out, T::add),
        ScatterMode::Prod => scatter_with::<T>(a, updates, plan, out, T::mul),
        ScatterMode::Max => scatter_with::<T>(a, updates, plan, out, T::maximum),
        ScatterMode::Min => scatter_with::<T>(a, updates, plan, out, T::minimum),
    }
}

/// The combining operations of the scatters, numpy's semantics per dtype.
trait Combine: Element + Pod {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn maximum(a: Self, b: Self) -> Self;
    fn minimum(a: Self, b: Self) -> Self;
}

macro_rules! combine_int {($($t:ty),*) => {$(
    impl Combine for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
        #[inline(always)] fn maximum(a: Self, b: Self) -> Self { a.max(b) }
        #[inline(always)] fn minimum(a: Self, b: Self) -> Self { a.min(b) }
    }
)*}}
combine_int!(u8, u16, u32, u64, i8, i16, i32, i64);

// `maximum`/`minimum` keep `a` when it is NaN and take `b` otherwise unless
// `a` wins the comparison, so a NaN on either side propagates (numpy).
macro_rules! combine_float {($($t:ty),*) => {$(
    impl Combine for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { a + b }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { a * b }
        #[inline(always)] fn maximum(a: Self, b: Self) -> Self { if a.is_nan() || a >= b { a } else { b } }
        #[inline(always)] fn minimum(a: Self, b: Self) -> Self { if a.is_nan() || a <= b { a } else { b } }
    }
)*}}
combine_float!(f32, f64);

// Half precision computes in f32 and rounds once per update, as numpy does.
macro_rules! combine_half {($($t:ty),*) => {$(
    impl Combine for $t {
        #[inline(always)] fn add(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() + b.to_f32()) }
        #[inline(always)] fn mul(a: Self, b: Self) -> Self { <$t>::from_f32(a.to_f32() * b.to_f32()) }
        #[inline(always)] fn maximum(a: Self, b: Self) -> Self { if a.is_nan() || a >= b { a } else { b } }
        #[inline(always)] fn minimum(a: Self, b: Self) -> Self { if a.is_nan() || a <= b { a } else { b } }
    }
)*}}
combine_half!(half::f16, half::bf16);

impl Combine for bool {
    fn add(a: Self, b: Self) -> Self {
        a | b
    }
    fn mul(a: Self, b: Self) -> Self {
        a & b
    }
    fn maximum(a: Self, b: Self) -> Self {
        a | b
    }
    fn minimum(a: Self, b: Self) -> Self {
        a & b
    }
}

impl Combine for Complex64 {
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
    fn mul(a: Self, b: Self) -> Self {
        a * b
    }
    fn maximum(a: Self, b: Self) -> Self {
        let ge = a.re > b.re || (a.re == b.re && a.im >= b.im);
        if a.is_nan() || ge { a } else { b }
    }
    fn minimum(a: Self, b: Self) -> Self {
        let le = a.re < b.re || (a.re == b.re && a.im <= b.im);
        if a.is_nan() || le { a } else { b }
    }
}

/// `put_along_axis`: a copy of `a` with `values` (broadcast to `grid`, the
/// index grid) written at the positions of `idx` along `axis` (of the
/// flattened `a` when `None`); of duplicates the last value wins.
pub fn put_along_axis(
    a: &Operand<'_>,
    idx: &Operand<'_>,
    values: &Operand<'_>,
    axis: Option<usize>,
    grid: &[usize],
    out: OutSpec<'_>,
) -> Result<Data> {
    let op = "put_along_axis";
    let rows = row_major_strides(a.shape);
    // The output strides over the grid (0 along `axis`, where positions
    // come from the indices) and the step per position.
    let (out_strides, step) = match axis {
        None => (vec![0], 1),
        Some(axis) => {
            let mut s = broadcast_strides_to(a.shape, &rows, grid);
            s[axis] = 0;
            (s, rows[axis])
        }
    };
    let size = match axis {
        None => numel(a.shape),
        Some(axis) => a.shape[axis],
    };
    let pos = positions(idx, IndexBound::new(op, axis, size))?;
    let walk = Walk {
        grid,
        strides: zip_strides([
            &out_strides,
            &contiguous_strides_to(idx.shape, grid),
            &broadcast_strides_to(values.shape, &values.data.strides, grid),
        ]),
        values_offset: values.data.offset as isize,
        step,
    };
    with_elem_size!(a.dtype.size(), T => put_along::<T>(a, values, &pos, &walk, out))
}

/// The walk of `put_along_axis` over its index grid: offsets into the output
/// (minus the indexed position), the positions, and the values.
struct Walk<'a> {
    grid: &'a [usize],
    strides: Vec<[isize; 3]>,
    values_offset: isize,
    step: isize,
}

fn put_along<T: Pod>(
    a: &Operand<'_>,
    values: &Operand<'_>,
    pos: &[usize],
    w: &Walk<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    copy_into(a, dst)?;
    let raw = values.data.raw::<T>();
    let [so, sp, sv] = inner_strides(&w.strides);
    for_each_segment(
        w.grid,
        &w.strides,
        [0, 0, w.values_offset],
        0,
        numel(w.grid),
        |[o, p, v], count| {
            for t in 0..count as isize {
                let at = o + t * so + pos[(p + t * sp) as usize] as isize * w.step;
                dst[at as usize] = raw[(v + t * sv) as usize];
            }
            Ok(())
        },
    )?;
    Ok(Data::contiguous(storage, out.shape))
}

/// Where `slice_update` writes: the first index, the step and the shape of
/// the slice, per axis of `a`.
struct SliceAt<'a> {
    start: &'a [usize],
    strides: &'a [isize],
    shape: &'a [usize],
}

/// `slice_update`: a copy of `a` with `update` (broadcast to `shape`)
/// written over the slice starting at `start` with steps `strides`.
pub fn slice_update(
    a: &Operand<'_>,
    update: &Operand<'_>,
    start: &[usize],
    strides: &[isize],
    shape: &[usize],
    out: OutSpec<'_>,
) -> Result<Data> {
    let at = SliceAt {
        start,
        strides,
        shape,
    };
    with_elem_size!(a.dtype.size(), T => slice_update_of::<T>(a, update, &at, out))
}

fn slice_update_of<T: Pod>(
    a: &Operand<'_>,
    update: &Operand<'_>,
    at: &SliceAt<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    copy_into(a, dst)?;
    let rows = row_major_strides(a.shape);
    let base: isize = at
        .start
        .iter()
        .zip(&rows)
        .map(|(&s, &r)| s as isize * r)
        .sum();
    // A step only matters along axes the slice has 2+ elements on; there
    // |step| < size, so `step * row stride` stays inside the array (a
    // huge step on a 1-element axis must not overflow).
    let dst_strides: Vec<isize> = (0..rows.len())
        .map(|d| {
            if at.shape[d] > 1 {
                at.strides[d] * rows[d]
            } else {
                0
            }
        })
        .collect();
    let src_strides = broadcast_strides_to(update.shape, &update.data.strides, at.shape);
    let strides = zip_strides([&dst_strides, &src_strides]);
    let [ds, us] = strides.last().copied().unwrap_or([1, 1]);
    let raw = update.data.raw::<T>();
    let start = [base, update.data.offset as isize];
    for_each_segment(
        at.shape,
        &strides,
        start,
        0,
        numel(at.shape),
        |[d0, u0], count| {
            if ds == 1 && us == 1 {
                let (d0, u0) = (d0 as usize, u0 as usize);
                dst[d0..d0 + count].copy_from_slice(&raw[u0..u0 + count]);
            } else {
                for t in 0..count as isize {
                    dst[(d0 + t * ds) as usize] = raw[(u0 + t * us) as usize];
                }
            }
            Ok(())
        },
    )?;
    Ok(Data::contiguous(storage, out.shape))
}
