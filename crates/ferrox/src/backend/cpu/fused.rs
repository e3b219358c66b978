//! The fused chunk engine: a chain of elementwise instructions run
//! chunk by chunk, so that intermediates live in cache-sized buffers and
//! never reach memory.
//!
//! A program has one output or several (values that other instructions or
//! the caller also read); with several it is a group node (see
//! [`crate::graph::outputs`]) and each output gets its own buffer. Every
//! output is written from the chunk that computed it, so intermediates that
//! are also results still cost one pass over memory. The chunk of an output
//! is lent to the step computing it (see `backend::cpu::destination`): kernels that
//! allocate through `out_storage` write it in place; other results are
//! copied in.
//!
//! Each step is an ordinary elementwise primitive (unary, binary, `where`,
//! `astype`) evaluated by its own kernel on a chunk of the output, so a
//! fused result is bitwise equal to the unfused one: the same kernels apply
//! the same operations, in the same order, to the same elements. Float32
//! programs of arithmetic and float functions on flat chunks of outputs
//! that are not streamed instead run tile by tile in one loop (`backend::cpu::fused_tile`),
//! applying the same element functions.
//!
//! Donation: when the runtime hands the program input buffers that no one
//! else holds (see `Primitive::eval_cpu_donating`), an output of the same
//! dtype and full shape is written over one of them instead of a fresh
//! buffer, as XLA does with donated arguments: a training step's
//! `p - lr * g` lands in `p`'s memory, which the chunk has just read, so
//! the update touches one buffer per value instead of two. Each chunk reads its
//! part of the input before writing the output there (see
//! `backend::cpu::chunk_dst`), and an output's step
//! computes in place only if no later step reads that input.
//!
//! Chunking: when every input is either a full-shape contiguous array or a
//! single element, the output is split into flat runs of `CHUNK`
//! elements; otherwise it is split along axis 0 into blocks of whole rows
//! (inputs that broadcast along axis 0 are shared by every block). Chunks
//! are spread over cores for large outputs. If a step's shape is not the
//! output's (possible for shapeless replays at new shapes), the steps run
//! one after another on whole arrays instead.

use crate::backend::cpu::chunk_dst::{ChunkDst, DonatedChunk};
use crate::backend::cpu::destination;
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::fused_tile::{ElementOp, TileProgram};
use crate::backend::cpu::parallel::worth_splitting;
use crate::backend::cpu::stream_store::{store_fence, stream_copy, worth_streaming};
use crate::backend::cpu::team::try_for_each_part;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::storage::{EXTERNAL_ALIGN, Storage};
use std::any::Any;
use std::sync::Arc;

/// Output elements per chunk. Intermediates are released after their last
/// read, so only the live ones (a few, even in long chains) share a core's
/// L2 cache: on an 814k-element AdamW chain 32768 ran in 1.39 ms against
/// 1.77 ms at 8192 (fewer per-chunk dispatches) and 1.53 ms at 32768
/// without the releases.
pub(crate) const CHUNK: usize = 32768;

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

/// An output computed over a donated input's buffer.
#[derive(Debug, Clone, Copy)]
struct Donor {
    input: usize,
    /// Whether the output's step may compute straight into the buffer (no
    /// step from it on reads the input); otherwise its result is copied
    /// in after the chunk's last step.
    lend: bool,
}

/// One elementwise instruction of a fused program.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) op: Arc<dyn Primitive>,
    pub(crate) args: Vec<Reg>,
    pub(crate) dtype: DType,
    /// The element function `op` applies (unary, binary or `where`), if it
    /// is one the tile loop may cover (the fusion pass knows the ops; this
    /// layer does not name them).
    pub(crate) element: Option<ElementOp>,
}

/// A chain of elementwise steps evaluated as one node: with one output an
/// ordinary node, with several a group node whose output nodes each read
/// one step's result. Built by `compile`'s fusion pass.
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
    /// For each step, the steps after which a result is no longer read
    /// (outputs excluded): `frees[k]` lists the results to release once
    /// step `k` has run, so a chunk's buffer returns to the pool while it
    /// is still in cache and the next step's allocation takes it back.
    frees: Vec<Vec<usize>>,
    /// The program in the form of the float32 tile loop, if it has one.
    tile: Option<TileProgram>,
}

