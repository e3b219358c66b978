//! Symmetric / Hermitian eigen-decomposition (`ferrox::linalg::eigh`,
//! `ferrox::linalg::eigvalsh`).

use super::{arity, decomp_dtype, matrix_dims, real_of, vmap_front, without_last};
use crate::backend::cpu::decomp;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The primitive of [`eigh`] (outputs `[w, V]`) and [`eigvalsh`] (`[w]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eigh {
    /// Read the upper triangle (numpy's `UPLO="U"`) instead of the lower.
    pub upper: bool,
    /// Compute the eigenvectors too.
    pub vectors: bool,
}

impl Primitive for Eigh {
    fn name(&self) -> &'static str {
        "eigh"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let want = if self.vectors { 2 } else { 1 };
        match inputs {
            [x] if outs.len() == want => decomp::eigh::eigh(x, self.upper, outs),
            _ => Err(arity("eigh", inputs.len(), outs.len())),
        }
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        vmap_front("eigh", inputs, axes, |x| {
            if self.vectors {
                let (w, v) = eigh(x, self.upper)?;
                Ok(vec![w, v])
            } else {
                Ok(vec![eigvalsh(x, self.upper)?])
            }
        })
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [s] = input_shapes else { return None };
        Some(eigen_shapes("eigh", s, self.vectors))
    }
    crate::primitive_common!();
}

/// `[w, V]` shapes (or `[w]`) of an eigen-decomposition of shape `s`.
pub(crate) fn eigen_shapes(op: &str, s: &[usize], vectors: bool) -> Result<Vec<Vec<usize>>> {
    if s.len() < 2 {
        return Err(Error::shape(
            op,
            format!("shape {s:?} has fewer than 2 axes"),
        ));
    }
    let w = without_last(s);
    Ok(if vectors {
        vec![w, s.to_vec()]
    } else {
        vec![w]
    })
}

fn build(op: &str, a: &Array, upper: bool, vectors: bool) -> Result<Vec<Array>> {
    matrix_dims(op, a, true)?;
    let dtype = decomp_dtype(op, a, true)?;
    let shapes = eigen_shapes(op, a.shape(), vectors)?;
    let dtypes = [real_of(dtype), dtype];
    let specs = shapes.into_iter().zip(dtypes).collect();
    Ok(Array::from_op_multi(
        specs,
        Eigh { upper, vectors },
        vec![a.clone()],
    ))
}

/// Eigenvalues and eigenvectors of each symmetric (real) or Hermitian
/// (complex) matrix in the last two axes of `a`: `(w, V)` with `w` of
/// shape `(..., n)` the real eigenvalues in non-decreasing order and the
/// columns of `V` (`(..., n, n)`) orthonormal eigenvectors, `a = V @
/// diag(w) @ V^H`.
///
/// Only one triangle is read: the lower one, or the upper one with
/// `upper` (numpy's `UPLO="U"`). `a` must be float32, float64 or complex64
/// (`w` is then float32) and square; other inputs are an error. Each
/// eigenvector's sign (phase) is arbitrary. Not differentiable (as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[2.0f64, 1.0, 1.0, 2.0], &[2, 2])?;
/// let (w, v) = ferrox::linalg::eigh(&a, false)?;
/// let w = w.to_vec::<f64>()?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// assert_eq!(v.shape(), &[2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eigh(a: &Array, upper: bool) -> Result<(Array, Array)> {
    let mut outs = build("eigh", a, upper, true)?.into_iter();
    match (outs.next(), outs.next()) {
        (Some(w), Some(v)) => Ok((w, v)),
        _ => Err(Error::runtime("eigh", "internal error: outputs missing")),
    }
}

/// The eigenvalues of each symmetric or Hermitian matrix in the last two
/// axes of `a`, in non-decreasing order: the `w` of [`eigh`] without the
/// eigenvectors.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f32, 999.0, 2.0, 3.0], &[2, 2])?; // 999 unread
/// let w = ferrox::linalg::eigvalsh(&a, false)?.to_vec::<f32>()?;
/// assert!((w[0] + w[1] - 4.0).abs() < 1e-5 && (w[0] * w[1] + 1.0).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eigvalsh(a: &Array, upper: bool) -> Result<Array> {
    build("eigvalsh", a, upper, false)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::runtime("eigvalsh", "internal error: outputs missing"))
}
