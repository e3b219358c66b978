//! Optimizers (`mlx.optimizers`): an [`Optimizer`] turns gradients into
//! new parameters and keeps its state as a [`Params`] tree that can be
//! saved, loaded and threaded through a compiled step.
//!
//! Most optimizers are per-parameter rules ([`PerParam`]): each parameter
//! has its own small state (`m`, `v`, ...), created on the first update
//! (or by [`Optimizer::init`]). The state tree uses MLX's layout: `step`
//! (uint64), `learning_rate` (float32) and, for each parameter, its
//! dotted name followed by the state's key (`layers.0.weight.m`), so a
//! state saved by MLX loads here and back.
//!
//! The order of one update is MLX's: the learning rate is the schedule's
//! value at the current step, then the step is incremented, then each
//! parameter is updated with that rate and the new step.

mod adafactor;
mod adam;
mod multi;
mod muon;
mod simple;

pub use adafactor::Adafactor;
pub use adam::{Adam, AdamW, Adamax};
pub use multi::MultiOptimizer;
pub use muon::Muon;
pub use simple::{AdaDelta, Adagrad, Lion, RmsProp, Sgd};

use crate::error::{Result, value};
use crate::module::Module;
use crate::params::Params;
use ferrox::{Array, DType};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A learning-rate schedule: the rate (a float32 scalar) at a step (a
/// uint64 scalar). Built from ops, so it works inside `compile`.
pub type Schedule = Arc<dyn Fn(&Array) -> Result<Array> + Send + Sync>;

/// A constant learning rate or a [`Schedule`].
///
/// ```
/// use ferrox_nn::optim::LearningRate;
/// let c: LearningRate = 0.1.into();
/// let s = LearningRate::from(ferrox_nn::optim::schedule::exponential_decay(0.1, 0.5));
/// assert!(matches!(c, LearningRate::Constant(_)) && matches!(s, LearningRate::Scheduled(_)));
/// ```
#[derive(Clone)]
pub enum LearningRate {
    /// The same rate at every step.
    Constant(f64),
    /// A rate that depends on the step.
    Scheduled(Schedule),
}

impl From<f64> for LearningRate {
    fn from(v: f64) -> Self {
        LearningRate::Constant(v)
    }
}

impl From<Schedule> for LearningRate {
    fn from(s: Schedule) -> Self {
        LearningRate::Scheduled(s)
    }
}

impl LearningRate {
    fn at(&self, step: &Array) -> Result<Array> {
        match self {
            LearningRate::Constant(v) => Ok(Array::scalar(*v as f32)),
            LearningRate::Scheduled(s) => s(step)?.astype(DType::Float32),
        }
    }
}

/// The state of one parameter: named arrays (`m`, `v`, ...).
pub type ParamState = BTreeMap<String, Array>;

/// What [`PerParam::apply_single`] knows about the current update.
pub struct Ctx<'a> {
    /// The learning rate (float32 scalar), if the optimizer has one.
    pub learning_rate: Option<&'a Array>,
    /// The step after this update's increment (uint64 scalar; 1 on the
    /// first update).
    pub step: &'a Array,
}

impl Ctx<'_> {
    /// The learning rate in `dtype` (MLX casts it to the gradient's).
    pub fn lr(&self, dtype: DType) -> Result<Array> {
        self.learning_rate
            .ok_or_else(|| value("optimizer", "no learning rate is set"))?
            .astype(dtype)
    }
    /// The step as a float32 scalar.
    pub fn step_f32(&self) -> Result<Array> {
        self.step.astype(DType::Float32)
    }
}

/// The per-parameter half of an optimizer: its hyperparameters and its
/// update rule. [`Base`] does the rest.
pub trait PerParam: Clone + Send + Sync + 'static {
    /// The optimizer's name, for errors.
    fn name(&self) -> &'static str;
    /// Checks the hyperparameters (called before the first update).
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// The state of a new parameter.
    fn init_single(&self, param: &Array) -> Result<ParamState>;
    /// The updated parameter; changes `state` in place.
    fn apply_single(
        &self,
        grad: &Array,
        param: &Array,
        state: &mut ParamState,
        ctx: &Ctx,
    ) -> Result<Array>;
}

