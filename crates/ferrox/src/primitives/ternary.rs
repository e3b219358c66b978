//! Selection and closeness: `where`, `clip`, `isclose`, `allclose`,
//! `array_equal` and `nan_to_num`.
//!
//! `where` is the one three-input elementwise op: a [`Select`] primitive
//! with its own contiguous fast path (condition contiguous, each value
//! operand contiguous or a single element), split over cores and
//! vectorised like the binary fast paths; anything else walks the
//! broadcast strides. `clip` composes `maximum` and `minimum` (as MLX
//! does). The closeness tests share one element predicate ([`Closeness`]):
//! `isclose` maps it, `allclose` and `array_equal` fold it straight into a
//! 0-d bool without materialising the elementwise result.

use super::binary::{maximum, minimum, result_dtype};
use super::shape_rules::{broadcast_many, broadcast_shapes};
use super::{OutSpec, Operand, Primitive};
use crate::array::Data;
use crate::backend::cpu::elementwise::{
    binary, broadcast_strides, for_each_offset2, out_storage, ternary, unary,
};
use crate::backend::cpu::parallel::{chunk_len, simd, worth_splitting};
use crate::dtype::Element;
use crate::runtime::memory::Pod;
use crate::{with_dtype, Array, Complex64, DType, Error, Result};
use rayon::prelude::*;

// ---------------------------------------------------------------------------
// where
// ---------------------------------------------------------------------------

/// Picks `x` where the condition is true and `y` elsewhere. Inputs:
/// condition (bool), x, y (one dtype, the output's).
#[derive(Debug, Clone, PartialEq)]
pub struct Select;

impl Primitive for Select {
    fn name(&self) -> &'static str {
        "where"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [c, x, y] = inputs else {
            return Err(Error::runtime("where", format!("expected 3 inputs, got {}", inputs.len())));
        };
        if c.dtype != DType::Bool || x.dtype != out.dtype || y.dtype != out.dtype {
            return Err(Error::runtime(
                "where",
                format!("internal error: input dtypes {}, {}, {} for output {}", c.dtype, x.dtype, y.dtype, out.dtype),
            ));
        }
        with_dtype!(out.dtype, T => select_kernel::<T>(c, x, y, out))
    }
    primitive_common!();
}

/// A value operand of the fast path: a full contiguous slice or one element.
#[derive(Clone, Copy)]
enum Lane<'a, T> {
    Slice(&'a [T]),
    Splat(T),
}

impl<'a, T: Pod> Lane<'a, T> {
    /// The operand as a lane of `out_shape`, if it is one.
    fn of(op: &Operand<'a>, out_shape: &[usize]) -> Option<Self> {
        if op.shape.iter().product::<usize>() == 1 {
            return op.data.raw::<T>().get(op.data.offset).map(|&v| Lane::Splat(v));
        }
        if op.shape != out_shape {
            return None;
        }
        op.data.as_contiguous::<T>(op.shape).map(Lane::Slice)
    }
}

