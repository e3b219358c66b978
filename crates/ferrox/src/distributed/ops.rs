//! The collectives as lazy ops: builders, primitives and their rules.
//!
//! Each builder checks its arguments and builds a node; the communication
//! happens when the node is evaluated, on the evaluating thread (a
//! collective's `eval_cpu` waits for its peers: it holds no lock any other
//! evaluation needs, only its group's busy flag). On a group of size 1
//! `all_sum`, `all_max`, `all_min`, `all_gather` and `sum_scatter` return
//! their input unchanged, so single-process code runs as it is.
//!
//! Derivative rules follow MLX: the vjp of an all-reduce is the identity
//! (each rank differentiates its own copy of the reduced value; averaging
//! gradients is an explicit `all_sum`), its jvp and vmap the same
//! all-reduce; the vjp of `all_gather` is this rank's block of the
//! cotangent, that of `sum_scatter` the gathered cotangent.
//! `send` batches; `recv` has no inputs to differentiate.

use super::group::{Comm, Group, resolve};
use crate::backend::cpu::copy::ensure_contiguous;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::views::{moveaxis, slice, squeeze};

/// The reduction of an all-reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Elementwise sum (logical "or" for bool).
    Sum,
    /// Elementwise maximum.
    Max,
    /// Elementwise minimum.
    Min,
}

/// An input's elements, contiguous in row-major order (a copy only when
/// the input is a strided view).
pub(super) fn contiguous_input(x: &Operand<'_>) -> Result<Data> {
    ensure_contiguous(x)
}

fn one_input<'a, 'b>(name: &str, inputs: &'a [Operand<'b>]) -> Result<&'a Operand<'b>> {
    match inputs {
        [x] => Ok(x),
        _ => Err(Error::runtime(
            name,
            format!("expected 1 input, got {}", inputs.len()),
        )),
    }
}

// ---------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------

fn all_reduce(x: &Array, op: ReduceOp, group: Option<&Group>) -> Result<Array> {
    let group = resolve(group)?;
    if group.size() == 1 {
        return Ok(x.clone());
    }
    Ok(Array::from_op(
        x.shape().to_vec(),
        x.dtype(),
        AllReduce { op, group },
        vec![x.clone()],
    ))
}

/// The elementwise sum of `x` over every process of `group` (the job's
/// group when `None`); every process gets the result. Bool sums are a
/// logical "or".
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// let y = distributed::all_sum(&x, None)?; // a job of one: y is x
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn all_sum(x: &Array, group: Option<&Group>) -> Result<Array> {
    all_reduce(x, ReduceOp::Sum, group)
}

/// The elementwise maximum of `x` over every process of `group`.
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[3i32, -1], &[2])?;
/// assert_eq!(distributed::all_max(&x, None)?.to_vec::<i32>()?, vec![3, -1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn all_max(x: &Array, group: Option<&Group>) -> Result<Array> {
    all_reduce(x, ReduceOp::Max, group)
}

/// The elementwise minimum of `x` over every process of `group`.
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[3i32, -1], &[2])?;
/// assert_eq!(distributed::all_min(&x, None)?.to_vec::<i32>()?, vec![3, -1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn all_min(x: &Array, group: Option<&Group>) -> Result<Array> {
    all_reduce(x, ReduceOp::Min, group)
}

/// The shape of `all_gather` over `size` processes: the first axis times
/// `size` (a scalar becomes a vector of `size`).
fn gathered_shape(shape: &[usize], size: usize) -> Vec<usize> {
    match shape.split_first() {
        None => vec![size],
        Some((&d, rest)) => std::iter::once(d * size)
            .chain(rest.iter().copied())
            .collect(),
    }
}

/// Every process's `x`, concatenated along the first axis in rank order
/// (scalars are stacked into a vector). Every process must pass the same
/// shape.
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[1u8, 2, 3, 4], &[2, 2])?;
/// assert_eq!(distributed::all_gather(&x, None)?.shape(), &[2, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn all_gather(x: &Array, group: Option<&Group>) -> Result<Array> {
    let group = resolve(group)?;
    if group.size() == 1 {
        return Ok(x.clone());
    }
    Ok(Array::from_op(
        gathered_shape(x.shape(), group.size()),
        x.dtype(),
        AllGather { group },
        vec![x.clone()],
    ))
}

fn scattered_shape(name: &str, shape: &[usize], size: usize) -> Result<Vec<usize>> {
    match shape.split_first() {
        Some((&d, rest)) if d % size == 0 => Ok(std::iter::once(d / size)
            .chain(rest.iter().copied())
            .collect()),
        _ => Err(Error::value(
            name,
            format!(
                "the first axis of an array of shape {shape:?} must be divisible by the group size {size}"
            ),
        )),
    }
}

