//! CPU kernels of the unary elementwise functions: the [`UnaryOp`]
//! selector, per-dtype dispatch and the mapping loop.
//!
//! The loop is [`elementwise::map_slices`] (the one mapping loop, with
//! streaming stores for outputs beyond the last-level cache). Its closures
//! are `#[inline(always)]`: a closure this big (the math functions are
//! inlined into it) is otherwise not inlined into pulp's AVX2+FMA function
//! and compiles for the baseline target: no vectors, and every `mul_add` a
//! call to `fmaf` (measured: `sin` 35 ns/element against 2 ns). Non-contiguous
//! inputs are first gathered into a contiguous buffer (one memory-bound
//! pass) so that they take the same vectorised loop.
//!
//! [`elementwise::map_slices`]: crate::backend::cpu::elementwise::map_slices

pub(crate) mod element;

use crate::backend::cpu::elementwise::{map_slices, out_storage};
use crate::backend::cpu::parallel::simd;
use crate::dtype::{Complex64, DType};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use element::{FloatElement, IntElement, round_decimals, round_int_decimals};
use half::{bf16, f16};
use std::borrow::Cow;

/// The unary elementwise operations.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UnaryOp {
    Abs,
    Negative,
    Sign,
    Square,
    Sqrt,
    Rsqrt,
    Reciprocal,
    Exp,
    Expm1,
    Log,
    Log1p,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    ArcSin,
    ArcCos,
    ArcTan,
    Sinh,
    Cosh,
    Tanh,
    ArcSinh,
    ArcCosh,
    ArcTanh,
    Sigmoid,
    Erf,
    ErfInv,
    Floor,
    Ceil,
    /// Round towards zero.
    Trunc,
    /// Round half to even to this many decimal places (negative: tens,
    /// hundreds, ...).
    Round(i32),
    LogicalNot,
    BitwiseInvert,
    IsNan,
    IsInf,
    IsFinite,
    Real,
    Imag,
    Conjugate,
}

impl UnaryOp {
    /// The op's public name (MLX's).
    ///
    /// ```
    /// assert_eq!(ferrox::ops::unary::UnaryOp::ArcTanh.name(), "arctanh");
    /// ```
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Negative => "negative",
            Sign => "sign",
            Square => "square",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Reciprocal => "reciprocal",
            Exp => "exp",
            Expm1 => "expm1",
            Log => "log",
            Log1p => "log1p",
            Log2 => "log2",
            Log10 => "log10",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            ArcSin => "arcsin",
            ArcCos => "arccos",
            ArcTan => "arctan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            ArcSinh => "arcsinh",
            ArcCosh => "arccosh",
            ArcTanh => "arctanh",
            Sigmoid => "sigmoid",
            Erf => "erf",
            ErfInv => "erfinv",
            Floor => "floor",
            Ceil => "ceil",
            Trunc => "trunc",
            Round(_) => "round",
            LogicalNot => "logical_not",
            BitwiseInvert => "bitwise_invert",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
            Real => "real",
            Imag => "imag",
            Conjugate => "conjugate",
        }
    }
}

/// Evaluates `op` on `x` into a new array described by `out` (whose dtype
/// the caller checked against the op's dtype rules).
pub fn eval(op: UnaryOp, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    match x.dtype {
        DType::Float32 => float::<f32>(op, x, out),
        DType::Float64 => float::<f64>(op, x, out),
        DType::Float16 => float::<f16>(op, x, out),
        DType::BFloat16 => float::<bf16>(op, x, out),
        DType::Complex64 => complex(op, x, out),
        DType::Bool => boolean(op, x, out),
        DType::UInt8 => integer::<u8>(op, x, out),
        DType::UInt16 => integer::<u16>(op, x, out),
        DType::UInt32 => integer::<u32>(op, x, out),
        DType::UInt64 => integer::<u64>(op, x, out),
        DType::Int8 => integer::<i8>(op, x, out),
        DType::Int16 => integer::<i16>(op, x, out),
        DType::Int32 => integer::<i32>(op, x, out),
        DType::Int64 => integer::<i64>(op, x, out),
    }
}

fn unsupported(op: UnaryOp, dtype: DType) -> Error {
    Error::dtype(op.name(), format!("dtype {dtype} is not supported"))
}

/// The input's elements in row-major order, borrowed when contiguous.
fn elements<'a, T: Pod>(x: &'a Operand<'_>) -> Cow<'a, [T]> {
    match x.data.as_contiguous::<T>(x.shape) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(x.data.to_vec::<T>(x.shape)),
    }
}

