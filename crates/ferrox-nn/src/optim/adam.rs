//! Adam and its variants AdamW and Adamax (formulas as MLX's; bias
//! correction off by default, as there).

use super::simple::{check_nonneg, setters, take, zeros_state};
use super::{Base, Ctx, LearningRate, ParamState, PerParam};
use crate::error::Result;
use ferrox::Array;

/// The hyperparameters of [`Adam`] and [`AdamW`].
///
/// `DECOUPLED` tells Adam (`false`) from AdamW (`true`).
#[derive(Clone, Debug)]
pub struct AdamRule<const DECOUPLED: bool> {
    /// `(beta1, beta2)` (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
    /// Divide by `1 - beta^t` (default false).
    pub bias_correction: bool,
    /// Decoupled weight decay (AdamW only; default 0.01 there).
    pub weight_decay: f64,
}

impl<const D: bool> AdamRule<D> {
    fn name_of(&self) -> &'static str {
        if D { "AdamW" } else { "Adam" }
    }
}

/// `1 - x`.
pub(super) fn one_minus(x: &Array) -> Result<Array> {
    ferrox::subtract(&1.0.into(), x)
}

/// Adam: `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
/// `w = w - lr m / (sqrt(v) + eps)` (with bias correction:
/// `lr / (1 - b1^t)` and `sqrt(v) / sqrt(1 - b2^t)`).
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Adam}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let mut adam = Adam::new(0.1).bias_correction(true);
/// let new = adam.apply_gradients(&p, &p)?;
/// // The first bias-corrected step moves by lr (to within eps).
/// assert!((new.get("w").unwrap().item::<f32>()? - 0.9).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Adam = Base<AdamRule<false>>;

/// AdamW: Adam after scaling the weights by `1 - lr * weight_decay`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, AdamW}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let g = p.map_named(|_, a| ferrox::zeros_like(a))?;
/// let new = AdamW::new(0.1).weight_decay(0.5).apply_gradients(&g, &p)?;
/// assert!((new.get("w").unwrap().item::<f32>()? - 0.95).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type AdamW = Base<AdamRule<true>>;

fn adam_rule<const D: bool>() -> AdamRule<D> {
    AdamRule {
        betas: (0.9, 0.999),
        eps: 1e-8,
        bias_correction: false,
        weight_decay: if D { 0.01 } else { 0.0 },
    }
}

impl Adam {
    /// Adam with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> Adam {
        Base::with_rule(adam_rule(), Some(lr.into()))
    }
}
impl AdamW {
    /// AdamW with learning rate `lr` (weight decay 0.01).
    pub fn new(lr: impl Into<LearningRate>) -> AdamW {
        Base::with_rule(adam_rule(), Some(lr.into()))
    }
}
setters!(AdamRule<false> { betas: (f64, f64), eps: f64, bias_correction: bool });
setters!(AdamRule<true> { betas: (f64, f64), eps: f64, bias_correction: bool, weight_decay: f64 });

impl<const D: bool> PerParam for AdamRule<D> {
    fn name(&self) -> &'static str {
        self.name_of()
    }
    fn check(&self) -> Result<()> {
        check_nonneg(self.name_of(), "eps", self.eps)
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["m", "v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let who = self.name_of();
        let lr = ctx.lr(grad.dtype())?;
        let param = if D {
            (param * one_minus(&(&lr * self.weight_decay)?)?)?
        } else {
            param.clone()
        };
        let (b1, b2) = self.betas;
        let m = ((take(state, "m", who)? * b1)? + (grad * (1.0 - b1))?)?;
        let v = ((take(state, "v", who)? * b2)? + (ferrox::square(grad)? * (1.0 - b2))?)?;
        state.insert("m".into(), m.clone());
        state.insert("v".into(), v.clone());
        if self.bias_correction {
            let t = ctx.step_f32()?;
            let pow = |b: f64| ferrox::power(&Array::scalar(b as f32), &t);
            let c1 = (&lr / one_minus(&pow(b1)?)?)?.astype(grad.dtype())?;
            let c2 = ferrox::rsqrt(&one_minus(&pow(b2)?)?)?.astype(grad.dtype())?;
            let den = ((ferrox::sqrt(&v)? * c2)? + self.eps)?;
            &param - ((c1 * m)? / den)?
        } else {
            &param - ((&lr * m)? / (ferrox::sqrt(&v)? + self.eps)?)?
        }
    }
}

/// The hyperparameters of [`Adamax`].
#[derive(Clone, Debug)]
pub struct AdamaxRule {
    /// `(beta1, beta2)` (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
}

/// Adamax: `m = b1 m + (1 - b1) g`, `v = max(b2 v, |g|)`,
/// `w = w - lr m / (v + eps)`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Adamax}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let new = Adamax::new(0.1).apply_gradients(&p, &p)?;
/// assert!((new.get("w").unwrap().item::<f32>()? - 0.99).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Adamax = Base<AdamaxRule>;

impl Adamax {
    /// Adamax with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> Adamax {
        Base::with_rule(
            AdamaxRule {
                betas: (0.9, 0.999),
                eps: 1e-8,
            },
            Some(lr.into()),
        )
    }
}
setters!(AdamaxRule {
    betas: (f64, f64),
    eps: f64
});

impl PerParam for AdamaxRule {
    fn name(&self) -> &'static str {
        "Adamax"
    }
    fn check(&self) -> Result<()> {
        check_nonneg("Adamax", "eps", self.eps)
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["m", "v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let lr = ctx.lr(grad.dtype())?;
        let (b1, b2) = self.betas;
        let m = ((take(state, "m", "Adamax")? * b1)? + (grad * (1.0 - b1))?)?;
        let v = (take(state, "v", "Adamax")? * b2)?.maximum(ferrox::abs(grad)?)?;
        state.insert("m".into(), m.clone());
        state.insert("v".into(), v.clone());
        param - ((&lr * m)? / (v + self.eps)?)?
    }
}
