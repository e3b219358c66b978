//! `depends`: the inputs again, but evaluated only after some other arrays
//! (an explicit ordering edge in the graph, e.g. to make a side effect
//! happen before a read). One primitive with one output per input; each
//! output shares its input's buffer.

use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// `inputs`, unchanged, as arrays that depend on `dependencies`: evaluating
/// an output evaluates every dependency first. Gradients flow to `inputs`
/// only.
///
/// ```
/// use ferrox::{depends, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let side = ferrox::exp(&x)?;
/// let y = depends(&[x.clone()], &[side])?;
/// assert_eq!(y[0].to_vec::<f32>()?, vec![1.0, 2.0]);
/// assert!(depends(&[], &[x]).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn depends(inputs: &[Array], dependencies: &[Array]) -> Result<Vec<Array>> {
    if inputs.is_empty() {
        return Err(Error::value("depends", "needs at least one input"));
    }
    let specs = inputs
        .iter()
        .map(|a| (a.shape().to_vec(), a.dtype()))
        .collect();
    let all: Vec<Array> = inputs.iter().chain(dependencies).cloned().collect();
    Ok(Array::from_op_multi(
        specs,
        Depends {
            inputs: inputs.len(),
        },
        all,
    ))
}

/// The primitive of [`depends`]: inputs `inputs..., dependencies...`, one
/// output per leading input.
///
/// ```
/// let x = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// let y = ferrox::depends(&[x.clone()], &[x])?;
/// assert_eq!(y[0].inputs()[0].primitive().unwrap().name(), "depends");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Depends {
    /// How many leading inputs are passed through.
    pub inputs: usize,
}

impl Primitive for Depends {
    fn name(&self) -> &'static str {
        "depends"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        if outs.len() != self.inputs || inputs.len() < self.inputs {
            return Err(Error::runtime(
                self.name(),
                format!(
                    "internal error: {} inputs and {} outputs",
                    inputs.len(),
                    outs.len()
                ),
            ));
        }
        Ok(inputs[..self.inputs]
            .iter()
            .map(|x| x.data.clone())
            .collect())
    }
    fn vjp_multi(
        &self,
        primals: &[Array],
        cotangents: &[Option<Array>],
        _outputs: &[Array],
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match cotangents.get(i).cloned().flatten() {
                Some(g) if i < self.inputs => Ok(g),
                _ => crate::ops::creation::zeros_like(&primals[i]),
            })
            .collect()
    }
    fn jvp_multi(
        &self,
        _primals: &[Array],
        tangents: &[Option<Array>],
        outputs: &[Array],
    ) -> Result<Vec<Array>> {
        outputs
            .iter()
            .enumerate()
            .map(|(i, o)| match tangents.get(i).cloned().flatten() {
                Some(t) => Ok(t),
                None => crate::ops::creation::zeros_like(o),
            })
            .collect()
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        let (ins, deps) = inputs.split_at(self.inputs);
        let outs = depends(ins, deps)?;
        Ok(outs.into_iter().zip(axes.iter().copied()).collect())
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        Some(Ok(input_shapes[..self.inputs.min(input_shapes.len())]
            .iter()
            .map(|s| s.to_vec())
            .collect()))
    }
    crate::primitive_common!();
}
