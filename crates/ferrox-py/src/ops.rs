//! The ops of `ferrox.core`, with mlx.core's names, signatures and keywords.

use crate::array::PyArr;
use crate::convert::{dtype_of, opt_array, opt_dtype, to_array};
use crate::device::on;
use crate::errors::OrPy;
use ferrox::{Array, DType, PadMode, Sections, TensordotAxes};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyTuple};

pub(crate) type Any<'py> = Bound<'py, PyAny>;
pub(crate) type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// An int or a sequence of ints (`axis=`, `shape=`, ...).
#[derive(FromPyObject)]
pub enum Ints {
    One(isize),
    Many(Vec<isize>),
}

impl Ints {
    pub fn to_vec(&self) -> Vec<isize> {
        match self {
            Ints::One(i) => vec![*i],
            Ints::Many(v) => v.clone(),
        }
    }
}

pub(crate) fn axes(a: &Option<Ints>) -> Option<Vec<isize>> {
    a.as_ref().map(Ints::to_vec)
}

/// A shape: an int or a sequence of non-negative ints.
pub fn shape_of(s: &Ints) -> PyResult<Vec<usize>> {
    s.to_vec()
        .into_iter()
        .map(|d| {
            usize::try_from(d)
                .map_err(|_| PyValueError::new_err(format!("negative dimension {d} in shape")))
        })
        .collect()
}

pub(crate) fn ok(r: ferrox::Result<Array>) -> PyResult<PyArr> {
    r.py().map(PyArr::new)
}

pub(crate) fn list(py: Python<'_>, v: Vec<Array>) -> PyResult<Bound<'_, PyList>> {
    let items = v
        .into_iter()
        .map(|a| Py::new(py, PyArr::new(a)))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

fn arrays(seq: &Any<'_>) -> PyResult<Vec<Array>> {
    seq.try_iter()?.map(|o| to_array(&o?)).collect()
}

// ---------------------------------------------------------------- creation

fn scalar_dtype(v: &Any<'_>) -> DType {
    if v.is_instance_of::<PyBool>() {
        DType::Bool
    } else if v.is_instance_of::<PyInt>() {
        DType::Int32
    } else {
        DType::Float32
    }
}

/// zeros(shape, dtype=float32, *, stream=None) -> array
///
/// An array of zeros.
///
/// Example:
///     >>> ferrox.core.zeros((2,)).tolist()
///     [0.0, 0.0]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn zeros(shape: Ints, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let s = shape_of(&shape)?;
    ok(on(stream, || ferrox::zeros(&s, d))?)
}

/// ones(shape, dtype=float32, *, stream=None) -> array
///
/// An array of ones.
///
/// Example:
///     >>> ferrox.core.ones((2,), ferrox.core.int32).tolist()
///     [1, 1]
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, *, stream = None))]
fn ones(shape: Ints, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let s = shape_of(&shape)?;
    ok(on(stream, || ferrox::ones(&s, d))?)
}

/// full(shape, vals, dtype=None, *, stream=None) -> array
///
/// An array of ``shape`` filled with ``vals`` (a scalar, or an array broadcast to ``shape``).
///
/// Example:
///     >>> ferrox.core.full((2,), 7).tolist()
///     [7, 7]
#[pyfunction]
#[pyo3(signature = (shape, vals, dtype = None, *, stream = None))]
fn full(
    shape: Ints,
    vals: &Any<'_>,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let s = shape_of(&shape)?;
    let dtype = opt_dtype(dtype)?;
    if (vals.is_instance_of::<PyFloat>() || vals.is_instance_of::<PyInt>())
        && !(vals.is_instance_of::<PyInt>() && dtype.is_some_and(|d| d.size() == 8))
    {
        let d = dtype.unwrap_or_else(|| scalar_dtype(vals));
        if let Ok(i) = vals.extract::<i128>() {
            crate::convert::check_int_range(i, i, Some(d))?;
        }
        let v: f64 = vals.extract()?;
        return ok(on(stream, || ferrox::full(&s, v, d))?);
    }
    let v = crate::convert::new_array(vals, dtype)?;
    ok(on(stream, || {
        ferrox::broadcast_to(&v, &s).and_then(|b| ferrox::contiguous(&b))
    })?)
}

/// zeros_like(a, /, dtype=None, *, stream=None) -> array
///
/// Zeros with the shape (and, by default, the dtype) of ``a``.
///
/// Example:
///     >>> ferrox.core.zeros_like(ferrox.core.array([1, 2])).tolist()
///     [0, 0]
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
fn zeros_like(a: &Any<'_>, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let d = opt_dtype(dtype)?;
    // Built on the template, so a shapeless compile follows its shape.
    let d = d.unwrap_or(a.dtype());
    ok(on(stream, || ferrox::ops::creation::fill_like(&a, 0.0, d))?)
}

/// ones_like(a, /, dtype=None, *, stream=None) -> array
///
/// Ones with the shape (and, by default, the dtype) of ``a``.
///
/// Example:
///     >>> ferrox.core.ones_like(ferrox.core.array([1, 2])).tolist()
///     [1, 1]
#[pyfunction]
#[pyo3(signature = (a, /, dtype = None, *, stream = None))]
fn ones_like(a: &Any<'_>, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let d = opt_dtype(dtype)?;
    // Built on the template, so a shapeless compile follows its shape.
    let d = d.unwrap_or(a.dtype());
    ok(on(stream, || ferrox::ops::creation::fill_like(&a, 1.0, d))?)
}

/// full_like(a, /, fill_value, dtype=None, *, stream=None) -> array
///
/// An array shaped like ``a`` filled with ``fill_value``.
///
/// Example:
///     >>> ferrox.core.full_like(ferrox.core.array([1, 2]), 5).tolist()
///     [5, 5]
#[pyfunction]
#[pyo3(signature = (a, /, fill_value, dtype = None, *, stream = None))]
fn full_like(
    a: &Any<'_>,
    fill_value: f64,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let d = opt_dtype(dtype)?.unwrap_or(a.dtype());
    ok(on(stream, || {
        ferrox::ops::creation::fill_like(&a, fill_value, d)
    })?)
}

