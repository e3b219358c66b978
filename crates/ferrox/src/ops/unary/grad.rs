//! Derivatives of the unary ops: `d op(x) / dx`, as arrays.
//!
//! Elementwise ops have diagonal Jacobians, so one function serves both
//! modes: vjp multiplies the cotangent and jvp the tangent by the same
//! derivative.
//!
//! Exceptions: the predicates and `bitwise_invert` (bool or integer
//! outputs) have zero cotangents and zero tangents; `real`, `imag` and
//! `conjugate` of complex inputs are linear but not holomorphic, so they
//! have their own rules ([`vjp`], [`jvp`]).

use super::UnaryOp;
use crate::dtype::{Complex64, DType};
use crate::error::Result;
use crate::graph::array::Array;

/// True for ops whose output is bool or integer whatever the input.
fn non_differentiable(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(op, LogicalNot | BitwiseInvert | IsNan | IsInf | IsFinite)
}

/// The cotangent of `x` given the cotangent `g` of `out = op(x)`.
pub(super) fn vjp(op: UnaryOp, x: &Array, out: &Array, g: &Array) -> Result<Array> {
    use UnaryOp::*;
    match op {
        _ if non_differentiable(op) => crate::ops::creation::zeros_like(x),
        // The complex parts: a real cotangent `g` of `re(z)` pulls back to
        // `g`, of `im(z)` to `g * i` (MLX's convention); on real inputs
        // these are identities or zeros and need no special case.
        Real if x.dtype() == DType::Complex64 => g.astype(DType::Complex64),
        Imag if x.dtype() == DType::Complex64 => {
            let i = Array::from_slice(&[Complex64::new(0.0, 1.0)], &[])?;
            crate::ops::binary::multiply(&g.astype(DType::Complex64)?, &i)
        }
        Conjugate => super::conjugate(g),
        Imag => crate::ops::creation::zeros_like(x),
        Real => Ok(g.clone()),
        // A holomorphic f pulls `g` back to `g * conj(f'(z))` (MLX's
        // convention), which is `conj(conj(g) * f'(z))`. |z| is not
        // holomorphic; its rule is the real one.
        _ if x.dtype() == DType::Complex64 && op != Abs => {
            super::conjugate(&times_derivative(op, x, out, &super::conjugate(g)?)?)
        }
        _ => times_derivative(op, x, out, g),
    }
}

/// The tangent of `out = op(x)` given the tangent `t` of `x`.
pub(super) fn jvp(op: UnaryOp, x: &Array, out: &Array, t: &Array) -> Result<Array> {
    use UnaryOp::*;
    match op {
        _ if non_differentiable(op) => crate::ops::creation::zeros_like(out),
        Real => super::real(t),
        Imag => super::imag(t),
        Conjugate => super::conjugate(t),
        // |z| is not holomorphic: d|z| = re(conj(z) dz) / |z|.
        Abs if x.dtype() == DType::Complex64 => super::real(&crate::ops::binary::multiply(
            &super::conjugate(&super::sign(x)?)?,
            t,
        )?),
        _ => times_derivative(op, x, out, t),
    }
}

/// `g * op'(x)`, where `out = op(x)` is reused when the derivative is
/// cheaper in terms of the output (exp, tanh, sigmoid, sqrt, ...).
pub(super) fn times_derivative(op: UnaryOp, x: &Array, out: &Array, g: &Array) -> Result<Array> {
    use crate::ops::binary::{add, divide, multiply, subtract};
    use UnaryOp::*;
    let one = || Array::from(1.0);
    let d = match op {
        Negative => return super::negative(g),
        Exp => out.clone(),
        Expm1 => add(out, &one())?,
        Log => return divide(g, x),
        Log1p => return divide(g, &add(x, &one())?),
        Log2 => return divide(g, &multiply(x, &Array::from(std::f64::consts::LN_2))?),
        Log10 => return divide(g, &multiply(x, &Array::from(std::f64::consts::LN_10))?),
        Sin => super::cos(x)?,
        Cos => super::negative(&super::sin(x)?)?,
        Tan => add(&one(), &multiply(out, out)?)?,
        Sinh => super::cosh(x)?,
        Cosh => super::sinh(x)?,
        Tanh => subtract(&one(), &multiply(out, out)?)?,
        Sigmoid => multiply(out, &subtract(&one(), out)?)?,
        Sqrt => return divide(g, &multiply(out, &Array::from(2.0))?),
        Rsqrt => multiply(&divide(out, x)?, &Array::from(-0.5))?,
        Reciprocal => super::negative(&multiply(out, out)?)?,
        Square => multiply(x, &Array::from(2.0))?,
        Abs => super::sign(x)?,
        Erf => multiply(
            &super::exp(&super::negative(&multiply(x, x)?)?)?,
            &Array::from(std::f64::consts::FRAC_2_SQRT_PI),
        )?,
        ArcSin => super::rsqrt(&subtract(&one(), &multiply(x, x)?)?)?,
        ArcCos => super::negative(&super::rsqrt(&subtract(&one(), &multiply(x, x)?)?)?)?,
        ArcTan => return divide(g, &add(&one(), &multiply(x, x)?)?),
        ArcSinh => super::rsqrt(&add(&multiply(x, x)?, &one())?)?,
        ArcCosh => super::rsqrt(&subtract(&multiply(x, x)?, &one())?)?,
        ArcTanh => return divide(g, &subtract(&one(), &multiply(x, x)?)?),
        // erfinv'(x) = sqrt(pi) / 2 * exp(erfinv(x)^2).
        ErfInv => multiply(
            &super::exp(&multiply(out, out)?)?,
            &Array::from(std::f64::consts::PI.sqrt() / 2.0),
        )?,
        Sign | Floor | Ceil | Trunc | Round(_) => return crate::ops::creation::zeros_like(g),
        // Handled before this function is reached (zeros, or their own
        // rules in `vjp`/`jvp`); listed so that a new op must say its rule.
        LogicalNot | BitwiseInvert | IsNan | IsInf | IsFinite | Real | Imag | Conjugate => {
            return Err(crate::graph::primitive::no_rule(op.name(), "derivative"));
        }
    };
    multiply(g, &d)
}
