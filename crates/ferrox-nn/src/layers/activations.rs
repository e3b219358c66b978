//! Every activation of `mlx.nn`: a function and a layer struct each.
//!
//! The functions compose ferrox ops elementwise (so `compile` fuses
//! them); the structs hold the activation's settings and implement
//! [`Forward`]. [`PRelu`] is the one with a parameter.

use crate::error::{Result, value};
use crate::module::{Forward, Param};
use ferrox::{Array, DType};

fn scalar_like(v: f64, x: &Array) -> Result<Array> {
    ferrox::full(&[], v, x.dtype())
}

/// `1 / (1 + exp(-x))`.
///
/// ```
/// let y = ferrox_nn::layers::sigmoid(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sigmoid(x: &Array) -> Result<Array> {
    ferrox::sigmoid(x)
}

/// `max(x, 0)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-1.0f32, 2.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::relu(&x)?.to_vec::<f32>()?, vec![0.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn relu(x: &Array) -> Result<Array> {
    x.maximum(0.0)
}

/// `max(x, 0)^2`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-1.0f32, 3.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::relu2(&x)?.to_vec::<f32>()?, vec![0.0, 9.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn relu2(x: &Array) -> Result<Array> {
    ferrox::square(&relu(x)?)
}

/// `min(max(x, 0), 6)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-1.0f32, 7.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::relu6(&x)?.to_vec::<f32>()?, vec![0.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn relu6(x: &Array) -> Result<Array> {
    relu(x)?.minimum(6.0)
}

/// `max(negative_slope * x, x)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-2.0f32, 2.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::leaky_relu(&x, 0.5)?.to_vec::<f32>()?, vec![-1.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn leaky_relu(x: &Array, negative_slope: f64) -> Result<Array> {
    (x * negative_slope)?.maximum(x)
}

/// `x - logsumexp(x, axis)`.
///
/// ```
/// let x = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let y = ferrox_nn::layers::log_softmax(&x, -1)?.to_vec::<f32>()?;
/// assert!((y[0] + 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log_softmax(x: &Array, axis: isize) -> Result<Array> {
    x - ferrox::logsumexp(x, Some(&[axis]), true)?
}

/// `x` where positive, else `alpha * (exp(x) - 1)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[0.0f32, 1.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::elu(&x, 1.0)?.to_vec::<f32>()?, vec![0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn elu(x: &Array, alpha: f64) -> Result<Array> {
    let neg = (ferrox::expm1(x)? * alpha)?;
    ferrox::r#where(&ferrox::greater(x, &0.0.into())?, x, &neg)
}

/// Softmax over `axis`.
///
/// ```
/// let y = ferrox_nn::layers::softmax(&ferrox::zeros(&[4], ferrox::DType::Float32)?, -1)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.25; 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softmax(x: &Array, axis: isize) -> Result<Array> {
    ferrox::softmax(x, Some(&[axis]), false)
}

/// `log(1 + exp(x))`.
///
/// ```
/// let y = ferrox_nn::layers::softplus(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert!((y.to_vec::<f32>()?[0] - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softplus(x: &Array) -> Result<Array> {
    ferrox::logaddexp(x, &scalar_like(0.0, x)?)
}

/// `x / (1 + |x|)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// assert_eq!(ferrox_nn::layers::softsign(&x)?.to_vec::<f32>()?, vec![0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softsign(x: &Array) -> Result<Array> {
    x / (ferrox::abs(x)? + 1.0)?
}

/// `x - sign(x) * lambd` where `|x| > lambd`, else 0.
///
/// ```
/// let x = ferrox::Array::from_slice(&[0.2f32, 2.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::softshrink(&x, 0.5)?.to_vec::<f32>()?, vec![0.0, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softshrink(x: &Array, lambd: f64) -> Result<Array> {
    let shrunk = (x - (ferrox::sign(x)? * lambd)?)?;
    let keep = ferrox::greater(&ferrox::abs(x)?, &lambd.into())?;
    ferrox::r#where(&keep, &shrunk, &scalar_like(0.0, x)?)
}

/// `max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[2.0f32], &[1])?;
/// assert_eq!(ferrox_nn::layers::celu(&x, 1.0)?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn celu(x: &Array, alpha: f64) -> Result<Array> {
    let neg = (ferrox::expm1(&(x.minimum(0.0)? / alpha)?)? * alpha)?;
    relu(x)? + neg
}

/// `x * sigmoid(x)`.
///
/// ```
/// let y = ferrox_nn::layers::silu(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn silu(x: &Array) -> Result<Array> {
    x * ferrox::sigmoid(x)?
}

/// `-softplus(-x)`.
///
/// ```
/// let y = ferrox_nn::layers::log_sigmoid(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert!((y.to_vec::<f32>()?[0] + 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log_sigmoid(x: &Array) -> Result<Array> {
    ferrox::negative(&softplus(&ferrox::negative(x)?)?)
}