/// The sum over processes of `x`, of which each process keeps its block:
/// rank `r` gets rows `r * n / size .. (r + 1) * n / size` of the sum
/// (`n`, the first axis, must be divisible by the group's size).
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
/// assert_eq!(distributed::sum_scatter(&x, None)?.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sum_scatter(x: &Array, group: Option<&Group>) -> Result<Array> {
    let group = resolve(group)?;
    if group.size() == 1 {
        return Ok(x.clone());
    }
    Ok(Array::from_op(
        scattered_shape("sum_scatter", x.shape(), group.size())?,
        x.dtype(),
        SumScatter { group },
        vec![x.clone()],
    ))
}

/// A peer's rank for `send`/`recv`: in the group and not this process.
fn peer(name: &str, what: &str, r: i64, group: &Group) -> Result<usize> {
    if group.size() == 1 {
        return Err(Error::value(
            name,
            "cannot communicate with a peer in a group of size 1",
        ));
    }
    match usize::try_from(r) {
        Ok(p) if p < group.size() && p != group.rank() => Ok(p),
        Ok(p) if p == group.rank() => Err(Error::value(
            name,
            format!("{what} {r} is this process's own rank"),
        )),
        _ => Err(Error::value(
            name,
            format!(
                "{what} {r} is not a rank of a group of size {}",
                group.size()
            ),
        )),
    }
}

/// Sends `x` to process `dst` of `group`. The result is `x` itself:
/// evaluate it (or something depending on it) to send. `dst` must receive
/// it with [`recv`] (same shape and dtype).
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[1.0f32], &[1])?;
/// let e = distributed::send(&x, 1, None).unwrap_err(); // a job of one has no peer
/// assert!(e.to_string().starts_with("send:"));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn send(x: &Array, dst: i64, group: Option<&Group>) -> Result<Array> {
    let group = resolve(group)?;
    let dst = peer("send", "dst", dst, &group)?;
    Ok(Array::from_op(
        x.shape().to_vec(),
        x.dtype(),
        SendTo { dst, group },
        vec![x.clone()],
    ))
}

/// An array of `shape` and `dtype` received from process `src` of `group`
/// (sent with [`send`]).
///
/// ```
/// use ferrox::{distributed, DType};
/// let e = distributed::recv(&[2], DType::Float32, 1, None).unwrap_err();
/// assert!(e.to_string().starts_with("recv:"));
/// ```
pub fn recv(shape: &[usize], dtype: DType, src: i64, group: Option<&Group>) -> Result<Array> {
    let group = resolve(group)?;
    let src = peer("recv", "src", src, &group)?;
    crate::graph::layout::checked_numel("recv", shape)?;
    Ok(Array::from_op(
        shape.to_vec(),
        dtype,
        RecvFrom { src, group },
        vec![],
    ))
}

/// [`recv`] with `x`'s shape and dtype.
///
/// ```
/// use ferrox::{distributed, Array};
/// let x = Array::from_slice(&[0i32; 3], &[3])?;
/// assert!(distributed::recv_like(&x, 1, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn recv_like(x: &Array, src: i64, group: Option<&Group>) -> Result<Array> {
    recv(x.shape(), x.dtype(), src, group)
}

// ---------------------------------------------------------------------------
// Primitives
// ---------------------------------------------------------------------------
//
// None of them is `is_equivalent` to another node: two sends of one array
// are two messages, and merging collectives would change what the peers
// must match.

/// An all-reduce over a group.
#[derive(Debug)]
pub struct AllReduce {
    /// The reduction.
    pub op: ReduceOp,
    /// The processes.
    pub group: Group,
}