impl Fused {
    /// A fused program; `steps` is non-empty, each step reads only inputs,
    /// `consts` and earlier steps, and `outputs` (non-empty) names steps
    /// of the last step's shape for the traced shapes (the fusion pass
    /// guarantees it).
    pub(crate) fn new(steps: Vec<Step>, consts: Vec<FusedConst>, outputs: Vec<usize>) -> Fused {
        let frees = last_reads(&steps, &outputs);
        let tile = TileProgram::new(&steps, &consts, &outputs, &frees);
        Fused {
            steps,
            consts,
            outputs,
            frees,
            tile,
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
    /// Returns each step's value, `None` for intermediates released after
    /// their last read (outputs are always kept).
    ///
    /// With `lent`, output j's step computes into `lent[j]` in place when
    /// its kernel can (see [`destination`]); the caller then finds its
    /// result lent at that address and skips the copy.
    fn run_steps<'s>(
        &self,
        inputs: &[Operand<'_>],
        shape_of: impl Fn(usize) -> &'s [usize],
        flat: bool,
        mut lent: Option<&mut [ChunkDst<'_>]>,
    ) -> Result<Vec<Option<Data>>> {
        let released = || Error::runtime("fused", "internal error: a step read a released result");
        let mut results: Vec<Option<Data>> = Vec::with_capacity(self.steps.len());
        for (k, step) in self.steps.iter().enumerate() {
            let operands: Vec<Operand<'_>> = step
                .args
                .iter()
                .map(|r| match *r {
                    Reg::Input(i) => Ok(inputs[i]),
                    Reg::Step(j) => Ok(Operand {
                        data: results[j].as_ref().ok_or_else(released)?,
                        shape: shape_of(j),
                        dtype: self.steps[j].dtype,
                    }),
                    Reg::Const(c) => {
                        let c = &self.consts[c];
                        let (data, shape) = if flat {
                            (&c.scalar, &[][..])
                        } else {
                            (&c.full, c.shape.as_slice())
                        };
                        Ok(Operand {
                            data,
                            shape,
                            dtype: c.dtype,
                        })
                    }
                })
                .collect::<Result<_>>()?;
            let out = OutSpec {
                shape: shape_of(k),
                dtype: step.dtype,
            };
            let output = self.outputs.iter().position(|&s| s == k);
            let dst = match (output, lent.as_deref_mut()) {
                (Some(j), Some(dsts)) => dsts[j].lendable(),
                _ => None,
            };
            let data = match dst {
                Some(dst) => destination::lend(dst, || step.op.eval_cpu(&operands, out))?,
                None => step.op.eval_cpu(&operands, out)?,
            };
            drop(operands);
            results.push(Some(data));
            for &j in &self.frees[k] {
                results[j] = None;
            }
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
        dsts: &mut [ChunkDst<'_>],
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
            .enumerate()
            .map(|(i, x)| {
                // A donated input is read through its chunk's own storage,
                // which covers only the bytes this task reads and writes.
                match dsts
                    .iter()
                    .filter_map(ChunkDst::donor)
                    .find(|d| d.input == i)
                {
                    Some(donor) => (donor.input_view(&chunk_shape), chunk_shape.clone()),
                    None => chunk_view(x, shape, flat, r0, nrows),
                }
            })
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
        let all_f32 = || inputs.iter().all(|x| x.dtype == DType::Float32);
        if let (true, false, Some(tile)) = (flat, stream, &self.tile)
            && all_f32()
        {
            return tile.run(&operands, nrows, dsts);
        }
        // Taken before lending: `dsts` is not touched again while a step
        // result may hold its bytes, except to copy a result that is not.
        let starts: Vec<*const u8> = dsts.iter().map(ChunkDst::start).collect();
        let results = self.run_steps(
            &operands,
            |_| chunk_shape.as_slice(),
            flat,
            Some(&mut *dsts),
        )?;
        let no_output = || Error::runtime("fused", "internal error: an output was released");
        let mut streamed_any = false;
        for ((dst, &step), &start) in dsts.iter_mut().zip(&self.outputs).zip(&starts) {
            let result = results[step].as_ref().ok_or_else(no_output)?;
            if result.storage.is_lent_at(start) {
                // Computed in place; any other layout over the lent bytes
                // would have to be copied onto itself.
                if result.offset != 0 || !result.is_contiguous(&chunk_shape) {
                    return Err(Error::runtime(
                        "fused",
                        "internal error: a step returned a view of its lent output",
                    ));
                }
                continue;
            }
            let src = contiguous_bytes(result, &chunk_shape, self.steps[step].dtype)?;
            // Non-temporal stores would evict a donated chunk that the
            // steps have just brought into cache.
            let streamed = stream && dst.donor().is_none();
            streamed_any |= streamed;
            let dst = dst.bytes_mut();
            same_len(dst, src)?;
            if streamed {
                stream_copy(dst, src);
            } else {
                dst.copy_from_slice(src);
            }
        }
        if streamed_any {
            store_fence();
        }
        Ok(())
    }

    /// Evaluates the program; output j may overwrite an input marked in
    /// `donated` (see `Primitive::eval_cpu_donating`; empty: none).
    fn evaluate(
        &self,
        inputs: &[Operand<'_>],
        outs: &[OutSpec<'_>],
        donated: &[bool],
    ) -> Result<Vec<Data>> {
        if outs.len() != self.outputs.len() {
            return Err(Error::runtime(
                "fused",
                format!(
                    "internal error: {} output specs for {} outputs",
                    outs.len(),
                    self.outputs.len()
                ),
            ));
        }
        let input_shapes: Vec<&[usize]> = inputs.iter().map(|x| x.shape).collect();
        let shapes = self.step_shapes(&input_shapes)?;
        // The shape every step has when chunking applies: the last step's.
        let shape = shapes.last().map(Vec::as_slice).unwrap_or(&[]);
        let n: usize = shape.iter().product();
        let bytes_out: usize = outs.iter().map(|o| n * o.dtype.size()).sum();
        let every_step_full = shapes.iter().all(|s| s.as_slice() == shape);
        // Whole when the outputs are one chunk anyway: each output is then
        // its step's buffer, with no chunk views and no copy.
        let one_chunk = n <= CHUNK && !worth_streaming(bytes_out);
        if !every_step_full || n == 0 || shape.is_empty() || one_chunk {
            let results = self.run_steps(inputs, |s| shapes[s].as_slice(), false, None)?;
            // Each output shares its step's buffer (an `Arc` clone).
            return self
                .outputs
                .iter()
                .map(|&s| {
                    let missing = || Error::runtime("fused", "internal error: no such step");
                    results.get(s).cloned().flatten().ok_or_else(missing)
                })
                .collect();
        }
        if let Some(o) = outs.iter().find(|o| o.shape != shape) {
            return Err(Error::runtime(
                "fused",
                format!(
                    "internal error: an output of shape {:?} for steps of shape {shape:?}",
                    o.shape
                ),
            ));
        }
        let flat = inputs
            .iter()
            .all(|x| one_element(x) || (x.shape == shape && x.data.is_contiguous(x.shape)));
        let row_len = if flat { 1 } else { n / shape[0] };
        let rows = n / row_len;
        let rows_per_chunk = (CHUNK / row_len).max(1);
        let chunk_elems = rows_per_chunk * row_len;
        let donors = self.donors(inputs, shape, outs, donated, chunk_elems);
        // A donated output's buffer is its donor's; the others are fresh.
        let mut storages = outs
            .iter()
            .zip(&donors)
            .map(|(o, d)| d.is_none().then(|| out_storage(*o)).transpose())
            .collect::<Result<Vec<Option<Storage>>>>()?;
        let stream = worth_streaming(bytes_out);
        // Chunk i of each fresh output, in turn.
        let mut per_output: Vec<_> = storages
            .iter_mut()
            .zip(outs)
            .map(|(storage, o)| {
                storage.as_mut().map(|s| {
                    s.as_mut_slice::<u8>()
                        .chunks_mut(chunk_elems * o.dtype.size())
                })
            })
            .collect();
        let k = outs.len();
        // dsts[i * k + j]: chunk i of output j, so each task owns k
        // disjoint chunks.
        let mut dsts = chunk_destinations(inputs, outs, &donors, &mut per_output, chunk_elems, n)?;
        let run = |(i, dst): (usize, &mut [ChunkDst<'_>])| {
            let r0 = i * rows_per_chunk;
            let nrows = rows_per_chunk.min(rows - r0);
            self.eval_chunk(inputs, shape, flat, (r0, nrows), dst, stream)
        };
        if worth_splitting(n) {
            try_for_each_part(dsts.chunks_mut(k).enumerate().collect(), run)?;
        } else {
            dsts.chunks_mut(k).enumerate().try_for_each(run)?;
        }
        drop(dsts);
        drop(per_output);
        storages
            .into_iter()
            .zip(&donors)
            .map(|(storage, donor)| match (storage, donor) {
                (Some(storage), _) => Ok(Data::contiguous(storage, shape)),
                (None, Some(donor)) => Ok(Data {
                    storage: inputs[donor.input].data.storage.clone(),
                    strides: inputs[donor.input].data.strides.clone(),
                    offset: 0,
                }),
                (None, None) => Err(Error::runtime(
                    "fused",
                    "internal error: an output has no buffer",
                )),
            })
            .collect()
    }

    /// For each output, the donated input whose buffer it may overwrite:
    /// one of its dtype and of the full shape `shape`, whose buffer is
    /// pooled and splits into chunks of `chunk_elems` elements aligned for
    /// any element type; each input goes to one output at most.
    fn donors(
        &self,
        inputs: &[Operand<'_>],
        shape: &[usize],
        outs: &[OutSpec<'_>],
        donated: &[bool],
        chunk_elems: usize,
    ) -> Vec<Option<Donor>> {
        let mut taken = vec![false; inputs.len()];
        outs.iter()
            .zip(&self.outputs)
            .map(|(o, &step)| {
                let input = (0..inputs.len()).find(|&i| {
                    let x = &inputs[i];
                    donated.get(i) == Some(&true)
                        && !taken[i]
                        && x.dtype == o.dtype
                        && x.shape == shape
                        && x.data.offset == 0
                        && x.data.is_contiguous(x.shape)
                        && (chunk_elems * o.dtype.size()) % EXTERNAL_ALIGN == 0
                        && x.data.storage.pooled_ptr().is_some()
                })?;
                taken[input] = true;
                // The step may write the chunk in place only if neither it
                // nor a later step still reads the input.
                let lend = !self.steps[step..]
                    .iter()
                    .any(|s| s.args.contains(&Reg::Input(input)));
                Some(Donor { input, lend })
            })
            .collect()
    }
}

/// Every output's destination chunks, chunk by chunk (`k` per chunk, in
/// output order): slices of `fresh[j]` for fresh outputs, chunks of the
/// donor's buffer for donated ones, `chunk_elems` elements each (the last
/// one of `n` partial).
fn chunk_destinations<'a>(
    inputs: &[Operand<'_>],
    outs: &[OutSpec<'_>],
    donors: &[Option<Donor>],
    fresh: &mut [Option<std::slice::ChunksMut<'a, u8>>],
    chunk_elems: usize,
    n: usize,
) -> Result<Vec<ChunkDst<'a>>> {
    let chunks = n.div_ceil(chunk_elems);
    let mut dsts = Vec::with_capacity(chunks * outs.len());
    for i in 0..chunks {
        let (first, count) = (i * chunk_elems, chunk_elems.min(n - i * chunk_elems));
        for (j, fresh) in fresh.iter_mut().enumerate() {
            let dst = match (fresh, donors[j]) {
                (Some(fresh), _) => fresh.next().map(ChunkDst::Fresh),
                (None, Some(donor)) => {
                    let size = outs[j].dtype.size();
                    inputs[donor.input].data.storage.pooled_ptr().map(|base| {
                        // SAFETY: the buffer was donated to this call (no
                        // one else can reach it) and holds `n` elements
                        // from its start, so the chunk lies inside it; the
                        // chunks of one buffer are disjoint; `first * size`
                        // is a multiple of the chunk's bytes, which `donors`
                        // checked are aligned to EXTERNAL_ALIGN, as the
                        // pooled base is. `eval_chunk` reads the input's
                        // chunk only through `input_view` and writes it only
                        // through the chunk, one at a time, and drops both
                        // with the task.
                        ChunkDst::Donated(unsafe {
                            DonatedChunk::new(
                                donor.input,
                                base.add(first * size),
                                count * size,
                                donor.lend,
                            )
                        })
                    })
                }
                (None, None) => None,
            };
            dsts.push(dst.ok_or_else(|| {
                Error::runtime("fused", "internal error: an output chunk is missing")
            })?);
        }
    }
    Ok(dsts)
}

/// For each step `k`, the results whose last read is step `k`: every step
/// result that no later step reads and that is not an output.
pub(crate) fn last_reads(steps: &[Step], outputs: &[usize]) -> Vec<Vec<usize>> {
    let mut last: Vec<Option<usize>> = vec![None; steps.len()];
    for (k, step) in steps.iter().enumerate() {
        for r in &step.args {
            if let Reg::Step(j) = *r {
                last[j] = Some(k);
            }
        }
    }
    let mut frees = vec![Vec::new(); steps.len()];
    for (j, reader) in last.into_iter().enumerate() {
        if let Some(k) = reader.filter(|_| !outputs.contains(&j)) {
            frees[k].push(j);
        }
    }
    frees
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

/// True when every element of `x` is one element of its buffer: a single
/// element, or one broadcast to any shape (a loss's cotangent,
/// `broadcast_like(1.0, x)`). Flat chunks read it as a scalar.
fn one_element(x: &Operand<'_>) -> bool {
    x.shape.iter().product::<usize>() == 1 || x.data.strides.iter().all(|&s| s == 0)
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
    if flat {
        if one_element(x) {
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
        let mut outputs = self.eval_cpu_multi(inputs, &[out])?;
        match (outputs.pop(), outputs.is_empty()) {
            (Some(data), true) => Ok(data),
            _ => Err(Error::runtime(
                "fused",
                "internal error: a program with several outputs evaluated as one",
            )),
        }
    }

    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        self.evaluate(inputs, outs, &[])
    }

    fn accepts_donations(&self) -> bool {
        true
    }

    fn eval_cpu_donating(
        &self,
        inputs: &[Operand<'_>],
        outs: &[OutSpec<'_>],
        donated: &[bool],
    ) -> Result<Vec<Data>> {
        self.evaluate(inputs, outs, donated)
    }

    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        Some(
            self.output_shapes(input_shapes)?
                .and_then(|shapes| match &shapes[..] {
                    [shape] => Ok(shape.clone()),
                    _ => Err(Error::runtime("fused", "internal error: several outputs")),
                }),
        )
    }

    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        Some(
            self.step_shapes(input_shapes)
                .map(|shapes| self.outputs.iter().map(|&s| shapes[s].clone()).collect()),
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::unary::UnaryOp;
    use crate::ops::unary::Unary;

    fn step(args: Vec<Reg>) -> Step {
        Step {
            op: Arc::new(Unary(UnaryOp::Exp)),
            args,
            dtype: DType::Float32,
            element: Some(ElementOp::Unary(UnaryOp::Exp)),
        }
    }

    #[test]
    fn a_result_is_released_after_its_last_read_and_outputs_never() {
        // 0 <- in; 1 <- 0; 2 <- 0, 1; 3 <- 2 (output 1 and 3).
        let steps = vec![
            step(vec![Reg::Input(0)]),
            step(vec![Reg::Step(0)]),
            step(vec![Reg::Step(0), Reg::Step(1)]),
            step(vec![Reg::Step(2)]),
        ];
        let frees = last_reads(&steps, &[1, 3]);
        assert_eq!(frees, vec![vec![], vec![], vec![0], vec![2]]);
    }
}

#[cfg(test)]
mod tile_tests {
    use crate::*;

    /// The fused program behind a compiled result.
    fn program(y: &Array) -> super::Fused {
        let kernel = y.output_of().map_or_else(|| y.clone(), |(group, _)| group);
        let op = kernel.primitive().expect("a computed node");
        op.as_any()
            .downcast_ref::<super::Fused>()
            .expect("a fused node")
            .clone()
    }

    #[test]
    fn compiled_float32_arithmetic_runs_in_tiles_and_other_programs_do_not() -> Result<()> {
        let x = ones(&[4], DType::Float32)?;
        let adam_like = compile(|xs: &[Array]| {
            let m = add(&(&xs[0] * 0.9)?, &(&xs[0] * 0.1)?)?;
            Ok(vec![divide(&m, &(&sqrt(&m)? + 1e-8)?)?])
        });
        assert!(
            program(&adam_like.call(std::slice::from_ref(&x))?[0])
                .tile
                .is_some()
        );
        let with_where = compile(|xs: &[Array]| {
            let pos = greater(&xs[0], &Array::from(0.0f32))?;
            Ok(vec![r#where(&pos, &(&xs[0] * 2.0)?, &xs[0])?])
        });
        assert!(
            program(&with_where.call(std::slice::from_ref(&x))?[0])
                .tile
                .is_some()
        );
        // A mask that leaves the program is a bool output: general path.
        let mask_out = compile(|xs: &[Array]| {
            let pos = greater(&xs[0], &Array::from(0.0f32))?;
            Ok(vec![r#where(&pos, &(&xs[0] * 2.0)?, &xs[0])?, pos])
        });
        let outs = mask_out.call(std::slice::from_ref(&x))?;
        assert!(program(&outs[0]).tile.is_none());
        let f64_where = compile(|xs: &[Array]| {
            let pos = greater(&xs[0], &Array::from(0.0f64))?;
            Ok(vec![r#where(&pos, &(&xs[0] * 2.0)?, &xs[0])?])
        });
        let x64 = ones(&[4], DType::Float64)?;
        assert!(program(&f64_where.call(&[x64])?[0]).tile.is_none());
        Ok(())
    }

    #[test]
    fn relu_backward_runs_in_tiles_with_its_zeros_embedded() -> Result<()> {
        // grad of sum(maximum(x, 0) * w): where(x >= 0, w, zeros_like(w)),
        // whose zeros are a captured, filled [n] array.
        let n = 10_000;
        let relu_grad = grad(
            |xs: &[Array]| {
                let y = multiply(&maximum(&xs[0], &Array::from(0.0f32))?, &xs[1])?;
                Ok(vec![sum(&y, None, false)?])
            },
            &[0],
        );
        let f = compile(move |xs: &[Array]| relu_grad(xs));
        let x = arange(-5000.0, 5000.0, 1.0, DType::Float32)?;
        let w = multiply(
            &arange(0.0, n as f64, 1.0, DType::Float32)?,
            &Array::from(0.5f32),
        )?;
        let got = f.call(&[x.clone(), w.clone()])?;
        let fused = program(&got[0]);
        assert!(
            fused.tile.is_some(),
            "the relu backward program runs in tiles"
        );
        // Reads x, w and the cotangent of the sum; the zeros are embedded
        // as one element instead of read as a filled array.
        let filled = |i: &Array| i.primitive().is_some_and(|p| p.name() == "full");
        assert!(!got[0].inputs().iter().any(filled));
        assert!(
            fused
                .consts
                .iter()
                .all(|c| c.shape.iter().product::<usize>() == 1)
        );
        let want: Vec<f32> = (0..n)
            .map(|i| if i >= 5000 { i as f32 * 0.5 } else { 0.0 })
            .collect();
        assert_eq!(got[0].to_vec::<f32>()?, want);
        Ok(())
    }
}
