//! `searchsorted`: insertion points of values in a sorted 1-D sequence, by
//! binary search (kernel in [`crate::backend::cpu::search`]). The order is
//! the sorts' (NaN last); results are uint32, as in MLX.

use crate::backend::cpu::search as kernels;
pub use crate::backend::cpu::search::Side;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// The indices that keep `sorted` (1-D, ascending) sorted if each of
/// `values` (any shape) were inserted before them: the count of smaller
/// elements (`Side::Left`) or of smaller-or-equal ones (`Side::Right`).
/// The operands promote to a common dtype; the result is uint32 with
/// `values`' shape. `sorted` is not checked to be sorted (a binary search
/// of an unsorted row gives some insertion point, as numpy).
///
/// ```
/// use ferrox::{searchsorted, Array, Side};
/// let s = Array::from_slice(&[1i32, 2, 2, 3], &[4])?;
/// let v = Array::from_slice(&[2i32, 5, 0], &[3])?;
/// assert_eq!(searchsorted(&s, &v, Side::Left)?.to_vec::<u32>()?, vec![1, 4, 0]);
/// assert_eq!(searchsorted(&s, &v, Side::Right)?.to_vec::<u32>()?, vec![3, 4, 0]);
/// assert!(searchsorted(&v.reshape(&[1, 3])?, &v, Side::Left).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn searchsorted(sorted: &Array, values: &Array, side: Side) -> Result<Array> {
    if sorted.ndim() != 1 {
        return Err(Error::value(
            "searchsorted",
            format!(
                "the sorted sequence must be 1-D, got shape {:?}",
                sorted.shape()
            ),
        ));
    }
    if sorted.size() as u64 > u32::MAX as u64 {
        return Err(Error::value(
            "searchsorted",
            format!(
                "a sequence of {} elements exceeds uint32 indices",
                sorted.size()
            ),
        ));
    }
    let d = DType::promote(sorted.dtype(), values.dtype());
    Ok(Array::from_op(
        values.shape().to_vec(),
        DType::UInt32,
        SearchSorted { side },
        vec![sorted.astype(d)?, values.astype(d)?],
    ))
}

/// The primitive of [`searchsorted`]; inputs `sorted, values`, already of
/// one dtype.
///
/// ```
/// let s = ferrox::arange(0.0, 4.0, 1.0, ferrox::DType::Float32)?;
/// let i = ferrox::searchsorted(&s, &s, ferrox::Side::Left)?;
/// assert_eq!(i.primitive().unwrap().name(), "searchsorted");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchSorted {
    /// Where equal elements put the insertion point.
    pub side: Side,
}

impl crate::graph::export::Exportable for SearchSorted {
    const KIND: &'static str = "searchsorted";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [a, v] = crate::graph::export::args(inputs, "searchsorted")?;
        searchsorted(a, v, self.side)
    }
}

impl Primitive for SearchSorted {
    fn name(&self) -> &'static str {
        "searchsorted"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [sorted, values] = inputs else {
            return Err(Error::runtime(
                self.name(),
                format!("expected 2 inputs, got {}", inputs.len()),
            ));
        };
        kernels::eval(sorted, values, self.side, out)
    }
    /// Integer indices: no gradient flows to either input.
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        grad_helpers::zero_cotangents(p, argnums)
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::ops::creation::zeros_like(output)
    }
    /// Batched values search the one sequence; a batched sequence searches
    /// each of its rows, one search per batch entry.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match (axes[0], axes[1]) {
            (None, ax) => Ok((searchsorted(&inputs[0], &inputs[1], self.side)?, ax)),
            (Some(sa), va) => {
                let seqs = grad_helpers::batch_front(&inputs[0], Some(sa))?;
                let b = seqs.shape()[0];
                let vals = match va {
                    Some(va) => grad_helpers::batch_front(&inputs[1], Some(va))?,
                    None => {
                        let mut shape = vec![b];
                        shape.extend_from_slice(inputs[1].shape());
                        crate::ops::views::broadcast_to(
                            &crate::ops::views::expand_dims(&inputs[1], &[0])?,
                            &shape,
                        )?
                    }
                };
                let rows = (0..b)
                    .map(|i| {
                        let pick = Array::from(i as i32);
                        let seq = crate::ops::indexing::take(&seqs, &pick, Some(0))?;
                        let v = crate::ops::indexing::take(&vals, &pick, Some(0))?;
                        searchsorted(&seq, &v, self.side)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok((crate::ops::join::stack(&rows, 0)?, Some(0)))
            }
        }
    }
    crate::primitive_common!();
}
