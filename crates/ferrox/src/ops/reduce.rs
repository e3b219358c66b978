//! Reductions over any set of axes — sum, prod, mean, var, std, max, min,
//! all, any — and the arg-reductions argmax and argmin.
//!
//! Axes are `Option<&[isize]>`: `None` reduces every axis, negative axes
//! count from the end, a repeated axis is an error. Output dtypes follow
//! MLX: sum/prod of bool and integers up to 32 bits give `int32` (unsigned:
//! `uint32`), 64-bit integers and floats keep their dtype; mean/var/std of
//! bool and integers give `float32`; half floats accumulate in `f32` and
//! round once. The kernels live in [`crate::backend::cpu::reduce`].

use super::binary::subtract;
use super::shape_rules::{normalize_axes, normalize_axis};
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::reduce::{
    AllReducer, AnyReducer, CenteredVarReducer, MaxReducer, MeanReducer, MinReducer, ProdReducer,
    Reducer, SumReducer, arg_reduce, reduce,
};
use crate::dtype::DType;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::storage::{Pod, Storage};
use crate::ops::grad_helpers;
use crate::with_dtype;

/// The reductions computed by [`Reduce`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Arithmetic mean.
    Mean,
    /// Maximum (NaN propagates).
    Max,
    /// Minimum (NaN propagates).
    Min,
    /// True if every element is non-zero.
    All,
    /// True if any element is non-zero.
    Any,
    /// Variance of an input that is already centred (`x - mean(x)`, as
    /// [`var`] builds it): the sum of squares over `max(n - ddof, 0)`.
    Var {
        /// Delta degrees of freedom.
        ddof: i64,
    },
    /// Square root of [`ReduceOp::Var`].
    Std {
        /// Delta degrees of freedom.
        ddof: i64,
    },
}

impl ReduceOp {
    /// The op's public name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::All => "all",
            ReduceOp::Any => "any",
            ReduceOp::Var { .. } => "var",
            ReduceOp::Std { .. } => "std",
        }
    }

    /// The output dtype for an input of `dtype`.
    ///
    /// ```
    /// use ferrox::{ops::reduce::ReduceOp, DType};
    /// assert_eq!(ReduceOp::Sum.out_dtype(DType::UInt8), DType::UInt32);
    /// assert_eq!(ReduceOp::Mean.out_dtype(DType::Int64), DType::Float32);
    /// assert_eq!(ReduceOp::Max.out_dtype(DType::Float16), DType::Float16);
    /// ```
    pub fn out_dtype(self, dtype: DType) -> DType {
        use DType::*;
        match self {
            ReduceOp::Sum | ReduceOp::Prod => match dtype {
                Bool | Int8 | Int16 | Int32 => Int32,
                UInt8 | UInt16 | UInt32 => UInt32,
                d => d,
            },
            ReduceOp::Mean | ReduceOp::Var { .. } | ReduceOp::Std { .. } => {
                if dtype.is_inexact() {
                    dtype
                } else {
                    Float32
                }
            }
            ReduceOp::Max | ReduceOp::Min => dtype,
            ReduceOp::All | ReduceOp::Any => Bool,
        }
    }
}

/// A reduction over `axes` (sorted, distinct). The output is row-major over
/// the kept dimensions (with or without the reduced ones as size 1).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reduce {
    /// What to compute.
    pub op: ReduceOp,
    /// The reduced axes, sorted.
    pub axes: Vec<usize>,
    /// Whether the output keeps the reduced axes as size 1.
    pub keepdims: bool,
}

impl crate::graph::export::Exportable for Reduce {
    const KIND: &'static str = "reduce";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.op.name())?;
        let axes = crate::graph::export::signed(&self.axes);
        reduction(self.op, x, Some(&axes), self.keepdims)
    }
}