fn select_kernel<T: Pod>(c: &Operand<'_>, x: &Operand<'_>, y: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    let cond = if c.shape == out.shape { c.data.as_contiguous::<bool>(c.shape) } else { None };
    let (Some(cond), Some(xl), Some(yl)) = (cond, Lane::<T>::of(x, out.shape), Lane::<T>::of(y, out.shape)) else {
        return ternary(c, x, y, out, |c: bool, x: T, y: T| if c { x } else { y });
    };
    let mut storage = out_storage(out)?;
    let dst = storage.as_mut_slice::<T>();
    // Each combination gets its own loop so that it vectorises.
    match (xl, yl) {
        (Lane::Slice(xs), Lane::Slice(ys)) => chunked(cond, dst, |c, start, d| {
            let (xs, ys) = (&xs[start..start + d.len()], &ys[start..start + d.len()]);
            for (((o, &c), &x), &y) in d.iter_mut().zip(c).zip(xs).zip(ys) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Slice(xs), Lane::Splat(y)) => chunked(cond, dst, |c, start, d| {
            let xs = &xs[start..start + d.len()];
            for ((o, &c), &x) in d.iter_mut().zip(c).zip(xs) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Splat(x), Lane::Slice(ys)) => chunked(cond, dst, |c, start, d| {
            let ys = &ys[start..start + d.len()];
            for ((o, &c), &y) in d.iter_mut().zip(c).zip(ys) {
                *o = if c { x } else { y };
            }
        }),
        (Lane::Splat(x), Lane::Splat(y)) => chunked(cond, dst, |c, _, d| {
            for (o, &c) in d.iter_mut().zip(c) {
                *o = if c { x } else { y };
            }
        }),
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// Runs `body(cond_chunk, start, dst_chunk)` over matching chunks of `cond`
/// and `dst` (`start` is the chunk's first index), in parallel when large
/// and under the best SIMD instruction set. `cond.len() == dst.len()`.
fn chunked<T: Pod>(cond: &[bool], dst: &mut [T], body: impl Fn(&[bool], usize, &mut [T]) + Sync) {
    let run = |c: &[bool], start: usize, d: &mut [T]| simd(|| body(c, start, d));
    if worth_splitting(dst.len()) {
        let len = chunk_len(dst.len());
        dst.par_chunks_mut(len)
            .zip(cond.par_chunks(len))
            .enumerate()
            .for_each(|(k, (d, c))| run(c, k * len, d));
    } else {
        run(cond, 0, dst);
    }
}

/// Elementwise selection: `x` where `condition` is true (non-zero), `y`
/// elsewhere. The three inputs broadcast together; `x` and `y` promote to
/// a common dtype (weak scalars adopt the other's dtype). MLX's `where`
/// (`where` is a Rust keyword, hence the raw identifier).
///
/// ```
/// use ferrox::{r#where, Array};
/// let c = Array::from_slice(&[true, false, true], &[3])?;
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// assert_eq!(r#where(&c, &x, &Array::from(0.0))?.to_vec::<f32>()?, vec![1.0, 0.0, 3.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn r#where(condition: &Array, x: &Array, y: &Array) -> Result<Array> {
    let shape = broadcast_many("where", &[condition, x, y])?;
    let dtype = result_dtype(x, y);
    let inputs = vec![condition.astype(DType::Bool)?, x.astype(dtype)?, y.astype(dtype)?];
    Ok(Array::from_op(shape, dtype, Select, inputs))
}

// ---------------------------------------------------------------------------
// clip
// ---------------------------------------------------------------------------

/// Limits `a` to `[min, max]`: `minimum(maximum(a, min), max)`, with either
/// bound optional (not both). Bounds broadcast against `a` and take part in
/// promotion; NaNs propagate; where `min > max` the result is `max`.
/// Complex inputs are a dtype error.
///
/// ```
/// use ferrox::{clip, Array};
/// let a = Array::from_slice(&[-2.0f32, 0.5, 3.0], &[3])?;
/// let c = clip(&a, Some(&Array::from(0.0)), Some(&Array::from(1.0)))?;
/// assert_eq!(c.to_vec::<f32>()?, vec![0.0, 0.5, 1.0]);
/// assert!(clip(&a, None, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn clip(a: &Array, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
    let lower = match min {
        Some(lo) => maximum(a, lo)?,
        None => a.clone(),
    };
    match max {
        Some(hi) => minimum(&lower, hi),
        None if min.is_some() => Ok(lower),
        None => Err(Error::value("clip", "at least one of min and max must be given")),
    }
}

// ---------------------------------------------------------------------------
// Closeness
// ---------------------------------------------------------------------------

/// The element test shared by `isclose`, `allclose` and `array_equal`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Closeness {
    /// numpy's `isclose`: `a == b`, or both finite and
    /// `|a - b| <= atol + rtol * |b|`, or (with `equal_nan`) both NaN.
    /// Computed in f64 (complex: on magnitudes), so integer and low
    /// precision inputs are compared exactly.
    Close {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Whether two NaNs count as close.
        equal_nan: bool,
    },
    /// Exact equality, optionally counting two NaNs as equal.
    Equal {
        /// Whether two NaNs count as equal.
        equal_nan: bool,
    },
}

impl Closeness {
    /// Applies the test to one pair of elements.
    #[inline(always)]
    fn test<T: Element>(self, a: T, b: T) -> bool {
        match self {
            Closeness::Close { rtol, atol, equal_nan } => {
                if T::DTYPE == DType::Complex64 {
                    close_complex(a.to_c64(), b.to_c64(), rtol, atol, equal_nan)
                } else {
                    close_real(a.to_f64(), b.to_f64(), rtol, atol, equal_nan)
                }
            }
            // `x != x` is NaN for floats and for complex with a NaN part.
            #[allow(clippy::eq_op)]
            Closeness::Equal { equal_nan } => a == b || (equal_nan && a != a && b != b),
        }
    }
}

#[inline(always)]
fn close_real(a: f64, b: f64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    a == b
        || (a.is_finite() && b.is_finite() && (a - b).abs() <= atol + rtol * b.abs())
        || (equal_nan && a.is_nan() && b.is_nan())
}

fn close_complex(a: Complex64, b: Complex64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    let (ar, ai, br, bi) = (a.re as f64, a.im as f64, b.re as f64, b.im as f64);
    let finite = ar.is_finite() && ai.is_finite() && br.is_finite() && bi.is_finite();
    let nan = |r: f64, i: f64| r.is_nan() || i.is_nan();
    a == b
        || (finite && (ar - br).hypot(ai - bi) <= atol + rtol * br.hypot(bi))
        || (equal_nan && nan(ar, ai) && nan(br, bi))
}

/// Elementwise closeness test (bool output). Inputs broadcast and promote
/// to a common dtype first.
#[derive(Debug, Clone, PartialEq)]
pub struct IsClose(pub Closeness);

impl Primitive for IsClose {
    fn name(&self) -> &'static str {
        "isclose"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, b) = same_dtype_pair("isclose", inputs)?;
        let test = self.0;
        with_dtype!(a.dtype, T => binary(a, b, out, move |x: T, y: T| test.test(x, y)))
    }
    primitive_common!();
}