/// `arange(stop)`, `arange(start, stop, step=None)`, `arange(stop=n,
/// step=s)`; int32 when every bound is an int (int64 when one does not fit),
/// else float32.
///
/// Example:
///     >>> ferrox.core.arange(0, 6, 2).tolist()
///     [0, 2, 4]
///     >>> ferrox.core.arange(stop=3).tolist()
///     [0, 1, 2]
#[pyfunction]
#[pyo3(signature = (*args, start = None, stop = None, step = None, dtype = None, stream = None))]
#[pyo3(text_signature = "(start=None, stop=None, step=None, dtype=None, *, stream=None)")]
fn arange<'py>(
    args: &Bound<'py, PyTuple>,
    start: Option<Any<'py>>,
    stop: Option<Any<'py>>,
    step: Option<Any<'py>>,
    dtype: Option<Any<'py>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    // MLX's two forms, `arange(start, stop, step=None, dtype=None)` and
    // `arange(stop, step=None, dtype=None)`: one positional bound is the
    // stop unless `stop=` is given too, and a keyword `start` needs a stop.
    let keyword_start = start.is_some();
    let mut slots = [start, stop, step, dtype];
    let names = ["start", "stop", "step", "dtype"];
    let positional: Vec<Any<'py>> = args.iter().collect();
    if positional.len() > 4 {
        return Err(PyTypeError::new_err(format!(
            "arange() takes at most 4 positional arguments ({} given)",
            positional.len()
        )));
    }
    let first = usize::from(positional.len() == 1 && slots[1].is_none());
    for (i, v) in positional.into_iter().enumerate() {
        let slot = &mut slots[i + first];
        if slot.is_some() {
            return Err(PyTypeError::new_err(format!(
                "arange() got multiple values for argument '{}'",
                names[i + first]
            )));
        }
        *slot = Some(v);
    }
    let [start, stop, step, dtype] = slots;
    let stop = stop.filter(|s| !s.is_none() || !keyword_start);
    let py_zero;
    let (start, stop) = match (start.filter(|s| !s.is_none()), stop) {
        (Some(_), None) if keyword_start => {
            return Err(PyTypeError::new_err(
                "arange(): a keyword start needs a stop: arange(start=a, stop=b[, step])",
            ))
        }
        (Some(start), stop) => (start, stop),
        // `arange(stop)` or `arange(stop=n)`: start at 0.
        (None, Some(stop)) if !stop.is_none() => {
            py_zero = 0i64.into_pyobject(stop.py())?.into_any();
            (py_zero, Some(stop))
        }
        _ => return Err(PyTypeError::new_err(
            "arange() needs a stop: arange(stop), arange(start, stop[, step]) or arange(stop=n)",
        )),
    };
    let (stop, step, dtype) = (stop.as_ref(), step.as_ref(), dtype.as_ref());
    let mut all_int = start.is_instance_of::<PyInt>();
    let (b, e) = match stop {
        Some(s) if !s.is_none() => {
            all_int &= s.is_instance_of::<PyInt>();
            (start.extract::<f64>()?, s.extract::<f64>()?)
        }
        _ => (0.0, start.extract::<f64>()?),
    };
    let st = match step {
        Some(s) if !s.is_none() => {
            all_int &= s.is_instance_of::<PyInt>();
            s.extract::<f64>()?
        }
        _ => 1.0,
    };
    // Integers that do not fit int32 infer int64, as array() does.
    let fits_i32 = |v: f64| (i32::MIN as f64..=i32::MAX as f64).contains(&v);
    let d = opt_dtype(dtype)?.unwrap_or(if !all_int {
        DType::Float32
    } else if fits_i32(b) && fits_i32(e) && fits_i32(st) {
        DType::Int32
    } else {
        DType::Int64
    });
    ok(on(stream, || ferrox::arange(b, e, st, d))?)
}

/// linspace(start, stop, num=50, dtype=float32, *, stream=None) -> array
///
/// ``num`` evenly spaced values from ``start`` to ``stop`` (included
/// unless ``endpoint=False``, when the step is ``(stop - start) / num``).
///
/// Example:
///     >>> ferrox.core.linspace(0, 1, 3).tolist()
///     [0.0, 0.5, 1.0]
///     >>> ferrox.core.linspace(0, 1, 4, endpoint=False).tolist()
///     [0.0, 0.25, 0.5, 0.75]
#[pyfunction]
#[pyo3(signature = (start, stop, num = 50, endpoint = true, dtype = None, *, stream = None))]
fn linspace(
    start: f64,
    stop: f64,
    num: i64,
    endpoint: bool,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let num = usize::try_from(num)
        .map_err(|_| PyValueError::new_err(format!("linspace: num {num} is negative")))?;
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    // Without the endpoint the points are those of `num + 1` points, the
    // last dropped.
    let stop = if endpoint || num == 0 {
        stop
    } else {
        start + (stop - start) * (num as f64 - 1.0) / num as f64
    };
    ok(on(stream, || {
        if d.is_inexact() {
            ferrox::linspace(start, stop, num, d)
        } else {
            // numpy: integer points are the float points, truncated.
            ferrox::linspace(start, stop, num, DType::Float64)?.astype(d)
        }
    })?)
}

pub(crate) fn dim(n: i64, what: &str) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| PyValueError::new_err(format!("{what} {n} is negative")))
}

/// eye(n, m=None, k=0, dtype=float32, *, stream=None) -> array
///
/// An ``n`` x ``m`` matrix with ones on diagonal ``k``.
///
/// Example:
///     >>> ferrox.core.eye(2).tolist()
///     [[1.0, 0.0], [0.0, 1.0]]
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = None, *, stream = None))]
fn eye(
    n: i64,
    m: Option<i64>,
    k: isize,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let (n, m) = (dim(n, "eye: n")?, m.map(|m| dim(m, "eye: m")).transpose()?);
    ok(on(stream, || ferrox::eye(n, m, k, d))?)
}

/// identity(n, dtype=float32, *, stream=None) -> array
///
/// The ``n`` x ``n`` identity matrix.
///
/// Example:
///     >>> ferrox.core.identity(2).tolist()
///     [[1.0, 0.0], [0.0, 1.0]]
#[pyfunction]
#[pyo3(signature = (n, dtype = None, *, stream = None))]
fn identity(n: i64, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let n = dim(n, "identity: n")?;
    ok(on(stream, || ferrox::identity(n, d))?)
}

/// tri(n, m=None, k=0, dtype=float32, *, stream=None) -> array
///
/// An ``n`` x ``m`` matrix with ones at and below diagonal ``k``.
///
/// Example:
///     >>> ferrox.core.tri(2).tolist()
///     [[1.0, 0.0], [1.0, 1.0]]
#[pyfunction]
#[pyo3(signature = (n, m = None, k = 0, dtype = None, *, stream = None))]
fn tri(
    n: i64,
    m: Option<i64>,
    k: isize,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let (n, m) = (dim(n, "tri: n")?, m.map(|m| dim(m, "tri: m")).transpose()?);
    ok(on(stream, || ferrox::tri(n, m, k, d))?)
}

// ------------------------------------------------------- unary and binary

macro_rules! unary {
    ($($name:ident => $f:path, $what:literal, $x:literal, $y:literal;)*) => {
        $(
            #[doc = concat!(stringify!($name), "(a, /, *, stream=None) -> array\n\n", $what,
                "\n\nExample:\n    >>> ferrox.core.", stringify!($name), "(ferrox.core.array(", $x, ")).tolist()\n    ", $y)]
            #[pyfunction]
            #[pyo3(signature = (a, /, *, stream = None))]
            pub fn $name(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
                let a = to_array(a)?;
                ok(on(stream, || $f(&a))?)
            }
        )*
        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

