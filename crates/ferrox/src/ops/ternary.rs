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
use crate::backend::cpu::elementwise::{
    binary, broadcast_strides, for_each_offset2, out_storage, ternary, unary,
};
use crate::backend::cpu::parallel::{chunk_len, simd, worth_splitting};
use crate::dtype::Element;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::runtime::memory::Pod;
use crate::transforms::rules;
use crate::{Array, Complex64, DType, Error, Result, with_dtype};
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
            return Err(Error::runtime(
                "where",
                format!("expected 3 inputs, got {}", inputs.len()),
            ));
        };
        if c.dtype != DType::Bool || x.dtype != out.dtype || y.dtype != out.dtype {
            return Err(Error::runtime(
                "where",
                format!(
                    "internal error: input dtypes {}, {}, {} for output {}",
                    c.dtype, x.dtype, y.dtype, out.dtype
                ),
            ));
        }
        with_dtype!(out.dtype, T => select_kernel::<T>(c, x, y, out))
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        match input_shapes {
            [c, a, b] => {
                Some(broadcast_shapes("where", c, a).and_then(|s| broadcast_shapes("where", &s, b)))
            }
            _ => None,
        }
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // The condition gets no gradient; x and y get the cotangent where
        // they were picked.
        let zero = crate::zeros_like(g)?;
        argnums
            .iter()
            .map(|&i| match i {
                0 => crate::zeros_like(&p[0]),
                1 => rules::unbroadcast(&r#where(&p[0], g, &zero)?, p[1].shape()),
                _ => rules::unbroadcast(&r#where(&p[0], &zero, g)?, p[2].shape()),
            })
            .collect()
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        if tangents[1].is_none() && tangents[2].is_none() {
            return crate::zeros_like(output);
        }
        let tx = rules::tangent_or_zeros(p, tangents, 1)?;
        let ty = rules::tangent_or_zeros(p, tangents, 2)?;
        r#where(&p[0], &tx, &ty)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, out_ax) = rules::align_batch(inputs, axes)?;
        Ok((r#where(&a[0], &a[1], &a[2])?, out_ax))
    }
    crate::primitive_common!();
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
            return op
                .data
                .raw::<T>()
                .get(op.data.offset)
                .map(|&v| Lane::Splat(v));
        }
        if op.shape != out_shape {
            return None;
        }
        op.data.as_contiguous::<T>(op.shape).map(Lane::Slice)
    }
}

