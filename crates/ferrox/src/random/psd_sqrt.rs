//! The matrix square root `multivariate_normal` needs: the symmetric `S`
//! with `S S = cov` of each matrix in a batch, in f64, as MLX uses it (MLX
//! forms it from an SVD, `U sqrt(s) V^T`, which is the same matrix for a
//! symmetric positive semi-definite `cov`). Singular covariances
//! (degenerate distributions) are accepted; ones that are not positive
//! semi-definite fail evaluation.

use crate::backend::cpu::factor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// Square roots of each `[n, n]` matrix of an f64 batch `[..., n, n]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PsdSqrt;

/// `S` for a checked f64 batch `a` of square matrices.
pub(crate) fn psd_sqrt(a: &Array) -> Result<Array> {
    Ok(Array::from_op(
        a.shape().to_vec(),
        DType::Float64,
        PsdSqrt,
        vec![a.clone()],
    ))
}

impl Primitive for PsdSqrt {
    fn name(&self) -> &'static str {
        "psd_sqrt"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let n = x.shape.last().copied().unwrap_or(0);
        if x.dtype != DType::Float64 || x.shape.len() < 2 || x.shape[x.shape.len() - 2] != n {
            return Err(Error::runtime(
                "psd_sqrt",
                "the input is not a batch of square f64 matrices",
            ));
        }
        factor::psd_sqrt("multivariate_normal", x, out)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match axes[0] {
            None => Ok((psd_sqrt(&inputs[0])?, None)),
            Some(ax) => Ok((
                psd_sqrt(&grad_helpers::batch_front(&inputs[0], Some(ax))?)?,
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
    fn square_roots_of_definite_and_singular_matrices() -> Result<()> {
        // [[4, 2], [2, 3]] and the singular [[1, 1], [1, 1]].
        let a = Array::from_slice(&[4.0f64, 2.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0], &[2, 2, 2])?;
        let s = psd_sqrt(&a)?;
        let back = crate::ops::matmul::matmul(&s, &s)?.to_vec::<f64>()?;
        for (x, y) in back.iter().zip(a.to_vec::<f64>()?) {
            assert!((x - y).abs() < 1e-12, "{back:?}");
        }
        let sv = s.to_vec::<f64>()?;
        let h = 0.5f64.sqrt();
        for (x, y) in sv[4..].iter().zip([h, h, h, h]) {
            assert!((x - y).abs() < 1e-12, "{sv:?}");
        }
        // vmap over the batch, at a batch axis other than the first.
        let at_end = crate::ops::views::moveaxis(&a, 0, 2)?;
        let f =
            crate::transforms::vmap::vmap(|xs| Ok(vec![psd_sqrt(&xs[0])?]), &[Some(2)], &[Some(0)]);
        assert_eq!(f(&[at_end])?[0].to_vec::<f64>()?, sv);
        let bad = Array::from_slice(&[1.0f64, 2.0, 2.0, 1.0], &[2, 2])?;
        let e = psd_sqrt(&bad)?.eval().unwrap_err().to_string();
        assert!(e.contains("positive semi-definite"), "{e}");
        Ok(())
    }
}
