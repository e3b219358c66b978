//! Eigen-decomposition of general square matrices (faer): complex
//! eigenvalues `w` and eigenvectors as the columns of `V`, `A V = V
//! diag(w)`, each column scaled to unit 2-norm as numpy's. Real inputs
//! compute in their own precision; results are `complex64`.

use super::{Elem, Matrices, NOT_FINITE, concat, each, no_kernel};
use crate::dtype::{Complex64, DType};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use num_complex::Complex;

/// `[w, V]` (two `outs`) or `[w]` (one) of each matrix of `x` (`float32`,
/// `float64` or `complex64`), as `complex64`.
pub fn eig(x: &Operand<'_>, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    match x.dtype {
        DType::Float32 => typed::<f32>(x, outs),
        DType::Float64 => typed::<f64>(x, outs),
        DType::Complex64 => typed::<Complex64>(x, outs),
        d => Err(no_kernel("eig", d)),
    }
}

/// `z` rounded to complex64.
fn narrow<P: Into<f64> + Copy>(z: &Complex<P>) -> Complex64 {
    Complex64::new(z.re.into() as f32, z.im.into() as f32)
}

fn typed<T: Elem>(x: &Operand<'_>, outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
    let a = Matrices::<T>::read("eig", x)?;
    let vectors = outs.len() == 2;
    let n = a.rows;
    let parts: Vec<(Vec<Complex64>, Vec<Complex64>)> =
        each("eig", if n == 0 { 0 } else { a.count }, |i| {
            if !a.finite(i) {
                return Err(NOT_FINITE.to_string());
            }
            let mat = a.get(i);
            if !vectors {
                let w = mat.eigenvalues().map_err(|e| format!("{e:?}"))?;
                return Ok((w.iter().map(narrow).collect(), Vec::new()));
            }
            let f = mat.eigen().map_err(|e| format!("{e:?}"))?;
            let w = f.S().column_vector().iter().map(narrow).collect();
            let u = f.U();
            let mut v = vec![Complex64::new(0.0, 0.0); n * n];
            for c in 0..n {
                let norm = (0..n)
                    .map(|r| {
                        let z = u[(r, c)];
                        let (re, im): (f64, f64) = (z.re.into(), z.im.into());
                        re * re + im * im
                    })
                    .sum::<f64>()
                    .sqrt();
                let scale = if norm > 0.0 { 1.0 / norm } else { 1.0 };
                for r in 0..n {
                    let z = u[(r, c)];
                    let (re, im): (f64, f64) = (z.re.into(), z.im.into());
                    v[r * n + c] = Complex64::new((re * scale) as f32, (im * scale) as f32);
                }
            }
            Ok((w, v))
        })?;
    let mut res = vec![concat(
        "eig",
        outs[0],
        parts.iter().map(|p| p.0.as_slice()),
    )?];
    if vectors {
        res.push(concat(
            "eig",
            outs[1],
            parts.iter().map(|p| p.1.as_slice()),
        )?);
    }
    Ok(res)
}