unary! {
    abs => ferrox::abs, "Element-wise absolute value (complex: the magnitude, as float32).", "[-1.5, 2.0]", "[1.5, 2.0]";
    negative => ferrox::negative, "Element-wise negation (integers wrap; bool is an error).", "[1, -2]", "[-1, 2]";
    sign => ferrox::sign, "Element-wise sign: -1, 0 or 1 (complex: ``z / |z|``).", "[-3.0, 0.0, 2.0]", "[-1.0, 0.0, 1.0]";
    square => ferrox::square, "Element-wise square.", "[2, -3]", "[4, 9]";
    sqrt => ferrox::sqrt, "Element-wise square root (integers compute in float32).", "[4.0, 9.0]", "[2.0, 3.0]";
    rsqrt => ferrox::rsqrt, "Element-wise reciprocal square root, ``1 / sqrt(a)``.", "[4.0, 16.0]", "[0.5, 0.25]";
    reciprocal => ferrox::reciprocal, "Element-wise reciprocal, ``1 / a``.", "[2.0, 4.0]", "[0.5, 0.25]";
    exp => ferrox::exp, "Element-wise exponential.", "[0.0]", "[1.0]";
    expm1 => ferrox::expm1, "Element-wise ``exp(a) - 1``, accurate near 0.", "[0.0]", "[0.0]";
    log => ferrox::log, "Element-wise natural logarithm.", "[1.0]", "[0.0]";
    log1p => ferrox::log1p, "Element-wise ``log(1 + a)``, accurate near 0.", "[0.0]", "[0.0]";
    log2 => ferrox::log2, "Element-wise base-2 logarithm.", "[8.0]", "[3.0]";
    log10 => ferrox::log10, "Element-wise base-10 logarithm.", "[100.0]", "[2.0]";
    sin => ferrox::sin, "Element-wise sine.", "[0.0]", "[0.0]";
    cos => ferrox::cos, "Element-wise cosine.", "[0.0]", "[1.0]";
    tan => ferrox::tan, "Element-wise tangent.", "[0.0]", "[0.0]";
    arcsin => ferrox::arcsin, "Element-wise inverse sine.", "[0.0]", "[0.0]";
    arccos => ferrox::arccos, "Element-wise inverse cosine.", "[1.0]", "[0.0]";
    arctan => ferrox::arctan, "Element-wise inverse tangent.", "[0.0]", "[0.0]";
    sinh => ferrox::sinh, "Element-wise hyperbolic sine.", "[0.0]", "[0.0]";
    cosh => ferrox::cosh, "Element-wise hyperbolic cosine.", "[0.0]", "[1.0]";
    tanh => ferrox::tanh, "Element-wise hyperbolic tangent.", "[0.0]", "[0.0]";
    arcsinh => ferrox::arcsinh, "Element-wise inverse hyperbolic sine.", "[0.0]", "[0.0]";
    arccosh => ferrox::arccosh, "Element-wise inverse hyperbolic cosine.", "[1.0]", "[0.0]";
    arctanh => ferrox::arctanh, "Element-wise inverse hyperbolic tangent.", "[0.0]", "[0.0]";
    sigmoid => ferrox::sigmoid, "Element-wise logistic sigmoid, ``1 / (1 + exp(-a))``.", "[0.0]", "[0.5]";
    erf => ferrox::erf, "Element-wise error function.", "[0.0]", "[0.0]";
    erfinv => ferrox::erfinv, "Element-wise inverse of the error function.", "[0.0]", "[0.0]";
    floor => ferrox::floor, "Element-wise floor (integers are returned as they are).", "[-1.5, 2.5]", "[-2.0, 2.0]";
    ceil => ferrox::ceil, "Element-wise ceiling (integers are returned as they are).", "[-1.5, 2.5]", "[-1.0, 3.0]";
    logical_not => ferrox::logical_not, "Element-wise logical not (non-zero is true), as bool.", "[0, 2]", "[True, False]";
    bitwise_invert => ferrox::bitwise_invert, "Element-wise bitwise not of integers or bools.", "[0, 1]", "[-1, -2]";
    isnan => ferrox::isnan, "Element-wise NaN test, as bool.", "[1.0, float('nan')]", "[False, True]";
    isinf => ferrox::isinf, "Element-wise infinity test (either sign), as bool.", "[1.0, float('inf')]", "[False, True]";
    isfinite => ferrox::isfinite, "Element-wise test for values that are neither infinite nor NaN.", "[1.0, float('inf')]", "[True, False]";
    real => ferrox::real, "The real part (float32 for complex64 inputs).", "[1.0]", "[1.0]";
    imag => ferrox::imag, "The imaginary part (float32 for complex64 inputs).", "[1.0]", "[0.0]";
    conjugate => ferrox::conjugate, "The complex conjugate (other dtypes are returned as they are).", "[1.0]", "[1.0]";
    conj => ferrox::conjugate, "The complex conjugate, as :func:`conjugate`.", "[1.0]", "[1.0]";
    trunc => ferrox::trunc, "Element-wise rounding towards zero.", "[-1.5, 2.5]", "[-1.0, 2.0]";
    isposinf => ferrox::isposinf, "Element-wise test for positive infinity, as bool.", "[float('inf'), -float('inf')]", "[True, False]";
    isneginf => ferrox::isneginf, "Element-wise test for negative infinity, as bool.", "[float('inf'), -float('inf')]", "[False, True]";
    degrees => ferrox::degrees, "Converts radians to degrees.", "[0.0]", "[0.0]";
    radians => ferrox::radians, "Converts degrees to radians.", "[0.0]", "[0.0]";
    positive => ferrox::positive, "Unary plus: the input (arrays are immutable).", "[1, -2]", "[1, -2]";
    stop_gradient => stop_gradient_op, "The input, with no gradient flowing back through it.", "[1.0]", "[1.0]";
}

fn stop_gradient_op(a: &Array) -> ferrox::Result<Array> {
    ferrox::stop_gradient(a)
}

macro_rules! binary {
    ($($name:ident => $f:path, $what:literal, $args:literal, $y:literal;)*) => {
        $(
            #[doc = concat!(stringify!($name), "(a, b, /, *, stream=None) -> array\n\n", $what,
                " Either operand may be a Python scalar, which takes the other's dtype.",
                "\n\nExample:\n    >>> fx = ferrox.core\n    >>> fx.", stringify!($name), "(*map(fx.array, (", $args, "))).tolist()\n    ", $y)]
            #[pyfunction]
            #[pyo3(signature = (a, b, /, *, stream = None))]
            pub fn $name(a: &Any<'_>, b: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
                let (a, b) = (to_array(a)?, to_array(b)?);
                ok(on(stream, || $f(&a, &b))?)
            }
        )*
        fn register_binary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

binary! {
    add => ferrox::add, "Element-wise sum, with numpy broadcasting and MLX's type promotion.", "1, 2", "3";
    subtract => ferrox::subtract, "Element-wise difference ``a - b``.", "5, 2", "3";
    multiply => ferrox::multiply, "Element-wise product.", "3, 4", "12";
    divide => ferrox::divide, "Element-wise true division (integers give float32).", "3, 2", "1.5";
    floor_divide => ferrox::floor_divide, "Element-wise floor division, as Python's ``//``.", "7, 2", "3";
    remainder => ferrox::remainder, "Element-wise remainder with the sign of the divisor, as Python's ``%``.", "-7, 2", "1";
    power => ferrox::power, "Element-wise ``a ** b``.", "2, 3", "8";
    maximum => ferrox::maximum, "Element-wise maximum (NaN propagates).", "1, 2", "2";
    minimum => ferrox::minimum, "Element-wise minimum (NaN propagates).", "1, 2", "1";
    arctan2 => ferrox::arctan2, "Element-wise ``arctan(a / b)`` in the quadrant of ``(b, a)``.", "0.0, 1.0", "0.0";
    logaddexp => ferrox::logaddexp, "Element-wise ``log(exp(a) + exp(b))``, computed stably.", "0.0, 0.0", "0.6931471824645996";
    equal => ferrox::equal, "Element-wise ``a == b``, as bool.", "1, 1", "True";
    not_equal => ferrox::not_equal, "Element-wise ``a != b``, as bool.", "1, 2", "True";
    greater => ferrox::greater, "Element-wise ``a > b``, as bool.", "2, 1", "True";
    greater_equal => ferrox::greater_equal, "Element-wise ``a >= b``, as bool.", "1, 1", "True";
    less => ferrox::less, "Element-wise ``a < b``, as bool.", "1, 2", "True";
    less_equal => ferrox::less_equal, "Element-wise ``a <= b``, as bool.", "2, 1", "False";
    logical_and => ferrox::logical_and, "Element-wise logical and (non-zero is true), as bool.", "1, 0", "False";
    logical_or => ferrox::logical_or, "Element-wise logical or (non-zero is true), as bool.", "1, 0", "True";
    logical_xor => ferrox::logical_xor, "Element-wise logical exclusive or (non-zero is true), as bool.", "1, 0", "True";
    bitwise_and => ferrox::bitwise_and, "Element-wise bitwise and of integers or bools.", "6, 3", "2";
    bitwise_or => ferrox::bitwise_or, "Element-wise bitwise or of integers or bools.", "6, 3", "7";
    bitwise_xor => ferrox::bitwise_xor, "Element-wise bitwise exclusive or of integers or bools.", "6, 3", "5";
    left_shift => ferrox::left_shift, "Element-wise ``a << b`` of integers.", "1, 3", "8";
    right_shift => ferrox::right_shift, "Element-wise ``a >> b`` of integers.", "8, 3", "1";
    matmul => ferrox::matmul, "Matrix product with numpy's rules (1-D operands are vectors; batch dimensions broadcast).", "[[1, 2]], [[3], [4]]", "[[11]]";
    inner => ferrox::inner, "Inner product over the last axes (numpy's ``inner``).", "[1, 2], [3, 4]", "11";
    outer => ferrox::outer, "Outer product of the flattened inputs.", "[1, 2], [3, 4]", "[[3, 4], [6, 8]]";
    kron => ferrox::kron, "Kronecker product.", "[1, 2], [1, 1]", "[1, 1, 2, 2]";
}

