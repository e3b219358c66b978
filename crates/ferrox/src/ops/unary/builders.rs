//! The public unary op functions (see the parent module for the rules).

use super::UnaryOp;
use super::dtypes::build;
use crate::error::Result;
use crate::graph::array::Array;

/// Elementwise absolute value. Complex inputs give float32 magnitudes; bool and unsigned inputs are returned as they are; `abs` of the most negative integer wraps (numpy).
///
/// ```
/// let a = ferrox::Array::from_slice(&[-1.5f32, 2.0], &[2])?;
/// assert_eq!(ferrox::abs(&a)?.to_vec::<f32>()?, vec![1.5, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn abs(a: &Array) -> Result<Array> {
    build(UnaryOp::Abs, a)
}

/// Elementwise `-a` (wrapping for integers). Bool inputs are an error: use [`logical_not`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, -2.0], &[2])?;
/// assert_eq!(ferrox::negative(&a)?.to_vec::<f32>()?, vec![-1.0, 2.0]);
/// assert!(ferrox::negative(&ferrox::Array::scalar(true)).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn negative(a: &Array) -> Result<Array> {
    build(UnaryOp::Negative, a)
}

/// Elementwise sign: -1, 0 or 1 (numpy: `sign(-0.0) = 0`, `sign(nan) = nan`; complex `z / |z|`). Same dtype as the input.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-3i32, 0, 7], &[3])?;
/// assert_eq!(ferrox::sign(&a)?.to_vec::<i32>()?, vec![-1, 0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sign(a: &Array) -> Result<Array> {
    build(UnaryOp::Sign, a)
}

/// Elementwise `a * a`, in the input's dtype (wrapping for integers).
///
/// ```
/// let a = ferrox::Array::from_slice(&[3i32, -4], &[2])?;
/// assert_eq!(ferrox::square(&a)?.to_vec::<i32>()?, vec![9, 16]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn square(a: &Array) -> Result<Array> {
    build(UnaryOp::Square, a)
}

/// Elementwise square root; NaN for negative reals. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[4u8, 9], &[2])?;
/// assert_eq!(ferrox::sqrt(&a)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sqrt(a: &Array) -> Result<Array> {
    build(UnaryOp::Sqrt, a)
}

/// Elementwise `1 / sqrt(a)`. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[4.0f32, 0.25], &[2])?;
/// assert_eq!(ferrox::rsqrt(&a)?.to_vec::<f32>()?, vec![0.5, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rsqrt(a: &Array) -> Result<Array> {
    build(UnaryOp::Rsqrt, a)
}

/// Elementwise `1 / a`. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i32, 0], &[2])?;
/// assert_eq!(ferrox::reciprocal(&a)?.to_vec::<f32>()?, vec![0.5, f32::INFINITY]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn reciprocal(a: &Array) -> Result<Array> {
    build(UnaryOp::Reciprocal, a)
}

/// Elementwise `e^a`. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::exp(&a)?.to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn exp(a: &Array) -> Result<Array> {
    build(UnaryOp::Exp, a)
}

/// Elementwise `e^a - 1`, accurate for small `a`. Not defined for complex64.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1e-10f32], &[1])?;
/// assert_eq!(ferrox::expm1(&a)?.to_vec::<f32>()?, vec![1e-10]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn expm1(a: &Array) -> Result<Array> {
    build(UnaryOp::Expm1, a)
}

/// Elementwise natural logarithm (`-inf` at 0, NaN below). Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 0.0], &[2])?;
/// assert_eq!(ferrox::log(&a)?.to_vec::<f32>()?, vec![0.0, f32::NEG_INFINITY]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log(a: &Array) -> Result<Array> {
    build(UnaryOp::Log, a)
}

/// Elementwise `ln(1 + a)`, accurate for small real `a`. Complex64 inputs
/// compute `log(1 + a)` (without the small-`a` accuracy), as MLX does.
///
/// ```
/// use ferrox::{Array, Complex64};
/// let a = Array::from_slice(&[1e-10f32, -1.0], &[2])?;
/// assert_eq!(ferrox::log1p(&a)?.to_vec::<f32>()?, vec![1e-10, f32::NEG_INFINITY]);
/// let z = Array::from_slice(&[Complex64::new(0.0, 0.0)], &[1])?;
/// assert_eq!(ferrox::log1p(&z)?.to_vec::<Complex64>()?, vec![Complex64::new(0.0, 0.0)]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log1p(a: &Array) -> Result<Array> {
    if a.dtype() == crate::dtype::DType::Complex64 {
        return log(&crate::ops::binary::add(a, &Array::from(1.0))?);
    }
    build(UnaryOp::Log1p, a)
}

