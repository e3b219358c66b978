//! Cumulative scans: cumsum, cumprod, cummax, cummin, logcumsumexp.
//!
//! MLX semantics: `axis: None` scans the flattened array; `reverse` scans
//! from the end; `inclusive: false` shifts by one so each output combines
//! only the elements before it (the first output is the identity: 0, 1, the
//! lowest or the highest value). cumsum/cumprod of bool give `int32`, every
//! other dtype is kept (integers wrap); half floats accumulate in `f32` and
//! round each output once. cummax/cummin propagate NaN. logcumsumexp
//! computes in float32 for bool and integer inputs (half floats accumulate
//! in f32) and is an error for complex64.

use super::shape_rules::normalize_axis;
// The selector is the kernels' vocabulary; its public path stays here.
pub use crate::backend::cpu::scan::ScanOp;
use crate::backend::cpu::scan::{self, Dir};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

// The dtype rule of each scan (the selector lives with its kernels).
impl ScanOp {
    /// The output dtype for an input of `dtype`.
    ///
    /// ```
    /// use ferrox::{ops::scan::ScanOp, DType};
    /// assert_eq!(ScanOp::Sum.out_dtype(DType::Bool), DType::Int32);
    /// assert_eq!(ScanOp::Sum.out_dtype(DType::Int8), DType::Int8);
    /// assert_eq!(ScanOp::Max.out_dtype(DType::Bool), DType::Bool);
    /// ```
    pub fn out_dtype(self, dtype: DType) -> DType {
        match (self, dtype) {
            (ScanOp::Sum | ScanOp::Prod, DType::Bool) => DType::Int32,
            (_, d) => d,
        }
    }
}

/// A cumulative scan along `axis` (or the flattened array for `None`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Scan {
    /// What to accumulate.
    pub op: ScanOp,
    /// The scanned axis; `None` for the flattened array.
    pub axis: Option<usize>,
    /// Scan from the last element to the first.
    pub reverse: bool,
    /// Include each element in its own output.
    pub inclusive: bool,
}

impl crate::graph::export::Exportable for Scan {
    const KIND: &'static str = "scan";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.op.name())?;
        let axis = self.axis.map(|a| isize::try_from(a).unwrap_or(isize::MAX));
        scan_op(self.op, x, axis, self.reverse, self.inclusive)
    }
}