/// Element-wise quotient and remainder, `(floor_divide(a, b),
/// remainder(a, b))`, computed in one pass.
///
/// Example:
///     >>> [v.item() for v in ferrox.core.divmod(ferrox.core.array(7), ferrox.core.array(2))]
///     [3, 1]
#[pyfunction]
#[pyo3(signature = (a, b, /, *, stream = None))]
pub fn divmod(a: &Any<'_>, b: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<(PyArr, PyArr)> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    let (q, r) = on(stream, || ferrox::divmod(&a, &b))?.py()?;
    Ok((PyArr::new(q), PyArr::new(r)))
}

/// round(a, /, decimals=0, *, stream=None) -> array
///
/// Rounds to ``decimals`` decimal places, half to even.
///
/// Example:
///     >>> ferrox.core.round(ferrox.core.array([0.5, 1.5, 2.25]), 1).tolist()
///     [0.5, 1.5, 2.2]
#[pyfunction]
#[pyo3(signature = (a, /, decimals = 0, *, stream = None))]
pub fn round(a: &Any<'_>, decimals: i32, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::round(&a, decimals))?)
}

/// astype(a, /, dtype, *, stream=None) -> array
///
/// ``a`` converted to ``dtype``.
///
/// Example:
///     >>> ferrox.core.astype(ferrox.core.array([1.7]), ferrox.core.int32).tolist()
///     [1]
#[pyfunction]
#[pyo3(signature = (a, /, dtype, *, stream = None))]
fn astype(a: &Any<'_>, dtype: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (a, d) = (to_array(a)?, dtype_of(dtype)?);
    ok(on(stream, || ferrox::astype(&a, d))?)
}

/// view(a, /, dtype, *, stream=None) -> array
///
/// The bytes of ``a`` read as ``dtype`` (the last axis scales by the ratio of item sizes).
///
/// Example:
///     >>> ferrox.core.view(ferrox.core.array([1], ferrox.core.int32), ferrox.core.uint8).tolist()
///     [1, 0, 0, 0]
#[pyfunction]
#[pyo3(signature = (a, /, dtype, *, stream = None))]
pub fn view(a: &Any<'_>, dtype: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (a, d) = (to_array(a)?, dtype_of(dtype)?);
    ok(on(stream, || ferrox::view(&a, d))?)
}

/// where(condition, x, y, /, *, stream=None) -> array
///
/// Element-wise ``x`` where ``condition`` is true, else ``y`` (all three broadcast).
///
/// Example:
///     >>> ferrox.core.where(ferrox.core.array([True, False]), 1, 2).tolist()
///     [1, 2]
#[pyfunction]
#[pyo3(name = "where", signature = (condition, x, y, /, *, stream = None))]
fn where_(
    condition: &Any<'_>,
    x: &Any<'_>,
    y: &Any<'_>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (c, x, y) = (to_array(condition)?, to_array(x)?, to_array(y)?);
    ok(on(stream, || ferrox::r#where(&c, &x, &y))?)
}

/// clip(a, /, a_min, a_max, *, stream=None) -> array
///
/// ``a`` limited to ``[a_min, a_max]`` (either bound may be None).
///
/// Example:
///     >>> ferrox.core.clip(ferrox.core.array([-1, 5, 9]), 0, 6).tolist()
///     [0, 5, 6]
#[pyfunction]
#[pyo3(signature = (a, /, a_min, a_max, *, stream = None))]
fn clip(
    a: &Any<'_>,
    a_min: Option<&Any<'_>>,
    a_max: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, lo, hi) = (to_array(a)?, opt_array(a_min)?, opt_array(a_max)?);
    ok(on(stream, || ferrox::clip(&a, lo.as_ref(), hi.as_ref()))?)
}

// -------------------------------------------------------------- reductions

macro_rules! reduction {
    ($($name:ident => $f:path, $what:literal, $x:literal, $kw:literal, $y:literal;)*) => {
        $(
            #[doc = concat!(stringify!($name), "(a, /, axis=None, keepdims=False, *, stream=None) -> array\n\n", $what,
                " ``keepdims`` keeps the reduced axes with size 1.",
                "\n\nExample:\n    >>> ferrox.core.", stringify!($name), "(ferrox.core.array(", $x, "), ", $kw, ").tolist()\n    ", $y)]
            #[pyfunction]
            #[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
            pub fn $name(
                a: &Any<'_>,
                axis: Option<Ints>,
                keepdims: bool,
                stream: Stream<'_, '_>,
            ) -> PyResult<PyArr> {
                let a = to_array(a)?;
                let ax = axes(&axis);
                ok(on(stream, || $f(&a, ax.as_deref(), keepdims))?)
            }
        )*
        fn register_reductions(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

reduction! {
    sum => ferrox::sum, "The sum over ``axis`` (all axes when None); small integers sum in int32.", "[[1, 2], [3, 4]]", "axis=0", "[4, 6]";
    prod => ferrox::prod, "The product over ``axis`` (all axes when None).", "[[1, 2], [3, 4]]", "axis=1", "[2, 12]";
    mean => ferrox::mean, "The arithmetic mean over ``axis`` (all axes when None).", "[[1.0, 2.0], [3.0, 4.0]]", "axis=0", "[2.0, 3.0]";
    max => ferrox::max, "The maximum over ``axis`` (all axes when None); NaN propagates.", "[[1, 5], [3, 4]]", "axis=1", "[5, 4]";
    min => ferrox::min, "The minimum over ``axis`` (all axes when None); NaN propagates.", "[[1, 5], [3, 4]]", "axis=1", "[1, 3]";
    all => ferrox::all, "True where every element over ``axis`` is non-zero.", "[[1, 0], [1, 1]]", "axis=1", "[False, True]";
    any => ferrox::any, "True where some element over ``axis`` is non-zero.", "[[1, 0], [0, 0]]", "axis=1", "[True, False]";
    logsumexp => ferrox::logsumexp, "``log(sum(exp(a)))`` over ``axis``, computed stably.", "[[0.0, 0.0]]", "axis=1", "[0.6931471824645996]";
    count_nonzero => ferrox::count_nonzero, "The number of non-zero elements over ``axis``, as int32.", "[[0, 1], [2, 3]]", "axis=1", "[1, 2]";
    median => ferrox::median, "The median over ``axis`` (the mean of the two middle values for an even count).", "[[1, 3, 2], [4, 4, 8]]", "axis=1", "[2.0, 4.0]";
}

/// var(a, /, axis=None, keepdims=False, ddof=0, *, stream=None) -> array
///
/// The variance over ``axis``, dividing by ``N - ddof``.
///
/// Example:
///     >>> ferrox.core.var(ferrox.core.array([1.0, 3.0])).item()
///     1.0
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, ddof = 0, *, stream = None))]
pub fn var(
    a: &Any<'_>,
    axis: Option<Ints>,
    keepdims: bool,
    ddof: i32,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    ok(on(stream, || {
        ferrox::var(&a, ax.as_deref(), keepdims, ddof)
    })?)
}

