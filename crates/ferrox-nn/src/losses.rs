//! The loss functions of `mlx.nn.losses`, each with a [`Reduction`].
//!
//! The formulas and defaults are MLX's (the default reduction differs
//! from loss to loss there; here it is an explicit argument, and each
//! function's doc names MLX's default). Shape mismatches are errors that
//! name the loss and both shapes.

use crate::error::{Result, shape, value};
use ferrox::Array;

/// How a loss reduces its per-element values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The values as they are.
    None,
    /// Their mean.
    Mean,
    /// Their sum.
    Sum,
}

impl Reduction {
    /// The reduction MLX names `name` (`"none"`, `"mean"`, `"sum"`).
    ///
    /// ```
    /// use ferrox_nn::losses::Reduction;
    /// assert_eq!(Reduction::parse("sum")?, Reduction::Sum);
    /// assert!(Reduction::parse("max").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn parse(name: &str) -> Result<Reduction> {
        match name {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(value(
                "losses",
                format!("reduction must be 'none', 'mean' or 'sum', got '{other}'"),
            )),
        }
    }

    /// Applies the reduction.
    ///
    /// ```
    /// use ferrox_nn::losses::Reduction;
    /// let x = ferrox::Array::from_slice(&[1.0f32, 3.0], &[2])?;
    /// assert_eq!(Reduction::Mean.apply(&x)?.item::<f32>()?, 2.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn apply(self, loss: &Array) -> Result<Array> {
        match self {
            Reduction::None => Ok(loss.clone()),
            Reduction::Mean => loss.mean(None, false),
            Reduction::Sum => loss.sum(None, false),
        }
    }
}

fn same_shape(who: &str, a: (&str, &Array), b: (&str, &Array)) -> Result<()> {
    if a.1.shape() != b.1.shape() {
        return Err(shape(
            who,
            format!(
                "{} shape {:?} does not match {} shape {:?}",
                a.0,
                a.1.shape(),
                b.0,
                b.1.shape()
            ),
        ));
    }
    Ok(())
}

fn weighted(who: &str, loss: Array, weights: Option<&Array>) -> Result<Array> {
    match weights {
        None => Ok(loss),
        Some(w) => {
            same_shape(who, ("weights", w), ("loss", &loss))?;
            loss * w
        }
    }
}

fn axis_index(who: &str, x: &Array, axis: isize) -> Result<usize> {
    let nd = x.ndim() as isize;
    let a = if axis < 0 { axis + nd } else { axis };
    if a < 0 || a >= nd {
        return Err(value(
            who,
            format!("axis {axis} is out of range for shape {:?}", x.shape()),
        ));
    }
    Ok(a as usize)
}

/// `logits[..., targets]` along `axis` for integer `targets`.
fn pick(x: &Array, targets: &Array, axis: isize) -> Result<Array> {
    let idx = targets.expand_dims(&[axis])?;
    ferrox::take_along_axis(x, &idx, Some(axis))?.squeeze(Some(&[axis]))
}

