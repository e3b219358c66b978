//! General eigen-decomposition (`ferrox::linalg::eig`,
//! `ferrox::linalg::eigvals`).

use super::eigh::eigen_shapes;
use super::{arity, decomp_dtype, matrix_dims, vmap_front};
use crate::backend::cpu::decomp;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The primitive of [`eig`] (outputs `[w, V]`) and [`eigvals`] (`[w]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eig {
    /// Compute the eigenvectors too.
    pub vectors: bool,
}

impl Primitive for Eig {
    fn name(&self) -> &'static str {
        "eig"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let want = if self.vectors { 2 } else { 1 };
        match inputs {
            [x] if outs.len() == want => decomp::eig::eig(x, outs),
            _ => Err(arity("eig", inputs.len(), outs.len())),
        }
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        vmap_front("eig", inputs, axes, |x| {
            if self.vectors {
                let (w, v) = eig(x)?;
                Ok(vec![w, v])
            } else {
                Ok(vec![eigvals(x)?])
            }
        })
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [s] = input_shapes else { return None };
        Some(eigen_shapes("eig", s, self.vectors))
    }
    crate::primitive_common!();
}

fn build(op: &str, a: &Array, vectors: bool) -> Result<Vec<Array>> {
    matrix_dims(op, a, true)?;
    decomp_dtype(op, a, true)?;
    let shapes = eigen_shapes(op, a.shape(), vectors)?;
    let specs = shapes.into_iter().map(|s| (s, DType::Complex64)).collect();
    Ok(Array::from_op_multi(
        specs,
        Eig { vectors },
        vec![a.clone()],
    ))
}

/// Eigenvalues and right eigenvectors of each square matrix in the last
/// two axes of `a`: `(w, V)`, both complex64, with `a @ V = V *
/// w[..., None, :]`; each column of `V` has unit 2-norm.
///
/// `a` must be float32, float64 or complex64 (float64 computes in double
/// precision, the results are complex64 as in MLX). The order of the
/// eigenvalues is the solver's (not sorted) and the same as [`eigvals`]'s.
/// Not differentiable (as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[0.0f32, -1.0, 1.0, 0.0], &[2, 2])?; // a rotation
/// let (w, v) = ferrox::linalg::eig(&a)?;
/// let w = w.to_vec::<ferrox::Complex64>()?;
/// assert!(w.iter().all(|z| z.re.abs() < 1e-6 && (z.im.abs() - 1.0).abs() < 1e-6));
/// assert_eq!(v.dtype(), ferrox::DType::Complex64);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eig(a: &Array) -> Result<(Array, Array)> {
    let mut outs = build("eig", a, true)?.into_iter();
    match (outs.next(), outs.next()) {
        (Some(w), Some(v)) => Ok((w, v)),
        _ => Err(Error::runtime("eig", "internal error: outputs missing")),
    }
}

/// The eigenvalues of each square matrix in the last two axes of `a`, as
/// complex64: the `w` of [`eig`] without the eigenvectors.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[2.0f64, 0.0, 0.0, 3.0], &[2, 2])?;
/// let w = ferrox::linalg::eigvals(&a)?.to_vec::<ferrox::Complex64>()?;
/// let mut re: Vec<f32> = w.iter().map(|z| z.re).collect();
/// re.sort_by(f32::total_cmp);
/// assert_eq!(re, vec![2.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eigvals(a: &Array) -> Result<Array> {
    build("eigvals", a, false)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::runtime("eigvals", "internal error: outputs missing"))
}
