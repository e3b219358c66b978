//! Matrix products: [`matmul`] (numpy semantics) and [`addmm`].
//!
//! Shapes follow numpy's `matmul`: the last two dimensions are the matrix
//! dimensions and the leading ones are batch dimensions that broadcast; a 1-D
//! left operand is a row vector and a 1-D right operand a column vector, and
//! the dimension added for it is dropped from the result.
//!
//! The kernels (gemm, the blocked integer loop, batching) are in
//! [`crate::backend::cpu::matmul`].

use crate::backend::cpu::matmul::{self as kernels, matmul_shape};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

/// Matrix product with numpy's `matmul` semantics.
///
/// Both operands need at least one dimension. 2-D operands are multiplied as
/// matrices; leading dimensions are batch dimensions and broadcast; a 1-D `a`
/// is a row vector and a 1-D `b` a column vector, and the added dimension is
/// removed from the result. The result dtype is the promotion of both dtypes;
/// integer products wrap like numpy's.
///
/// ```
/// use ferrox::{matmul, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let v = Array::from_slice(&[1.0f32, 1.0], &[2])?;
/// assert_eq!(matmul(&a, &a)?.to_vec::<f32>()?, vec![7.0, 10.0, 15.0, 22.0]);
/// assert_eq!(matmul(&a, &v)?.shape(), &[2]);
/// let err = matmul(&ferrox::zeros(&[3, 4], ferrox::DType::Float32)?,
///                  &ferrox::zeros(&[5, 2], ferrox::DType::Float32)?).unwrap_err();
/// assert_eq!(err.to_string(), "matmul: a has shape [3, 4] and b has shape [5, 2]; 4 != 5");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn matmul(a: &Array, b: &Array) -> Result<Array> {
    let shape = matmul_shape("matmul", a.shape(), b.shape())?;
    let dtype = DType::promote(a.dtype(), b.dtype());
    Ok(Array::from_op(
        shape.out,
        dtype,
        Matmul,
        vec![a.astype(dtype)?, b.astype(dtype)?],
    ))
}

/// `alpha * (a @ b) + beta * c`, with `c` broadcast to the product's shape.
///
/// `a` and `b` follow [`matmul`]'s shape rules. As in MLX, the result dtype
/// is the promotion of all three dtypes and must be a floating point (or
/// complex) type. With `beta == 0`, `c` is ignored (NaNs in it do not
/// propagate), as in BLAS.
///
/// ```
/// use ferrox::{addmm, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let c = Array::from_slice(&[10.0f32, 20.0], &[2])?;
/// let y = addmm(&c, &a, &a, 2.0, 0.5)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![19.0, 30.0, 35.0, 54.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn addmm(c: &Array, a: &Array, b: &Array, alpha: f32, beta: f32) -> Result<Array> {
    let shape = matmul_shape("addmm", a.shape(), b.shape())?;
    let fits = c.ndim() <= shape.out.len()
        && c.shape()
            .iter()
            .rev()
            .zip(shape.out.iter().rev())
            .all(|(&dc, &d)| dc == d || dc == 1);
    if !fits {
        return Err(Error::shape(
            "addmm",
            format!(
                "c has shape {:?}, which does not broadcast to the shape {:?} of a @ b",
                c.shape(),
                shape.out
            ),
        ));
    }
    let ab = DType::promote(a.dtype(), b.dtype());
    let dtype = match c.weak_kind() {
        Some(kind) => DType::promote_weak(ab, kind),
        None => DType::promote(ab, c.dtype()),
    };
    if !dtype.is_inexact() {
        return Err(Error::dtype(
            "addmm",
            format!("only floating point and complex types are supported, got {dtype}"),
        ));
    }
    let inputs = vec![c.astype(dtype)?, a.astype(dtype)?, b.astype(dtype)?];
    Ok(Array::from_op(
        shape.out,
        dtype,
        AddMM { alpha, beta },
        inputs,
    ))
}

impl Array {
    /// Method form of [`matmul`].
    ///
    /// ```
    /// let a = ferrox::ones(&[2, 3], ferrox::DType::Float32)?;
    /// let b = ferrox::ones(&[3, 4], ferrox::DType::Float32)?;
    /// assert_eq!(a.matmul(&b)?.to_vec::<f32>()?, vec![3.0; 8]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        matmul(self, other)
    }
}

// ---------------------------------------------------------------------------
// Primitives
// ---------------------------------------------------------------------------

/// The primitive of [`matmul`]; both inputs already have the output dtype.
///
/// ```
/// let a = ferrox::ones(&[2, 2], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::matmul(&a, &a)?.primitive().unwrap().name(), "matmul");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Matmul;

impl crate::graph::export::Exportable for Matmul {
    const KIND: &'static str = "matmul";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, b] = crate::graph::export::args(inputs, "matmul")?;
        matmul(a, b)
    }
}

impl Primitive for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [a, b] = input_shapes else { return None };
        Some(crate::backend::cpu::matmul::matmul_shape("matmul", a, b).map(|s| s.out))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [a, b] = inputs else {
            return Err(Error::runtime(
                "matmul",
                format!("expected 2 inputs, got {}", inputs.len()),
            ));
        };
        kernels::eval(a, b, out)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (ga, gb) = matmul_cotangents(&primals[0], &primals[1], cotangent, argnums)?;
        Ok(argnums
            .iter()
            .filter_map(|&i| if i == 0 { ga.clone() } else { gb.clone() })
            .collect())
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match matmul_tangent(&primals[0], &primals[1], &tangents[0], &tangents[1])? {
            Some(t) => Ok(t),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        matmul_vmap(&inputs[0], &inputs[1], axes[0], axes[1])
    }
    crate::primitive_common!();
}