impl Primitive for Reduce {
    fn name(&self) -> &'static str {
        self.op.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let mut st = out_storage(out)?;
        let axes = &self.axes;
        let name = self.op.name();
        match self.op {
            ReduceOp::Sum => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &SumReducer, &mut st, out))
            }
            ReduceOp::Prod => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &ProdReducer, &mut st, out))
            }
            ReduceOp::Mean => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &MeanReducer, &mut st, out))
            }
            ReduceOp::Max => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &MaxReducer, &mut st, out))
            }
            ReduceOp::Min => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &MinReducer, &mut st, out))
            }
            ReduceOp::All => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &AllReducer, &mut st, out))
            }
            ReduceOp::Any => {
                with_dtype!(x.dtype, T => run::<T, _>(name, x, axes, &AnyReducer, &mut st, out))
            }
            ReduceOp::Var { ddof } | ReduceOp::Std { ddof } => {
                let r = CenteredVarReducer {
                    ddof,
                    sqrt: matches!(self.op, ReduceOp::Std { .. }),
                };
                match x.dtype {
                    DType::Float32 => run::<f32, _>(name, x, axes, &r, &mut st, out),
                    DType::Float64 => run::<f64, _>(name, x, axes, &r, &mut st, out),
                    d => Err(Error::dtype(
                        name,
                        format!("the centred kernel takes float32 or float64, got {d}"),
                    )),
                }
            }
        }?;
        Ok(Data::contiguous(st, out.shape))
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        if self.axes.iter().any(|&a| a >= shape.len()) {
            return None;
        }
        if matches!(self.op, ReduceOp::Max | ReduceOp::Min) {
            if let Err(e) = require_nonempty(self.op.name(), shape, &self.axes) {
                return Some(Err(e));
            }
        }
        Some(Ok(reduced_shape(shape, &self.axes, self.keepdims)))
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        output: &Array,
        _argnums: &[usize],
    ) -> Result<Vec<Array>> {
        let x = &primals[0];
        // Mean divides by the traced count, so its cotangent keeps the
        // traced shape as well (a fixed broadcast): a shapeless replay whose
        // reduced axes changed size then yields a cotangent of the traced
        // shape (a shape error downstream), never a silently mis-scaled one.
        // Every other rule follows `x`'s shape on replay.
        let g = if self.op == ReduceOp::Mean {
            let kept = grad_helpers::restore_reduced_axes(cotangent, &self.axes, self.keepdims)?;
            crate::ops::views::broadcast_to(&kept, x.shape())?
        } else {
            grad_helpers::expand_reduced(cotangent, &self.axes, self.keepdims, x)?
        };
        let gx = match self.op {
            ReduceOp::Sum => g,
            ReduceOp::Mean => grad_helpers::scale(&g, 1.0 / self.count(x).max(1) as f64)?,
            ReduceOp::Prod => {
                let others = self.prod_of_others(x)?;
                // Complex: `g * conj(d out / dx)`, MLX's convention.
                let others = if x.dtype() == crate::dtype::DType::Complex64 {
                    crate::ops::unary::conjugate(&others)?
                } else {
                    others
                };
                crate::ops::binary::multiply(&g, &others)?
            }
            ReduceOp::Max | ReduceOp::Min => {
                let (mask, count) = self.extremum_mask(x, output, true)?;
                crate::ops::binary::divide(&crate::ops::binary::multiply(&g, &mask)?, &count)?
            }
            ReduceOp::Var { .. } | ReduceOp::Std { .. } => {
                crate::ops::binary::multiply(&g, &self.centred_partial(x, output)?)?
            }
            ReduceOp::All | ReduceOp::Any => crate::ops::creation::zeros_like(x)?,
        };
        Ok(vec![gx.astype(x.dtype())?])
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let Some(t) = &tangents[0] else {
            return crate::ops::creation::zeros_like(output);
        };
        let x = &primals[0];
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        let summed = |v: &Array| sum(v, Some(&axes), self.keepdims);
        let t_out = match self.op {
            ReduceOp::Sum => summed(t)?,
            ReduceOp::Mean => mean(t, Some(&axes), self.keepdims)?,
            ReduceOp::Prod => summed(&crate::ops::binary::multiply(t, &self.prod_of_others(x)?)?)?,
            ReduceOp::Max | ReduceOp::Min => {
                let (mask, count) = self.extremum_mask(x, output, self.keepdims)?;
                crate::ops::binary::divide(
                    &summed(&crate::ops::binary::multiply(t, &mask)?)?,
                    &count,
                )?
            }
            ReduceOp::Var { .. } | ReduceOp::Std { .. } => summed(&crate::ops::binary::multiply(
                t,
                &self.centred_partial(x, output)?,
            )?)?,
            ReduceOp::All | ReduceOp::Any => return crate::ops::creation::zeros_like(output),
        };
        t_out.astype(output.dtype())
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let signed = |shift: isize| -> Vec<isize> {
            self.axes.iter().map(|&a| a as isize + shift).collect()
        };
        let Some(ax) = axes[0] else {
            let y = reduction(self.op, &inputs[0], Some(&signed(0)), self.keepdims)?;
            return Ok((y, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        // Example axis a is axis a + 1 of the batched input.
        let y = reduction(self.op, &x, Some(&signed(1)), self.keepdims)?;
        Ok((y, Some(0)))
    }
    crate::primitive_common!();
}

impl Reduce {
    /// How many elements of `x` each output element reduces.
    fn count(&self, x: &Array) -> usize {
        self.axes.iter().map(|&a| x.shape()[a]).product()
    }

    /// For every element of `x`, the product of the other elements of its
    /// reduced group: the partial derivative of `prod`. Computed with
    /// exclusive cumulative products from both ends, so zeros are handled
    /// exactly (no division).
    fn prod_of_others(&self, x: &Array) -> Result<Array> {
        let nd = x.ndim();
        let kept: Vec<usize> = (0..nd).filter(|a| !self.axes.contains(a)).collect();
        let perm: Vec<usize> = kept.iter().chain(&self.axes).copied().collect();
        let xt = crate::ops::views::transpose(x, Some(&perm))?;
        let mut flat: Vec<usize> = kept.iter().map(|&a| x.shape()[a]).collect();
        flat.push(self.count(x));
        let xf = grad_helpers::reshape_to(&xt, &flat)?;
        let left = crate::ops::scan::cumprod(&xf, Some(-1), false, false)?;
        let right = crate::ops::scan::cumprod(&xf, Some(-1), true, false)?;
        let others =
            grad_helpers::reshape_to(&crate::ops::binary::multiply(&left, &right)?, xt.shape())?;
        let mut inverse = vec![0; nd];
        for (i, &a) in perm.iter().enumerate() {
            inverse[a] = i;
        }
        crate::ops::views::transpose(&others, Some(&inverse))
    }

    /// Where `x` attains its reduced extremum (as `x`'s dtype, 1 or 0) and
    /// how many times per group (kept dims as asked). Derivatives of max
    /// and min split the cotangent evenly among tied extrema.
    fn extremum_mask(&self, x: &Array, output: &Array, keepdims: bool) -> Result<(Array, Array)> {
        let out = grad_helpers::expand_reduced(output, &self.axes, self.keepdims, x)?;
        let mask = crate::ops::binary::equal(x, &out)?.astype(x.dtype())?;
        let axes: Vec<isize> = self.axes.iter().map(|&a| a as isize).collect();
        let count = sum(&mask, Some(&axes), keepdims)?;
        Ok((mask, count))
    }

    /// The partial derivative of var/std with respect to their (centred)
    /// input `c`: `2c / (n - ddof)` and `c / ((n - ddof) * std)`.
    fn centred_partial(&self, c: &Array, output: &Array) -> Result<Array> {
        let (ddof, is_std) = match self.op {
            ReduceOp::Var { ddof } => (ddof, false),
            ReduceOp::Std { ddof } => (ddof, true),
            // Only var and std are centred; listed so that a new op must
            // say its rule.
            ReduceOp::Sum
            | ReduceOp::Prod
            | ReduceOp::Mean
            | ReduceOp::Max
            | ReduceOp::Min
            | ReduceOp::All
            | ReduceOp::Any => {
                return Err(crate::graph::primitive::no_rule(
                    self.op.name(),
                    "derivative",
                ));
            }
        };
        let dof = (self.count(c) as i64 - ddof).max(0) as f64;
        if is_std {
            let std = grad_helpers::expand_reduced(output, &self.axes, self.keepdims, c)?;
            crate::ops::binary::divide(&grad_helpers::scale(c, 1.0 / dof)?, &std)
        } else {
            grad_helpers::scale(c, 2.0 / dof)
        }
    }
}

/// Runs reducer `r` into `st`, after checking that its output element type
/// is the node's dtype.
fn run<T: Pod, R: Reducer<T>>(
    name: &str,
    x: &Operand<'_>,
    axes: &[usize],
    r: &R,
    st: &mut Storage,
    out: OutSpec<'_>,
) -> Result<()>
where
    R::Out: Pod + Element,
{
    if R::Out::DTYPE != out.dtype {
        return Err(Error::runtime(
            name,
            format!(
                "kernel for {} produces {} but the node is {}",
                x.dtype,
                R::Out::DTYPE,
                out.dtype
            ),
        ));
    }
    reduce(x, axes, r, st.as_mut_slice::<R::Out>())
}

pub use crate::backend::cpu::reduce::reduced_shape;

/// Checks that a reduction without identity (max, argmax, ...) has
/// something to reduce.
fn require_nonempty(name: &str, shape: &[usize], axes: &[usize]) -> Result<()> {
    if axes.iter().any(|&a| shape[a] == 0) {
        return Err(Error::value(
            name,
            format!(
                "cannot reduce over axes {axes:?} of shape {shape:?}: they hold no elements and {name} has no identity"
            ),
        ));
    }
    Ok(())
}

fn reduction(op: ReduceOp, a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    let name = op.name();
    let axes = normalize_axes(name, axes, a.ndim())?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) {
        require_nonempty(name, a.shape(), &axes)?;
    }
    let shape = reduced_shape(a.shape(), &axes, keepdims);
    Ok(Array::from_op(
        shape,
        op.out_dtype(a.dtype()),
        Reduce { op, axes, keepdims },
        vec![a.clone()],
    ))
}

/// Sum over `axes` (`None`: all axes).
///
/// bool and integers up to 32 bits sum in `int32` (unsigned: `uint32`),
/// wrapping on overflow; half floats accumulate in `f32`.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i8, 2, 3, 4, 5, 6], &[2, 3])?;
/// let s = ferrox::sum(&a, Some(&[1]), false)?;
/// assert_eq!(s.dtype(), ferrox::DType::Int32);
/// assert_eq!(s.to_vec::<i32>()?, vec![6, 15]);
/// assert_eq!(ferrox::sum(&a, Some(&[-2]), true)?.shape(), &[1, 3]);
/// assert!(ferrox::sum(&a, Some(&[0, -2]), false).is_err()); // repeated axis
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sum(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Sum, a, axes, keepdims)
}

