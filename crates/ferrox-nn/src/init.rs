//! Initializers (`mlx.nn.init`): arrays of a given shape for new
//! parameters. Random ones draw from `key`, or from the calling thread's
//! default key when `key` is `None`.
//!
//! Fans follow MLX: for a weight `[out, ..., in]`, `fan_in` is
//! `in * receptive field` and `fan_out` is `out * receptive field`, the
//! receptive field being the product of the middle dimensions.

use crate::error::shape as shape_error;
use crate::error::{Result, value};
use ferrox::{Array, DType, random};

/// `value` everywhere.
///
/// ```
/// let a = ferrox_nn::init::constant(&[2], 0.5, ferrox::DType::Float32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![0.5, 0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn constant(shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
    ferrox::full(shape, value, dtype)
}

/// Normal samples with mean `mean` and standard deviation `std`.
///
/// ```
/// let k = ferrox::random::key(0)?;
/// let a = ferrox_nn::init::normal(&[1000], 1.0, 0.1, ferrox::DType::Float32, Some(&k))?;
/// assert!((a.mean(None, false)?.item::<f32>()? - 1.0).abs() < 0.02);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn normal(
    shape: &[usize],
    mean: f64,
    std: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    random::normal(shape, dtype, mean, std, key)
}

/// Uniform samples in `[low, high)`.
///
/// ```
/// let a = ferrox_nn::init::uniform(&[100], -1.0, 1.0, ferrox::DType::Float32, None)?;
/// assert!(a.to_vec::<f32>()?.iter().all(|v| (-1.0..1.0).contains(v)));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn uniform(
    shape: &[usize],
    low: f64,
    high: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    random::uniform(low, high, shape, dtype, key)
}

/// The identity matrix (`shape` must be square).
///
/// ```
/// let a = ferrox_nn::init::identity(&[2, 2], ferrox::DType::Float32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 1.0]);
/// assert!(ferrox_nn::init::identity(&[2, 3], ferrox::DType::Float32).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn identity(shape: &[usize], dtype: DType) -> Result<Array> {
    match shape {
        [n, m] if n == m => ferrox::eye(*n, None, 0, dtype),
        _ => Err(shape_error(
            "init::identity",
            format!("needs a square matrix shape, got {shape:?}"),
        )),
    }
}

/// `(fan_in, fan_out)` of a weight of `shape`.
///
/// ```
/// assert_eq!(ferrox_nn::init::fans(&[8, 3, 3, 4])?, (36, 72));
/// assert!(ferrox_nn::init::fans(&[8]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fans(shape: &[usize]) -> Result<(usize, usize)> {
    if shape.len() < 2 {
        return Err(shape_error(
            "init",
            format!("Glorot and He initialisation need at least 2 dimensions, got shape {shape:?}"),
        ));
    }
    let rf: usize = shape[1..shape.len() - 1].iter().product();
    Ok((shape[shape.len() - 1] * rf, shape[0] * rf))
}

/// Which fan He initialisation scales by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// The inputs' fan (MLX's default).
    FanIn,
    /// The outputs' fan.
    FanOut,
}

/// Glorot (Xavier) normal: std `gain * sqrt(2 / (fan_in + fan_out))`.
///
/// ```
/// let a = ferrox_nn::init::glorot_normal(&[64, 64], 1.0, ferrox::DType::Float32, None)?;
/// assert_eq!(a.shape(), &[64, 64]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn glorot_normal(
    shape: &[usize],
    gain: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let (fi, fo) = fans(shape)?;
    normal(
        shape,
        0.0,
        gain * (2.0 / (fi + fo) as f64).sqrt(),
        dtype,
        key,
    )
}

/// Glorot (Xavier) uniform: limit `gain * sqrt(6 / (fan_in + fan_out))`.
///
/// ```
/// let a = ferrox_nn::init::glorot_uniform(&[3, 3], 1.0, ferrox::DType::Float32, None)?;
/// assert!(a.to_vec::<f32>()?.iter().all(|v| v.abs() <= 1.0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn glorot_uniform(
    shape: &[usize],
    gain: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let (fi, fo) = fans(shape)?;
    let limit = gain * (6.0 / (fi + fo) as f64).sqrt();
    uniform(shape, -limit, limit, dtype, key)
}

fn fan(shape: &[usize], mode: FanMode) -> Result<f64> {
    let (fi, fo) = fans(shape)?;
    Ok(match mode {
        FanMode::FanIn => fi,
        FanMode::FanOut => fo,
    } as f64)
}

