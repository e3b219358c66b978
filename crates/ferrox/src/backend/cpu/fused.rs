//! The fused chunk engine: a chain of elementwise instructions run
//! chunk by chunk, so that intermediates live in cache-sized buffers and
//! never reach memory.
//!
//! A program has one output or several (values that other instructions or
//! the caller also read). Several outputs share one shape, not necessarily
//! one dtype: they are written side by side into one byte buffer, one row
//! per output, each row starting on a cache line (see [`packed_layout`]);
//! [`FusedOutput`] nodes are zero-copy typed views of those rows. Every
//! output is written from the chunk that computed it, so intermediates that
//! are also results still cost one pass over memory.
//!
//! Each step is an ordinary elementwise primitive (unary, binary, `where`,
//! `astype`) evaluated by its own kernel on a chunk of the output, so a
//! fused result is bitwise equal to the unfused one: the same kernels apply
//! the same operations, in the same order, to the same elements.
//!
//! Chunking: when every input is either a full-shape contiguous array or a
//! single element, the output is split into flat runs of `CHUNK`
//! elements; otherwise it is split along axis 0 into blocks of whole rows
//! (inputs that broadcast along axis 0 are shared by every block). Chunks
//! are spread over cores for large outputs. If a step's shape is not the
//! output's (possible for shapeless replays at new shapes), the steps run
//! one after another on whole arrays instead.

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::worth_splitting;
use crate::backend::cpu::stream_store::{store_fence, stream_copy, worth_streaming};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::storage::ALIGN;
use rayon::prelude::*;
use std::any::Any;
use std::sync::Arc;

/// Output elements per chunk: with a handful of intermediates the working
/// set stays within a core's L2 cache.
pub(crate) const CHUNK: usize = 8192;

/// Where a step reads an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reg {
    /// The fused node's i-th input.
    Input(usize),
    /// The result of step k.
    Step(usize),
    /// The program's k-th embedded constant.
    Const(usize),
}

/// A single-element array the traced function captured, already evaluated
/// when the program was fused. Embedding it (instead of making it a node
/// input) means a replay never touches the shared constant's handle or
/// cell: threads replaying one program write no common cache line for it.
#[derive(Debug, Clone)]
pub(crate) struct FusedConst {
    /// The value with its traced shape (for whole-array runs).
    pub(crate) full: Data,
    pub(crate) shape: Vec<usize>,
    /// The same element as a rank-0 view (for flat chunks).
    pub(crate) scalar: Data,
    pub(crate) dtype: DType,
}

impl FusedConst {
    /// Embeds `data` (one element of `dtype`, shaped `shape`).
    pub(crate) fn new(data: &Data, shape: &[usize], dtype: DType) -> FusedConst {
        FusedConst {
            full: data.clone(),
            shape: shape.to_vec(),
            scalar: Data {
                storage: data.storage.clone(),
                strides: vec![],
                offset: data.offset,
            },
            dtype,
        }
    }

    /// The element's bytes (for equivalence).
    fn bytes(&self) -> &[u8] {
        let size = self.dtype.size();
        let start = self.scalar.offset * size;
        self.scalar
            .storage
            .as_slice::<u8>()
            .get(start..start + size)
            .unwrap_or(&[])
    }
}

/// One elementwise instruction of a fused program.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) op: Arc<dyn Primitive>,
    pub(crate) args: Vec<Reg>,
    pub(crate) dtype: DType,
}

/// A chain of elementwise steps evaluated as one node. With one output the
/// node's value is that step's result; with several it is a `uint8` buffer
/// laid out by [`packed_layout`] and read through [`FusedOutput`] views.
/// Built by `compile`'s fusion pass.
///
/// ```
/// use ferrox::*;
/// let f = compile(|xs: &[Array]| Ok(vec![exp(&((&xs[0] * 2.0)? + 1.0)?)?]));
/// let y = f.call(&[zeros(&[4], DType::Float32)?])?;
/// assert_eq!(y[0].primitive().unwrap().name(), "fused");
/// assert_eq!(y[0].to_vec::<f32>()?, vec![1.0f32.exp(); 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Fused {
    steps: Vec<Step>,
    consts: Vec<FusedConst>,
    /// The steps whose results leave the program, in output order. With
    /// several, they share the last step's shape.
    outputs: Vec<usize>,
}

