//! CPU kernels of the discrete Fourier transforms: 1-D `rustfft` plans per
//! length and thread, applied along each axis over the independent lines
//! (in parallel for large inputs). The semantics are in [`crate::ops::fft`].

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::{MIN_PAR_ELEMS, worth_splitting};
use crate::dtype::{Complex64, DType};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use rayon::prelude::*;
use rustfft::FftPlanner;
use std::cell::RefCell;
use std::sync::Arc;

type C = Complex64;

/// The transform of `x` over `axes` with `lengths` (the input already
/// padded or cropped to them): complex, or real with the half spectrum on the
/// last axis; `inverse` runs the inverse transforms (unnormalised: the
/// caller scales). `op` names the op in errors.
pub fn eval(
    op: &str,
    axes: &[usize],
    lengths: &[usize],
    real: bool,
    inverse: bool,
    x: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let mut buf: Vec<C> = match x.dtype {
        DType::Complex64 => x.data.to_vec::<C>(x.shape),
        DType::Float32 => x
            .data
            .to_vec::<f32>(x.shape)
            .into_iter()
            .map(|r| C::new(r, 0.0))
            .collect(),
        d => {
            return Err(Error::dtype(
                op,
                format!("expected complex64 or float32 input, got {d}"),
            ));
        }
    };
    let mut shape = x.shape.to_vec();
    let mut st = out_storage(out)?;
    if buf.is_empty() || out.shape.iter().product::<usize>() == 0 {
        return Ok(Data::contiguous(st, out.shape));
    }
    // The half-spectrum axis goes first in a forward real transform
    // (real lines in) and last in an inverse one (real lines out).
    let k = axes.len();
    let mut steps: Vec<(usize, usize, Line)> = Vec::with_capacity(k);
    for (i, (&axis, &n)) in axes.iter().zip(lengths).enumerate() {
        let half = real && i + 1 == k;
        let line = match (half, inverse) {
            (false, _) => Line::Complex,
            (true, false) => Line::RealToHalf,
            (true, true) => Line::HalfToReal,
        };
        steps.push((axis, n, line));
    }
    if real && !inverse {
        steps.rotate_right(1);
    }
    for (axis, n, line) in steps {
        let n_out = if line == Line::RealToHalf {
            n / 2 + 1
        } else {
            n
        };
        buf = transform_axis(&buf, &shape, axis, n, n_out, line, inverse);
        shape[axis] = n_out;
    }
    if out.dtype == DType::Float32 {
        let dst = st.as_mut_slice::<f32>();
        for (d, s) in dst.iter_mut().zip(&buf) {
            *d = s.re;
        }
    } else {
        st.as_mut_slice::<C>().copy_from_slice(&buf);
    }
    Ok(Data::contiguous(st, out.shape))
}

/// What one 1-D transform does to a line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Line {
    /// `n` complex values to `n`.
    Complex,
    /// `n` real values (held as complex) to `n / 2 + 1` complex ones.
    RealToHalf,
    /// `n / 2 + 1` complex values to `n` real ones (held as complex).
    HalfToReal,
}

thread_local! {
    static PLANNER: RefCell<FftPlanner<f32>> = RefCell::new(FftPlanner::new());
}

/// A (cached) rustfft plan for length `n`.
fn plan(n: usize, inverse: bool) -> Arc<dyn rustfft::Fft<f32>> {
    PLANNER.with(|p| {
        let mut p = p.borrow_mut();
        if inverse {
            p.plan_fft_inverse(n)
        } else {
            p.plan_fft_forward(n)
        }
    })
}

/// Per-task buffers for [`line_transform`].
struct Work {
    plan: Arc<dyn rustfft::Fft<f32>>,
    line: Vec<C>,
    scratch: Vec<C>,
}

impl Work {
    fn new(n: usize, inverse: bool) -> Work {
        let plan = plan(n, inverse);
        let scratch = vec![C::new(0.0, 0.0); plan.get_inplace_scratch_len()];
        Work {
            plan,
            line: vec![C::new(0.0, 0.0); n],
            scratch,
        }
    }