impl Primitive for Scan {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let dir = Dir {
            reverse: self.reverse,
            inclusive: self.inclusive,
        };
        scan::eval(self.op, self.axis, dir, &inputs[0], out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        match self.axis {
            None => Some(Ok(vec![shape.iter().product()])),
            Some(a) => (a < shape.len()).then(|| Ok(shape.to_vec())),
        }
    }
    /// cumsum: the reverse scan of the cotangent. cumprod: the reverse
    /// scan of `g * out`, divided by the input (not defined where the input
    /// is 0). cummax/cummin (inclusive only): the cotangent goes to the
    /// element holding the running extremum (the latest one on ties).
    fn vjp(
        &self,
        p: &[Array],
        g: &Array,
        output: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let x = &p[0];
        let (xf, axis) = self.flat(x)?;
        let gx = match self.op {
            ScanOp::Sum => self.rescan(ScanOp::Sum, g, axis, !self.reverse)?,
            ScanOp::Prod => self.cumprod_cotangent(&xf, g, output, axis)?,
            ScanOp::Max | ScanOp::Min => {
                let (h, valid) = self.holders(&xf, output, axis)?;
                let g = match valid {
                    Some(v) => {
                        crate::ops::select::r#where(&v, g, &crate::ops::creation::zeros_like(g)?)?
                    }
                    None => g.clone(),
                };
                crate::ops::indexing::scatter_along_axis(&g, &h, Some(axis), xf.shape())?
            }
            // d out_i / d x_j = exp(x_j - out_i) for each out_i that
            // includes x_j: the reverse scan of g * exp(-out), times
            // exp(x), computed in log space for each sign of g.
            ScanOp::LogAddExp => {
                let scan_back = |v: &Array| self.rescan(ScanOp::LogAddExp, v, axis, !self.reverse);
                signed_log_space(g, |log_g| {
                    let v = crate::ops::binary::subtract(log_g, output)?;
                    crate::ops::binary::add(&xf, &scan_back(&nan_to_neg_inf(&v)?)?)
                })?
            }
        };
        Ok(vec![
            grad_helpers::reshape_to(&gx, x.shape())?.astype(x.dtype())?,
        ])
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let (tf, axis) = self.flat(t)?;
        match self.op {
            ScanOp::Sum => self.rescan(ScanOp::Sum, &tf, axis, self.reverse),
            ScanOp::Prod => {
                let (xf, _) = self.flat(&p[0])?;
                let s = self.rescan(
                    ScanOp::Sum,
                    &crate::ops::binary::divide(&tf, &xf)?,
                    axis,
                    self.reverse,
                )?;
                crate::ops::binary::multiply(&s, output)
            }
            ScanOp::Max | ScanOp::Min => {
                let (xf, _) = self.flat(&p[0])?;
                let (h, valid) = self.holders(&xf, output, axis)?;
                let t = crate::ops::indexing::take_along_axis(&tf, &h, Some(axis as isize))?;
                match valid {
                    Some(v) => {
                        crate::ops::select::r#where(&v, &t, &crate::ops::creation::zeros_like(&t)?)
                    }
                    None => Ok(t),
                }
            }
            // d out_i = sum_j exp(x_j - out_i) t_j over the x_j out_i
            // includes; an output that includes nothing (-inf) has no
            // tangent.
            ScanOp::LogAddExp => {
                let (xf, _) = self.flat(&p[0])?;
                let empty = crate::ops::unary::isneginf(output)?;
                let dy = signed_log_space(&tf, |log_t| {
                    let v = self.rescan(
                        ScanOp::LogAddExp,
                        &crate::ops::binary::add(&xf, log_t)?,
                        axis,
                        self.reverse,
                    )?;
                    crate::ops::binary::subtract(&v, output)
                })?;
                crate::ops::select::r#where(&empty, &crate::ops::creation::zeros_like(&dy)?, &dy)
            }
        }
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            let axis = self.axis.map(|a| a as isize);
            let y = scan_op(self.op, &inputs[0], axis, self.reverse, self.inclusive)?;
            return Ok((y, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let y = match self.axis {
            Some(a) => scan_op(
                self.op,
                &x,
                Some(a as isize + 1),
                self.reverse,
                self.inclusive,
            )?,
            None => {
                let b = x.shape()[0];
                let flat = grad_helpers::reshape_to(&x, &[b, x.size() / b.max(1)])?;
                scan_op(self.op, &flat, Some(1), self.reverse, self.inclusive)?
            }
        };
        Ok((y, Some(0)))
    }
    crate::primitive_common!();
}

impl Scan {
    /// `x` as the scan reads it (flattened for `axis: None`) and the axis.
    fn flat(&self, x: &Array) -> Result<(Array, usize)> {
        match self.axis {
            Some(a) => Ok((x.clone(), a)),
            None => Ok((grad_helpers::reshape_to(x, &[x.size()])?, 0)),
        }
    }

    /// The cotangent of a cumprod's input without dividing by zero.
    ///
    /// With `z` the first zero of `x` in scan order: a position before `z`
    /// gets the reverse scan of `g * out` divided by its (nonzero) value;
    /// `z` itself gets the reverse scan of `g` times the products with `z`
    /// left out (the cumprod of `x` with that one zero set to 1); positions
    /// after `z` get 0, as every product holding them holds the zero too.
    /// Complex inputs get `g * conj(d out / dx)`.
    fn cumprod_cotangent(&self, xf: &Array, g: &Array, out: &Array, axis: usize) -> Result<Array> {
        use crate::ops::binary::{divide, equal, logical_and, multiply, subtract};
        use crate::ops::select::r#where;
        let complex = xf.dtype() == crate::dtype::DType::Complex64;
        let conj = |a: &Array| -> Result<Array> {
            if complex {
                crate::ops::unary::conjugate(a)
            } else {
                Ok(a.clone())
            }
        };
        let back = |v: &Array| self.rescan(ScanOp::Sum, v, axis, !self.reverse);
        let zero = crate::ops::creation::zeros_like(xf)?;
        let one = crate::ops::creation::ones_like(xf)?;
        let is_zero = equal(xf, &zero)?;
        let ax = Some(axis as isize);
        let zeros_through = cumsum(
            &is_zero.astype(crate::dtype::DType::Int32)?,
            ax,
            self.reverse,
            true,
        )?;
        let zeros_before = subtract(&zeros_through, &is_zero.astype(crate::dtype::DType::Int32)?)?;
        let none = crate::ops::creation::zeros(&[], crate::dtype::DType::Int32)?;
        let before = equal(&zeros_through, &none)?;
        let first_zero = logical_and(&is_zero, &equal(&zeros_before, &none)?)?;
        let ahead = divide(
            &back(&multiply(g, &conj(out)?)?)?,
            &conj(&r#where(&before, xf, &one)?)?,
        )?;
        let skipping = self.rescan(
            ScanOp::Prod,
            &r#where(&first_zero, &one, xf)?,
            axis,
            self.reverse,
        )?;
        let at_zero = back(&multiply(g, &conj(&skipping)?)?)?;
        r#where(&before, &ahead, &r#where(&first_zero, &at_zero, &zero)?)
    }

    /// A scan of `op` along `axis` of `v` in direction `reverse`, with this
    /// scan's inclusiveness.
    fn rescan(&self, op: ScanOp, v: &Array, axis: usize, reverse: bool) -> Result<Array> {
        scan_op(op, v, Some(axis as isize), reverse, self.inclusive)
    }

    /// For each output of a cummax/cummin, the index (int64) along `axis`
    /// of the element it came from (`out = take_along_axis(x, holders)`),
    /// and for an exclusive scan a mask of the outputs that came from an
    /// element at all (the first in scan order is the op's identity).
    fn holders(&self, x: &Array, out: &Array, axis: usize) -> Result<(Array, Option<Array>)> {
        let n = x.shape()[axis];
        if self.inclusive || n == 0 {
            return Ok((Self::inclusive_holders(x, out, axis, self.reverse)?, None));
        }
        // An exclusive output is the inclusive one shifted by one step in
        // scan order: its holder is the inclusive holder one step back.
        let incl = scan_op(self.op, x, Some(axis as isize), self.reverse, true)?;
        let h = Self::inclusive_holders(x, &incl, axis, self.reverse)?;
        let part = |lo: usize, hi: usize| {
            let mut start = vec![0isize; x.ndim()];
            let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
            start[axis] = lo as isize;
            stop[axis] = hi as isize;
            crate::ops::views::slice(&h, &start, &stop, &vec![1; x.ndim()])
        };
        let pos = crate::ops::creation::arange(0.0, n as f64, 1.0, DType::Int64)?;
        let mut shape = vec![1; x.ndim()];
        shape[axis] = n;
        let pos = grad_helpers::reshape_to(&pos, &shape)?;
        let ax = axis as isize;
        let (shifted, valid) = if self.reverse {
            (
                crate::ops::join::concatenate(&[part(1, n)?, part(n - 1, n)?], ax)?,
                crate::ops::binary::less(&pos, &Array::from(n as i64 - 1))?,
            )
        } else {
            (
                crate::ops::join::concatenate(&[part(0, 1)?, part(0, n - 1)?], ax)?,
                crate::ops::binary::greater(&pos, &Array::from(0i64))?,
            )
        };
        Ok((
            shifted,
            Some(crate::ops::views::broadcast_to(&valid, x.shape())?),
        ))
    }

    /// The holders of an inclusive scan's outputs `out` (see `holders`).
    fn inclusive_holders(x: &Array, out: &Array, axis: usize, reverse: bool) -> Result<Array> {
        let n = x.shape()[axis];
        let mut shape = vec![1; x.ndim()];
        shape[axis] = n;
        let idx = grad_helpers::reshape_to(
            &crate::ops::creation::arange(0.0, n as f64, 1.0, DType::Int64)?,
            &shape,
        )?;
        let holds = crate::ops::binary::equal(x, out)?;
        let ax = Some(axis as isize);
        // The latest holder at or before each position (scan order).
        if reverse {
            let none = Array::from(n as i64);
            let marked = crate::ops::select::r#where(&holds, &idx, &none)?.astype(DType::Int64)?;
            crate::ops::scan::cummin(&marked, ax, true, true)
        } else {
            let none = Array::from(-1i64);
            let marked = crate::ops::select::r#where(&holds, &idx, &none)?.astype(DType::Int64)?;
            crate::ops::scan::cummax(&marked, ax, false, true)
        }
    }
}

fn scan_op(
    op: ScanOp,
    a: &Array,
    axis: Option<isize>,
    reverse: bool,
    inclusive: bool,
) -> Result<Array> {
    let (axis, shape) = match axis {
        None => (None, vec![a.size()]),
        Some(ax) => (
            Some(normalize_axis(op.name(), ax, a.ndim())?),
            a.shape().to_vec(),
        ),
    };
    Ok(Array::from_op(
        shape,
        op.out_dtype(a.dtype()),
        Scan {
            op,
            axis,
            reverse,
            inclusive,
        },
        vec![a.clone()],
    ))
}

/// `exp(f(log(max(v, 0)))) - exp(f(log(max(-v, 0))))`: a linear map of
/// `v` evaluated in log space, one sign at a time (`f` gets `log|v|` of one
/// sign, `-inf` where `v` has the other sign or is 0).
fn signed_log_space(v: &Array, f: impl Fn(&Array) -> Result<Array>) -> Result<Array> {
    use crate::ops::binary::{maximum, subtract};
    use crate::ops::unary::{exp, log, negative};
    let zero = crate::ops::creation::zeros_like(v)?;
    let pos = exp(&f(&log(&maximum(v, &zero)?)?)?)?;
    let neg = exp(&f(&log(&maximum(&negative(v)?, &zero)?)?)?)?;
    subtract(&pos, &neg)
}

/// `v` with NaN (from `-inf - -inf`) replaced by `-inf`, the log of 0.
fn nan_to_neg_inf(v: &Array) -> Result<Array> {
    let neg_inf = Array::weak_f64(f64::NEG_INFINITY);
    crate::ops::select::r#where(&crate::ops::unary::isnan(v)?, &neg_inf, v)
}

/// Complex `logcumsumexp`: the log of the running sum of exp, shifted by
/// the largest real part along the axis so that exp does not overflow.
fn complex_logcumsumexp(
    a: &Array,
    axis: Option<isize>,
    reverse: bool,
    inclusive: bool,
) -> Result<Array> {
    use crate::ops::unary::{exp, log, real};
    let flat;
    let (x, ax) = match axis {
        Some(ax) => (a, ax),
        None => {
            flat = crate::ops::views::reshape(a, &[-1])?;
            (&flat, 0)
        }
    };
    // The shift cancels exactly, so its own derivative is zero.
    let m = crate::ops::reduce::max(&real(x)?, Some(&[ax]), true)?;
    let shifted = crate::ops::binary::subtract(x, &m)?;
    let s = cumsum(&exp(&shifted)?, Some(ax), reverse, inclusive)?;
    crate::ops::binary::add(&log(&s)?, &m)
}

/// Cumulative `log(sum(exp(a)))` along `axis` (`None`: the flattened
/// array), computed stably (running maximum and rescaled sum).
///
/// `reverse` scans from the end; `inclusive: false` excludes each element
/// from its own output (the first output is `-inf`). bool and integer
/// inputs compute in float32; complex64 takes the log of the running sum
/// of exp, shifted by the largest real part along the axis.
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 0.0, 1000.0], &[3])?;
/// let y = ferrox::logcumsumexp(&a, None, false, true)?.to_vec::<f32>()?;
/// assert!((y[1] - 2f32.ln()).abs() < 1e-6 && y[2] == 1000.0);
/// let e = ferrox::logcumsumexp(&a, None, false, false)?.to_vec::<f32>()?;
/// assert_eq!(e[0], f32::NEG_INFINITY);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn logcumsumexp(
    a: &Array,
    axis: Option<isize>,
    reverse: bool,
    inclusive: bool,
) -> Result<Array> {
    let x = match a.dtype() {
        // Complex: log of the cumulative sum of exp, shifted by the largest
        // real part along the axis so that exp does not overflow.
        DType::Complex64 => {
            return complex_logcumsumexp(a, axis, reverse, inclusive)
                .map_err(|e| crate::error::Error::new(e.kind(), "logcumsumexp", e.message()));
        }
        d if d.is_float() => a.clone(),
        _ => a.astype(DType::Float32)?,
    };
    scan_op(ScanOp::LogAddExp, &x, axis, reverse, inclusive)
}