impl Fused {
    /// A fused program; `steps` is non-empty, each step reads only inputs,
    /// `consts` and earlier steps, and `outputs` (non-empty) names steps
    /// of the last step's shape for the traced shapes (the fusion pass
    /// guarantees it).
    pub(crate) fn new(steps: Vec<Step>, consts: Vec<FusedConst>, outputs: Vec<usize>) -> Fused {
        Fused {
            steps,
            consts,
            outputs,
        }
    }

    /// The outputs' dtypes, in output order.
    pub(crate) fn output_dtypes(&self) -> Vec<DType> {
        self.outputs.iter().map(|&s| self.steps[s].dtype).collect()
    }

    /// The node's shape for outputs of `shape`: with several, the packed
    /// buffer's length in bytes.
    pub(crate) fn node_shape(&self, shape: &[usize]) -> Vec<usize> {
        match self.outputs[..] {
            [_] => shape.to_vec(),
            _ => {
                vec![packed_len(&self.output_dtypes(), shape.iter().product())]
            }
        }
    }

    /// The node's dtype: the output's, or bytes when packed.
    pub(crate) fn node_dtype(&self) -> DType {
        match self.outputs[..] {
            [step] => self.steps[step].dtype,
            _ => DType::UInt8,
        }
    }

    /// The shape of every step for inputs of `input_shapes`.
    fn step_shapes(&self, input_shapes: &[&[usize]]) -> Result<Vec<Vec<usize>>> {
        let mut shapes: Vec<Vec<usize>> = Vec::with_capacity(self.steps.len());
        for step in &self.steps {
            let args: Vec<&[usize]> = step
                .args
                .iter()
                .map(|r| match *r {
                    Reg::Input(i) => input_shapes[i],
                    Reg::Step(k) => shapes[k].as_slice(),
                    Reg::Const(c) => self.consts[c].shape.as_slice(),
                })
                .collect();
            let shape = step.op.output_shape(&args).unwrap_or_else(|| {
                Err(Error::runtime(
                    "fused",
                    format!("{} cannot infer its output shape", step.op.name()),
                ))
            })?;
            shapes.push(shape);
        }
        Ok(shapes)
    }

    /// Runs the steps in order on `inputs`; step `k` produces
    /// `shape_of(k)`. Constants enter as rank-0 scalars when `flat` (the
    /// steps then run on flat runs of elements), else with their shapes.
    /// Returns every step's value.
    fn run_steps<'s>(
        &self,
        inputs: &[Operand<'_>],
        shape_of: impl Fn(usize) -> &'s [usize],
        flat: bool,
    ) -> Result<Vec<Data>> {
        let mut results: Vec<Data> = Vec::with_capacity(self.steps.len());
        for (k, step) in self.steps.iter().enumerate() {
            let operands: Vec<Operand<'_>> = step
                .args
                .iter()
                .map(|r| match *r {
                    Reg::Input(i) => inputs[i],
                    Reg::Step(j) => Operand {
                        data: &results[j],
                        shape: shape_of(j),
                        dtype: self.steps[j].dtype,
                    },
                    Reg::Const(c) => {
                        let c = &self.consts[c];
                        let (data, shape) = if flat {
                            (&c.scalar, &[][..])
                        } else {
                            (&c.full, c.shape.as_slice())
                        };
                        Operand {
                            data,
                            shape,
                            dtype: c.dtype,
                        }
                    }
                })
                .collect();
            let out = OutSpec {
                shape: shape_of(k),
                dtype: step.dtype,
            };
            let data = step.op.eval_cpu(&operands, out)?;
            drop(operands);
            results.push(data);
        }
        Ok(results)
    }