/// The shared machinery of per-parameter optimizers: the step count, the
/// learning rate and the per-parameter states.
#[derive(Clone)]
pub struct Base<R: PerParam> {
    /// The hyperparameters and update rule.
    pub rule: R,
    lr: Option<LearningRate>,
    step: Array,
    learning_rate: Option<Array>,
    states: BTreeMap<String, ParamState>,
}

impl<R: PerParam> Base<R> {
    /// An optimizer with `rule` and a learning rate (`None`: the rule
    /// needs none, as Adafactor's relative step).
    /// (A schedule that fails at step 0 reports its error at the first
    /// update.)
    pub fn with_rule(rule: R, lr: Option<LearningRate>) -> Base<R> {
        let step = Array::scalar(0u64);
        let learning_rate = lr.as_ref().and_then(|l| l.at(&step).ok());
        Base {
            rule,
            lr,
            step,
            learning_rate,
            states: BTreeMap::new(),
        }
    }

    /// Sets the learning rate (a constant or a schedule) for the
    /// following updates.
    pub fn set_schedule(&mut self, lr: LearningRate) {
        self.learning_rate = lr.at(&self.step).ok();
        self.lr = Some(lr);
    }
}

/// Something that updates parameters from gradients.
///
/// ```
/// use ferrox_nn::{Module, optim::{Optimizer, Adam}};
/// let mut model = ferrox_nn::layers::Linear::new(2, 1, true)?;
/// let mut opt = Adam::new(1e-3);
/// opt.init(&model.trainable_parameters())?;
/// let names: Vec<String> = opt.state().named().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["bias.m", "bias.v", "learning_rate", "step", "weight.m", "weight.v"]);
/// let grads = model.trainable_parameters().map_named(|_, a| ferrox::ones_like(a))?;
/// opt.update(&mut model, &grads)?;
/// assert_eq!(opt.step()?, 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Optimizer: Send + Sync {
    /// Creates the state of every parameter in `params` that has none.
    fn init(&mut self, params: &Params) -> Result<()>;

    /// The updated parameters (shaped like `grads`) for `grads`;
    /// `params` holds at least every parameter `grads` names.
    fn apply_gradients(&mut self, grads: &Params, params: &Params) -> Result<Params>;

    /// The whole state as a tree (see the [module docs](self)).
    fn state(&self) -> Params;

    /// Replaces the state with `state`, shaped as [`state`](Optimizer::state)
    /// returns it.
    fn set_state(&mut self, state: &Params) -> Result<()>;

    /// The learning rate of the last update (or the initial one).
    fn learning_rate(&self) -> Option<Array>;

    /// Sets a constant learning rate.
    fn set_learning_rate(&mut self, lr: f64);

    /// A boxed copy (state included).
    fn clone_box(&self) -> Box<dyn Optimizer>;

    /// The number of updates so far.
    fn step(&self) -> Result<u64> {
        let s = self.state();
        let step = s
            .get("step")
            .ok_or_else(|| value("optimizer", "the state has no step"))?;
        step.astype(DType::UInt64)?.item::<u64>()
    }

    /// Applies `grads` to `model`'s parameters.
    fn update<M: Module + ?Sized>(&mut self, model: &mut M, grads: &Params) -> Result<()>
    where
        Self: Sized,
    {
        let params = model.parameters();
        let new = self.apply_gradients(grads, &params)?;
        model.update(&new, true)
    }
}

impl<R: PerParam> Optimizer for Base<R> {
    fn init(&mut self, params: &Params) -> Result<()> {
        self.rule.check()?;
        for (name, p) in params.named() {
            if name == "step" || name == "learning_rate" {
                return Err(value(
                    self.rule.name(),
                    format!("a parameter named \"{name}\" clashes with the optimizer's own state"),
                ));
            }
            if !self.states.contains_key(&name) {
                let st = self.rule.init_single(&p)?;
                self.states.insert(name, st);
            }
        }
        Ok(())
    }

