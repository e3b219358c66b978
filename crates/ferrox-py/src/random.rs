//! `ferrox.core.random`, with mlx.core.random's names, signatures and
//! keywords, and its numbers: the same key (or seed) draws what MLX draws
//! on the CPU. Keys are uint32 arrays of shape `[2]`; `key=None` draws from
//! the calling thread's default key (see `seed`).

use crate::array::PyArr;
use crate::convert::{opt_dtype, to_array};
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::{shape_of, Ints};
use ferrox::{random, Array, DType};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

type Any<'py> = Bound<'py, PyAny>;
type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

fn ok(r: ferrox::Result<Array>) -> PyResult<PyArr> {
    r.py().map(PyArr::new)
}

/// The `key=` argument: `None`, or an array (checked by the op).
fn opt_key(key: Option<&Any<'_>>) -> PyResult<Option<Array>> {
    match key {
        Some(k) if !k.is_none() => to_array(k).map(Some),
        _ => Ok(None),
    }
}

/// A bound (`low=`, `loc=`, ...): Python floats keep their double value
/// (rounded once, to the requested dtype), Python ints are 64-bit, anything
/// else converts as an operand.
fn bound(obj: &Any<'_>) -> PyResult<Array> {
    if obj.is_instance_of::<PyBool>() {
        return to_array(obj);
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Array::scalar(v));
        }
        if let Ok(v) = obj.extract::<u64>() {
            return Ok(Array::scalar(v));
        }
        return Err(PyValueError::new_err(format!(
            "integer {} is outside the 64-bit range",
            obj.repr()?
        )));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Array::scalar(obj.extract::<f64>()?));
    }
    to_array(obj)
}

/// `shape`, or — when it is empty — the broadcast shape of the bounds, so
/// that array bounds alone set the output shape.
fn shape_or_bounds(shape: Option<&Ints>, bounds: &[&Array]) -> PyResult<Vec<usize>> {
    let s = match shape {
        Some(s) => shape_of(s)?,
        None => vec![],
    };
    if !s.is_empty() {
        return Ok(s);
    }
    let mut out: Vec<usize> = vec![];
    for b in bounds {
        out = ferrox::primitives::shape_rules::broadcast_shapes("random", &out, b.shape()).py()?;
    }
    Ok(out)
}

fn opt_shape(shape: Option<&Ints>) -> PyResult<Option<Vec<usize>>> {
    shape.map(shape_of).transpose()
}

/// `key(seed)`: the key of a non-negative integer seed (below 2**64).
///
/// Example:
///     >>> ferrox.core.random.key(0).shape
///     (2,)
#[pyfunction]
#[pyo3(signature = (seed), text_signature = "(seed)")]
fn key(seed: &Any<'_>) -> PyResult<PyArr> {
    let s = seed_value(seed)?;
    ok(random::key(s))
}