impl Primitive for AllReduce {
    fn name(&self) -> &'static str {
        match self.op {
            ReduceOp::Sum => "all_sum",
            ReduceOp::Max => "all_max",
            ReduceOp::Min => "all_min",
        }
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x] = input_shapes else { return None };
        Some(Ok(x.to_vec()))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = one_input(self.name(), inputs)?;
        let _busy = self.group.enter(self.name())?;
        let _ = out;
        match self.group.comm() {
            Comm::Single => contiguous_input(x),
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => c.all_reduce(self.name(), self.op, x, out),
        }
    }
    fn vjp(
        &self,
        _primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        Ok(argnums.iter().map(|_| cotangent.clone()).collect())
    }
    fn jvp(&self, _primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match tangents.first() {
            Some(Some(t)) => all_reduce(t, self.op, Some(&self.group)),
            _ => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        Ok((all_reduce(&inputs[0], self.op, Some(&self.group))?, axes[0]))
    }
    fn waits_on_peers(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An all-gather over a group (concatenation along the first axis).
#[derive(Debug)]
pub struct AllGather {
    /// The processes.
    pub group: Group,
}

impl Primitive for AllGather {
    fn name(&self) -> &'static str {
        "all_gather"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x] = input_shapes else { return None };
        Some(Ok(gathered_shape(x, self.group.size())))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = one_input("all_gather", inputs)?;
        let _busy = self.group.enter("all_gather")?;
        let _ = out;
        match self.group.comm() {
            Comm::Single => contiguous_input(x),
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => c.all_gather(x, out),
        }
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let x = &primals[0];
        let rows = x.shape().first().copied().unwrap_or(1) as isize;
        let r = self.group.rank() as isize;
        let mut start = vec![0isize; cotangent.ndim()];
        let mut stop: Vec<isize> = cotangent.shape().iter().map(|&d| d as isize).collect();
        let steps = vec![1isize; cotangent.ndim()];
        start[0] = r * rows;
        stop[0] = (r + 1) * rows;
        let mut g = slice(cotangent, &start, &stop, &steps)?;
        if x.ndim() == 0 {
            g = squeeze(&g, Some(&[0]))?;
        }
        Ok(argnums.iter().map(|_| g.clone()).collect())
    }
    fn jvp(&self, _primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match tangents.first() {
            Some(Some(t)) => all_gather(t, Some(&self.group)),
            _ => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let x = &inputs[0];
        let Some(b) = axes[0] else {
            return Ok((all_gather(x, Some(&self.group))?, None));
        };
        // Gather along the examples' first axis, keeping the batch axis
        // out of the way at 1 (a batch of scalars gathers a new axis 0).
        let front = if x.ndim() == 1 {
            crate::ops::views::expand_dims(x, &[0])?
        } else {
            moveaxis(x, b as isize, 1)?
        };
        Ok((all_gather(&front, Some(&self.group))?, Some(1)))
    }
    fn waits_on_peers(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A reduce-scatter (sum) over a group.
#[derive(Debug)]
pub struct SumScatter {
    /// The processes.
    pub group: Group,
}

impl Primitive for SumScatter {
    fn name(&self) -> &'static str {
        "sum_scatter"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x] = input_shapes else { return None };
        Some(scattered_shape("sum_scatter", x, self.group.size()))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = one_input("sum_scatter", inputs)?;
        let _busy = self.group.enter("sum_scatter")?;
        let _ = out;
        match self.group.comm() {
            Comm::Single => contiguous_input(x),
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => c.sum_scatter(x, out),
        }
    }
    fn vjp(
        &self,
        _primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let g = all_gather(cotangent, Some(&self.group))?;
        Ok(argnums.iter().map(|_| g.clone()).collect())
    }
    fn jvp(&self, _primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        match tangents.first() {
            Some(Some(t)) => sum_scatter(t, Some(&self.group)),
            _ => crate::ops::creation::zeros_like(output),
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let x = &inputs[0];
        let Some(b) = axes[0] else {
            return Ok((sum_scatter(x, Some(&self.group))?, None));
        };
        if x.ndim() < 2 {
            return Err(Error::value(
                "sum_scatter",
                "vmap: each example needs at least one axis to scatter",
            ));
        }
        let moved = moveaxis(x, b as isize, 1)?;
        Ok((sum_scatter(&moved, Some(&self.group))?, Some(1)))
    }
    fn waits_on_peers(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A send to one process; the output is the input.
#[derive(Debug)]
pub struct SendTo {
    /// The receiving rank.
    pub dst: usize,
    /// The processes.
    pub group: Group,
}

impl Primitive for SendTo {
    fn name(&self) -> &'static str {
        "send"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x] = input_shapes else { return None };
        Some(Ok(x.to_vec()))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        let x = one_input("send", inputs)?;
        let _busy = self.group.enter("send")?;
        match self.group.comm() {
            Comm::Single => {
                let _ = x;
                Err(Error::value("send", "a group of size 1 has no peer"))
            }
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => {
                c.send(x, self.dst)?;
                Ok(x.data.clone())
            }
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let dst = self.dst as i64;
        Ok((send(&inputs[0], dst, Some(&self.group))?, axes[0]))
    }
    fn waits_on_peers(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A receive from one process.
#[derive(Debug)]
pub struct RecvFrom {
    /// The sending rank.
    pub src: usize,
    /// The processes.
    pub group: Group,
}

impl Primitive for RecvFrom {
    fn name(&self) -> &'static str {
        "recv"
    }
    fn output_shape(&self, _input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        None
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let _busy = self.group.enter("recv")?;
        let _ = out;
        match self.group.comm() {
            Comm::Single => Err(Error::value("recv", "a group of size 1 has no peer")),
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => c.recv(out, self.src),
        }
    }
    fn waits_on_peers(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    // The rules, on the primitives over a group of one (whose evaluation
    // copies); scripts/test-mpi.sh runs them across processes.
    use super::*;
    use crate::{jvp, vjp, vmap};
    use std::sync::Arc;

    fn node(p: impl Primitive, shape: &[usize], x: &Array) -> Array {
        Array::from_primitive(shape.to_vec(), x.dtype(), Arc::new(p), vec![x.clone()])
    }

    fn sum_node(x: &Array) -> Array {
        node(
            AllReduce {
                op: ReduceOp::Sum,
                group: Group::single(),
            },
            x.shape(),
            x,
        )
    }

    #[test]
    fn size_one_collectives_return_their_input() {
        let x = Array::from_slice(&[1.0f32, -2.0, 3.0, 4.0], &[2, 2]).unwrap();
        for f in [all_sum, all_max, all_min, all_gather, sum_scatter] {
            let y = f(&x, Some(&Group::single())).unwrap();
            assert_eq!(y.id(), x.id());
        }
    }

    #[test]
    fn every_dtype_evaluates_through_the_primitives() {
        for dtype in DType::ALL {
            let x = crate::ops::creation::arange(0.0, 4.0, 1.0, DType::Float32)
                .unwrap()
                .astype(dtype)
                .unwrap();
            let g = Group::single();
            for y in [
                sum_node(&x),
                node(AllGather { group: g.clone() }, &[4], &x),
                node(SumScatter { group: g.clone() }, &[4], &x),
            ] {
                let same = crate::ops::closeness::array_equal(&y, &x, false).unwrap();
                assert!(same.item::<bool>().unwrap(), "{dtype}");
            }
        }
    }

    #[test]
    fn a_strided_input_is_read_in_order() {
        let x = Array::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let t = crate::ops::views::transpose(&x, None).unwrap();
        let y = node(
            AllGather {
                group: Group::single(),
            },
            &[3, 2],
            &t,
        );
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn vjp_of_all_sum_is_the_identity_as_in_mlx() {
        let x = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
        let f = |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![crate::ops::binary::multiply(&sum_node(&a[0]), &a[0])?])
        };
        let ct = Array::from_slice(&[1.0f32, 1.0], &[2]).unwrap();
        let (_, g) = vjp(f, std::slice::from_ref(&x), &[ct]).unwrap();
        // d/dx (s(x) * x) with ds = identity: x + s(x) = 2x.
        assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    }

    #[test]
    fn jvp_and_vmap_of_the_collectives() {
        let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let t = Array::from_slice(&[1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
        let g = Group::single();
        let (_, tan) = jvp(
            |a: &[Array]| Ok(vec![sum_node(&a[0])]),
            std::slice::from_ref(&x),
            std::slice::from_ref(&t),
        )
        .unwrap();
        assert_eq!(tan[0].to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap());
        let gather = {
            let g = g.clone();
            move |a: &[Array]| {
                let shape = gathered_shape(a[0].shape(), 1);
                Ok(vec![node(AllGather { group: g.clone() }, &shape, &a[0])])
            }
        };
        let out = vmap(gather, &[Some(0)], &[Some(0)])(std::slice::from_ref(&x)).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
        let (_, gx) = vjp(
            move |a: &[Array]| Ok(vec![node(AllGather { group: g.clone() }, &[2, 2], &a[0])]),
            std::slice::from_ref(&x),
            std::slice::from_ref(&t),
        )
        .unwrap();
        assert_eq!(gx[0].to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap());
    }

    #[test]
    fn bad_arguments_are_errors_naming_the_op() {
        let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert!(
            send(&x, 0, Some(&Group::single()))
                .unwrap_err()
                .to_string()
                .starts_with("send:")
        );
        assert!(
            recv(&[2], DType::Int8, -1, None)
                .unwrap_err()
                .to_string()
                .starts_with("recv:")
        );
        let e = scattered_shape("sum_scatter", &[3], 2).unwrap_err();
        assert!(e.to_string().contains("[3]"), "{e}");
        assert!(scattered_shape("sum_scatter", &[], 2).is_err());
        assert_eq!(gathered_shape(&[], 4), vec![4]);
        assert_eq!(gathered_shape(&[2, 3], 4), vec![8, 3]);
    }

    #[test]
    fn compiled_function_with_all_sum() {
        let f = crate::compile::compile(|a: &[Array]| {
            Ok(vec![crate::ops::binary::multiply(
                &all_sum(&a[0], None)?,
                &a[0],
            )?])
        });
        let x = Array::from_slice(&[1.0f32, 3.0], &[2]).unwrap();
        assert_eq!(
            f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap(),
            vec![1.0, 9.0]
        );
    }
}
