//! Reduced QR by Householder reflections (faer): `A = Q R` with `Q`
//! `m x k` orthonormal columns and `R` `k x n` upper trapezoidal,
//! `k = min(m, n)`. Signs of `R`'s diagonal are faer's (they may differ
//! from LAPACK's by a row of `R` and the column of `Q` flipped together).

use super::{Elem, Matrices, concat, each, no_kernel, row_major};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};

/// `[Q, R]` of each matrix of `x` (`float32` or `float64`).
pub fn qr(x: &Operand<'_>, outs: [OutSpec<'_>; 2]) -> Result<Vec<Data>> {
    match x.dtype {
        DType::Float32 => typed::<f32>(x, outs),
        DType::Float64 => typed::<f64>(x, outs),
        d => Err(no_kernel("qr", d)),
    }
}

fn typed<T: Elem>(x: &Operand<'_>, [q_out, r_out]: [OutSpec<'_>; 2]) -> Result<Vec<Data>> {
    let a = Matrices::<T>::read("qr", x)?;
    let k = a.rows.min(a.cols);
    let parts = each("qr", if k == 0 { 0 } else { a.count }, |i| {
        let f = a.get(i).qr();
        let q = f.compute_thin_Q();
        Ok((row_major(q.as_ref()), row_major(f.thin_R())))
    })?;
    Ok(vec![
        concat("qr", q_out, parts.iter().map(|p| p.0.as_slice()))?,
        concat("qr", r_out, parts.iter().map(|p| p.1.as_slice()))?,
    ])
}