/// std(a, /, axis=None, keepdims=False, ddof=0, *, stream=None) -> array
///
/// The standard deviation over ``axis``, dividing by ``N - ddof``.
///
/// Example:
///     >>> ferrox.core.std(ferrox.core.array([1.0, 3.0])).item()
///     1.0
#[pyfunction]
#[pyo3(name = "std", signature = (a, /, axis = None, keepdims = false, ddof = 0, *, stream = None))]
pub fn std_(
    a: &Any<'_>,
    axis: Option<Ints>,
    keepdims: bool,
    ddof: i32,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    ok(on(stream, || {
        ferrox::std(&a, ax.as_deref(), keepdims, ddof)
    })?)
}

/// argmax(a, /, axis=None, keepdims=False, *, stream=None) -> array
///
/// The index (uint32) of the first maximum along ``axis`` (of the flattened array when None).
///
/// Example:
///     >>> ferrox.core.argmax(ferrox.core.array([1, 5, 5])).item()
///     1
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn argmax(
    a: &Any<'_>,
    axis: Option<isize>,
    keepdims: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::argmax(&a, axis, keepdims))?)
}

/// argmin(a, /, axis=None, keepdims=False, *, stream=None) -> array
///
/// The index (uint32) of the first minimum along ``axis`` (of the flattened array when None).
///
/// Example:
///     >>> ferrox.core.argmin(ferrox.core.array([3, 1, 1])).item()
///     1
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
pub fn argmin(
    a: &Any<'_>,
    axis: Option<isize>,
    keepdims: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::argmin(&a, axis, keepdims))?)
}

/// softmax(a, /, axis=None, *, precise=False, stream=None) -> array
///
/// ``exp(a) / sum(exp(a))`` over ``axis``, computed stably.
///
/// Example:
///     >>> ferrox.core.softmax(ferrox.core.array([0.0, 0.0])).tolist()
///     [0.5, 0.5]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, precise = false, stream = None))]
pub fn softmax(
    a: &Any<'_>,
    axis: Option<Ints>,
    precise: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    ok(on(stream, || ferrox::softmax(&a, ax.as_deref(), precise))?)
}

macro_rules! scan {
    ($($name:ident => $f:path, $what:literal, $x:literal, $y:literal;)*) => {
        $(
            #[doc = concat!(stringify!($name), "(a, /, axis=None, *, reverse=False, inclusive=True, dtype=None, stream=None) -> array\n\n", $what,
                " ``reverse`` scans from the end; ``inclusive=False`` leaves each element out of its own output; ``dtype`` casts the input first.",
                "\n\nExample:\n    >>> ferrox.core.", stringify!($name), "(ferrox.core.array(", $x, ")).tolist()\n    ", $y)]
            #[pyfunction]
            #[pyo3(signature = (a, /, axis = None, *, reverse = false, inclusive = true, dtype = None, stream = None))]
            pub fn $name(
                a: &Any<'_>,
                axis: Option<isize>,
                reverse: bool,
                inclusive: bool,
                dtype: Option<&Any<'_>>,
                stream: Stream<'_, '_>,
            ) -> PyResult<PyArr> {
                let a = to_array(a)?;
                let d = opt_dtype(dtype)?;
                ok(on(stream, || {
                    let a = match d {
                        Some(d) => a.astype(d)?,
                        None => a,
                    };
                    $f(&a, axis, reverse, inclusive)
                })?)
            }
        )*
        fn register_scans(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $( m.add_function(wrap_pyfunction!($name, m)?)?; )*
            Ok(())
        }
    };
}

scan! {
    cumsum => ferrox::cumsum, "The cumulative sum along ``axis`` (the flattened array when None).", "[1, 2, 3]", "[1, 3, 6]";
    cumprod => ferrox::cumprod, "The cumulative product along ``axis`` (the flattened array when None).", "[1, 2, 3]", "[1, 2, 6]";
    cummax => ferrox::cummax, "The running maximum along ``axis`` (the flattened array when None).", "[1, 3, 2]", "[1, 3, 3]";
    cummin => ferrox::cummin, "The running minimum along ``axis`` (the flattened array when None).", "[3, 1, 2]", "[3, 1, 1]";
    logcumsumexp => ferrox::logcumsumexp, "The running ``log(sum(exp(a)))`` along ``axis``, computed stably.", "[0.0, 0.0]", "[0.0, 0.6931471824645996]";
}

// --------------------------------------------------------------- shape ops

/// reshape(a, /, shape, *, stream=None) -> array
///
/// ``a`` with a new shape holding as many elements (one entry may be -1); a view when the layout allows.
///
/// Example:
///     >>> ferrox.core.reshape(ferrox.core.arange(6), (2, 3)).shape
///     (2, 3)
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
pub fn reshape(a: &Any<'_>, shape: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let s = shape.to_vec();
    ok(on(stream, || ferrox::reshape(&a, &s))?)
}

/// flatten(a, /, start_axis=0, end_axis=-1, *, stream=None) -> array
///
/// ``a`` with the axes ``start_axis..=end_axis`` merged into one.
///
/// Example:
///     >>> ferrox.core.flatten(ferrox.core.zeros((2, 3, 4)), 1).shape
///     (2, 12)
#[pyfunction]
#[pyo3(signature = (a, /, start_axis = 0, end_axis = -1, *, stream = None))]
pub fn flatten(
    a: &Any<'_>,
    start_axis: isize,
    end_axis: isize,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::flatten(&a, start_axis, end_axis))?)
}

/// unflatten(a, /, axis, shape, *, stream=None) -> array
///
/// ``a`` with ``axis`` split into ``shape``.
///
/// Example:
///     >>> ferrox.core.unflatten(ferrox.core.zeros((6,)), 0, (2, 3)).shape
///     (2, 3)
#[pyfunction]
#[pyo3(signature = (a, /, axis, shape, *, stream = None))]
fn unflatten(a: &Any<'_>, axis: isize, shape: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let s = shape.to_vec();
    ok(on(stream, || ferrox::unflatten(&a, axis, &s))?)
}

/// squeeze(a, /, axis=None, *, stream=None) -> array
///
/// ``a`` without the size-1 axes (all of them, or those in ``axis``).
///
/// Example:
///     >>> ferrox.core.squeeze(ferrox.core.zeros((1, 3, 1))).shape
///     (3,)
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
pub fn squeeze(a: &Any<'_>, axis: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    ok(on(stream, || ferrox::squeeze(&a, ax.as_deref()))?)
}

/// expand_dims(a, /, axis, *, stream=None) -> array
///
/// ``a`` with size-1 axes inserted at ``axis``.
///
/// Example:
///     >>> ferrox.core.expand_dims(ferrox.core.zeros((3,)), 0).shape
///     (1, 3)
#[pyfunction]
#[pyo3(signature = (a, /, axis, *, stream = None))]
pub fn expand_dims(a: &Any<'_>, axis: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axis.to_vec();
    ok(on(stream, || ferrox::expand_dims(&a, &ax))?)
}

/// transpose(a, /, axes=None, *, stream=None) -> array
///
/// ``a`` with its axes permuted (reversed when ``axes`` is None). A view.
///
/// Example:
///     >>> ferrox.core.transpose(ferrox.core.zeros((2, 3))).shape
///     (3, 2)
#[pyfunction]
#[pyo3(signature = (a, /, axes = None, *, stream = None))]
pub fn transpose(a: &Any<'_>, axes: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let perm = match axes {
        None => None,
        Some(ax) => {
            let nd = a.ndim() as isize;
            Some(
                ax.to_vec()
                    .into_iter()
                    .map(|x| {
                        let y = if x < 0 { x + nd } else { x };
                        usize::try_from(y).map_err(|_| {
                            PyValueError::new_err(format!(
                                "transpose: axis {x} is out of range for {nd} dimensions"
                            ))
                        })
                    })
                    .collect::<PyResult<Vec<usize>>>()?,
            )
        }
    };
    ok(on(stream, || ferrox::transpose(&a, perm.as_deref()))?)
}