    /// Evaluates rows `r0..r0 + nrows` of the outputs (flat elements when
    /// `flat`), each of `shape`, into `dsts`: output j's bytes for those
    /// rows in `dsts[j]`.
    fn eval_chunk(
        &self,
        inputs: &[Operand<'_>],
        shape: &[usize],
        flat: bool,
        (r0, nrows): (usize, usize),
        dsts: &mut [&mut [u8]],
        stream: bool,
    ) -> Result<()> {
        let chunk_shape: Vec<usize> = if flat {
            vec![nrows]
        } else {
            std::iter::once(nrows)
                .chain(shape[1..].iter().copied())
                .collect()
        };
        let views: Vec<(Data, Vec<usize>)> = inputs
            .iter()
            .map(|x| chunk_view(x, shape, flat, r0, nrows))
            .collect();
        let operands: Vec<Operand<'_>> = views
            .iter()
            .zip(inputs)
            .map(|((data, shape), x)| Operand {
                data,
                shape,
                dtype: x.dtype,
            })
            .collect();
        let results = self.run_steps(&operands, |_| chunk_shape.as_slice(), flat)?;
        for (dst, &step) in dsts.iter_mut().zip(&self.outputs) {
            let src = contiguous_bytes(&results[step], &chunk_shape, self.steps[step].dtype)?;
            same_len(dst, src)?;
            if stream {
                stream_copy(dst, src);
            } else {
                dst.copy_from_slice(src);
            }
        }
        if stream {
            store_fence();
        }
        Ok(())
    }

    /// Copies whole-array outputs (each of `shape`) into one packed buffer.
    fn pack(
        &self,
        results: &[Data],
        shapes: &[Vec<usize>],
        shape: &[usize],
        out: OutSpec<'_>,
    ) -> Result<Data> {
        let mut storage = out_storage(out)?;
        let dtypes = self.output_dtypes();
        let rows = split_rows(storage.as_mut_slice::<u8>(), &dtypes, shape)?;
        for (dst, &step) in rows.into_iter().zip(&self.outputs) {
            if shapes[step] != shape {
                return Err(Error::runtime(
                    "fused",
                    format!(
                        "internal error: output {:?} is not the packed shape {shape:?}",
                        shapes[step]
                    ),
                ));
            }
            let src = contiguous_bytes(&results[step], shape, self.steps[step].dtype)?;
            same_len(dst, src)?;
            dst.copy_from_slice(src);
        }
        Ok(Data::contiguous(storage, out.shape))
    }
}

/// The layout of a packed value: where each output's bytes start, for
/// outputs of `dtypes` with `n` elements each, and the total length. Rows
/// start on cache lines, so each is aligned for its dtype and two outputs
/// written by different cores never share a line.
///
/// ```
/// use ferrox::{DType, compile::packed_layout};
/// assert_eq!(packed_layout(&[DType::Float32, DType::Bool], 3), (vec![0, 64], 67));
/// ```
pub fn packed_layout(dtypes: &[DType], n: usize) -> (Vec<usize>, usize) {
    let starts = row_spans(dtypes, n).map(|(start, _)| start).collect();
    (starts, packed_len(dtypes, n))
}

/// The length in bytes of a packed value (see [`packed_layout`]).
fn packed_len(dtypes: &[DType], n: usize) -> usize {
    row_spans(dtypes, n)
        .last()
        .map_or(0, |(start, len)| start + len)
}

/// Each row's start and length in bytes (see [`packed_layout`]), without
/// allocating: evaluation reads the layout on every call.
fn row_spans(dtypes: &[DType], n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    dtypes.iter().scan(0usize, move |end, d| {
        let start = end.div_ceil(ALIGN) * ALIGN;
        *end = start + n * d.size();
        Some((start, n * d.size()))
    })
}

/// The rows of a packed buffer (see [`packed_layout`]) as disjoint slices.
fn split_rows<'b>(
    mut bytes: &'b mut [u8],
    dtypes: &[DType],
    shape: &[usize],
) -> Result<Vec<&'b mut [u8]>> {
    let n: usize = shape.iter().product();
    let bad = || Error::runtime("fused", "internal error: a packed buffer of the wrong size");
    let mut rows = Vec::with_capacity(dtypes.len());
    let mut pos = 0;
    for (start, len) in row_spans(dtypes, n) {
        let (_, rest) = bytes.split_at_mut_checked(start - pos).ok_or_else(bad)?;
        let (row, rest) = rest.split_at_mut_checked(len).ok_or_else(bad)?;
        rows.push(row);
        bytes = rest;
        pos = start + len;
    }
    if !bytes.is_empty() {
        return Err(bad());
    }
    Ok(rows)
}

