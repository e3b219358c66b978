//! `eval` and `async_eval`.
//!
//! `eval` runs on the calling thread: it orders the unevaluated part of the
//! graph (iteratively, so depth is bounded only by memory) and walks it,
//! claiming each node's [`EvalCell`](crate::graph::cell::EvalCell). A node claimed by
//! another thread is skipped and waited on only when a later node needs it.
//! A thread computing a node waits only on that node's inputs, which come
//! earlier in every topological order, so two threads evaluating overlapping
//! graphs cannot deadlock, and every shared node is computed exactly once.
//!
//! Running inline keeps a tiny graph at a few microseconds (no thread hop per
//! op); large kernels parallelise internally on the rayon pool.

use super::pending::pending;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::cell::Claimed;
use crate::graph::layout::Data;
use crate::graph::node::Node;
use crate::graph::outputs::{Value, output_index};
use crate::graph::primitive::{Operand, OutSpec};
use crate::sync::read;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Node ids are unique counters: they hash as themselves (the default
/// SipHash costs more than the rest of a tiny graph's bookkeeping).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, id: u64) {
        // Spread sequential ids over the table's buckets.
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Evaluates `outputs` (and everything they depend on) on this thread.
///
/// Errors from any node needed by the outputs are returned; a failed node
/// stays failed and reports the same error to every later reader.
///
/// ```
/// use ferrox::*;
/// let x = ones(&[3], DType::Float32)?;
/// let y = add(&x, &x)?;
/// eval(&[y.clone()])?;
/// assert_eq!(y.to_vec::<f32>()?, vec![2.0; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eval(outputs: &[Array]) -> Result<()> {
    // Counted so that an allocation over the memory limit knows whether
    // another evaluation may still free memory (see `runtime::memory`).
    let _in_flight = super::memory::EvalInFlight::enter();
    for node in topo_order(outputs) {
        compute(&node)?;
    }
    for o in outputs {
        o.0.cell.wait()?;
    }
    Ok(())
}

/// Starts evaluating `outputs` on the worker pool and returns at once.
///
/// Use [`crate::synchronize`] on the outputs' streams, or simply read the
/// arrays (reading waits), to observe completion.
///
/// ```
/// use ferrox::*;
/// let y = exp(&zeros(&[8], DType::Float32)?)?;
/// async_eval(&[y.clone()])?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0; 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn async_eval(outputs: &[Array]) -> Result<()> {
    let mut streams: Vec<_> = outputs.iter().map(|a| a.stream()).collect();
    streams.sort_by_key(|s| s.index);
    streams.dedup();
    let pendings: Vec<_> = streams.into_iter().map(pending).collect();
    for p in &pendings {
        p.add();
    }
    let outputs = outputs.to_vec();
    super::workers::submit(move || {
        // Errors stay in the failed nodes; readers see them.
        let _ = eval(&outputs);
        for p in pendings {
            p.finish();
        }
    });
    Ok(())
}

