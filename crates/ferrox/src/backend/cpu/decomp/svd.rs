//! Singular value decomposition (faer): `A = U diag(S) Vh` with `U`
//! `m x m`, `Vh` `n x n` (full factors, as numpy's default) and `S` the
//! `min(m, n)` singular values in non-increasing order, real for complex
//! inputs. An empty matrix with one non-zero side has identity factors.

use super::{Elem, Matrices, NOT_FINITE, concat, each, identity, no_kernel, row_major};
use crate::dtype::{Complex64, DType};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};

/// `[U, S, Vh]` (three `outs`) or `[S]` (one) of each matrix of `x`
/// (`float32`, `float64` or `complex64`).
pub fn svd(x: &Operand<'_>, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    match x.dtype {
        DType::Float32 => typed::<f32>(x, outs),
        DType::Float64 => typed::<f64>(x, outs),
        DType::Complex64 => typed::<Complex64>(x, outs),
        d => Err(no_kernel("svd", d)),
    }
}

/// One matrix's factors: `U`, `S`, `Vh` (the factors empty when not asked).
type Parts<T> = (Vec<T>, Vec<<T as Elem>::Part>, Vec<T>);

fn typed<T: Elem>(x: &Operand<'_>, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    let a = Matrices::<T>::read("svd", x)?;
    let (m, n) = (a.rows, a.cols);
    let uv = outs.len() == 3;
    let parts: Vec<Parts<T>> = each("svd", a.count, |i| {
        if m.min(n) == 0 {
            return Ok(if uv {
                (identity(m), Vec::new(), identity(n))
            } else {
                (Vec::new(), Vec::new(), Vec::new())
            });
        }
        if !a.finite(i) {
            return Err(NOT_FINITE.to_string());
        }
        let mat = a.get(i);
        if !uv {
            let s = mat.singular_values().map_err(|e| format!("{e:?}"))?;
            return Ok((Vec::new(), s, Vec::new()));
        }
        let f = mat.svd().map_err(|e| format!("{e:?}"))?;
        let s = f
            .S()
            .column_vector()
            .iter()
            .map(T::real_part_impl)
            .collect();
        // Vh is the conjugate transpose of faer's V.
        let v = f.V();
        let mut vh = Vec::with_capacity(n * n);
        for r in 0..n {
            for c in 0..n {
                vh.push(v[(c, r)].conjugate());
            }
        }
        Ok((row_major(f.U()), s, vh))
    })?;
    if !uv {
        let [s_out] = outs else {
            return Err(crate::error::Error::runtime(
                "svd",
                "internal error: svd needs 1 or 3 outputs",
            ));
        };
        return Ok(vec![concat(
            "svd",
            *s_out,
            parts.iter().map(|p| p.1.as_slice()),
        )?]);
    }
    Ok(vec![
        concat("svd", outs[0], parts.iter().map(|p| p.0.as_slice()))?,
        concat("svd", outs[1], parts.iter().map(|p| p.1.as_slice()))?,
        concat("svd", outs[2], parts.iter().map(|p| p.2.as_slice()))?,
    ])
}
