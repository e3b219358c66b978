//! The register engine of fused programs: a chain of float unary and
//! arithmetic steps run block by block over L1-sized registers, every step
//! inlined into one vectorised function.
//!
//! The chunk engine ([`super::fused`]) calls each step's own kernel on
//! 8192-element chunks: a fresh pooled buffer per step per chunk, and every
//! cheap step (a multiply, a negation) a pass over 32 KiB that lives in L2.
//! Measured on 16M f32 (one core), such a step cost 2.7-2.9 ms, as much as
//! an unfused one. Here a task computes [`BLOCK`] elements of every step
//! before moving on, into registers it allocated once, so the cheap steps
//! cost a few loads and stores from L1, and there is no allocation or
//! dispatch per step beyond one `match`.
//!
//! Bitwise equality with the unfused ops holds because each step applies
//! the same element function the op's kernel maps
//! ([`FloatElement`] for unary ops, [`Arith`](crate::backend::cpu::binary::Arith)/[`Real`]/[`FloatMath`] for
//! binary ones), to the same elements, in the same order; `x ** 2` takes
//! the same product as the binary kernel's shortcut.

use crate::backend::cpu::binary::{BinaryOp, FloatMath, Real};
use crate::backend::cpu::parallel::simd;
use crate::backend::cpu::stream_store::{store_fence, stream_copy};
use crate::backend::cpu::unary::UnaryOp;
use crate::backend::cpu::unary::element::FloatElement;
use crate::dtype::DType;
use crate::graph::primitive::Operand;
use crate::graph::storage::Pod;

/// Elements per register: 512 f32 are 2 KiB, so a program of a dozen
/// steps keeps its registers in a 32 KiB L1 data cache.
pub(crate) const BLOCK: usize = 512;

/// Rows shorter than this (as the row input of a bias add) would cut
/// blocks too short to pay for their per-step dispatch; such programs stay
/// with the chunk engine.
pub(crate) const MIN_ROW: usize = 64;

/// What a fused step computes, when the register engine can run it: the
/// selector of a unary or binary elementwise op. The fusion pass records
/// it beside the step's primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaneOp {
    Unary(UnaryOp),
    Binary(BinaryOp),
}

impl LaneOp {
    /// True if the engine has this op's element function for floats.
    fn supported(self) -> bool {
        use UnaryOp::*;
        match self {
            LaneOp::Unary(op) => matches!(
                op,
                Abs | Negative
                    | Sign
                    | Square
                    | Sqrt
                    | Rsqrt
                    | Reciprocal
                    | Exp
                    | Expm1
                    | Log
                    | Log1p
                    | Log2
                    | Log10
                    | ArcSin
                    | ArcCos
                    | ArcTan
                    | Sinh
                    | Cosh
                    | Tanh
                    | ArcSinh
                    | ArcCosh
                    | ArcTanh
                    | Sigmoid
                    | Erf
                    | ErfInv
                    | Floor
                    | Ceil
                    | Trunc
                    | Round(0)
            ),
            LaneOp::Binary(op) => matches!(
                op,
                BinaryOp::Add
                    | BinaryOp::Subtract
                    | BinaryOp::Multiply
                    | BinaryOp::Divide
                    | BinaryOp::Power
                    | BinaryOp::Maximum
                    | BinaryOp::Minimum
                    | BinaryOp::LogAddExp
            ),
        }
    }
}

/// The float types the engine runs.
pub(crate) trait BlockFloat: FloatElement + FloatMath + Default {
    /// The dtype of this type.
    const BLOCK_DTYPE: DType;
}

impl BlockFloat for f32 {
    const BLOCK_DTYPE: DType = DType::Float32;
}

impl BlockFloat for f64 {
    const BLOCK_DTYPE: DType = DType::Float64;
}