fn select_kernel<T: Pod>(
    c: &Operand<'_>,
    x: &Operand<'_>,
    y: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let cond = if c.shape == out.shape {
        c.data.as_contiguous::<bool>(c.shape)
    } else {
        None
    };
    let (Some(cond), Some(xl), Some(yl)) = (
        cond,
        Lane::<T>::of(x, out.shape),
        Lane::<T>::of(y, out.shape),
    ) else {
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
    let inputs = vec![
        condition.astype(DType::Bool)?,
        x.astype(dtype)?,
        y.astype(dtype)?,
    ];
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
    let op = "clip";
    if min.is_none() && max.is_none() {
        return Err(Error::value(
            op,
            "at least one of min and max must be given",
        ));
    }
    let all: Vec<&Array> = [Some(a), min, max].into_iter().flatten().collect();
    broadcast_many(op, &all)?;
    // Errors of the two steps (e.g. complex dtypes) are clip's own.
    let as_clip = |e: Error| Error::new(e.kind(), op, e.message());
    let lower = match min {
        Some(lo) => maximum(a, lo).map_err(as_clip)?,
        None => a.clone(),
    };
    match max {
        Some(hi) => minimum(&lower, hi).map_err(as_clip),
        None => Ok(lower),
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
            Closeness::Close {
                rtol,
                atol,
                equal_nan,
            } => {
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
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        rules::zero_cotangents(p, argnums) // a bool output: piecewise constant
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::zeros_like(output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let (a, out_ax) = rules::align_batch(inputs, axes)?;
        let shape = broadcast_shapes("isclose", a[0].shape(), a[1].shape())?;
        Ok((Array::from_op(shape, DType::Bool, self.clone(), a), out_ax))
    }
    crate::primitive_common!();
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
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        rules::zero_cotangents(p, argnums) // a bool output: piecewise constant
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::zeros_like(output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        // The elementwise test per pair, then `all` over each example.
        let (a, out_ax) = rules::align_batch(inputs, axes)?;
        if out_ax.is_none() {
            return Ok((Array::from_op(vec![], DType::Bool, self.clone(), a), None));
        }
        let shape = broadcast_shapes(self.name(), a[0].shape(), a[1].shape())?;
        let rank = shape.len();
        let pairs = Array::from_op(shape, DType::Bool, IsClose(self.0), a);
        let example_axes: Vec<isize> = (1..rank as isize).collect();
        Ok((crate::all(&pairs, Some(&example_axes), false)?, Some(0)))
    }
    crate::primitive_common!();
}

fn all_pairs<T: Element + Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    shape: &[usize],
    test: Closeness,
) -> bool {
    let (ra, rb) = (a.data.raw::<T>(), b.data.raw::<T>());
    let (sa, sb) = (broadcast_strides(a, shape), broadcast_strides(b, shape));
    let mut all = true;
    for_each_offset2(shape, &sa, a.data.offset, &sb, b.data.offset, |oa, ob| {
        all &= test.test(ra[oa], rb[ob]);
    });
    all
}

fn same_dtype_pair<'a, 'b>(
    op: &str,
    inputs: &'b [Operand<'a>],
) -> Result<(&'b Operand<'a>, &'b Operand<'a>)> {
    match inputs {
        [a, b] if a.dtype == b.dtype => Ok((a, b)),
        _ => Err(Error::runtime(
            op,
            "internal error: expected two inputs of one dtype",
        )),
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
    Ok(Array::from_op(
        shape,
        DType::Bool,
        IsClose(Closeness::Close {
            rtol,
            atol,
            equal_nan,
        }),
        vec![a, b],
    ))
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
    let test = Closeness::Close {
        rtol,
        atol,
        equal_nan,
    };
    Ok(Array::from_op(
        vec![],
        DType::Bool,
        AllPairs(test),
        vec![a, b],
    ))
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
    Ok(Array::from_op(
        vec![],
        DType::Bool,
        AllPairs(Closeness::Equal { equal_nan }),
        vec![a, b],
    ))
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
            return Err(Error::runtime(
                "nan_to_num",
                format!("expected 1 input, got {}", inputs.len()),
            ));
        };
        match x.dtype {
            DType::Complex64 => unary(x, out, |v: Complex64| {
                Complex64::new(self.fix(v.re as f64) as f32, self.fix(v.im as f64) as f32)
            }),
            DType::Float16 => replace_kernel::<half::f16>(self, x, out),
            DType::BFloat16 => replace_kernel::<half::bf16>(self, x, out),
            DType::Float32 => replace_kernel::<f32>(self, x, out),
            DType::Float64 => replace_kernel::<f64>(self, x, out),
            other => Err(Error::runtime(
                "nan_to_num",
                format!("internal error: dtype {other}"),
            )),
        }
    }
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        // Finite inputs pass through; replaced ones are constants.
        let finite = crate::isfinite(&p[0])?;
        Ok(vec![r#where(&finite, g, &crate::zeros_like(g)?)?])
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::zeros_like(output);
        };
        let finite = crate::isfinite(&p[0])?;
        r#where(&finite, t, &crate::zeros_like(t)?)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let x = &inputs[0];
        Ok((
            Array::from_op(x.shape().to_vec(), x.dtype(), self.clone(), vec![x.clone()]),
            axes[0],
        ))
    }
    crate::primitive_common!();
}

