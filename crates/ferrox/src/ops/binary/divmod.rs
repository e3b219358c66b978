//! `divmod`: `floor_divide` and `remainder` of the same operands, computed
//! in one pass by one primitive with two outputs (see
//! [`crate::graph::outputs`]).

use super::BinaryOp;
use crate::backend::cpu::binary;
use crate::error::{Error, Result};
use crate::graph::array::{Array, mark_weak};
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::binary::{multiply, subtract};
use crate::ops::grad_helpers::{align_batch, unbroadcast};
use crate::ops::shape_rules::broadcast_shapes;

/// Quotient and remainder, as Python's `divmod`: `(floor_divide(a, b),
/// remainder(a, b))`, bit for bit, from one pass over the operands.
/// Broadcasting, promotion and dtype rules are `floor_divide`'s.
///
/// ```
/// use ferrox::*;
/// let a = Array::from_slice(&[7i32, -7, 7], &[3])?;
/// let (q, r) = divmod(&a, &Array::from_slice(&[2i32, 2, -2], &[3])?)?;
/// assert_eq!(q.to_vec::<i32>()?, vec![3, -4, -4]);
/// assert_eq!(r.to_vec::<i32>()?, vec![1, 1, -1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn divmod(a: &Array, b: &Array) -> Result<(Array, Array)> {
    let op = BinaryOp::FloorDivide;
    let shape = broadcast_shapes("divmod", a.shape(), b.shape())?;
    let (compute, output) = op
        .dtypes(super::checked_result_dtype("divmod", a, b)?)
        .map_err(|e| {
            Error::dtype(
                "divmod",
                format!("{} (inputs {} and {})", e.message(), a.dtype(), b.dtype()),
            )
        })?;
    let inputs = vec![a.astype(compute)?, b.astype(compute)?];
    let spec = (shape, output);
    let mut outs = Array::from_op_multi(vec![spec.clone(), spec], DivMod, inputs).into_iter();
    let (Some(mut q), Some(mut r)) = (outs.next(), outs.next()) else {
        return Err(Error::runtime("divmod", "internal error: outputs missing"));
    };
    if a.is_weak() && b.is_weak() {
        (q, r) = (mark_weak(q), mark_weak(r));
    }
    Ok((q, r))
}

/// The primitive of [`divmod`]: outputs `[quotient, remainder]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DivMod;

impl crate::graph::export::Exportable for DivMod {
    const KIND: &'static str = "divmod";
    fn rebuild_multi(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<Vec<crate::graph::array::Array>> {
        let [a, b] = crate::graph::export::args(inputs, "divmod")?;
        let (q, r) = divmod(a, b)?;
        Ok(vec![q, r])
    }
}

impl Primitive for DivMod {
    fn name(&self) -> &'static str {
        "divmod"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let ([a, b], &[q, r]) = (inputs, outs) else {
            return Err(Error::runtime(
                "divmod",
                format!(
                    "internal error: {} inputs and {} outputs",
                    inputs.len(),
                    outs.len()
                ),
            ));
        };
        Ok(binary::divmod(a, b, [q, r])?.into())
    }
    /// The quotient is piecewise constant; the remainder `a - b * q` has
    /// partials 1 and `-q`.
    fn vjp_multi(
        &self,
        primals: &[Array],
        cotangents: &[Option<Array>],
        outputs: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let (a, b, q) = operands(primals, outputs)?;
        let g = cotangents.get(1).cloned().flatten();
        argnums
            .iter()
            .map(|&i| {
                let x = if i == 0 { a } else { b };
                match &g {
                    None => crate::ops::creation::zeros_like(x),
                    Some(g) if i == 0 => unbroadcast(g, x.shape()),
                    Some(g) => {
                        unbroadcast(&crate::ops::unary::negative(&multiply(g, q)?)?, x.shape())
                    }
                }
            })
            .collect()
    }
    fn jvp_multi(
        &self,
        primals: &[Array],
        tangents: &[Option<Array>],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        let (_, _, q) = operands(primals, outputs)?;
        let zero = crate::ops::creation::zeros_like(q)?;
        let ta = tangents.first().cloned().flatten();
        let tb = tangents.get(1).cloned().flatten();
        let tr = match (ta, tb) {
            (Some(ta), Some(tb)) => subtract(&ta, &multiply(&tb, q)?)?,
            (Some(ta), None) => crate::ops::binary::add(&ta, &zero)?,
            (None, Some(tb)) => crate::ops::unary::negative(&multiply(&tb, q)?)?,
            (None, None) => zero.clone(),
        };
        Ok(vec![zero, tr])
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        let (aligned, axis) = align_batch(inputs, axes)?;
        let (q, r) = divmod(&aligned[0], &aligned[1])?;
        Ok(vec![(q, axis), (r, axis)])
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let [a, b] = input_shapes else { return None };
        Some(broadcast_shapes("divmod", a, b).map(|s| vec![s.clone(), s]))
    }
    crate::primitive_common!();
}