/// Cross entropy of `logits` against class indices (`targets` with
/// `logits`' shape minus `axis`) or probabilities (`targets` of `logits`'
/// shape), with optional per-element `weights` and label smoothing in
/// `[0, 1)`. MLX's default reduction: none.
///
/// ```
/// use ferrox_nn::losses::{cross_entropy, Reduction};
/// let logits = ferrox::zeros(&[2, 4], ferrox::DType::Float32)?;
/// let t = ferrox::Array::from_slice(&[0i32, 3], &[2])?;
/// let l = cross_entropy(&logits, &t, None, -1, 0.0, Reduction::Mean)?;
/// assert!((l.item::<f32>()? - 4f32.ln()).abs() < 1e-6);
/// let bad = ferrox::Array::from_slice(&[0i32, 3, 1], &[3])?;
/// assert!(cross_entropy(&logits, &bad, None, -1, 0.0, Reduction::Mean).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cross_entropy(
    logits: &Array,
    targets: &Array,
    weights: Option<&Array>,
    axis: isize,
    label_smoothing: f64,
    reduction: Reduction,
) -> Result<Array> {
    let who = "cross_entropy";
    if !(0.0..1.0).contains(&label_smoothing) {
        return Err(value(
            who,
            format!("label_smoothing must be in [0, 1), got {label_smoothing}"),
        ));
    }
    let ax = axis_index(who, logits, axis)?;
    let as_probs = targets.ndim() == logits.ndim();
    let mut expect = logits.shape().to_vec();
    if !as_probs {
        expect.remove(ax);
    }
    if targets.shape() != &expect[..] {
        return Err(shape(
            who,
            format!(
                "targets shape {:?} does not match logits shape {:?}",
                targets.shape(),
                logits.shape()
            ),
        ));
    }
    let max = ferrox::stop_gradient(&logits.max(Some(&[axis]), true)?)?;
    let logits = (logits - &max)?;
    let score = if as_probs {
        (&logits * targets)?.sum(Some(&[axis]), false)?
    } else {
        pick(&logits, targets, axis)?
    };
    let lse = ferrox::logsumexp(&logits, Some(&[axis]), false)?;
    let loss = if label_smoothing > 0.0 {
        let smooth = (logits.mean(Some(&[axis]), false)? * -label_smoothing)?;
        ((lse - (score * (1.0 - label_smoothing))?)? + smooth)?
    } else {
        (lse - score)?
    };
    reduction.apply(&weighted(who, loss, weights)?)
}

/// Binary cross entropy of `inputs` (logits with `with_logits`, else
/// probabilities; logs clipped at -100) against `targets` in `[0, 1]`.
/// MLX's default reduction: mean.
///
/// ```
/// use ferrox_nn::losses::{binary_cross_entropy, Reduction};
/// let x = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let t = ferrox::Array::from_slice(&[0.0f32, 1.0], &[2])?;
/// let l = binary_cross_entropy(&x, &t, None, true, Reduction::Mean)?;
/// assert!((l.item::<f32>()? - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn binary_cross_entropy(
    inputs: &Array,
    targets: &Array,
    weights: Option<&Array>,
    with_logits: bool,
    reduction: Reduction,
) -> Result<Array> {
    let who = "binary_cross_entropy";
    same_shape(who, ("inputs", inputs), ("targets", targets))?;
    let loss = if with_logits {
        (ferrox::logaddexp(&ferrox::zeros(&[], inputs.dtype())?, inputs)? - (inputs * targets)?)?
    } else {
        let floor = Array::from(-100.0);
        let log_p = ferrox::clip(&ferrox::log(inputs)?, Some(&floor), None)?;
        let log_q = ferrox::clip(
            &ferrox::log1p(&ferrox::negative(inputs)?)?,
            Some(&floor),
            None,
        )?;
        let one_minus_t = ferrox::subtract(&1.0.into(), targets)?;
        ferrox::negative(&((targets * log_p)? + (one_minus_t * log_q)?)?)?
    };
    reduction.apply(&weighted(who, loss, weights)?)
}

/// `|predictions - targets|`. MLX's default reduction: mean.
///
/// ```
/// use ferrox_nn::losses::{l1_loss, Reduction};
/// let p = ferrox::Array::from_slice(&[1.0f32, -1.0], &[2])?;
/// assert_eq!(l1_loss(&p, &ferrox::zeros(&[2], ferrox::DType::Float32)?, Reduction::Sum)?.item::<f32>()?, 2.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn l1_loss(predictions: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    same_shape(
        "l1_loss",
        ("predictions", predictions),
        ("targets", targets),
    )?;
    reduction.apply(&ferrox::abs(&(predictions - targets)?)?)
}

