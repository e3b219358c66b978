//! The [`Primitive`] trait: what a graph node computes, and the kernel
//! interface ([`Operand`] in, [`OutSpec`] out) every backend kernel sees.
//!
//! It lives in the graph layer because a node holds its primitive; the op
//! families in [`crate::ops`] implement it, the runtime calls `eval_cpu`,
//! and the transforms call the rules.

use super::array::Array;
use super::layout::Data;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use std::any::Any;
use std::fmt;

/// An evaluated input of a primitive: its data, shape and dtype.
#[derive(Clone, Copy)]
pub struct Operand<'a> {
    /// The evaluated bytes and layout.
    pub data: &'a Data,
    /// The input's shape.
    pub shape: &'a [usize],
    /// The input's dtype.
    pub dtype: DType,
}

/// The output a primitive must produce.
#[derive(Clone, Copy)]
pub struct OutSpec<'a> {
    /// The output shape, inferred when the node was built.
    pub shape: &'a [usize],
    /// The output dtype.
    pub dtype: DType,
}

/// A graph operation.
///
/// Implementations are immutable values (parameters only), shared by every
/// node that uses them, so they are `Send + Sync`. `eval_cpu` must not panic
/// on any input that passed the op's validation, and must not block.
///
/// ```
/// let y = ferrox::exp(&ferrox::ones(&[2], ferrox::DType::Float32)?)?;
/// assert_eq!(y.primitive().unwrap().name(), "exp");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub trait Primitive: Send + Sync + fmt::Debug + 'static {
    /// The op's name, as used in error messages.
    fn name(&self) -> &'static str;
    /// Computes the output from evaluated inputs.
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data>;
    /// For downcasting in graph passes.
    fn as_any(&self) -> &dyn Any;
    /// True if `other` computes the same function of the same inputs (same
    /// type and parameters); used by common-subexpression elimination.
    fn is_equivalent(&self, _other: &dyn Primitive) -> bool {
        false
    }

    /// Reverse-mode rule. `primals` are the node's inputs, `cotangent` has
    /// the output's shape, `output` is the node itself (reuse its value, e.g.
    /// for `exp`). Returns one cotangent per entry of `argnums` (indices
    /// into `primals`), each with that primal's shape and dtype.
    fn vjp(
        &self,
        _primals: &[Array],
        _cotangent: &Array,
        _output: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Err(no_rule(self.name(), "vjp"))
    }

    /// Forward-mode rule: the output's tangent given the inputs' tangents
    /// (`None` for inputs that do not depend on the differentiated
    /// arguments; at least one is `Some`).
    fn jvp(
        &self,
        _primals: &[Array],
        _tangents: &[Option<Array>],
        _output: &Array,
    ) -> Result<Array> {
        Err(no_rule(self.name(), "jvp"))
    }

    /// Batching rule: `inputs` carry a batch dimension at `axes[i]` (`None`:
    /// not batched). Returns the batched output and where its batch axis is
    /// (`None` if the output is not batched).
    fn vmap(&self, _inputs: &[Array], _axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Err(no_rule(self.name(), "vmap"))
    }

    /// True if evaluating the op waits for other processes (a collective,
    /// a send or a receive of [`crate::distributed`]): such a node takes as
    /// long as its slowest peer, so it is never "small work" (see
    /// [`crate::runtime::eval::pending_work`]: a binding must not hold its
    /// interpreter lock across it).
    ///
    /// ```
    /// let y = ferrox::exp(&ferrox::ones(&[2], ferrox::DType::Float32)?)?;
    /// assert!(!y.primitive().unwrap().waits_on_peers());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    fn waits_on_peers(&self) -> bool {
        false
    }

    /// True if output element `i` depends only on element `i` of each
    /// (broadcast) input, so that `eval_cpu` computes any chunk of the
    /// output from the matching chunks of its inputs: what `compile` fuses
    /// into one pass. An elementwise op must also answer
    /// [`output_shape`](Self::output_shape) (the fused engine asks it for
    /// every step).
    fn is_elementwise(&self) -> bool {
        false
    }

    /// The output shape for inputs of other shapes than the ones the node
    /// was built with (same ranks): what a shapeless compiled function
    /// needs to replay its trace. `None` when the op cannot say.
    fn output_shape(&self, _input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        None
    }

    // Ops with several outputs (built with `Array::from_primitive_multi`,
    // see `crate::graph::outputs`) implement the methods below instead of
    // their single-output counterparts, which the runtime and the
    // transforms then never call (`eval_cpu` may return
    // `graph::outputs::not_single`). An op with one output never sees them.

    /// Computes every output (one spec per output, in order) from evaluated
    /// inputs: one buffer per output.
    fn eval_cpu_multi(&self, _inputs: &[Operand<'_>], _outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        Err(no_rule(self.name(), "several-output evaluation"))
    }

    /// True if [`eval_cpu_donating`](Self::eval_cpu_donating) can write
    /// an output over an input's buffer: the runtime then checks which
    /// inputs no one else holds before the call.
    fn accepts_donations(&self) -> bool {
        false
    }

    /// Computes every output (one spec per output; one for an op with a
    /// single output) as [`eval_cpu`](Self::eval_cpu) or
    /// [`eval_cpu_multi`](Self::eval_cpu_multi) would, where `donated[i]`
    /// says that input `i`'s buffer belongs to this call alone: no other
    /// array, view or handle can reach it, it is a pooled buffer holding
    /// exactly the input's elements, contiguous from its start. The op may
    /// write an output of the same dtype and shape into such a buffer (as
    /// XLA does with donated arguments) once nothing reads the elements it
    /// overwrites, and return a `Data` sharing that storage. The result
    /// must equal the one without donations, bit for bit. Called only when
    /// [`accepts_donations`](Self::accepts_donations) says so.
    fn eval_cpu_donating(
        &self,
        inputs: &[Operand<'_>],
        outs: &[OutSpec<'_>],
        donated: &[bool],
    ) -> Result<Vec<Data>> {
        let _ = donated;
        match outs {
            [out] => self.eval_cpu(inputs, *out).map(|d| vec![d]),
            _ => self.eval_cpu_multi(inputs, outs),
        }
    }

    /// Reverse-mode rule of an op with several outputs: `cotangents` has one
    /// entry per output, `None` for outputs nothing downstream
    /// differentiates (treat as zeros); `outputs` are the op's outputs.
    /// Returns one cotangent per entry of `argnums`, as [`vjp`](Self::vjp).
    fn vjp_multi(
        &self,
        _primals: &[Array],
        _cotangents: &[Option<Array>],
        _outputs: &[Array],
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Err(no_rule(self.name(), "vjp"))
    }

    /// Forward-mode rule of an op with several outputs: one tangent per
    /// output, as [`jvp`](Self::jvp).
    fn jvp_multi(
        &self,
        _primals: &[Array],
        _tangents: &[Option<Array>],
        _outputs: &[Array],
    ) -> Result<Vec<Array>> {
        Err(no_rule(self.name(), "jvp"))
    }

    /// Batching rule of an op with several outputs: each batched output
    /// and where its batch axis is, as [`vmap`](Self::vmap).
    fn vmap_multi(
        &self,
        _inputs: &[Array],
        _axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        Err(no_rule(self.name(), "vmap"))
    }

    /// Every output's shape for inputs of other shapes, as
    /// [`output_shape`](Self::output_shape).
    fn output_shapes(&self, _input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        None
    }
}

/// The error for an op without a rule for a transform.
///
/// ```
/// let e = ferrox::graph::primitive::no_rule("sort", "jvp");
/// assert_eq!(e.to_string(), "sort: no jvp rule");
/// ```
pub fn no_rule(op: &str, transform: &str) -> Error {
    Error::new(ErrorKind::Unsupported, op, format!("no {transform} rule"))
}

/// Implements `as_any` and an `is_equivalent` based on `PartialEq`.
#[macro_export]
#[doc(hidden)]
macro_rules! primitive_common {
    () => {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn is_equivalent(&self, other: &dyn $crate::graph::primitive::Primitive) -> bool {
            other
                .as_any()
                .downcast_ref::<Self>()
                .is_some_and(|o| o == self)
        }
    };
}