fn replace_kernel<T: Element + Pod>(
    r: &NanToNum,
    x: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    // Replacements are converted once; finite values pass through untouched.
    let (nan, pos, neg) = (
        T::from_f64(r.nan),
        T::from_f64(r.posinf),
        T::from_f64(r.neginf),
    );
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
    let op = NanToNum {
        nan,
        posinf: posinf.unwrap_or(max),
        neginf: neginf.unwrap_or(-max),
    };
    Ok(Array::from_op(
        a.shape().to_vec(),
        a.dtype(),
        op,
        vec![a.clone()],
    ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn arr<T: Element + Pod>(v: &[T], shape: &[usize]) -> Array {
        Array::from_slice(v, shape).unwrap()
    }

    #[test]
    fn where_broadcasts_and_promotes() {
        let c = arr(&[true, false], &[2, 1]);
        let x = arr(&[1i8, 2, 3], &[3]);
        let r = r#where(&c, &x, &Array::from(2.5)).unwrap();
        assert_eq!((r.shape(), r.dtype()), (&[2usize, 3][..], DType::Float32));
        assert_eq!(
            r.to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 2.5, 2.5, 2.5]
        );
        // A non-bool condition is cast: non-zero is true.
        let c = arr(&[0.0f32, -0.5, f32::NAN], &[3]);
        let r = r#where(&c, &x, &Array::from(0)).unwrap();
        assert_eq!(
            (r.dtype(), r.to_vec::<i8>().unwrap()),
            (DType::Int8, vec![0, 2, 3])
        );
        let e = r#where(&arr(&[true; 2], &[2]), &x, &x).unwrap_err();
        assert_eq!((e.kind(), e.op()), (ErrorKind::Shape, "where"));
    }

    #[test]
    fn where_fast_paths_match_the_general_path() {
        // Large enough to split over cores; every value-operand combination.
        let n = 100_003;
        let cond: Vec<bool> = (0..n).map(|i| i % 3 == 0 || i % 7 == 0).collect();
        let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let ys: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
        let (c, x, y) = (arr(&cond, &[n]), arr(&xs, &[n]), arr(&ys, &[n]));
        let sx = arr(&[7.0f32], &[1]);
        let sy = arr(&[-7.0f32], &[]);
        let pick = |xv: &dyn Fn(usize) -> f32, yv: &dyn Fn(usize) -> f32| -> Vec<f32> {
            (0..n)
                .map(|i| if cond[i] { xv(i) } else { yv(i) })
                .collect()
        };
        let (fx, fy) = (|i: usize| xs[i], |i: usize| ys[i]);
        assert_eq!(
            r#where(&c, &x, &y).unwrap().to_vec::<f32>().unwrap(),
            pick(&fx, &fy)
        );
        assert_eq!(
            r#where(&c, &x, &sy).unwrap().to_vec::<f32>().unwrap(),
            pick(&fx, &|_| -7.0)
        );
        assert_eq!(
            r#where(&c, &sx, &y).unwrap().to_vec::<f32>().unwrap(),
            pick(&|_| 7.0, &fy)
        );
        assert_eq!(
            r#where(&c, &sx, &sy).unwrap().to_vec::<f32>().unwrap(),
            pick(&|_| 7.0, &|_| -7.0)
        );
    }

    /// A 2-d operand whose storage holds the transpose (column-major).
    fn transposed<T: Pod>(values: &[T], rows: usize, cols: usize) -> Data {
        let mut storage =
            crate::runtime::memory::Storage::new(std::mem::size_of_val(values), false).unwrap();
        let dst = storage.as_mut_slice::<T>();
        for r in 0..rows {
            for c in 0..cols {
                dst[c * rows + r] = values[r * cols + c];
            }
        }
        Data {
            storage: Arc::new(storage),
            strides: vec![1, rows as isize],
            offset: 0,
        }
    }

    #[test]
    fn where_and_isclose_on_transposed_operands() {
        let shape = [3usize, 4];
        let cond: Vec<bool> = (0..12).map(|i| i % 2 == 0).collect();
        let xs: Vec<i64> = (0..12).collect();
        let ys: Vec<i64> = (0..12).map(|i| 100 + i).collect();
        let (dc, dx, dy) = (
            transposed(&cond, 3, 4),
            transposed(&xs, 3, 4),
            transposed(&ys, 3, 4),
        );
        let ops = [
            Operand {
                data: &dc,
                shape: &shape,
                dtype: DType::Bool,
            },
            Operand {
                data: &dx,
                shape: &shape,
                dtype: DType::Int64,
            },
            Operand {
                data: &dy,
                shape: &shape,
                dtype: DType::Int64,
            },
        ];
        let out = Select
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: DType::Int64,
                },
            )
            .unwrap();
        let want: Vec<i64> = (0..12)
            .map(|i| if cond[i] { xs[i] } else { ys[i] })
            .collect();
        assert_eq!(out.to_vec::<i64>(&shape), want);

        let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..12)
            .map(|i| i as f32 + if i % 3 == 0 { 1e-7 } else { 0.1 })
            .collect();
        let (da, db) = (transposed(&a, 3, 4), transposed(&b, 3, 4));
        let ops = [
            Operand {
                data: &da,
                shape: &shape,
                dtype: DType::Float32,
            },
            Operand {
                data: &db,
                shape: &shape,
                dtype: DType::Float32,
            },
        ];
        let test = Closeness::Close {
            rtol: 1e-5,
            atol: 1e-6,
            equal_nan: false,
        };
        let out = IsClose(test)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &shape,
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        let want: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
        assert_eq!(out.to_vec::<bool>(&shape), want);
        let all = AllPairs(test)
            .eval_cpu(
                &ops,
                OutSpec {
                    shape: &[],
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        assert_eq!(all.to_vec::<bool>(&[]), vec![false]);
        let same = [ops[0], ops[0]];
        let all = AllPairs(test)
            .eval_cpu(
                &same,
                OutSpec {
                    shape: &[],
                    dtype: DType::Bool,
                },
            )
            .unwrap();
        assert_eq!(all.to_vec::<bool>(&[]), vec![true]);
    }

    #[test]
    fn clip_needs_a_bound_and_composes_maximum_minimum() {
        let a = arr(&[-3i32, 0, 3, 9], &[4]);
        let lo = arr(&[-1i32, 1, 1, 1], &[4]);
        assert_eq!(
            clip(&a, Some(&lo), None).unwrap().to_vec::<i32>().unwrap(),
            vec![-1, 1, 3, 9]
        );
        assert_eq!(
            clip(&a, None, Some(&Array::from(2)))
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            vec![-3, 0, 2, 2]
        );
        // min > max gives max, as numpy.
        let r = clip(&a, Some(&Array::from(5)), Some(&Array::from(2))).unwrap();
        assert_eq!(r.to_vec::<i32>().unwrap(), vec![2; 4]);
        let f = clip(&a, Some(&Array::from(0.5)), None).unwrap();
        assert_eq!(f.dtype(), DType::Float32);
        let e = clip(&a, None, None).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (
                ErrorKind::Value,
                "clip: at least one of min and max must be given"
            )
        );
        let nan = clip(
            &arr(&[f32::NAN], &[1]),
            Some(&Array::from(0.0)),
            Some(&Array::from(1.0)),
        )
        .unwrap();
        assert!(nan.to_vec::<f32>().unwrap()[0].is_nan());
        let c = arr(&[crate::Complex64::new(1.0, 1.0)], &[1]);
        assert_eq!(
            clip(&c, Some(&Array::from(0.0)), None).unwrap_err().kind(),
            ErrorKind::Dtype
        );
    }

    #[test]
    fn isclose_follows_numpy() {
        let inf = f64::INFINITY;
        let t = |a: f64, b: f64, nan: bool| close_real(a, b, 1e-5, 1e-8, nan);
        assert!(t(1.0, 1.0 + 1e-6, false));
        assert!(!t(1.0, 1.001, false));
        assert!(t(inf, inf, false) && t(-inf, -inf, false));
        assert!(!t(inf, -inf, false) && !t(inf, 1e300, false) && !t(1.0, inf, false));
        assert!(
            !t(f64::NAN, f64::NAN, false) && t(f64::NAN, f64::NAN, true) && !t(f64::NAN, 1.0, true)
        );
        // Equal values are close even with negative tolerances (numpy).
        assert!(close_real(2.0, 2.0, -1.0, -1.0, false));
        // Asymmetric: the tolerance scales with |b|.
        assert!(!close_real(0.0, 10.0, 0.1, 0.0, false));
        assert!(close_real(9.0, 10.0, 0.1, 0.0, false));
        assert!(!close_real(10.0, 9.0, 0.1, 0.0, false));
        let c = crate::Complex64::new;
        assert!(close_complex(
            c(1.0, 1.0),
            c(1.0, 1.000001),
            1e-5,
            0.0,
            false
        ));
        assert!(!close_complex(
            c(1.0, f32::NAN),
            c(1.0, f32::NAN),
            1e-5,
            0.0,
            false
        ));
        assert!(close_complex(
            c(1.0, f32::NAN),
            c(f32::NAN, 0.0),
            1e-5,
            0.0,
            true
        ));
        assert!(close_complex(
            c(f32::INFINITY, 0.0),
            c(f32::INFINITY, 0.0),
            1e-5,
            0.0,
            false
        ));
        // Integers compare exactly in f64 (no wrapping subtraction).
        let a = arr(&[i64::MIN, 5], &[2]);
        let b = arr(&[i64::MAX, 5], &[2]);
        assert_eq!(
            isclose(&a, &b, 0.0, 0.0, false)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            vec![false, true]
        );
    }

    #[test]
    fn allclose_and_array_equal_are_0d_bools() {
        let a = arr(&[1.0f32, f32::NAN], &[2]);
        let r = allclose(&a, &a, 1e-5, 1e-8, false).unwrap();
        assert_eq!((r.shape(), r.dtype()), (&[][..], DType::Bool));
        assert!(!r.item::<bool>().unwrap());
        assert!(
            allclose(&a, &a, 1e-5, 1e-8, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        let row = arr(&[1.0f32, f32::NAN], &[1, 2]);
        let grid = arr(&[1.0f32, f32::NAN, 1.0, f32::NAN], &[2, 2]);
        assert!(
            allclose(&row, &grid, 0.0, 0.0, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        assert_eq!(
            allclose(&a, &arr(&[1.0f32; 3], &[3]), 0.0, 0.0, false)
                .unwrap_err()
                .kind(),
            ErrorKind::Shape
        );
        assert!(!array_equal(&a, &a, false).unwrap().item::<bool>().unwrap());
        assert!(array_equal(&a, &a, true).unwrap().item::<bool>().unwrap());
        assert!(
            !array_equal(&row, &grid, true)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        assert!(!array_equal(&a, &row, true).unwrap().item::<bool>().unwrap());
        let empty = crate::zeros(&[0], DType::Int8).unwrap();
        assert!(
            array_equal(&empty, &crate::zeros(&[0], DType::Float16).unwrap(), false)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        assert!(
            allclose(&empty, &empty, 0.0, 0.0, false)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
        let big = arr(&[1i64 << 60], &[1]);
        let near = arr(&[(1i64 << 60) + 1], &[1]);
        assert!(
            !array_equal(&big, &near, false)
                .unwrap()
                .item::<bool>()
                .unwrap()
        );
    }

    #[test]
    fn nan_to_num_defaults_to_the_dtype_range() {
        let h = half::f16::from_f32;
        let a = arr(
            &[
                half::f16::NAN,
                half::f16::INFINITY,
                half::f16::NEG_INFINITY,
                h(1.5),
            ],
            &[4],
        );
        let r = nan_to_num(&a, 0.0, None, None)
            .unwrap()
            .to_vec::<half::f16>()
            .unwrap();
        assert_eq!(r, vec![h(0.0), half::f16::MAX, half::f16::MIN, h(1.5)]);
        let b = arr(&[f64::NAN, f64::INFINITY, -f64::INFINITY], &[3]);
        let r = nan_to_num(&b, -1.0, Some(1e300), None)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(r, vec![-1.0, 1e300, f64::MIN]);
        let c = arr(&[crate::Complex64::new(f32::NAN, f32::INFINITY)], &[1]);
        let r = nan_to_num(&c, 2.0, None, None)
            .unwrap()
            .to_vec::<crate::Complex64>()
            .unwrap();
        assert_eq!(r, vec![crate::Complex64::new(2.0, f32::MAX)]);
        let i = arr(&[1i32], &[1]);
        assert_eq!(nan_to_num(&i, 0.0, None, None).unwrap().id(), i.id());
        let bf = arr(&[half::bf16::INFINITY], &[1]);
        assert_eq!(
            nan_to_num(&bf, 0.0, None, None)
                .unwrap()
                .to_vec::<half::bf16>()
                .unwrap(),
            vec![half::bf16::MAX]
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn where_matches_a_naive_loop(
            rows in 1usize..5, cols in 1usize..6,
            bits in prop::collection::vec(any::<bool>(), 30),
            cond_row in any::<bool>(), x_col in any::<bool>(),
        ) {
            // cond broadcast along rows or full; x a column or full; y scalar.
            let cshape = if cond_row { vec![cols] } else { vec![rows, cols] };
            let xshape = if x_col { vec![rows, 1] } else { vec![rows, cols] };
            let cn: usize = cshape.iter().product();
            let xn: usize = xshape.iter().product();
            let cond: Vec<bool> = bits[..cn].to_vec();
            let xs: Vec<i32> = (0..xn as i32).collect();
            let r = r#where(&arr(&cond, &cshape), &arr(&xs, &xshape), &Array::from(-1)).unwrap();
            let mut want = vec![];
            for i in 0..rows {
                for j in 0..cols {
                    let c = if cond_row { cond[j] } else { cond[i * cols + j] };
                    let x = if x_col { xs[i] } else { xs[i * cols + j] };
                    want.push(if c { x } else { -1 });
                }
            }
            prop_assert_eq!(r.to_vec::<i32>().unwrap(), want);
        }
    }
}