/// `(predictions - targets)^2`. MLX's default reduction: mean.
///
/// ```
/// use ferrox_nn::losses::{mse_loss, Reduction};
/// let p = ferrox::Array::from_slice(&[1.0f32, 3.0], &[2])?;
/// assert_eq!(mse_loss(&p, &ferrox::zeros(&[2], ferrox::DType::Float32)?, Reduction::Mean)?.item::<f32>()?, 5.0);
/// let e = mse_loss(&p, &ferrox::zeros(&[3], ferrox::DType::Float32)?, Reduction::Mean).unwrap_err();
/// assert!(e.to_string().contains("mse_loss: predictions shape [2] does not match targets shape [3]"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn mse_loss(predictions: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    same_shape(
        "mse_loss",
        ("predictions", predictions),
        ("targets", targets),
    )?;
    reduction.apply(&ferrox::square(&(predictions - targets)?)?)
}

/// Negative log likelihood: `-inputs[..., targets]` along `axis` (inputs
/// are log probabilities). MLX's default reduction: none.
///
/// ```
/// use ferrox_nn::losses::{nll_loss, Reduction};
/// let logp = ferrox::Array::from_slice(&[-1.0f32, -2.0], &[1, 2])?;
/// let t = ferrox::Array::from_slice(&[1i32], &[1])?;
/// assert_eq!(nll_loss(&logp, &t, -1, Reduction::None)?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn nll_loss(
    inputs: &Array,
    targets: &Array,
    axis: isize,
    reduction: Reduction,
) -> Result<Array> {
    axis_index("nll_loss", inputs, axis)?;
    reduction.apply(&ferrox::negative(&pick(inputs, targets, axis)?)?)
}

/// Gaussian negative log likelihood of `targets` under means `inputs` and
/// variances `vars` (clamped below by `eps`); `full` adds the constant
/// `log(2 pi) / 2`. MLX's default reduction: mean.
///
/// ```
/// use ferrox_nn::losses::{gaussian_nll_loss, Reduction};
/// let z = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let one = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// assert_eq!(gaussian_nll_loss(&z, &z, &one, false, 1e-6, Reduction::Mean)?.item::<f32>()?, 0.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn gaussian_nll_loss(
    inputs: &Array,
    targets: &Array,
    vars: &Array,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Array> {
    let who = "gaussian_nll_loss";
    same_shape(who, ("inputs", inputs), ("targets", targets))?;
    same_shape(who, ("inputs", inputs), ("vars", vars))?;
    let vars = vars.maximum(eps)?;
    let mut loss =
        ((ferrox::log(&vars)? + (ferrox::square(&(targets - inputs)?)? / &vars)?)? * 0.5)?;
    if full {
        loss = (loss + 0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    reduction.apply(&loss)
}

/// Kullback-Leibler divergence `sum(exp(targets) (targets - inputs))`
/// along `axis`; both are log probabilities. MLX's default reduction: none.
///
/// ```
/// use ferrox_nn::losses::{kl_div_loss, Reduction};
/// let p = ferrox::full(&[1, 2], 0.5f64.ln(), ferrox::DType::Float32)?;
/// assert!(kl_div_loss(&p, &p, -1, Reduction::Sum)?.item::<f32>()?.abs() < 1e-7);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn kl_div_loss(
    inputs: &Array,
    targets: &Array,
    axis: isize,
    reduction: Reduction,
) -> Result<Array> {
    axis_index("kl_div_loss", inputs, axis)?;
    let loss = (ferrox::exp(targets)? * (targets - inputs)?)?.sum(Some(&[axis]), false)?;
    reduction.apply(&loss)
}

/// Smooth L1: `0.5 d^2 / beta` where `d = |p - t| < beta`, else
/// `d - 0.5 beta`. MLX's default reduction: mean.
///
/// ```
/// use ferrox_nn::losses::{smooth_l1_loss, Reduction};
/// let p = ferrox::Array::from_slice(&[0.5f32, 3.0], &[2])?;
/// let z = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(smooth_l1_loss(&p, &z, 1.0, Reduction::None)?.to_vec::<f32>()?, vec![0.125, 2.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn smooth_l1_loss(
    predictions: &Array,
    targets: &Array,
    beta: f64,
    reduction: Reduction,
) -> Result<Array> {
    same_shape(
        "smooth_l1_loss",
        ("predictions", predictions),
        ("targets", targets),
    )?;
    let d = ferrox::abs(&(predictions - targets)?)?;
    let quad = ((ferrox::square(&d)? * 0.5)? / beta)?;
    let lin = (&d - 0.5 * beta)?;
    let loss = ferrox::r#where(&ferrox::less(&d, &beta.into())?, &quad, &lin)?;
    reduction.apply(&loss)
}