/// Product over `axes` (`None`: all axes); dtypes as in [`sum`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// assert_eq!(ferrox::prod(&a, Some(&[0]), false)?.to_vec::<f32>()?, vec![3.0, 8.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn prod(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Prod, a, axes, keepdims)
}

/// Arithmetic mean over `axes` (`None`: all axes). Integer and bool inputs
/// give `float32` (accumulated in `f64`); the mean of nothing is NaN.
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 2, 3, 4], &[2, 2])?;
/// let m = ferrox::mean(&a, None, false)?;
/// assert_eq!(m.item::<f32>()?, 2.5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn mean(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Mean, a, axes, keepdims)
}

fn variance(
    a: &Array,
    axes: Option<&[isize]>,
    keepdims: bool,
    ddof: i32,
    sqrt: bool,
) -> Result<Array> {
    let name = if sqrt { "std" } else { "var" };
    let axes = normalize_axes(name, axes, a.ndim())?;
    if a.dtype() == DType::Complex64 {
        return complex_variance(a, &axes, keepdims, ddof, sqrt);
    }
    let out_dtype = ReduceOp::Var { ddof: 0 }.out_dtype(a.dtype());
    // Two passes in f32 (f64 for f64): mean, then the centred sum of
    // squares; half floats round once at the end.
    let compute = if out_dtype == DType::Float64 {
        DType::Float64
    } else {
        DType::Float32
    };
    let x = a.astype(compute)?;
    let signed: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
    let centred = subtract(&x, &mean(&x, Some(&signed), true)?)?;
    let op = if sqrt {
        ReduceOp::Std { ddof: ddof.into() }
    } else {
        ReduceOp::Var { ddof: ddof.into() }
    };
    let shape = reduced_shape(a.shape(), &axes, keepdims);
    Array::from_op(shape, compute, Reduce { op, axes, keepdims }, vec![centred]).astype(out_dtype)
}