/// swapaxes(a, /, axis1, axis2, *, stream=None) -> array
///
/// ``a`` with two axes exchanged. A view.
///
/// Example:
///     >>> ferrox.core.swapaxes(ferrox.core.zeros((2, 3, 4)), 0, 2).shape
///     (4, 3, 2)
#[pyfunction]
#[pyo3(signature = (a, /, axis1, axis2, *, stream = None))]
pub fn swapaxes(
    a: &Any<'_>,
    axis1: isize,
    axis2: isize,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::swapaxes(&a, axis1, axis2))?)
}

/// moveaxis(a, /, source, destination, *, stream=None) -> array
///
/// ``a`` with axis ``source`` moved to ``destination``. A view.
///
/// Example:
///     >>> ferrox.core.moveaxis(ferrox.core.zeros((2, 3, 4)), 0, -1).shape
///     (3, 4, 2)
#[pyfunction]
#[pyo3(signature = (a, /, source, destination, *, stream = None))]
pub fn moveaxis(
    a: &Any<'_>,
    source: isize,
    destination: isize,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::moveaxis(&a, source, destination))?)
}

/// broadcast_to(a, /, shape, *, stream=None) -> array
///
/// ``a`` broadcast to ``shape`` (a view with zero strides).
///
/// Example:
///     >>> ferrox.core.broadcast_to(ferrox.core.array([1, 2]), (2, 2)).tolist()
///     [[1, 2], [1, 2]]
#[pyfunction]
#[pyo3(signature = (a, /, shape, *, stream = None))]
fn broadcast_to(a: &Any<'_>, shape: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let s = shape_of(&shape)?;
    ok(on(stream, || ferrox::broadcast_to(&a, &s))?)
}

/// broadcast_arrays(*arrays, stream=None) -> tuple[array, ...]
///
/// The arrays broadcast against each other.
///
/// Example:
///     >>> [a.shape for a in ferrox.core.broadcast_arrays(ferrox.core.zeros((2, 1)), ferrox.core.zeros((3,)))]
///     [(2, 3), (2, 3)]
#[pyfunction]
#[pyo3(signature = (*arrays, stream = None))]
fn broadcast_arrays<'py>(
    arrays: &Bound<'py, PyTuple>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyTuple>> {
    let xs = self::arrays(arrays)?;
    let out = on(stream, || ferrox::broadcast_arrays(&xs))?.py()?;
    PyTuple::new(arrays.py(), list(arrays.py(), out)?)
}

/// concatenate(arrays, axis=0, *, stream=None) -> array
///
/// The arrays joined along an existing axis (flattened first when ``axis`` is None).
///
/// Example:
///     >>> ferrox.core.concatenate([ferrox.core.array([1]), ferrox.core.array([2, 3])]).tolist()
///     [1, 2, 3]
#[pyfunction]
#[pyo3(signature = (arrays, axis = Some(0), *, stream = None))]
fn concatenate(arrays: &Any<'_>, axis: Option<isize>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let mut xs = self::arrays(arrays)?;
    let axis = match axis {
        Some(a) => a,
        None => {
            xs = xs
                .iter()
                .map(|x| x.reshape(&[-1]))
                .collect::<ferrox::Result<Vec<_>>>()
                .py()?;
            0
        }
    };
    ok(on(stream, || ferrox::concatenate(&xs, axis))?)
}

/// stack(arrays, axis=0, *, stream=None) -> array
///
/// The arrays joined along a new axis.
///
/// Example:
///     >>> ferrox.core.stack([ferrox.core.array([1, 2]), ferrox.core.array([3, 4])]).tolist()
///     [[1, 2], [3, 4]]
#[pyfunction]
#[pyo3(signature = (arrays, axis = 0, *, stream = None))]
fn stack(arrays: &Any<'_>, axis: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let xs = self::arrays(arrays)?;
    ok(on(stream, || ferrox::stack(&xs, axis))?)
}

/// split(a, /, indices_or_sections, axis=0, *, stream=None) -> list[array]
///
/// ``a`` cut along ``axis`` into equal sections or at the given indices.
///
/// Example:
///     >>> [p.tolist() for p in ferrox.core.split(ferrox.core.arange(4), 2)]
///     [[0, 1], [2, 3]]
#[pyfunction]
#[pyo3(signature = (a, /, indices_or_sections, axis = 0, *, stream = None))]
pub fn split<'py>(
    a: &Bound<'py, PyAny>,
    indices_or_sections: Ints,
    axis: isize,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyList>> {
    let x = to_array(a)?;
    let sections = match indices_or_sections {
        Ints::One(n) => Sections::Count(
            usize::try_from(n)
                .map_err(|_| PyValueError::new_err(format!("split: {n} sections")))?,
        ),
        Ints::Many(v) => Sections::Indices(v),
    };
    let parts = on(stream, || ferrox::split(&x, sections, axis))?.py()?;
    list(a.py(), parts)
}

/// tile(a, /, reps, *, stream=None) -> array
///
/// ``a`` repeated ``reps`` times along each axis.
///
/// Example:
///     >>> ferrox.core.tile(ferrox.core.array([1, 2]), 2).tolist()
///     [1, 2, 1, 2]
#[pyfunction]
#[pyo3(signature = (a, /, reps, *, stream = None))]
fn tile(a: &Any<'_>, reps: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let r = shape_of(&reps)?;
    ok(on(stream, || ferrox::tile(&a, &r))?)
}

/// repeat(array, /, repeats, axis=None, *, stream=None) -> array
///
/// Each element repeated ``repeats`` times along ``axis`` (of the flattened array when None).
///
/// Example:
///     >>> ferrox.core.repeat(ferrox.core.array([1, 2]), 2).tolist()
///     [1, 1, 2, 2]
#[pyfunction]
#[pyo3(signature = (array, /, repeats, axis = None, *, stream = None))]
fn repeat(
    array: &Any<'_>,
    repeats: i64,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(array)?;
    let r = dim(repeats, "repeat: repeats")?;
    ok(on(stream, || ferrox::repeat(&a, r, axis))?)
}

fn pad_widths(p: &Any<'_>) -> PyResult<Vec<(usize, usize)>> {
    let u = |x: isize| {
        usize::try_from(x).map_err(|_| PyValueError::new_err(format!("pad: negative width {x}")))
    };
    if let Ok(n) = p.extract::<isize>() {
        return Ok(vec![(u(n)?, u(n)?)]);
    }
    if let Ok((a, b)) = p.extract::<(isize, isize)>() {
        return Ok(vec![(u(a)?, u(b)?)]);
    }
    let mut out = Vec::new();
    for item in p.try_iter()? {
        let item = item?;
        if let Ok(n) = item.extract::<isize>() {
            out.push((u(n)?, u(n)?));
        } else if let Ok((a, b)) = item.extract::<(isize, isize)>() {
            out.push((u(a)?, u(b)?));
        } else if let Ok(v) = item.extract::<Vec<isize>>() {
            match v.as_slice() {
                [n] => out.push((u(*n)?, u(*n)?)),
                _ => return Err(PyValueError::new_err("pad: invalid pad_width")),
            }
        } else {
            return Err(PyValueError::new_err("pad: invalid pad_width"));
        }
    }
    Ok(out)
}