/// Where a step reads an operand, resolved for one evaluation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Src {
    /// Input i, a contiguous slice of the output's length.
    Slice(usize),
    /// Row input r: one contiguous row of the output's last axis, the same
    /// for every row (a bias).
    Row(usize),
    /// Splat register s (an input or constant of one element).
    Splat(usize),
    /// The register of step k.
    Step(usize),
}

/// One step of a program the engine runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockStep {
    /// The element function; `x ** 2` is already `Square`.
    pub(crate) op: LaneOp,
    pub(crate) args: [Src; 2],
}

/// A fused program in the engine's terms, with its operands resolved for
/// one evaluation: whole contiguous input slices and broadcast scalars.
pub(crate) struct BlockPlan<'a, T> {
    steps: Vec<BlockStep>,
    slices: Vec<&'a [T]>,
    rows: Vec<&'a [T]>,
    /// The output's last axis: blocks never cross a row when `rows` is
    /// non-empty.
    row_len: usize,
    splats: Vec<T>,
    /// The steps whose registers are written out, in output order.
    outputs: Vec<usize>,
}

/// A step's operand before resolution: input i, a one-element constant's
/// value, or step k's result.
#[derive(Clone, Copy)]
pub(crate) enum PlanArg<'o, 'a> {
    Input(&'o Operand<'a>),
    Scalar(&'o Operand<'a>),
    Step(usize),
}