// ---------------------------------------------------------------------------
// Transform rules
// ---------------------------------------------------------------------------

/// Cotangents of `a @ b` for the operands at `argnums` (`None` for the
/// others): `g @ b^T` and `a^T @ g`, summed over broadcast batch dimensions,
/// with 1-D operands treated as a row (`a`) or column (`b`) vector.
fn matmul_cotangents(
    a: &Array,
    b: &Array,
    g: &Array,
    argnums: &[usize],
) -> Result<(Option<Array>, Option<Array>)> {
    use crate::ops::grad_helpers::{reshape_to, unbroadcast};
    let a2 = if a.ndim() == 1 {
        crate::ops::views::expand_dims(a, &[0])?
    } else {
        a.clone()
    };
    let b2 = if b.ndim() == 1 {
        crate::ops::views::expand_dims(b, &[-1])?
    } else {
        b.clone()
    };
    let mut g2 = g.clone();
    if b.ndim() == 1 {
        g2 = crate::ops::views::expand_dims(&g2, &[-1])?;
    }
    if a.ndim() == 1 {
        g2 = crate::ops::views::expand_dims(&g2, &[-2])?;
    }
    let ga = if argnums.contains(&0) {
        let full = matmul(&g2, &crate::ops::views::swapaxes(&b2, -1, -2)?)?;
        Some(reshape_to(&unbroadcast(&full, a2.shape())?, a.shape())?.astype(a.dtype())?)
    } else {
        None
    };
    let gb = if !argnums.contains(&1) {
        None
    } else if b2.ndim() == 2 && a2.ndim() > 2 {
        // A stack times one matrix (a layer's weight): the batch sum is
        // the inner dimension of one product, `a` as rows [.., k] against
        // `g` as rows [.., n], instead of a product per batch entry and a
        // sum over them.
        use crate::ops::views::{flatten, swapaxes};
        let full = matmul(
            &swapaxes(&flatten(&a2, 0, -2)?, -1, -2)?,
            &flatten(&g2, 0, -2)?,
        )?;
        Some(reshape_to(&full, b.shape())?.astype(b.dtype())?)
    } else {
        let full = matmul(&crate::ops::views::swapaxes(&a2, -1, -2)?, &g2)?;
        Some(reshape_to(&unbroadcast(&full, b2.shape())?, b.shape())?.astype(b.dtype())?)
    };
    Ok((ga, gb))
}

/// `transpose(p, axes)` as a product, when `p` is a pending `a @ b` of
/// matrices (both operands of rank 2 or more) and `axes` swaps only the
/// last two axes: `(a @ b)^T = b^T @ a^T`, with the operands' transposes
/// as views (gemm reads any strides). The result comes out of gemm
/// row-major, where the transposed view would make every elementwise
/// consumer read it column by column; this is the layout of a linear
/// layer's weight gradient (`y = x @ w^T`, so `dw = (x^T @ dy)^T`).
/// `None` where the rewrite does not apply. Only for fresh products (the
/// transform rules' cotangents): a product that something else also reads
/// would be computed twice.
pub(crate) fn transposed_product(p: &Array, axes: &[usize]) -> Result<Option<Array>> {
    let n = axes.len();
    let swaps_last_two = n >= 2
        && axes[..n - 2].iter().enumerate().all(|(i, &a)| a == i)
        && axes[n - 2] == n - 1
        && axes[n - 1] == n - 2;
    if !swaps_last_two || p.is_available() {
        return Ok(None);
    }
    let Some(prim) = p.primitive() else {
        return Ok(None);
    };
    if prim.as_any().downcast_ref::<Matmul>().is_none() {
        return Ok(None);
    }
    let inputs = p.inputs();
    let [a, b] = inputs.as_slice() else {
        return Ok(None);
    };
    if a.ndim() < 2 || b.ndim() < 2 {
        return Ok(None);
    }
    let swap = |x: &Array| crate::ops::views::swapaxes(x, -1, -2);
    matmul(&swap(b)?, &swap(a)?).map(Some)
}

/// The tangent of `a @ b`: `ta @ b + a @ tb` (absent tangents skipped).
fn matmul_tangent(
    a: &Array,
    b: &Array,
    ta: &Option<Array>,
    tb: &Option<Array>,
) -> Result<Option<Array>> {
    let left = match ta {
        Some(t) => Some(matmul(t, b)?),
        None => None,
    };
    let right = match tb {
        Some(t) => Some(matmul(a, t)?),
        None => None,
    };
    crate::ops::grad_helpers::sum_terms([left, right])
}