/// Elementwise base-2 logarithm. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[8i32, 1], &[2])?;
/// assert_eq!(ferrox::log2(&a)?.to_vec::<f32>()?, vec![3.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log2(a: &Array) -> Result<Array> {
    build(UnaryOp::Log2, a)
}

/// Elementwise base-10 logarithm. Bool and integer inputs compute in float32.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1000.0f32, 0.1], &[2])?;
/// assert_eq!(ferrox::log10(&a)?.to_vec::<f32>()?, vec![3.0, -1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log10(a: &Array) -> Result<Array> {
    build(UnaryOp::Log10, a)
}

/// Elementwise sine (radians), accurate over the whole float range.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, std::f32::consts::FRAC_PI_2], &[2])?;
/// assert_eq!(ferrox::sin(&a)?.to_vec::<f32>()?, vec![0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sin(a: &Array) -> Result<Array> {
    build(UnaryOp::Sin, a)
}

/// Elementwise cosine (radians).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, std::f32::consts::PI], &[2])?;
/// assert_eq!(ferrox::cos(&a)?.to_vec::<f32>()?, vec![1.0, -1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cos(a: &Array) -> Result<Array> {
    build(UnaryOp::Cos, a)
}

/// Elementwise tangent (radians).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
/// assert_eq!(ferrox::tan(&a)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tan(a: &Array) -> Result<Array> {
    build(UnaryOp::Tan, a)
}

/// Elementwise inverse sine; NaN outside `[-1, 1]` for reals.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let y = ferrox::arcsin(&a)?.to_vec::<f32>()?;
/// assert_eq!(y[0], std::f32::consts::FRAC_PI_2);
/// assert!(y[1].is_nan());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arcsin(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcSin, a)
}

/// Elementwise inverse cosine; NaN outside `[-1, 1]` for reals.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, -1.0], &[2])?;
/// assert_eq!(ferrox::arccos(&a)?.to_vec::<f32>()?, vec![0.0, std::f32::consts::PI]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arccos(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcCos, a)
}

/// Elementwise inverse tangent.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, f32::INFINITY], &[2])?;
/// assert_eq!(ferrox::arctan(&a)?.to_vec::<f32>()?, vec![0.0, std::f32::consts::FRAC_PI_2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arctan(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcTan, a)
}

/// Elementwise hyperbolic sine.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
/// assert_eq!(ferrox::sinh(&a)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sinh(a: &Array) -> Result<Array> {
    build(UnaryOp::Sinh, a)
}

/// Elementwise hyperbolic cosine.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
/// assert_eq!(ferrox::cosh(&a)?.to_vec::<f32>()?, vec![1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cosh(a: &Array) -> Result<Array> {
    build(UnaryOp::Cosh, a)
}

/// Elementwise hyperbolic tangent.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 20.0], &[2])?;
/// assert_eq!(ferrox::tanh(&a)?.to_vec::<f32>()?, vec![0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tanh(a: &Array) -> Result<Array> {
    build(UnaryOp::Tanh, a)
}

/// Elementwise inverse hyperbolic sine.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32], &[1])?;
/// assert_eq!(ferrox::arcsinh(&a)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arcsinh(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcSinh, a)
}

/// Elementwise inverse hyperbolic cosine; NaN below 1 for reals.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// assert_eq!(ferrox::arccosh(&a)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arccosh(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcCosh, a)
}

/// Elementwise inverse hyperbolic tangent; ±inf at ±1, NaN beyond for reals.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 1.0], &[2])?;
/// assert_eq!(ferrox::arctanh(&a)?.to_vec::<f32>()?, vec![0.0, f32::INFINITY]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arctanh(a: &Array) -> Result<Array> {
    build(UnaryOp::ArcTanh, a)
}

/// Elementwise logistic sigmoid `1 / (1 + e^-a)`. Not defined for complex64.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, f32::INFINITY], &[2])?;
/// assert_eq!(ferrox::sigmoid(&a)?.to_vec::<f32>()?, vec![0.5, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sigmoid(a: &Array) -> Result<Array> {
    build(UnaryOp::Sigmoid, a)
}

/// Elementwise error function. Not defined for complex64.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 10.0], &[2])?;
/// assert_eq!(ferrox::erf(&a)?.to_vec::<f32>()?, vec![0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn erf(a: &Array) -> Result<Array> {
    build(UnaryOp::Erf, a)
}

/// Elementwise inverse error function (±inf at ±1, NaN beyond). Not defined for complex64.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, -1.0], &[2])?;
/// assert_eq!(ferrox::erfinv(&a)?.to_vec::<f32>()?, vec![0.0, f32::NEG_INFINITY]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn erfinv(a: &Array) -> Result<Array> {
    build(UnaryOp::ErfInv, a)
}