impl<'a, T: BlockFloat> BlockPlan<'a, T> {
    /// The plan for steps `(op, args, dtype)` producing outputs of
    /// `shape`, or `None` if some step, operand or dtype is outside the
    /// engine (the caller then runs the chunk engine). Inputs must be
    /// contiguous of the output's shape, single elements, or one
    /// contiguous row of the last axis (of at least [`MIN_ROW`] elements)
    /// broadcast over the others.
    pub(crate) fn new<'o>(
        steps: impl IntoIterator<Item = (Option<LaneOp>, Vec<PlanArg<'o, 'a>>, DType)>,
        outputs: &[usize],
        shape: &[usize],
    ) -> Option<BlockPlan<'a, T>>
    where
        'a: 'o,
    {
        let mut plan: BlockPlan<'a, T> = BlockPlan {
            steps: Vec::new(),
            slices: Vec::new(),
            rows: Vec::new(),
            row_len: shape.last().copied().unwrap_or(1),
            splats: Vec::new(),
            outputs: outputs.to_vec(),
        };
        for (op, args, dtype) in steps {
            let op = op.filter(|op| op.supported())?;
            if dtype != T::BLOCK_DTYPE {
                return None;
            }
            let mut srcs = [Src::Splat(0); 2];
            let arity = match op {
                LaneOp::Unary(_) => 1,
                LaneOp::Binary(_) => 2,
            };
            if args.len() != arity {
                return None;
            }
            for (src, arg) in srcs.iter_mut().zip(&args) {
                *src = plan.resolve(*arg, shape)?;
            }
            let op = match (op, srcs[1]) {
                (LaneOp::Binary(BinaryOp::Power), Src::Splat(s))
                    if FloatElement::widen(plan.splats[s]) == 2.0 =>
                {
                    // The binary kernel's shortcut: one rounded product.
                    LaneOp::Unary(UnaryOp::Square)
                }
                _ => op,
            };
            plan.steps.push(BlockStep { op, args: srcs });
        }
        let k = plan.steps.len();
        let short_rows = !plan.rows.is_empty() && plan.row_len < MIN_ROW;
        (k > 0 && !short_rows && plan.outputs.iter().all(|&o| o < k)).then_some(plan)
    }

    fn resolve(&mut self, arg: PlanArg<'_, 'a>, shape: &[usize]) -> Option<Src> {
        match arg {
            PlanArg::Step(k) => (k < self.steps.len()).then_some(Src::Step(k)),
            PlanArg::Input(x) | PlanArg::Scalar(x) if x.dtype != T::BLOCK_DTYPE => None,
            PlanArg::Scalar(x) => {
                let v = *x.data.raw::<T>().get(x.data.offset)?;
                self.splats.push(v);
                Some(Src::Splat(self.splats.len() - 1))
            }
            PlanArg::Input(x) if x.shape.iter().product::<usize>() == 1 => {
                self.resolve(PlanArg::Scalar(x), shape)
            }
            PlanArg::Input(x) => {
                let s = x.data.as_contiguous::<T>(x.shape)?;
                if x.shape == shape {
                    self.slices.push(s);
                    return Some(Src::Slice(self.slices.len() - 1));
                }
                let (&last, lead) = x.shape.split_last()?;
                let row = x.shape.len() <= shape.len()
                    && last == self.row_len
                    && lead.iter().all(|&d| d == 1);
                if !row || s.len() != last {
                    return None;
                }
                self.rows.push(s);
                Some(Src::Row(self.rows.len() - 1))
            }
        }
    }

    /// Computes elements `start..start + dsts[j].len()` of every output
    /// into `dsts` (one slice per output, all of one length), with
    /// non-temporal stores when `stream`.
    pub(crate) fn run(&self, start: usize, dsts: &mut [&mut [T]], stream: bool) {
        let len = dsts.first().map_or(0, |d| d.len());
        let k = self.steps.len();
        let mut regs = vec![T::default(); (k + self.splats.len()) * BLOCK];
        let (steps_regs, splat_regs) = regs.split_at_mut(k * BLOCK);
        for (reg, &v) in splat_regs.chunks_mut(BLOCK).zip(&self.splats) {
            reg.fill(v);
        }
        let splat_regs = &*splat_regs;
        simd(
            #[inline(always)]
            || {
                let mut b0 = 0;
                while b0 < len {
                    let col = (start + b0) % self.row_len;
                    let mut m = BLOCK.min(len - b0);
                    if !self.rows.is_empty() {
                        m = m.min(self.row_len - col);
                    }
                    for (i, step) in self.steps.iter().enumerate() {
                        let (done, rest) = steps_regs.split_at_mut(i * BLOCK);
                        let operand = |src: Src| -> &[T] {
                            match src {
                                Src::Slice(s) => &self.slices[s][start + b0..start + b0 + m],
                                Src::Row(r) => &self.rows[r][col..col + m],
                                Src::Splat(s) => &splat_regs[s * BLOCK..s * BLOCK + m],
                                Src::Step(j) => &done[j * BLOCK..j * BLOCK + m],
                            }
                        };
                        let out = &mut rest[..m];
                        match step.op {
                            LaneOp::Unary(op) => unary_block(op, operand(step.args[0]), out),
                            LaneOp::Binary(op) => {
                                binary_block(op, operand(step.args[0]), operand(step.args[1]), out)
                            }
                        }
                    }
                    for (dst, &o) in dsts.iter_mut().zip(&self.outputs) {
                        let src = &steps_regs[o * BLOCK..o * BLOCK + m];
                        let dst = &mut dst[b0..b0 + m];
                        if stream {
                            stream_copy(dst, src);
                        } else {
                            dst.copy_from_slice(src);
                        }
                    }
                    b0 += m;
                }
            },
        );
        if stream {
            store_fence();
        }
    }
}

/// `out[i] = f(x[i])`.
#[inline(always)]
fn each<T: Pod>(x: &[T], out: &mut [T], f: impl Fn(T) -> T) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f(v);
    }
}

/// `out[i] = f(a[i], b[i])`.
#[inline(always)]
fn each2<T: Pod>(a: &[T], b: &[T], out: &mut [T], f: impl Fn(T, T) -> T) {
    for ((o, &p), &q) in out.iter_mut().zip(a).zip(b) {
        *o = f(p, q);
    }
}

