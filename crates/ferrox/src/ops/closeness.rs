//! Closeness: `isclose`, `allclose` and `array_equal`.
//!
//! The tests share one element predicate ([`Closeness`], defined with its
//! kernels in `backend::cpu::closeness`): `isclose` maps
//! it (an elementwise primitive, fused by `compile`), `allclose` and
//! `array_equal` fold it straight into a 0-d bool without materialising
//! the elementwise result.

use super::binary::result_dtype;
use super::shape_rules::broadcast_shapes;
use crate::backend::cpu::closeness;
pub use crate::backend::cpu::closeness::Closeness;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

// ---------------------------------------------------------------------------
// Closeness
// ---------------------------------------------------------------------------

/// Elementwise closeness test (bool output). Inputs broadcast and promote
/// to a common dtype first.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IsClose(pub Closeness);

impl crate::graph::export::Exportable for IsClose {
    const KIND: &'static str = "isclose";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, b] = crate::graph::export::args(inputs, "isclose")?;
        match self.0 {
            Closeness::Close {
                rtol,
                atol,
                equal_nan,
            } => isclose(a, b, rtol, atol, equal_nan),
            other => Err(Error::value(
                "isclose",
                format!("an exported isclose holds {other:?}"),
            )),
        }
    }
}

impl Primitive for IsClose {
    fn is_elementwise(&self) -> bool {
        true
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        match input_shapes {
            [a, b] => Some(broadcast_shapes("isclose", a, b)),
            _ => None,
        }
    }
    fn name(&self) -> &'static str {
        "isclose"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, b) = same_dtype_pair("isclose", inputs)?;
        closeness::isclose(self.0, a, b, out)
    }
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        grad_helpers::zero_cotangents(p, argnums) // a bool output: piecewise constant
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::ops::creation::zeros_like(output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, out_ax) = grad_helpers::align_batch(inputs, axes)?;
        let shape = broadcast_shapes("isclose", a[0].shape(), a[1].shape())?;
        Ok((Array::from_op(shape, DType::Bool, self.clone(), a), out_ax))
    }
    crate::primitive_common!();
}

/// True (a 0-d bool) if the test holds for every broadcast pair.
#[derive(Debug, Clone, PartialEq)]
pub struct AllPairs(pub Closeness);

impl Primitive for AllPairs {
    fn name(&self) -> &'static str {
        match self.0 {
            Closeness::Close { .. } => "allclose",
            Closeness::Equal { .. } => "array_equal",
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, b) = same_dtype_pair(self.name(), inputs)?;
        let shape = broadcast_shapes(self.name(), a.shape, b.shape)?;
        closeness::all_pairs(self.0, a, b, &shape, out)
    }
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        grad_helpers::zero_cotangents(p, argnums) // a bool output: piecewise constant
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::ops::creation::zeros_like(output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        // The elementwise test per pair, then `all` over each example.
        let (a, out_ax) = grad_helpers::align_batch(inputs, axes)?;
        if out_ax.is_none() {
            return Ok((Array::from_op(vec![], DType::Bool, self.clone(), a), None));
        }
        let shape = broadcast_shapes(self.name(), a[0].shape(), a[1].shape())?;
        let rank = shape.len();
        let pairs = Array::from_op(shape, DType::Bool, IsClose(self.0), a);
        let example_axes: Vec<isize> = (1..rank as isize).collect();
        Ok((
            crate::ops::reduce::all(&pairs, Some(&example_axes), false)?,
            Some(0),
        ))
    }
    crate::primitive_common!();
}

fn same_dtype_pair<'a, 'b>(
    op: &str,
    inputs: &'b [Operand<'a>],
) -> Result<(&'b Operand<'a>, &'b Operand<'a>)> {
    match inputs {
        [a, b] if a.dtype == b.dtype => Ok((a, b)),
        _ => Err(Error::runtime(
            op,
            "internal error: expected two inputs of one dtype",
        )),
    }
}