/// True (a 0-d bool) if the test holds for every broadcast pair.
#[derive(Debug, Clone, PartialEq)]
pub struct AllPairs(pub Closeness);

impl Primitive for AllPairs {
    fn name(&self) -> &'static str {
        match self.0 {
            Closeness::Close { .. } => "allclose",
            Closeness::Equal { .. } => "array_equal",
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (a, b) = same_dtype_pair(self.name(), inputs)?;
        let shape = broadcast_shapes(self.name(), a.shape, b.shape)?;
        let test = self.0;
        let all = with_dtype!(a.dtype, T => all_pairs::<T>(a, b, &shape, test));
        let mut storage = out_storage(out)?;
        if let Some(o) = storage.as_mut_slice::<bool>().first_mut() {
            *o = all;
        }
        Ok(Data::contiguous(storage, out.shape))
    }
    primitive_common!();
}

fn all_pairs<T: Element + Pod>(a: &Operand<'_>, b: &Operand<'_>, shape: &[usize], test: Closeness) -> bool {
    let (ra, rb) = (a.data.raw::<T>(), b.data.raw::<T>());
    let (sa, sb) = (broadcast_strides(a, shape), broadcast_strides(b, shape));
    let mut all = true;
    for_each_offset2(shape, &sa, a.data.offset, &sb, b.data.offset, |oa, ob| {
        all &= test.test(ra[oa], rb[ob]);
    });
    all
}

fn same_dtype_pair<'a, 'b>(op: &str, inputs: &'b [Operand<'a>]) -> Result<(&'b Operand<'a>, &'b Operand<'a>)> {
    match inputs {
        [a, b] if a.dtype == b.dtype => Ok((a, b)),
        _ => Err(Error::runtime(op, "internal error: expected two inputs of one dtype")),
    }
}