/// pad(a, pad_width, mode='constant', constant_values=0, *, stream=None) -> array
///
/// ``a`` padded with ``(before, after)`` elements per axis: with a constant (a number or a scalar array), the edge values, or the array mirrored (``'reflect'`` without, ``'symmetric'`` with the edge elements), as numpy pads.
///
/// Example:
///     >>> ferrox.core.pad(ferrox.core.array([1, 2]), 1).tolist()
///     [0, 1, 2, 0]
#[pyfunction]
#[pyo3(
    signature = (a, pad_width, mode = "constant", constant_values = None, *, stream = None),
    text_signature = "(a, pad_width, mode='constant', constant_values=0, *, stream=None)"
)]
fn pad(
    a: &Any<'_>,
    pad_width: &Any<'_>,
    mode: &str,
    constant_values: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let w = pad_widths(pad_width)?;
    let mode = match mode {
        "constant" => {
            // A Python number is a host constant; an array (perhaps traced)
            // is a graph input.
            match constant_values {
                None => PadMode::Constant(0.0),
                Some(v) if v.cast::<PyArr>().is_err() => PadMode::Constant(v.extract::<f64>()?),
                Some(v) => {
                    let v = to_array(v)?;
                    return ok(on(stream, || ferrox::pad_with_value(&a, &w, &v))?);
                }
            }
        }
        "edge" => PadMode::Edge,
        "reflect" => PadMode::Reflect,
        "symmetric" => PadMode::Symmetric,
        m => {
            return Err(PyValueError::new_err(format!(
                "pad: unknown mode {m:?}; expected 'constant', 'edge', 'reflect' or 'symmetric'"
            )))
        }
    };
    ok(on(stream, || ferrox::pad(&a, &w, mode))?)
}

/// take(a, /, indices, axis=None, *, stream=None) -> array
///
/// The elements at ``indices`` along ``axis`` (of the flattened array when None); negative indices count from the end.
///
/// Example:
///     >>> ferrox.core.take(ferrox.core.array([10, 20, 30]), ferrox.core.array([2, 0])).tolist()
///     [30, 10]
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
fn take(
    a: &Any<'_>,
    indices: &Any<'_>,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, i) = (to_array(a)?, crate::convert::new_array(indices, None)?);
    ok(on(stream, || ferrox::take(&a, &i, axis))?)
}

/// take_along_axis(a, /, indices, axis=None, *, stream=None) -> array
///
/// The elements at ``indices`` along ``axis``, the indices broadcasting with ``a`` over the other axes.
///
/// Example:
///     >>> ferrox.core.take_along_axis(ferrox.core.array([[1, 2], [3, 4]]), ferrox.core.array([[1], [0]]), 1).tolist()
///     [[2], [3]]
#[pyfunction]
#[pyo3(signature = (a, /, indices, axis = None, *, stream = None))]
fn take_along_axis(
    a: &Any<'_>,
    indices: &Any<'_>,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, i) = (to_array(a)?, to_array(indices)?);
    ok(on(stream, || ferrox::take_along_axis(&a, &i, axis))?)
}

/// put_along_axis(a, /, indices, values, axis=None, *, stream=None) -> array
///
/// A copy of ``a`` with ``values`` written at ``indices`` along ``axis``.
///
/// Example:
///     >>> ferrox.core.put_along_axis(ferrox.core.zeros((3,), ferrox.core.int32), ferrox.core.array([1]), ferrox.core.array([7]), 0).tolist()
///     [0, 7, 0]
#[pyfunction]
#[pyo3(signature = (a, /, indices, values, axis = None, *, stream = None))]
fn put_along_axis(
    a: &Any<'_>,
    indices: &Any<'_>,
    values: &Any<'_>,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, i, v) = (to_array(a)?, to_array(indices)?, to_array(values)?);
    ok(on(stream, || ferrox::put_along_axis(&a, &i, &v, axis))?)
}

/// diagonal(a, /, offset=0, axis1=0, axis2=1, *, stream=None) -> array
///
/// The diagonal ``offset`` of the plane (``axis1``, ``axis2``), as the last axis. A view.
///
/// Example:
///     >>> ferrox.core.diagonal(ferrox.core.array([[1, 2], [3, 4]])).tolist()
///     [1, 4]
#[pyfunction]
#[pyo3(signature = (a, /, offset = 0, axis1 = 0, axis2 = 1, *, stream = None))]
pub fn diagonal(
    a: &Any<'_>,
    offset: isize,
    axis1: isize,
    axis2: isize,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::diagonal(&a, offset, axis1, axis2))?)
}

/// diag(a, /, k=0, *, stream=None) -> array
///
/// The diagonal ``k`` of a matrix, or the matrix with a vector on diagonal ``k``.
///
/// Example:
///     >>> ferrox.core.diag(ferrox.core.array([1, 2])).tolist()
///     [[1, 0], [0, 2]]
#[pyfunction]
#[pyo3(signature = (a, /, k = 0, *, stream = None))]
pub fn diag(a: &Any<'_>, k: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::diag(&a, k))?)
}

/// tril(x, k=0, *, stream=None) -> array
///
/// ``x`` with the elements above diagonal ``k`` set to zero.
///
/// Example:
///     >>> ferrox.core.tril(ferrox.core.ones((2, 2))).tolist()
///     [[1.0, 0.0], [1.0, 1.0]]
#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
fn tril(x: &Any<'_>, k: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(x)?;
    ok(on(stream, || ferrox::tril(&a, k))?)
}

/// triu(x, k=0, *, stream=None) -> array
///
/// ``x`` with the elements below diagonal ``k`` set to zero.
///
/// Example:
///     >>> ferrox.core.triu(ferrox.core.ones((2, 2))).tolist()
///     [[1.0, 1.0], [0.0, 1.0]]
#[pyfunction]
#[pyo3(signature = (x, k = 0, *, stream = None))]
fn triu(x: &Any<'_>, k: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(x)?;
    ok(on(stream, || ferrox::triu(&a, k))?)
}

/// roll(a, /, shift, axis=None, *, stream=None) -> array
///
/// The elements shifted by ``shift`` along ``axis`` (of the flattened array when None), wrapping around.
///
/// Example:
///     >>> ferrox.core.roll(ferrox.core.arange(4), 1).tolist()
///     [3, 0, 1, 2]
#[pyfunction]
#[pyo3(signature = (a, /, shift, axis = None, *, stream = None))]
fn roll(a: &Any<'_>, shift: Ints, axis: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let (s, ax) = (shift.to_vec(), axes(&axis));
    ok(on(stream, || ferrox::roll(&a, &s, ax.as_deref()))?)
}

/// meshgrid(*arrays, sparse=False, indexing='xy', stream=None) -> list[array]
///
/// Coordinate grids from 1-D coordinate arrays (numpy's ``meshgrid``).
///
/// Example:
///     >>> [g.shape for g in ferrox.core.meshgrid(ferrox.core.arange(2), ferrox.core.arange(3))]
///     [(3, 2), (3, 2)]
#[pyfunction]
#[pyo3(signature = (*arrays, sparse = false, indexing = "xy", stream = None))]
fn meshgrid<'py>(
    arrays: &Bound<'py, PyTuple>,
    sparse: bool,
    indexing: &str,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyTuple>> {
    let xs = self::arrays(arrays)?;
    let out = on(stream, || ferrox::meshgrid(&xs, sparse, indexing))?.py()?;
    PyTuple::new(arrays.py(), list(arrays.py(), out)?)
}

// -------------------------------------------------------- sort and select

/// sort(a, /, axis=-1, *, stream=None) -> array
///
/// The values sorted along ``axis`` (the flattened array when None); NaN sorts last.
///
/// Example:
///     >>> ferrox.core.sort(ferrox.core.array([3, 1, 2])).tolist()
///     [1, 2, 3]
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
fn sort(a: &Any<'_>, axis: Option<isize>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::sort(&a, axis))?)
}

/// argsort(a, /, axis=-1, *, stream=None) -> array
///
/// The indices (uint32) that sort ``a`` along ``axis`` (stable).
///
/// Example:
///     >>> ferrox.core.argsort(ferrox.core.array([3, 1, 2])).tolist()
///     [1, 2, 0]
#[pyfunction]
#[pyo3(signature = (a, /, axis = Some(-1), *, stream = None))]
fn argsort(a: &Any<'_>, axis: Option<isize>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::argsort(&a, axis))?)
}