fn seed_value(seed: &Any<'_>) -> PyResult<u64> {
    // Any integer (Python or numpy) through `__index__`; not bools or floats.
    let index = if seed.is_instance_of::<PyBool>() || seed.is_instance_of::<PyFloat>() {
        None
    } else {
        seed.call_method0("__index__").ok()
    };
    let Some(index) = index else {
        return Err(PyTypeError::new_err(format!(
            "a seed must be an int, got {}",
            seed.get_type().name()?
        )));
    };
    index.extract::<u64>().map_err(|_| {
        PyValueError::new_err(format!(
            "a seed must be an integer in [0, 2**64), got {}",
            index.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

/// `seed(seed)`: resets the calling thread's default key.
///
/// Example:
///     >>> ferrox.core.random.seed(42)
#[pyfunction]
#[pyo3(signature = (seed), text_signature = "(seed)")]
fn seed(seed: &Any<'_>) -> PyResult<()> {
    random::seed(seed_value(seed)?);
    Ok(())
}

/// `split(key, num=2)`: `num` new keys, shape `(num, 2)`.
///
/// Example:
///     >>> ferrox.core.random.split(ferrox.core.random.key(0)).shape
///     (2, 2)
#[pyfunction]
#[pyo3(signature = (key, num = 2, *, stream = None), text_signature = "(key, num=2, *, stream=None)")]
fn split(key: &Any<'_>, num: i64, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let key = to_array(key)?;
    let num = usize::try_from(num)
        .map_err(|_| PyValueError::new_err(format!("split: num {num} is negative")))?;
    ok(on(stream, || random::split(&key, num))?)
}

/// `bits(shape=[], width=4, key=None)`: raw random bits as uint8/16/32/64
/// for `width` 1/2/4/8.
///
/// Example:
///     >>> ferrox.core.random.bits((3,), key=ferrox.core.random.key(0)).dtype
///     ferrox.core.uint32
#[pyfunction]
#[pyo3(signature = (shape = None, width = 4, key = None, *, stream = None), text_signature = "(shape=[], width=4, key=None, *, stream=None)")]
fn bits(
    shape: Option<Ints>,
    width: i64,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let s = opt_shape(shape.as_ref())?.unwrap_or_default();
    let key = opt_key(key)?;
    let width = usize::try_from(width)
        .map_err(|_| PyValueError::new_err(format!("bits: width {width} is negative")))?;
    ok(on(stream, || random::bits(&s, width, key.as_ref()))?)
}

/// `uniform(low=0, high=1, shape=[], dtype=float32, key=None)`: samples on
/// `[low, high)` (MLX's: rounding can give `high` for some bounds, as in
/// MLX). With `shape=[]` the shape is that of the bounds.
///
/// Example:
///     >>> ferrox.core.random.uniform(shape=(2,), key=ferrox.core.random.key(0)).shape
///     (2,)
#[pyfunction]
#[pyo3(signature = (low = None, high = None, shape = None, dtype = None, key = None, *, stream = None), text_signature = "(low=0, high=1, shape=[], dtype=None, key=None, *, stream=None)")]
fn uniform(
    low: Option<&Any<'_>>,
    high: Option<&Any<'_>>,
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let low = opt_bound(low, 0.0)?;
    let high = opt_bound(high, 1.0)?;
    let s = shape_or_bounds(shape.as_ref(), &[&low, &high])?;
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::uniform(&low, &high, &s, d, key.as_ref())
    })?)
}

fn opt_bound(obj: Option<&Any<'_>>, default: f64) -> PyResult<Array> {
    match obj {
        Some(o) if !o.is_none() => bound(o),
        _ => Ok(Array::scalar(default)),
    }
}

/// `normal(shape=[], dtype=float32, loc=0.0, scale=1.0, key=None)`: normal
/// samples (all finite), MLX's for the same key.
///
/// Example:
///     >>> ferrox.core.random.normal((2, 3), key=ferrox.core.random.key(0)).shape
///     (2, 3)
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, loc = None, scale = None, key = None, *, stream = None), text_signature = "(shape=[], dtype=None, loc=0.0, scale=1.0, key=None, *, stream=None)")]
fn normal(
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    loc: Option<&Any<'_>>,
    scale: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    loc_scale(random::normal, shape, dtype, loc, scale, key, stream)
}

/// `ferrox::random::normal`'s signature (shape, dtype, loc, scale, key).
type LocScaleSampler = fn(&[usize], DType, Array, Array, Option<&Array>) -> ferrox::Result<Array>;

/// A location-scale sampler (`normal`, `laplace`) from its Python
/// arguments.
fn loc_scale(
    sample: LocScaleSampler,
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    loc: Option<&Any<'_>>,
    scale: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let loc = opt_bound(loc, 0.0)?;
    let scale = opt_bound(scale, 1.0)?;
    let s = shape_or_bounds(shape.as_ref(), &[&loc, &scale])?;
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let key = opt_key(key)?;
    ok(on(stream, || sample(&s, d, loc, scale, key.as_ref()))?)
}

/// `laplace(shape=[], dtype=float32, loc=0.0, scale=1.0, key=None)`:
/// Laplace samples (all finite), MLX's for the same key.
///
/// Example:
///     >>> ferrox.core.random.laplace((3,), key=ferrox.core.random.key(0)).shape
///     (3,)
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, loc = None, scale = None, key = None, *, stream = None), text_signature = "(shape=[], dtype=None, loc=0.0, scale=1.0, key=None, *, stream=None)")]
fn laplace(
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    loc: Option<&Any<'_>>,
    scale: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    loc_scale(random::laplace, shape, dtype, loc, scale, key, stream)
}