/// Validates the shapes and promotes `a` and `b` to their common dtype.
fn promote_pair(op: &str, a: &Array, b: &Array) -> Result<(Vec<usize>, Array, Array)> {
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dtype = result_dtype(a, b);
    Ok((shape, a.astype(dtype)?, b.astype(dtype)?))
}

/// Elementwise `|a - b| <= atol + rtol * |b|` (bool output), numpy's
/// `isclose`: equal values (including infinities of one sign) are always
/// close, infinities are otherwise never close, and two NaNs are close only
/// with `equal_nan`. Inputs broadcast; the test runs in f64 (complex: on
/// magnitudes). MLX's defaults are `rtol = 1e-5`, `atol = 1e-8`.
///
/// ```
/// use ferrox::{isclose, Array};
/// let a = Array::from_slice(&[1.0f32, 1.1, f32::NAN], &[3])?;
/// let b = Array::from_slice(&[1.000001f32, 1.0, f32::NAN], &[3])?;
/// assert_eq!(isclose(&a, &b, 1e-5, 1e-8, false)?.to_vec::<bool>()?, vec![true, false, false]);
/// assert_eq!(isclose(&a, &b, 1e-5, 1e-8, true)?.to_vec::<bool>()?, vec![true, false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn isclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let (shape, a, b) = promote_pair("isclose", a, b)?;
    Ok(Array::from_op(shape, DType::Bool, IsClose(Closeness::Close { rtol, atol, equal_nan }), vec![a, b]))
}

/// True (a 0-d bool array, like MLX) if [`isclose`] holds everywhere.
/// Shapes must broadcast.
///
/// ```
/// use ferrox::{allclose, Array};
/// let a = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// assert!(!allclose(&a, &Array::from(1.0), 1e-5, 1e-8, false)?.item::<bool>()?);
/// assert!(allclose(&a, &a, 1e-5, 1e-8, false)?.item::<bool>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn allclose(a: &Array, b: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
    let (_, a, b) = promote_pair("allclose", a, b)?;
    let test = Closeness::Close { rtol, atol, equal_nan };
    Ok(Array::from_op(vec![], DType::Bool, AllPairs(test), vec![a, b]))
}

/// True (a 0-d bool array) if `a` and `b` have the same shape and equal
/// values; different shapes give false, not an error. Dtypes may differ
/// (values compare after promotion); with `equal_nan`, NaNs compare equal.
///
/// ```
/// use ferrox::{array_equal, Array};
/// let a = Array::from_slice(&[1i32, 2], &[2])?;
/// let b = Array::from_slice(&[1.0f32, 2.0], &[2])?;
/// assert!(array_equal(&a, &b, false)?.item::<bool>()?);
/// assert!(!array_equal(&a, &Array::from_slice(&[1i32, 2], &[1, 2])?, false)?.item::<bool>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn array_equal(a: &Array, b: &Array, equal_nan: bool) -> Result<Array> {
    if a.shape() != b.shape() {
        return Ok(Array::scalar(false));
    }
    let (_, a, b) = promote_pair("array_equal", a, b)?;
    Ok(Array::from_op(vec![], DType::Bool, AllPairs(Closeness::Equal { equal_nan }), vec![a, b]))
}

// ---------------------------------------------------------------------------
// nan_to_num
// ---------------------------------------------------------------------------

/// Replaces NaN, +inf and -inf with finite values (complex: in each part).
#[derive(Debug, Clone, PartialEq)]
pub struct NanToNum {
    /// Replacement for NaN.
    pub nan: f64,
    /// Replacement for +inf.
    pub posinf: f64,
    /// Replacement for -inf.
    pub neginf: f64,
}

impl NanToNum {
    #[inline(always)]
    fn fix(&self, v: f64) -> f64 {
        if v.is_nan() {
            self.nan
        } else if v == f64::INFINITY {
            self.posinf
        } else if v == f64::NEG_INFINITY {
            self.neginf
        } else {
            v
        }
    }
}

