//! Gradients with respect to a module's trainable parameters.
//!
//! The loss function gets a *copy* of the model whose trainable parameters
//! are the transform's tracers; the caller's model is never touched while
//! the function runs, so other threads may keep using it. Buffers that
//! the forward pass replaced (a [`BatchNorm`](crate::layers::BatchNorm)'s
//! running statistics in training mode) come back as auxiliary outputs
//! and are written into the caller's model afterwards.

use crate::error::{Result, value};
use crate::module::Module;
use crate::params::Params;
use ferrox::Array;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What one differentiated call returns.
pub struct Grads {
    /// The loss (first output of the function).
    pub loss: Array,
    /// The gradient tree, shaped like the trainable parameters.
    pub grads: Params,
    /// The buffers after the forward pass, by dotted name.
    pub buffers: BTreeMap<String, Array>,
}

/// The dotted names of `model`'s buffers, in walk order.
pub(crate) fn buffer_names<M: Module + ?Sized>(model: &M) -> Vec<String> {
    let mut out = Vec::new();
    model.for_each_param(&mut |n, p| {
        if p.is_buffer() {
            out.push(n.to_string())
        }
    });
    out
}

/// The buffers' arrays, in walk order.
pub(crate) fn buffer_values<M: Module + ?Sized>(model: &M) -> Vec<Array> {
    let mut out = Vec::new();
    model.for_each_param(&mut |_, p| {
        if p.is_buffer() {
            out.push(p.value().clone())
        }
    });
    out
}

/// The loss of `f(model, inputs)`, its gradient with respect to the
/// model's trainable parameters and the buffers after the call, without
/// changing `model` (the building block of [`value_and_grad`] and of the
/// compiled training step).
///
/// ```
/// use ferrox::{Array, DType};
/// use ferrox_nn::{Forward, layers::Linear, grad::value_and_grad_of};
/// let l = Linear::new(2, 1, false)?;
/// let x = ferrox::ones(&[1, 2], DType::Float32)?;
/// let f = std::sync::Arc::new(|m: &Linear, xs: &[Array]| ferrox::sum(&m.forward(&xs[0])?, None, false));
/// let g = value_and_grad_of(&f, &l, &[x])?;
/// assert_eq!(g.grads.get("weight").unwrap().to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn value_and_grad_of<M, F>(f: &Arc<F>, model: &M, inputs: &[Array]) -> Result<Grads>
where
    M: Module + Clone + 'static,
    F: Fn(&M, &[Array]) -> Result<Array> + Send + Sync + 'static + ?Sized,
{
    let named = model.named_trainable_parameters();
    let n = named.len();
    if n == 0 {
        return Err(value(
            "value_and_grad",
            "the module has no trainable parameters (all are frozen)",
        ));
    }
    let names: Vec<String> = named.iter().map(|(k, _)| k.clone()).collect();
    let mut args: Vec<Array> = named.into_iter().map(|(_, a)| a).collect();
    args.extend_from_slice(inputs);
    let (template, f) = (model.clone(), f.clone());
    let flat = move |xs: &[Array]| {
        let m = template.with_trainable(&xs[..n])?;
        let loss = f(&m, &xs[n..])?;
        let mut outs = vec![loss];
        outs.extend(buffer_values(&m));
        Ok(outs)
    };
    let argnums: Vec<usize> = (0..n).collect();
    let (mut outs, grads) = ferrox::value_and_grad(flat, &argnums)(&args)?;
    let buffers = outs.split_off(1);
    let loss = outs
        .pop()
        .ok_or_else(|| value("value_and_grad", "no loss"))?;
    Ok(Grads {
        loss,
        grads: Params::from_named(names.into_iter().zip(grads))?,
        buffers: buffer_names(model).into_iter().zip(buffers).collect(),
    })
}

/// MLX's `nn.value_and_grad`: a function of the model and the inputs that
/// returns `f(model, inputs)` (a scalar loss) and its gradient with
/// respect to the model's trainable parameters, as a tree shaped like
/// [`Module::trainable_parameters`]. Buffers the forward pass updated are
/// written back into the model (hence `&mut`); parameters are not changed.
///
/// ```
/// use ferrox::{Array, DType};
/// use ferrox_nn::{Forward, layers::Linear};
/// let mut l = Linear::new(3, 1, true)?;
/// let vg = ferrox_nn::value_and_grad(|m: &Linear, xs: &[Array]| {
///     ferrox::sum(&m.forward(&xs[0])?, None, false)
/// });
/// let x = ferrox::ones(&[4, 3], DType::Float32)?;
/// let (_loss, grads) = vg(&mut l, &[x])?;
/// assert_eq!(grads.get("weight").unwrap().to_vec::<f32>()?, vec![4.0; 3]);
/// assert_eq!(grads.get("bias").unwrap().to_vec::<f32>()?, vec![4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn value_and_grad<M, F>(
    f: F,
) -> impl Fn(&mut M, &[Array]) -> Result<(Array, Params)> + Clone + Send + Sync + 'static
where
    M: Module + Clone + 'static,
    F: Fn(&M, &[Array]) -> Result<Array> + Send + Sync + 'static,
{
    let f = Arc::new(f);
    move |model: &mut M, inputs: &[Array]| {
        let g = value_and_grad_of(&f, model, inputs)?;
        model.update_named(&g.buffers, false)?;
        Ok((g.loss, g.grads))
    }
}