/// `randint(low, high, shape=[], dtype=int32, key=None)`: integers on
/// `[low, high)`.
///
/// Example:
///     >>> ferrox.core.random.randint(0, 10, (4,), key=ferrox.core.random.key(0)).dtype
///     ferrox.core.int32
#[pyfunction]
#[pyo3(signature = (low, high, shape = None, dtype = None, key = None, *, stream = None), text_signature = "(low, high, shape=[], dtype=None, key=None, *, stream=None)")]
fn randint(
    low: &Any<'_>,
    high: &Any<'_>,
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (low, high) = (bound(low)?, bound(high)?);
    let s = shape_or_bounds(shape.as_ref(), &[&low, &high])?;
    let d = opt_dtype(dtype)?.unwrap_or(DType::Int32);
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::randint(&low, &high, &s, d, key.as_ref())
    })?)
}

/// `bernoulli(p=0.5, shape=None, key=None)`: booleans, `True` with
/// probability `p`; the shape defaults to that of `p`.
///
/// Example:
///     >>> ferrox.core.random.bernoulli(0.5, (4,), key=ferrox.core.random.key(0)).dtype
///     ferrox.core.bool_
#[pyfunction]
#[pyo3(signature = (p = None, shape = None, key = None, *, stream = None), text_signature = "(p=0.5, shape=None, key=None, *, stream=None)")]
fn bernoulli(
    p: Option<&Any<'_>>,
    shape: Option<Ints>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let p = match p {
        Some(p) if !p.is_none() => to_array(p)?,
        _ => Array::weak_f64(0.5),
    };
    let s = opt_shape(shape.as_ref())?;
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::bernoulli(&p, s.as_deref(), key.as_ref())
    })?)
}

/// `truncated_normal(lower, upper, shape=None, dtype=float32, key=None)`:
/// normal samples within `[lower, upper]`.
///
/// Example:
///     >>> ferrox.core.random.truncated_normal(-1.0, 1.0, (3,), key=ferrox.core.random.key(0)).shape
///     (3,)
#[pyfunction]
#[pyo3(signature = (lower, upper, shape = None, dtype = None, key = None, *, stream = None), text_signature = "(lower, upper, shape=None, dtype=None, key=None, *, stream=None)")]
fn truncated_normal(
    lower: &Any<'_>,
    upper: &Any<'_>,
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (lower, upper) = (bound(lower)?, bound(upper)?);
    let s = opt_shape(shape.as_ref())?;
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::truncated_normal(&lower, &upper, s.as_deref(), d, key.as_ref())
    })?)
}

/// `gumbel(shape=[], dtype=float32, key=None)`: standard Gumbel samples.
///
/// Example:
///     >>> ferrox.core.random.gumbel((3,), key=ferrox.core.random.key(0)).shape
///     (3,)
#[pyfunction]
#[pyo3(signature = (shape = None, dtype = None, key = None, *, stream = None), text_signature = "(shape=[], dtype=None, key=None, *, stream=None)")]
fn gumbel(
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let s = opt_shape(shape.as_ref())?.unwrap_or_default();
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let key = opt_key(key)?;
    ok(on(stream, || random::gumbel(&s, d, key.as_ref()))?)
}

/// `categorical(logits, axis=-1, shape=None, num_samples=None, key=None)`:
/// category indices (uint32) drawn with probabilities `softmax(logits)`.
///
/// Example:
///     >>> ferrox.core.random.categorical(ferrox.core.zeros((2, 5)), key=ferrox.core.random.key(0)).shape
///     (2,)
#[pyfunction]
#[pyo3(signature = (logits, axis = -1, shape = None, num_samples = None, key = None, *, stream = None), text_signature = "(logits, axis=-1, shape=None, num_samples=None, key=None, *, stream=None)")]
fn categorical(
    logits: &Any<'_>,
    axis: isize,
    shape: Option<Ints>,
    num_samples: Option<i64>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let logits = to_array(logits)?;
    let s = opt_shape(shape.as_ref())?;
    let n = num_samples
        .map(|n| {
            usize::try_from(n).map_err(|_| {
                PyValueError::new_err(format!("categorical: num_samples {n} is negative"))
            })
        })
        .transpose()?;
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::categorical(&logits, axis, s.as_deref(), n, key.as_ref())
    })?)
}