/// Triplet margin loss `max(d(a, p) - d(a, n) + margin, 0)` with the
/// `p`-norm distance along `axis` (`eps` inside the root). MLX's default
/// reduction: none.
///
/// ```
/// use ferrox_nn::losses::{triplet_loss, Reduction};
/// let a = ferrox::zeros(&[1, 2], ferrox::DType::Float32)?;
/// let n = ferrox::full(&[1, 2], 10.0, ferrox::DType::Float32)?;
/// assert_eq!(triplet_loss(&a, &a, &n, -1, 2.0, 1.0, 1e-6, Reduction::Sum)?.item::<f32>()?, 0.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn triplet_loss(
    anchors: &Array,
    positives: &Array,
    negatives: &Array,
    axis: isize,
    p: f64,
    margin: f64,
    eps: f64,
    reduction: Reduction,
) -> Result<Array> {
    let who = "triplet_loss";
    same_shape(who, ("anchors", anchors), ("positives", positives))?;
    same_shape(who, ("anchors", anchors), ("negatives", negatives))?;
    axis_index(who, anchors, axis)?;
    let dist = |other: &Array| -> Result<Array> {
        let s = ferrox::power(&ferrox::abs(&(anchors - other)?)?, &p.into())?
            .sum(Some(&[axis]), false)?;
        ferrox::power(&(s + eps)?, &(1.0 / p).into())
    };
    let loss = ((dist(positives)? - dist(negatives)?)? + margin)?.maximum(0.0)?;
    reduction.apply(&loss)
}

/// Hinge loss `max(1 - inputs * targets, 0)` (targets ±1). MLX's default
/// reduction: none.
///
/// ```
/// use ferrox_nn::losses::{hinge_loss, Reduction};
/// let x = ferrox::Array::from_slice(&[2.0f32, 0.5], &[2])?;
/// let t = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// assert_eq!(hinge_loss(&x, &t, Reduction::None)?.to_vec::<f32>()?, vec![0.0, 0.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hinge_loss(inputs: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    let loss = ferrox::subtract(&1.0.into(), &(inputs * targets)?)?.maximum(0.0)?;
    reduction.apply(&loss)
}

/// Huber loss: quadratic up to `delta`, linear beyond. MLX's default
/// reduction: none.
///
/// ```
/// use ferrox_nn::losses::{huber_loss, Reduction};
/// let x = ferrox::Array::from_slice(&[0.5f32, 3.0], &[2])?;
/// let z = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(huber_loss(&x, &z, 1.0, Reduction::None)?.to_vec::<f32>()?, vec![0.125, 2.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn huber_loss(
    inputs: &Array,
    targets: &Array,
    delta: f64,
    reduction: Reduction,
) -> Result<Array> {
    let abs = ferrox::abs(&(inputs - targets)?)?;
    let quad = abs.minimum(delta)?;
    let lin = (&abs - &quad)?;
    let loss = ((ferrox::square(&quad)? * 0.5)? + (lin * delta)?)?;
    reduction.apply(&loss)
}

