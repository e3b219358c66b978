//! [`MultiOptimizer`]: different optimizers for different parameters.

use super::Optimizer;
use crate::error::{Result, value};
use crate::params::Params;
use ferrox::Array;
use std::sync::Arc;

/// Chooses which optimizer updates a parameter, from its dotted name and
/// its array.
pub type Filter = Arc<dyn Fn(&str, &Array) -> bool + Send + Sync>;

/// Delegates each parameter to the first optimizer whose filter accepts
/// it; the last optimizer takes the rest (it has no filter). The state is
/// `{"states": [state of each optimizer]}`, as MLX's.
///
/// ```
/// use std::sync::Arc;
/// use ferrox_nn::{Params, optim::{MultiOptimizer, Optimizer, Sgd, Adam}};
/// let p = Params::from_named([
///     ("w".to_string(), ferrox::ones(&[2, 2], ferrox::DType::Float32)?),
///     ("b".to_string(), ferrox::ones(&[2], ferrox::DType::Float32)?),
/// ])?;
/// let mut opt = MultiOptimizer::new(
///     vec![Box::new(Sgd::new(0.5)), Box::new(Adam::new(0.1))],
///     vec![Arc::new(|_: &str, a: &ferrox::Array| a.ndim() == 2)],
/// )?;
/// let new = opt.apply_gradients(&p, &p)?;
/// assert_eq!(new.get("w").unwrap().to_vec::<f32>()?, vec![0.5; 4]);
/// assert!(new.get("b").is_some());
/// assert!(MultiOptimizer::new(vec![Box::new(Sgd::new(0.5))], vec![Arc::new(|_: &str, _: &ferrox::Array| true)]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct MultiOptimizer {
    optimizers: Vec<Box<dyn Optimizer>>,
    filters: Vec<Filter>,
}

impl Clone for MultiOptimizer {
    fn clone(&self) -> Self {
        MultiOptimizer {
            optimizers: self.optimizers.iter().map(|o| o.clone_box()).collect(),
            filters: self.filters.clone(),
        }
    }
}

impl MultiOptimizer {
    /// `optimizers` with one filter fewer than optimizers.
    pub fn new(
        optimizers: Vec<Box<dyn Optimizer>>,
        filters: Vec<Filter>,
    ) -> Result<MultiOptimizer> {
        if optimizers.is_empty() || filters.len() + 1 != optimizers.len() {
            return Err(value(
                "MultiOptimizer",
                format!(
                    "{} filters given for {} optimizers (needs one fewer than the optimizers)",
                    filters.len(),
                    optimizers.len()
                ),
            ));
        }
        Ok(MultiOptimizer {
            optimizers,
            filters,
        })
    }

    /// The trees of the parameters each optimizer takes.
    fn split(&self, tree: &Params) -> Result<Vec<Params>> {
        let mut parts: Vec<Vec<(String, Array)>> = vec![Vec::new(); self.optimizers.len()];
        for (name, a) in tree.named() {
            let i = self
                .filters
                .iter()
                .position(|f| f(&name, &a))
                .unwrap_or(self.optimizers.len() - 1);
            parts[i].push((name, a));
        }
        parts.into_iter().map(Params::from_named).collect()
    }
}

impl Optimizer for MultiOptimizer {
    fn init(&mut self, params: &Params) -> Result<()> {
        let parts = self.split(params)?;
        for (o, p) in self.optimizers.iter_mut().zip(&parts) {
            o.init(p)?;
        }
        Ok(())
    }

    fn apply_gradients(&mut self, grads: &Params, params: &Params) -> Result<Params> {
        let parts = self.split(grads)?;
        let mut named = Vec::new();
        for (o, g) in self.optimizers.iter_mut().zip(&parts) {
            if !g.is_empty() {
                named.extend(o.apply_gradients(g, params)?.named());
            }
        }
        Params::from_named(named)
    }

    fn state(&self) -> Params {
        let states = self.optimizers.iter().map(|o| o.state()).collect();
        Params::Map([("states".to_string(), Params::List(states))].into())
    }

    fn set_state(&mut self, state: &Params) -> Result<()> {
        let Some(Params::List(states)) = state.subtree("states") else {
            return Err(value(
                "MultiOptimizer",
                "the state must be {\"states\": [...]}",
            ));
        };
        if states.len() != self.optimizers.len() {
            return Err(value(
                "MultiOptimizer",
                format!(
                    "{} states given for {} optimizers",
                    states.len(),
                    self.optimizers.len()
                ),
            ));
        }
        for (o, s) in self.optimizers.iter_mut().zip(states) {
            o.set_state(s)?;
        }
        Ok(())
    }

    fn learning_rate(&self) -> Option<Array> {
        self.optimizers.first().and_then(|o| o.learning_rate())
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.optimizers
            .iter_mut()
            .for_each(|o| o.set_learning_rate(lr));
    }

    fn clone_box(&self) -> Box<dyn Optimizer> {
        Box::new(self.clone())
    }

    fn step(&self) -> Result<u64> {
        self.optimizers
            .first()
            .ok_or_else(|| value("MultiOptimizer", "no optimizers"))?
            .step()
    }
}
