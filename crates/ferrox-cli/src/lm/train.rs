//! Training the language model: a compiled AdamW step (one trace, then
//! replays) with a warmup-then-cosine learning rate, on batches drawn
//! from a [`Corpus`].
//!
//! Under `mpirun -np N` (ferrox built with MPI) training is data-parallel:
//! every process starts from the same weights (the same seed), draws its
//! own batches, and each step averages the gradients over the processes
//! (an `all_sum` inside the compiled step), so N processes with batch B
//! follow the loss curve of one with batch N * B. The reported loss is the
//! processes' mean.

use super::model::Lm;
use crate::corpus::{Corpus, SplitMix};
use crate::error::{Error, Result};
use ferrox::distributed::{self, Group};
use ferrox::{Array, Tree};
use ferrox_nn::losses::{Reduction, cross_entropy};
use ferrox_nn::module::Module;
use ferrox_nn::optim::{AdamW, LearningRate, Optimizer, schedule};
use ferrox_nn::step::compile_step;
use std::time::{Duration, Instant};

/// How to train.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// Optimizer steps.
    pub steps: u64,
    /// Sequences per step.
    pub batch: usize,
    /// Tokens per sequence (at most the model's context).
    pub seq: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// Learning rate at the end of the cosine.
    pub min_lr: f64,
    /// Steps of linear warmup from 0 to `lr`.
    pub warmup: u64,
    /// AdamW's decoupled weight decay.
    pub weight_decay: f64,
    /// Seeds the batches.
    pub seed: u64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            steps: 300,
            batch: 16,
            seq: 128,
            lr: 2e-3,
            min_lr: 1e-4,
            warmup: 30,
            weight_decay: 0.01,
            seed: 0,
        }
    }
}

/// What one step reports to the caller (a progress bar).
#[derive(Clone, Copy, Debug)]
pub struct StepInfo {
    /// The step just done, from 1.
    pub step: u64,
    /// Its loss.
    pub loss: f32,
    /// Training tokens per second since the first step (the first step
    /// traces and compiles, so it is left out).
    pub tokens_per_s: f64,
}

/// The result of [`train`].
#[derive(Clone, Debug)]
pub struct TrainReport {
    /// `(step, loss)` for every step.
    pub losses: Vec<(u64, f32)>,
    /// Training tokens per second after the first step.
    pub tokens_per_s: f64,
    /// The first step's time (tracing, compiling and the step itself).
    pub first_step: Duration,
    /// The whole run.
    pub elapsed: Duration,
    /// How many times the step was traced (1).
    pub traces: usize,
}

impl TrainReport {
    /// The mean loss of the last `n` steps.
    pub fn final_loss(&self, n: usize) -> f32 {
        let tail = &self.losses[self.losses.len().saturating_sub(n.max(1))..];
        tail.iter().map(|&(_, l)| l).sum::<f32>() / tail.len().max(1) as f32
    }
}

/// The demo's optimizer: AdamW with a linear warmup joined to a cosine
/// decay over the remaining steps.
pub fn optimizer(c: &TrainConfig) -> Result<AdamW> {
    let warmup = c.warmup.clamp(1, c.steps.max(1));
    let decay = c.steps.saturating_sub(warmup).max(1);
    let lr = schedule::join_schedules(
        vec![
            schedule::linear_schedule(0.0, c.lr, warmup)?,
            schedule::cosine_decay(c.lr, decay, c.min_lr)?,
        ],
        &[warmup],
    )?;
    Ok(AdamW::new(LearningRate::Scheduled(lr)).weight_decay(c.weight_decay))
}

/// The next-token loss of `model` on `(inputs, targets)`.
pub fn loss(model: &Lm, inputs: &Array, targets: &Array) -> ferrox::Result<Array> {
    cross_entropy(
        &model.forward(inputs)?,
        targets,
        None,
        -1,
        0.0,
        Reduction::Mean,
    )
}

