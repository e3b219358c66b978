//! CPU kernels of matrix products: the shape geometry, strided matrix
//! views, per-dtype kernels (gemm or a blocked loop) and the batched driver.
//!
//! Kernels (`MatKernel`): f32, f64 and complex64 go through the `gemm`
//! crate, which takes arbitrary positive row and column strides, so transposed
//! inputs are multiplied without a copy; f32 products with at most 16 output
//! columns take the kernels of `narrow` instead. float16 and bfloat16 are widened to
//! f32, multiplied, and rounded once. Integer and bool products use a blocked loop
//! that accumulates (wrapping) in the output type, like numpy.
//!
//! Parallelism: a stack of small matrices is split over cores by batch; a
//! large matrix is split inside gemm.

use crate::backend::cpu::binary::Arith;
use crate::backend::cpu::copy::{Strided, gather};
use crate::backend::cpu::elementwise::{broadcast_strides, out_storage};
use crate::backend::cpu::parallel::{on_pool, simd, worth_splitting};
use crate::backend::cpu::team::for_each_task;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::layout::checked_numel;
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::walk;
use crate::with_dtype;
use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

mod narrow;

// ---------------------------------------------------------------------------
// Shape rules
// ---------------------------------------------------------------------------

/// The geometry of `a @ b`: the broadcast batch shape, the matrix sizes
/// (`m x k` times `k x n`) and the output shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatmulShape {
    pub batch: Vec<usize>,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub out: Vec<usize>,
}

/// numpy's `matmul` shape rule, with errors naming `op`.
pub(crate) fn matmul_shape(op: &str, a: &[usize], b: &[usize]) -> Result<MatmulShape> {
    for (name, s) in [("a", a), ("b", b)] {
        if s.is_empty() {
            return Err(Error::shape(
                op,
                format!("{name} must have at least 1 dimension, got shape {s:?}"),
            ));
        }
    }
    let (m, ka) = if a.len() == 1 {
        (1, a[0])
    } else {
        (a[a.len() - 2], a[a.len() - 1])
    };
    let (kb, n) = if b.len() == 1 {
        (b[0], 1)
    } else {
        (b[b.len() - 2], b[b.len() - 1])
    };
    if ka != kb {
        return Err(Error::shape(
            op,
            format!("a has shape {a:?} and b has shape {b:?}; {ka} != {kb}"),
        ));
    }
    let batch_a = &a[..a.len().saturating_sub(2)];
    let batch_b = &b[..b.len().saturating_sub(2)];
    let nb = batch_a.len().max(batch_b.len());
    let mut batch = Vec::with_capacity(nb);
    for i in 0..nb {
        let dim = |batch: &[usize]| {
            if i + batch.len() >= nb {
                batch[i + batch.len() - nb]
            } else {
                1
            }
        };
        let (da, db) = (dim(batch_a), dim(batch_b));
        if da != db && da != 1 && db != 1 {
            return Err(Error::shape(
                op,
                format!(
                    "a has shape {a:?} and b has shape {b:?}; batch dimensions \
                     {batch_a:?} and {batch_b:?} cannot be broadcast together"
                ),
            ));
        }
        batch.push(if da == 1 { db } else { da });
    }
    let mut out = batch.clone();
    if a.len() > 1 {
        out.push(m);
    }
    if b.len() > 1 {
        out.push(n);
    }
    checked_numel(op, &out)?;
    Ok(MatmulShape {
        batch,
        m,
        k: ka,
        n,
        out,
    })
}

/// `a @ b` into a fresh output described by `out` (inputs of its dtype).
pub fn eval(a: &Operand<'_>, b: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    with_dtype!(out.dtype, T => eval_product::<T>("matmul", None, a, b, out, Epilogue::Store))
}

/// `beta * c + alpha * (a @ b)` into a fresh output described by `out`.
pub fn eval_addmm(
    c: &Operand<'_>,
    a: &Operand<'_>,
    b: &Operand<'_>,
    alpha: f32,
    beta: f32,
    out: OutSpec<'_>,
) -> Result<Data> {
    let epilogue = Epilogue::Accumulate { alpha, beta };
    with_dtype!(out.dtype, T => eval_product::<T>("addmm", Some(c), a, b, out, epilogue))
}

/// Evaluates a (batched) product into a fresh output; with `c`, the output
/// starts as `c` broadcast and `epilogue` says how the product is added.
pub(crate) fn eval_product<T: MatKernel>(
    op: &str,
    c: Option<&Operand<'_>>,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
    epilogue: Epilogue,
) -> Result<Data> {
    let geo = matmul_shape(op, a.shape, b.shape)?;
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    // `c` matters only when the product is added to it.
    let c = c.filter(|_| matches!(epilogue, Epilogue::Accumulate { beta, .. } if beta != 0.0));
    // The output starts as `c`: written by the product's own tasks, block
    // by block, where `c` reads as rows of the output matrices (not when a
    // vector operand dropped a dimension of them); else here, whole.
    let matrices = out.shape.len() == geo.batch.len() + 2;
    let start = c
        .filter(|_| matrices)
        .and_then(|c| OutputStart::of(c, out.shape));
    if let (Some(c), None) = (c, &start) {
        broadcast_into(c, out.shape, dst);
    }
    let lhs = MatStack::new(a, &geo.batch, Side::Left)?;
    let rhs = MatStack::new(b, &geo.batch, Side::Right)?;
    batched_product(dst, &lhs, &rhs, epilogue, start)?;
    Ok(Data::contiguous(storage, out.shape))
}