/// `x * (1 + erf(x / sqrt(2))) / 2`.
///
/// ```
/// let y = ferrox_nn::layers::gelu(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gelu(x: &Array) -> Result<Array> {
    let e = ferrox::erf(&(x / std::f64::consts::SQRT_2)?)?;
    (x * (e + 1.0)?)? / 2.0
}

/// The tanh approximation of [`gelu`]:
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// let y = ferrox_nn::layers::gelu_approx(&x)?.to_vec::<f32>()?;
/// assert!((y[0] - 0.8412).abs() < 1e-3);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gelu_approx(x: &Array) -> Result<Array> {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let cube = (ferrox::power(x, &3.0.into())? * 0.044715)?;
    let t = ferrox::tanh(&((x + cube)? * c)?)?;
    (x * 0.5)? * (t + 1.0)?
}

/// The sigmoid approximation of [`gelu`]: `x * sigmoid(1.702 x)`.
///
/// ```
/// let y = ferrox_nn::layers::gelu_fast_approx(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gelu_fast_approx(x: &Array) -> Result<Array> {
    x * ferrox::sigmoid(&(x * 1.702)?)?
}

/// Splits `x` in two halves `a, b` along `axis` and returns `a * sigmoid(b)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[2.0f32, 0.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::glu(&x, -1)?.to_vec::<f32>()?, vec![1.0]);
/// assert!(ferrox_nn::layers::glu(&ferrox::zeros(&[3], ferrox::DType::Float32)?, -1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn glu(x: &Array, axis: isize) -> Result<Array> {
    let nd = x.ndim() as isize;
    let ax = if axis < 0 { axis + nd } else { axis };
    let n = usize::try_from(ax)
        .ok()
        .and_then(|a| x.shape().get(a).copied())
        .ok_or_else(|| {
            value(
                "glu",
                format!("axis {axis} is out of range for shape {:?}", x.shape()),
            )
        })?;
    if n % 2 != 0 {
        return Err(value(
            "glu",
            format!("axis {axis} of shape {:?} has odd size {n}", x.shape()),
        ));
    }
    let halves = ferrox::split(x, 2usize, axis)?;
    &halves[0] * ferrox::sigmoid(&halves[1])?
}

/// 1 where `x >= threshold`, else 0 (int32).
///
/// ```
/// let x = ferrox::Array::from_slice(&[-1.0f32, 1.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::step(&x, 0.0)?.to_vec::<i32>()?, vec![0, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn step(x: &Array, threshold: f64) -> Result<Array> {
    ferrox::greater_equal(x, &threshold.into())?.astype(DType::Int32)
}

/// `1.0507 * elu(x, 1.67326)`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// assert!((ferrox_nn::layers::selu(&x)?.to_vec::<f32>()?[0] - 1.0507).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn selu(x: &Array) -> Result<Array> {
    elu(x, 1.67326)? * 1.0507
}

/// `max(0, x) + alpha * min(0, x)`, `alpha` broadcast against `x`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-2.0f32, 2.0], &[2])?;
/// let a = ferrox::Array::from_slice(&[0.25f32], &[1])?;
/// assert_eq!(ferrox_nn::layers::prelu(&x, &a)?.to_vec::<f32>()?, vec![-0.5, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn prelu(x: &Array, alpha: &Array) -> Result<Array> {
    relu(x)? + (alpha * x.minimum(0.0)?)?
}

/// `x * tanh(softplus(x))`.
///
/// ```
/// let y = ferrox_nn::layers::mish(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn mish(x: &Array) -> Result<Array> {
    x * ferrox::tanh(&softplus(x)?)?
}

/// `x * min(max(x + 3, 0), 6) / 6`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[3.0f32], &[1])?;
/// assert_eq!(ferrox_nn::layers::hardswish(&x)?.to_vec::<f32>()?, vec![3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hardswish(x: &Array) -> Result<Array> {
    let gate = (x + 3.0)?.maximum(0.0)?.minimum(6.0)?;
    (x * gate)? / 6.0
}

/// `x` clamped to `[min_val, max_val]`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[-3.0f32, 0.5], &[2])?;
/// assert_eq!(ferrox_nn::layers::hard_tanh(&x, -1.0, 1.0)?.to_vec::<f32>()?, vec![-1.0, 0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hard_tanh(x: &Array, min_val: f64, max_val: f64) -> Result<Array> {
    x.maximum(min_val)?.minimum(max_val)
}

