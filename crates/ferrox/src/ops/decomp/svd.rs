//! Singular value decomposition (`ferrox::linalg::svd`).

use super::{arity, decomp_dtype, matrix_dims, real_of, vmap_front, with_matrix};
use crate::backend::cpu::decomp;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The primitive of [`svd`]: outputs `[U, S, Vh]`, or `[S]` without
/// `compute_uv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Svd {
    /// Compute the singular vectors too.
    pub compute_uv: bool,
}

impl Primitive for Svd {
    fn name(&self) -> &'static str {
        "svd"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let want = if self.compute_uv { 3 } else { 1 };
        let [x] = inputs else {
            return Err(arity("svd", inputs.len(), outs.len()));
        };
        if outs.len() != want {
            return Err(arity("svd", inputs.len(), outs.len()));
        }
        decomp::svd::svd(x, outs)
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        vmap_front("svd", inputs, axes, |x| svd(x, self.compute_uv))
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [s] = input_shapes else { return None };
        Some(svd_shapes(s, self.compute_uv))
    }
    crate::primitive_common!();
}

fn svd_shapes(s: &[usize], compute_uv: bool) -> Result<Vec<Vec<usize>>> {
    let nd = s.len();
    if nd < 2 {
        return Err(Error::shape(
            "svd",
            format!("shape {s:?} has fewer than 2 axes"),
        ));
    }
    let (m, n) = (s[nd - 2], s[nd - 1]);
    let sv = with_matrix(s, &[m.min(n)]);
    Ok(if compute_uv {
        vec![with_matrix(s, &[m, m]), sv, with_matrix(s, &[n, n])]
    } else {
        vec![sv]
    })
}

/// The singular value decomposition of each matrix in the last two axes
/// of `a` (shape `(..., m, n)`): with `compute_uv`, `[U, S, Vh]` with `U`
/// `(..., m, m)` and `Vh` `(..., n, n)` unitary and `S` `(..., min(m, n))`
/// the singular values in non-increasing order, so that `a = U[..., :, :k]
/// @ diag(S) @ Vh[..., :k, :]`; without, `[S]` only.
///
/// `a` must be float32, float64 or complex64 (`S` is then float32) with at
/// least 2 axes; other dtypes are a `Value` error. The factors are as
/// numpy's full-matrices SVD up to the signs (phases) of singular vector
/// pairs. An empty matrix with one non-zero side gives identity factors.
/// Not differentiable (as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[3.0f64, 0.0, 0.0, -4.0], &[2, 2])?;
/// let s = ferrox::linalg::svd(&a, false)?;
/// assert_eq!(s.len(), 1);
/// let s = s[0].to_vec::<f64>()?;
/// assert!((s[0] - 4.0).abs() < 1e-12 && (s[1] - 3.0).abs() < 1e-12);
/// let usv = ferrox::linalg::svd(&a, true)?;
/// assert_eq!(usv.len(), 3);
/// assert_eq!(usv[2].shape(), &[2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn svd(a: &Array, compute_uv: bool) -> Result<Vec<Array>> {
    matrix_dims("svd", a, false)?;
    let dtype = decomp_dtype("svd", a, true)?;
    let shapes = svd_shapes(a.shape(), compute_uv)?;
    let dtypes = if compute_uv {
        vec![dtype, real_of(dtype), dtype]
    } else {
        vec![real_of(dtype)]
    };
    let specs = shapes.into_iter().zip(dtypes).collect();
    Ok(Array::from_op_multi(
        specs,
        Svd { compute_uv },
        vec![a.clone()],
    ))
}