/// Batched `a @ b`: batched operands get their batch axis in front (padded
/// so that it leads the broadcast batch dimensions); batched vectors become
/// matrices and the added axis is squeezed from the result.
fn matmul_vmap(
    a: &Array,
    b: &Array,
    ax_a: Option<usize>,
    ax_b: Option<usize>,
) -> Result<(Array, Option<usize>)> {
    use crate::ops::grad_helpers::{batch_front, pad_example_rank};
    if ax_a.is_none() && ax_b.is_none() {
        return Ok((matmul(a, b)?, None));
    }
    let rank_a = a.ndim() - usize::from(ax_a.is_some());
    let rank_b = b.ndim() - usize::from(ax_b.is_some());
    if rank_a == 0 || rank_b == 0 {
        return Err(Error::shape(
            "matmul",
            "both operands must have at least 1 dimension per example",
        ));
    }
    let (a_vec, b_vec) = (rank_a == 1, rank_b == 1);
    let mut a2 = batch_front(a, ax_a)?;
    if a_vec {
        a2 = crate::ops::views::expand_dims(&a2, &[-2])?;
    }
    let mut b2 = batch_front(b, ax_b)?;
    if b_vec {
        b2 = crate::ops::views::expand_dims(&b2, &[-1])?;
    }
    let (ra, rb) = (rank_a.max(2), rank_b.max(2));
    let rank = ra.max(rb);
    if ax_a.is_some() {
        a2 = pad_example_rank(&a2, rank)?;
    }
    if ax_b.is_some() {
        b2 = pad_example_rank(&b2, rank)?;
    }
    let mut out = matmul(&a2, &b2)?;
    if b_vec {
        out = crate::ops::views::squeeze(&out, Some(&[-1]))?;
    }
    if a_vec {
        let ax = if b_vec { -1 } else { -2 };
        out = crate::ops::views::squeeze(&out, Some(&[ax]))?;
    }
    Ok((out, Some(0)))
}

/// The primitive of [`addmm`]: inputs `c, a, b`, all of the output dtype.
///
/// ```
/// let a = ferrox::ones(&[2, 2], ferrox::DType::Float32)?;
/// let y = ferrox::addmm(&a, &a, &a, 1.0, 1.0)?;
/// assert_eq!(y.primitive().unwrap().name(), "addmm");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AddMM {
    /// Scale of the product.
    pub alpha: f32,
    /// Scale of `c`.
    pub beta: f32,
}

impl crate::graph::export::Exportable for AddMM {
    const KIND: &'static str = "addmm";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [c, a, b] = crate::graph::export::args(inputs, "addmm")?;
        addmm(c, a, b, self.alpha, self.beta)
    }
}

