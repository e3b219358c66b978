//! Creation ops: full, zeros, ones, arange, linspace, eye, identity, tri, *_like.

use crate::backend::cpu::fill::{self, Band};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};

/// Fills the output with a value given as (re, im) in f64.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    /// Real part of the fill value.
    pub re: f64,
    /// Imaginary part (complex outputs only).
    pub im: f64,
}

impl Primitive for Fill {
    fn name(&self) -> &'static str {
        "full"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        fill::full(self.re, self.im, out)
    }
    /// Creation ops have no inputs: nothing to differentiate or batch.
    fn vjp(&self, _p: &[Array], _g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![])
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        zeros_like(output)
    }
    crate::primitive_common!();
}

/// An array of `shape` filled with `value` cast to `dtype`.
///
/// ```
/// let a = ferrox::full(&[2, 2], 7.0, ferrox::DType::Int32)?;
/// assert_eq!(a.to_vec::<i32>()?, vec![7; 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
    fill("full", shape, value, dtype)
}

/// [`full`], with errors naming `op` (`zeros`, `ones`, ...).
fn fill(op: &str, shape: &[usize], value: f64, dtype: DType) -> Result<Array> {
    checked_numel(op, shape)?;
    Ok(Array::from_op(
        shape.to_vec(),
        dtype,
        Fill { re: value, im: 0.0 },
        vec![],
    ))
}

/// An array of zeros.
///
/// ```
/// assert_eq!(ferrox::zeros(&[3], ferrox::DType::Float32)?.to_vec::<f32>()?, vec![0.0; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn zeros(shape: &[usize], dtype: DType) -> Result<Array> {
    fill("zeros", shape, 0.0, dtype)
}

/// An array of ones.
///
/// ```
/// assert_eq!(ferrox::ones(&[2], ferrox::DType::Int8)?.to_vec::<i8>()?, vec![1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ones(shape: &[usize], dtype: DType) -> Result<Array> {
    fill("ones", shape, 1.0, dtype)
}

/// Zeros with the shape and dtype of `a`.
///
/// ```
/// let a = ferrox::ones(&[2], ferrox::DType::Float16)?;
/// assert_eq!(ferrox::zeros_like(&a)?.dtype(), ferrox::DType::Float16);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn zeros_like(a: &Array) -> Result<Array> {
    fill("zeros_like", a.shape(), 0.0, a.dtype())
}
/// Ones with the shape and dtype of `a`.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::ones_like(&a)?.to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ones_like(a: &Array) -> Result<Array> {
    fill("ones_like", a.shape(), 1.0, a.dtype())
}
/// `value` with the shape and dtype of `a`.
///
/// ```
/// let a = ferrox::zeros(&[2], ferrox::DType::Int32)?;
/// assert_eq!(ferrox::full_like(&a, 3.0)?.to_vec::<i32>()?, vec![3, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn full_like(a: &Array, value: f64) -> Result<Array> {
    full(a.shape(), value, a.dtype())
}

/// `value` cast to `dtype` with the shape of `template`, as a node that
/// takes `template` as an input: in a shapeless compiled function its shape
/// follows the template's at every call (MLX's `full_like` is built the
/// same way). [`zeros_like`], [`ones_like`] and [`full_like`] do not depend
/// on their template, so the transforms' rules can make zeros without
/// keeping or computing it; this is the one for user code that compiles.
/// The template is evaluated (its values are never read).
///
/// ```
/// use ferrox::{ops::creation::fill_like, Array, DType};
/// let t = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let y = fill_like(&t, 7.0, DType::Int32)?;
/// assert_eq!((y.shape(), y.to_vec::<i32>()?), (&[3][..], vec![7; 3]));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fill_like(template: &Array, value: f64, dtype: DType) -> Result<Array> {
    let value = full(&[], value, dtype)?;
    let template = template.astype(dtype)?;
    crate::ops::select::r#where(&Array::scalar(true), &value, &template)
}

/// `start + i * step` for each index, computed in f64 and cast (numpy's rule).
#[derive(Debug, Clone, PartialEq)]
pub struct Arange {
    /// First value.
    pub start: f64,
    /// Increment.
    pub step: f64,
}

impl Primitive for Arange {
    fn name(&self) -> &'static str {
        "arange"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        fill::arange(self.start, self.step, out)
    }
    /// Creation ops have no inputs: nothing to differentiate or batch.
    fn vjp(&self, _p: &[Array], _g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![])
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        zeros_like(output)
    }
    crate::primitive_common!();
}

