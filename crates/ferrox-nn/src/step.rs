//! A compiled training step: the model's parameters and the optimizer's
//! state go in, the loss and the updated ones come out, through one
//! [`ferrox::compile()`] trace that later steps replay.
//!
//! The choice for the optimizer state that MLX creates on the first
//! update: [`compile_step`] **initialises it before compiling**
//! ([`Optimizer::init`] on the trainable parameters), so the first call
//! already has the state's final shape and the trace is made once, on the
//! first call, and replayed from the second on.
//!
//! Every parameter (frozen ones too) is an input of the trace, so weights
//! loaded or changed between steps are seen; the optimizer's learning
//! rate and step are state inputs too, so a schedule or
//! `set_learning_rate` takes effect without a new trace. Freezing or
//! unfreezing parameters after compiling is an error at the next step.
//! Random draws inside the loss (dropout) use a key that is a constant of
//! the trace: pass a key as an input for fresh masks.

use crate::error::{Result, value};
use crate::grad::{buffer_names, value_and_grad_of};
use crate::module::Module;
use crate::optim::Optimizer;
use crate::params::Params;
use ferrox::{Array, CompiledFn, Tree};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// A compiled training step for models of type `M` and optimizers of
/// type `O` (see [the module docs](self)).
///
/// ```
/// use ferrox::{Array, DType};
/// use ferrox_nn::{Forward, Module, layers::Linear, losses, optim::Sgd, step::compile_step};
/// let mut model = Linear::new(2, 1, true)?;
/// let mut opt = Sgd::new(0.01);
/// let step = compile_step(&model, &mut opt, |m: &Linear, xs: &[Array]| {
///     losses::mse_loss(&m.forward(&xs[0])?, &xs[1], losses::Reduction::Mean)
/// })?;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let y = Array::from_slice(&[1.0f32, -1.0], &[2, 1])?;
/// let first = step.step(&mut model, &mut opt, &[x.clone(), y.clone()])?.item::<f32>()?;
/// let mut last = first;
/// for _ in 0..20 {
///     last = step.step(&mut model, &mut opt, &[x.clone(), y.clone()])?.item::<f32>()?;
/// }
/// assert!(last < first);
/// assert_eq!(step.traces(), 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub struct TrainStep<M, O> {
    compiled: CompiledFn,
    trainable: Vec<String>,
    buffers: Vec<String>,
    state: Params,
    _types: PhantomData<fn(&M, &O)>,
}

/// Which parameters are trainable, in walk order.
fn trainable_names<M: Module + ?Sized>(model: &M) -> Vec<String> {
    model
        .named_trainable_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Compiles one training step of `loss` (a scalar function of the model
/// and the step's inputs) with `optimizer`, whose state it initialises.
pub fn compile_step<M, O, F>(model: &M, optimizer: &mut O, loss: F) -> Result<TrainStep<M, O>>
where
    M: Module + Clone + 'static,
    O: Optimizer + Clone + 'static,
    F: Fn(&M, &[Array]) -> Result<Array> + Send + Sync + 'static,
{
    optimizer.init(&model.trainable_parameters())?;
    let trainable = trainable_names(model);
    let buffers = buffer_names(model);
    let state = optimizer.state();
    let n_all = model.named_parameters().len();
    let n_state = state.leaves().len();
    let (template, opt_template, state_template) =
        (model.clone(), optimizer.clone(), state.clone());
    let (names, buffer_list) = (trainable.clone(), buffers.clone());
    let f = Arc::new(loss);
    let compiled = ferrox::compile(move |xs: &[Array]| {
        if xs.len() < n_all + n_state {
            return Err(value(
                "TrainStep",
                format!(
                    "{} inputs for {} parameters and state arrays",
                    xs.len(),
                    n_all + n_state
                ),
            ));
        }
        let m = template.with_parameter_values(&xs[..n_all])?;
        let mut o = opt_template.clone();
        o.set_state(&state_template.with_leaves(xs[n_all..n_all + n_state].to_vec())?)?;
        let g = value_and_grad_of(&f, &m, &xs[n_all + n_state..])?;
        let params = Params::from_named(m.named_trainable_parameters())?;
        let new = o.apply_gradients(&g.grads, &params)?.to_map();
        let mut outs = vec![g.loss];
        for n in &names {
            outs.push(
                new.get(n)
                    .cloned()
                    .ok_or_else(|| value("TrainStep", format!("no update for {n}")))?,
            );
        }
        for n in &buffer_list {
            outs.push(
                g.buffers
                    .get(n)
                    .cloned()
                    .ok_or_else(|| value("TrainStep", format!("no buffer {n}")))?,
            );
        }
        outs.extend(o.state().leaves());
        Ok(outs)
    });
    Ok(TrainStep {
        compiled,
        trainable,
        buffers,
        state,
        _types: PhantomData,
    })
}

impl<M: Module, O: Optimizer> TrainStep<M, O> {
    /// Runs one step on `inputs`: updates `model` and `optimizer` and
    /// returns the loss.
    pub fn step(&self, model: &mut M, optimizer: &mut O, inputs: &[Array]) -> Result<Array> {
        if trainable_names(model) != self.trainable {
            return Err(value(
                "TrainStep",
                "the model's trainable parameters changed since compile_step (freeze/unfreeze); compile a new step",
            ));
        }
        let mut args: Vec<Array> = model
            .named_parameters()
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        let state = optimizer.state().leaves();
        if state.len() != self.state.leaves().len() {
            return Err(value(
                "TrainStep",
                "the optimizer's state changed shape since compile_step",
            ));
        }
        args.extend(state);
        args.extend_from_slice(inputs);
        let mut outs = self.compiled.call(&args)?.into_iter();
        let loss = outs.next().ok_or_else(|| value("TrainStep", "no loss"))?;
        let mut updated: BTreeMap<String, Array> = BTreeMap::new();
        for n in self.trainable.iter().chain(&self.buffers) {
            let a = outs
                .next()
                .ok_or_else(|| value("TrainStep", format!("no output for {n}")))?;
            updated.insert(n.clone(), a);
        }
        model.update_named(&updated, true)?;
        optimizer.set_state(&self.state.with_leaves(outs.collect())?)?;
        Ok(loss)
    }

    /// How many times the step was traced (1 after any number of steps
    /// with the same input shapes).
    pub fn traces(&self) -> usize {
        self.compiled.traces()
    }
}