/// The value an output starts from before a product is added to it: an
/// operand broadcast to the output, read as a `rows x cols` matrix (every
/// dimension but the last folded into rows) with non-negative strides; a
/// bias vector is `rs = 0, cs = 1`.
///
/// A large product fills each block of its output from it inside the task
/// that computes the block, just before the product is added: the fill is
/// split over the cores with the product and the block is in cache when
/// the product reads it back. On 2 cores, `addmm` of 256x784 by 784x1024
/// with a bias row took 29-50 us longer than the plain product when the
/// bias was broadcast whole first, and -3 to 24 us longer this way.
#[derive(Clone, Copy)]
pub(crate) struct OutputStart<'a, T> {
    data: &'a [T],
    offset: usize,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T: Pod> OutputStart<'a, T> {
    /// `c` broadcast to `shape`, if it reads as rows of that shape with
    /// non-negative strides and every element it reaches is in its buffer.
    fn of(c: &'a Operand<'_>, shape: &[usize]) -> Option<Self> {
        let (&cols, lead) = shape.split_last()?;
        let strides = broadcast_strides(c, shape);
        let (&cs, lead_strides) = strides.split_last()?;
        // One row stride for every leading dimension: the innermost one
        // longer than 1 gives it, each outer one must step over the rows
        // inside it.
        let rs = lead
            .iter()
            .zip(lead_strides)
            .rev()
            .find(|(n, _)| **n > 1)
            .map_or(0, |(_, &st)| st);
        let mut inner_rows = 1isize;
        for (&n, &st) in lead.iter().zip(lead_strides).rev() {
            if n > 1 && st != rs * inner_rows {
                return None;
            }
            inner_rows *= n as isize;
        }
        let rows: usize = lead.iter().product();
        let (rs, cs) = (usize::try_from(rs).ok()?, usize::try_from(cs).ok()?);
        let data = c.data.raw::<T>();
        let offset = c.data.offset;
        let last = offset + rows.saturating_sub(1) * rs + cols.saturating_sub(1) * cs;
        (rows * cols == 0 || last < data.len()).then_some(OutputStart {
            data,
            offset,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// Row `i`, columns `cols`, into `dst` (of the same length).
    fn fill_row(&self, i: usize, cols: Range<usize>, dst: &mut [T]) {
        let at = self.offset + i * self.rs + cols.start * self.cs;
        match self.cs {
            0 => dst.fill(self.data[at]),
            1 => dst.copy_from_slice(&self.data[at..at + dst.len()]),
            cs => {
                for (j, x) in dst.iter_mut().enumerate() {
                    *x = self.data[at + j * cs];
                }
            }
        }
    }

    /// The whole of `dst`, which has this start's rows and columns.
    fn fill_matrix(&self, dst: &mut MatMut<'_, T>) -> Result<()> {
        if (dst.rows, dst.cols) != (self.rows, self.cols) {
            return Err(Error::runtime(
                "matmul",
                format!(
                    "internal error: a {}x{} start for a {}x{} output",
                    self.rows, self.cols, dst.rows, dst.cols
                ),
            ));
        }
        for i in 0..self.rows {
            self.fill_row(i, 0..self.cols, dst.row_mut(i));
        }
        Ok(())
    }
}

/// Copies `c` broadcast to `shape` into the contiguous `dst`, a row at a
/// time (a bias row is one memcpy per output row, not a walk per element).
pub(crate) fn broadcast_into<T: Pod>(c: &Operand<'_>, shape: &[usize], dst: &mut [T]) {
    let strides = broadcast_strides(c, shape);
    let src = Strided {
        shape,
        strides: &strides,
        offset: c.data.offset as isize,
    };
    gather(c.data.raw::<T>(), src, dst);
}

// ---------------------------------------------------------------------------
// Strided matrices
// ---------------------------------------------------------------------------

/// A strided matrix inside a slice: element `(i, j)` is
/// `data[offset + i * rs + j * cs]`.
///
/// Invariant (checked by [`MatRef::new`], relied on by the gemm calls):
/// `rs, cs >= 1`, and unless the matrix is empty every element's index is
/// inside `data`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MatRef<'a, T> {
    data: &'a [T],
    offset: usize,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T: Pod> MatRef<'a, T> {
    /// A checked view; errors (an internal bug, never user input) if an
    /// element would fall outside `data`.
    pub(crate) fn new(
        data: &'a [T],
        offset: usize,
        (rows, cols): (usize, usize),
        (rs, cs): (usize, usize),
    ) -> Result<Self> {
        let last = if rows == 0 || cols == 0 {
            Some(0)
        } else {
            (rows - 1)
                .checked_mul(rs)
                .and_then(|r| (cols - 1).checked_mul(cs).and_then(|c| r.checked_add(c)))
                .and_then(|e| e.checked_add(offset))
        };
        let inside = last.is_some_and(|l| rows == 0 || cols == 0 || l < data.len());
        if rs == 0 || cs == 0 || !inside {
            return Err(Error::runtime(
                "matmul",
                format!(
                    "internal: a {rows}x{cols} matrix at offset {offset} with strides \
                     ({rs}, {cs}) does not fit in {} elements",
                    data.len()
                ),
            ));
        }
        Ok(MatRef {
            data,
            offset,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// A contiguous row-major matrix.
    pub(crate) fn row_major(data: &'a [T], rows: usize, cols: usize) -> Result<Self> {
        Self::new(data, 0, (rows, cols), (cols.max(1), 1))
    }

    #[inline(always)]
    fn at(&self, i: usize, j: usize) -> T {
        self.data[self.offset + i * self.rs + j * self.cs]
    }

    /// Rows `start..start + rows`, checked like [`MatRef::new`].
    fn rows_from(&self, start: usize, rows: usize) -> Result<Self> {
        let offset = start
            .checked_mul(self.rs)
            .and_then(|o| o.checked_add(self.offset))
            .ok_or_else(|| Error::runtime("matmul", "internal: rows out of range"))?;
        Self::new(self.data, offset, (rows, self.cols), (self.rs, self.cs))
    }

    /// The elements in row-major order.
    fn to_row_major<U>(self, f: impl Fn(T) -> U) -> Vec<U> {
        let mut v = Vec::with_capacity(self.rows * self.cols);
        for i in 0..self.rows {
            for j in 0..self.cols {
                v.push(f(self.at(i, j)));
            }
        }
        v
    }
}

/// A row-major output matrix inside a slice: element `(i, j)` is
/// `data[i * rs + j]`.
///
/// Invariant (checked by [`MatMut::new`]): rows do not overlap (`rs >= cols`)
/// and unless the matrix is empty every element's index is inside `data`.
#[derive(Debug)]
pub(crate) struct MatMut<'a, T> {
    data: &'a mut [T],
    rows: usize,
    cols: usize,
    rs: usize,
}

impl<'a, T: Pod> MatMut<'a, T> {
    /// A checked view; errors (an internal bug) if it does not fit `data`.
    pub(crate) fn new(data: &'a mut [T], rows: usize, cols: usize, rs: usize) -> Result<Self> {
        let fits = rows == 0
            || cols == 0
            || (rs >= cols
                && (rows - 1)
                    .checked_mul(rs)
                    .and_then(|r| r.checked_add(cols))
                    .is_some_and(|e| e <= data.len()));
        if !fits {
            return Err(Error::runtime(
                "matmul",
                format!(
                    "internal: a {rows}x{cols} output with row stride {rs} does not fit in {} elements",
                    data.len()
                ),
            ));
        }
        Ok(MatMut {
            data,
            rows,
            cols,
            rs,
        })
    }

    /// Row `i` (the first `cols` elements of its stride).
    #[inline(always)]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        &mut self.data[i * self.rs..i * self.rs + self.cols]
    }

    /// The first `rows` rows and the rest, as two outputs.
    fn split_rows(self, rows: usize) -> (Self, Self) {
        let rows = rows.min(self.rows);
        let at = (rows * self.rs).min(self.data.len());
        let (head, tail) = self.data.split_at_mut(at);
        let (cols, rs) = (self.cols, self.rs);
        (
            MatMut {
                data: head,
                rows,
                cols,
                rs,
            },
            MatMut {
                data: tail,
                rows: self.rows - rows,
                cols,
                rs,
            },
        )
    }

    fn for_each_row(&mut self, mut f: impl FnMut(&mut [T])) {
        for i in 0..self.rows {
            f(self.row_mut(i));
        }
    }
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// How a product is combined with the destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Epilogue {
    /// `dst = a @ b`.
    Store,
    /// `dst = alpha * (a @ b) + beta * dst`; with `beta == 0` the old `dst`
    /// is not read at all.
    Accumulate { alpha: f32, beta: f32 },
}

/// Element types with a matrix product kernel.
pub(crate) trait MatKernel: Element + Pod {
    /// `dst (op)= a @ b` for one matrix; `parallel` allows splitting the
    /// work over the rayon pool.
    fn product(
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        epilogue: Epilogue,
        parallel: bool,
    ) -> Result<()>;

    /// As [`product`](Self::product), with the output starting as `start`
    /// (which it must read as `Epilogue::Accumulate` with `beta != 0`);
    /// kernels that split their work may fill each block in its own task.
    fn product_from(
        mut dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        epilogue: Epilogue,
        parallel: bool,
        start: OutputStart<'_, Self>,
    ) -> Result<()> {
        start.fill_matrix(&mut dst)?;
        Self::product(dst, a, b, epilogue, parallel)
    }
}

pub(crate) fn check_dims<T>(
    dst: &MatMut<'_, T>,
    a: &MatRef<'_, T>,
    b: &MatRef<'_, T>,
) -> Result<()> {
    if a.cols != b.rows || dst.rows != a.rows || dst.cols != b.cols {
        return Err(Error::runtime(
            "matmul",
            format!(
                "internal: cannot store a {}x{} @ {}x{} product in a {}x{} matrix",
                a.rows, a.cols, b.rows, b.cols, dst.rows, dst.cols
            ),
        ));
    }
    Ok(())
}

/// The element types the `gemm` crate multiplies natively.
pub(crate) trait GemmNative: Element + Pod {
    fn from_f32(v: f32) -> Self;
    /// `self * s` in the type's own precision.
    fn scaled(self, s: f32) -> Self;
    /// The narrow-side kernel ([`narrow`]) for an `m x k` by `k x n`
    /// product whose `a` has strides `(a_rs, a_cs)`, if one suits it.
    fn narrow_kind(_m: usize, _k: usize, _n: usize, _a: (usize, usize)) -> Option<narrow::Narrow> {
        None
    }
    /// The product by the kernel `narrow_kind` chose.
    fn narrow_product(
        _kind: narrow::Narrow,
        _dst: MatMut<'_, Self>,
        _a: MatRef<'_, Self>,
        _b: MatRef<'_, Self>,
        _combine: narrow::Combine,
        _parallel: bool,
    ) -> Result<()> {
        Err(Error::runtime(
            "matmul",
            format!("internal: no narrow product kernel for {}", Self::DTYPE),
        ))
    }
}
impl GemmNative for f32 {
    fn from_f32(v: f32) -> Self {
        v
    }
    fn scaled(self, s: f32) -> Self {
        self * s
    }
    fn narrow_kind(
        m: usize,
        k: usize,
        n: usize,
        (a_rs, a_cs): (usize, usize),
    ) -> Option<narrow::Narrow> {
        narrow::Narrow::choose(m, k, n, a_rs, a_cs)
    }
    fn narrow_product(
        kind: narrow::Narrow,
        dst: MatMut<'_, Self>,
        a: MatRef<'_, Self>,
        b: MatRef<'_, Self>,
        combine: narrow::Combine,
        parallel: bool,
    ) -> Result<()> {
        narrow::product(kind, dst, a, b, combine, parallel)
    }
}
impl GemmNative for f64 {
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    fn scaled(self, s: f32) -> Self {
        self * s as f64
    }
}
impl GemmNative for crate::dtype::Complex64 {
    fn from_f32(v: f32) -> Self {
        crate::dtype::Complex64::new(v, 0.0)
    }
    fn scaled(self, s: f32) -> Self {
        self * s
    }
}

/// One product through `gemm::gemm`.
pub(crate) fn gemm_product<T: GemmNative>(
    dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    epilogue: Epilogue,
    parallel: bool,
) -> Result<()> {
    gemm_product_from(dst, a, b, epilogue, parallel, None)
}

/// One product through `gemm::gemm`, the output starting as `start` when
/// the epilogue reads it.
fn gemm_product_from<T: GemmNative>(
    mut dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    epilogue: Epilogue,
    parallel: bool,
    start: Option<OutputStart<'_, T>>,
) -> Result<()> {
    check_dims(&dst, &a, &b)?;
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return Ok(());
    }
    // gemm computes dst := dst_scale * dst + product_scale * (a @ b),
    // reading dst only when `read_dst`.
    let (read_dst, dst_scale, product_scale) = match epilogue {
        Epilogue::Store => (false, 0.0, 1.0),
        Epilogue::Accumulate { alpha, beta: 0.0 } => (false, 0.0, alpha),
        Epilogue::Accumulate { alpha, beta } => (true, beta, alpha),
    };
    let start = start.filter(|_| read_dst);
    if let Some(kind) = T::narrow_kind(m, k, n, (a.rs, a.cs)) {
        if let Some(start) = start {
            start.fill_matrix(&mut dst)?;
        }
        let combine = narrow::Combine {
            alpha: product_scale,
            beta: read_dst.then_some(dst_scale),
        };
        return T::narrow_product(kind, dst, a, b, combine, parallel);
    }
    let split = parallel && worth_splitting_product(m, n, k);
    if let (Some(start), false) = (start, split) {
        start.fill_matrix(&mut dst)?;
    }
    if k == 0 {
        // Empty sum: dst = dst_scale * dst (or 0). Handled here so the gemm
        // call below always has in-bounds operand pointers.
        dst.for_each_row(|row| {
            for x in row {
                *x = if read_dst {
                    x.scaled(dst_scale)
                } else {
                    T::from_f32(0.0)
                };
            }
        });
        return Ok(());
    }
    let operands = GemmOperands::new(
        &mut dst,
        &a,
        &b,
        read_dst,
        T::from_f32(dst_scale),
        T::from_f32(product_scale),
        start.filter(|_| split),
    );
    if split {
        split_product(&operands, m, n);
    } else {
        // SAFETY: the whole output, on this thread only.
        unsafe { operands.block(0..m, 0..n, Parallelism::None) };
    }
    Ok(())
}

/// At most this many pool threads split a product into slabs themselves
/// (`split_product`); with more, each slab would repack the whole other
/// operand, and gemm's own scheme, which shares one packed copy, is used.
const MAX_SLAB_THREADS: usize = 4;

/// Splits a large product into one slab of the output's longer
/// side per thread, each a single-threaded gemm call. On 2 cores, for
/// `x @ w.T` of 256x784 by 784x1024 (a linear layer's forward pass) this
/// took 0.86-0.89 ms where gemm's own parallel scheme took 0.98-1.01; for
/// products without a transposed operand the two were within 3%.
fn split_product<T: GemmNative>(operands: &GemmOperands<'_, T>, m: usize, n: usize) {
    let threads = rayon::current_num_threads();
    if threads > MAX_SLAB_THREADS {
        // SAFETY: the whole output, by gemm's own threads only.
        on_pool(|| unsafe { operands.block(0..m, 0..n, Parallelism::Rayon(0)) });
        return;
    }
    let by_columns = n >= m;
    let len = if by_columns { n } else { m };
    // Slab edges on 16-element boundaries: a cache line of f32 output.
    let slab = len.div_ceil(threads).next_multiple_of(16);
    for_each_task(len.div_ceil(slab), |s| {
        let range = s * slab..len.min((s + 1) * slab);
        // SAFETY: slabs are disjoint ranges of rows or columns within the
        // output, one per task, so no two tasks touch one element.
        unsafe {
            if by_columns {
                operands.block(0..m, range, Parallelism::None)
            } else {
                operands.block(range, 0..n, Parallelism::None)
            }
        }
    });
}

/// A checked product `dst := dst_scale * dst (when read_dst) +
/// product_scale * (a @ b)` as gemm takes it: base pointers and element
/// strides, borrowed from the matrices for `'a`.
struct GemmOperands<'a, T> {
    dst: *mut T,
    dst_rs: isize,
    a: *const T,
    a_rs: isize,
    a_cs: isize,
    b: *const T,
    b_rs: isize,
    b_cs: isize,
    k: usize,
    read_dst: bool,
    dst_scale: T,
    product_scale: T,
    /// What each block is filled with before the product is added to it.
    start: Option<OutputStart<'a, T>>,
    _borrows: std::marker::PhantomData<(&'a mut [T], &'a [T])>,
}

