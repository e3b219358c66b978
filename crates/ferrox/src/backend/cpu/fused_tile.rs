//! The fused engine's loop for float32 programs of arithmetic and float
//! functions: the whole program runs on one tile of [`TILE`] elements
//! after another, its intermediates in a few tile-sized slots that stay in
//! cache, under one SIMD dispatch per chunk. The general path instead runs
//! each step as a kernel call on a chunk of 32768 elements, so a long
//! chain (AdamW's thirteen steps) pays a call, an allocation and a pass
//! through L2 per step and chunk.
//!
//! Each step applies the same element function as its kernel (`Arith`,
//! `Real` and `FloatElement` of `f32`), so results are bitwise equal to the
//! general path's. Comparisons of float32 values and `where` are covered
//! too, as long as every comparison only feeds a `where` inside the
//! program (ReLU's backward pass, `where(x >= 0, g, 0)`): a mask lives in a
//! float32 slot as 1.0 or 0.0 and never leaves the program. Steps it does
//! not cover (other dtypes, bool outputs or inputs, `power`, trigonometry
//! with its two-phase reduction, casts) make the whole program take the
//! general path, as do outputs large enough to be written with
//! non-temporal stores (the general path streams them; on 16M-element
//! chains it ran 10-25% faster than this loop).

use crate::backend::cpu::binary::{Arith, BinaryOp, Real};
use crate::backend::cpu::chunk_dst::ChunkDst;
use crate::backend::cpu::fused::{FusedConst, Reg, Step};
use crate::backend::cpu::parallel::simd;
use crate::backend::cpu::unary::{UnaryOp, float_map};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::primitive::Operand;

/// Elements per tile. Each step costs some bookkeeping per tile, so tiles
/// are as long as caches allow: a program's live slots (a handful of 8 KiB
/// tiles) and its inputs' tiles stay in L2. On an AdamW update of 803k
/// elements (`examples/bench_fused.rs`) 2048 ran in 0.43 ms against 0.56
/// at 512 and 0.48 at 8192; the per-step kernels took 0.51.
const TILE: usize = 2048;

/// The element function a fused step applies, as the fusion pass (which
/// knows the ops) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementOp {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `where(condition, x, y)`.
    Select,
}

/// One step: its op, operands, and the slot its tile goes to.
#[derive(Debug, Clone)]
struct TileStep {
    op: ElementOp,
    args: Vec<Reg>,
    slot: usize,
}

/// A fused program in the form the tile loop runs.
#[derive(Debug, Clone)]
pub(crate) struct TileProgram {
    steps: Vec<TileStep>,
    /// Tile slots the program needs at most at once.
    slots: usize,
    /// The program's embedded constants.
    consts: Vec<f32>,
    /// The slots holding the outputs, in output order.
    outputs: Vec<usize>,
}