/// The work [`eval`] of `outputs` would do now, in elements read and
/// written by its kernels (each pending node counts its output and its
/// inputs), if that is at most `limit` and nothing it needs is being
/// computed by another thread; otherwise `None`. The walk stops as soon as
/// the answer is `None`, so it costs at most `limit`-bounded bookkeeping.
///
/// Bindings use it to decide whether an evaluation is small enough to run
/// without releasing their interpreter lock (a lock hand-off costs more
/// than microseconds of work); an evaluation that would wait on another
/// thread's node, or on other processes (`Primitive::waits_on_peers`), is
/// never small.
///
/// ```
/// use ferrox::*;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?; // data: done
/// let y = add(&x, &x)?; // pending: writes 4, reads 4 + 4
/// assert_eq!(runtime::eval::pending_work(&[y.clone()], 1 << 16), Some(12));
/// assert_eq!(runtime::eval::pending_work(&[y.clone()], 8), None);
/// y.eval()?;
/// assert_eq!(runtime::eval::pending_work(&[y], 8), Some(0));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn pending_work(outputs: &[Array], limit: usize) -> Option<usize> {
    // Small graphs are the only ones that can qualify, so a short list
    // beats a hash set for the visited nodes.
    const MAX_NODES: usize = 256;
    let mut seen: Vec<u64> = Vec::new();
    let mut stack: Vec<Array> = outputs
        .iter()
        .filter(|o| !o.0.cell.is_done())
        .cloned()
        .collect();
    let mut work = 0usize;
    while let Some(a) = stack.pop() {
        if a.0.cell.is_done() || seen.contains(&a.id()) {
            continue;
        }
        if seen.len() == MAX_NODES || a.0.cell.is_running() {
            return None;
        }
        // Communication waits on other processes: never small.
        if a.0.op.as_ref().is_some_and(|op| op.waits_on_peers()) {
            return None;
        }
        seen.push(a.id());
        let inputs = read(&a.0.inputs);
        let written = a.output_specs().map_or(a.size(), |specs| {
            specs.iter().map(|(s, _)| s.iter().product::<usize>()).sum()
        });
        work = inputs.iter().fold(work.saturating_add(written), |w, i| {
            w.saturating_add(i.size())
        });
        if work > limit {
            return None;
        }
        stack.extend(inputs.iter().filter(|i| !i.0.cell.is_done()).cloned());
    }
    Some(work)
}

/// The unevaluated nodes reachable from `outputs`, inputs before users.
fn topo_order(outputs: &[Array]) -> Vec<Array> {
    let mut order = Vec::new();
    let mut seen: HashSet<u64, BuildHasherDefault<IdHasher>> = HashSet::default();
    // (array, inputs already pushed?)
    let mut stack: Vec<(Array, bool)> = Vec::new();
    for o in outputs.iter().rev() {
        stack.push((o.clone(), false));
    }
    while let Some((a, expanded)) = stack.pop() {
        if expanded {
            order.push(a);
            continue;
        }
        if a.0.cell.is_done() || !seen.insert(a.id()) {
            continue;
        }
        // Only handles of inputs still to compute are cloned: finished
        // inputs (weights, constants) are shared by many threads, and a
        // refcount change would bounce their cache line between them.
        let todo: Vec<Array> = read(&a.0.inputs)
            .iter()
            .rev()
            .filter(|i| !i.0.cell.is_done() && !seen.contains(&i.id()))
            .cloned()
            .collect();
        stack.push((a, true));
        stack.extend(todo.into_iter().map(|i| (i, false)));
    }
    order
}