// SAFETY: the tasks of one `split_product` share the operands. Each task
// writes a block of `dst` that no other task reads or writes (disjoint slabs)
// and only reads `a`, `b` and `start`; `dst` is borrowed `&mut` and `a`, `b` shared
// for `'a`, which outlives every task (the parallel loop joins them before
// `gemm_product` returns), so no one else touches these elements meanwhile.
// The pointers are plain addresses of `T: Send + Sync` numbers.
unsafe impl<T: Send + Sync> Send for GemmOperands<'_, T> {}
// SAFETY: see `Send` above; shared access only ever reads the fields.
unsafe impl<T: Send + Sync> Sync for GemmOperands<'_, T> {}

impl<'a, T: GemmNative> GemmOperands<'a, T> {
    /// The operands of `dst := ... a @ b`, checked by `check_dims` with
    /// `m, n, k >= 1`.
    fn new(
        dst: &'a mut MatMut<'_, T>,
        a: &'a MatRef<'_, T>,
        b: &'a MatRef<'_, T>,
        read_dst: bool,
        dst_scale: T,
        product_scale: T,
        start: Option<OutputStart<'a, T>>,
    ) -> Self {
        GemmOperands {
            dst: dst.data.as_mut_ptr(),
            dst_rs: dst.rs as isize,
            a: a.data[a.offset..].as_ptr(),
            a_rs: a.rs as isize,
            a_cs: a.cs as isize,
            b: b.data[b.offset..].as_ptr(),
            b_rs: b.rs as isize,
            b_cs: b.cs as isize,
            k: a.cols,
            read_dst,
            dst_scale,
            product_scale,
            start,
            _borrows: std::marker::PhantomData,
        }
    }

