//! CPU kernels of matrix products: the shape geometry, strided matrix
//! views, per-dtype kernels (gemm or a blocked loop) and the batched driver.
//!
//! Kernels (`MatKernel`): f32, f64 and complex64 go through the `gemm`
//! crate, which takes arbitrary positive row and column strides, so transposed
//! inputs are multiplied without a copy. float16 and bfloat16 are widened to
//! f32, multiplied, and rounded once. Integer and bool products use a blocked loop
//! that accumulates (wrapping) in the output type, like numpy.
//!
//! Parallelism: a stack of small matrices is split over cores by batch; a
//! large matrix is split inside gemm.

use crate::backend::cpu::binary::Arith;
use crate::backend::cpu::copy::{Strided, gather};
use crate::backend::cpu::elementwise::{broadcast_strides, out_storage};
use crate::backend::cpu::parallel::{on_pool, simd, worth_splitting};
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
    if let Some(c) = c {
        broadcast_into(c, out.shape, dst);
    }
    let lhs = MatStack::new(a, &geo.batch, Side::Left)?;
    let rhs = MatStack::new(b, &geo.batch, Side::Right)?;
    batched_product(dst, &lhs, &rhs, epilogue)?;
    Ok(Data::contiguous(storage, out.shape))
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
}
impl GemmNative for f32 {
    fn from_f32(v: f32) -> Self {
        v
    }
    fn scaled(self, s: f32) -> Self {
        self * s
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
    mut dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    epilogue: Epilogue,
    parallel: bool,
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
    if parallel && m.saturating_mul(n).saturating_mul(k) >= SMALL_PRODUCT {
        // gemm forks and joins once or twice per depth block: from the pool.
        on_pool(|| {
            gemm_call(
                dst,
                a,
                b,
                read_dst,
                dst_scale,
                product_scale,
                Parallelism::Rayon(0),
            )
        });
    } else {
        gemm_call(
            dst,
            a,
            b,
            read_dst,
            dst_scale,
            product_scale,
            Parallelism::None,
        );
    }
    Ok(())
}

/// `dst := dst_scale * dst (when read_dst) + product_scale * (a @ b)`
/// through `gemm::gemm`, for operands `check_dims` accepted with
/// `m, n, k >= 1`.
fn gemm_call<T: GemmNative>(
    dst: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    read_dst: bool,
    dst_scale: f32,
    product_scale: f32,
    parallelism: Parallelism,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let dst_ptr = dst.data.as_mut_ptr();
    let a_ptr = a.data[a.offset..].as_ptr();
    let b_ptr = b.data[b.offset..].as_ptr();
    // SAFETY: gemm reads lhs(i, p) at a_ptr + i*rs + p*cs for i < m, p < k,
    // rhs(p, j) at b_ptr + p*rs + j*cs for j < n, and reads/writes dst(i, j)
    // at dst_ptr + i*dst.rs + j. `MatRef::new` checked that every such
    // element of `a` and `b` lies inside its slice (m, n, k >= 1 here, so the
    // offsets themselves are in bounds, and the strides are >= 1), and
    // `MatMut::new` checked the same for `dst` with non-overlapping rows
    // (`rs >= cols`), so gemm's writes neither alias each other nor any read
    // (dst is a `&mut` borrow, disjoint from the shared `a` and `b`). T is one
    // of f32, f64 or Complex64 (= gemm::c32), types gemm supports, so its
    // dispatch does not panic.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst_ptr,
            1,
            dst.rs as isize,
            read_dst,
            a_ptr,
            a.cs as isize,
            a.rs as isize,
            b_ptr,
            b.cs as isize,
            b.rs as isize,
            T::from_f32(dst_scale),
            T::from_f32(product_scale),
            false,
            false,
            false,
            parallelism,
        );
    }
}

macro_rules! gemm_kernel {($($t:ty),*) => {$(
    impl MatKernel for $t {
        fn product(dst: MatMut<'_, Self>, a: MatRef<'_, Self>, b: MatRef<'_, Self>,
                   epilogue: Epilogue, parallel: bool) -> Result<()> {
            gemm_product(dst, a, b, epilogue, parallel)
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

/// Products below this many multiply-adds run on one thread, and a stack of
/// them is split over cores by batch instead.
///
/// Handing a product to the pool costs tens of microseconds of wake-ups
/// and hand-offs, more than splitting saves below a few million
/// multiply-adds. Measured with gemm on 2 cores: 256x512x10 takes 35 us on
/// one thread against 57 us split, 128^3 18 against 41, 192^3 breaks
/// even, 256^3 136 against 81. gemm's own threshold (48 * 48 * 256) would
/// split all but the first two.
pub(crate) const SMALL_PRODUCT: usize = 1 << 22;

/// `dst[i] (op)= lhs[i] @ rhs[i]` for every batch `i`; `dst` is the
/// contiguous output, one `m x n` matrix per batch.
pub(crate) fn batched_product<T: MatKernel>(
    dst: &mut [T],
    lhs: &MatStack<'_, T>,
    rhs: &MatStack<'_, T>,
    epilogue: Epilogue,
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
            let rows = m * lhs.len();
            return T::product(
                MatMut::new(dst, rows, n, n)?,
                tall,
                rhs.matrix(0)?,
                epilogue,
                true,
            );
        }
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
