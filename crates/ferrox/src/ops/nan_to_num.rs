//! `nan_to_num`: NaN and infinities replaced by finite values.

use crate::backend::cpu::nan_to_num::nan_to_num as nan_to_num_kernel;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::select::r#where;

// ---------------------------------------------------------------------------
// nan_to_num
// ---------------------------------------------------------------------------

/// Replaces NaN, +inf and -inf with finite values (complex: in each part).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NanToNum {
    /// Replacement for NaN.
    pub nan: f64,
    /// Replacement for +inf.
    pub posinf: f64,
    /// Replacement for -inf.
    pub neginf: f64,
}

impl crate::graph::export::Exportable for NanToNum {
    const KIND: &'static str = "nan_to_num";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, "nan_to_num")?;
        nan_to_num(x, self.nan, Some(self.posinf), Some(self.neginf))
    }
}

impl Primitive for NanToNum {
    fn is_elementwise(&self) -> bool {
        true
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        input_shapes.first().map(|s| Ok(s.to_vec()))
    }
    fn name(&self) -> &'static str {
        "nan_to_num"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [x] = inputs else {
            return Err(Error::runtime(
                "nan_to_num",
                format!("expected 1 input, got {}", inputs.len()),
            ));
        };
        nan_to_num_kernel(x, self.nan, self.posinf, self.neginf, out)
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        // Finite inputs pass through; replaced ones are constants.
        let finite = crate::ops::unary::isfinite(&p[0])?;
        Ok(vec![r#where(
            &finite,
            g,
            &crate::ops::creation::zeros_like(g)?,
        )?])
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let finite = crate::ops::unary::isfinite(&p[0])?;
        r#where(&finite, t, &crate::ops::creation::zeros_like(t)?)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let x = &inputs[0];
        Ok((
            Array::from_op(x.shape().to_vec(), x.dtype(), self.clone(), vec![x.clone()]),
            axes[0],
        ))
    }
    crate::primitive_common!();
}

/// The largest finite value of a float dtype (complex: of its parts).
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => half::f16::MAX.to_f64(),
        DType::BFloat16 => half::bf16::MAX.to_f64(),
        DType::Float64 => f64::MAX,
        _ => f32::MAX as f64,
    }
}

/// Replaces NaN with `nan`, +inf with `posinf` and -inf with `neginf`
/// (defaults: the dtype's largest and smallest finite values, as MLX).
/// Replacements are rounded to the dtype. Complex values are fixed in each
/// part (numpy's rule). Integer and bool arrays are returned unchanged.
///
/// ```
/// use ferrox::{nan_to_num, Array};
/// let a = Array::from_slice(&[f32::NAN, f32::INFINITY, -f32::INFINITY, 1.5], &[4])?;
/// assert_eq!(nan_to_num(&a, 0.0, None, Some(-1.0))?.to_vec::<f32>()?, vec![0.0, f32::MAX, -1.0, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn nan_to_num(a: &Array, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return Ok(a.clone());
    }
    let max = finite_max(a.dtype());
    let op = NanToNum {
        nan,
        posinf: posinf.unwrap_or(max),
        neginf: neginf.unwrap_or(-max),
    };
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        op,
        vec![a.clone()],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Element;
    use crate::graph::storage::Pod;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn nan_to_num_defaults_to_the_dtype_range() {
        let h = half::f16::from_f32;
        let a = arr(
            &[
                half::f16::NAN,
                half::f16::INFINITY,
                half::f16::NEG_INFINITY,
                h(1.5),
            ],
            &[4],
        );
        let r = nan_to_num(&a, 0.0, None, None)
            .unwrap()
            .to_vec::<half::f16>()
            .unwrap();
        assert_eq!(r, vec![h(0.0), half::f16::MAX, half::f16::MIN, h(1.5)]);
        let b = arr(&[f64::NAN, f64::INFINITY, -f64::INFINITY], &[3]);
        let r = nan_to_num(&b, -1.0, Some(1e300), None)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(r, vec![-1.0, 1e300, f64::MIN]);
        let c = arr(
            &[crate::dtype::Complex64::new(f32::NAN, f32::INFINITY)],
            &[1],
        );
        let r = nan_to_num(&c, 2.0, None, None)
            .unwrap()
            .to_vec::<crate::dtype::Complex64>()
            .unwrap();
        assert_eq!(r, vec![crate::dtype::Complex64::new(2.0, f32::MAX)]);
        let i = arr(&[1i32], &[1]);
        assert_eq!(nan_to_num(&i, 0.0, None, None).unwrap().id(), i.id());
        let bf = arr(&[half::bf16::INFINITY], &[1]);
        assert_eq!(
            nan_to_num(&bf, 0.0, None, None)
                .unwrap()
                .to_vec::<half::bf16>()
                .unwrap(),
            vec![half::bf16::MAX]
        );
    }
}