    /// Rows `rows` and columns `cols` of the output, from the same rows of
    /// `a` and columns of `b`.
    ///
    /// # Safety
    ///
    /// `rows` lies within the output's rows and `cols` within its columns,
    /// and no other thread reads or writes that block meanwhile.
    unsafe fn block(&self, rows: Range<usize>, cols: Range<usize>, parallelism: Parallelism) {
        if rows.is_empty() || cols.is_empty() {
            return;
        }
        let (i0, j0) = (rows.start as isize, cols.start as isize);
        if let Some(start) = &self.start {
            for i in rows.clone() {
                // SAFETY: row `i`, columns `cols` of the output: inside it
                // (`MatMut::new` checked every row's `cols` elements, and
                // the caller keeps the block inside), and the caller's
                // block, which no one else touches meanwhile.
                let row = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.dst.offset(i as isize * self.dst_rs + j0),
                        cols.len(),
                    )
                };
                start.fill_row(i, cols.clone(), row);
            }
        }
        // SAFETY: gemm reads lhs(i, p) at a + i*a_rs + p*a_cs for i < m,
        // p < k, rhs(p, j) at b + p*b_rs + j*b_cs for j < n, and reads and
        // writes dst(i, j) at dst + i*dst_rs + j. `MatRef::new` checked that
        // every element of `a` and `b` these reach for the whole product
        // lies inside its slice, and `MatMut::new` the same for `dst` with
        // non-overlapping rows (`rs >= cols`); the block's offsets (`i0`
        // rows, `j0` columns in) stay inside those, as the caller promises.
        // gemm's writes alias neither each other nor any read (`dst` is a
        // `&mut` borrow, disjoint from the shared `a` and `b`), and the
        // caller keeps other threads off the block. T is one of f32, f64 or
        // Complex64 (= gemm::c32), types gemm supports, so its dispatch does
        // not panic.
        unsafe {
            gemm::gemm(
                rows.len(),
                cols.len(),
                self.k,
                self.dst.offset(i0 * self.dst_rs + j0),
                1,
                self.dst_rs,
                self.read_dst,
                self.a.offset(i0 * self.a_rs),
                self.a_cs,
                self.a_rs,
                self.b.offset(j0 * self.b_cs),
                self.b_cs,
                self.b_rs,
                self.dst_scale,
                self.product_scale,
                false,
                false,
                false,
                parallelism,
            );
        }
    }
}

