//! Cholesky factorisation (`ferrox::linalg::cholesky`).
//!
//! Batched over the leading axes, computed in `f64` for `float32` and
//! `float64` inputs. Only one triangle of the input is read (the lower one,
//! or the upper one for `upper = true`), so the derivative rules are those
//! of that function: for a symmetric input and symmetric perturbations they
//! agree with the usual symmetric formulas.

use crate::backend::cpu::factor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The Cholesky factor of each matrix in the last two axes: lower
/// triangular `L` with `A = L L^T` (`upper`: `U = L^T`, `A = U^T U`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cholesky {
    /// Return (and read) the upper triangle instead of the lower one.
    pub upper: bool,
}

impl Primitive for Cholesky {
    fn name(&self) -> &'static str {
        "cholesky"
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        factor::cholesky(&inputs[0], self.upper, out)
    }

    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }

    fn vjp(
        &self,
        _p: &[Array],
        g: &Array,
        output: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        // Lower case: G = sym(L^-T phi(L^T Lbar) L^-1), and the function
        // reads tril(A) + tril(A, -1)^T, so Abar = tril(G + G^T) - diag(G).
        let (l, lbar) = if self.upper {
            (t(output)?, t(g)?)
        } else {
            (output.clone(), g.clone())
        };
        let linv = crate::ops::lu::inv(&l)?;
        let p = phi(&crate::ops::matmul::matmul(&t(&l)?, &lbar)?)?;
        let s = crate::ops::matmul::matmul(&crate::ops::matmul::matmul(&t(&linv)?, &p)?, &linv)?;
        let gsym = crate::ops::binary::multiply(
            &crate::ops::binary::add(&s, &t(&s)?)?,
            &Array::from(0.5),
        )?;
        let abar = crate::ops::binary::subtract(
            &crate::ops::join::tril(&crate::ops::binary::add(&gsym, &t(&gsym)?)?, 0)?,
            &diag_part(&gsym)?,
        )?;
        Ok(vec![if self.upper { t(&abar)? } else { abar }])
    }

    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(ta) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        // The tangent as the function sees it: one triangle, mirrored.
        let (l, ta) = if self.upper {
            (t(output)?, t(ta)?)
        } else {
            (output.clone(), ta.clone())
        };
        let eff = crate::ops::binary::add(
            &crate::ops::join::tril(&ta, 0)?,
            &t(&crate::ops::join::tril(&ta, -1)?)?,
        )?;
        let linv = crate::ops::lu::inv(&l)?;
        let inner =
            crate::ops::matmul::matmul(&crate::ops::matmul::matmul(&linv, &eff)?, &t(&linv)?)?;
        let dl = crate::ops::matmul::matmul(&l, &phi(&inner)?)?;
        if self.upper { t(&dl) } else { Ok(dl) }
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match axes[0] {
            None => Ok((cholesky(&inputs[0], self.upper)?, None)),
            Some(ax) => {
                let x = crate::ops::grad_helpers::batch_front(&inputs[0], Some(ax))?;
                Ok((cholesky(&x, self.upper)?, Some(0)))
            }
        }
    }

    crate::primitive_common!();
}

/// The last two axes swapped.
fn t(x: &Array) -> Result<Array> {
    crate::ops::views::swapaxes(x, -1, -2)
}

/// `x` times the identity: its diagonal as a matrix.
fn diag_part(x: &Array) -> Result<Array> {
    let n = x.shape()[x.ndim() - 1];
    crate::ops::binary::multiply(x, &crate::ops::creation::eye(n, None, 0, x.dtype())?)
}

/// The lower triangle with the diagonal halved.
fn phi(x: &Array) -> Result<Array> {
    crate::ops::binary::subtract(
        &crate::ops::join::tril(x, 0)?,
        &crate::ops::binary::multiply(&diag_part(x)?, &Array::from(0.5))?,
    )
}

/// The Cholesky factor of each symmetric positive-definite matrix in the
/// last two axes of `a`: lower triangular `L` with `a = L @ L^T`, or with
/// `upper`, `U = L^T` with `a = U^T @ U`.
///
/// Only the named triangle of `a` is read (the lower one, or the upper
/// one with `upper`). `float32` and `float64` keep their dtype, integers
/// and bool give `float32`, half floats compute in `float32`; complex
/// inputs are an error. A matrix that is not positive definite is an error
/// when the result is evaluated; a pivot that is negative only by the
/// rounding error of the input dtype (a semi-definite matrix made barely
/// indefinite by rounding) is taken as zero instead.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[4.0f64, 2.0, 2.0, 5.0], &[2, 2])?;
/// let l = ferrox::linalg::cholesky(&a, false)?.to_vec::<f64>()?;
/// assert_eq!(l, vec![2.0, 0.0, 1.0, 2.0]);
/// let u = ferrox::linalg::cholesky(&a, true)?.to_vec::<f64>()?;
/// assert_eq!(u, vec![2.0, 1.0, 0.0, 2.0]);
/// let bad = Array::from_slice(&[1.0f32, 2.0, 2.0, 1.0], &[2, 2])?;
/// let e = ferrox::linalg::cholesky(&bad, false)?.eval().unwrap_err();
/// assert!(e.to_string().contains("not positive definite"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cholesky(a: &Array, upper: bool) -> Result<Array> {
    let shape = a.shape();
    let nd = shape.len();
    if nd < 2 || shape[nd - 1] != shape[nd - 2] {
        return Err(Error::shape(
            "cholesky",
            format!("expected square matrices in the last two axes, got shape {shape:?}"),
        ));
    }
    let dtype = match a.dtype() {
        DType::Complex64 => {
            return Err(Error::dtype("cholesky", "complex64 is not supported"));
        }
        DType::Float64 => DType::Float64,
        _ => DType::Float32,
    };
    let x = a.astype(dtype)?;
    let out = Array::from_op(shape.to_vec(), dtype, Cholesky { upper }, vec![x]);
    if a.dtype().is_float() && a.dtype() != dtype {
        out.astype(a.dtype())
    } else {
        Ok(out)
    }
}
