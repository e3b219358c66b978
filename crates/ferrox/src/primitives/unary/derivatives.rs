//! Derivatives of the unary ops: `d op(x) / dx`, as arrays.
//!
//! Elementwise ops have diagonal Jacobians, so one function serves both
//! modes: vjp multiplies the cotangent and jvp the tangent by the same
//! derivative.

use super::UnaryOp;
use crate::{Array, Result};

/// `g * op'(x)`, where `out = op(x)` is reused when the derivative is
/// cheaper in terms of the output (exp, tanh, sigmoid, sqrt, ...).
pub(super) fn times_derivative(op: UnaryOp, x: &Array, out: &Array, g: &Array) -> Result<Array> {
    use crate::{add, divide, multiply, subtract};
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
        Sign | Floor | Ceil => return crate::zeros_like(g),
        other => return Err(crate::primitives::no_rule(other.name(), "derivative")),
    };
    multiply(g, &d)
}