/// Cumulative sum along `axis` (`None`: the flattened array).
///
/// `reverse` scans from the end; `inclusive: false` excludes each element
/// from its own output (the first output is 0). bool gives `int32`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// assert_eq!(ferrox::cumsum(&a, Some(1), false, true)?.to_vec::<i32>()?, vec![1, 3, 3, 7]);
/// assert_eq!(ferrox::cumsum(&a, None, false, true)?.to_vec::<i32>()?, vec![1, 3, 6, 10]);
/// assert_eq!(ferrox::cumsum(&a, None, true, false)?.to_vec::<i32>()?, vec![9, 7, 4, 0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cumsum(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Sum, a, axis, reverse, inclusive)
}

/// Cumulative product; see [`cumsum`] (the first exclusive output is 1).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
/// assert_eq!(ferrox::cumprod(&a, Some(0), false, true)?.to_vec::<f32>()?, vec![1.0, 2.0, 6.0, 24.0]);
/// assert_eq!(ferrox::cumprod(&a, Some(-1), false, false)?.to_vec::<f32>()?, vec![1.0, 1.0, 2.0, 6.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cumprod(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Prod, a, axis, reverse, inclusive)
}

/// Cumulative maximum; see [`cumsum`]. NaN propagates; the first exclusive
/// output is the dtype's lowest value (`-inf` for floats).
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i8, 1, 5, 3], &[4])?;
/// assert_eq!(ferrox::cummax(&a, None, false, true)?.to_vec::<i8>()?, vec![2, 2, 5, 5]);
/// assert_eq!(ferrox::cummax(&a, None, true, true)?.to_vec::<i8>()?, vec![5, 5, 5, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cummax(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Max, a, axis, reverse, inclusive)
}