/// Validates the shapes and promotes `a` and `b` to their common dtype.
fn promote_pair(op: &str, a: &Array, b: &Array) -> Result<(Vec<usize>, Array, Array)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = result_dtype(a, b);
    Ok((shape, a.astype(dtype)?, b.astype(dtype)?))
}

/// Elementwise `|a - b| <= atol + rtol * |b|` (bool output), numpy's
/// `isclose`: equal values (including infinities of one sign) are always
/// close, infinities are otherwise never close, and two NaNs are close only
/// with `equal_nan`. Inputs broadcast; the test runs in f64 (complex: on
/// magnitudes). MLX's defaults are `rtol = 1e-5`, `atol = 1e-8`.
///
/// ```
/// use ferrox::{isclose, Array};
/// let a = Array::from_slice(&[1.0f32, 1.1, f32::NAN], &[3])?;
/// let b = Array::from_slice(&[1.000001f32, 1.0, f32::NAN], &[3])?;
/// assert_eq!(isclose(&a, &b, 1e-5, 1e-8, false)?.to_vec::<bool>()?, vec![true, false, false]);
/// assert_eq!(isclose(&a, &b, 1e-5, 1e-8, true)?.to_vec::<bool>()?, vec![true, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let (shape, a, b) = promote_pair("isclose", a, b)?;
    Ok(Array::from_op(
        shape,
        DType::Bool,
        IsClose(Closeness::Close {
            rtol,
            atol,
            equal_nan,
        }),
        vec![a, b],
    ))
}

/// True (a 0-d bool array, like MLX) if [`isclose`] holds everywhere.
/// Shapes must broadcast.
///
/// ```
/// use ferrox::{allclose, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// assert!(!allclose(&a, &Array::from(1.0), 1e-5, 1e-8, false)?.item::<bool>()?);
/// assert!(allclose(&a, &a, 1e-5, 1e-8, false)?.item::<bool>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let (_, a, b) = promote_pair("allclose", a, b)?;
    let test = Closeness::Close {
        rtol,
        atol,
        equal_nan,
    };
    Ok(Array::from_op(
        vec![],
        DType::Bool,
        AllPairs(test),
        vec![a, b],
    ))
}

/// True (a 0-d bool array) if `a` and `b` have the same shape and equal
/// values; different shapes give false, not an error. Dtypes may differ
/// (values compare after promotion); with `equal_nan`, NaNs compare equal.
///
/// ```
/// use ferrox::{array_equal, Array};
/// let a = Array::from_slice(&[1i32, 2], &[2])?;
/// let b = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// assert!(array_equal(&a, &b, false)?.item::<bool>()?);
/// assert!(!array_equal(&a, &Array::from_slice(&[1i32, 2], &[1, 2])?, false)?.item::<bool>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn array_equal(a: &Array, b: &Array, equal_nan: bool) -> Result<Array> {
    if a.shape() != b.shape() {
        return Ok(Array::scalar(false));
    }
    let (_, a, b) = promote_pair("array_equal", a, b)?;
    Ok(Array::from_op(
        vec![],
        DType::Bool,
        AllPairs(Closeness::Equal { equal_nan }),
        vec![a, b],
    ))
}

