//! Dense matrix decompositions through the faer crate: QR ([`qr`]), SVD
//! ([`svd`]), the Hermitian and the general eigenproblem ([`eigh`],
//! [`eig`]) and LU with partial pivoting ([`lu`]), batched over the
//! leading axes.
//!
//! A kernel reads its operand as row-major matrices of the operand's dtype
//! and computes in that precision, as LAPACK does (float32 stays float32),
//! then writes each output contiguously. The matrices of a batch are
//! independent and run on rayon's pool when there are several; faer also
//! splits a large matrix over threads. A matrix faer cannot decompose is an
//! error naming the op and the matrix's index in the batch, and a panic
//! inside faer is caught and turned into such an error, so a kernel never
//! unwinds into the evaluator.

pub mod eig;
pub mod eigh;
pub mod lu;
pub mod qr;
pub mod svd;

use super::elementwise::out_storage;
use crate::dtype::{Complex64, DType};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use faer::MatRef;
use faer::traits::{ComplexField, RealField};
use rayon::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// An element type the decompositions run on: `f32`, `f64` or
/// [`Complex64`]. `Part` is the real type of its magnitude (the dtype of
/// singular values and Hermitian eigenvalues).
pub trait Elem: ComplexField<Real = <Self as Elem>::Part> + Pod {
    /// The real counterpart (`f32` for `f32` and `Complex64`).
    type Part: RealField + Pod + Into<f64>;
    /// The complex conjugate (the value itself for reals).
    fn conjugate(self) -> Self;
    /// Whether the value is finite (both parts, for a complex value).
    fn is_finite_value(self) -> bool;
}

impl Elem for f32 {
    type Part = f32;
    fn conjugate(self) -> Self {
        self
    }
    fn is_finite_value(self) -> bool {
        self.is_finite()
    }
}

impl Elem for f64 {
    type Part = f64;
    fn conjugate(self) -> Self {
        self
    }
    fn is_finite_value(self) -> bool {
        self.is_finite()
    }
}

impl Elem for Complex64 {
    type Part = f32;
    fn conjugate(self) -> Self {
        self.conj()
    }
    fn is_finite_value(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
}

/// A batch of row-major `rows x cols` matrices read from an operand.
pub(crate) struct Matrices<T> {
    vals: Vec<T>,
    /// Rows of each matrix.
    pub rows: usize,
    /// Columns of each matrix.
    pub cols: usize,
    /// Number of matrices (the product of the leading axes).
    pub count: usize,
}

impl<T: Elem> Matrices<T> {
    /// The matrices of `x` (at least 2-D, checked by the op's builder).
    pub fn read(op: &str, x: &Operand<'_>) -> Result<Self> {
        let nd = x.shape.len();
        if nd < 2 {
            return Err(Error::runtime(
                op,
                format!("internal error: a matrix operand of shape {:?}", x.shape),
            ));
        }
        Ok(Matrices {
            vals: x.data.to_vec::<T>(x.shape),
            rows: x.shape[nd - 2],
            cols: x.shape[nd - 1],
            count: x.shape[..nd - 2].iter().product(),
        })
    }

    /// Matrix `i` of the batch.
    pub fn get(&self, i: usize) -> MatRef<'_, T> {
        let size = self.rows * self.cols;
        MatRef::from_row_major_slice(&self.vals[i * size..(i + 1) * size], self.rows, self.cols)
    }

    /// Whether every entry of matrix `i` is finite.
    pub fn finite(&self, i: usize) -> bool {
        let size = self.rows * self.cols;
        self.vals[i * size..(i + 1) * size]
            .iter()
            .all(|v| v.is_finite_value())
    }
}

/// Runs `f` on every matrix index `0..count` (in parallel when there are
/// several) and returns the results in order. The first failing matrix
/// (an `Err` message, or a panic inside faer) is an error naming `op`.
pub(crate) fn each<R: Send>(
    op: &str,
    count: usize,
    f: impl Fn(usize) -> std::result::Result<R, String> + Sync,
) -> Result<Vec<R>> {
    let run = |i: usize| match catch_unwind(AssertUnwindSafe(|| f(i))) {
        Ok(r) => r,
        Err(_) => Err("the decomposition failed (internal panic)".to_string()),
    };
    let results: Vec<std::result::Result<R, String>> = if count > 1 {
        (0..count).into_par_iter().map(run).collect()
    } else {
        (0..count).map(run).collect()
    };
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.map_err(|m| Error::value(op, format!("matrix {i} of the batch: {m}"))))
        .collect()
}

/// The row-major entries of `m`.
pub(crate) fn row_major<T: Copy>(m: MatRef<'_, T>) -> Vec<T> {
    let mut v = Vec::with_capacity(m.nrows() * m.ncols());
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            v.push(m[(i, j)]);
        }
    }
    v
}

/// The row-major `n x n` identity.
pub(crate) fn identity<T: ComplexField + Copy>(n: usize) -> Vec<T> {
    let mut v = vec![T::zero_impl(); n * n];
    for i in 0..n {
        v[i * n + i] = T::one_impl();
    }
    v
}

/// A new output holding the per-matrix parts one after another (each part
/// has the output's per-matrix size, checked).
pub(crate) fn concat<'a, T: Pod>(
    op: &str,
    out: OutSpec<'_>,
    parts: impl Iterator<Item = &'a [T]>,
) -> Result<Data> {
    let mut st = out_storage(out)?;
    let dst = st.as_mut_slice::<T>();
    let mut at = 0;
    for p in parts {
        let Some(d) = dst.get_mut(at..at + p.len()) else {
            return Err(Error::runtime(
                op,
                format!(
                    "internal error: results overflow an output of shape {:?}",
                    out.shape
                ),
            ));
        };
        d.copy_from_slice(p);
        at += p.len();
    }
    if at != dst.len() {
        return Err(Error::runtime(
            op,
            format!(
                "internal error: results underfill an output of shape {:?}",
                out.shape
            ),
        ));
    }
    Ok(Data::contiguous(st, out.shape))
}

/// The error for an operand dtype without a decomposition kernel.
pub(crate) fn no_kernel(op: &str, d: DType) -> Error {
    Error::dtype(op, format!("no kernel for {d}"))
}

/// The message for a matrix with NaN or infinite entries.
pub(crate) const NOT_FINITE: &str = "the matrix has NaN or infinite entries";