/// partition(a, /, kth, axis=-1, *, stream=None) -> array
///
/// The values rearranged so position ``kth`` holds its sorted value, smaller ones before it and larger ones after.
///
/// Example:
///     >>> ferrox.core.partition(ferrox.core.array([3, 1, 2]), 1)[1].item()
///     2
#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
fn partition(
    a: &Any<'_>,
    kth: isize,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::partition(&a, kth, axis))?)
}

/// argpartition(a, /, kth, axis=-1, *, stream=None) -> array
///
/// The indices (uint32) that partition ``a`` around position ``kth``.
///
/// Example:
///     >>> ferrox.core.argpartition(ferrox.core.array([3, 1, 2]), 0)[0].item()
///     1
#[pyfunction]
#[pyo3(signature = (a, /, kth, axis = Some(-1), *, stream = None))]
fn argpartition(
    a: &Any<'_>,
    kth: isize,
    axis: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::argpartition(&a, kth, axis))?)
}

/// topk(a, /, k, axis=-1, *, stream=None) -> array
///
/// The ``k`` largest values along ``axis``, in ascending order.
///
/// Example:
///     >>> ferrox.core.topk(ferrox.core.array([3, 1, 2]), 2).tolist()
///     [2, 3]
#[pyfunction]
#[pyo3(signature = (a, /, k, axis = Some(-1), *, stream = None))]
fn topk(a: &Any<'_>, k: i64, axis: Option<isize>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let k = dim(k, "topk: k")?;
    ok(on(stream, || ferrox::topk(&a, k, axis))?)
}

// ------------------------------------------------------------ linear algebra

/// addmm(c, a, b, /, alpha=1.0, beta=1.0, *, stream=None) -> array
///
/// ``alpha * (a @ b) + beta * c``.
///
/// Example:
///     >>> ferrox.core.addmm(ferrox.core.ones((1, 1)), ferrox.core.ones((1, 2)), ferrox.core.ones((2, 1))).tolist()
///     [[3.0]]
#[pyfunction]
#[pyo3(signature = (c, a, b, /, alpha = 1.0, beta = 1.0, *, stream = None))]
fn addmm(
    c: &Any<'_>,
    a: &Any<'_>,
    b: &Any<'_>,
    alpha: f32,
    beta: f32,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (c, a, b) = (to_array(c)?, to_array(a)?, to_array(b)?);
    ok(on(stream, || ferrox::addmm(&c, &a, &b, alpha, beta))?)
}

/// tensordot(a, b, /, axes=2, *, stream=None) -> array
///
/// The sum of products over the last ``axes`` axes of ``a`` and the first of ``b`` (or over the given pairs of axes).
///
/// Example:
///     >>> ferrox.core.tensordot(ferrox.core.ones((2, 3)), ferrox.core.ones((3, 4)), 1).shape
///     (2, 4)
#[pyfunction]
#[pyo3(signature = (a, b, /, axes = None, *, stream = None))]
fn tensordot(
    a: &Any<'_>,
    b: &Any<'_>,
    axes: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    let ax = match axes {
        None => TensordotAxes::Last(2),
        Some(o) => {
            if let Ok(n) = o.extract::<i64>() {
                TensordotAxes::Last(dim(n, "tensordot: axes")?)
            } else if let Ok((x, y)) = o.extract::<(Ints, Ints)>() {
                TensordotAxes::Pairs(x.to_vec(), y.to_vec())
            } else {
                return Err(PyTypeError::new_err(
                    "tensordot: axes must be an int or a pair of axis lists",
                ));
            }
        }
    };
    ok(on(stream, || ferrox::tensordot(&a, &b, ax))?)
}

/// einsum(subscripts, *operands, stream=None) -> array
///
/// Einstein summation (numpy's grammar, with ``...``), contracted pairwise in a greedy order (see :func:`einsum_path`).
///
/// Example:
///     >>> ferrox.core.einsum('ij,j->i', ferrox.core.ones((2, 3)), ferrox.core.ones((3,))).tolist()
///     [3.0, 3.0]
#[pyfunction]
#[pyo3(signature = (subscripts, *operands, stream = None))]
fn einsum(
    subscripts: &str,
    operands: &Bound<'_, PyTuple>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let xs = arrays(operands)?;
    ok(on(stream, || ferrox::einsum(subscripts, &xs))?)
}

// -------------------------------------------------------------- comparisons

/// isclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, stream=None) -> array
///
/// Element-wise ``|a - b| <= atol + rtol * |b|``, as bool.
///
/// Example:
///     >>> ferrox.core.isclose(ferrox.core.array([1.0]), ferrox.core.array([1.0 + 1e-9])).tolist()
///     [True]
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
fn isclose(
    a: &Any<'_>,
    b: &Any<'_>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    ok(on(stream, || {
        ferrox::isclose(&a, &b, rtol, atol, equal_nan)
    })?)
}

/// allclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, stream=None) -> array
///
/// True when :func:`isclose` holds everywhere.
///
/// Example:
///     >>> ferrox.core.allclose(ferrox.core.array([1.0]), ferrox.core.array([1.0])).item()
///     True
#[pyfunction]
#[pyo3(signature = (a, b, /, rtol = 1e-5, atol = 1e-8, *, equal_nan = false, stream = None))]
fn allclose(
    a: &Any<'_>,
    b: &Any<'_>,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    ok(on(stream, || {
        ferrox::allclose(&a, &b, rtol, atol, equal_nan)
    })?)
}

/// array_equal(a, b, /, equal_nan=False, *, stream=None) -> array
///
/// True when the shapes and all values are equal (dtypes may differ).
///
/// Example:
///     >>> ferrox.core.array_equal(ferrox.core.array([1, 2]), ferrox.core.array([1.0, 2.0])).item()
///     True
#[pyfunction]
#[pyo3(signature = (a, b, /, equal_nan = false, *, stream = None))]
fn array_equal(
    a: &Any<'_>,
    b: &Any<'_>,
    equal_nan: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    ok(on(stream, || ferrox::array_equal(&a, &b, equal_nan))?)
}

/// nan_to_num(a, nan=0.0, posinf=None, neginf=None, *, stream=None) -> array
///
/// ``a`` with NaN and infinities replaced (by default with 0 and the dtype's largest finite values).
///
/// Example:
///     >>> ferrox.core.nan_to_num(ferrox.core.array([float('nan'), 1.0])).tolist()
///     [0.0, 1.0]
#[pyfunction]
#[pyo3(signature = (a, nan = 0.0, posinf = None, neginf = None, *, stream = None))]
fn nan_to_num(
    a: &Any<'_>,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::nan_to_num(&a, nan, posinf, neginf))?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_unary(m)?;
    register_binary(m)?;
    register_reductions(m)?;
    register_scans(m)?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        zeros,
        ones,
        full,
        zeros_like,
        ones_like,
        full_like,
        arange,
        linspace,
        eye,
        identity,
        tri,
        divmod,
        round,
        astype,
        view,
        where_,
        clip,
        var,
        std_,
        argmax,
        argmin,
        softmax,
        reshape,
        flatten,
        unflatten,
        squeeze,
        expand_dims,
        transpose,
        swapaxes,
        moveaxis,
        broadcast_to,
        broadcast_arrays,
        concatenate,
        stack,
        split,
        tile,
        repeat,
        pad,
        take,
        take_along_axis,
        put_along_axis,
        diagonal,
        diag,
        tril,
        triu,
        roll,
        meshgrid,
        sort,
        argsort,
        partition,
        argpartition,
        topk,
        addmm,
        tensordot,
        einsum,
        isclose,
        allclose,
        array_equal,
        nan_to_num,
    );
    Ok(())
}
