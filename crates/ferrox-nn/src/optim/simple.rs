//! The small per-parameter optimizers: SGD, RMSprop, Adagrad, AdaDelta
//! and Lion (formulas as MLX's).

use super::{Base, Ctx, LearningRate, ParamState, PerParam};
use crate::error::{Result, value};
use ferrox::Array;

/// `{key: zeros_like(param)}` for each key.
pub(super) fn zeros_state(param: &Array, keys: &[&str]) -> Result<ParamState> {
    keys.iter()
        .map(|k| Ok((k.to_string(), ferrox::zeros_like(param)?)))
        .collect()
}

/// The state entry `key` (present since `init_single` made it).
pub(super) fn take(state: &ParamState, key: &str, who: &str) -> Result<Array> {
    state
        .get(key)
        .cloned()
        .ok_or_else(|| value(who, format!("the parameter state has no \"{key}\"")))
}

/// Declares chainable setters for a rule's fields on `Base<Rule>`.
macro_rules! setters {
    ($rule:ty { $($field:ident: $ty:ty),* $(,)? }) => {
        impl Base<$rule> {
            $(
                #[doc = concat!("Sets `", stringify!($field), "`.")]
                pub fn $field(mut self, v: $ty) -> Self {
                    self.rule.$field = v;
                    self
                }
            )*
        }
    };
}
pub(super) use setters;

pub(super) fn check_nonneg(who: &str, what: &str, v: f64) -> Result<()> {
    if v.is_nan() || v < 0.0 {
        return Err(value(who, format!("{what} must be >= 0, got {v}")));
    }
    Ok(())
}

fn check_pos(who: &str, what: &str, v: f64) -> Result<()> {
    if v.is_nan() || v <= 0.0 {
        return Err(value(who, format!("{what} must be > 0, got {v}")));
    }
    Ok(())
}

/// The hyperparameters of [`Sgd`].
#[derive(Clone, Debug, Default)]
pub struct SgdRule {
    /// Momentum (0: plain SGD).
    pub momentum: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// Nesterov momentum (needs momentum > 0 and no dampening).
    pub nesterov: bool,
}

/// Stochastic gradient descent with optional momentum, dampening,
/// Nesterov momentum and weight decay:
/// `v = momentum * v + (1 - dampening) * g`, `w = w - lr * v` (or
/// `g + momentum * v` with Nesterov).
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Sgd}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[2], ferrox::DType::Float32)?)])?;
/// let mut sgd = Sgd::new(0.5).momentum(0.9);
/// let new = sgd.apply_gradients(&p, &p)?; // gradient = the parameter
/// assert_eq!(new.get("w").unwrap().to_vec::<f32>()?, vec![0.5, 0.5]);
/// let mut bad = Sgd::new(0.1).nesterov(true);
/// assert!(bad.apply_gradients(&p, &p).unwrap_err().to_string().contains("Nesterov"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Sgd = Base<SgdRule>;

impl Sgd {
    /// SGD with learning rate `lr` (a constant or a schedule).
    pub fn new(lr: impl Into<LearningRate>) -> Sgd {
        Base::with_rule(SgdRule::default(), Some(lr.into()))
    }
}
setters!(SgdRule {
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool
});

impl PerParam for SgdRule {
    fn name(&self) -> &'static str {
        "SGD"
    }
    fn check(&self) -> Result<()> {
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(value(
                "SGD",
                format!(
                    "Nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and dampening {}",
                    self.momentum, self.dampening
                ),
            ));
        }
        Ok(())
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let lr = ctx.lr(grad.dtype())?;
        let mut g = grad.clone();
        if self.weight_decay != 0.0 {
            g = (&g + (param * self.weight_decay)?)?;
        }
        if self.momentum <= 0.0 {
            return param - (&lr * &g)?;
        }
        let v = (take(state, "v", "SGD")? * self.momentum)?;
        let v = if self.dampening > 0.0 {
            (v + (&g * (1.0 - self.dampening))?)?
        } else {
            (v + &g)?
        };
        let update = if self.nesterov {
            (&g + (&v * self.momentum)?)?
        } else {
            v.clone()
        };
        state.insert("v".into(), v);
        param - (&lr * &update)?
    }
}

/// The hyperparameters of [`RmsProp`].
#[derive(Clone, Debug)]
pub struct RmsPropRule {
    /// Smoothing of the squared gradient (default 0.99).
    pub alpha: f64,
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
}

/// RMSprop: `v = alpha v + (1 - alpha) g^2`, `w = w - lr g / (sqrt(v) + eps)`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, RmsProp}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let new = RmsProp::new(0.01).apply_gradients(&p, &p)?;
/// assert!(new.get("w").unwrap().item::<f32>()? < 1.0);
/// assert!(RmsProp::new(0.01).eps(0.0).apply_gradients(&p, &p).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type RmsProp = Base<RmsPropRule>;

impl RmsProp {
    /// RMSprop with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> RmsProp {
        Base::with_rule(
            RmsPropRule {
                alpha: 0.99,
                eps: 1e-8,
            },
            Some(lr.into()),
        )
    }
}
setters!(RmsPropRule {
    alpha: f64,
    eps: f64
});