/// `(a, b, quotient)` of a divmod node's rule arguments.
fn operands<'a>(
    primals: &'a [Array],
    outputs: &'a [Array],
) -> Result<(&'a Array, &'a Array, &'a Array)> {
    match (primals, outputs) {
        ([a, b], [q, _]) => Ok((a, b, q)),
        _ => Err(Error::runtime(
            "divmod",
            "internal error: a rule called with the wrong arity",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::ops::binary::{floor_divide, remainder};

    fn divmod_two_pass(a: &Array, b: &Array) -> Result<(Array, Array)> {
        Ok((floor_divide(a, b)?, remainder(a, b)?))
    }
    use crate::transforms::{jvp::jvp, vjp::vjp, vmap::vmap};

    fn arr(v: &[f32], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).expect("array")
    }

    #[test]
    fn equals_floor_divide_and_remainder_bitwise() {
        let a = arr(
            &[7.5, -7.5, 1.0, 0.0, -0.0, 3.0, f32::INFINITY, 5.0],
            &[2, 4],
        );
        let b = arr(&[2.0, 0.1, -0.3, 0.0], &[4]);
        let (q, r) = divmod(&a, &b).expect("divmod");
        let (q2, r2) = divmod_two_pass(&a, &b).expect("two pass");
        let bits = |x: &Array| -> Vec<u32> {
            x.to_vec::<f32>()
                .expect("values")
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        assert_eq!(bits(&q), bits(&q2));
        assert_eq!(bits(&r), bits(&r2));
        for dtype in [
            DType::Int8,
            DType::UInt16,
            DType::Int64,
            DType::Float16,
            DType::BFloat16,
            DType::Float64,
        ] {
            let a = Array::from_slice(&[7i32, -7, 9, 0, 100, -100], &[6])
                .expect("a")
                .astype(dtype)
                .expect("cast");
            let b = Array::from_slice(&[2i32, 3, -4, 0, 7, 7], &[6])
                .expect("b")
                .astype(dtype)
                .expect("cast");
            let (q, r) = divmod(&a, &b).expect("divmod");
            let (q2, r2) = divmod_two_pass(&a, &b).expect("two pass");
            // Bits: 0 / 0 is NaN for the float dtypes.
            let f = |x: &Array| -> Vec<u64> {
                let v = x.astype(DType::Float64).and_then(|x| x.to_vec::<f64>());
                v.expect("values").iter().map(|v| v.to_bits()).collect()
            };
            assert_eq!((f(&q), f(&r)), (f(&q2), f(&r2)), "{dtype}");
            assert_eq!((q.dtype(), r.dtype()), (dtype, dtype));
        }
    }

    #[test]
    fn outputs_share_one_evaluation_in_any_order() {
        let a = arr(&[7.0, 8.0], &[2]);
        let (q, r) = divmod(&a, &Array::from(3.0f32)).expect("divmod");
        let group = r.output_of().expect("an output").0;
        assert_eq!(group.id(), q.output_of().expect("an output").0.id());
        assert_eq!(r.to_vec::<f32>().expect("r"), vec![1.0, 2.0]);
        assert!(group.is_available(), "reading one output computed both");
        drop(group);
        assert_eq!(q.to_vec::<f32>().expect("q"), vec![2.0, 2.0]);
        // The group node itself has no single value.
        let (q, _) = divmod(&a, &a).expect("divmod");
        let group = q.output_of().expect("an output").0;
        assert!(group.data().is_err());
        assert!(
            crate::ops::binary::add(&group, &a)
                .and_then(|x| x.eval())
                .is_err()
        );
    }

    #[test]
    fn dropping_one_output_first_keeps_the_other() {
        let a = arr(&[5.0, -5.0], &[2]);
        let (q, r) = divmod(&a, &Array::from(2.0f32)).expect("divmod");
        drop(q);
        assert_eq!(r.to_vec::<f32>().expect("r"), vec![1.0, 1.0]);
        let (q, r) = divmod(&a, &Array::from(2.0f32)).expect("divmod");
        drop(r);
        assert_eq!(q.to_vec::<f32>().expect("q"), vec![2.0, -3.0]);
    }

    #[test]
    fn weak_scalars_and_bad_input() {
        let (q, r) = divmod(&Array::from(7), &Array::from(2)).expect("divmod");
        assert!(q.is_weak() && r.is_weak());
        assert_eq!(
            (q.item::<i32>().expect("q"), r.item::<i32>().expect("r")),
            (3, 1)
        );
        let c = Array::from_slice(&[crate::Complex64::new(1.0, 1.0)], &[1]).expect("complex");
        let e = divmod(&c, &c).expect_err("complex");
        assert!(e.to_string().contains("divmod"), "{e}");
        let e = divmod(&arr(&[1.0, 2.0], &[2]), &arr(&[1.0, 2.0, 3.0], &[3])).expect_err("shapes");
        assert!(e.to_string().contains("divmod"), "{e}");
    }

    #[test]
    fn vjp_with_a_cotangent_for_some_outputs_only() {
        let (a, b) = (arr(&[7.0, -7.5], &[2]), arr(&[2.0, 2.0], &[2]));
        let ones = crate::ops::creation::ones(&[2], DType::Float32).expect("ones");
        // Only the remainder is differentiated.
        let (_, g) = vjp(
            |xs| Ok(vec![divmod(&xs[0], &xs[1])?.1]),
            &[a.clone(), b.clone()],
            std::slice::from_ref(&ones),
        )
        .expect("vjp");
        assert_eq!(g[0].to_vec::<f32>().expect("da"), vec![1.0, 1.0]);
        assert_eq!(g[1].to_vec::<f32>().expect("db"), vec![-3.0, 4.0]);
        // Only the quotient: zeros.
        let (_, g) = vjp(
            |xs| Ok(vec![divmod(&xs[0], &xs[1])?.0]),
            &[a.clone(), b.clone()],
            std::slice::from_ref(&ones),
        )
        .expect("vjp");
        assert_eq!(g[0].to_vec::<f32>().expect("da"), vec![0.0, 0.0]);
        // Both, and a broadcast divisor.
        let b1 = arr(&[2.0], &[1]);
        let (_, g) = vjp(
            |xs| {
                let (q, r) = divmod(&xs[0], &xs[1])?;
                Ok(vec![q, r])
            },
            &[a.clone(), b1],
            &[ones.clone(), ones.clone()],
        )
        .expect("vjp");
        assert_eq!(g[1].shape(), &[1]);
        assert_eq!(g[1].to_vec::<f32>().expect("db"), vec![1.0]);
    }

    #[test]
    fn cotangents_of_two_output_nodes_of_one_output_add_up() {
        let (a, b) = (arr(&[7.0, -7.5], &[2]), arr(&[2.0, 2.0], &[2]));
        let ones = crate::ops::creation::ones(&[2], DType::Float32).expect("ones");
        let (_, g) = vjp(
            |xs| {
                let (_, r) = divmod(&xs[0], &xs[1])?;
                let again = r.output_of().and_then(|(group, _)| group.group_outputs());
                let again = again.and_then(|o| o.into_iter().nth(1)).expect("an output");
                Ok(vec![crate::ops::binary::add(&r, &again)?])
            },
            &[a, b],
            std::slice::from_ref(&ones),
        )
        .expect("vjp");
        assert_eq!(g[0].to_vec::<f32>().expect("da"), vec![2.0, 2.0]);
        assert_eq!(g[1].to_vec::<f32>().expect("db"), vec![-6.0, 8.0]);
    }

    #[test]
    fn jvp_and_vmap() {
        let (a, b) = (arr(&[7.0, -7.5], &[2]), arr(&[2.0, 2.0], &[2]));
        let ones = crate::ops::creation::ones(&[2], DType::Float32).expect("ones");
        let (_, t) = jvp(
            |xs| {
                let (q, r) = divmod(&xs[0], &xs[1])?;
                Ok(vec![q, r])
            },
            &[a.clone(), b.clone()],
            &[ones.clone(), ones.clone()],
        )
        .expect("jvp");
        assert_eq!(t[0].to_vec::<f32>().expect("tq"), vec![0.0, 0.0]);
        assert_eq!(
            t[1].to_vec::<f32>().expect("tr"),
            vec![1.0 - 3.0, 1.0 + 4.0]
        );
        let f = vmap(
            |xs| {
                let (q, r) = divmod(&xs[0], &xs[1])?;
                Ok(vec![q, r])
            },
            &[Some(0), None],
            &[Some(1)],
        );
        let batched = arr(&[7.0, 8.0, 9.0, -1.0, -2.0, -3.0], &[2, 3]);
        let out = f(&[batched, Array::from(4.0f32)]).expect("vmap");
        assert_eq!(out[0].shape(), &[3, 2]);
        assert_eq!(
            out[0].to_vec::<f32>().expect("q"),
            vec![1.0, -1.0, 2.0, -1.0, 2.0, -1.0]
        );
        assert_eq!(
            out[1].to_vec::<f32>().expect("r"),
            vec![3.0, 3.0, 0.0, 2.0, 1.0, 1.0]
        );
    }
}