/// `x` where `|x| > lambd`, else 0.
///
/// ```
/// let x = ferrox::Array::from_slice(&[0.2f32, 2.0], &[2])?;
/// assert_eq!(ferrox_nn::layers::hard_shrink(&x, 0.5)?.to_vec::<f32>()?, vec![0.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hard_shrink(x: &Array, lambd: f64) -> Result<Array> {
    let keep = ferrox::greater(&ferrox::abs(x)?, &lambd.into())?;
    ferrox::r#where(&keep, x, &scalar_like(0.0, x)?)
}

/// `softmax(-x, axis)`.
///
/// ```
/// let y = ferrox_nn::layers::softmin(&ferrox::zeros(&[2], ferrox::DType::Float32)?, -1)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.5, 0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn softmin(x: &Array, axis: isize) -> Result<Array> {
    softmax(&ferrox::negative(x)?, axis)
}

/// `tanh(x)`.
///
/// ```
/// let y = ferrox_nn::layers::tanh(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tanh(x: &Array) -> Result<Array> {
    ferrox::tanh(x)
}

/// Declares a parameterless activation layer: a struct (unit, or with the
/// activation's settings as public fields) that forwards to a function.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $f:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;
        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                $f(x)
            }
        }
        crate::impl_module!($name {});
    };
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty = $default:expr),+ } => |$s:ident, $x:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $(#[allow(missing_docs)] pub $field: $ty),+
        }
        impl Default for $name {
            fn default() -> Self {
                $name { $($field: $default),+ }
            }
        }
        impl Forward for $name {
            fn forward(&self, $x: &Array) -> Result<Array> {
                let $s = self;
                $body
            }
        }
        crate::impl_module!($name {});
    };
}