/// `multivariate_normal(mean, cov, shape=[], dtype=float32, key=None)`:
/// samples of shape `shape + [n]` for `mean` `[..., n]` and `cov`
/// `[..., n, n]`; `shape=[]` means the broadcast batch shape.
///
/// Example:
///     >>> ferrox.core.random.multivariate_normal(ferrox.core.zeros((2,)), ferrox.core.eye(2), (5,), key=ferrox.core.random.key(0)).shape
///     (5, 2)
#[pyfunction]
#[pyo3(signature = (mean, cov, shape = None, dtype = None, key = None, *, stream = None), text_signature = "(mean, cov, shape=[], dtype=None, key=None, *, stream=None)")]
fn multivariate_normal(
    mean: &Any<'_>,
    cov: &Any<'_>,
    shape: Option<Ints>,
    dtype: Option<&Any<'_>>,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (mean, cov) = (to_array(mean)?, to_array(cov)?);
    let s = opt_shape(shape.as_ref())?.unwrap_or_default();
    let d = opt_dtype(dtype)?.unwrap_or(DType::Float32);
    let key = opt_key(key)?;
    ok(on(stream, || {
        random::multivariate_normal(&mean, &cov, &s, d, key.as_ref())
    })?)
}

/// `permutation(x, axis=0, key=None)`: a random permutation of `range(x)`
/// (uint32, as in MLX) for an int `x`, else `x` shuffled along `axis`.
///
/// Example:
///     >>> sorted(ferrox.core.random.permutation(4, key=ferrox.core.random.key(0)).tolist())
///     [0, 1, 2, 3]
#[pyfunction]
#[pyo3(signature = (x, axis = 0, key = None, *, stream = None), text_signature = "(x, axis=0, key=None, *, stream=None)")]
fn permutation(
    x: &Any<'_>,
    axis: isize,
    key: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let key = opt_key(key)?;
    if x.is_instance_of::<PyInt>() && !x.is_instance_of::<PyBool>() {
        let n: i64 = x.extract()?;
        let n = usize::try_from(n)
            .map_err(|_| PyValueError::new_err(format!("permutation: n {n} is negative")))?;
        return ok(on(stream, || random::permutation(n, key.as_ref()))?);
    }
    let x = to_array(x)?;
    ok(on(stream, || {
        random::permutation_of(&x, axis, key.as_ref())
    })?)
}

/// The type of `ferrox.core.random.state`: one process-wide object that
/// stands for the calling thread's default key. `state[0]` is that key
/// (what the next draw without a key splits). Compiled functions thread the
/// default key themselves (each call draws fresh numbers from the calling
/// thread's key), so naming `state` in `compile`'s `inputs=`/`outputs=`
/// trees, as MLX code does, is accepted and changes nothing.
///
/// Example:
///     >>> ferrox.core.random.seed(0)
///     >>> ferrox.core.random.state[0].tolist()
///     [0, 0]
#[pyclass(name = "_RandomState", module = "ferrox.core.random", frozen)]
pub struct RandomState;

#[pymethods]
impl RandomState {
    fn __len__(&self) -> usize {
        1
    }
    fn __getitem__(&self, index: i64) -> PyResult<PyArr> {
        if index != 0 && index != -1 {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "random.state: index {index} is out of range for its one key"
            )));
        }
        ok(random::current_key())
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let key = Py::new(py, ok(random::current_key())?)?;
        Ok(pyo3::types::PyList::new(py, [key])?
            .call_method0("__iter__")?
            .unbind())
    }
    fn __repr__(&self) -> String {
        "<ferrox.core.random.state: the calling thread's default key>".to_string()
    }
}

/// Adds the `random` submodule to `ferrox.core` and registers it in
/// `sys.modules`, so `import ferrox.core.random` and
/// `from ferrox.core import random` work as well as `ferrox.core.random`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let sub = PyModule::new(py, "random")?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( sub.add_function(wrap_pyfunction!($f, &sub)?)?; )* };
    }
    add!(
        key,
        seed,
        split,
        bits,
        uniform,
        normal,
        randint,
        bernoulli,
        truncated_normal,
        gumbel,
        laplace,
        categorical,
        multivariate_normal,
        permutation
    );
    sub.add_class::<RandomState>()?;
    sub.add("state", Py::new(py, RandomState)?)?;
    sub.setattr(
        "__doc__",
        "Random numbers from counter-based Threefry keys: mlx.core.random's numbers for the same key or seed.",
    )?;
    m.add("random", &sub)?;
    // The qualified name, once the attribute is in place (functions and
    // pickling report it).
    sub.setattr("__name__", "ferrox.core.random")?;
    py.import("sys")?
        .getattr("modules")?
        .set_item("ferrox.core.random", &sub)?;
    Ok(())
}