/// One block of a unary step (the ops [`LaneOp::supported`] admits).
#[inline(always)]
fn unary_block<T: BlockFloat>(op: UnaryOp, x: &[T], out: &mut [T]) {
    use UnaryOp::*;
    match op {
        Abs => each(x, out, T::abs),
        Negative => each(x, out, T::neg),
        Sign => each(x, out, T::sign),
        Square => each(x, out, T::square),
        Sqrt => each(x, out, T::sqrt),
        Rsqrt => each(x, out, T::rsqrt),
        Reciprocal => each(x, out, T::recip),
        Exp => each(x, out, T::exp),
        Expm1 => each(x, out, T::expm1),
        Log => each(x, out, T::ln),
        Log1p => each(x, out, T::ln_1p),
        Log2 => each(x, out, T::log2),
        Log10 => each(x, out, T::log10),
        ArcSin => each(x, out, T::asin),
        ArcCos => each(x, out, T::acos),
        ArcTan => each(x, out, T::atan),
        Sinh => each(x, out, T::sinh),
        Cosh => each(x, out, T::cosh),
        Tanh => each(x, out, T::tanh),
        ArcSinh => each(x, out, T::asinh),
        ArcCosh => each(x, out, T::acosh),
        ArcTanh => each(x, out, T::atanh),
        Sigmoid => each(x, out, T::sigmoid),
        Erf => each(x, out, T::erf),
        ErfInv => each(x, out, T::erfinv),
        Floor => each(x, out, T::floor),
        Ceil => each(x, out, T::ceil),
        Trunc => each(x, out, T::trunc),
        Round(_) => each(x, out, T::rint),
        // Not admitted by `supported`; never planned.
        Sin | Cos | Tan | LogicalNot | BitwiseInvert | IsNan | IsInf | IsFinite | Real | Imag
        | Conjugate => {}
    }
}

