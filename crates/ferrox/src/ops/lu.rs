//! Matrix inverse by Gauss-Jordan elimination with partial pivoting
//! (`ferrox::linalg::inv`).
//!
//! Batched over the leading axes; the elimination (`backend::cpu::factor`)
//! runs in `f64` for both `float32` and `float64` inputs (one rounding at
//! the end for `float32`), in parallel over the matrices of large batches.
//! A zero pivot (an exactly singular matrix) is an evaluation error naming
//! `inv`.

use crate::backend::cpu::factor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The inverse of each square matrix in the last two axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Inv;

impl Primitive for Inv {
    fn name(&self) -> &'static str {
        "inv"
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        factor::inv(&inputs[0], out)
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
        // d(A^-1) = -A^-1 dA A^-1, so the cotangent is -Y^T G Y^T.
        let yt = crate::ops::views::swapaxes(output, -1, -2)?;
        let r = crate::ops::matmul::matmul(&crate::ops::matmul::matmul(&yt, g)?, &yt)?;
        Ok(vec![crate::ops::unary::negative(&r)?])
    }

    fn jvp(&self, _p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let r = crate::ops::matmul::matmul(&crate::ops::matmul::matmul(output, t)?, output)?;
        crate::ops::unary::negative(&r)
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match axes[0] {
            None => Ok((inv(&inputs[0])?, None)),
            Some(ax) => {
                let x = crate::ops::grad_helpers::batch_front(&inputs[0], Some(ax))?;
                Ok((inv(&x)?, Some(0)))
            }
        }
    }

    crate::primitive_common!();
}

/// The inverse of each square matrix in the last two axes of `a`.
///
/// `float32` and `float64` keep their dtype; integer and bool inputs give
/// `float32`, half floats compute in `float32`; complex inputs are an
/// error. An exactly singular matrix (a zero pivot in elimination with
/// partial pivoting) is an error when the result is evaluated.
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[4.0f64, 7.0, 2.0, 6.0], &[2, 2])?;
/// let y = ferrox::linalg::inv(&a)?.to_vec::<f64>()?;
/// let want = [0.6, -0.7, -0.2, 0.4];
/// assert!(y.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12));
/// let s = Array::from_slice(&[1.0f32, 2.0, 2.0, 4.0], &[2, 2])?;
/// assert!(ferrox::linalg::inv(&s)?.eval().unwrap_err().to_string().contains("singular"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn inv(a: &Array) -> Result<Array> {
    let shape = a.shape();
    let nd = shape.len();
    if nd < 2 || shape[nd - 1] != shape[nd - 2] {
        return Err(Error::shape(
            "inv",
            format!("expected square matrices in the last two axes, got shape {shape:?}"),
        ));
    }
    let dtype = match a.dtype() {
        DType::Complex64 => {
            return Err(Error::dtype("inv", "complex64 is not supported"));
        }
        DType::Float64 => DType::Float64,
        _ => DType::Float32,
    };
    let x = a.astype(dtype)?;
    let out = Array::from_op(shape.to_vec(), dtype, Inv, vec![x]);
    if a.dtype().is_float() && a.dtype() != dtype {
        out.astype(a.dtype())
    } else {
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_times_matrix_is_identity() {
        let n = 5;
        let v: Vec<f64> = (0..2 * n * n)
            .map(|i| ((i * 37 % 17) as f64) / 7.0 - 1.0 + if i % (n + 1) == 0 { 3.0 } else { 0.0 })
            .collect();
        let a = Array::from_slice(&v, &[2, n, n]).unwrap();
        let p = crate::ops::matmul::matmul(&a, &inv(&a).unwrap()).unwrap();
        let got = p.to_vec::<f64>().unwrap();
        for (i, g) in got.iter().enumerate() {
            let want = if (i % (n * n)) / n == i % n { 1.0 } else { 0.0 };
            assert!((g - want).abs() < 1e-12, "{i}: {g}");
        }
    }

    #[test]
    fn bad_input() {
        let a = crate::ops::creation::ones(&[2, 3], DType::Float32).unwrap();
        assert!(inv(&a).unwrap_err().to_string().starts_with("inv:"));
        let c = crate::ops::creation::ones(&[2, 2], DType::Complex64).unwrap();
        assert!(inv(&c).unwrap_err().to_string().starts_with("inv:"));
        let e = crate::ops::creation::zeros(&[0, 0], DType::Float32).unwrap();
        assert_eq!(inv(&e).unwrap().shape(), &[0, 0]);
        let z = crate::ops::creation::zeros(&[3, 2, 2], DType::Float64).unwrap();
        let msg = inv(&z).unwrap().eval().unwrap_err().to_string();
        assert!(msg.starts_with("inv: matrix 0"), "{msg}");
    }
}