impl Primitive for NanToNum {
    fn name(&self) -> &'static str {
        "nan_to_num"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let [x] = inputs else {
            return Err(Error::runtime("nan_to_num", format!("expected 1 input, got {}", inputs.len())));
        };
        match x.dtype {
            DType::Complex64 => unary(x, out, |v: Complex64| {
                Complex64::new(self.fix(v.re as f64) as f32, self.fix(v.im as f64) as f32)
            }),
            DType::Float16 => replace_kernel::<half::f16>(self, x, out),
            DType::BFloat16 => replace_kernel::<half::bf16>(self, x, out),
            DType::Float32 => replace_kernel::<f32>(self, x, out),
            DType::Float64 => replace_kernel::<f64>(self, x, out),
            other => Err(Error::runtime("nan_to_num", format!("internal error: dtype {other}"))),
        }
    }
    primitive_common!();
}

fn replace_kernel<T: Element + Pod>(r: &NanToNum, x: &Operand<'_>, out: OutSpec<'_>) -> Result<Data> {
    // Replacements are converted once; finite values pass through untouched.
    let (nan, pos, neg) = (T::from_f64(r.nan), T::from_f64(r.posinf), T::from_f64(r.neginf));
    unary(x, out, move |v: T| {
        let f = v.to_f64();
        if f.is_nan() {
            nan
        } else if f == f64::INFINITY {
            pos
        } else if f == f64::NEG_INFINITY {
            neg
        } else {
            v
        }
    })
}

/// The largest finite value of a float dtype (complex: of its parts).
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => half::f16::MAX.to_f64(),
        DType::BFloat16 => half::bf16::MAX.to_f64(),
        DType::Float64 => f64::MAX,
        _ => f32::MAX as f64,
    }
}

/// Replaces NaN with `nan`, +inf with `posinf` and -inf with `neginf`
/// (defaults: the dtype's largest and smallest finite values, as MLX).
/// Replacements are rounded to the dtype. Complex values are fixed in each
/// part (numpy's rule). Integer and bool arrays are returned unchanged.
///
/// ```
/// use ferrox::{nan_to_num, Array};
/// let a = Array::from_slice(&[f32::NAN, f32::INFINITY, -f32::INFINITY, 1.5], &[4])?;
/// assert_eq!(nan_to_num(&a, 0.0, None, Some(-1.0))?.to_vec::<f32>()?, vec![0.0, f32::MAX, -1.0, 1.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn nan_to_num(a: &Array, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Array> {
    if !a.dtype().is_inexact() {
        return Ok(a.clone());
    }
    let max = finite_max(a.dtype());
    let op = NanToNum { nan, posinf: posinf.unwrap_or(max), neginf: neginf.unwrap_or(-max) };
    Ok(Array::from_op(a.shape().to_vec(), a.dtype(), op, vec![a.clone()]))
}

impl Array {
    /// Method form of [`clip`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[-1i32, 5, 10], &[3])?;
    /// let c = a.clip(Some(&ferrox::Array::from(0)), Some(&ferrox::Array::from(6)))?;
    /// assert_eq!(c.to_vec::<i32>()?, vec![0, 5, 6]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn clip(&self, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
        clip(self, min, max)
    }

    /// Method form of [`isclose`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32], &[1])?;
    /// assert_eq!(a.isclose(&ferrox::Array::from(1.05), 0.1, 0.0, false)?.to_vec::<bool>()?, vec![true]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn isclose(&self, other: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
        isclose(self, other, rtol, atol, equal_nan)
    }

    /// Method form of [`allclose`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f32, 2.0], &[2])?;
    /// assert!(a.allclose(&a, 1e-5, 1e-8, false)?.item::<bool>()?);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn allclose(&self, other: &Array, rtol: f64, atol: f64, equal_nan: bool) -> Result<Array> {
        allclose(self, other, rtol, atol, equal_nan)
    }
}