/// numpy's variance of complex values: `sum(|x - mean|^2) / (n - ddof)`,
/// as float32.
fn complex_variance(
    a: &Array,
    axes: &[usize],
    keepdims: bool,
    ddof: i32,
    sqrt: bool,
) -> Result<Array> {
    let signed: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
    let centred = subtract(a, &mean(a, Some(&signed), true)?)?;
    let (re, im) = (
        crate::ops::unary::real(&centred)?,
        crate::ops::unary::imag(&centred)?,
    );
    let sq = crate::ops::binary::add(
        &crate::ops::binary::multiply(&re, &re)?,
        &crate::ops::binary::multiply(&im, &im)?,
    )?;
    let n: usize = axes.iter().map(|&d| a.shape()[d]).product();
    let divisor = (n as f64 - ddof as f64).max(0.0);
    let v = crate::ops::binary::divide(
        &sum(&sq, Some(&signed), keepdims)?,
        &Array::weak_f64(divisor),
    )?;
    if sqrt {
        crate::ops::unary::sqrt(&v)
    } else {
        Ok(v)
    }
}

/// Variance over `axes` (`None`: all axes): `sum((x - mean)^2) / (n - ddof)`,
/// with the divisor clamped at 0 like numpy and MLX (so `ddof >= n` gives
/// NaN or inf). Integer and bool inputs give `float32`; complex inputs give
/// the float32 variance of the magnitudes of the deviations (numpy's).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
/// assert_eq!(ferrox::var(&a, None, false, 0)?.item::<f32>()?, 1.25);
/// assert!((ferrox::var(&a, None, false, 1)?.item::<f32>()? - 5.0 / 3.0).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn var(a: &Array, axes: Option<&[isize]>, keepdims: bool, ddof: i32) -> Result<Array> {
    variance(a, axes, keepdims, ddof, false)
}

/// Standard deviation: the square root of [`var`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[2i32, 4, 4, 4, 5, 5, 7, 9], &[8])?;
/// assert_eq!(ferrox::std(&a, None, false, 0)?.item::<f32>()?, 2.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn std(a: &Array, axes: Option<&[isize]>, keepdims: bool, ddof: i32) -> Result<Array> {
    variance(a, axes, keepdims, ddof, true)
}

/// Maximum over `axes` (`None`: all axes). NaN propagates; reducing over an
/// axis of length 0 is an error (there is no identity).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 5.0, 3.0, 2.0], &[2, 2])?;
/// assert_eq!(ferrox::max(&a, Some(&[1]), false)?.to_vec::<f32>()?, vec![5.0, 3.0]);
/// assert!(ferrox::max(&ferrox::zeros(&[0], ferrox::DType::Float32)?, None, false).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn max(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Max, a, axes, keepdims)
}

/// Minimum over `axes` (`None`: all axes); see [`max`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[4u8, 1, 7], &[3])?;
/// assert_eq!(ferrox::min(&a, None, false)?.item::<u8>()?, 1);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn min(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Min, a, axes, keepdims)
}

/// True where every element over `axes` is non-zero (`true` for nothing).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1i32, 0, 2, 3], &[2, 2])?;
/// assert_eq!(ferrox::all(&a, Some(&[1]), false)?.to_vec::<bool>()?, vec![false, true]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn all(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::All, a, axes, keepdims)
}

/// True where any element over `axes` is non-zero (`false` for nothing).
///
/// ```
/// let a = ferrox::Array::from_slice(&[0.0f32, 0.0, 0.5, 0.0], &[2, 2])?;
/// assert_eq!(ferrox::any(&a, Some(&[0]), false)?.to_vec::<bool>()?, vec![true, false]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn any(a: &Array, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
    reduction(ReduceOp::Any, a, axes, keepdims)
}

/// argmax or argmin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ArgOp {
    /// Index of the maximum.
    Max,
    /// Index of the minimum.
    Min,
}

/// Index of the first extreme element along `axis`, or of the flattened
/// array for `None`. The output is `uint32`, row-major over the other
/// dimensions.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArgReduce {
    /// Which extreme.
    pub op: ArgOp,
    /// The reduced axis; `None` for the flattened array.
    pub axis: Option<usize>,
    /// Whether the output keeps the reduced axes as size 1.
    pub keepdims: bool,
}

impl crate::graph::export::Exportable for ArgReduce {
    const KIND: &'static str = "arg_reduce";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.name())?;
        let axis = self.axis.map(|a| isize::try_from(a).unwrap_or(isize::MAX));
        arg_reduction(self.op, x, axis, self.keepdims)
    }
}

impl ArgReduce {
    /// The output shape and the reduced length for an input of `shape`.
    fn shape_for(&self, shape: &[usize]) -> Result<(Vec<usize>, usize)> {
        let name = self.name();
        let (out, length) = match self.axis {
            None => (
                if self.keepdims {
                    vec![1; shape.len()]
                } else {
                    vec![]
                },
                shape.iter().product(),
            ),
            Some(ax) => (reduced_shape(shape, &[ax], self.keepdims), shape[ax]),
        };
        if length == 0 {
            return Err(Error::value(
                name,
                format!(
                    "cannot reduce an empty selection (shape {shape:?}, axis {:?}): {name} has no identity",
                    self.axis
                ),
            ));
        }
        if length > u32::MAX as usize {
            return Err(Error::value(
                name,
                format!("{length} elements along the reduced axis do not fit uint32 indices"),
            ));
        }
        Ok((out, length))
    }
}