/// Elementwise floor. Integer and bool inputs are returned as they are; complex64 is an error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-1.5f32, 2.5], &[2])?;
/// assert_eq!(ferrox::floor(&a)?.to_vec::<f32>()?, vec![-2.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn floor(a: &Array) -> Result<Array> {
    build(UnaryOp::Floor, a)
}

/// Elementwise ceiling. Integer and bool inputs are returned as they are; complex64 is an error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-1.5f32, 2.5], &[2])?;
/// assert_eq!(ferrox::ceil(&a)?.to_vec::<f32>()?, vec![-1.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ceil(a: &Array) -> Result<Array> {
    build(UnaryOp::Ceil, a)
}

/// Elementwise rounding towards zero. Integer and bool inputs are returned as they are; complex64 is an error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[-1.5f32, 2.5, -0.2], &[3])?;
/// assert_eq!(ferrox::trunc(&a)?.to_vec::<f32>()?, vec![-1.0, 2.0, -0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn trunc(a: &Array) -> Result<Array> {
    build(UnaryOp::Trunc, a)
}

/// Elementwise `a == 0` as bool (NaN counts as true, so gives false).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 2.0], &[2])?;
/// assert_eq!(ferrox::logical_not(&a)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logical_not(a: &Array) -> Result<Array> {
    build(UnaryOp::LogicalNot, a)
}

/// Elementwise bitwise NOT of integers (`!a`); logical NOT of bool. Float and complex inputs are an error.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0u8, 0xF0], &[2])?;
/// assert_eq!(ferrox::bitwise_invert(&a)?.to_vec::<u8>()?, vec![0xFF, 0x0F]);
/// assert!(ferrox::bitwise_invert(&ferrox::ones(&[1], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bitwise_invert(a: &Array) -> Result<Array> {
    build(UnaryOp::BitwiseInvert, a)
}

/// Elementwise NaN test, as bool (complex: either part NaN).
///
/// ```
/// let a = ferrox::Array::from_slice(&[f32::NAN, 1.0], &[2])?;
/// assert_eq!(ferrox::isnan(&a)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isnan(a: &Array) -> Result<Array> {
    build(UnaryOp::IsNan, a)
}

/// Elementwise infinity test (either sign), as bool (complex: either part infinite).
///
/// ```
/// let a = ferrox::Array::from_slice(&[f32::NEG_INFINITY, f32::NAN], &[2])?;
/// assert_eq!(ferrox::isinf(&a)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isinf(a: &Array) -> Result<Array> {
    build(UnaryOp::IsInf, a)
}

/// Elementwise finiteness test (neither infinite nor NaN), as bool.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, f32::INFINITY, f32::NAN], &[3])?;
/// assert_eq!(ferrox::isfinite(&a)?.to_vec::<bool>()?, vec![true, false, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isfinite(a: &Array) -> Result<Array> {
    build(UnaryOp::IsFinite, a)
}

/// The real part: float32 for complex64 inputs; other inputs are returned as they are.
///
/// ```
/// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(1.0, 2.0)], &[1])?;
/// assert_eq!(ferrox::real(&z)?.to_vec::<f32>()?, vec![1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn real(a: &Array) -> Result<Array> {
    build(UnaryOp::Real, a)
}

/// The imaginary part: float32 for complex64 inputs, zeros of the input's dtype otherwise.
///
/// ```
/// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(1.0, 2.0)], &[1])?;
/// assert_eq!(ferrox::imag(&z)?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn imag(a: &Array) -> Result<Array> {
    build(UnaryOp::Imag, a)
}

/// The complex conjugate; other inputs are returned as they are.
///
/// ```
/// let z = ferrox::Array::from_slice(&[ferrox::Complex64::new(1.0, 2.0)], &[1])?;
/// assert_eq!(ferrox::conjugate(&z)?.to_vec::<ferrox::Complex64>()?, vec![ferrox::Complex64::new(1.0, -2.0)]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conjugate(a: &Array) -> Result<Array> {
    build(UnaryOp::Conjugate, a)
}

