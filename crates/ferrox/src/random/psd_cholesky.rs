//! The Cholesky factor `multivariate_normal` needs: the lower triangular
//! `L` with `L L^T = cov` of each matrix in a batch, in f64. Unlike
//! `linalg::cholesky` it accepts singular (positive semi-definite)
//! covariances, which describe degenerate distributions; both share one
//! factorisation kernel.

use crate::backend::cpu::factor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// Factors each `[n, n]` matrix of an f64 batch `[..., n, n]`. A matrix
/// that is not positive semi-definite (within rounding) fails the node;
/// pivots that vanish within rounding give a zero column, so singular
/// covariances (degenerate distributions) still factor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PsdCholesky;

/// `L` for a checked f64 batch `a` of square matrices.
pub(crate) fn psd_cholesky(a: &Array) -> Result<Array> {
    Ok(Array::from_op(
        a.shape().to_vec(),
        DType::Float64,
        PsdCholesky,
        vec![a.clone()],
    ))
}

impl Primitive for PsdCholesky {
    fn name(&self) -> &'static str {
        // Not "cholesky": that is linalg's primitive (definite matrices only).
        "psd_cholesky"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let n = x.shape.last().copied().unwrap_or(0);
        if x.dtype != DType::Float64 || x.shape.len() < 2 || x.shape[x.shape.len() - 2] != n {
            return Err(Error::runtime(
                "psd_cholesky",
                "the input is not a batch of square f64 matrices",
            ));
        }
        factor::cholesky_semidefinite("multivariate_normal", x, out)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match axes[0] {
            None => Ok((psd_cholesky(&inputs[0])?, None)),
            Some(ax) => Ok((
                psd_cholesky(&grad_helpers::batch_front(&inputs[0], Some(ax))?)?,
                Some(0),
            )),
        }
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_definite_and_singular_matrices() -> Result<()> {
        let a = Array::from_slice(&[4.0f64, 2.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0], &[2, 2, 2])?;
        let l = psd_cholesky(&a)?.to_vec::<f64>()?;
        let want = [2.0, 0.0, 1.0, 2f64.sqrt(), 1.0, 0.0, 1.0, 0.0];
        for (x, y) in l.iter().zip(want) {
            assert!((x - y).abs() < 1e-12, "{l:?}");
        }
        // vmap over the batch, at a batch axis other than the first.
        let at_end = crate::ops::views::moveaxis(&a, 0, 2)?;
        let f = crate::transforms::vmap::vmap(
            |xs| Ok(vec![psd_cholesky(&xs[0])?]),
            &[Some(2)],
            &[Some(0)],
        );
        assert_eq!(f(&[at_end])?[0].to_vec::<f64>()?, l);
        let bad = Array::from_slice(&[1.0f64, 2.0, 2.0, 1.0], &[2, 2])?;
        let e = psd_cholesky(&bad)?.eval().unwrap_err().to_string();
        assert!(e.contains("positive semi-definite"), "{e}");
        Ok(())
    }
}