macro_rules! gemm_kernel {($($t:ty),*) => {$(
    impl MatKernel for $t {
        fn product(dst: MatMut<'_, Self>, a: MatRef<'_, Self>, b: MatRef<'_, Self>,
                   epilogue: Epilogue, parallel: bool) -> Result<()> {
            gemm_product(dst, a, b, epilogue, parallel)
        }

        fn product_from(dst: MatMut<'_, Self>, a: MatRef<'_, Self>, b: MatRef<'_, Self>,
                        epilogue: Epilogue, parallel: bool,
                        start: OutputStart<'_, Self>) -> Result<()> {
            gemm_product_from(dst, a, b, epilogue, parallel, Some(start))
        }
    }
)*}}
gemm_kernel!(f32, f64, crate::dtype::Complex64);

/// Half-precision products are widened to f32, multiplied by gemm, and
/// rounded once: the sums accumulate in f32, as numpy and MLX do (gemm's
/// own f16 matrix-vector path accumulates in f16, several ulps off).
macro_rules! widened_kernel {($($t:ty),*) => {$(
    impl MatKernel for $t {
        fn product(
            mut dst: MatMut<'_, Self>,
            a: MatRef<'_, Self>,
            b: MatRef<'_, Self>,
            epilogue: Epilogue,
            parallel: bool,
        ) -> Result<()> {
            check_dims(&dst, &a, &b)?;
            let (m, k, n) = (a.rows, a.cols, b.cols);
            let wa = a.to_row_major(f32::from);
            let wb = b.to_row_major(f32::from);
            let mut wd = vec![0f32; m * n];
            if matches!(epilogue, Epilogue::Accumulate { beta, .. } if beta != 0.0) {
                for i in 0..m {
                    for (w, &x) in wd[i * n..(i + 1) * n].iter_mut().zip(dst.row_mut(i).iter()) {
                        *w = x.to_f32();
                    }
                }
            }
            gemm_product(
                MatMut::new(&mut wd, m, n, n)?,
                MatRef::row_major(&wa, m, k)?,
                MatRef::row_major(&wb, k, n)?,
                epilogue,
                parallel,
            )?;
            for i in 0..m {
                for (x, &w) in dst.row_mut(i).iter_mut().zip(&wd[i * n..(i + 1) * n]) {
                    *x = <$t>::from_f32(w);
                }
            }
            Ok(())
        }
    }
)*}}
widened_kernel!(f16, bf16);

/// Columns of the output handled per pass of the integer loop: a block of
/// the output row stays in L1 while rows of `b` stream past it.
pub(crate) const LOOP_COL_BLOCK: usize = 512;