/// The bytes of `data`, a freshly computed step result of `shape`.
fn contiguous_bytes<'d>(data: &'d Data, shape: &[usize], dtype: DType) -> Result<&'d [u8]> {
    let size = dtype.size();
    let start = data.offset * size;
    let len = shape.iter().product::<usize>() * size;
    if len == 0 {
        return Ok(&[]); // an empty result has no layout to check
    }
    data.is_contiguous(shape)
        .then(|| data.storage.as_slice::<u8>().get(start..start + len))
        .flatten()
        .ok_or_else(|| Error::runtime("fused", "internal error: a step returned a strided result"))
}

/// Checks that a computed output fits its destination exactly.
fn same_len(dst: &[u8], src: &[u8]) -> Result<()> {
    if dst.len() == src.len() {
        return Ok(());
    }
    Err(Error::runtime(
        "fused",
        format!(
            "internal error: {} bytes computed for an output of {}",
            src.len(),
            dst.len()
        ),
    ))
}

/// The part of input `x` that rows `r0..r0 + nrows` of the output read,
/// with its shape.
fn chunk_view(
    x: &Operand<'_>,
    out_shape: &[usize],
    flat: bool,
    r0: usize,
    nrows: usize,
) -> (Data, Vec<usize>) {
    let storage = x.data.storage.clone();
    let single = x.shape.iter().product::<usize>() == 1;
    if flat {
        if single {
            // One element at `offset` whatever the shape: a scalar.
            let data = Data {
                storage,
                strides: vec![],
                offset: x.data.offset,
            };
            return (data, vec![]);
        }
        let data = Data {
            storage,
            strides: vec![1],
            offset: x.data.offset + r0,
        };
        return (data, vec![nrows]);
    }
    let sliced = x.shape.len() == out_shape.len() && x.shape[0] == out_shape[0] && nrows > 0;
    if !sliced {
        return (x.data.clone(), x.shape.to_vec());
    }
    let offset = x.data.offset as isize + r0 as isize * x.data.strides[0];
    let mut shape = x.shape.to_vec();
    shape[0] = nrows;
    let data = Data {
        storage,
        strides: x.data.strides.clone(),
        offset: offset as usize,
    };
    (data, shape)
}

impl Primitive for Fused {
    fn name(&self) -> &'static str {
        "fused"
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let input_shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape).collect();
        let shapes = self.step_shapes(&input_shapes)?;
        // Each output's shape: the last step's (the node's, unpacked).
        let shape = shapes.last().map(Vec::as_slice).unwrap_or(&[]);
        let n: usize = shape.iter().product();
        let bytes_out: usize = self
            .outputs
            .iter()
            .map(|&s| n * self.steps[s].dtype.size())
            .sum();
        let every_step_full = shapes.iter().all(|s| s.as_slice() == shape);
        // Whole when the outputs are one chunk anyway: with one output the
        // last step's buffer is then the node's, with no chunk views and
        // no copy.
        let one_chunk = n <= CHUNK && !worth_streaming(bytes_out);
        if !every_step_full || n == 0 || shape.is_empty() || one_chunk {
            let mut results = self.run_steps(inputs, |s| shapes[s].as_slice(), false)?;
            return match self.outputs[..] {
                [step] if step < results.len() => Ok(results.swap_remove(step)),
                _ => self.pack(&results, &shapes, shape, out),
            };
        }
        if out.shape != self.node_shape(shape) || out.dtype != self.node_dtype() {
            return Err(Error::runtime(
                "fused",
                format!(
                    "internal error: a {} node of shape {:?} for outputs of shape {shape:?}",
                    out.dtype, out.shape
                ),
            ));
        }
        let flat = inputs.iter().all(|x| {
            x.shape.iter().product::<usize>() == 1
                || (x.shape == shape && x.data.is_contiguous(x.shape))
        });
        let row_len = if flat { 1 } else { n / shape[0] };
        let rows = n / row_len;
        let rows_per_chunk = (CHUNK / row_len).max(1);
        let mut storage = out_storage(out)?;
        let stream = worth_streaming(bytes_out);
        let dtypes = self.output_dtypes();
        // dsts[i * k + j]: chunk i of output j, so each task owns k
        // disjoint slices.
        let mut per_output: Vec<_> = split_rows(storage.as_mut_slice::<u8>(), &dtypes, shape)?
            .into_iter()
            .zip(&dtypes)
            .map(|(row, d)| row.chunks_mut(rows_per_chunk * row_len * d.size()))
            .collect();
        let k = dtypes.len();
        let chunks = rows.div_ceil(rows_per_chunk);
        let mut dsts: Vec<&mut [u8]> = Vec::with_capacity(chunks * k);
        for _ in 0..chunks {
            dsts.extend(per_output.iter_mut().filter_map(Iterator::next));
        }
        let run = |(i, dst): (usize, &mut [&mut [u8]])| {
            let r0 = i * rows_per_chunk;
            let nrows = rows_per_chunk.min(rows - r0);
            self.eval_chunk(inputs, shape, flat, (r0, nrows), dst, stream)
        };
        if worth_splitting(n) {
            dsts.par_chunks_mut(k).enumerate().try_for_each(run)?;
        } else {
            dsts.chunks_mut(k).enumerate().try_for_each(run)?;
        }
        Ok(Data::contiguous(storage, out.shape))
    }

    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        Some(self.step_shapes(input_shapes).and_then(|s| {
            s.last()
                .map(|shape| self.node_shape(shape))
                .ok_or_else(|| Error::runtime("fused", "no steps"))
        }))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn is_equivalent(&self, other: &dyn Primitive) -> bool {
        let Some(o) = other.as_any().downcast_ref::<Fused>() else {
            return false;
        };
        self.steps.len() == o.steps.len()
            && self.outputs == o.outputs
            && self.consts.len() == o.consts.len()
            && self.steps.iter().zip(&o.steps).all(|(a, b)| {
                a.args == b.args && a.dtype == b.dtype && a.op.is_equivalent(b.op.as_ref())
            })
            && self
                .consts
                .iter()
                .zip(&o.consts)
                .all(|(a, b)| a.dtype == b.dtype && a.shape == b.shape && a.bytes() == b.bytes())
    }
}