impl Primitive for AddMM {
    fn name(&self) -> &'static str {
        "addmm"
    }
    /// The product's shape (`c` broadcasts to it).
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [_, a, b] = input_shapes else { return None };
        Some(crate::backend::cpu::matmul::matmul_shape("addmm", a, b).map(|s| s.out))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [c, a, b] = inputs else {
            return Err(Error::runtime(
                "addmm",
                format!("expected 3 inputs, got {}", inputs.len()),
            ));
        };
        kernels::eval_addmm(c, a, b, self.alpha, self.beta, out)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        use crate::ops::grad_helpers::{scale, unbroadcast};
        let c = &primals[0];
        let ab: Vec<usize> = argnums.iter().filter(|&&i| i > 0).map(|i| i - 1).collect();
        let (ga, gb) = if ab.is_empty() {
            (None, None)
        } else {
            let g = scale(cotangent, self.alpha as f64)?;
            matmul_cotangents(&primals[1], &primals[2], &g, &ab)?
        };
        argnums
            .iter()
            .map(|&i| match i {
                0 if self.beta == 0.0 => crate::ops::creation::zeros_like(c),
                0 => unbroadcast(&scale(cotangent, self.beta as f64)?, c.shape()),
                1 => ga
                    .clone()
                    .ok_or_else(|| Error::runtime("addmm", "missing cotangent")),
                _ => gb
                    .clone()
                    .ok_or_else(|| Error::runtime("addmm", "missing cotangent")),
            })
            .collect()
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        use crate::ops::grad_helpers::{scale, sum_terms};
        let prod = match matmul_tangent(&primals[1], &primals[2], &tangents[1], &tangents[2])? {
            Some(t) => Some(scale(&t, self.alpha as f64)?),
            None => None,
        };
        let from_c = match &tangents[0] {
            Some(t) if self.beta != 0.0 => Some(crate::ops::views::broadcast_to(
                &scale(t, self.beta as f64)?,
                output.shape(),
            )?),
            _ => None,
        };
        match sum_terms([prod, from_c])? {
            Some(t) => Ok(t),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        use crate::ops::grad_helpers::{align_batch, scale};
        let (ab, ab_ax) = matmul_vmap(&inputs[1], &inputs[2], axes[1], axes[2])?;
        let ab = scale(&ab, self.alpha as f64)?;
        if self.beta == 0.0 {
            return Ok((ab, ab_ax));
        }
        let c = scale(&inputs[0], self.beta as f64)?;
        let (aligned, out_ax) = align_batch(&[ab, c], &[ab_ax, axes[0]])?;
        Ok((crate::ops::binary::add(&aligned[0], &aligned[1])?, out_ax))
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::matmul::*;
    use crate::dtype::Element;
    use crate::graph::storage::Pod;
    use crate::graph::storage::Storage;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A leaf array over `values` laid out with arbitrary strides.
    fn strided<T: Element + Pod>(
        values: &[T],
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Array {
        let mut st = Storage::new(std::mem::size_of_val(values), T::DTYPE == DType::Bool).unwrap();
        st.as_mut_slice::<T>().copy_from_slice(values);
        let data = Data {
            storage: Arc::new(st),
            strides: strides.to_vec(),
            offset,
        };
        Array::from_data(data, shape.to_vec(), T::DTYPE)
    }

    /// Row-major naive product over f64 with numpy's shape rules.
    fn naive(a: &[f64], ash: &[usize], b: &[f64], bsh: &[usize]) -> (Vec<f64>, Vec<usize>) {
        let geo = matmul_shape("t", ash, bsh).unwrap();
        let (m, k, n) = (geo.m, geo.k, geo.n);
        let nb: usize = geo.batch.iter().product();
        let bat = |sh: &[usize], i: usize| -> usize {
            // Offset of batch i of an operand with shape sh (broadcast).
            let own = &sh[..sh.len().saturating_sub(2)];
            let pad = geo.batch.len() - own.len();
            let (mut rem, mut idx) = (i, 0);
            let mut mul = 1;
            for d in (0..geo.batch.len()).rev() {
                let c = rem % geo.batch[d];
                rem /= geo.batch[d];
                if d >= pad {
                    let sz = own[d - pad];
                    idx += if sz == 1 { 0 } else { c * mul };
                    mul *= sz;
                }
            }
            idx
        };
        let mut out = vec![0.0; nb * m * n];
        for bi in 0..nb {
            let (oa, ob) = (bat(ash, bi) * m * k, bat(bsh, bi) * k * n);
            for i in 0..m {
                for j in 0..n {
                    out[bi * m * n + i * n + j] =
                        (0..k).map(|p| a[oa + i * k + p] * b[ob + p * n + j]).sum();
                }
            }
        }
        (out, geo.out)
    }

    fn f32s(n: usize, seed: u64) -> Vec<f32> {
        (0..n)
            .map(|i| (((i as u64 * 7919 + seed * 104729) % 23) as f32 - 11.0) / 4.0)
            .collect()
    }

    /// Row-major `a^T` of an `r x c` matrix.
    fn transposed(a: &[f32], r: usize, c: usize) -> Vec<f32> {
        (0..c)
            .flat_map(|j| (0..r).map(move |i| a[i * c + j]))
            .collect()
    }

    #[test]
    fn gradient_through_a_transposed_operand_is_one_row_major_product() {
        // y = x @ w^T (a linear layer): dw comes out of one product, not as
        // a transposed view of x^T @ dy, whether w is a stack like x or one
        // matrix shared by every batch entry (then dw sums over them).
        use crate::ops::views::transpose;
        let cases: [(&[usize], &[usize]); 4] =
            [(&[], &[]), (&[2], &[2]), (&[2], &[]), (&[2, 3], &[])];
        for (x_lead, w_lead) in cases {
            let nb: usize = x_lead.iter().product();
            let with = |lead: &[usize], r: usize, c: usize| [lead, &[r, c]].concat();
            let (m, k, n) = (3, 4, 5);
            let nw = if w_lead.is_empty() { 1 } else { nb };
            let (xs, ws, dys) = (
                f32s(nb * m * k, 1),
                f32s(nw * n * k, 2),
                f32s(nb * m * n, 3),
            );
            let x = Array::from_slice(&xs, &with(x_lead, m, k)).unwrap();
            let w = Array::from_slice(&ws, &with(w_lead, n, k)).unwrap();
            let dy = Array::from_slice(&dys, &with(x_lead, m, n)).unwrap();
            let swap_last: Vec<usize> = (0..w_lead.len())
                .chain([w_lead.len() + 1, w_lead.len()])
                .collect();
            let f = |p: &[Array]| -> Result<Vec<Array>> {
                Ok(vec![matmul(&p[0], &transpose(&p[1], Some(&swap_last))?)?])
            };
            let (_, grads) = crate::transforms::vjp::vjp(f, &[x, w], &[dy]).unwrap();
            let dw = &grads[1];
            assert_eq!(dw.shape(), with(w_lead, n, k).as_slice());
            let prim = dw.primitive().expect("a pending node");
            assert!(
                prim.as_any().downcast_ref::<Matmul>().is_some(),
                "{x_lead:?} {w_lead:?}: {}",
                prim.name()
            );
            // Reference: dw[b] = dy[b]^T @ x[b] in f64, summed over b when
            // w is shared.
            let mut want = vec![0.0; nw * n * k];
            for b in 0..nb {
                let dyt = transposed(&dys[b * m * n..(b + 1) * m * n], m, n);
                let to64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
                let (prod, _) = naive(
                    &to64(&dyt),
                    &[n, m],
                    &to64(&xs[b * m * k..(b + 1) * m * k]),
                    &[m, k],
                );
                let at = if nw == 1 { 0 } else { b * n * k };
                for (i, v) in prod.into_iter().enumerate() {
                    want[at + i] += v;
                }
            }
            let got = dw.to_vec::<f32>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (*g as f64 - w).abs() < 1e-4,
                    "{x_lead:?} {w_lead:?}: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn weight_gradient_of_empty_stacks_is_zeros() {
        // The shared-weight rule reshapes the stack to rows; empty batch,
        // row and inner dimensions give zero gradients of w's shape.
        for (xs, ws) in [
            ([2usize, 0, 4], [4usize, 5]),
            ([0, 3, 4], [4, 5]),
            ([2, 3, 0], [0, 5]),
        ] {
            let x = Array::from_slice(&vec![1.0f32; xs.iter().product()], &xs).unwrap();
            let w = Array::from_slice(&vec![1.0f32; ws.iter().product()], &ws).unwrap();
            let dy_shape = [xs[0], xs[1], ws[1]];
            let dy =
                Array::from_slice(&vec![1.0f32; dy_shape.iter().product()], &dy_shape).unwrap();
            let f = |p: &[Array]| -> Result<Vec<Array>> { Ok(vec![matmul(&p[0], &p[1])?]) };
            let (_, grads) = crate::transforms::vjp::vjp(f, &[x, w], &[dy]).unwrap();
            assert_eq!(grads[0].shape(), &xs[..]);
            assert_eq!(grads[1].shape(), &ws[..]);
            assert!(
                grads[1].to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0),
                "{xs:?}"
            );
        }
    }

    #[test]
    fn transposed_product_applies_only_to_pending_matrix_products() {
        let a = Array::from_slice(&f32s(6, 1), &[2, 3]).unwrap();
        let b = Array::from_slice(&f32s(12, 2), &[3, 4]).unwrap();
        let p = matmul(&a, &b).unwrap();
        // Not a swap of the last two axes.
        assert!(transposed_product(&p, &[0, 1]).unwrap().is_none());
        let q = transposed_product(&p, &[1, 0]).unwrap().expect("rewritten");
        assert_eq!(q.shape(), &[4, 2]);
        let want = transposed(&p.to_vec::<f32>().unwrap(), 2, 4);
        assert_eq!(q.to_vec::<f32>().unwrap(), want);
        // Evaluated now: transposing the result is a free view.
        assert!(transposed_product(&p, &[1, 0]).unwrap().is_none());
        // A vector operand: the product has lower rank; left alone.
        let v = Array::from_slice(&f32s(3, 3), &[3]).unwrap();
        let pv = matmul(&v, &b).unwrap();
        assert!(transposed_product(&pv, &[0]).unwrap().is_none());
        // Not a product.
        let s = crate::ops::binary::add(&a, &a).unwrap();
        assert!(transposed_product(&s, &[1, 0]).unwrap().is_none());
    }

    #[test]
    fn shape_rule_matches_numpy() {
        let s = |a: &[usize], b: &[usize]| matmul_shape("matmul", a, b).map(|g| g.out);
        assert_eq!(s(&[3, 4], &[4, 5]).unwrap(), vec![3, 5]);
        assert_eq!(s(&[4], &[4, 5]).unwrap(), vec![5]);
        assert_eq!(s(&[3, 4], &[4]).unwrap(), vec![3]);
        assert_eq!(s(&[4], &[4]).unwrap(), Vec::<usize>::new());
        assert_eq!(s(&[2, 1, 3, 4], &[5, 4, 6]).unwrap(), vec![2, 5, 3, 6]);
        assert_eq!(s(&[7, 3, 4], &[4]).unwrap(), vec![7, 3]);
        assert_eq!(s(&[4], &[7, 4, 2]).unwrap(), vec![7, 2]);
        assert_eq!(s(&[0, 3, 4], &[4, 0]).unwrap(), vec![0, 3, 0]);
    }

    #[test]
    fn shape_errors_name_the_op_and_values() {
        let e = matmul_shape("matmul", &[3, 4], &[5, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "matmul: a has shape [3, 4] and b has shape [5, 2]; 4 != 5"
        );
        let e = matmul_shape("matmul", &[], &[5, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "matmul: a must have at least 1 dimension, got shape []"
        );
        let e = matmul_shape("matmul", &[2, 3, 4], &[3, 4, 5]).unwrap_err();
        assert!(
            e.to_string()
                .contains("batch dimensions [2] and [3] cannot be broadcast"),
            "{e}"
        );
        assert_eq!(e.kind(), crate::error::ErrorKind::Shape);
        let big = usize::MAX / 2;
        assert!(matmul_shape("matmul", &[big, 1], &[1, big]).is_err());
    }

    #[test]
    fn matmul_rejects_scalars_without_panicking() {
        let s = Array::scalar(2.0f32);
        let v = crate::ops::creation::ones(&[2], DType::Float32).unwrap();
        assert!(matmul(&s, &v).is_err());
        assert!(matmul(&v, &s).is_err());
    }

    #[test]
    fn vector_cases() {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        let m = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
        assert_eq!(matmul(&a, &a).unwrap().to_vec::<f32>().unwrap(), vec![14.0]);
        assert_eq!(matmul(&a, &a).unwrap().shape(), &[] as &[usize]);
        assert_eq!(
            matmul(&a, &m).unwrap().to_vec::<f32>().unwrap(),
            vec![22.0, 28.0]
        );
        let mt = Array::from_slice(&[1.0f32, 3.0, 5.0, 2.0, 4.0, 6.0], &[2, 3]).unwrap();
        assert_eq!(
            matmul(&mt, &a).unwrap().to_vec::<f32>().unwrap(),
            vec![22.0, 28.0]
        );
    }

    #[test]
    fn every_dtype_matches_naive() {
        let (ash, bsh) = ([2, 3, 5], [5, 4]);
        // Non-negative and small: exact in every dtype, including uint8
        // and int8 results (at most 5 * 6 * 4 = 120).
        let av: Vec<f64> = (0..30).map(|i| (i % 7) as f64).collect();
        let bv: Vec<f64> = (0..20).map(|i| (i % 5) as f64).collect();
        let (want, shape) = naive(&av, &ash, &bv, &bsh);
        for dtype in DType::ALL {
            if dtype == DType::Bool {
                continue;
            }
            let a = Array::from_slice(&av, &ash).unwrap().astype(dtype).unwrap();
            let b = Array::from_slice(&bv, &bsh).unwrap().astype(dtype).unwrap();
            let y = matmul(&a, &b).unwrap();
            assert_eq!(y.dtype(), dtype);
            assert_eq!(y.shape(), &shape[..]);
            let got = y.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
            let want: Vec<f64> = want
                .iter()
                .map(|&w| {
                    Array::from_slice(&[w], &[1])
                        .unwrap()
                        .astype(dtype)
                        .unwrap()
                })
                .map(|w| w.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap()[0])
                .collect();
            assert_eq!(got, want, "{dtype}");
        }
    }

    #[test]
    fn integers_wrap_like_numpy() {
        let a = Array::from_slice(&[100i8, 100], &[1, 2]).unwrap();
        let b = Array::from_slice(&[2i8, 1], &[2, 1]).unwrap();
        // 200 + 100 = 300 wraps to 44 in int8.
        assert_eq!(matmul(&a, &b).unwrap().to_vec::<i8>().unwrap(), vec![44]);
    }

    #[test]
    fn bool_product_is_any_of_and() {
        let a = Array::from_slice(&[true, false, false, false], &[2, 2]).unwrap();
        let b = Array::from_slice(&[true, true, true, false], &[2, 2]).unwrap();
        assert_eq!(
            matmul(&a, &b).unwrap().to_vec::<bool>().unwrap(),
            vec![true, true, false, false]
        );
    }

    #[test]
    fn promotes_mixed_dtypes() {
        let a = crate::ops::creation::ones(&[2, 2], DType::Int32).unwrap();
        let b = crate::ops::creation::ones(&[2, 2], DType::Float16).unwrap();
        let y = matmul(&a, &b).unwrap();
        assert_eq!(y.dtype(), DType::Float16);
        assert_eq!(
            y.astype(DType::Float32).unwrap().to_vec::<f32>().unwrap(),
            vec![2.0; 4]
        );
    }

    #[test]
    fn empty_inner_dimension_gives_zeros() {
        for dtype in [
            DType::Float32,
            DType::BFloat16,
            DType::Int64,
            DType::Complex64,
        ] {
            let a = crate::ops::creation::zeros(&[3, 0], dtype).unwrap();
            let b = crate::ops::creation::zeros(&[0, 2], dtype).unwrap();
            let y = matmul(&a, &b).unwrap().astype(DType::Float64).unwrap();
            assert_eq!(y.to_vec::<f64>().unwrap(), vec![0.0; 6], "{dtype}");
        }
        let a = crate::ops::creation::zeros(&[0, 3], DType::Float32).unwrap();
        let b = crate::ops::creation::zeros(&[3, 2], DType::Float32).unwrap();
        assert_eq!(matmul(&a, &b).unwrap().shape(), &[0, 2]);
    }

    #[test]
    fn non_contiguous_operands() {
        // a is the transpose of a row-major 4x3, b a reversed-rows view of
        // a 4x2, c a broadcast row (stride 0 in the row dimension).
        let base = f32s(12, 1);
        let a = strided(&base, &[3, 4], &[1, 3], 0);
        let bbase = f32s(8, 2);
        let b = strided(&bbase, &[4, 2], &[-2, 1], 6);
        let row = f32s(4, 3);
        let c = strided(&row, &[3, 4], &[0, 1], 0);
        let dense = |x: &Array| {
            x.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<_>>()
        };
        for (l, r, lsh, rsh) in [(&a, &b, [3, 4], [4, 2]), (&c, &b, [3, 4], [4, 2])] {
            let (want, _) = naive(&dense(l), &lsh, &dense(r), &rsh);
            let got = matmul(l, r).unwrap().to_vec::<f32>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((*g as f64 - w).abs() < 1e-5, "{g} {w}");
            }
        }
        // Integer path with a column-strided right operand.
        let ib: Vec<i32> = (0..12).collect();
        let at = strided(&ib, &[4, 3], &[1, 4], 0);
        let id = crate::ops::creation::identity(4, DType::Int32).unwrap();
        assert_eq!(
            matmul(&id, &at).unwrap().to_vec::<i32>().unwrap(),
            at.to_vec::<i32>().unwrap()
        );
    }

    #[test]
    fn a_stack_times_one_matrix_matches_naive_in_every_layout() {
        // [3, m, k] @ one [k, n] matrix: stacks whose batches are
        // consecutive row blocks run as one tall product, the others
        // batch by batch; every layout must give the same values.
        use crate::as_strided;
        // Small integers: the f64 products are exact, so the i64 ones
        // must equal them.
        let base: Vec<f64> = (0..400).map(|i| ((i * 7) % 13) as f64 - 6.0).collect();
        let data = Array::from_slice(&base, &[400]).unwrap();
        let gather = |shape: &[usize], strides: &[usize]| -> Vec<f64> {
            let mut out = Vec::new();
            let n: usize = shape.iter().product();
            for flat in 0..n {
                let (mut rem, mut at) = (flat, 0);
                for d in (0..shape.len()).rev() {
                    at += (rem % shape[d]) * strides[d];
                    rem /= shape[d];
                }
                out.push(base[at]);
            }
            out
        };
        let view = |shape: &[usize], strides: &[usize]| {
            let st: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
            as_strided(&data, shape, &st, 0).unwrap()
        };
        let lhs_layouts: [(&[usize], &[usize]); 6] = [
            (&[3, 4, 5], &[20, 5, 1]), // contiguous
            (&[3, 4, 5], &[28, 7, 1]), // padded rows, batches adjacent
            (&[3, 4, 5], &[30, 5, 1]), // a gap between batches
            (&[3, 4, 5], &[20, 1, 4]), // transposed matrices
            (&[3, 1, 5], &[9, 5, 1]),  // one row per matrix
            (&[3, 4, 5], &[4, 1, 12]), // column-major, batches adjacent
        ];
        let rhs_layouts: [(&[usize], &[usize]); 4] = [
            (&[5, 6], &[6, 1]),
            (&[5, 6], &[1, 5]),        // a transposed weight (x @ w.T)
            (&[1, 5, 6], &[30, 6, 1]), // broadcast batch
            (&[3, 5, 6], &[30, 6, 1]), // one matrix per batch: not folded
        ];
        for (ash, ast) in lhs_layouts {
            for (bsh, bst) in rhs_layouts {
                let (want, shape) = naive(&gather(ash, ast), ash, &gather(bsh, bst), bsh);
                let y = matmul(&view(ash, ast), &view(bsh, bst)).unwrap();
                assert_eq!(y.shape(), &shape[..]);
                assert_eq!(
                    y.to_vec::<f64>().unwrap(),
                    want,
                    "{ash:?}/{ast:?} @ {bsh:?}/{bst:?}"
                );
                // Integers through the blocked loop.
                let ints = data.astype(DType::Int64).unwrap();
                let iview = |shape: &[usize], strides: &[usize]| {
                    let st: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
                    as_strided(&ints, shape, &st, 0).unwrap()
                };
                let yi = matmul(&iview(ash, ast), &iview(bsh, bst)).unwrap();
                let want_i: Vec<i64> = want.iter().map(|&v| v as i64).collect();
                assert_eq!(yi.to_vec::<i64>().unwrap(), want_i);
            }
        }
    }

    #[test]
    fn broadcast_batches_and_many_small_matrices() {
        // 64 batches of 8x8 @ broadcast 8x8: the batch-parallel path.
        let (ash, bsh) = ([64, 8, 8], [1, 8, 8]);
        let av: Vec<f64> = f32s(64 * 64, 4).iter().map(|&v| v as f64).collect();
        let bv: Vec<f64> = f32s(64, 5).iter().map(|&v| v as f64).collect();
        let (want, shape) = naive(&av, &ash, &bv, &bsh);
        let a = Array::from_slice(&av, &ash).unwrap();
        let b = Array::from_slice(&bv, &bsh).unwrap();
        let y = matmul(&a, &b).unwrap();
        assert_eq!(y.shape(), &shape[..]);
        assert_eq!(y.to_vec::<f64>().unwrap(), want);
        // The same with integer values through the integer loop.
        let ai: Vec<i64> = av.iter().map(|&v| (v * 4.0) as i64).collect();
        let bi: Vec<i64> = bv.iter().map(|&v| (v * 4.0) as i64).collect();
        let y = matmul(
            &Array::from_slice(&ai, &ash).unwrap(),
            &Array::from_slice(&bi, &bsh).unwrap(),
        )
        .unwrap();
        let wi: Vec<i64> = want.iter().map(|&w| (w * 16.0) as i64).collect();
        assert_eq!(y.to_vec::<i64>().unwrap(), wi);
    }

    #[test]
    fn large_products_use_all_paths() {
        // Above `SMALL_PRODUCT` (4.4M multiply-adds), so gemm splits it over
        // cores, and big enough for the parallel integer loop.
        let (m, k, n) = (200, 110, 200);
        let av: Vec<f64> = (0..m * k).map(|i| ((i * 31) % 17) as f64 - 8.0).collect();
        let bv: Vec<f64> = (0..k * n).map(|i| ((i * 13) % 11) as f64 - 5.0).collect();
        let (want, _) = naive(&av, &[m, k], &bv, &[k, n]);
        for dtype in [DType::Float32, DType::Float64, DType::Int32, DType::Int64] {
            let a = Array::from_slice(&av, &[m, k])
                .unwrap()
                .astype(dtype)
                .unwrap();
            let b = Array::from_slice(&bv, &[k, n])
                .unwrap()
                .astype(dtype)
                .unwrap();
            let got = matmul(&a, &b)
                .unwrap()
                .astype(DType::Float64)
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            assert_eq!(got, want, "{dtype}");
        }
    }

    #[test]
    fn addmm_scales_and_broadcasts() {
        let a = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let c = Array::from_slice(&[1.0f64, -1.0], &[2]).unwrap();
        let y = addmm(&c, &a, &a, 0.5, 3.0).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![6.5, 2.0, 10.5, 8.0]);
        // beta == 0 ignores NaNs in c.
        let nan = Array::from_slice(&[f64::NAN], &[1]).unwrap();
        let y = addmm(&nan, &a, &a, 1.0, 0.0).unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
        for dtype in [
            DType::Float16,
            DType::BFloat16,
            DType::Float32,
            DType::Complex64,
        ] {
            let y = addmm(
                &c.astype(dtype).unwrap(),
                &a.astype(dtype).unwrap(),
                &a.astype(dtype).unwrap(),
                0.5,
                3.0,
            )
            .unwrap();
            let y = y.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(y, vec![6.5, 2.0, 10.5, 8.0], "{dtype}");
        }
        // Weak scalar c keeps the dtype.
        let h = a.astype(DType::Float16).unwrap();
        assert_eq!(
            addmm(&Array::from(1.0), &h, &h, 1.0, 1.0).unwrap().dtype(),
            DType::Float16
        );
        // k == 0 with accumulation scales c.
        let e = crate::ops::creation::zeros(&[2, 0], DType::Float32).unwrap();
        let et = crate::ops::creation::zeros(&[0, 2], DType::Float32).unwrap();
        let c2 = crate::ops::creation::ones(&[2, 2], DType::Float32).unwrap();
        assert_eq!(
            addmm(&c2, &e, &et, 1.0, 2.0)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            vec![2.0; 4]
        );
    }

    #[test]
    fn addmm_with_empty_inner_dimension_scales_c_in_its_precision() {
        let c = Array::from_slice(&[0.1f64, 0.7], &[2]).unwrap();
        let a = crate::ops::creation::zeros(&[2, 0], DType::Float64).unwrap();
        let b = crate::ops::creation::zeros(&[0, 2], DType::Float64).unwrap();
        let y = addmm(&c, &a, &b, 1.0, 3.0)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(y, vec![0.1 * 3.0, 0.7 * 3.0, 0.1 * 3.0, 0.7 * 3.0]);
    }

    #[test]
    fn addmm_errors() {
        let a = crate::ops::creation::ones(&[2, 3], DType::Float32).unwrap();
        let b = crate::ops::creation::ones(&[3, 4], DType::Float32).unwrap();
        let e = addmm(
            &crate::ops::creation::ones(&[3], DType::Float32).unwrap(),
            &a,
            &b,
            1.0,
            1.0,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "addmm: c has shape [3], which does not broadcast to the shape [2, 4] of a @ b"
        );
        let e = addmm(
            &crate::ops::creation::ones(&[1, 2, 4], DType::Float32).unwrap(),
            &a,
            &b,
            1.0,
            1.0,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("addmm: c has shape [1, 2, 4]"));
        let i = crate::ops::creation::ones(&[2, 2], DType::Int32).unwrap();
        let e = addmm(&i, &i, &i, 1.0, 1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "addmm: only floating point and complex types are supported, got int32"
        );
        let e = addmm(&a, &a, &a, 1.0, 1.0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("addmm: a has shape [2, 3] and b has shape [2, 3]; 3 != 2")
        );
    }

    #[test]
    fn checked_views_reject_out_of_range_layouts() {
        let v = [0f32; 6];
        assert!(MatRef::new(&v, 0, (2, 3), (3, 1)).is_ok());
        assert!(MatRef::new(&v, 1, (2, 3), (3, 1)).is_err());
        assert!(MatRef::new(&v, 0, (2, 3), (0, 1)).is_err());
        assert!(MatRef::new(&v, 0, (usize::MAX, 3), (usize::MAX, 1)).is_err());
        let mut w = [0f32; 6];
        assert!(MatMut::new(&mut w, 2, 3, 3).is_ok());
        assert!(MatMut::new(&mut w, 2, 3, 2).is_err());
        assert!(MatMut::new(&mut w, 3, 3, 3).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matmul_matches_naive_triple_loop(
            m in 0usize..9, k in 0usize..9, n in 0usize..9, batch in 1usize..4,
            transpose_a in any::<bool>(), seed in 0u64..1000,
        ) {
            let av: Vec<f64> = (0..batch * m * k).map(|i| ((i as u64 * 37 + seed) % 19) as f64 - 9.0).collect();
            let bv: Vec<f64> = (0..k * n).map(|i| ((i as u64 * 53 + seed) % 13) as f64 - 6.0).collect();
            let (want, shape) = naive(&av, &[batch, m, k], &bv, &[k, n]);
            // Optionally present a as the transpose of a [batch, k, m] buffer.
            let a = if transpose_a {
                let mut t = vec![0.0; av.len()];
                for b in 0..batch { for i in 0..m { for p in 0..k {
                    t[b * m * k + p * m + i] = av[b * m * k + i * k + p];
                }}}
                strided(&t, &[batch, m, k], &[(m * k) as isize, 1, m as isize], 0)
            } else {
                Array::from_slice(&av, &[batch, m, k]).unwrap()
            };
            let b = Array::from_slice(&bv, &[k, n]).unwrap();
            for dtype in [DType::Float32, DType::Float64, DType::Int32] {
                let y = matmul(&a.astype(dtype).unwrap(), &b.astype(dtype).unwrap()).unwrap();
                prop_assert_eq!(y.shape(), &shape[..]);
                let got = y.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
                prop_assert_eq!(&got, &want);
            }
        }
    }

    /// Best wall time of `reps` evaluations of `f()`, after one warm-up.
    fn best_seconds(reps: usize, f: impl Fn() -> Array) -> f64 {
        f().eval().unwrap();
        (0..reps)
            .map(|_| {
                let t = std::time::Instant::now();
                f().eval().unwrap();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    }

    /// f32 GFLOP/s at 1024 and 2048, contiguous and with a transposed
    /// right operand (run with --release --ignored --nocapture).
    #[test]
    #[ignore]
    fn bench_matmul_f32() {
        for n in [1024usize, 2048] {
            let a = Array::from_slice(&f32s(n * n, 1), &[n, n]).unwrap();
            let b = Array::from_slice(&f32s(n * n, 2), &[n, n]).unwrap();
            let bt = crate::ops::views::transpose(&b, None).unwrap();
            let reps = if n == 1024 { 20 } else { 5 };
            let flops = 2.0 * (n as f64).powi(3);
            let t = best_seconds(reps, || matmul(&a, &b).unwrap());
            println!(
                "matmul f32 {n}x{n}: best {:.3} ms, {:.1} GFLOP/s",
                t * 1e3,
                flops / t / 1e9
            );
            let t = best_seconds(reps, || matmul(&a, &bt).unwrap());
            println!(
                "matmul f32 {n}x{n} (b transposed view): best {:.3} ms, {:.1} GFLOP/s",
                t * 1e3,
                flops / t / 1e9
            );
        }
    }
}