/// Values from `start` (inclusive) to `stop` (exclusive) by `step`: the
/// length is `ceil((stop - start) / step)`; integer dtypes step by the
/// difference of the first two values cast, as numpy and MLX do, and wrap.
///
/// ```
/// let z = ferrox::arange(0.0, 3.0, 0.2, ferrox::DType::Int32)?;
/// assert_eq!(z.to_vec::<i32>()?, vec![0; 15]);
/// let one = ferrox::arange(0.0, 10.0, f64::INFINITY, ferrox::DType::Float32)?;
/// assert_eq!(one.to_vec::<f32>()?, vec![0.0]);
/// assert_eq!(ferrox::arange(10.0, 0.0, f64::INFINITY, ferrox::DType::Float32)?.size(), 0);
/// let a = ferrox::arange(0.0, 1.0, 0.25, ferrox::DType::Float32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75]);
/// assert!(ferrox::arange(0.0, 1.0, 0.0, ferrox::DType::Float32).is_err());
/// // Values outside an integer dtype wrap, like a C cast.
/// let w = ferrox::arange(2147483646.0, 2147483649.0, 1.0, ferrox::DType::Int32)?;
/// assert_eq!(w.to_vec::<i32>()?, vec![i32::MAX - 1, i32::MAX, i32::MIN]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn arange(start: f64, stop: f64, step: f64, dtype: DType) -> Result<Array> {
    if step == 0.0 || step.is_nan() || !start.is_finite() || !stop.is_finite() {
        return Err(Error::value(
            "arange",
            format!(
                "start {start} and stop {stop} must be finite and step {step} non-zero and not NaN"
            ),
        ));
    }
    if dtype == DType::Bool || dtype == DType::Complex64 {
        return Err(Error::dtype(
            "arange",
            format!("dtype {dtype} is not supported"),
        ));
    }
    // An infinite step gives `[start]` when it points from start towards
    // stop, else nothing (numpy's and MLX's answer).
    if step.is_infinite() {
        let n = usize::from((stop - start) * step.signum() > 0.0);
        let first = if dtype.is_integer() {
            start.trunc()
        } else {
            start
        };
        return Ok(Array::from_op(
            vec![n],
            dtype,
            Arange {
                start: first,
                step: 0.0,
            },
            vec![],
        ));
    }
    let n = ((stop - start) / step).ceil().max(0.0);
    if n > (1u64 << 48) as f64 {
        return Err(Error::value("arange", format!("{n} elements is too many")));
    }
    // Integer dtypes step by the difference of the first two values cast
    // (numpy's and MLX's rule): `arange(0, 3, 0.2)` in int32 is fifteen 0s.
    let (start, step) = if dtype.is_integer() {
        let first = start.trunc();
        (first, (start + step).trunc() - first)
    } else {
        (start, step)
    };
    Ok(Array::from_op(
        vec![n as usize],
        dtype,
        Arange { start, step },
        vec![],
    ))
}

/// `num` evenly spaced values from `start` to `stop`, both included.
///
/// ```
/// let a = ferrox::linspace(0.0, 1.0, 5, ferrox::DType::Float32)?;
/// assert_eq!(a.to_vec::<f32>()?, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn linspace(start: f64, stop: f64, num: usize, dtype: DType) -> Result<Array> {
    if !dtype.is_float() {
        return Err(Error::dtype(
            "linspace",
            format!("dtype {dtype} is not a float type"),
        ));
    }
    checked_numel("linspace", &[num])?;
    let step = if num > 1 {
        (stop - start) / (num - 1) as f64
    } else {
        0.0
    };
    Ok(Array::from_op(
        vec![num],
        dtype,
        Arange { start, step },
        vec![],
    ))
}

/// Ones where `col - row == k` (`Eye`) or where `col - row <= k` (`Tri`).
#[derive(Debug, Clone, PartialEq)]
pub struct Diagonal2d {
    /// Diagonal offset.
    pub k: isize,
    /// Lower-triangular fill instead of one diagonal.
    pub lower: bool,
}

impl Primitive for Diagonal2d {
    fn name(&self) -> &'static str {
        if self.lower { "tri" } else { "eye" }
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let band = if self.lower {
            Band::Lower
        } else {
            Band::Diagonal
        };
        fill::band(self.k, band, out)
    }
    /// Creation ops have no inputs: nothing to differentiate or batch.
    fn vjp(&self, _p: &[Array], _g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        Ok(vec![])
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        zeros_like(output)
    }
    crate::primitive_common!();
}

/// An `n x m` matrix with ones on diagonal `k`.
///
/// ```
/// let e = ferrox::eye(2, None, 0, ferrox::DType::Float32)?;
/// assert_eq!(e.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn eye(n: usize, m: Option<usize>, k: isize, dtype: DType) -> Result<Array> {
    eye_named("eye", n, m, k, dtype)
}

/// [`eye`], with errors naming `op`.
fn eye_named(op: &str, n: usize, m: Option<usize>, k: isize, dtype: DType) -> Result<Array> {
    let m = m.unwrap_or(n);
    checked_numel(op, &[n, m])?;
    Ok(Array::from_op(
        vec![n, m],
        dtype,
        Diagonal2d { k, lower: false },
        vec![],
    ))
}

/// The `n x n` identity matrix.
///
/// ```
/// assert_eq!(ferrox::identity(3, ferrox::DType::Int32)?.shape(), &[3, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn identity(n: usize, dtype: DType) -> Result<Array> {
    eye_named("identity", n, None, 0, dtype)
}

/// Ones at and below diagonal `k` of an `n x m` matrix.
///
/// ```
/// let t = ferrox::tri(2, None, 0, ferrox::DType::Int32)?;
/// assert_eq!(t.to_vec::<i32>()?, vec![1, 0, 1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn tri(n: usize, m: Option<usize>, k: isize, dtype: DType) -> Result<Array> {
    let m = m.unwrap_or(n);
    checked_numel("tri", &[n, m])?;
    Ok(Array::from_op(
        vec![n, m],
        dtype,
        Diagonal2d { k, lower: true },
        vec![],
    ))
}