/// The integer and bool product: a plain loop accumulating (wrapping) in `T`.
pub(crate) fn loop_product<T: Arith>(
    mut dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    epilogue: Epilogue,
    parallel: bool,
) -> Result<()> {
    check_dims(&dst, &a, &b)?;
    if epilogue != Epilogue::Store {
        return Err(Error::dtype(
            "addmm",
            format!("dtype {} is not supported", T::DTYPE),
        ));
    }
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return Ok(());
    }
    // The inner loop wants contiguous rows of b; copy once if they are not.
    let packed;
    let b = if b.cs == 1 {
        b
    } else {
        packed = b.to_row_major(|x| x);
        MatRef::row_major(&packed, k, n)?
    };
    let row = |i: usize, out: &mut [T]| {
        simd(|| {
            out.fill(T::default());
            for j0 in (0..n).step_by(LOOP_COL_BLOCK) {
                let j1 = (j0 + LOOP_COL_BLOCK).min(n);
                let out = &mut out[j0..j1];
                for p in 0..k {
                    let x = a.at(i, p);
                    let start = b.offset + p * b.rs;
                    for (o, &y) in out.iter_mut().zip(&b.data[start + j0..start + j1]) {
                        *o = T::add(*o, T::mul(x, y));
                    }
                }
            }
        })
    };
    let rs = dst.rs;
    if parallel && worth_splitting(m.saturating_mul(n).saturating_mul(k)) && m > 1 {
        dst.data
            .par_chunks_mut(rs)
            .take(m)
            .enumerate()
            .for_each(|(i, r)| row(i, &mut r[..n]));
    } else {
        for i in 0..m {
            row(i, dst.row_mut(i));
        }
    }
    Ok(())
}

macro_rules! loop_kernel {($($t:ty),*) => {$(
    impl MatKernel for $t {
        fn product(dst: MatMut<'_, Self>, a: MatRef<'_, Self>, b: MatRef<'_, Self>,
                   epilogue: Epilogue, parallel: bool) -> Result<()> {
            loop_product(dst, a, b, epilogue, parallel)
        }
    }
)*}}
loop_kernel!(bool, u8, u16, u32, u64, i8, i16, i32, i64);

// ---------------------------------------------------------------------------
// Batched products
// ---------------------------------------------------------------------------

/// Which operand of `a @ b` a stack is (matters for 1-D operands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Left,
    Right,
}

/// An operand seen as one matrix per output batch (broadcast batches repeat
/// the same offset). Its matrix strides are positive; inputs whose strides
/// are not (broadcast or reversed matrix dimensions) are copied to a
/// contiguous buffer first.
pub(crate) struct MatStack<'a, T: Clone + 'static> {
    data: Cow<'a, [T]>,
    offsets: Vec<usize>,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a, T: Pod> MatStack<'a, T> {
    fn new(x: &Operand<'a>, batch: &[usize], side: Side) -> Result<Self> {
        let strided = Self::with_strides(
            x,
            batch,
            side,
            x.data.raw::<T>(),
            &x.data.strides,
            x.data.offset,
        )?;
        if let Some(stack) = strided {
            return Ok(stack);
        }
        let copy = x.data.to_vec::<T>(x.shape);
        let strides = row_major_strides(x.shape);
        Self::with_strides(x, batch, side, copy, &strides, 0)?.ok_or_else(|| {
            Error::runtime(
                "matmul",
                "internal: a contiguous copy has non-positive strides",
            )
        })
    }

    /// The stack over `data` with the given layout, or `None` if a matrix
    /// stride is not positive.
    fn with_strides(
        x: &Operand<'_>,
        batch: &[usize],
        side: Side,
        data: impl Into<Cow<'a, [T]>>,
        strides: &[isize],
        offset: usize,
    ) -> Result<Option<Self>> {
        let nd = x.shape.len();
        let (rows, cols, rs, cs) = match (nd, side) {
            (0, _) => return Err(Error::runtime("matmul", "internal: 0-d operand")),
            (1, Side::Left) => (1, x.shape[0], 1, strides[0]),
            (1, Side::Right) => (x.shape[0], 1, strides[0], 1),
            _ => (
                x.shape[nd - 2],
                x.shape[nd - 1],
                strides[nd - 2],
                strides[nd - 1],
            ),
        };
        // A dimension of size 1 is never stepped along: any stride will do.
        let rs = if rows <= 1 { 1 } else { rs };
        let cs = if cols <= 1 { 1 } else { cs };
        if rs <= 0 || cs <= 0 {
            return Ok(None);
        }
        let own_batch = &x.shape[..nd.saturating_sub(2)];
        let pad = batch.len() - own_batch.len();
        let batch_strides: Vec<[isize; 1]> = (0..batch.len())
            .map(|d| {
                if d < pad || own_batch[d - pad] == 1 {
                    [0]
                } else {
                    [strides[d - pad]]
                }
            })
            .collect();
        let mut offsets = Vec::with_capacity(batch.iter().product());
        let mut negative = false;
        walk(
            batch,
            &batch_strides,
            [offset as isize],
            |[o]| match usize::try_from(o) {
                Ok(o) => offsets.push(o),
                Err(_) => negative = true,
            },
        );
        if negative {
            return Err(Error::runtime("matmul", "internal: negative batch offset"));
        }
        Ok(Some(MatStack {
            data: data.into(),
            offsets,
            rows,
            cols,
            rs: rs as usize,
            cs: cs as usize,
        }))
    }

    fn len(&self) -> usize {
        self.offsets.len()
    }

    /// The whole stack as one matrix of `len * rows` rows, when its
    /// matrices are consecutive row blocks of one strided matrix (each
    /// batch starts where the previous one's rows would continue).
    fn as_one_matrix(&self) -> Option<MatRef<'_, T>> {
        let [first, second, ..] = self.offsets[..] else {
            return None;
        };
        // One row per matrix: the batch step is the row stride.
        let rs = if self.rows == 1 {
            second.checked_sub(first)?
        } else {
            self.rs
        };
        let consecutive = self.offsets.iter().enumerate().all(|(i, &o)| {
            i.checked_mul(self.rows * rs)
                .and_then(|d| d.checked_add(first))
                == Some(o)
        });
        if rs == 0 || !consecutive {
            return None;
        }
        MatRef::new(
            &self.data,
            first,
            (self.offsets.len() * self.rows, self.cols),
            (rs, self.cs),
        )
        .ok()
    }

    /// Whether every batch entry is the same matrix (a broadcast operand).
    fn is_one_matrix(&self) -> bool {
        self.offsets.windows(2).all(|w| w[0] == w[1])
    }

    fn matrix(&self, i: usize) -> Result<MatRef<'_, T>> {
        let offset = *self
            .offsets
            .get(i)
            .ok_or_else(|| Error::runtime("matmul", format!("internal: no batch {i}")))?;
        MatRef::new(
            &self.data,
            offset,
            (self.rows, self.cols),
            (self.rs, self.cs),
        )
    }
}

