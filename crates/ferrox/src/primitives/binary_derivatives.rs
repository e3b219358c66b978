//! Derivatives of the binary ops (kept beside `binary.rs`; its `Binary`
//! primitive's rules call these).

use super::binary::BinaryOp;
use crate::transforms::rules::unbroadcast;
use crate::{add, divide, multiply, negative, Array, Result};

/// The partial derivatives' products with `g` for each operand:
/// `(g * d out/d a, g * d out/d b)`, at the output's (broadcast) shape.
fn partials(op: BinaryOp, a: &Array, b: &Array, out: &Array, g: &Array) -> Result<(Array, Array)> {
    Ok(match op {
        BinaryOp::Add => (g.clone(), g.clone()),
        BinaryOp::Subtract => (g.clone(), negative(g)?),
        BinaryOp::Multiply => (multiply(g, b)?, multiply(g, a)?),
        BinaryOp::Divide => {
            let ga = divide(g, b)?;
            (ga.clone(), negative(&multiply(&ga, out)?)?)
        }
        BinaryOp::Maximum | BinaryOp::Minimum => {
            // The gradient goes to the chosen operand (to `a` on ties).
            let pick_a = if op == BinaryOp::Maximum {
                crate::greater_equal(a, b)?
            } else {
                crate::less_equal(a, b)?
            };
            let zero = crate::zeros_like(g)?;
            (
                crate::r#where(&pick_a, g, &zero)?,
                crate::r#where(&pick_a, &zero, g)?,
            )
        }
        other => return Err(crate::primitives::no_rule(other.name(), "derivative")),
    })
}

/// Cotangents of the operands at `argnums`.
pub(super) fn vjp(
    op: BinaryOp,
    primals: &[Array],
    g: &Array,
    out: &Array,
    argnums: &[usize],
) -> Result<Vec<Array>> {
    let (a, b) = (&primals[0], &primals[1]);
    let (ga, gb) = partials(op, a, b, out, g)?;
    argnums
        .iter()
        .map(|&i| {
            if i == 0 {
                unbroadcast(&ga, a.shape())
            } else {
                unbroadcast(&gb, b.shape())
            }
        })
        .collect()
}

/// The output tangent from the operands' tangents.
pub(super) fn jvp(
    op: BinaryOp,
    primals: &[Array],
    tangents: &[Option<Array>],
    out: &Array,
) -> Result<Array> {
    let (a, b) = (&primals[0], &primals[1]);
    let mut total: Option<Array> = None;
    for (i, t) in tangents.iter().enumerate() {
        let Some(t) = t else { continue };
        let t = crate::broadcast_to(t, out.shape())?;
        let (da, db) = partials(op, a, b, out, &t)?;
        let term = if i == 0 { da } else { db };
        total = Some(match total {
            Some(prev) => add(&prev, &term)?,
            None => term,
        });
    }
    match total {
        Some(t) => Ok(t),
        None => crate::zeros_like(out),
    }
}

/// Applies `op` to batched operands.
pub(super) fn vmap(
    op: BinaryOp,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Array, Option<usize>)> {
    let (aligned, out_axis) = crate::transforms::rules::align_batch(inputs, axes)?;
    Ok((
        super::binary::build(op, &aligned[0], &aligned[1])?,
        out_axis,
    ))
}