/// Trains `model` with `opt` on `corpus`, calling `on_step` after each
/// step.
pub fn train(
    model: &mut Lm,
    opt: &mut AdamW,
    corpus: &Corpus,
    c: &TrainConfig,
    mut on_step: impl FnMut(StepInfo),
) -> Result<TrainReport> {
    if c.seq == 0 || c.seq > model.config.context || c.batch == 0 || c.steps == 0 {
        return Err(Error::Config(format!(
            "train: steps {}, batch {} and seq {} must be positive and seq at most the context {}",
            c.steps, c.batch, c.seq, model.config.context
        )));
    }
    let world = distributed::init(false, "any")?;
    let step = if world.size() > 1 {
        let average = averaging_gradients(&world);
        compile_step(model, opt, move |m: &Lm, xs: &[Array]| {
            let params: Vec<Array> = m.named_parameters().into_iter().map(|(_, a)| a).collect();
            let values = average.call(&params)?;
            loss(&m.with_parameter_values(&values)?, &xs[0], &xs[1])
        })?
    } else {
        compile_step(model, opt, |m: &Lm, xs: &[Array]| loss(m, &xs[0], &xs[1]))?
    };
    // Each process its own batches (process 0 draws what one process would).
    let mut rng = SplitMix::new(c.seed ^ (world.rank() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let start = Instant::now();
    let mut losses = Vec::with_capacity(c.steps as usize);
    let mut first_step = Duration::ZERO;
    for i in 1..=c.steps {
        let (x, y) = corpus.batch(&mut rng, c.batch, c.seq)?;
        let mut l = step.step(model, opt, &[x, y])?;
        if world.size() > 1 {
            l = (&distributed::all_sum(&l, Some(&world))? * (1.0 / world.size() as f64))?;
        }
        let l = l.item::<f32>()?;
        if world.size() > 1 {
            // The updated weights and optimizer state hold this step's
            // gradient all_sums: every process evaluates them now, in the
            // same order, so none is left for one process alone to run
            // later (process 0's checkpoint would wait on its peers).
            let mut pending: Vec<Array> = model
                .named_parameters()
                .into_iter()
                .map(|(_, a)| a)
                .collect();
            pending.extend(opt.state().leaves());
            ferrox::eval(&pending)?;
        }
        if !l.is_finite() {
            return Err(Error::Config(format!(
                "train: the loss is {l} at step {i}; lower the learning rate"
            )));
        }
        if i == 1 {
            first_step = start.elapsed();
        }
        losses.push((i, l));
        on_step(StepInfo {
            step: i,
            loss: l,
            tokens_per_s: rate(i - 1, c, start.elapsed().saturating_sub(first_step)),
        });
    }
    let elapsed = start.elapsed();
    Ok(TrainReport {
        tokens_per_s: rate(c.steps - 1, c, elapsed.saturating_sub(first_step)),
        losses,
        first_step,
        elapsed,
        traces: step.traces(),
    })
}

/// The identity on the parameters whose gradient is averaged over
/// `world`: the loss differentiated through it gives every process the
/// mean of the processes' gradients.
fn averaging_gradients(world: &Group) -> ferrox::CustomFunction {
    let world = world.clone();
    let scale = 1.0 / world.size() as f64;
    ferrox::custom_function(|xs: &[Array]| Ok(xs.to_vec())).with_vjp(std::sync::Arc::new(
        move |_primals: &[Array], cotangents: &[Array], _outputs: &[Array]| {
            cotangents
                .iter()
                .map(|g| &distributed::all_sum(g, Some(&world))? * scale)
                .collect()
        },
    ))
}

fn rate(steps: u64, c: &TrainConfig, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if steps == 0 || secs <= 0.0 {
        return 0.0;
    }
    (steps as f64 * (c.batch * c.seq) as f64) / secs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::arithmetic;
    use crate::lm::LmConfig;

    #[test]
    fn training_lowers_the_loss_with_one_trace() -> Result<()> {
        ferrox::random::seed(0);
        let mut model = Lm::new(LmConfig::tiny())?;
        let c = TrainConfig {
            steps: 12,
            batch: 4,
            seq: 32,
            lr: 3e-3,
            warmup: 2,
            ..TrainConfig::default()
        };
        let corpus = Corpus::new(&arithmetic(0, 20_000), c.seq + 1)?;
        let mut opt = optimizer(&c)?;
        let mut seen = 0;
        let r = train(&mut model, &mut opt, &corpus, &c, |_| seen += 1)?;
        assert_eq!((seen, r.traces), (12, 1));
        assert!(r.losses[11].1 < r.losses[0].1, "{:?}", r.losses);
        Ok(())
    }

    #[test]
    fn a_sequence_longer_than_the_context_is_an_error() -> Result<()> {
        let mut model = Lm::new(LmConfig::tiny())?;
        let c = TrainConfig {
            seq: 65,
            ..TrainConfig::default()
        };
        let corpus = Corpus::new(&arithmetic(0, 5_000), 66)?;
        let e = train(&mut model, &mut optimizer(&c)?, &corpus, &c, |_| {}).unwrap_err();
        assert!(e.to_string().contains("seq 65"), "{e}");
        Ok(())
    }
}
