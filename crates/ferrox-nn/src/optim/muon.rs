//! Muon: momentum SGD whose matrix updates are orthogonalised by a
//! Newton-Schulz iteration (MLX's coefficients and scaling).

use super::simple::{setters, take, zeros_state};
use super::{Base, Ctx, LearningRate, ParamState, PerParam};
use crate::error::Result;
use ferrox::Array;

/// The hyperparameters of [`Muon`].
#[derive(Clone, Debug)]
pub struct MuonRule {
    /// Momentum (default 0.95).
    pub momentum: f64,
    /// Weight decay added to the gradient (default 0.01).
    pub weight_decay: f64,
    /// Nesterov momentum (default true).
    pub nesterov: bool,
    /// Newton-Schulz iterations (default 5).
    pub ns_steps: usize,
}

/// Muon (Jordan et al., 2024). Parameters of rank 2 or more (flattened to
/// `[shape[0], -1]`) get orthogonalised updates scaled by
/// `sqrt(max(1, rows / cols))`; vectors get plain momentum updates.
///
/// ```
/// use ferrox_nn::{Params, optim::{Optimizer, Muon}};
/// let w = ferrox::random::normal(&[4, 3], ferrox::DType::Float32, 0.0, 1.0, None)?;
/// let p = Params::from_named([("w".to_string(), w)])?;
/// let new = Muon::new(0.02).apply_gradients(&p, &p)?;
/// assert_eq!(new.get("w").unwrap().shape(), &[4, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub type Muon = Base<MuonRule>;

impl Muon {
    /// Muon with learning rate `lr`.
    pub fn new(lr: impl Into<LearningRate>) -> Muon {
        Base::with_rule(
            MuonRule {
                momentum: 0.95,
                weight_decay: 0.01,
                nesterov: true,
                ns_steps: 5,
            },
            Some(lr.into()),
        )
    }
}
setters!(MuonRule {
    momentum: f64,
    weight_decay: f64,
    nesterov: bool,
    ns_steps: usize
});

/// The Newton-Schulz iteration that takes a matrix towards the nearest
/// semi-orthogonal one.
fn newton_schulz(x: &Array, steps: usize) -> Result<Array> {
    let (a, b, c) = (3.4445f32, -4.7750f32, 2.0315f32);
    let s = x.shape();
    let transpose = s[0] > s[1];
    let mut x = if transpose { x.t()? } else { x.clone() };
    let norm = ferrox::sqrt(&ferrox::square(&x)?.sum(None, true)?)?;
    x = (&x / (norm + 1e-7)?)?;
    for _ in 0..steps {
        let xt = x.t()?;
        let aa = ferrox::matmul(&x, &xt)?;
        let bb = ferrox::addmm(&(&aa * b as f64)?, &aa, &aa, c, 1.0)?;
        x = ferrox::addmm(&(&x * a as f64)?, &bb, &x, 1.0, 1.0)?;
    }
    if transpose { x.t() } else { Ok(x) }
}

impl PerParam for MuonRule {
    fn name(&self) -> &'static str {
        "Muon"
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
        let mut g = grad.clone();
        if self.weight_decay != 0.0 {
            g = (&g + (param * self.weight_decay)?)?;
        }
        let mu = self.momentum;
        let v = ((take(state, "v", "Muon")? * mu)? + (&g * (1.0 - mu))?)?;
        state.insert("v".into(), v.clone());
        let mut update = if self.nesterov {
            ((&g * (1.0 - mu))? + (&v * mu)?)?
        } else {
            v
        };
        let mut lr = ctx.lr(grad.dtype())?;
        if update.ndim() >= 2 {
            let shape: Vec<isize> = update.shape().iter().map(|&d| d as isize).collect();
            let flat = update.reshape(&[shape[0], -1])?;
            update = newton_schulz(&flat, self.ns_steps)?.reshape(&shape)?;
            let n = shape.len();
            let ratio = shape[n - 2] as f64 / shape[n - 1] as f64;
            lr = (lr * ratio.max(1.0).sqrt())?;
        }
        param - (&lr * &update)?
    }
}