fn compute(a: &Array) -> Result<()> {
    let node: &Node = &a.0;
    let claim = match node.cell.claim() {
        Claimed::Mine(c) => c,
        // Someone else computes it (we wait when a user needs it), or done.
        Claimed::Running => return Ok(()),
        Claimed::Done(r) => return r.map(|_| ()),
    };
    let result = super::profile::timed(a, || match &node.op {
        // A kernel that may write over its inputs runs with them locked
        // and drops them after (a live transform still needs them).
        Some(op) if op.accepts_donations() && !node.in_live_trace() => {
            node.consume_inputs(|inputs| {
                let donated: Vec<bool> = inputs.iter_mut().map(held_only_here).collect();
                run_kernel(node, inputs, Some(&donated))
            })
        }
        _ => run_kernel(node, &read(&node.inputs), None),
    });
    let failed = result.as_ref().err().cloned();
    claim.publish(result);
    // The value is published: the inputs are no longer needed, unless a
    // running transform will still walk this graph.
    if !node.in_live_trace() {
        node.detach();
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// True when `input`'s buffer may be overwritten by the kernel reading it
/// (see `Primitive::eval_cpu_donating`): the caller holds the only handle
/// to the input (no other array, graph or weak reference: `Arc::get_mut`),
/// with its consumer's inputs write-locked so no one can clone it, and its
/// value is a pooled buffer that no view shares and that holds exactly its
/// elements, in order.
fn held_only_here(input: &mut Array) -> bool {
    let Some(node) = Arc::get_mut(&mut input.0) else {
        return false;
    };
    let bytes = node.shape.iter().product::<usize>() * node.dtype.size();
    let Some(Value::One(data)) = node.cell.value_mut() else {
        return false;
    };
    data.offset == 0
        && data.is_contiguous(&node.shape)
        && Arc::get_mut(&mut data.storage)
            .is_some_and(|s| s.len() == bytes && s.pooled_ptr().is_some())
}

/// Runs `node`'s kernel on `inputs` (its inputs, borrowed for the kernel,
/// not cloned: see `topo_order`), letting it overwrite the inputs marked
/// in `donated`.
fn run_kernel(node: &Node, inputs: &[Array], donated: Option<&[bool]>) -> Result<Value> {
    let Some(op) = &node.op else {
        return Err(Error::runtime("eval", "a data leaf has no value"));
    };
    if let Some(index) = output_index(op.as_ref()) {
        // An output node shares its group's buffer for that output.
        let [group] = inputs else {
            return Err(Error::runtime(
                "output",
                "internal error: an output node without its group",
            ));
        };
        return wait_for_value(group)?.output(index).map(Value::One);
    }
    let mut operands: Vec<Operand<'_>> = Vec::with_capacity(inputs.len());
    for i in inputs.iter() {
        operands.push(Operand {
            data: wait_for(i)?,
            shape: i.shape(),
            dtype: i.dtype(),
        });
    }
    let Some(specs) = &node.outputs else {
        let out = OutSpec {
            shape: &node.shape,
            dtype: node.dtype,
        };
        let Some(donated) = donated else {
            return op.eval_cpu(&operands, out).map(Value::One);
        };
        return match op.eval_cpu_donating(&operands, &[out], donated)?.pop() {
            Some(data) => Ok(Value::One(data)),
            None => Err(Error::runtime(
                op.name(),
                "internal error: no output computed",
            )),
        };
    };
    let outs: Vec<OutSpec<'_>> = specs
        .iter()
        .map(|(shape, dtype)| OutSpec {
            shape,
            dtype: *dtype,
        })
        .collect();
    let parts = match donated {
        Some(donated) => op.eval_cpu_donating(&operands, &outs, donated)?,
        None => op.eval_cpu_multi(&operands, &outs)?,
    };
    if parts.len() != outs.len() {
        return Err(Error::runtime(
            op.name(),
            format!(
                "internal error: computed {} outputs instead of {}",
                parts.len(),
                outs.len()
            ),
        ));
    }
    Ok(Value::Several(parts.into()))
}

/// The value of an input that is being or has been computed.
fn wait_for(a: &Array) -> Result<&Data> {
    wait_for_value(a)?.single()
}

/// [`wait_for`], for any value (a group node's included).
fn wait_for_value(a: &Array) -> Result<&Value> {
    match a.0.cell.get_ref() {
        Some(r) => r,
        None => {
            if rayon::current_thread_index().is_some() {
                // Blocking a rayon worker could starve the kernel that would
                // publish this value; help the pool while waiting instead.
                loop {
                    if let Some(r) = a.0.cell.get_ref() {
                        return r;
                    }
                    if rayon::yield_now().is_none() {
                        std::thread::yield_now();
                    }
                }
            }
            a.0.cell.wait_ref()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::*;

    /// The first byte of `a`'s evaluated buffer.
    fn buffer_start(a: &Array) -> *const u8 {
        let value = a.0.cell.get_ref().and_then(|v| v.ok()).map(|v| v.single());
        match value {
            Some(Ok(data)) => data.storage.as_slice::<u8>().as_ptr(),
            _ => std::ptr::null(),
        }
    }

    fn ramp(n: usize, scale: f32) -> Result<Array> {
        let v: Vec<f32> = (0..n).map(|i| (i % 997) as f32 * scale).collect();
        Array::from_slice(&v, &[n])
    }

    /// `p * 0.5 + m` and `m * 2` (two outputs) compiled: a chain of several
    /// chunks, with a partial last one.
    fn update() -> CompiledFn {
        compile(|xs: &[Array]| {
            let p = add(&multiply(&xs[0], &Array::from(0.5f32))?, &xs[1])?;
            let m = multiply(&xs[1], &Array::from(2.0f32))?;
            Ok(vec![p, m])
        })
    }

    #[test]
    fn inputs_no_one_else_holds_give_their_buffers_to_the_outputs() -> Result<()> {
        let n = 100_003;
        let f = update();
        f.call(&[ramp(n, 1.0)?, ramp(n, 0.25)?])?; // traced
        let (p, m) = (ramp(n, 1.0)?, ramp(n, 0.25)?);
        let starts = [buffer_start(&p), buffer_start(&m)];
        let outs = f.call(&[p, m])?; // the only handles move into the call
        eval(&outs)?;
        assert_eq!(buffer_start(&outs[0]), starts[0], "p's buffer holds p'");
        assert_eq!(buffer_start(&outs[1]), starts[1], "m's buffer holds m'");
        let (p, m) = (
            ramp(n, 1.0)?.to_vec::<f32>()?,
            ramp(n, 0.25)?.to_vec::<f32>()?,
        );
        let want_p: Vec<f32> = p.iter().zip(&m).map(|(p, m)| p * 0.5 + m).collect();
        let want_m: Vec<f32> = m.iter().map(|m| m * 2.0).collect();
        assert_eq!(outs[0].to_vec::<f32>()?, want_p);
        assert_eq!(outs[1].to_vec::<f32>()?, want_m);
        Ok(())
    }

    #[test]
    fn outputs_computed_in_place_are_read_back_by_later_steps() -> Result<()> {
        // m' is read by p' and returned twice; p' overwrites p, which its
        // own step still reads (so it is copied after the tile), while m'
        // may be computed straight into m's buffer.
        let n = 100_003;
        let f = compile(|xs: &[Array]| {
            let (p, m) = (&xs[0], &xs[1]);
            let m2 = add(&(m * 0.9)?, &(p * 0.1)?)?;
            let p2 = subtract(p, &(&m2 * 0.5)?)?;
            Ok(vec![p2, m2.clone(), m2])
        });
        let (p, m) = (
            ramp(n, 1.0)?.to_vec::<f32>()?,
            ramp(n, 0.25)?.to_vec::<f32>()?,
        );
        let want_m: Vec<f32> = p.iter().zip(&m).map(|(p, m)| m * 0.9 + p * 0.1).collect();
        let want_p: Vec<f32> = p.iter().zip(&want_m).map(|(p, m)| p - m * 0.5).collect();
        for donate in [false, true] {
            let (p, m) = (ramp(n, 1.0)?, ramp(n, 0.25)?);
            let held = donate
                .then(Vec::new)
                .unwrap_or_else(|| vec![p.clone(), m.clone()]);
            let outs = f.call(&[p, m])?;
            eval(&outs)?;
            assert_eq!(outs[0].to_vec::<f32>()?, want_p, "p', donated: {donate}");
            assert_eq!(outs[1].to_vec::<f32>()?, want_m, "m', donated: {donate}");
            assert_eq!(
                outs[2].to_vec::<f32>()?,
                want_m,
                "m' again, donated: {donate}"
            );
            for (x, scale) in held.iter().zip([1.0, 0.25]) {
                assert_eq!(x.to_vec::<f32>()?, ramp(n, scale)?.to_vec::<f32>()?);
            }
        }
        Ok(())
    }

    #[test]
    fn inputs_still_held_or_viewed_keep_their_values() -> Result<()> {
        let n = 100_003;
        let f = update();
        let p = ramp(n, 1.0)?;
        let base = ramp(2 * n, 0.25)?;
        // A view shares its base's buffer: never donated.
        let m = slice(&base, &[0], &[n as isize], &[1])?;
        let starts = [buffer_start(&p), buffer_start(&base)];
        let outs = f.call(&[p.clone(), m])?;
        eval(&outs)?;
        assert_ne!(buffer_start(&outs[0]), starts[0]);
        assert_ne!(buffer_start(&outs[1]), starts[1]);
        assert_eq!(p.to_vec::<f32>()?, ramp(n, 1.0)?.to_vec::<f32>()?);
        assert_eq!(base.to_vec::<f32>()?, ramp(2 * n, 0.25)?.to_vec::<f32>()?);
        Ok(())
    }
}
