//! Adafactor: second moments factored into row and column averages for
//! matrices, a relative step size and update clipping (MLX's formulas).

use super::adam::one_minus;
use super::simple::{setters, take, zeros_state};
use super::{Base, Ctx, LearningRate, ParamState, PerParam};
use crate::error::Result;
use ferrox::Array;

/// The hyperparameters of [`Adafactor`].
#[derive(Clone, Debug)]
pub struct AdafactorRule {
    /// `(eps1, eps2)`: added to the squared gradient, and the least
    /// parameter scale (default (1e-30, 1e-3)).
    pub eps: (f64, f64),
    /// The largest RMS of an update before it is scaled down (default 1).
    pub clip_threshold: f64,
    /// The exponent of the second-moment decay (default -0.8).
    pub decay_rate: f64,
    /// First-moment smoothing; `None` (default) keeps no first moment.
    pub beta_1: Option<f64>,
    /// Weight decay (default 0).
    pub weight_decay: f64,
    /// Scale the step by the parameter's RMS (default true).
    pub scale_parameter: bool,
    /// Use `min(1e-2, 1/sqrt(step))` instead of the learning rate
    /// (default true).
    pub relative_step: bool,
    /// Warm the relative step up as `1e-6 * step` (default false).
    pub warmup_init: bool,
}

/// Adafactor (Shazeer and Stern, 2018).
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Adafactor}};
/// let p = Params::from_named([("w".to_string(), ferrox::ones(&[2, 3], ferrox::DType::Float32)?)])?;
/// let mut opt = Adafactor::new();
/// opt.init(&p)?;
/// let names: Vec<String> = opt.state().named().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["step", "w.exp_avg_sq_col", "w.exp_avg_sq_row"]);
/// let new = opt.apply_gradients(&p, &p)?;
/// assert!(new.get("w").unwrap().to_vec::<f32>()?.iter().all(|&v| v < 1.0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Adafactor = Base<AdafactorRule>;

impl Adafactor {
    /// Adafactor with a relative step (no learning rate).
    pub fn new() -> Adafactor {
        Base::with_rule(
            AdafactorRule {
                eps: (1e-30, 1e-3),
                clip_threshold: 1.0,
                decay_rate: -0.8,
                beta_1: None,
                weight_decay: 0.0,
                scale_parameter: true,
                relative_step: true,
                warmup_init: false,
            },
            None,
        )
    }
    /// Adafactor with learning rate `lr` (used when `relative_step` is off).
    pub fn with_learning_rate(lr: impl Into<LearningRate>) -> Adafactor {
        let mut a = Adafactor::new();
        a.set_schedule(lr.into());
        a
    }
}

impl Default for Adafactor {
    fn default() -> Self {
        Adafactor::new()
    }
}
setters!(AdafactorRule {
    eps: (f64, f64),
    clip_threshold: f64,
    decay_rate: f64,
    beta_1: Option<f64>,
    weight_decay: f64,
    scale_parameter: bool,
    relative_step: bool,
    warmup_init: bool,
});

fn rms(x: &Array) -> Result<Array> {
    ferrox::sqrt(&ferrox::square(x)?.mean(None, false)?)
}

impl PerParam for AdafactorRule {
    fn name(&self) -> &'static str {
        "Adafactor"
    }
    fn init_single(&self, param: &Array) -> Result<ParamState> {
        let mut st = if param.ndim() >= 2 {
            let s = param.shape();
            let n = s.len();
            let row = ferrox::zeros(&s[..n - 1], param.dtype())?;
            let mut col_shape = s[..n - 2].to_vec();
            col_shape.push(s[n - 1]);
            let col = ferrox::zeros(&col_shape, param.dtype())?;
            ParamState::from([
                ("exp_avg_sq_row".to_string(), row),
                ("exp_avg_sq_col".to_string(), col),
            ])
        } else {
            zeros_state(param, &["exp_avg_sq"])?
        };
        if self.beta_1.is_some() {
            st.insert("exp_avg".into(), ferrox::zeros_like(param)?);
        }
        Ok(st)
    }
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array> {
        let who = "Adafactor";
        let t = ctx.step_f32()?;
        let p_rms = rms(param)?;
        let dt = p_rms.dtype();
        let rel = if self.relative_step {
            let min_step = if self.warmup_init {
                (&t * 1e-6)?
            } else {
                Array::scalar(1e-2f32)
            };
            ferrox::minimum(&min_step, &ferrox::rsqrt(&t)?)?
        } else {
            ctx.lr(dt)?
        }
        .astype(dt)?;
        let lr = if self.scale_parameter {
            (p_rms.maximum(self.eps.1)? * rel)?
        } else {
            rel
        };
        let beta_2 = one_minus(&ferrox::power(&t, &self.decay_rate.into())?.astype(dt)?)?;
        let keep = one_minus(&beta_2)?;
        let sq = (ferrox::square(grad)? + self.eps.0)?;
        let mut update = if grad.ndim() >= 2 {
            let row = ((&beta_2 * take(state, "exp_avg_sq_row", who)?)?
                + (&keep * sq.mean(Some(&[-1]), false)?)?)?;
            let col = ((&beta_2 * take(state, "exp_avg_sq_col", who)?)?
                + (&keep * sq.mean(Some(&[-2]), false)?)?)?;
            let r = ferrox::rsqrt(&(&row / row.mean(Some(&[-1]), true)?)?)?;
            let c = ferrox::rsqrt(&col)?;
            let approx = (r.expand_dims(&[-1])? * c.expand_dims(&[-2])?)?;
            state.insert("exp_avg_sq_row".into(), row);
            state.insert("exp_avg_sq_col".into(), col);
            (approx * grad)?
        } else {
            let v = ((&beta_2 * take(state, "exp_avg_sq", who)?)? + (&keep * &sq)?)?;
            let u = (ferrox::rsqrt(&v)? * grad)?;
            state.insert("exp_avg_sq".into(), v);
            u
        };
        let denom = (rms(&update)? / self.clip_threshold)?.maximum(1.0)?;
        update = (&lr * (update / denom)?)?;
        if let Some(b1) = self.beta_1 {
            let avg = ((take(state, "exp_avg", who)? * b1)? + (&update * (1.0 - b1))?)?;
            state.insert("exp_avg".into(), avg.clone());
            update = avg;
        }
        let mut p = param.clone();
        if self.weight_decay != 0.0 {
            p = (&p + (&p * (&lr * -self.weight_decay)?)?)?;
        }
        p - update
    }
}