/// A stack of products below this many multiply-adds each is split over
/// the cores by batch (through rayon) instead of product by product; a
/// single product this large always splits ([`worth_splitting_product`]).
///
/// Handing work to rayon's pool costs tens of microseconds of wake-ups
/// and hand-offs, more than splitting saves below a few million
/// multiply-adds. Measured with gemm on 2 cores through rayon: 256x512x10
/// takes 35 us on one thread against 57 us split, 128^3 18 against 41,
/// 192^3 breaks even, 256^3 136 against 81.
pub(crate) const SMALL_PRODUCT: usize = 1 << 22;

/// Whether one product is split over the cores (`split_product`). Its
/// slabs run as a team section, which costs a few microseconds where the
/// pool's hand-off cost tens ([`SMALL_PRODUCT`]'s measurements), so
/// products from half a million multiply-adds split, unless their inner
/// dimension is short: then writing the output dominates, and two slabs
/// took longer than one (on 2 cores, 256x10x512: 12.5 us on one thread,
/// 24 split). Measured (medians of 1900 calls): the perceptron step's
/// 256x512x10 went from 33 to 18 us, its 512x256x10 with a transposed
/// operand from 37 to 18, 128^3 from 18 to 9, 64x512x64 from 19 to 13.
fn worth_splitting_product(m: usize, n: usize, k: usize) -> bool {
    let work = m.saturating_mul(n).saturating_mul(k);
    work >= SMALL_PRODUCT || (work >= SPLIT_PRODUCT && k >= SPLIT_MIN_INNER)
}

/// The smallest product [`worth_splitting_product`] splits.
const SPLIT_PRODUCT: usize = 1 << 19;
/// The shortest inner dimension of a product below [`SMALL_PRODUCT`] that
/// [`worth_splitting_product`] splits.
const SPLIT_MIN_INNER: usize = 64;