impl PerParam for RmsPropRule {
    fn name(&self) -> &'static str {
        "RMSprop"
    }
    fn check(&self) -> Result<()> {
        check_nonneg("RMSprop", "alpha", self.alpha)?;
        check_pos("RMSprop", "eps", self.eps)
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let lr = ctx.lr(grad.dtype())?;
        let v = ((take(state, "v", "RMSprop")? * self.alpha)?
            + (ferrox::square(grad)? * (1.0 - self.alpha))?)?;
        let step = ((&lr * grad)? / (ferrox::sqrt(&v)? + self.eps)?)?;
        state.insert("v".into(), v);
        param - step
    }
}

/// The hyperparameters of [`Adagrad`].
#[derive(Clone, Debug)]
pub struct AdagradRule {
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
}

/// Adagrad: `v = v + g^2`, `w = w - lr g / (sqrt(v) + eps)`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Adagrad}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let new = Adagrad::new(0.1).apply_gradients(&p, &p)?;
/// assert!((new.get("w").unwrap().item::<f32>()? - 0.9).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Adagrad = Base<AdagradRule>;

impl Adagrad {
    /// Adagrad with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> Adagrad {
        Base::with_rule(AdagradRule { eps: 1e-8 }, Some(lr.into()))
    }
}
setters!(AdagradRule { eps: f64 });

impl PerParam for AdagradRule {
    fn name(&self) -> &'static str {
        "Adagrad"
    }
    fn check(&self) -> Result<()> {
        check_pos("Adagrad", "eps", self.eps)
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let lr = ctx.lr(grad.dtype())?;
        let v = (take(state, "v", "Adagrad")? + ferrox::square(grad)?)?;
        let step = ((&lr * grad)? / (ferrox::sqrt(&v)? + self.eps)?)?;
        state.insert("v".into(), v);
        param - step
    }
}

/// The hyperparameters of [`AdaDelta`].
#[derive(Clone, Debug)]
pub struct AdaDeltaRule {
    /// Smoothing of the running averages (default 0.9).
    pub rho: f64,
    /// Added inside the square roots (default 1e-6).
    pub eps: f64,
}

/// AdaDelta: `v = rho v + (1 - rho) g^2`,
/// `d = sqrt(u + eps) / sqrt(v + eps) g`, `u = rho u + (1 - rho) d^2`,
/// `w = w - lr d`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, AdaDelta}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let new = AdaDelta::new(1.0).apply_gradients(&p, &p)?;
/// assert!(new.get("w").unwrap().item::<f32>()? < 1.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type AdaDelta = Base<AdaDeltaRule>;

impl AdaDelta {
    /// AdaDelta with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> AdaDelta {
        Base::with_rule(
            AdaDeltaRule {
                rho: 0.9,
                eps: 1e-6,
            },
            Some(lr.into()),
        )
    }
}
setters!(AdaDeltaRule { rho: f64, eps: f64 });

impl PerParam for AdaDeltaRule {
    fn name(&self) -> &'static str {
        "AdaDelta"
    }
    fn check(&self) -> Result<()> {
        check_nonneg("AdaDelta", "rho", self.rho)?;
        check_pos("AdaDelta", "eps", self.eps)
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["u", "v"])
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let lr = ctx.lr(grad.dtype())?;
        let (rho, eps) = (self.rho, self.eps);
        let v = ((take(state, "v", "AdaDelta")? * rho)? + (ferrox::square(grad)? * (1.0 - rho))?)?;
        let u = take(state, "u", "AdaDelta")?;
        let d = ((ferrox::sqrt(&(&u + eps)?)? / ferrox::sqrt(&(&v + eps)?)?)? * grad)?;
        let u = ((u * rho)? + (ferrox::square(&d)? * (1.0 - rho))?)?;
        state.insert("v".into(), v);
        state.insert("u".into(), u);
        param - (&lr * &d)?
    }
}

/// The hyperparameters of [`Lion`].
#[derive(Clone, Debug)]
pub struct LionRule {
    /// `(beta1, beta2)` (default (0.9, 0.99)).
    pub betas: (f64, f64),
    /// Decoupled weight decay (default 0).
    pub weight_decay: f64,
}

/// Lion: `c = b1 m + (1 - b1) g`, `m = b2 m + (1 - b2) g`,
/// `w = (1 - lr wd) w - lr sign(c)`.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Lion}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[1], ferrox::DType::Float32)?)])?;
/// let new = Lion::new(0.1).apply_gradients(&p, &p)?;
/// assert!((new.get("w").unwrap().item::<f32>()? - 0.9).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Lion = Base<LionRule>;

impl Lion {
    /// Lion with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> Lion {
        Base::with_rule(
            LionRule {
                betas: (0.9, 0.99),
                weight_decay: 0.0,
            },
            Some(lr.into()),
        )
    }
}
setters!(LionRule {
    betas: (f64, f64),
    weight_decay: f64
});

impl PerParam for LionRule {
    fn name(&self) -> &'static str {
        "Lion"
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        zeros_state(param, &["m"])
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
        let m = take(state, "m", "Lion")?;
        let c = ((&m * b1)? + (grad * (1.0 - b1))?)?;
        state.insert("m".into(), ((&m * b2)? + (grad * (1.0 - b2))?)?);
        let mut p = param.clone();
        if self.weight_decay > 0.0 {
            p = (super::adam::one_minus(&(&lr * self.weight_decay)?)? * &p)?;
        }
        p - (&lr * ferrox::sign(&c)?)?
    }
}
