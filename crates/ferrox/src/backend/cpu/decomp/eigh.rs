//! Eigen-decomposition of symmetric / Hermitian matrices (faer): real
//! eigenvalues in non-decreasing order and orthonormal eigenvectors as the
//! columns of `V`, `A = V diag(w) V^H`. Only one triangle is read (the
//! lower one, or the upper one with `upper`), as numpy's `UPLO`.

use super::{Elem, Matrices, NOT_FINITE, concat, each, no_kernel, row_major};
use crate::dtype::{Complex64, DType};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use faer::{Mat, MatRef, Side};

/// `[w, V]` (two `outs`) or `[w]` (one) of each matrix of `x` (`float32`,
/// `float64` or `complex64`).
pub fn eigh(x: &Operand<'_>, upper: bool, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    match x.dtype {
        DType::Float32 => typed::<f32>(x, upper, outs),
        DType::Float64 => typed::<f64>(x, upper, outs),
        DType::Complex64 => typed::<Complex64>(x, upper, outs),
        d => Err(no_kernel("eigh", d)),
    }
}

fn typed<T: Elem>(x: &Operand<'_>, upper: bool, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    let a = Matrices::<T>::read("eigh", x)?;
    let vectors = outs.len() == 2;
    let n = a.rows;
    let parts: Vec<(Vec<T::Part>, Vec<T>)> = each("eigh", if n == 0 { 0 } else { a.count }, |i| {
        if !a.finite(i) {
            return Err(NOT_FINITE.to_string());
        }
        let mat = hermitian(a.get(i), upper);
        let mat = mat.as_ref();
        if !vectors {
            let w = mat
                .self_adjoint_eigenvalues(Side::Lower)
                .map_err(|e| format!("{e:?}"))?;
            return Ok((w, Vec::new()));
        }
        let f = mat
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| format!("{e:?}"))?;
        let w = f
            .S()
            .column_vector()
            .iter()
            .map(T::real_part_impl)
            .collect();
        Ok((w, row_major(f.U())))
    })?;
    let mut res = vec![concat(
        "eigh",
        outs[0],
        parts.iter().map(|p| p.0.as_slice()),
    )?];
    if vectors {
        res.push(concat(
            "eigh",
            outs[1],
            parts.iter().map(|p| p.1.as_slice()),
        )?);
    }
    Ok(res)
}

/// The Hermitian matrix that the named triangle of `a` defines: that
/// triangle, its conjugate mirrored across the diagonal, and the real part
/// of the diagonal (numpy's reading; faer would use a complex diagonal).
fn hermitian<T: Elem>(a: MatRef<'_, T>, upper: bool) -> Mat<T> {
    let n = a.nrows();
    Mat::from_fn(n, n, |i, j| {
        let (r, c) = if (i >= j) != upper { (i, j) } else { (j, i) };
        let v = a[(r, c)];
        if i == j {
            T::from_real_impl(&T::real_part_impl(&v))
        } else if (r, c) == (i, j) {
            v
        } else {
            v.conjugate()
        }
    })
}