activation!(
    /// [`sigmoid`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Sigmoid};
    /// assert_eq!(Sigmoid.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Sigmoid => sigmoid);
activation!(
    /// [`relu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Relu};
    /// let x = ferrox::Array::from_slice(&[-1.0f32], &[1])?;
    /// assert_eq!(Relu.forward(&x)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Relu => relu);
activation!(
    /// [`relu2`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Relu2};
    /// let x = ferrox::Array::from_slice(&[2.0f32], &[1])?;
    /// assert_eq!(Relu2.forward(&x)?.to_vec::<f32>()?, vec![4.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Relu2 => relu2);
activation!(
    /// [`relu6`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Relu6};
    /// let x = ferrox::Array::from_slice(&[8.0f32], &[1])?;
    /// assert_eq!(Relu6.forward(&x)?.to_vec::<f32>()?, vec![6.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Relu6 => relu6);
activation!(
    /// [`softplus`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Softplus};
    /// assert!(Softplus.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?[0] > 0.69);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Softplus => softplus);
activation!(
    /// [`softsign`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Softsign};
    /// let x = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(Softsign.forward(&x)?.to_vec::<f32>()?, vec![0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Softsign => softsign);
activation!(
    /// [`silu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Silu};
    /// assert_eq!(Silu.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Silu => silu);
activation!(
    /// [`log_sigmoid`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::LogSigmoid};
    /// assert!(LogSigmoid.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?[0] < 0.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    LogSigmoid => log_sigmoid);
activation!(
    /// [`mish`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Mish};
    /// assert_eq!(Mish.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Mish => mish);
activation!(
    /// [`tanh`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Tanh};
    /// assert_eq!(Tanh.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Tanh => tanh);
activation!(
    /// [`hardswish`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Hardswish};
    /// assert_eq!(Hardswish.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Hardswish => hardswish);
activation!(
    /// [`selu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Selu};
    /// assert_eq!(Selu.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Selu => selu);
activation!(
    /// [`glu`] over `axis` as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Glu};
    /// assert_eq!(Glu::default().forward(&ferrox::zeros(&[2], ferrox::DType::Float32)?)?.shape(), &[1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Glu { axis: isize = -1 } => |s, x| glu(x, s.axis));
activation!(
    /// [`leaky_relu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::LeakyRelu};
    /// let x = ferrox::Array::from_slice(&[-100.0f32], &[1])?;
    /// assert_eq!(LeakyRelu::default().forward(&x)?.to_vec::<f32>()?, vec![-1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    LeakyRelu { negative_slope: f64 = 0.01 } => |s, x| leaky_relu(x, s.negative_slope));
activation!(
    /// [`elu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Elu};
    /// assert_eq!(Elu { alpha: 2.0 }.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Elu { alpha: f64 = 1.0 } => |s, x| elu(x, s.alpha));
activation!(
    /// [`celu`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Celu};
    /// assert_eq!(Celu::default().forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Celu { alpha: f64 = 1.0 } => |s, x| celu(x, s.alpha));
activation!(
    /// [`softmax`] over `axis` as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Softmax};
    /// assert_eq!(Softmax::default().forward(&ferrox::zeros(&[2], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.5, 0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Softmax { axis: isize = -1 } => |s, x| softmax(x, s.axis));
activation!(
    /// [`softmin`] over `axis` as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Softmin};
    /// assert_eq!(Softmin::default().forward(&ferrox::zeros(&[2], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.5, 0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Softmin { axis: isize = -1 } => |s, x| softmin(x, s.axis));
activation!(
    /// [`log_softmax`] over `axis` as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::LogSoftmax};
    /// assert!(LogSoftmax::default().forward(&ferrox::zeros(&[2], ferrox::DType::Float32)?)?.to_vec::<f32>()?[0] < 0.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    LogSoftmax { axis: isize = -1 } => |s, x| log_softmax(x, s.axis));
activation!(
    /// [`softshrink`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Softshrink};
    /// let x = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(Softshrink::default().forward(&x)?.to_vec::<f32>()?, vec![0.5]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Softshrink { lambd: f64 = 0.5 } => |s, x| softshrink(x, s.lambd));
activation!(
    /// [`hard_shrink`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::HardShrink};
    /// let x = ferrox::Array::from_slice(&[0.4f32], &[1])?;
    /// assert_eq!(HardShrink::default().forward(&x)?.to_vec::<f32>()?, vec![0.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    HardShrink { lambd: f64 = 0.5 } => |s, x| hard_shrink(x, s.lambd));
activation!(
    /// [`hard_tanh`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::HardTanh};
    /// let x = ferrox::Array::from_slice(&[4.0f32], &[1])?;
    /// assert_eq!(HardTanh::default().forward(&x)?.to_vec::<f32>()?, vec![1.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    HardTanh { min_val: f64 = -1.0, max_val: f64 = 1.0 } => |s, x| hard_tanh(x, s.min_val, s.max_val));
activation!(
    /// [`step`] as a layer.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Step};
    /// let x = ferrox::Array::from_slice(&[0.5f32], &[1])?;
    /// assert_eq!(Step::default().forward(&x)?.to_vec::<i32>()?, vec![1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Step { threshold: f64 = 0.0 } => |s, x| step(x, s.threshold));

/// Which form of GELU a [`Gelu`] layer computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeluApprox {
    /// The exact [`gelu`] (MLX's `"none"`).
    #[default]
    None,
    /// [`gelu_approx`] (MLX's `"precise"` or `"tanh"`).
    Tanh,
    /// [`gelu_fast_approx`] (MLX's `"fast"`).
    Fast,
}

impl GeluApprox {
    /// The form MLX names `name`.
    ///
    /// ```
    /// use ferrox_nn::layers::GeluApprox;
    /// assert_eq!(GeluApprox::parse("precise")?, GeluApprox::Tanh);
    /// assert!(GeluApprox::parse("exact").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn parse(name: &str) -> Result<GeluApprox> {
        match name {
            "none" => Ok(GeluApprox::None),
            "precise" | "tanh" => Ok(GeluApprox::Tanh),
            "fast" => Ok(GeluApprox::Fast),
            other => Err(value(
                "GELU",
                format!("approx must be 'none', 'precise', 'tanh' or 'fast', got '{other}'"),
            )),
        }
    }
}

activation!(
/// GELU in one of its forms as a layer.
///
/// ```
/// use ferrox_nn::{Forward, layers::{Gelu, GeluApprox}};
/// let g = Gelu { approx: GeluApprox::Fast };
/// assert_eq!(g.forward(&ferrox::zeros(&[1], ferrox::DType::Float32)?)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
Gelu { approx: GeluApprox = GeluApprox::None } => |s, x| match s.approx {
    GeluApprox::None => gelu(x),
    GeluApprox::Tanh => gelu_approx(x),
    GeluApprox::Fast => gelu_fast_approx(x),
});

/// [`prelu`] with a learned slope: `weight` has `num_parameters` entries
/// (1, or one per channel of the last axis), all `init` at first.
///
/// ```
/// use ferrox_nn::{Forward, Module, layers::PRelu};
/// let p = PRelu::new(1, 0.25)?;
/// let x = ferrox::Array::from_slice(&[-4.0f32], &[1])?;
/// assert_eq!(p.forward(&x)?.to_vec::<f32>()?, vec![-1.0]);
/// assert_eq!(p.num_parameters(), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct PRelu {
    /// The slopes of the negative part.
    pub weight: Param,
}

impl PRelu {
    /// A PReLU with `num_parameters` slopes set to `init`.
    pub fn new(num_parameters: usize, init: f64) -> Result<PRelu> {
        crate::error::check_positive("PReLU", "num_parameters", num_parameters)?;
        Ok(PRelu {
            weight: Param::new(ferrox::full(&[num_parameters], init, DType::Float32)?),
        })
    }
}

impl Forward for PRelu {
    fn forward(&self, x: &Array) -> Result<Array> {
        prelu(x, &self.weight)
    }
}
crate::impl_module!(PRelu { weight });