/// Output `index` of a [`Fused`] program with several outputs: a zero-copy
/// view, typed as that output, of its row of the packed value (see
/// [`packed_layout`]).
///
/// ```
/// use ferrox::*;
/// let f = compile(|xs: &[Array]| {
///     let e = exp(&xs[0])?;
///     Ok(vec![e.clone(), greater(&(&e * 2.0)?, &Array::from(1.0))?])
/// });
/// let y = f.call(&[zeros(&[3], DType::Float32)?])?;
/// assert_eq!(y[0].primitive().unwrap().name(), "fused_output");
/// assert_eq!(y[0].inputs()[0].id(), y[1].inputs()[0].id(), "one kernel");
/// assert_eq!(y[1].to_vec::<bool>()?, vec![true; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusedOutput {
    index: usize,
    /// Every output's dtype, in order: what the layout depends on.
    dtypes: Vec<DType>,
}

impl FusedOutput {
    /// The view of output `index` of outputs of `dtypes`.
    pub(crate) fn new(index: usize, dtypes: Vec<DType>) -> FusedOutput {
        FusedOutput { index, dtypes }
    }
}

impl Primitive for FusedOutput {
    fn name(&self) -> &'static str {
        "fused_output"
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [packed] = inputs else {
            return Err(Error::runtime(
                "fused_output",
                format!("expected 1 input, got {}", inputs.len()),
            ));
        };
        let n: usize = out.shape.iter().product();
        let total = packed_len(&self.dtypes, n);
        let size = out.dtype.size();
        let start = row_spans(&self.dtypes, n)
            .nth(self.index)
            .map(|(s, _)| packed.data.offset + s);
        let fits = packed.shape == [total]
            && packed.dtype == DType::UInt8
            && self.dtypes.get(self.index) == Some(&out.dtype)
            && start.is_some_and(|s| s % size == 0)
            // An empty value has no layout to check.
            && (n == 0 || packed.data.is_contiguous(packed.shape));
        match start {
            Some(start) if fits => Ok(Data {
                storage: packed.data.storage.clone(),
                strides: row_major_strides(out.shape),
                offset: start / size,
            }),
            _ => Err(Error::runtime(
                "fused_output",
                format!(
                    "output {} ({} of shape {:?}) cannot be read from a packed {} value of shape {:?}",
                    self.index, out.dtype, out.shape, packed.dtype, packed.shape
                ),
            )),
        }
    }

    crate::primitive_common!();
}