    /// Transforms `src` (the line's input) into `dst` (its output).
    fn run(&mut self, src: &[C], dst: &mut [C], n: usize, line: Line, inverse: bool) {
        let work = &mut self.line;
        match line {
            Line::Complex | Line::RealToHalf => work.copy_from_slice(src),
            Line::HalfToReal => {
                let m = src.len();
                work[..m].copy_from_slice(src);
                for k in 1..=(n - m) {
                    work[n - k] = src[k].conj();
                }
            }
        }
        self.plan.process_with_scratch(work, &mut self.scratch);
        let inv = if inverse { 1.0 / n as f32 } else { 1.0 };
        match line {
            Line::Complex if inverse => {
                for (d, s) in dst.iter_mut().zip(work.iter()) {
                    *d = s * inv;
                }
            }
            Line::Complex | Line::RealToHalf => dst.copy_from_slice(&work[..dst.len()]),
            Line::HalfToReal => {
                for (d, s) in dst.iter_mut().zip(work.iter()) {
                    *d = C::new(s.re * inv, 0.0);
                }
            }
        }
    }
}

/// Transforms every line of the contiguous `src` (of `shape`) along
/// `axis`: `shape[axis]` values in, `n_out` out. Lines are independent and
/// run in parallel for large inputs.
fn transform_axis(
    src: &[C],
    shape: &[usize],
    axis: usize,
    n: usize,
    n_out: usize,
    line: Line,
    inverse: bool,
) -> Vec<C> {
    let n_in = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let lines = outer * inner;
    let mut dst = vec![C::new(0.0, 0.0); lines * n_out];
    if lines == 0 {
        return dst;
    }
    let parallel = worth_splitting(lines * n.max(n_in));
    let lines_per_task = MIN_PAR_ELEMS.div_ceil(n.max(1)).max(1);
    if inner == 1 {
        // Lines are contiguous in both buffers.
        let task = |(src, dst): (&[C], &mut [C])| {
            let mut w = Work::new(n, inverse);
            for (s, d) in src.chunks(n_in).zip(dst.chunks_mut(n_out)) {
                w.run(s, d, n, line, inverse);
            }
        };
        if parallel {
            src.par_chunks(n_in * lines_per_task)
                .zip(dst.par_chunks_mut(n_out * lines_per_task))
                .for_each(task);
        } else {
            task((src, &mut dst));
        }
        return dst;
    }
    // Strided lines: transform into a [outer, inner, n_out] buffer, then
    // scatter into [outer, n_out, inner].
    let mut tmp = vec![C::new(0.0, 0.0); lines * n_out];
    let task = |first: usize, block: &mut [C]| {
        let mut w = Work::new(n, inverse);
        let mut gathered = vec![C::new(0.0, 0.0); n_in];
        for (j, d) in block.chunks_mut(n_out).enumerate() {
            let l = first + j;
            let (o, i) = (l / inner, l % inner);
            let base = o * n_in * inner + i;
            for (k, g) in gathered.iter_mut().enumerate() {
                *g = src[base + k * inner];
            }
            w.run(&gathered, d, n, line, inverse);
        }
    };
    if parallel {
        tmp.par_chunks_mut(n_out * lines_per_task)
            .enumerate()
            .for_each(|(c, b)| task(c * lines_per_task, b));
    } else {
        task(0, &mut tmp);
    }
    let scatter = |row: usize, d: &mut [C]| {
        let (o, k) = (row / n_out, row % n_out);
        for (i, v) in d.iter_mut().enumerate() {
            *v = tmp[(o * inner + i) * n_out + k];
        }
    };
    if parallel {
        dst.par_chunks_mut(inner)
            .enumerate()
            .for_each(|(r, d)| scatter(r, d));
    } else {
        for (r, d) in dst.chunks_mut(inner).enumerate() {
            scatter(r, d);
        }
    }
    dst
}
