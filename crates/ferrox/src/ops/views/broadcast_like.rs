//! `broadcast_like`: a broadcast whose target shape is another array's.
//!
//! [`super::broadcast_to`] records its target shape in the op, so a
//! shapeless compiled replay on other sizes keeps the traced shape (MLX's
//! rule: a user's explicit `broadcast_to(x, shape)` then fails on shapes
//! that no longer fit). Transforms need the other kind: the cotangent of a
//! reduction is broadcast back to *its input's* shape, whatever that shape
//! is on replay. [`BroadcastLike`] takes the template as a second input and
//! reads only its shape.

use super::{broadcast_strides, broadcasts_to, view_of};
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// `x` broadcast to the shape of `like` (a view; `like`'s values are not
/// read). In a shapeless compiled function the target follows `like`'s
/// shape on every replay.
///
/// ```
/// let g = ferrox::ones(&[1, 3], ferrox::DType::Float32)?;
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::ops::views::broadcast_like(&g, &x)?.shape(), &[2, 3]);
/// assert!(ferrox::ops::views::broadcast_like(&x, &g).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn broadcast_like(x: &Array, like: &Array) -> Result<Array> {
    if !broadcasts_to(x.shape(), like.shape()) {
        return Err(Error::shape(
            "broadcast_like",
            format!(
                "cannot broadcast array of shape {:?} to shape {:?}",
                x.shape(),
                like.shape()
            ),
        ));
    }
    if x.shape() == like.shape() {
        return Ok(x.clone());
    }
    Ok(Array::from_op(
        like.shape().to_vec(),
        x.dtype(),
        BroadcastLike,
        vec![x.clone(), like.clone()],
    ))
}

/// The primitive of [`broadcast_like`]: inputs `[x, like]`, output `x`
/// broadcast to `like`'s shape (stride 0 on new and size-1 axes).
///
/// ```
/// let g = ferrox::ones(&[3], ferrox::DType::Float32)?;
/// let x = ferrox::zeros(&[2, 3], ferrox::DType::Float32)?;
/// let b = ferrox::ops::views::broadcast_like(&g, &x)?;
/// assert_eq!(b.primitive().unwrap().name(), "broadcast_like");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BroadcastLike;

impl crate::graph::export::Exportable for BroadcastLike {
    const KIND: &'static str = "broadcast_like";
    fn rebuild(&self, inputs: &[Array]) -> Result<Array> {
        let [x, like] = crate::graph::export::args(inputs, "broadcast_like")?;
        broadcast_like(x, like)
    }
}

impl Primitive for BroadcastLike {
    fn name(&self) -> &'static str {
        "broadcast_like"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let strides = broadcast_strides(x, out.shape.len());
        view_of("broadcast_like", x, strides, x.data.offset as isize, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x, like] = input_shapes else { return None };
        Some(if broadcasts_to(x, like) {
            Ok(like.to_vec())
        } else {
            Err(Error::shape(
                "broadcast_like",
                format!("cannot broadcast shape {x:?} to {like:?}"),
            ))
        })
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        argnums
            .iter()
            .map(|&i| match i {
                0 => grad_helpers::unbroadcast(g, p[0].shape()),
                // Only `like`'s shape is read: its values get no cotangent.
                _ => crate::ops::creation::zeros_like(&p[1]),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match &tangents[0] {
            Some(t) => broadcast_like(t, &p[1]),
            None => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (x, like) = (&inputs[0], &inputs[1]);
        match (axes[0], axes[1]) {
            (None, None) => Ok((broadcast_like(x, like)?, None)),
            (ax, Some(like_ax)) => {
                let like = grad_helpers::batch_front(like, Some(like_ax))?;
                let x = match ax {
                    Some(ax) => {
                        let x = grad_helpers::batch_front(x, Some(ax))?;
                        grad_helpers::pad_example_rank(&x, like.ndim() - 1)?
                    }
                    None => x.clone(),
                };
                Ok((broadcast_like(&x, &like)?, Some(0)))
            }
            (Some(ax), None) => {
                let x = grad_helpers::batch_front(x, Some(ax))?;
                let x = grad_helpers::pad_example_rank(&x, like.ndim())?;
                let mut shape = vec![x.shape()[0]];
                shape.extend_from_slice(like.shape());
                Ok((super::broadcast_to(&x, &shape)?, Some(0)))
            }
        }
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::compile::compile_shapeless;
    use crate::ops::creation::ones;

    #[test]
    fn a_shapeless_replay_follows_the_template() -> Result<()> {
        let f = compile_shapeless(|xs: &[Array]| {
            let g = ones(&[1], DType::Float32)?;
            Ok(vec![broadcast_like(&g, &xs[0])?])
        });
        let a = f.call(&[ones(&[2, 3], DType::Float32)?])?;
        assert_eq!(a[0].shape(), &[2, 3]);
        let b = f.call(&[ones(&[4, 5], DType::Float32)?])?;
        assert_eq!(b[0].shape(), &[4, 5]);
        assert_eq!(b[0].to_vec::<f32>()?, vec![1.0; 20]);
        Ok(())
    }

    #[test]
    fn vmap_batches_either_input() -> Result<()> {
        use crate::transforms::vmap::vmap;
        let x = crate::ops::creation::arange(0.0, 3.0, 1.0, DType::Float32)?;
        let like = ones(&[3, 2, 4], DType::Float32)?;
        // x batched (3 examples of shape ()), like unbatched: [3, 2, 4].
        let f = vmap(
            |a: &[Array]| Ok(vec![broadcast_like(&a[0], &a[1])?]),
            &[Some(0), None],
            &[Some(0)],
        );
        let y = f(&[x.clone(), like.clone()])?;
        assert_eq!(y[0].shape(), &[3, 3, 2, 4]);
        Ok(())
    }
}