/// Elementwise rounding to `decimals` decimal places, half to even
/// (numpy's `round`; negative `decimals` round to tens, hundreds, ...).
/// Same dtype as the input; integers are exact (unchanged for
/// `decimals >= 0`); complex64 rounds the real and imaginary parts.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.5f32, 1.5, 2.675], &[3])?;
/// assert_eq!(ferrox::round(&a, 0)?.to_vec::<f32>()?, vec![0.0, 2.0, 3.0]);
/// assert_eq!(ferrox::round(&a, 1)?.to_vec::<f32>()?, vec![0.5, 1.5, 2.7]);
/// let i = ferrox::Array::from_slice(&[25i32, 35, -251], &[3])?;
/// assert_eq!(ferrox::round(&i, -1)?.to_vec::<i32>()?, vec![20, 40, -250]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn round(a: &Array, decimals: i32) -> Result<Array> {
    if a.dtype() == crate::dtype::DType::Complex64 {
        let re = round(&real(a)?, decimals)?;
        let im = round(&imag(a)?, decimals)?;
        let i = Array::from_slice(&[crate::dtype::Complex64::new(0.0, 1.0)], &[])?;
        return crate::ops::binary::add(&re, &crate::ops::binary::multiply(&im, &i)?);
    }
    build(UnaryOp::Round(decimals), a)
}

/// `-a`, as [`negative`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, -2], &[2])?;
/// assert_eq!((-&a)?.to_vec::<i32>()?, vec![-1, 2]);
/// assert_eq!((-a)?.to_vec::<i32>()?, vec![-1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
impl std::ops::Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        negative(self)
    }
}

/// `-a`, as [`negative`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.5f32], &[1])?;
/// assert_eq!((-a)?.to_vec::<f32>()?, vec![-0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
impl std::ops::Neg for Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        negative(&self)
    }
}

/// Elementwise `a == +inf`, as bool (false everywhere for integer and bool
/// inputs; complex64 tests its real part).
///
/// ```
/// let a = ferrox::Array::from_slice(&[f32::INFINITY, f32::NEG_INFINITY, 1.0], &[3])?;
/// assert_eq!(ferrox::isposinf(&a)?.to_vec::<bool>()?, vec![true, false, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isposinf(a: &Array) -> Result<Array> {
    signed_inf("isposinf", a, f64::INFINITY)
}

/// Elementwise `a == -inf`, as bool (false everywhere for integer and bool
/// inputs; complex64 tests its real part).
///
/// ```
/// let a = ferrox::Array::from_slice(&[f32::INFINITY, f32::NEG_INFINITY, 1.0], &[3])?;
/// assert_eq!(ferrox::isneginf(&a)?.to_vec::<bool>()?, vec![false, true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isneginf(a: &Array) -> Result<Array> {
    signed_inf("isneginf", a, f64::NEG_INFINITY)
}

/// `a == inf` for floats, false for integers and bool, and the test of the
/// real part for complex64 (as MLX).
fn signed_inf(op: &str, a: &Array, inf: f64) -> Result<Array> {
    let _ = op;
    if a.dtype() == crate::dtype::DType::Complex64 {
        return signed_inf(op, &real(a)?, inf);
    }
    if !a.dtype().is_float() {
        return crate::ops::creation::full(a.shape(), 0.0, crate::dtype::DType::Bool);
    }
    crate::ops::binary::equal(a, &Array::weak_f64(inf))
}

/// Radians to degrees: `a * 180 / pi` (integer and bool inputs give float32).
///
/// ```
/// let a = ferrox::Array::from_slice(&[std::f32::consts::PI], &[1])?;
/// assert!((ferrox::degrees(&a)?.item::<f32>()? - 180.0).abs() < 1e-4);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn degrees(a: &Array) -> Result<Array> {
    crate::ops::binary::multiply(
        &to_float("degrees", a)?,
        &Array::weak_f64(180.0 / std::f64::consts::PI),
    )
}

/// Degrees to radians: `a * pi / 180` (integer and bool inputs give float32).
///
/// ```
/// let a = ferrox::Array::from_slice(&[180i32], &[1])?;
/// assert!((ferrox::radians(&a)?.item::<f32>()? - std::f32::consts::PI).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn radians(a: &Array) -> Result<Array> {
    crate::ops::binary::multiply(
        &to_float("radians", a)?,
        &Array::weak_f64(std::f64::consts::PI / 180.0),
    )
}

/// `a` itself for float inputs; integer and bool inputs as float32 (the
/// dtype the angle conversions compute in).
fn to_float(op: &str, a: &Array) -> Result<Array> {
    match a.dtype() {
        crate::dtype::DType::Complex64 => Err(crate::error::Error::dtype(
            op,
            "complex64 inputs are not supported".to_string(),
        )),
        d if d.is_float() => Ok(a.clone()),
        _ => a.astype(crate::dtype::DType::Float32),
    }
}

/// Unary plus: the input itself (arrays are immutable, so no copy is needed).
///
/// ```
/// let a = ferrox::Array::from_slice(&[-1i32, 2], &[2])?;
/// assert_eq!(ferrox::positive(&a)?.to_vec::<i32>()?, vec![-1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn positive(a: &Array) -> Result<Array> {
    Ok(a.clone())
}