impl Primitive for ArgReduce {
    fn name(&self) -> &'static str {
        match self.op {
            ArgOp::Max => "argmax",
            ArgOp::Min => "argmin",
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let x = &inputs[0];
        let mut st = out_storage(out)?;
        let dst = st.as_mut_slice::<u32>();
        with_dtype!(x.dtype, T => match self.op {
            ArgOp::Max => arg_reduce::<T, true>(x, self.axis, dst),
            ArgOp::Min => arg_reduce::<T, false>(x, self.axis, dst),
        })?;
        Ok(Data::contiguous(st, out.shape))
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        if self.axis.is_some_and(|a| a >= shape.len()) {
            return None;
        }
        Some(self.shape_for(shape).map(|(s, _)| s))
    }
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        // Indices are piecewise constant: the cotangent is zero.
        grad_helpers::zero_cotangents(p, argnums)
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::ops::creation::zeros_like(output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let x = &inputs[0];
        let Some(ax) = axes[0] else {
            let y = arg_reduction(self.op, x, self.axis.map(|a| a as isize), self.keepdims)?;
            return Ok((y, None));
        };
        let x = grad_helpers::batch_front(x, Some(ax))?;
        let b = x.shape()[0];
        let y = match self.axis {
            Some(a) => arg_reduction(self.op, &x, Some(a as isize + 1), self.keepdims)?,
            None => {
                let flat = grad_helpers::reshape_to(&x, &[b, x.size() / b.max(1)])?;
                let y = arg_reduction(self.op, &flat, Some(1), false)?;
                if self.keepdims {
                    let mut shape = vec![b];
                    shape.extend(std::iter::repeat_n(1, x.ndim() - 1));
                    grad_helpers::reshape_to(&y, &shape)?
                } else {
                    y
                }
            }
        };
        Ok((y, Some(0)))
    }
    crate::primitive_common!();
}

fn arg_reduction(op: ArgOp, a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    let name = ArgReduce {
        op,
        axis: None,
        keepdims,
    }
    .name();
    let axis = match axis {
        None => None,
        Some(ax) => Some(normalize_axis(name, ax, a.ndim())?),
    };
    let prim = ArgReduce { op, axis, keepdims };
    let (shape, _) = prim.shape_for(a.shape())?;
    Ok(Array::from_op(shape, DType::UInt32, prim, vec![a.clone()]))
}

/// Indices (`uint32`) of the maxima along `axis`, or of the flattened array
/// for `None` (then `keepdims` gives every axis size 1). Ties and NaNs:
/// the first occurrence wins, and a NaN beats every number (numpy's rule).
///
/// ```
/// let a = ferrox::Array::from_slice(&[1.0f32, 9.0, 3.0, 7.0, 2.0, 8.0], &[2, 3])?;
/// assert_eq!(ferrox::argmax(&a, Some(1), false)?.to_vec::<u32>()?, vec![1, 2]);
/// assert_eq!(ferrox::argmax(&a, None, false)?.item::<u32>()?, 1);
/// assert_eq!(ferrox::argmax(&a, None, true)?.shape(), &[1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn argmax(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduction(ArgOp::Max, a, axis, keepdims)
}

/// Indices (`uint32`) of the minima; see [`argmax`].
///
/// ```
/// let a = ferrox::Array::from_slice(&[3i32, 1, 1, 0, 5, 0], &[3, 2])?;
/// assert_eq!(ferrox::argmin(&a, Some(0), true)?.to_vec::<u32>()?, vec![1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn argmin(a: &Array, axis: Option<isize>, keepdims: bool) -> Result<Array> {
    arg_reduction(ArgOp::Min, a, axis, keepdims)
}

