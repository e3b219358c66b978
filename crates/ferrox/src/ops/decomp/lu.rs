//! LU factorisation with partial pivoting (`ferrox::linalg::lu_factor`,
//! `ferrox::linalg::lu`).

use super::{arity, decomp_dtype, matrix_dims, vmap_front, with_matrix};
use crate::backend::cpu::decomp;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// The primitive of [`lu_factor`] and [`lu`]: outputs `[LU, pivots,
/// perm]`, the packed factors, LAPACK's 0-based pivots and the row
/// permutation they make (see `backend::cpu::decomp::lu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LuFactor;

impl Primitive for LuFactor {
    fn name(&self) -> &'static str {
        "lu_factor"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let ([x], &[lu, piv, perm]) = (inputs, outs) else {
            return Err(arity("lu_factor", inputs.len(), outs.len()));
        };
        decomp::lu::lu(x, [lu, piv, perm])
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        vmap_front("lu_factor", inputs, axes, |x| factor("lu_factor", x))
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [s] = input_shapes else { return None };
        Some(lu_shapes(s))
    }
    crate::primitive_common!();
}

fn lu_shapes(s: &[usize]) -> Result<Vec<Vec<usize>>> {
    let nd = s.len();
    if nd < 2 {
        return Err(Error::shape(
            "lu_factor",
            format!("shape {s:?} has fewer than 2 axes"),
        ));
    }
    let (m, n) = (s[nd - 2], s[nd - 1]);
    Ok(vec![
        s.to_vec(),
        with_matrix(s, &[m.min(n)]),
        with_matrix(s, &[m]),
    ])
}

/// The three outputs of the primitive, validated under `op`'s name.
fn factor(op: &str, a: &Array) -> Result<Vec<Array>> {
    matrix_dims(op, a, false)?;
    let dtype = decomp_dtype(op, a, false)?;
    let shapes = lu_shapes(a.shape())?;
    let dtypes = [dtype, DType::UInt32, DType::UInt32];
    let specs = shapes.into_iter().zip(dtypes).collect();
    let outs = Array::from_op_multi(specs, LuFactor, vec![a.clone()]);
    if outs.len() == 3 {
        Ok(outs)
    } else {
        Err(Error::runtime(op, "internal error: outputs missing"))
    }
}

/// The LU factorisation with partial pivoting of each matrix in the last
/// two axes of `a` (shape `(..., m, n)`), in LAPACK's packed form: `(LU,
/// pivots)` with `LU` holding the unit lower factor below the diagonal and
/// the upper factor on and above it, and `pivots` (uint32, `(..., min(m,
/// n))`) saying that row `i` was swapped with row `pivots[i]`, in order,
/// 0-based (scipy's `lu_factor`).
///
/// `a` must be float32 or float64 with at least 2 axes. Singular matrices
/// factor (with a zero on the diagonal of the upper factor). Not
/// differentiable (as in MLX).
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
/// let (lu, piv) = ferrox::linalg::lu_factor(&a)?;
/// assert_eq!(piv.to_vec::<u32>()?, vec![1, 1]); // row 0 swapped with row 1
/// let lu = lu.to_vec::<f64>()?;
/// assert!((lu[0] - 3.0).abs() < 1e-12 && (lu[2] - 1.0 / 3.0).abs() < 1e-12);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn lu_factor(a: &Array) -> Result<(Array, Array)> {
    let mut outs = factor("lu_factor", a)?.into_iter();
    match (outs.next(), outs.next()) {
        (Some(lu), Some(piv)) => Ok((lu, piv)),
        _ => Err(Error::runtime(
            "lu_factor",
            "internal error: outputs missing",
        )),
    }
}

/// The LU factorisation with partial pivoting of each matrix in the last
/// two axes of `a` (shape `(..., m, n)`, `k = min(m, n)`), unpacked as
/// MLX's: `(P, L, U)` with `L` `(..., m, k)` unit lower triangular, `U`
/// `(..., k, n)` upper triangular and `P` (uint32, `(..., m)`) the row
/// permutation with `a[..., i, :] = (L @ U)[..., P[i], :]`, that is `a ==
/// take_along_axis(L, P[..., None], -2) @ U`.
///
/// Dtypes and errors as in [`lu_factor`].
///
/// ```
/// use ferrox::Array;
/// let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2])?;
/// let (p, l, u) = ferrox::linalg::lu(&a)?;
/// assert_eq!(p.to_vec::<u32>()?, vec![1, 0]);
/// let l = ferrox::take_along_axis(&l, &p.reshape(&[2, 1])?, Some(-2))?;
/// let back = ferrox::matmul(&l, &u)?.to_vec::<f64>()?;
/// assert!(back.iter().zip([1.0, 2.0, 3.0, 4.0]).all(|(g, w)| (g - w).abs() < 1e-12));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn lu(a: &Array) -> Result<(Array, Array, Array)> {
    let (m, n) = matrix_dims("lu", a, false)?;
    let k = m.min(n);
    let mut outs = factor("lu", a)?.into_iter();
    let (Some(packed), Some(_), Some(perm)) = (outs.next(), outs.next(), outs.next()) else {
        return Err(Error::runtime("lu", "internal error: outputs missing"));
    };
    let nd = a.ndim();
    let full: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    let zeros = vec![0isize; nd];
    let ones = vec![1isize; nd];
    // L: the strict lower part of the first k columns, plus the identity.
    let mut stop = full.clone();
    stop[nd - 1] = k as isize;
    let lower =
        crate::ops::views::slice(&crate::ops::join::tril(&packed, -1)?, &zeros, &stop, &ones)?;
    let eye = crate::ops::creation::eye(m, Some(k), 0, packed.dtype())?;
    let l = crate::ops::binary::add(&lower, &eye)?;
    // U: the upper part of the first k rows.
    let mut stop = full;
    stop[nd - 2] = k as isize;
    let u = crate::ops::views::slice(&crate::ops::join::triu(&packed, 0)?, &zeros, &stop, &ones)?;
    Ok((perm, l, u))
}
