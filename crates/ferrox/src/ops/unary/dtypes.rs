//! MLX's dtype rules for the unary ops, and the builder that applies them.
//!
//! | ops | bool / integer input | float input | complex64 input |
//! |---|---|---|---|
//! | `sqrt` `rsqrt` `reciprocal` `exp` `log*` trig and hyperbolic | computed in float32 | same dtype | same dtype |
//! | `expm1` `log1p` `sigmoid` `erf` `erfinv` | computed in float32 | same dtype | error |
//! | `abs` | identity for bool and unsigned | same dtype | float32 |
//! | `negative` | error for bool, wrapping for integers | same dtype | same dtype |
//! | `sign` `square` | same dtype (bool: identity, and) | same dtype | same dtype |
//! | `floor` `ceil` `round` | identity (`round` with negative decimals rounds integers) | same dtype | error |
//! | `logical_not` `isnan` `isinf` `isfinite` | bool (constant for the last three) | bool | bool |
//! | `bitwise_invert` | same dtype (bool: logical not) | error | error |
//! | `real` `imag` `conjugate` | identity, zeros, identity | identity, zeros, identity | float32, float32, same |

use super::{Unary, UnaryOp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::creation::{full, zeros_like};

/// How an op applies to an input of some dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    /// The result is the input itself.
    Identity,
    /// A constant bool array of the input's shape.
    Constant(bool),
    /// Zeros of the input's shape and dtype.
    Zeros,
    /// A `Unary` node on the input cast to `input`, producing `output`.
    Node { input: DType, output: DType },
}

/// float32 for bool and integers, the dtype itself otherwise (MLX's
/// `at_least_float`).
fn at_least_float(dtype: DType) -> DType {
    if dtype.is_inexact() {
        dtype
    } else {
        DType::Float32
    }
}

fn not_supported(op: UnaryOp, dtype: DType) -> Error {
    Error::dtype(op.name(), format!("dtype {dtype} is not supported"))
}

/// The plan for `op` on an input of `dtype`, or the dtype error.
pub(super) fn plan(op: UnaryOp, dtype: DType) -> Result<Plan> {
    use DType::{Bool, Complex64, Float32};
    use UnaryOp::*;
    let complex = dtype == Complex64;
    let exact = !dtype.is_inexact(); // bool or integer
    let unsigned_or_bool = dtype == Bool || dtype.category() == crate::dtype::Category::Unsigned;
    let same = Plan::Node {
        input: dtype,
        output: dtype,
    };
    let float = Plan::Node {
        input: at_least_float(dtype),
        output: at_least_float(dtype),
    };
    Ok(match op {
        Abs if complex => Plan::Node {
            input: dtype,
            output: Float32,
        },
        Abs if unsigned_or_bool => Plan::Identity,
        Abs | Square => same,
        Negative if dtype == Bool => {
            return Err(Error::dtype(
                "negative",
                "not supported for bool, use logical_not instead",
            ));
        }
        Negative => same,
        Sign if dtype == Bool => Plan::Identity,
        Sign => same,
        Sqrt | Rsqrt | Reciprocal | Exp | Log | Log2 | Log10 | Sin | Cos | Tan | ArcSin
        | ArcCos | ArcTan | Sinh | Cosh | Tanh | ArcSinh | ArcCosh | ArcTanh => float,
        Expm1 | Log1p | Sigmoid | Erf | ErfInv if complex => return Err(not_supported(op, dtype)),
        Expm1 | Log1p | Sigmoid | Erf | ErfInv => float,
        Floor | Ceil | Trunc | Round(_) if complex => return Err(not_supported(op, dtype)),
        Round(d) if dtype.is_integer() && d < 0 => same,
        Floor | Ceil | Trunc | Round(_) if exact => Plan::Identity,
        Floor | Ceil | Trunc | Round(_) => same,
        LogicalNot => Plan::Node {
            input: dtype,
            output: Bool,
        },
        BitwiseInvert if dtype.is_inexact() => {
            return Err(Error::dtype(
                "bitwise_invert",
                format!("only integer and bool dtypes are supported, got {dtype}"),
            ));
        }
        BitwiseInvert => same,
        IsNan | IsInf if exact => Plan::Constant(false),
        IsFinite if exact => Plan::Constant(true),
        IsNan | IsInf | IsFinite => Plan::Node {
            input: dtype,
            output: Bool,
        },
        Real | Imag if complex => Plan::Node {
            input: dtype,
            output: Float32,
        },
        Real => Plan::Identity,
        Imag => Plan::Zeros,
        Conjugate if complex => same,
        Conjugate => Plan::Identity,
    })
}

/// The output dtype of a `Unary(op)` node whose input has `dtype`, if the
/// builders can make such a node.
pub(super) fn output_dtype(op: UnaryOp, dtype: DType) -> Option<DType> {
    match plan(op, dtype).ok()? {
        Plan::Node { input, output } if input == dtype => Some(output),
        // Shortcut plans still have a well-defined node the kernels accept.
        Plan::Identity | Plan::Zeros => Some(dtype),
        Plan::Constant(_) => Some(DType::Bool),
        Plan::Node { .. } => None,
    }
}

/// Builds `op(a)` with MLX's dtype rules (see the module table).
pub(super) fn build(op: UnaryOp, a: &Array) -> Result<Array> {
    match plan(op, a.dtype())? {
        Plan::Identity => Ok(a.clone()),
        Plan::Constant(v) => full(a.shape(), v as u8 as f64, DType::Bool),
        Plan::Zeros => zeros_like(a),
        Plan::Node { input, output } => {
            let x = a.astype(input)?;
            Ok(Array::from_op(
                a.shape().to_vec(),
                output,
                Unary(op),
                vec![x],
            ))
        }
    }
}