/// Maps `f` over the elements of `x` into a new contiguous array.
fn map<I: Pod, O: Pod>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
    f: impl Fn(I) -> O + Sync + Send + Copy,
) -> Result<Data> {
    let mut storage = out_storage(out)?;
    map_slices(&elements::<I>(x), storage.as_mut_slice::<O>(), f);
    Ok(Data::contiguous(storage, out.shape))
}

/// `sin`/`cos`/`tan`: the medium-range reduction for every element (cheap,
/// vectorised), then, only if some `|x| >= 2^28` (or inf/NaN) is present,
/// those elements again through the full-range function (its Payne–Hanek
/// path costs several times the rest).
fn trig<T: FloatElement>(
    x: &Operand<'_>,
    out: OutSpec<'_>,
    full: impl Fn(T) -> T + Sync + Send + Copy,
    medium: impl Fn(T) -> T + Sync + Send + Copy,
) -> Result<Data> {
    let src = elements::<T>(x);
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    map_slices(&src, dst, medium);
    let beyond = simd(
        #[inline(always)]
        || {
            src.iter()
                .fold(false, |acc, &v| acc | v.beyond_trig_medium())
        },
    );
    if beyond {
        simd(
            #[inline(always)]
            || {
                for (o, &v) in dst.iter_mut().zip(src.iter()) {
                    if v.beyond_trig_medium() {
                        *o = full(v);
                    }
                }
            },
        );
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// The float ops that map each element through one `FloatElement`
/// function, listed once for every kernel that applies them (this module's
/// and the fused engine's tile loop): `float_map!(T, op, |f| expr, else
/// other)` evaluates `expr` with `f` bound to `op`'s function of `T` (a
/// function item, so loops over it inline and vectorise), or `other` for
/// any other op.
macro_rules! float_map {
    ($t:ty, $op:expr, |$f:ident| $apply:expr, else $other:expr) => {{
        use $crate::backend::cpu::unary::UnaryOp as U;
        use $crate::backend::cpu::unary::element::FloatElement as E;
        match $op {
            U::Abs => {
                let $f = <$t as E>::abs;
                $apply
            }
            U::Negative => {
                let $f = <$t as E>::neg;
                $apply
            }
            U::Sign => {
                let $f = <$t as E>::sign;
                $apply
            }
            U::Square => {
                let $f = <$t as E>::square;
                $apply
            }
            U::Sqrt => {
                let $f = <$t as E>::sqrt;
                $apply
            }
            U::Rsqrt => {
                let $f = <$t as E>::rsqrt;
                $apply
            }
            U::Reciprocal => {
                let $f = <$t as E>::recip;
                $apply
            }
            U::Exp => {
                let $f = <$t as E>::exp;
                $apply
            }
            U::Expm1 => {
                let $f = <$t as E>::expm1;
                $apply
            }
            U::Log => {
                let $f = <$t as E>::ln;
                $apply
            }
            U::Log1p => {
                let $f = <$t as E>::ln_1p;
                $apply
            }
            U::Log2 => {
                let $f = <$t as E>::log2;
                $apply
            }
            U::Log10 => {
                let $f = <$t as E>::log10;
                $apply
            }
            U::ArcSin => {
                let $f = <$t as E>::asin;
                $apply
            }
            U::ArcCos => {
                let $f = <$t as E>::acos;
                $apply
            }
            U::ArcTan => {
                let $f = <$t as E>::atan;
                $apply
            }
            U::Sinh => {
                let $f = <$t as E>::sinh;
                $apply
            }
            U::Cosh => {
                let $f = <$t as E>::cosh;
                $apply
            }
            U::Tanh => {
                let $f = <$t as E>::tanh;
                $apply
            }
            U::ArcSinh => {
                let $f = <$t as E>::asinh;
                $apply
            }
            U::ArcCosh => {
                let $f = <$t as E>::acosh;
                $apply
            }
            U::ArcTanh => {
                let $f = <$t as E>::atanh;
                $apply
            }
            U::Sigmoid => {
                let $f = <$t as E>::sigmoid;
                $apply
            }
            U::Erf => {
                let $f = <$t as E>::erf;
                $apply
            }
            U::ErfInv => {
                let $f = <$t as E>::erfinv;
                $apply
            }
            U::Floor => {
                let $f = <$t as E>::floor;
                $apply
            }
            U::Ceil => {
                let $f = <$t as E>::ceil;
                $apply
            }
            U::Trunc => {
                let $f = <$t as E>::trunc;
                $apply
            }
            U::Round(0) => {
                let $f = <$t as E>::rint;
                $apply
            }
            _ => $other,
        }
    }};
}
pub(crate) use float_map;

fn float<T: FloatElement>(op: UnaryOp, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    use UnaryOp::*;
    float_map!(T, op, |f| map(x, out, f), else match op {
        Sin => trig(x, out, T::sin, T::sin_medium),
        Cos => trig(x, out, T::cos, T::cos_medium),
        Tan => trig(x, out, T::tan, T::tan_medium),
        Round(d) => map(x, out, move |v: T| round_decimals(v, d)),
        LogicalNot => map(x, out, |v: T| v.is_zero()),
        IsNan => map(x, out, T::is_nan),
        IsInf => map(x, out, T::is_inf),
        IsFinite => map(x, out, T::is_finite),
        Real | Conjugate => map(x, out, |v: T| v),
        Imag => map(x, out, |_: T| T::narrow(0.0)),
        _ => Err(unsupported(op, x.dtype)),
    })
}

fn integer<T: IntElement>(op: UnaryOp, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    use UnaryOp::*;
    match op {
        Abs => map(x, out, T::abs),
        Negative => map(x, out, T::neg),
        Sign => map(x, out, T::sign),
        Square => map(x, out, T::square),
        BitwiseInvert => map(x, out, T::not),
        LogicalNot => map(x, out, |v: T| v.is_zero()),
        Round(d) if d < 0 => map(x, out, move |v: T| round_int_decimals(v, d)),
        // Identities and constants (the builders normally short-cut these).
        Floor | Ceil | Trunc | Round(_) | Real | Conjugate => map(x, out, |v: T| v),
        Imag => map(x, out, |_: T| T::from_i128(0)),
        IsNan | IsInf => map(x, out, |_: T| false),
        IsFinite => map(x, out, |_: T| true),
        _ => Err(unsupported(op, x.dtype)),
    }
}

fn boolean(op: UnaryOp, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    use UnaryOp::*;
    match op {
        LogicalNot | BitwiseInvert => map(x, out, |v: bool| !v),
        Abs | Sign | Square | Floor | Ceil | Trunc | Round(_) | Real | Conjugate => {
            map(x, out, |v: bool| v)
        }
        Imag | IsNan | IsInf => map(x, out, |_: bool| false),
        IsFinite => map(x, out, |_: bool| true),
        _ => Err(unsupported(op, x.dtype)),
    }
}

/// numpy's complex sign: `z / |z|`, 0 for 0.
fn complex_sign(z: Complex64) -> Complex64 {
    if z.re == 0.0 && z.im == 0.0 {
        Complex64::new(0.0, 0.0)
    } else {
        z.unscale(z.norm())
    }
}

fn complex(op: UnaryOp, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    use UnaryOp::*;
    type C = Complex64;
    match op {
        Abs => map(x, out, |z: C| z.norm()),
        Negative => map(x, out, |z: C| -z),
        Sign => map(x, out, complex_sign),
        Square => map(x, out, |z: C| z * z),
        Sqrt => map(x, out, |z: C| z.sqrt()),
        Rsqrt => map(x, out, |z: C| z.sqrt().finv()),
        Reciprocal => map(x, out, |z: C| z.finv()),
        Exp => map(x, out, |z: C| z.exp()),
        Log => map(x, out, |z: C| z.ln()),
        Log2 => map(x, out, |z: C| z.log2()),
        Log10 => map(x, out, |z: C| z.log10()),
        Sin => map(x, out, |z: C| z.sin()),
        Cos => map(x, out, |z: C| z.cos()),
        Tan => map(x, out, |z: C| z.tan()),
        ArcSin => map(x, out, |z: C| z.asin()),
        ArcCos => map(x, out, |z: C| z.acos()),
        ArcTan => map(x, out, |z: C| z.atan()),
        Sinh => map(x, out, |z: C| z.sinh()),
        Cosh => map(x, out, |z: C| z.cosh()),
        Tanh => map(x, out, |z: C| z.tanh()),
        ArcSinh => map(x, out, |z: C| z.asinh()),
        ArcCosh => map(x, out, |z: C| z.acosh()),
        ArcTanh => map(x, out, |z: C| z.atanh()),
        LogicalNot => map(x, out, |z: C| z.re == 0.0 && z.im == 0.0),
        IsNan => map(x, out, |z: C| z.re.is_nan() || z.im.is_nan()),
        IsInf => map(x, out, |z: C| z.re.is_infinite() || z.im.is_infinite()),
        IsFinite => map(x, out, |z: C| z.re.is_finite() && z.im.is_finite()),
        Real => map(x, out, |z: C| z.re),
        Imag => map(x, out, |z: C| z.im),
        Conjugate => map(x, out, |z: C| z.conj()),
        Expm1 | Log1p | Sigmoid | Erf | ErfInv | Floor | Ceil | Trunc | Round(_)
        | BitwiseInvert => Err(unsupported(op, x.dtype)),
    }
}