/// `log(cosh(inputs - targets))`, computed stably. MLX's default
/// reduction: none.
///
/// ```
/// use ferrox_nn::losses::{log_cosh_loss, Reduction};
/// let z = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(log_cosh_loss(&z, &z, Reduction::Sum)?.item::<f32>()?, 0.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn log_cosh_loss(inputs: &Array, targets: &Array, reduction: Reduction) -> Result<Array> {
    let e = (inputs - targets)?;
    let loss = (ferrox::logaddexp(&e, &ferrox::negative(&e)?)? - std::f64::consts::LN_2)?;
    reduction.apply(&loss)
}

/// Cosine similarity of `x1` and `x2` along `axis` (norms' product
/// clamped below by `eps`). MLX's default: axis 1, reduction none.
///
/// ```
/// use ferrox_nn::losses::{cosine_similarity_loss, Reduction};
/// let x = ferrox::Array::from_slice(&[1.0f32, 0.0], &[1, 2])?;
/// let y = ferrox::Array::from_slice(&[0.0f32, 1.0], &[1, 2])?;
/// assert_eq!(cosine_similarity_loss(&x, &x, 1, 1e-8, Reduction::None)?.to_vec::<f32>()?, vec![1.0]);
/// assert_eq!(cosine_similarity_loss(&x, &y, 1, 1e-8, Reduction::None)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cosine_similarity_loss(
    x1: &Array,
    x2: &Array,
    axis: isize,
    eps: f64,
    reduction: Reduction,
) -> Result<Array> {
    let who = "cosine_similarity_loss";
    same_shape(who, ("x1", x1), ("x2", x2))?;
    axis_index(who, x1, axis)?;
    let norm = |x: &Array| ferrox::sqrt(&ferrox::square(x)?.sum(Some(&[axis]), false)?);
    let den = (norm(x1)? * norm(x2)?)?.maximum(eps)?;
    let loss = ((x1 * x2)?.sum(Some(&[axis]), false)? / den)?;
    reduction.apply(&loss)
}

/// `max(0, -targets * (inputs1 - inputs2) + margin)` (targets ±1). MLX's
/// default reduction: none.
///
/// ```
/// use ferrox_nn::losses::{margin_ranking_loss, Reduction};
/// let a = ferrox::Array::from_slice(&[2.0f32], &[1])?;
/// let b = ferrox::Array::from_slice(&[1.0f32], &[1])?;
/// let t = ferrox::Array::from_slice(&[-1.0f32], &[1])?;
/// assert_eq!(margin_ranking_loss(&a, &b, &t, 0.0, Reduction::None)?.to_vec::<f32>()?, vec![1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn margin_ranking_loss(
    inputs1: &Array,
    inputs2: &Array,
    targets: &Array,
    margin: f64,
    reduction: Reduction,
) -> Result<Array> {
    let who = "margin_ranking_loss";
    same_shape(who, ("inputs1", inputs1), ("inputs2", inputs2))?;
    same_shape(who, ("inputs1", inputs1), ("targets", targets))?;
    let loss = ((ferrox::negative(targets)? * (inputs1 - inputs2)?)? + margin)?.maximum(0.0)?;
    reduction.apply(&loss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothing_and_probability_targets_agree_with_the_formula() {
        let logits = Array::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
        let probs = Array::from_slice(&[0.0f32, 0.0, 1.0], &[1, 3]).unwrap();
        let idx = Array::from_slice(&[2i32], &[1]).unwrap();
        let a = cross_entropy(&logits, &probs, None, -1, 0.0, Reduction::Sum).unwrap();
        let b = cross_entropy(&logits, &idx, None, -1, 0.0, Reduction::Sum).unwrap();
        assert!((a.item::<f32>().unwrap() - b.item::<f32>().unwrap()).abs() < 1e-6);
        assert!(cross_entropy(&logits, &idx, None, -1, 1.0, Reduction::Sum).is_err());
        assert!(cross_entropy(&logits, &idx, None, 2, 0.0, Reduction::Sum).is_err());
    }
}
