//! Reduced QR decomposition (`ferrox::linalg::qr`).

use super::{arity, decomp_dtype, matrix_dims, vmap_front, with_matrix};
use crate::backend::cpu::decomp;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The primitive of [`qr`]: outputs `[Q, R]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qr;

impl Primitive for Qr {
    fn name(&self) -> &'static str {
        "qr"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let ([x], &[q, r]) = (inputs, outs) else {
            return Err(arity("qr", inputs.len(), outs.len()));
        };
        decomp::qr::qr(x, [q, r])
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        vmap_front("qr", inputs, axes, |x| {
            let (q, r) = qr(x)?;
            Ok(vec![q, r])
        })
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [s] = input_shapes else { return None };
        Some(qr_shapes(s))
    }
    crate::primitive_common!();
}

fn qr_shapes(s: &[usize]) -> Result<Vec<Vec<usize>>> {
    let nd = s.len();
    if nd < 2 {
        return Err(Error::shape(
            "qr",
            format!("shape {s:?} has fewer than 2 axes"),
        ));
    }
    let (m, n) = (s[nd - 2], s[nd - 1]);
    let k = m.min(n);
    Ok(vec![with_matrix(s, &[m, k]), with_matrix(s, &[k, n])])
}

/// The reduced QR decomposition of each matrix in the last two axes of
/// `a`: `a = Q @ R` with `Q` of shape `(..., m, k)` having orthonormal
/// columns and `R` of shape `(..., k, n)` upper triangular, `k = min(m,
/// n)`.
///
/// `a` must be float32 or float64 with at least 2 axes; other dtypes are a
/// `Value` error (no implicit promotion, as in MLX). The signs of `R`'s
/// diagonal may differ from LAPACK's (a row of `R` and the matching column
/// of `Q` negated together). Not differentiable (as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[2.0f64, 3.0, 1.0, 2.0], &[2, 2])?;
/// let (q, r) = ferrox::linalg::qr(&a)?;
/// let back = ferrox::matmul(&q, &r)?.to_vec::<f64>()?;
/// assert!(back.iter().zip([2.0, 3.0, 1.0, 2.0]).all(|(g, w)| (g - w).abs() < 1e-12));
/// assert!(r.to_vec::<f64>()?[2].abs() < 1e-15); // R[1, 0]
/// assert!(ferrox::linalg::qr(&Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn qr(a: &Array) -> Result<(Array, Array)> {
    matrix_dims("qr", a, false)?;
    let dtype = decomp_dtype("qr", a, false)?;
    let shapes = qr_shapes(a.shape())?;
    let specs = shapes.into_iter().map(|s| (s, dtype)).collect();
    let mut outs = Array::from_op_multi(specs, Qr, vec![a.clone()]).into_iter();
    match (outs.next(), outs.next()) {
        (Some(q), Some(r)) => Ok((q, r)),
        _ => Err(Error::runtime("qr", "internal error: outputs missing")),
    }
}