/// Cumulative minimum; see [`cummax`] (the first exclusive output is the
/// highest value, `+inf` for floats).
///
/// ```
/// let a = ferrox::Array::from_slice(&[2.0f32, 1.0, 5.0], &[3])?;
/// assert_eq!(ferrox::cummin(&a, None, false, false)?.to_vec::<f32>()?, vec![f32::INFINITY, 2.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn cummin(a: &Array, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
    scan_op(ScanOp::Min, a, axis, reverse, inclusive)
}

impl Array {
    /// Method form of [`cumsum`].
    ///
    /// ```
    /// let a = ferrox::ones(&[3], ferrox::DType::Bool)?;
    /// assert_eq!(a.cumsum(None, false, true)?.to_vec::<i32>()?, vec![1, 2, 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn cumsum(&self, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
        cumsum(self, axis, reverse, inclusive)
    }
    /// Method form of [`logcumsumexp`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
    /// let y = a.logcumsumexp(None, false, true)?.to_vec::<f32>()?;
    /// assert!((y[1] - 2f32.ln()).abs() < 1e-6);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn logcumsumexp(
        &self,
        axis: Option<isize>,
        reverse: bool,
        inclusive: bool,
    ) -> Result<Array> {
        logcumsumexp(self, axis, reverse, inclusive)
    }
    /// Method form of [`cumprod`].
    ///
    /// ```
    /// let a = ferrox::full(&[3], 2.0, ferrox::DType::UInt8)?;
    /// assert_eq!(a.cumprod(None, false, true)?.to_vec::<u8>()?, vec![2, 4, 8]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn cumprod(&self, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
        cumprod(self, axis, reverse, inclusive)
    }
    /// Method form of [`cummax`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f64, 3.0, 2.0], &[3])?;
    /// assert_eq!(a.cummax(Some(0), false, true)?.to_vec::<f64>()?, vec![1.0, 3.0, 3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn cummax(&self, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
        cummax(self, axis, reverse, inclusive)
    }
    /// Method form of [`cummin`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[3i64, 1, 2], &[3])?;
    /// assert_eq!(a.cummin(Some(0), false, true)?.to_vec::<i64>()?, vec![3, 1, 1]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn cummin(&self, axis: Option<isize>, reverse: bool, inclusive: bool) -> Result<Array> {
        cummin(self, axis, reverse, inclusive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::scan::SCAN_CHUNK;
    use crate::error::ErrorKind;
    use crate::graph::layout::row_major_strides;
    use crate::graph::storage::Storage;
    use half::f16;
    use proptest::prelude::*;

    /// Naive scan of `values` (row-major over `shape`) along `axis`.
    fn naive(values: &[i64], shape: &[usize], axis: usize, op: ScanOp, dir: Dir) -> Vec<i64> {
        let n = shape[axis];
        let p: usize = shape[axis + 1..].iter().product();
        let mut out = vec![0; values.len()];
        for pre in 0..values.len() / (n * p) {
            for j in 0..p {
                let mut acc: Option<i64> = None;
                let order: Vec<usize> = if dir.reverse {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                for i in order {
                    let at = pre * n * p + i * p + j;
                    let x = values[at];
                    let combined = match (acc, op) {
                        (None, _) => x,
                        (Some(a), ScanOp::Sum) => a.wrapping_add(x),
                        (Some(a), ScanOp::Prod) => a.wrapping_mul(x),
                        (Some(a), ScanOp::Max) => a.max(x),
                        (Some(a), ScanOp::Min) => a.min(x),
                        (Some(_), ScanOp::LogAddExp) => {
                            panic!("no integer reference for logcumsumexp")
                        }
                    };
                    let identity = match op {
                        ScanOp::Sum => 0,
                        ScanOp::Prod => 1,
                        ScanOp::Max => i64::MIN,
                        ScanOp::Min => i64::MAX,
                        ScanOp::LogAddExp => i64::MIN,
                    };
                    out[at] = if dir.inclusive {
                        combined
                    } else {
                        acc.unwrap_or(identity)
                    };
                    acc = Some(combined);
                }
            }
        }
        out
    }

    fn eval_view(prim: &Scan, values: &[i64], shape: &[usize], strides: Vec<isize>) -> Vec<i64> {
        let mut st = Storage::new(std::mem::size_of_val(values), false).unwrap();
        st.as_mut_slice::<i64>().copy_from_slice(values);
        let data = Data {
            storage: std::sync::Arc::new(st),
            strides,
            offset: 0,
        };
        let x = Operand {
            data: &data,
            shape,
            dtype: DType::Int64,
        };
        let out_shape = if prim.axis.is_some() {
            shape.to_vec()
        } else {
            vec![values.len()]
        };
        let d = prim
            .eval_cpu(
                &[x],
                OutSpec {
                    shape: &out_shape,
                    dtype: DType::Int64,
                },
            )
            .unwrap();
        d.to_vec::<i64>(&out_shape)
    }

    #[test]
    fn dtypes_and_validation() {
        let b = Array::from_slice(&[true, false, true], &[3]).unwrap();
        assert_eq!(
            cumsum(&b, None, false, true)
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            vec![1, 1, 2]
        );
        assert_eq!(cummax(&b, None, false, true).unwrap().dtype(), DType::Bool);
        let i = Array::from_slice(&[100i8, 100], &[2]).unwrap();
        assert_eq!(
            cumsum(&i, None, false, true)
                .unwrap()
                .to_vec::<i8>()
                .unwrap(),
            vec![100, -56]
        );
        let e = cumsum(&i, Some(1), false, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Axis);
        assert!(e.to_string().starts_with("cumsum: axis 1"), "{e}");
        let s = Array::scalar(3.0f32);
        assert_eq!(cumsum(&s, None, false, true).unwrap().shape(), &[1]);
        let z = crate::ops::creation::zeros(&[0, 2], DType::Float32).unwrap();
        assert_eq!(cumprod(&z, Some(0), false, true).unwrap().shape(), &[0, 2]);
    }

    #[test]
    fn nan_and_half_floats() {
        let a = Array::from_slice(&[1.0f32, f32::NAN, 3.0], &[3]).unwrap();
        let m = cummax(&a, None, false, true)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(m[0] == 1.0 && m[1].is_nan() && m[2].is_nan());
        let h = crate::ops::creation::ones(&[4096], DType::Float16).unwrap();
        let c = cumsum(&h, None, false, true)
            .unwrap()
            .to_vec::<f16>()
            .unwrap();
        assert_eq!(c[4095], f16::from_f32(4096.0));
        let e = cummin(&a, None, true, false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(e[2] == f32::INFINITY && e[1] == 3.0 && e[0].is_nan());
    }

    #[test]
    fn long_lines_scan_in_chunks() {
        let n = 5 * SCAN_CHUNK + 123;
        let a = crate::ops::creation::ones(&[n], DType::Int32).unwrap();
        for (rev, inc) in [(false, true), (false, false), (true, true), (true, false)] {
            let c = cumsum(&a, Some(0), rev, inc)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            for (i, &v) in c.iter().enumerate() {
                let before = if rev { n - 1 - i } else { i } as i32;
                assert_eq!(v, before + inc as i32, "rev {rev} inc {inc} at {i}");
            }
        }
        let f = crate::ops::creation::full(&[n], 0.5, DType::Float32).unwrap();
        let c = cumsum(&f, None, false, true)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(c[n - 1], n as f32 * 0.5);
    }

    fn case() -> impl Strategy<Value = (Vec<usize>, usize, Vec<usize>, bool, bool, usize)> {
        prop::collection::vec(1usize..7, 1..4).prop_flat_map(|shape| {
            let nd = shape.len();
            (
                Just(shape),
                0..nd,
                Just((0..nd).collect::<Vec<usize>>()).prop_shuffle(),
                any::<bool>(),
                any::<bool>(),
                0usize..4,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn scans_match_naive_loops((shape, axis, perm, reverse, inclusive, op_pick) in case(), big in any::<bool>()) {
            let mut shape = shape;
            if big {
                shape[axis] *= 1500; // long lines: parallel paths
            }
            let op = [ScanOp::Sum, ScanOp::Prod, ScanOp::Max, ScanOp::Min][op_pick];
            let n: usize = shape.iter().product();
            let values: Vec<i64> = (0..n).map(|i| ((i * 7919) % 13) as i64 - 6).collect();
            let dir = Dir { reverse, inclusive };
            let want = naive(&values, &shape, axis, op, dir);
            let prim = Scan { op, axis: Some(axis), reverse, inclusive };
            prop_assert_eq!(eval_view(&prim, &values, &shape, row_major_strides(&shape)), want.clone());
            // The same logical array stored in permuted order.
            let pshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            let pstrides = row_major_strides(&pshape);
            let mut strides = vec![0isize; shape.len()];
            for (i, &p) in perm.iter().enumerate() {
                strides[p] = pstrides[i];
            }
            let mut store = vec![0i64; n];
            let lstrides = row_major_strides(&shape);
            for (lin, &v) in values.iter().enumerate() {
                let off: isize = (0..shape.len()).map(|d| (lin as isize / lstrides[d]) % shape[d] as isize * strides[d]).sum();
                store[off as usize] = v;
            }
            prop_assert_eq!(eval_view(&prim, &store, &shape, strides.clone()), want);
            // Flattened: a scan of the row-major order.
            let flat = Scan { op, axis: None, reverse, inclusive };
            let want_flat = naive(&values, &[n], 0, op, dir);
            prop_assert_eq!(eval_view(&flat, &store, &shape, strides), want_flat);
        }
    }

    #[test]
    fn logcumsumexp_matches_a_loop_and_its_gradients_match_finite_differences() {
        let xs = [0.3f64, -1.2, 2.5, 0.0, 40.0, -3.0];
        let x = Array::from_slice(&xs, &[6]).unwrap();
        for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)] {
            let y = logcumsumexp(&x, None, reverse, inclusive)
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            for (i, &yi) in y.iter().enumerate() {
                let included: Vec<f64> = (0..6)
                    .filter(|&j| match (reverse, inclusive) {
                        (false, true) => j <= i,
                        (false, false) => j < i,
                        (true, true) => j >= i,
                        (true, false) => j > i,
                    })
                    .map(|j| xs[j])
                    .collect();
                let want = included.iter().map(|v| v.exp()).sum::<f64>().ln();
                assert!(
                    (yi - want).abs() < 1e-9 || (yi == want),
                    "{reverse} {inclusive} {i}: {yi} vs {want}"
                );
            }
            let w = Array::from_slice(&[1.0f64, -2.0, 0.5, 3.0, -1.0, 0.25], &[6]).unwrap();
            let f = move |a: &[Array]| -> Result<Vec<Array>> {
                let y = logcumsumexp(&a[0], None, reverse, inclusive)?;
                let y = crate::ops::select::r#where(
                    &crate::ops::unary::isneginf(&y)?,
                    &Array::from(0.0f64),
                    &y,
                )?;
                Ok(vec![crate::ops::reduce::sum(
                    &crate::ops::binary::multiply(&y, &w)?,
                    None,
                    false,
                )?])
            };
            let g =
                crate::transforms::vjp::grad(f.clone(), &[0])(std::slice::from_ref(&x)).unwrap();
            let g = g[0].to_vec::<f64>().unwrap();
            let t = Array::from_slice(&[0.5f64, 1.0, -1.0, 2.0, 0.1, -0.3], &[6]).unwrap();
            let (_, jv) = crate::transforms::jvp::jvp(
                f.clone(),
                std::slice::from_ref(&x),
                std::slice::from_ref(&t),
            )
            .unwrap();
            let jv = jv[0].item::<f64>().unwrap();
            let mut jv_fd = 0.0;
            for j in 0..6 {
                let h = 1e-6;
                let at = |d: f64| {
                    let mut v = xs;
                    v[j] += d;
                    f(&[Array::from_slice(&v, &[6]).unwrap()]).unwrap()[0]
                        .item::<f64>()
                        .unwrap()
                };
                let fd = (at(h) - at(-h)) / (2.0 * h);
                assert!(
                    (g[j] - fd).abs() < 1e-5,
                    "{reverse} {inclusive} grad {j}: {} vs {fd}",
                    g[j]
                );
                jv_fd += fd * [0.5, 1.0, -1.0, 2.0, 0.1, -0.3][j];
            }
            assert!((jv - jv_fd).abs() < 1e-5, "jvp {jv} vs {jv_fd}");
        }
        // Complex: log of the running sum of exp (one element: itself).
        let z = crate::dtype::Complex64::new(0.5, 1.0);
        let got = logcumsumexp(
            &Array::from_slice(&[z, z], &[2]).unwrap(),
            None,
            false,
            true,
        )
        .unwrap()
        .to_vec::<crate::dtype::Complex64>()
        .unwrap();
        assert!((got[0] - z).norm() < 1e-6, "{got:?}");
        let two = z + crate::dtype::Complex64::new(std::f32::consts::LN_2, 0.0);
        assert!((got[1] - two).norm() < 1e-5, "{got:?}");
        let i = logcumsumexp(
            &Array::from_slice(&[1i32, 2], &[2]).unwrap(),
            None,
            false,
            true,
        )
        .unwrap();
        assert_eq!(i.dtype(), DType::Float32);
    }

    /// d/dx_k of sum_i g_i * cumprod(x)_i by brute force: the sum over
    /// i >= k (i > k when exclusive) of g_i times the product with x_k
    /// left out.
    fn cumprod_grad_reference(x: &[f64], g: &[f64], reverse: bool, inclusive: bool) -> Vec<f64> {
        let n = x.len();
        let order: Vec<usize> = if reverse {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        let pos = |i: usize| order.iter().position(|&o| o == i).unwrap_or(0);
        (0..n)
            .map(|k| {
                (0..n)
                    .filter(|&i| {
                        if inclusive {
                            pos(i) >= pos(k)
                        } else {
                            pos(i) > pos(k)
                        }
                    })
                    .map(|i| {
                        let prod: f64 = (0..n)
                            .filter(|&j| {
                                j != k
                                    && (if inclusive {
                                        pos(j) <= pos(i)
                                    } else {
                                        pos(j) < pos(i)
                                    })
                            })
                            .map(|j| x[j])
                            .product();
                        g[i] * prod
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn cumprod_gradient_is_exact_with_zeros() -> Result<()> {
        let cases: [&[f64]; 4] = [
            &[2.0, 1.0, 2.0, 2.0, 3.0],
            &[2.0, 0.0, 2.0, 2.0, 3.0],
            &[2.0, 0.0, 2.0, 0.0, 3.0],
            &[0.0, 0.0, 1.5, -2.0, 0.0],
        ];
        let g = [1.0, -0.5, 2.0, 0.25, 3.0];
        for x in cases {
            for (reverse, inclusive) in [(false, true), (true, true), (false, false), (true, false)]
            {
                let xa = Array::from_slice(x, &[5])?;
                let ga = Array::from_slice(&g, &[5])?;
                let (_, vjps) = crate::transforms::vjp::vjp(
                    move |xs: &[Array]| Ok(vec![cumprod(&xs[0], Some(0), reverse, inclusive)?]),
                    &[xa],
                    &[ga],
                )?;
                let got = vjps[0].to_vec::<f64>()?;
                let want = cumprod_grad_reference(x, &g, reverse, inclusive);
                assert_eq!(got, want, "x {x:?} reverse {reverse} inclusive {inclusive}");
            }
        }
        Ok(())
    }
}