/// A tile's lists of borrows: each output's destination until its step
/// takes it, and each slot's tile.
type TileLists<'d, 'c> = (Vec<Option<&'d mut ChunkDst<'c>>>, Vec<&'d mut [f32]>);

/// One operand of a step on one tile.
#[derive(Clone, Copy)]
enum Src<'a> {
    Tile(&'a [f32]),
    Scalar(f32),
}

impl TileProgram {
    /// The tile form of a program (see `Fused::new` for `steps`,
    /// `consts` and `outputs`; `frees[k]`: the results last read by step
    /// `k`, outputs excluded), if every step is a float32 op the loop
    /// covers and every constant is float32.
    pub(crate) fn new(
        steps: &[Step],
        consts: &[FusedConst],
        outputs: &[usize],
        frees: &[Vec<usize>],
    ) -> Option<TileProgram> {
        let consts = consts
            .iter()
            .map(|c| {
                let raw = c.scalar.storage.as_slice::<f32>();
                (c.dtype == DType::Float32)
                    .then(|| raw.get(c.scalar.offset).copied())
                    .flatten()
            })
            .collect::<Option<Vec<f32>>>()?;
        let ops = steps
            .iter()
            .map(|s| tile_op(s, steps))
            .collect::<Option<Vec<ElementOp>>>()?;
        if outputs.iter().any(|&k| steps[k].dtype != DType::Float32) {
            return None; // a mask never leaves the program
        }
        // Slots: a step's slot is taken before its operands' are released,
        // so no step writes a slot it reads; outputs are never released.
        // An output's slot is its own: no other step ever writes it, so a
        // run may map it onto the output's destination (see `run`).
        let (mut free, mut slots, mut slot_of) = (Vec::new(), 0, Vec::with_capacity(steps.len()));
        let mut tile_steps = Vec::with_capacity(steps.len());
        for (k, ((step, op), released)) in steps.iter().zip(ops).zip(frees).enumerate() {
            let slot = match free.pop() {
                Some(slot) if !outputs.contains(&k) => slot,
                reusable => {
                    free.extend(reusable);
                    slots += 1;
                    slots - 1
                }
            };
            slot_of.push(slot);
            tile_steps.push(TileStep {
                op,
                args: step.args.clone(),
                slot,
            });
            free.extend(released.iter().map(|&j| slot_of[j]));
        }
        Some(TileProgram {
            steps: tile_steps,
            slots,
            consts,
            outputs: outputs.iter().map(|&s| slot_of[s]).collect(),
        })
    }

    /// Computes `len` elements of every output into `dsts` (one per
    /// output), from `inputs`: flat runs of `len` float32 elements or
    /// single elements.
    ///
    /// An output whose destination may be lent ([`ChunkDst::lendable`]:
    /// a fresh buffer, or a donated input that no step from the output's
    /// on reads) is computed straight into it, and later steps read it
    /// there; the others are computed into their slot and copied once the
    /// tile's last step has run. On an AdamW update the copies took about
    /// a tenth of the loop's time.
    pub(crate) fn run(
        &self,
        inputs: &[Operand<'_>],
        len: usize,
        dsts: &mut [ChunkDst<'_>],
    ) -> Result<()> {
        if dsts.len() != self.outputs.len() {
            return Err(Error::runtime(
                "fused",
                "internal error: a destination count differs from the outputs'",
            ));
        }
        // For each slot, the output computed in place there: one whose
        // destination may be lent and whose slot no other output shares
        // (one step returned twice is copied from its slot).
        let mut in_place: Vec<Option<usize>> = vec![None; self.slots];
        for (o, (dst, &slot)) in dsts.iter_mut().zip(&self.outputs).enumerate() {
            let shared = self.outputs.iter().filter(|&&s| s == slot).count() > 1;
            if dst.lendable().is_some() && !shared {
                in_place[slot] = Some(o);
            }
        }
        let mut slots = vec![vec![0.0f32; TILE]; self.slots];
        simd(
            #[inline(always)]
            || {
                // One allocation each for the whole chunk: the tiles' lists
                // of borrows are refilled in them.
                let mut lists = (
                    Vec::with_capacity(dsts.len()),
                    Vec::with_capacity(self.slots),
                );
                for t0 in (0..len).step_by(TILE) {
                    lists = self.run_tile(
                        inputs,
                        (t0, TILE.min(len - t0)),
                        dsts,
                        &in_place,
                        &mut slots,
                        lists,
                    )?;
                }
                Ok(())
            },
        )
    }

    /// Elements `t0..t0 + n` of every output. Inlined into `run`'s SIMD
    /// context together with the element loops: no closure or call that
    /// could be compiled apart stands between them.
    ///
    /// `lists` are empty vectors whose allocations the tile's lists of
    /// borrows reuse; they come back emptied for the next tile.
    #[inline(always)]
    fn run_tile<'d, 'c>(
        &self,
        inputs: &[Operand<'_>],
        (t0, n): (usize, usize),
        dsts: &mut [ChunkDst<'c>],
        in_place: &[Option<usize>],
        slots: &mut [Vec<f32>],
        (targets, tiles): TileLists<'d, 'c>,
    ) -> Result<TileLists<'d, 'c>> {
        // Each output's destination, until its step takes it (in place) or
        // the copy at the end does. A donated destination's bytes are only
        // borrowed from its step on, when no step reads the input anymore.
        let mut targets = recycle(targets);
        targets.extend(dsts.iter_mut().map(Some));
        // The tile of every slot: an in-place output's is taken from its
        // destination by its step; until then it is empty.
        let mut tiles = recycle(tiles);
        tiles.extend(slots.iter_mut().zip(in_place).map(|(v, lent)| {
            if lent.is_some() {
                &mut [][..]
            } else {
                &mut v[..n]
            }
        }));
        for step in &self.steps {
            // Taken out so the step reads the other tiles.
            let mut out = std::mem::take(&mut tiles[step.slot]);
            if let Some(o) = in_place[step.slot] {
                let dst = targets[o]
                    .take()
                    .and_then(ChunkDst::lendable)
                    .ok_or_else(|| {
                        Error::runtime("fused", "internal error: a lent output was taken")
                    })?;
                out = f32s_mut(dst)?.get_mut(t0..t0 + n).ok_or_else(|| {
                    Error::runtime("fused", "internal error: a short output chunk")
                })?;
            }
            let result = match (step.op, &step.args[..]) {
                (ElementOp::Unary(op), &[a]) => match self.operand(a, inputs, &tiles, (t0, n)) {
                    Ok(a) => {
                        unary(op, a, &mut *out);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
                (ElementOp::Binary(op), &[a, b]) => {
                    match (
                        self.operand(a, inputs, &tiles, (t0, n)),
                        self.operand(b, inputs, &tiles, (t0, n)),
                    ) {
                        (Ok(a), Ok(b)) => {
                            binary(op, a, b, &mut *out);
                            Ok(())
                        }
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    }
                }
                (ElementOp::Select, &[c, x, y]) => {
                    match (
                        self.operand(c, inputs, &tiles, (t0, n)),
                        self.operand(x, inputs, &tiles, (t0, n)),
                        self.operand(y, inputs, &tiles, (t0, n)),
                    ) {
                        (Ok(Src::Tile(c)), Ok(x), Ok(y)) => {
                            select(c, x, y, &mut *out);
                            Ok(())
                        }
                        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e),
                        _ => Err(Error::runtime("fused", "internal error: a scalar mask")),
                    }
                }
                _ => Err(Error::runtime("fused", "internal error: a step's arity")),
            };
            tiles[step.slot] = out;
            result?;
        }
        // Written after the tile's last read of any input, so an output
        // may overwrite its donated input's tile.
        for (target, &slot) in targets.iter_mut().zip(&self.outputs) {
            // None: computed in place, its destination taken by its step.
            let Some(dst) = target.as_deref_mut() else {
                continue;
            };
            let dst = f32s_mut(dst.bytes_mut())?
                .get_mut(t0..t0 + n)
                .ok_or_else(|| Error::runtime("fused", "internal error: a short output chunk"))?;
            dst.copy_from_slice(&tiles[slot][..n]);
        }
        Ok((recycle(targets), recycle(tiles)))
    }

    /// Operand `r` on elements `t0..t0 + n`.
    fn operand<'a>(
        &'a self,
        r: Reg,
        inputs: &'a [Operand<'_>],
        tiles: &'a [&mut [f32]],
        (t0, n): (usize, usize),
    ) -> Result<Src<'a>> {
        let missing = || Error::runtime("fused", "internal error: a step read its own slot");
        match r {
            Reg::Input(i) => input_tile(&inputs[i], t0, n),
            Reg::Step(j) => self
                .steps
                .get(j)
                .and_then(|s| tiles.get(s.slot)?.get(..n))
                .map(Src::Tile)
                .ok_or_else(missing),
            Reg::Const(c) => Ok(Src::Scalar(self.consts[c])),
        }
    }
}

/// The op of a step the tile loop covers, if it is one: float32
/// functions of float32 values, comparisons of float32 values (a mask),
/// and `where` on a mask the program computes. Program inputs have no
/// dtype here: the caller runs the loop only when they are all float32.
fn tile_op(step: &Step, steps: &[Step]) -> Option<ElementOp> {
    let op = step.element?;
    let dtype_of = |r: &Reg| match *r {
        Reg::Step(j) => steps.get(j).map(|s| s.dtype),
        // Embedded constants are checked to be float32 by the caller.
        Reg::Input(_) | Reg::Const(_) => Some(DType::Float32),
    };
    let values_are_f32 = |args: &[Reg]| args.iter().all(|r| dtype_of(r) == Some(DType::Float32));
    let covered = match op {
        ElementOp::Select => {
            let [c, x, y] = &step.args[..] else {
                return None;
            };
            step.dtype == DType::Float32
                && matches!(c, Reg::Step(j) if steps.get(*j).is_some_and(is_mask))
                && values_are_f32(&[*x, *y])
        }
        ElementOp::Binary(op) if is_comparison(op) => {
            step.dtype == DType::Bool && values_are_f32(&step.args)
        }
        ElementOp::Binary(op) => {
            use BinaryOp::*;
            step.dtype == DType::Float32
                && values_are_f32(&step.args)
                && matches!(op, Add | Subtract | Multiply | Divide | Maximum | Minimum)
        }
        ElementOp::Unary(op) => {
            step.dtype == DType::Float32
                && values_are_f32(&step.args)
                && float_map!(f32, op, |_f| true, else false)
        }
    };
    covered.then_some(op)
}

fn is_comparison(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(
        op,
        Equal | NotEqual | Less | LessEqual | Greater | GreaterEqual
    )
}

/// A comparison step: its tile is a mask of 1.0 and 0.0.
fn is_mask(step: &Step) -> bool {
    step.dtype == DType::Bool
        && matches!(step.element, Some(ElementOp::Binary(op)) if is_comparison(op))
}

/// `v` emptied, its allocation kept, as a vector of another element type
/// of the same size (borrows of another lifetime): the standard library
/// collects a mapped `IntoIter` into the same allocation when the sizes and
/// alignments agree. The map never runs, as nothing is left to map.
fn recycle<U, V>(mut v: Vec<U>) -> Vec<V> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector was cleared"))
        .collect()
}

/// Tile `t0..t0 + n` of a flat float32 input, or its one element.
fn input_tile<'a>(x: &'a Operand<'_>, t0: usize, n: usize) -> Result<Src<'a>> {
    if x.dtype != DType::Float32 {
        return Err(Error::runtime(
            "fused",
            "internal error: a non-float32 input tile",
        ));
    }
    let raw = x.data.raw::<f32>();
    let at = x.data.offset;
    let found = if x.shape.iter().product::<usize>() == 1 {
        raw.get(at).map(|&v| Src::Scalar(v))
    } else {
        raw.get(at + t0..at + t0 + n).map(Src::Tile)
    };
    found.ok_or_else(|| Error::runtime("fused", "internal error: an input tile is out of range"))
}

/// The bytes of an output chunk as float32 elements.
fn f32s_mut(bytes: &mut [u8]) -> Result<&mut [f32]> {
    // SAFETY: every bit pattern is a valid f32, and `align_to_mut` puts
    // only aligned whole elements in the middle part (checked to be all).
    let (head, mid, tail) = unsafe { bytes.align_to_mut::<f32>() };
    if head.is_empty() && tail.is_empty() {
        Ok(mid)
    } else {
        Err(Error::runtime(
            "fused",
            "internal error: a misaligned output chunk",
        ))
    }
}

#[inline(always)]
fn unary(op: UnaryOp, a: Src<'_>, out: &mut [f32]) {
    // `tile_op` admits no op outside `float_map`.
    float_map!(f32, op, |f| map(a, out, f), else out.fill(f32::NAN))
}

#[inline(always)]
fn binary(op: BinaryOp, a: Src<'_>, b: Src<'_>, out: &mut [f32]) {
    use BinaryOp::*;
    type F = f32;
    match op {
        Add => zip(a, b, out, <F as Arith>::add),
        Subtract => zip(a, b, out, <F as Arith>::sub),
        Multiply => zip(a, b, out, <F as Arith>::mul),
        Divide => zip(a, b, out, <F as Arith>::div),
        Maximum => zip(a, b, out, <F as Real>::max),
        Minimum => zip(a, b, out, <F as Real>::min),
        // Masks: the comparisons of the general path's kernels.
        Equal => zip(a, b, out, |x, y| mask(x == y)),
        NotEqual => zip(a, b, out, |x, y| mask(x != y)),
        Less => zip(a, b, out, |x, y| mask(<F as Real>::lt(x, y))),
        LessEqual => zip(a, b, out, |x, y| mask(<F as Real>::le(x, y))),
        Greater => zip(a, b, out, |x, y| mask(<F as Real>::lt(y, x))),
        // `tile_op` admits no other op.
        _ => zip(a, b, out, |x, y| mask(<F as Real>::le(y, x))),
    }
}

#[inline(always)]
fn mask(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

/// `where` on a mask tile.
#[inline(always)]
fn select(c: &[f32], x: Src<'_>, y: Src<'_>, out: &mut [f32]) {
    let pick = |c: f32, x: f32, y: f32| if c != 0.0 { x } else { y };
    match (x, y) {
        (Src::Tile(x), Src::Tile(y)) => {
            for (((o, &c), &x), &y) in out.iter_mut().zip(c).zip(x).zip(y) {
                *o = pick(c, x, y);
            }
        }
        (Src::Tile(x), Src::Scalar(y)) => {
            for ((o, &c), &x) in out.iter_mut().zip(c).zip(x) {
                *o = pick(c, x, y);
            }
        }
        (Src::Scalar(x), Src::Tile(y)) => {
            for ((o, &c), &y) in out.iter_mut().zip(c).zip(y) {
                *o = pick(c, x, y);
            }
        }
        (Src::Scalar(x), Src::Scalar(y)) => {
            for (o, &c) in out.iter_mut().zip(c) {
                *o = pick(c, x, y);
            }
        }
    }
}

#[inline(always)]
fn map(a: Src<'_>, out: &mut [f32], f: impl Fn(f32) -> f32 + Copy) {
    match a {
        Src::Tile(x) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = f(v);
            }
        }
        Src::Scalar(v) => out.fill(f(v)),
    }
}

#[inline(always)]
fn zip(a: Src<'_>, b: Src<'_>, out: &mut [f32], f: impl Fn(f32, f32) -> f32 + Copy) {
    match (a, b) {
        (Src::Tile(x), Src::Tile(y)) => {
            for ((o, &p), &q) in out.iter_mut().zip(x).zip(y) {
                *o = f(p, q);
            }
        }
        (Src::Tile(x), Src::Scalar(q)) => {
            for (o, &p) in out.iter_mut().zip(x) {
                *o = f(p, q);
            }
        }
        (Src::Scalar(p), Src::Tile(y)) => {
            for (o, &q) in out.iter_mut().zip(y) {
                *o = f(p, q);
            }
        }
        (Src::Scalar(p), Src::Scalar(q)) => out.fill(f(p, q)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::fused::last_reads;
    use std::sync::Arc;

    fn step(element: ElementOp, args: Vec<Reg>, dtype: DType) -> Step {
        let op: Arc<dyn crate::graph::primitive::Primitive> = match element {
            ElementOp::Unary(u) => Arc::new(crate::ops::unary::Unary(u)),
            ElementOp::Binary(b) => Arc::new(crate::ops::binary::Binary(b)),
            ElementOp::Select => Arc::new(crate::ops::select::Select),
        };
        Step {
            op,
            args,
            dtype,
            element: Some(element),
        }
    }

    #[test]
    fn no_step_writes_a_slot_it_reads_and_outputs_keep_theirs() {
        use Reg::*;
        let (mul, add) = (
            ElementOp::Binary(BinaryOp::Multiply),
            ElementOp::Binary(BinaryOp::Add),
        );
        let f32_ = DType::Float32;
        // 0 = x*y; 1 = exp(0); 2 = 0+1 (output); 3 = sqrt(2); 4 = 3*x (output)
        let steps = vec![
            step(mul, vec![Input(0), Input(1)], f32_),
            step(ElementOp::Unary(UnaryOp::Exp), vec![Step(0)], f32_),
            step(add, vec![Step(0), Step(1)], f32_),
            step(ElementOp::Unary(UnaryOp::Sqrt), vec![Step(2)], f32_),
            step(mul, vec![Step(3), Input(0)], f32_),
        ];
        let frees = last_reads(&steps, &[2, 4]);
        let program = TileProgram::new(&steps, &[], &[2, 4], &frees).expect("a float32 program");
        for (k, s) in program.steps.iter().enumerate() {
            for r in &s.args {
                if let Step(j) = *r {
                    assert_ne!(
                        program.steps[j].slot, s.slot,
                        "step {k} writes what it reads"
                    );
                }
            }
        }
        // An output's slot is written by its step alone (a run may map it
        // onto the output's destination).
        for &o in &[2, 4] {
            let kept = program.steps[o].slot;
            let writers = program.steps.iter().filter(|s| s.slot == kept).count();
            assert_eq!(writers, 1, "step {o}'s slot is shared");
        }
        assert_eq!(
            program.outputs,
            vec![program.steps[2].slot, program.steps[4].slot]
        );
        assert!(program.slots <= 4, "{} slots", program.slots);
    }

    #[test]
    fn masks_stay_inside_the_program_and_feed_only_where() {
        use Reg::*;
        let ge = ElementOp::Binary(BinaryOp::GreaterEqual);
        let (f32_, bool_) = (DType::Float32, DType::Bool);
        let mask = step(ge, vec![Input(0), Const(0)], bool_);
        let pick = step(ElementOp::Select, vec![Step(0), Input(1), Const(0)], f32_);
        let tile = |steps: &[crate::backend::cpu::fused::Step], outputs: &[usize]| {
            let frees = last_reads(steps, outputs);
            TileProgram::new(steps, &[], outputs, &frees)
        };
        assert!(tile(&[mask.clone(), pick.clone()], &[1]).is_some());
        // The mask as an output.
        assert!(tile(&[mask.clone(), pick], &[0, 1]).is_none());
        // A mask read as a number.
        let times = step(
            ElementOp::Binary(BinaryOp::Multiply),
            vec![Step(0), Input(1)],
            f32_,
        );
        assert!(tile(&[mask, times], &[1]).is_none());
        // A condition that is a program input (bool, not a mask tile).
        let from_input = step(ElementOp::Select, vec![Input(0), Input(1), Input(2)], f32_);
        assert!(tile(&[from_input], &[0]).is_none());
    }

    #[test]
    fn other_dtypes_and_ops_take_the_general_path() {
        let x = vec![Reg::Input(0)];
        let f64_exp = step(ElementOp::Unary(UnaryOp::Exp), x.clone(), DType::Float64);
        let none = [vec![]];
        assert!(TileProgram::new(&[f64_exp], &[], &[0], &none).is_none());
        let sin = step(ElementOp::Unary(UnaryOp::Sin), x.clone(), DType::Float32);
        assert!(TileProgram::new(&[sin], &[], &[0], &none).is_none());
        let pow = step(
            ElementOp::Binary(BinaryOp::Power),
            vec![Reg::Input(0), Reg::Input(1)],
            DType::Float32,
        );
        assert!(TileProgram::new(&[pow], &[], &[0], &none).is_none());
    }

    #[test]
    fn recycled_lists_keep_their_allocation() {
        let mut a = [1.0f32; 4];
        let mut b = [2.0f32; 4];
        let mut list: Vec<&mut [f32]> = Vec::with_capacity(8);
        list.push(&mut a);
        list.push(&mut b);
        let (ptr, cap) = (list.as_ptr() as usize, list.capacity());
        let again: Vec<&mut [f32]> = super::recycle(list);
        assert!(again.is_empty());
        assert_eq!((again.as_ptr() as usize, again.capacity()), (ptr, cap));
    }
}