impl Array {
    /// Method form of [`isclose`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(a.isclose(&ferrox::Array::from(1.05), 0.1, 0.0, false)?.to_vec::<bool>()?, vec![true]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn isclose(&self, other: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
        isclose(self, other, rtol, atol, equal_nan)
    }

    /// Method form of [`allclose`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32, 2.0], &[2])?;
    /// assert!(a.allclose(&a, 1e-5, 1e-8, false)?.item::<bool>()?);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn allclose(&self, other: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
        allclose(self, other, rtol, atol, equal_nan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::closeness::{close_complex, close_real};
    use crate::dtype::Element;
    use crate::error::ErrorKind;
    use crate::graph::storage::Pod;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn isclose_follows_numpy() {
        let inf = f64::INFINITY;
        let t = |a: f64, b: f64, nan: bool| close_real(a, b, 1e-5, 1e-8, nan);
        assert!(t(1.0, 1.0 + 1e-6, false));
        assert!(!t(1.0, 1.001, false));
        assert!(t(inf, inf, false) && t(-inf, -inf, false));
        assert!(!t(inf, -inf, false) && !t(inf, 1e300, false) && !t(1.0, inf, false));
        assert!(
            !t(f64::NAN, f64::NAN, false) && t(f64::NAN, f64::NAN, true) && !t(f64::NAN, 1.0, true)
        );
        // Equal values are close even with negative tolerances (numpy).
        assert!(close_real(2.0, 2.0, -1.0, -1.0, false));
        // Asymmetric: the tolerance scales with |b|.
        assert!(!close_real(0.0, 10.0, 0.1, 0.0, false));
        assert!(close_real(9.0, 10.0, 0.1, 0.0, false));
        assert!(!close_real(10.0, 9.0, 0.1, 0.0, false));
        let c = crate::dtype::Complex64::new;
        assert!(close_complex(
            c(1.0, 1.0),
            c(1.0, 1.000001),
            1e-5,
            0.0,
            false
        ));
        assert!(!close_complex(
            c(1.0, f32::NAN),
            c(1.0, f32::NAN),
            1e-5,
            0.0,
            false
        ));
        assert!(close_complex(
            c(1.0, f32::NAN),
            c(f32::NAN, 0.0),
            1e-5,
            0.0,
            true
        ));
        assert!(close_complex(
            c(f32::INFINITY, 0.0),
            c(f32::INFINITY, 0.0),
            1e-5,
            0.0,
            false
        ));
        // Integers compare exactly in f64 (no wrapping subtraction).
        let a = arr(&[i64::MIN, 5], &[2]);
        let b = arr(&[i64::MAX, 5], &[2]);
        assert_eq!(
            isclose(&a, &b, 0.0, 0.0, false)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            vec![false, true]
        );
    }

    #[test]
    fn allclose_and_array_equal_are_0d_bools() {
        let a = arr(&[1.0f32, f32::NAN], &[2]);
        let r = allclose(&a, &a, 1e-5, 1e-8, false).unwrap();
        assert_eq!((r.shape(), r.dtype()), (&[][..], DType::Bool));
        assert!(!r.item::<bool>().unwrap());
        assert!(
            allclose(&a, &a, 1e-5, 1e-8, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        let row = arr(&[1.0f32, f32::NAN], &[1, 2]);
        let grid = arr(&[1.0f32, f32::NAN, 1.0, f32::NAN], &[2, 2]);
        assert!(
            allclose(&row, &grid, 0.0, 0.0, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        assert_eq!(
            allclose(&a, &arr(&[1.0f32; 3], &[3]), 0.0, 0.0, false)
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert!(!array_equal(&a, &a, false).unwrap().item::<bool>().unwrap());
        assert!(array_equal(&a, &a, true).unwrap().item::<bool>().unwrap());
        assert!(
            !array_equal(&row, &grid, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        assert!(!array_equal(&a, &row, true).unwrap().item::<bool>().unwrap());
        let empty = crate::ops::creation::zeros(&[0], DType::Int8).unwrap();
        assert!(
            array_equal(
                &empty,
                &crate::ops::creation::zeros(&[0], DType::Float16).unwrap(),
                false
            )
            .unwrap()
            .item::<bool>()
            .unwrap()
        );
        assert!(
            allclose(&empty, &empty, 0.0, 0.0, false)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        let big = arr(&[1i64 << 60], &[1]);
        let near = arr(&[(1i64 << 60) + 1], &[1]);
        assert!(
            !array_equal(&big, &near, false)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
    }
}
