//! Derivatives of the binary ops (kept beside `mod.rs`; its `Binary`
//! primitive's rules call these).
//!
//! Ops whose output is piecewise constant in the inputs (`floor_divide`)
//! have zero derivatives. Ops with bool or integer outputs (comparisons,
//! logical and bitwise ops, shifts) have zero cotangents and a zero tangent
//! of the output's dtype, like `isclose`.

use super::{BinaryOp, DtypeRule};
use crate::error::Result;
use crate::graph::array::Array;
use crate::ops::binary::{add, divide, multiply, subtract};
use crate::ops::grad_helpers::{unbroadcast, zero_cotangents};
use crate::ops::unary::{conjugate, negative};

/// True for ops whose output is bool or integer whatever the inputs, and
/// for integer `power` (whose derivative would need negative integer
/// exponents): their rules are zeros.
fn non_differentiable(op: BinaryOp, out: &Array) -> bool {
    (op == BinaryOp::Power && !out.dtype().is_inexact())
        || matches!(
            op.rule(),
            DtypeRule::Equality
                | DtypeRule::Ordering
                | DtypeRule::Logical
                | DtypeRule::Bitwise
                | DtypeRule::Shift
        )
}

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
                crate::ops::binary::greater_equal(a, b)?
            } else {
                crate::ops::binary::less_equal(a, b)?
            };
            let zero = crate::ops::creation::zeros_like(g)?;
            (
                crate::ops::select::r#where(&pick_a, g, &zero)?,
                crate::ops::select::r#where(&pick_a, &zero, g)?,
            )
        }
        BinaryOp::Power => {
            // d/da = b * a^(b - 1); d/db = log(a) * a^b, taken as 0 where
            // a == 0 (the limit from the right for b > 0).
            let da = multiply(
                b,
                &crate::ops::binary::power(a, &subtract(b, &Array::from(1.0))?)?,
            )?;
            let log_a = crate::ops::unary::log(a)?;
            let zero = crate::ops::creation::zeros_like(out)?;
            let db = crate::ops::select::r#where(
                &crate::ops::binary::equal(a, &Array::from(0.0))?,
                &zero,
                &multiply(&log_a, out)?,
            )?;
            (multiply(g, &da)?, multiply(g, &db)?)
        }
        BinaryOp::ArcTan2 => {
            // atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2).
            let r2 = add(&multiply(a, a)?, &multiply(b, b)?)?;
            let gr = divide(g, &r2)?;
            (multiply(&gr, b)?, negative(&multiply(&gr, a)?)?)
        }
        BinaryOp::LogAddExp => {
            // d/da = exp(a - out), d/db = exp(b - out).
            (
                multiply(g, &crate::ops::unary::exp(&subtract(a, out)?)?)?,
                multiply(g, &crate::ops::unary::exp(&subtract(b, out)?)?)?,
            )
        }
        BinaryOp::Remainder => {
            // a - b * floor(a / b): d/da = 1, d/db = -floor(a / b).
            let q = crate::ops::binary::floor_divide(a, b)?;
            (g.clone(), negative(&multiply(g, &q)?)?)
        }
        BinaryOp::FloorDivide => {
            let zero = crate::ops::creation::zeros_like(g)?;
            (zero.clone(), zero)
        }
        // Bool or integer outputs: `non_differentiable` answers first (zeros);
        // listed so that a new op must say its rule.
        BinaryOp::Equal
        | BinaryOp::NotEqual
        | BinaryOp::Less
        | BinaryOp::LessEqual
        | BinaryOp::Greater
        | BinaryOp::GreaterEqual
        | BinaryOp::LogicalAnd
        | BinaryOp::LogicalOr
        | BinaryOp::BitwiseAnd
        | BinaryOp::BitwiseOr
        | BinaryOp::BitwiseXor
        | BinaryOp::LeftShift
        | BinaryOp::RightShift => {
            return Err(crate::graph::primitive::no_rule(op.name(), "derivative"));
        }
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
    if non_differentiable(op, out) {
        return zero_cotangents(primals, argnums);
    }
    let (a, b) = (&primals[0], &primals[1]);
    // Complex outputs: the cotangents are `g * conj(d out / d operand)`
    // (MLX's convention), that is `conj(conj(g) * d out / d operand)`.
    let (ga, gb) = if out.dtype() == crate::dtype::DType::Complex64 {
        let (ga, gb) = partials(op, a, b, out, &conjugate(g)?)?;
        (conjugate(&ga)?, conjugate(&gb)?)
    } else {
        partials(op, a, b, out, g)?
    };
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
    if non_differentiable(op, out) {
        // A comparison's tangent is zero in the tangents' dtype (a float),
        // as MLX gives it, so code that goes on with it still computes.
        let dtype = tangents
            .iter()
            .flatten()
            .map(Array::dtype)
            .find(|d| d.is_inexact())
            .unwrap_or(out.dtype());
        return crate::ops::creation::zeros(out.shape(), dtype);
    }
    let (a, b) = (&primals[0], &primals[1]);
    let mut total: Option<Array> = None;
    for (i, t) in tangents.iter().enumerate() {
        let Some(t) = t else { continue };
        let t = crate::ops::views::broadcast_to(t, out.shape())?;
        let (da, db) = partials(op, a, b, out, &t)?;
        let term = if i == 0 { da } else { db };
        total = Some(match total {
            Some(prev) => add(&prev, &term)?,
            None => term,
        });
    }
    match total {
        Some(t) => Ok(t),
        None => crate::ops::creation::zeros_like(out),
    }
}

/// Applies `op` to batched operands.
pub(super) fn vmap(
    op: BinaryOp,
    inputs: &[Array],
    axes: &[Option<usize>],
) -> Result<(Array, Option<usize>)> {
    let (aligned, out_axis) = crate::ops::grad_helpers::align_batch(inputs, axes)?;
    Ok((super::build(op, &aligned[0], &aligned[1])?, out_axis))
}