/// He (Kaiming) normal: std `gain / sqrt(fan)`.
///
/// ```
/// use ferrox_nn::init::{he_normal, FanMode};
/// let a = he_normal(&[16, 8], FanMode::FanIn, 1.0, ferrox::DType::Float32, None)?;
/// assert_eq!(a.shape(), &[16, 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn he_normal(
    shape: &[usize],
    mode: FanMode,
    gain: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let std = gain / fan(shape, mode)?.sqrt();
    normal(shape, 0.0, std, dtype, key)
}

/// He (Kaiming) uniform: limit `gain * sqrt(3 / fan)`.
///
/// ```
/// use ferrox_nn::init::{he_uniform, FanMode};
/// let a = he_uniform(&[4, 3], FanMode::FanOut, 1.0, ferrox::DType::Float32, None)?;
/// assert!(a.to_vec::<f32>()?.iter().all(|v| v.abs() <= (3.0f32 / 4.0).sqrt()));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn he_uniform(
    shape: &[usize],
    mode: FanMode,
    gain: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let limit = gain * (3.0 / fan(shape, mode)?).sqrt();
    uniform(shape, -limit, limit, dtype, key)
}

/// A normal matrix with `ceil(sparsity * cols)` entries of each row set to
/// zero at random.
///
/// ```
/// let a = ferrox_nn::init::sparse(&[4, 10], 0.5, 0.0, 1.0, ferrox::DType::Float32, None)?;
/// let zeros = a.to_vec::<f32>()?.iter().filter(|&&v| v == 0.0).count();
/// assert_eq!(zeros, 20);
/// assert!(ferrox_nn::init::sparse(&[4], 0.5, 0.0, 1.0, ferrox::DType::Float32, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sparse(
    shape: &[usize],
    sparsity: f64,
    mean: f64,
    std: f64,
    dtype: DType,
    key: Option<&Array>,
) -> Result<Array> {
    let [_, cols] = shape else {
        return Err(shape_error(
            "init::sparse",
            format!("needs a 2-dimensional shape, got {shape:?}"),
        ));
    };
    if !(0.0..=1.0).contains(&sparsity) {
        return Err(value(
            "init::sparse",
            format!("sparsity must be in [0, 1], got {sparsity}"),
        ));
    }
    let (k_order, k_vals) = match key {
        Some(k) => {
            let ks = random::split(k, 2)?;
            let mut two = ferrox::unstack(&ks, 0)?.into_iter();
            (two.next(), two.next())
        }
        None => (None, None),
    };
    let num_zeros = ((sparsity * *cols as f64).ceil() as usize).min(*cols);
    // A random rank per entry of each row: the lowest `num_zeros` ranks are
    // zeroed.
    let order = ferrox::argsort(
        &random::uniform(0.0, 1.0, shape, DType::Float32, k_order.as_ref())?,
        Some(1),
    )?;
    let ranks = ferrox::argsort(&order, Some(1))?;
    let keep = ferrox::greater_equal(
        &ranks,
        &Array::scalar(num_zeros as u32).astype(ranks.dtype())?,
    )?;
    let vals = normal(shape, mean, std, dtype, k_vals.as_ref())?;
    ferrox::r#where(&keep, &vals, &ferrox::zeros(&[], dtype)?)
}

/// A (semi-)orthogonal matrix times `gain`: the Q of a QR factorisation of
/// a square normal matrix, columns signed by R's diagonal, cut to `shape`.
///
/// ```
/// let q = ferrox_nn::init::orthogonal(&[3, 3], 1.0, ferrox::DType::Float32, None)?;
/// let qtq = ferrox::matmul(&q.t()?, &q)?.to_vec::<f32>()?;
/// assert!((qtq[0] - 1.0).abs() < 1e-5 && qtq[1].abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn orthogonal(shape: &[usize], gain: f64, dtype: DType, key: Option<&Array>) -> Result<Array> {
    let [rows, cols] = shape else {
        return Err(shape_error(
            "init::orthogonal",
            format!("needs a 2-dimensional shape, got {shape:?}"),
        ));
    };
    let n = (*rows).max(*cols);
    let m = random::normal(&[n, n], DType::Float32, 0.0, 1.0, key)?;
    let (q, r) = ferrox::linalg::qr(&m)?;
    let d = ferrox::sign(&ferrox::diagonal(&r, 0, -2, -1)?)?;
    let q = (q * d)?;
    let q = ferrox::slice(&q, &[0, 0], &[*rows as isize, *cols as isize], &[1, 1])?;
    (q * gain)?.astype(dtype)
}