/// One block of a binary step (the ops [`LaneOp::supported`] admits).
#[inline(always)]
fn binary_block<T: BlockFloat>(op: BinaryOp, a: &[T], b: &[T], out: &mut [T]) {
    match op {
        BinaryOp::Add => each2(a, b, out, T::add),
        BinaryOp::Subtract => each2(a, b, out, T::sub),
        BinaryOp::Multiply => each2(a, b, out, T::mul),
        BinaryOp::Divide => each2(a, b, out, T::div),
        BinaryOp::Power => each2(a, b, out, T::pow),
        BinaryOp::Maximum => each2(a, b, out, <T as Real>::max),
        BinaryOp::Minimum => each2(a, b, out, <T as Real>::min),
        BinaryOp::LogAddExp => each2(a, b, out, T::logaddexp),
        // Not admitted by `supported`; never planned.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::array::Array;
    use crate::graph::layout::Data;

    fn operand<'a>(a: &'a Array, data: &'a Data) -> Operand<'a> {
        Operand {
            data,
            shape: a.shape(),
            dtype: a.dtype(),
        }
    }

    #[test]
    fn a_chain_runs_block_by_block_with_splats_and_two_outputs() {
        // (x * 0.5) then tanh; outputs: both steps. 1100 elements: two
        // full blocks and a partial one, split over two calls of `run`.
        let n = 1100;
        let v: Vec<f32> = (0..n).map(|i| i as f32 / 100.0 - 5.0).collect();
        let x = Array::from_slice(&v, &[n]).unwrap();
        let half = Array::from(0.5f32);
        let (dx, dh) = (x.data().unwrap(), half.data().unwrap());
        let (ox, oh) = (operand(&x, &dx), operand(&half, &dh));
        let steps = vec![
            (
                Some(LaneOp::Binary(BinaryOp::Multiply)),
                vec![PlanArg::Input(&ox), PlanArg::Scalar(&oh)],
                DType::Float32,
            ),
            (
                Some(LaneOp::Unary(UnaryOp::Tanh)),
                vec![PlanArg::Step(0)],
                DType::Float32,
            ),
        ];
        let plan = BlockPlan::<f32>::new(steps, &[1, 0], &[n]).expect("a plan");
        let (mut t, mut h) = (vec![0f32; n], vec![0f32; n]);
        for (start, end) in [(0, 700), (700, n)] {
            let mut dsts = [&mut t[start..end], &mut h[start..end]];
            plan.run(start, &mut dsts, start == 0);
        }
        for i in 0..n {
            assert_eq!(h[i], v[i] * 0.5, "element {i}");
            assert_eq!(t[i], FloatElement::tanh(v[i] * 0.5), "element {i}");
        }
    }

    #[test]
    fn programs_outside_the_engine_get_no_plan() {
        let x = Array::from_slice(&[1f32, 2.0, 3.0], &[3]).unwrap();
        let dx = x.data().unwrap();
        let ox = operand(&x, &dx);
        let plan = |op: Option<LaneOp>, dtype: DType, n: usize| {
            BlockPlan::<f32>::new([(op, vec![PlanArg::Input(&ox)], dtype)], &[0], &[n]).is_some()
        };
        assert!(plan(Some(LaneOp::Unary(UnaryOp::Exp)), DType::Float32, 3));
        // Trig takes its kernel's two-pass path; not a lane op at all;
        // another dtype; an input of another length; a wrong arity.
        assert!(!plan(Some(LaneOp::Unary(UnaryOp::Sin)), DType::Float32, 3));
        assert!(!plan(None, DType::Float32, 3));
        assert!(!plan(Some(LaneOp::Unary(UnaryOp::Exp)), DType::Float64, 3));
        assert!(!plan(Some(LaneOp::Unary(UnaryOp::Exp)), DType::Float32, 4));
        assert!(!plan(
            Some(LaneOp::Binary(BinaryOp::Add)),
            DType::Float32,
            3
        ));
        assert!(
            BlockPlan::<f64>::new(
                [(
                    Some(LaneOp::Unary(UnaryOp::Exp)),
                    vec![PlanArg::Input(&ox)],
                    DType::Float64
                )],
                &[0],
                &[3]
            )
            .is_none()
        );
    }

    #[test]
    fn a_bias_row_is_read_per_row_and_short_rows_get_no_plan() {
        // x [3, 600] + b [600]: blocks of 512 and 88 per row; `run` called
        // on a range that starts and ends mid-row.
        let (rows, d) = (3, 600);
        let v: Vec<f32> = (0..rows * d).map(|i| i as f32).collect();
        let bv: Vec<f32> = (0..d).map(|j| -(j as f32) / 2.0).collect();
        let x = Array::from_slice(&v, &[rows, d]).unwrap();
        let b = Array::from_slice(&bv, &[d]).unwrap();
        let (dx, db) = (x.data().unwrap(), b.data().unwrap());
        let (ox, ob) = (operand(&x, &dx), operand(&b, &db));
        let add = |shape: &[usize]| {
            BlockPlan::<f32>::new(
                [(
                    Some(LaneOp::Binary(BinaryOp::Add)),
                    vec![PlanArg::Input(&ox), PlanArg::Input(&ob)],
                    DType::Float32,
                )],
                &[0],
                shape,
            )
        };
        let plan = add(&[rows, d]).expect("a plan");
        let mut out = vec![0f32; rows * d];
        for (start, end) in [(0, 250), (250, 1300), (1300, rows * d)] {
            plan.run(start, &mut [&mut out[start..end]], false);
        }
        for (i, o) in out.iter().enumerate() {
            assert_eq!(*o, v[i] + bv[i % d], "element {i}");
        }
        // The same row under a last axis it does not match, or too short.
        assert!(add(&[d, 3]).is_none());
        let short = Array::from_slice(&bv[..10], &[10]).unwrap();
        let ds = short.data().unwrap();
        let os = operand(&short, &ds);
        let plan = BlockPlan::<f32>::new(
            [(
                Some(LaneOp::Binary(BinaryOp::Add)),
                vec![PlanArg::Input(&os), PlanArg::Input(&os)],
                DType::Float32,
            )],
            &[0],
            &[rows, 10],
        );
        assert!(plan.is_none(), "rows of 10 stay with the chunk engine");
    }
}