/// `dst[i] (op)= lhs[i] @ rhs[i]` for every batch `i`; `dst` is the
/// contiguous output, one `m x n` matrix per batch.
pub(crate) fn batched_product<T: MatKernel>(
    dst: &mut [T],
    lhs: &MatStack<'_, T>,
    rhs: &MatStack<'_, T>,
    epilogue: Epilogue,
    start: Option<OutputStart<'_, T>>,
) -> Result<()> {
    let (m, k, n) = (lhs.rows, lhs.cols, rhs.cols);
    let per = m * n;
    if per == 0 || lhs.len() != rhs.len() || dst.len() != per * lhs.len() {
        return if dst.is_empty() {
            Ok(())
        } else {
            Err(Error::runtime(
                "matmul",
                "internal: output does not match the batch",
            ))
        };
    }
    let one = |i: usize, d: &mut [T], parallel: bool| {
        T::product(
            MatMut::new(d, m, n, n)?,
            lhs.matrix(i)?,
            rhs.matrix(i)?,
            epilogue,
            parallel,
        )
    };
    // A stack of row blocks times one shared matrix (`x @ w` with `x` of
    // shape [.., m, k] and `w` 2-D) is one tall product: one packing of
    // `w` and one parallel split instead of one per batch entry.
    if lhs.len() > 1 && rhs.is_one_matrix() {
        if let Some(tall) = lhs.as_one_matrix() {
            let (dst, rhs) = (MatMut::new(dst, m * lhs.len(), n, n)?, rhs.matrix(0)?);
            return match start {
                Some(start) => T::product_from(dst, tall, rhs, epilogue, true, start),
                None => T::product(dst, tall, rhs, epilogue, true),
            };
        }
    }
    if lhs.len() == 1
        && let Some(start) = start
    {
        let dst = MatMut::new(dst, m, n, n)?;
        return T::product_from(dst, lhs.matrix(0)?, rhs.matrix(0)?, epilogue, true, start);
    }
    if let Some(start) = start {
        let rows = dst.len() / n;
        start.fill_matrix(&mut MatMut::new(dst, rows, n, n)?)?;
    }
    let work = per.saturating_mul(k.max(1));
    if lhs.len() > 1 && work < SMALL_PRODUCT && worth_splitting(work.saturating_mul(lhs.len())) {
        dst.par_chunks_mut(per)
            .enumerate()
            .try_for_each(|(i, d)| one(i, d, false))
    } else {
        dst.chunks_mut(per)
            .enumerate()
            .try_for_each(|(i, d)| one(i, d, true))
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    /// `n` values in [-1, 1) from a fixed sequence.
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
            .collect()
    }

    /// `beta * c + alpha * (a @ b)` in f64, for row-major a (m x k), b (k x n).
    fn reference(
        a: &[f64],
        b: &[f64],
        c: &[f64],
        (m, k, n): (usize, usize, usize),
        alpha: f64,
        beta: f64,
    ) -> Vec<f64> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                out[i * n + j] = beta * c[i * n + j] + alpha * dot;
            }
        }
        out
    }

    #[test]
    fn addmm_starts_from_c_broadcast_or_strided_in_every_block() -> Result<()> {
        // Split (large) and whole (small) products, wide and tall; `c` a
        // bias row, a column, a full matrix, its transposed view, and for
        // a stack of row blocks (one tall product) a bias row and a full
        // 3-D `c`.
        let f32s = |v: &[f64], shape: &[usize]| Array::from_slice(v, shape)?.astype(DType::Float32);
        for &(m, k, n) in &[(64usize, 300usize, 517usize), (518, 200, 64), (6, 5, 7)] {
            let (av, bv) = (values(m * k, 1), values(k * n, 2));
            let a = f32s(&av, &[m, k])?;
            let b = f32s(&bv, &[k, n])?;
            let row = values(n, 3);
            let col = values(m, 4);
            let full = values(m * n, 5);
            let full_t = f32s(&full, &[n, m])?;
            let cases: Vec<(&str, Array, Vec<f64>)> = vec![
                (
                    "row",
                    f32s(&row, &[n])?,
                    (0..m * n).map(|e| row[e % n]).collect(),
                ),
                (
                    "column",
                    f32s(&col, &[m, 1])?,
                    (0..m * n).map(|e| col[e / n]).collect(),
                ),
                ("full", f32s(&full, &[m, n])?, full.clone()),
                (
                    "transposed view",
                    transpose(&full_t, None)?,
                    (0..m * n).map(|e| full[(e % n) * m + e / n]).collect(),
                ),
            ];
            for (name, c, cv) in cases {
                let want = reference(&av, &bv, &cv, (m, k, n), 2.0, 0.5);
                let got = addmm(&c, &a, &b, 2.0, 0.5)?.to_vec::<f32>()?;
                for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
                    let g = f64::from(*g);
                    assert!(
                        (g - w).abs() <= 1e-4 * (1.0 + w.abs()) * (k as f64).sqrt(),
                        "c {name}, {m}x{k}x{n}: element {idx} is {g}, want {w}"
                    );
                }
            }
            // A vector operand: the output drops a dimension, and `c` is
            // broadcast whole first.
            let v = f32s(&bv[..k], &[k])?;
            let want: Vec<f64> = (0..m)
                .map(|i| 0.5 * row[0] + 2.0 * (0..k).map(|p| av[i * k + p] * bv[p]).sum::<f64>())
                .collect();
            let got = addmm(&f32s(&row[..1], &[1])?, &a, &v, 2.0, 0.5)?;
            assert_eq!(got.shape(), &[m]);
            for (idx, (g, w)) in got.to_vec::<f32>()?.iter().zip(&want).enumerate() {
                let g = f64::from(*g);
                assert!(
                    (g - w).abs() <= 1e-4 * (1.0 + w.abs()) * (k as f64).sqrt(),
                    "matrix @ vector, {m}x{k}: element {idx} is {g}, want {w}"
                );
            }
            if m % 2 == 0 {
                let stacked = reshape(&a, &[2, (m / 2) as isize, k as isize])?;
                for (name, c, cv) in [
                    (
                        "row",
                        f32s(&row, &[n])?,
                        (0..m * n).map(|e| row[e % n]).collect::<Vec<_>>(),
                    ),
                    ("full", f32s(&full, &[2, m / 2, n])?, full.clone()),
                ] {
                    let want = reference(&av, &bv, &cv, (m, k, n), 1.0, 1.0);
                    let got = addmm(&c, &stacked, &b, 1.0, 1.0)?;
                    assert_eq!(got.shape(), &[2, m / 2, n]);
                    for (idx, (g, w)) in got.to_vec::<f32>()?.iter().zip(&want).enumerate() {
                        let g = f64::from(*g);
                        assert!(
                            (g - w).abs() <= 1e-4 * (1.0 + w.abs()) * (k as f64).sqrt(),
                            "stacked, c {name}, {m}x{k}x{n}: element {idx} is {g}, want {w}"
                        );
                    }
                }
            }
        }
        Ok(())
    }

    #[test]
    fn products_split_over_cores_match_a_loop() -> Result<()> {
        // Large enough to split (`worth_splitting_product`): above
        // SMALL_PRODUCT, and below it with a long inner dimension (the last
        // two, narrow like a classifier layer's); wide outputs split by
        // columns, tall ones by rows, sizes off the slab boundary; operands
        // given plainly and as transposed views; a plain product and an
        // accumulating one (addmm); float32 and float64.
        for &(m, k, n) in &[
            (64usize, 300usize, 517usize),
            (517, 200, 64),
            (300, 129, 300),
            (257, 520, 10),
            (10, 520, 257),
        ] {
            assert!(
                super::worth_splitting_product(m, n, k),
                "{m}x{k}x{n} splits"
            );
            let (av, bv, cv) = (values(m * k, 1), values(k * n, 2), values(m * n, 3));
            for dtype in [DType::Float32, DType::Float64] {
                let a = Array::from_slice(&av, &[m, k])?.astype(dtype)?;
                let b = Array::from_slice(&bv, &[k, n])?.astype(dtype)?;
                let c = Array::from_slice(&cv, &[m, n])?.astype(dtype)?;
                // The same matrices as transposes of their transposes.
                let at = transpose(&contiguous(&transpose(&a, None)?)?, None)?;
                let bt = transpose(&contiguous(&transpose(&b, None)?)?, None)?;
                let tol = if dtype == DType::Float32 { 1e-4 } else { 1e-12 };
                for (name, got, want) in [
                    (
                        "a @ b",
                        matmul(&a, &b)?,
                        reference(&av, &bv, &cv, (m, k, n), 1.0, 0.0),
                    ),
                    (
                        "aT' @ bT'",
                        matmul(&at, &bt)?,
                        reference(&av, &bv, &cv, (m, k, n), 1.0, 0.0),
                    ),
                    (
                        "addmm",
                        addmm(&c, &a, &bt, 2.0, 0.5)?,
                        reference(&av, &bv, &cv, (m, k, n), 2.0, 0.5),
                    ),
                ] {
                    let got = got.astype(DType::Float64)?.to_vec::<f64>()?;
                    for (idx, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - w).abs() <= tol * (1.0 + w.abs()) * (k as f64).sqrt(),
                            "{name} {m}x{k}x{n} {dtype}: element {idx} is {g}, want {w}"
                        );
                    }
                }
            }
        }
        Ok(())
    }
}