impl Array {
    /// Method form of [`sum`].
    ///
    /// ```
    /// let a = ferrox::ones(&[2, 3], ferrox::DType::Float32)?;
    /// assert_eq!(a.sum(Some(&[-1]), false)?.to_vec::<f32>()?, vec![3.0, 3.0]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn sum(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        sum(self, axes, keepdims)
    }
    /// Method form of [`prod`].
    ///
    /// ```
    /// let a = ferrox::full(&[3], 2.0, ferrox::DType::Int64)?;
    /// assert_eq!(a.prod(None, false)?.item::<i64>()?, 8);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn prod(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        prod(self, axes, keepdims)
    }
    /// Method form of [`mean`].
    ///
    /// ```
    /// let a = ferrox::arange(0.0, 4.0, 1.0, ferrox::DType::Float32)?;
    /// assert_eq!(a.mean(None, false)?.item::<f32>()?, 1.5);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn mean(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        mean(self, axes, keepdims)
    }
    /// Method form of [`var`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f64, 3.0], &[2])?;
    /// assert_eq!(a.var(None, false, 0)?.item::<f64>()?, 1.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn var(&self, axes: Option<&[isize]>, keepdims: bool, ddof: i32) -> Result<Array> {
        var(self, axes, keepdims, ddof)
    }
    /// Method form of [`std()`](crate::std()).
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1.0f64, 3.0], &[2])?;
    /// assert_eq!(a.std(None, false, 0)?.item::<f64>()?, 1.0);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn std(&self, axes: Option<&[isize]>, keepdims: bool, ddof: i32) -> Result<Array> {
        std(self, axes, keepdims, ddof)
    }
    /// Method form of [`max`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1i16, -4, 9], &[3])?;
    /// assert_eq!(a.max(None, false)?.item::<i16>()?, 9);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn max(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        max(self, axes, keepdims)
    }
    /// Method form of [`min`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[1i16, -4, 9], &[3])?;
    /// assert_eq!(a.min(None, false)?.item::<i16>()?, -4);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn min(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        min(self, axes, keepdims)
    }
    /// Method form of [`all`].
    ///
    /// ```
    /// let a = ferrox::ones(&[4], ferrox::DType::Bool)?;
    /// assert!(a.all(None, false)?.item::<bool>()?);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn all(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        all(self, axes, keepdims)
    }
    /// Method form of [`any`].
    ///
    /// ```
    /// let a = ferrox::zeros(&[4], ferrox::DType::Int32)?;
    /// assert!(!a.any(None, false)?.item::<bool>()?);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn any(&self, axes: Option<&[isize]>, keepdims: bool) -> Result<Array> {
        any(self, axes, keepdims)
    }
    /// Method form of [`argmax`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.5f32, 2.5, 1.0], &[3])?;
    /// assert_eq!(a.argmax(Some(0), false)?.item::<u32>()?, 1);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn argmax(&self, axis: Option<isize>, keepdims: bool) -> Result<Array> {
        argmax(self, axis, keepdims)
    }
    /// Method form of [`argmin`].
    ///
    /// ```
    /// let a = ferrox::Array::from_slice(&[0.5f32, 2.5, -1.0], &[3])?;
    /// assert_eq!(a.argmin(None, false)?.item::<u32>()?, 2);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn argmin(&self, axis: Option<isize>, keepdims: bool) -> Result<Array> {
        argmin(self, axis, keepdims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::graph::layout::row_major_strides;
    use half::{bf16, f16};

    /// Evaluates `prim` on a hand-built strided view of `storage_values`.
    fn eval_view<T: Pod + Element, O: Pod + Element>(
        prim: &dyn Primitive,
        storage_values: &[T],
        shape: &[usize],
        strides: Vec<isize>,
        offset: usize,
        out_shape: &[usize],
    ) -> Vec<O> {
        let mut st = Storage::new(std::mem::size_of_val(storage_values), false).unwrap();
        st.as_mut_slice::<T>().copy_from_slice(storage_values);
        let data = Data {
            storage: std::sync::Arc::new(st),
            strides,
            offset,
        };
        let x = Operand {
            data: &data,
            shape,
            dtype: T::DTYPE,
        };
        let d = prim
            .eval_cpu(
                &[x],
                OutSpec {
                    shape: out_shape,
                    dtype: O::DTYPE,
                },
            )
            .unwrap();
        d.to_vec::<O>(out_shape)
    }

    #[test]
    fn dtype_rules_follow_mlx() {
        use DType::*;
        let cases = [
            (Bool, Int32, Float32),
            (Int8, Int32, Float32),
            (UInt16, UInt32, Float32),
            (UInt64, UInt64, Float32),
            (Int64, Int64, Float32),
            (Float16, Float16, Float16),
            (BFloat16, BFloat16, BFloat16),
            (Complex64, Complex64, Complex64),
        ];
        for (d, s, m) in cases {
            let a = crate::ops::creation::zeros(&[2], d).unwrap();
            assert_eq!(sum(&a, None, false).unwrap().dtype(), s, "{d}");
            assert_eq!(prod(&a, None, false).unwrap().dtype(), s, "{d}");
            assert_eq!(mean(&a, None, false).unwrap().dtype(), m, "{d}");
            assert_eq!(max(&a, None, false).unwrap().dtype(), d, "{d}");
            assert_eq!(all(&a, None, false).unwrap().dtype(), Bool, "{d}");
            assert_eq!(argmin(&a, None, false).unwrap().dtype(), UInt32, "{d}");
        }
    }

    #[test]
    fn axes_are_validated() {
        let a = crate::ops::creation::zeros(&[2, 3], DType::Float32).unwrap();
        let e = sum(&a, Some(&[2]), false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Axis);
        assert!(e.to_string().starts_with("sum: axis 2"), "{e}");
        let e = mean(&a, Some(&[1, -1]), false).unwrap_err();
        assert!(e.to_string().contains("repeated axis"), "{e}");
        assert_eq!(
            argmax(&a, Some(-3), false).unwrap_err().kind(),
            ErrorKind::Axis
        );
        assert_eq!(
            var(&a, Some(&[5]), false, 0).unwrap_err().kind(),
            ErrorKind::Axis
        );
    }

    #[test]
    fn keepdims_and_no_axes_shapes() {
        let a = crate::ops::creation::ones(&[2, 3, 4], DType::Int8).unwrap();
        assert_eq!(sum(&a, Some(&[0, 2]), true).unwrap().shape(), &[1, 3, 1]);
        assert_eq!(sum(&a, None, false).unwrap().shape(), &[] as &[usize]);
        let none = sum(&a, Some(&[]), false).unwrap();
        assert_eq!(none.shape(), &[2, 3, 4]);
        assert_eq!(none.dtype(), DType::Int32);
        assert_eq!(none.to_vec::<i32>().unwrap(), vec![1; 24]);
    }

    #[test]
    fn empty_reductions() {
        let e = crate::ops::creation::zeros(&[0, 3], DType::Float32).unwrap();
        assert_eq!(
            sum(&e, Some(&[0]), false).unwrap().to_vec::<f32>().unwrap(),
            vec![0.0; 3]
        );
        assert_eq!(
            prod(&e, Some(&[0]), false)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            vec![1.0; 3]
        );
        assert!(
            mean(&e, Some(&[0]), false)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()[0]
                .is_nan()
        );
        assert!(all(&e, None, false).unwrap().item::<bool>().unwrap());
        assert!(!any(&e, None, false).unwrap().item::<bool>().unwrap());
        // No identity: errors that name the op and the shape.
        let err = max(&e, Some(&[0]), false).unwrap_err();
        assert!(
            err.to_string().starts_with("max: ") && err.to_string().contains("[0, 3]"),
            "{err}"
        );
        assert!(min(&e, None, false).is_err());
        assert!(
            argmax(&e, None, false)
                .unwrap_err()
                .to_string()
                .starts_with("argmax:")
        );
        assert!(argmin(&e, Some(0), false).is_err());
        // Reducing the non-empty axis of an empty array is fine.
        assert_eq!(max(&e, Some(&[1]), false).unwrap().shape(), &[0]);
        assert_eq!(
            argmax(&e, Some(1), false).unwrap().to_vec::<u32>().unwrap(),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn small_integer_sums_widen_and_wrap_like_mlx() {
        let a = Array::from_slice(&[100i8; 4], &[4]).unwrap();
        assert_eq!(sum(&a, None, false).unwrap().item::<i32>().unwrap(), 400);
        let b = Array::from_slice(&[200u8; 3], &[3]).unwrap();
        assert_eq!(sum(&b, None, false).unwrap().item::<u32>().unwrap(), 600);
        let c = Array::from_slice(&[i32::MAX, 1], &[2]).unwrap();
        assert_eq!(
            sum(&c, None, false).unwrap().item::<i32>().unwrap(),
            i32::MIN
        );
        let t = Array::from_slice(&[true, true, false], &[3]).unwrap();
        assert_eq!(sum(&t, None, false).unwrap().item::<i32>().unwrap(), 2);
    }

    #[test]
    fn half_sums_accumulate_in_f32() {
        // 4096 ones: an f16 accumulator would stop at 2048.
        let a = crate::ops::creation::ones(&[4096], DType::Float16).unwrap();
        assert_eq!(
            sum(&a, None, false).unwrap().item::<f16>().unwrap(),
            f16::from_f32(4096.0)
        );
        let b = crate::ops::creation::ones(&[1000], DType::BFloat16).unwrap();
        assert_eq!(
            mean(&b, None, false).unwrap().item::<bf16>().unwrap(),
            bf16::ONE
        );
    }

    #[test]
    fn max_and_min_propagate_nan() {
        let a = Array::from_slice(&[1.0f32, f32::NAN, 3.0, 0.0], &[2, 2]).unwrap();
        let m = max(&a, Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
        assert!(m[0].is_nan() && m[1] == 3.0);
        assert!(
            min(&a, None, false)
                .unwrap()
                .item::<f32>()
                .unwrap()
                .is_nan()
        );
        assert_eq!(argmax(&a, None, false).unwrap().item::<u32>().unwrap(), 1);
        // Column 1 is [NaN, 0]: the first NaN wins, as in numpy.
        assert_eq!(
            argmin(&a, Some(0), false).unwrap().to_vec::<u32>().unwrap(),
            vec![0, 0]
        );
    }

    #[test]
    fn complex_orders_lexicographically() {
        use crate::dtype::Complex64 as C;
        let a = Array::from_slice(
            &[C::new(1.0, 5.0), C::new(2.0, -1.0), C::new(2.0, 0.0)],
            &[3],
        )
        .unwrap();
        assert_eq!(
            max(&a, None, false).unwrap().item::<C>().unwrap(),
            C::new(2.0, 0.0)
        );
        assert_eq!(argmin(&a, None, false).unwrap().item::<u32>().unwrap(), 0);
        assert_eq!(
            sum(&a, None, false).unwrap().item::<C>().unwrap(),
            C::new(5.0, 4.0)
        );
        // numpy's complex variance: the mean squared magnitude of the
        // deviations, as float32.
        let v = var(&a, None, false, 0).unwrap();
        assert_eq!(v.dtype(), DType::Float32);
        let xs = a.to_vec::<C>().unwrap();
        let n = xs.len() as f32;
        let m = xs.iter().fold(C::new(0.0, 0.0), |s, &x| s + x) / n;
        let want = xs.iter().map(|&x| (x - m).norm_sqr()).sum::<f32>() / n;
        assert!((v.item::<f32>().unwrap() - want).abs() < 1e-5);
    }

    #[test]
    fn var_and_std() {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 10.0, 20.0], &[2, 3]).unwrap();
        let v = var(&a, Some(&[1]), true, 0).unwrap();
        assert_eq!(v.shape(), &[2, 1]);
        let got = v.to_vec::<f32>().unwrap();
        assert!(
            (got[0] - 2.0 / 3.0).abs() < 1e-6 && (got[1] - 392.0 / 9.0).abs() < 1e-4,
            "{got:?}"
        );
        let s = std(&a, Some(&[0]), false, 1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        let want = [4.5f32.sqrt(), 32f32.sqrt(), 144.5f32.sqrt()];
        for (g, w) in s.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{s:?}");
        }
        // ddof >= n divides by 0 like numpy: inf, or NaN for constant data.
        assert_eq!(
            var(&a, None, false, 6).unwrap().item::<f32>().unwrap(),
            f32::INFINITY
        );
        let c = crate::ops::creation::ones(&[3], DType::Float32).unwrap();
        assert!(
            var(&c, None, false, 4)
                .unwrap()
                .item::<f32>()
                .unwrap()
                .is_nan()
        );
        // Large offset: the two-pass algorithm keeps the precision.
        let b = Array::from_slice(&[1e6f32 + 1.0, 1e6 + 2.0, 1e6 + 3.0], &[3]).unwrap();
        assert!((var(&b, None, false, 0).unwrap().item::<f32>().unwrap() - 2.0 / 3.0).abs() < 1e-3);
        let h = Array::from_slice(&[1i64, 2, 3, 4], &[4]).unwrap();
        assert_eq!(var(&h, None, false, 0).unwrap().dtype(), DType::Float32);
    }

    #[test]
    fn reductions_of_transposed_and_reversed_views() {
        // Storage holds a 3x4 row-major matrix; the view is its 4x3 transpose.
        let m: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let t_strides = vec![1, 4];
        let logical = |r: usize, c: usize| m[c * 4 + r];
        let sums: Vec<f32> = eval_view(
            &Reduce {
                op: ReduceOp::Sum,
                axes: vec![1],
                keepdims: false,
            },
            &m,
            &[4, 3],
            t_strides.clone(),
            0,
            &[4],
        );
        let want: Vec<f32> = (0..4)
            .map(|r| (0..3).map(|c| logical(r, c)).sum())
            .collect();
        assert_eq!(sums, want);
        let maxes: Vec<f32> = eval_view(
            &Reduce {
                op: ReduceOp::Max,
                axes: vec![0],
                keepdims: false,
            },
            &m,
            &[4, 3],
            t_strides.clone(),
            0,
            &[3],
        );
        assert_eq!(maxes, vec![3.0, 7.0, 11.0]);
        let idx: Vec<u32> = eval_view(
            &ArgReduce {
                op: ArgOp::Min,
                axis: None,
                keepdims: false,
            },
            &m,
            &[4, 3],
            t_strides.clone(),
            0,
            &[],
        );
        assert_eq!(idx, vec![0]);
        let idx: Vec<u32> = eval_view(
            &ArgReduce {
                op: ArgOp::Max,
                axis: Some(1),
                keepdims: false,
            },
            &m,
            &[4, 3],
            t_strides,
            0,
            &[4],
        );
        assert_eq!(idx, vec![2, 2, 2, 2]);
        // A reversed vector: storage [0..12), view x[i] = m[11 - i].
        let first_max: Vec<u32> = eval_view(
            &ArgReduce {
                op: ArgOp::Max,
                axis: Some(0),
                keepdims: false,
            },
            &m,
            &[12],
            vec![-1],
            11,
            &[],
        );
        assert_eq!(first_max, vec![0]);
        let rev_mean: Vec<f32> = eval_view(
            &Reduce {
                op: ReduceOp::Mean,
                axes: vec![0],
                keepdims: false,
            },
            &m,
            &[12],
            vec![-1],
            11,
            &[],
        );
        assert_eq!(rev_mean, vec![5.5]);
        // A broadcast view (stride 0) of a row.
        let bsum: Vec<f32> = eval_view(
            &Reduce {
                op: ReduceOp::Sum,
                axes: vec![0],
                keepdims: false,
            },
            &m[..3],
            &[5, 3],
            vec![0, 1],
            0,
            &[3],
        );
        assert_eq!(bsum, vec![0.0, 5.0, 10.0]);
        assert_eq!(row_major_strides(&[4, 3]), vec![3, 1]);
    }

    #[test]
    fn all_and_any_over_axes() {
        let a = Array::from_slice(&[1u8, 0, 1, 1, 1, 1], &[3, 2]).unwrap();
        assert_eq!(
            all(&a, Some(&[0]), false)
                .unwrap()
                .to_vec::<bool>()
                .unwrap(),
            vec![true, false]
        );
        assert_eq!(any(&a, None, true).unwrap().shape(), &[1, 1]);
        let f = Array::from_slice(&[-0.0f32, f32::NAN], &[2]).unwrap();
        assert!(any(&f, None, false).unwrap().item::<bool>().unwrap());
        assert!(!all(&f, None, false).unwrap().item::<bool>().unwrap());
    }

    #[test]
    fn primitives_are_comparable() {
        let a = crate::ops::creation::ones(&[2, 2], DType::Float32).unwrap();
        let (x, y) = (
            sum(&a, Some(&[0]), false).unwrap(),
            sum(&a, Some(&[-2]), false).unwrap(),
        );
        let (px, py) = (x.primitive().unwrap(), y.primitive().unwrap());
        assert!(px.is_equivalent(py.as_ref()));
        let z = prod(&a, Some(&[0]), false).unwrap();
        assert!(!px.is_equivalent(z.primitive().unwrap().as_ref()));
        assert_eq!(px.name(), "sum");
        let kept = sum(&a, Some(&[0]), true).unwrap();
        assert!(!px.is_equivalent(kept.primitive().unwrap().as_ref()));
    }

    #[test]
    fn output_shapes_for_other_input_shapes() {
        let a = crate::ops::creation::ones(&[2, 3], DType::Float32).unwrap();
        let s = sum(&a, Some(&[1]), true).unwrap();
        let p = s.primitive().unwrap();
        assert_eq!(p.output_shape(&[&[5, 7]]).unwrap().unwrap(), vec![5, 1]);
        let m = max(&a, Some(&[0]), false).unwrap();
        assert!(
            m.primitive()
                .unwrap()
                .output_shape(&[&[0, 7]])
                .unwrap()
                .is_err()
        );
        let i = argmax(&a, None, true).unwrap();
        assert_eq!(
            i.primitive()
                .unwrap()
                .output_shape(&[&[4, 4]])
                .unwrap()
                .unwrap(),
            vec![1, 1]
        );
    }
}