    fn apply_gradients(&mut self, grads: &Params, params: &Params) -> Result<Params> {
        self.init(grads)?;
        // A schedule's rate is recomputed from the step; a constant rate
        // is state (so a compiled step reads it as an input).
        if let Some(LearningRate::Scheduled(s)) = &self.lr {
            self.learning_rate = Some(s(&self.step)?.astype(DType::Float32)?);
        }
        self.step = (&self.step + Array::scalar(1u64))?;
        let ctx = Ctx {
            learning_rate: self.learning_rate.as_ref(),
            step: &self.step,
        };
        let mut out = Vec::new();
        for (name, g) in grads.named() {
            let p = params.get(&name).ok_or_else(|| {
                value(
                    self.rule.name(),
                    format!("a gradient for \"{name}\" but no such parameter"),
                )
            })?;
            if p.shape() != g.shape() {
                return Err(value(
                    self.rule.name(),
                    format!(
                        "\"{name}\": gradient shape {:?} but parameter shape {:?}",
                        g.shape(),
                        p.shape()
                    ),
                ));
            }
            let st = self
                .states
                .get_mut(&name)
                .ok_or_else(|| value(self.rule.name(), format!("no state for \"{name}\"")))?;
            out.push((name, self.rule.apply_single(&g, p, st, &ctx)?));
        }
        Params::from_named(out)
    }

    fn state(&self) -> Params {
        let mut named = vec![("step".to_string(), self.step.clone())];
        named.extend(
            self.learning_rate
                .clone()
                .map(|l| ("learning_rate".to_string(), l)),
        );
        for (p, st) in &self.states {
            named.extend(st.iter().map(|(k, a)| (format!("{p}.{k}"), a.clone())));
        }
        Params::from_named(named).unwrap_or_default()
    }

    fn set_state(&mut self, state: &Params) -> Result<()> {
        let who = self.rule.name();
        let mut step = None;
        let mut lr = None;
        let mut states: BTreeMap<String, ParamState> = BTreeMap::new();
        for (name, a) in state.named() {
            match name.as_str() {
                "step" => step = Some(a),
                "learning_rate" => lr = Some(a),
                _ => {
                    let (p, k) = name.rsplit_once('.').ok_or_else(|| {
                        value(
                            who,
                            format!("state entry \"{name}\" is not <parameter>.<key>"),
                        )
                    })?;
                    states
                        .entry(p.to_string())
                        .or_default()
                        .insert(k.to_string(), a);
                }
            }
        }
        self.step = step.ok_or_else(|| value(who, "the state has no \"step\""))?;
        if self.lr.is_some() || lr.is_some() {
            self.learning_rate =
                Some(lr.ok_or_else(|| value(who, "the state has no \"learning_rate\""))?);
        }
        self.states = states;
        Ok(())
    }

    fn learning_rate(&self) -> Option<Array> {
        self.learning_rate.clone()
    }

    fn clone_box(&self) -> Box<dyn Optimizer> {
        Box::new(self.clone())
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = Some(LearningRate::Constant(lr));
        self.learning_rate = Some(Array::scalar(lr as f32));
    }
}

/// Scales `grads` so that their global L2 norm is at most `max_norm`;
/// returns the scaled gradients and the norm before scaling. The factor
/// is `min(max_norm / (norm + 1e-6), 1)`, as MLX's.
///
/// ```
/// use ferrox_nn::{Params, optim::clip_grad_norm};
/// let g = Params::from_named([("w".to_string(), ferrox::Array::from_slice(&[3.0f32, 4.0], &[2])?)])?;
/// let (clipped, norm) = clip_grad_norm(&g, 1.0)?;
/// assert!((norm.item::<f32>()? - 5.0).abs() < 1e-6);
/// let c = clipped.get("w").unwrap().to_vec::<f32>()?;
/// assert!((c[0] - 0.6).abs() < 1e-5 && (c[1] - 0.8).abs() < 1e-5);
/// assert!(clip_grad_norm(&g, -1.0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn clip_grad_norm(grads: &Params, max_norm: f64) -> Result<(Params, Array)> {
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(value(
            "clip_grad_norm",
            format!("max_norm must be >= 0, got {max_norm}"),
        ));
    }
    let mut total = ferrox::zeros(&[], DType::Float32)?;
    for (_, g) in grads.named() {
        total = (total + ferrox::square(&g)?.sum(None, false)?)?;
    }
    let norm = ferrox::sqrt(&total)?;
    let scale = (ferrox::reciprocal(&(&norm + 1e-6)?)? * max_norm)?.minimum(1.0)?;
    let clipped = grads.map_named(|_, g| g * &scale)?;
    Ok((clipped, norm))
}

pub mod schedule;
