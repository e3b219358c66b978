//! Bindings of the core's composite ops (flip, atleast_*d, unstack, diff,
//! trace, minmax, vecdot, as_strided, broadcast_shapes, ...), with
//! mlx.core's names, signatures and keywords.

use crate::array::PyArr;
use crate::convert::{opt_dtype, to_array};
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::{axes, list, ok, shape_of, Any, Ints, Stream};
use ferrox::Array;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// flip(a, /, axis=None, *, stream=None) -> array
///
/// Reverse the order of elements along the given axis or axes (all axes
/// when ``axis`` is None).
///
/// Example:
///     >>> ferrox.core.flip(ferrox.core.array([1, 2, 3]))
///     array([3, 2, 1], dtype=int32)
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, *, stream = None))]
fn flip(a: &Any<'_>, axis: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    ok(on(stream, || ferrox::flip(&a, ax.as_deref()))?)
}

/// One array for one input, else a list, as mlx.core's atleast_*d.
fn one_or_list<'py>(
    py: Python<'py>,
    arys: &Bound<'py, PyTuple>,
    stream: Stream<'_, '_>,
    f: fn(&Array) -> ferrox::Result<Array>,
) -> PyResult<Bound<'py, PyAny>> {
    let xs = arys
        .iter()
        .map(|a| to_array(&a))
        .collect::<PyResult<Vec<_>>>()?;
    let ys = on(stream, || {
        xs.iter().map(f).collect::<ferrox::Result<Vec<_>>>()
    })?
    .py()?;
    if ys.len() == 1 {
        let y = ys.into_iter().next().expect("one element");
        return Ok(Bound::new(py, PyArr::new(y))?.into_any());
    }
    Ok(list(py, ys)?.into_any())
}

/// atleast_1d(*arys, stream=None) -> array | list[array]
///
/// View each input with at least one dimension.
///
/// Example:
///     >>> ferrox.core.atleast_1d(ferrox.core.array(1.0)).shape
///     (1,)
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_1d<'py>(
    py: Python<'py>,
    arys: &Bound<'py, PyTuple>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyAny>> {
    one_or_list(py, arys, stream, ferrox::atleast_1d)
}

/// atleast_2d(*arys, stream=None) -> array | list[array]
///
/// View each input with at least two dimensions (a vector ``[k]`` becomes
/// ``[1, k]``).
///
/// Example:
///     >>> ferrox.core.atleast_2d(ferrox.core.array([1, 2])).shape
///     (1, 2)
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_2d<'py>(
    py: Python<'py>,
    arys: &Bound<'py, PyTuple>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyAny>> {
    one_or_list(py, arys, stream, ferrox::atleast_2d)
}

/// atleast_3d(*arys, stream=None) -> array | list[array]
///
/// View each input with at least three dimensions (``[k]`` becomes
/// ``[1, k, 1]``, ``[m, k]`` becomes ``[m, k, 1]``).
///
/// Example:
///     >>> ferrox.core.atleast_3d(ferrox.core.array([1, 2])).shape
///     (1, 2, 1)
#[pyfunction]
#[pyo3(signature = (*arys, stream = None))]
fn atleast_3d<'py>(
    py: Python<'py>,
    arys: &Bound<'py, PyTuple>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyAny>> {
    one_or_list(py, arys, stream, ferrox::atleast_3d)
}

/// matrix_transpose(a, /, *, stream=None) -> array
///
/// Swap the last two axes.
///
/// Example:
///     >>> ferrox.core.matrix_transpose(ferrox.core.zeros((4, 2, 3))).shape
///     (4, 3, 2)
#[pyfunction]
#[pyo3(signature = (a, /, *, stream = None))]
fn matrix_transpose(a: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::matrix_transpose(&a))?)
}

/// unstack(x, /, *, axis=0, stream=None) -> tuple[array, ...]
///
/// Split an array into the arrays along ``axis`` (which is removed): the
/// inverse of :func:`stack`.
///
/// Example:
///     >>> [r.tolist() for r in ferrox.core.unstack(ferrox.core.array([[1, 2], [3, 4]]))]
///     [[1, 2], [3, 4]]
#[pyfunction]
#[pyo3(signature = (x, /, *, axis = 0, stream = None))]
fn unstack<'py>(
    py: Python<'py>,
    x: &Any<'py>,
    axis: isize,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = to_array(x)?;
    let parts = on(stream, || ferrox::unstack(&x, axis))?.py()?;
    PyTuple::new(py, list(py, parts)?)
}

/// as_strided(a, /, shape=None, strides=None, offset=0, *, stream=None) -> array
///
/// A view of ``a``'s elements (read as if ``a`` were row-major contiguous)
/// with the given shape, element strides and offset. Unlike MLX, a layout
/// that would read outside ``a`` raises ``ValueError`` instead of reading
/// invalid memory.
///
/// Example:
///     >>> ferrox.core.as_strided(ferrox.core.arange(4), (3, 2), (1, 1)).tolist()
///     [[0, 1], [1, 2], [2, 3]]
#[pyfunction]
#[pyo3(signature = (a, /, shape = None, strides = None, offset = 0, *, stream = None))]
fn as_strided(
    a: &Any<'_>,
    shape: Option<Ints>,
    strides: Option<Ints>,
    offset: usize,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let shape = match &shape {
        Some(s) => shape_of(s)?,
        None => a.shape().to_vec(),
    };
    let strides = match strides {
        Some(s) => s.to_vec(),
        None => {
            let mut acc = 1isize;
            let mut st = vec![0isize; shape.len()];
            for (s, &d) in st.iter_mut().zip(&shape).rev() {
                *s = acc;
                acc = acc.saturating_mul(d.max(1) as isize);
            }
            st
        }
    };
    ok(on(stream, || {
        ferrox::as_strided(&a, &shape, &strides, offset)
    })?)
}

/// broadcast_shapes(*shapes) -> tuple[int, ...]
///
/// The shape the given shapes broadcast to (numpy rules).
///
/// Example:
///     >>> ferrox.core.broadcast_shapes((1, 3), (2, 1))
///     (2, 3)
#[pyfunction]
#[pyo3(signature = (*shapes))]
fn broadcast_shapes<'py>(
    py: Python<'py>,
    shapes: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    if shapes.is_empty() {
        return Err(PyValueError::new_err(
            "broadcast_shapes: needs at least one shape",
        ));
    }
    let shapes = shapes
        .iter()
        .map(|s| shape_of(&s.extract::<Ints>()?))
        .collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let out = ferrox::broadcast_shapes(&refs).py()?;
    PyTuple::new(py, out)
}

/// diff(a, /, n=1, axis=-1, *, stream=None) -> array
///
/// The ``n``-th discrete difference along ``axis`` (``a[1:] - a[:-1]``,
/// ``n`` times; bool inputs compare with ``!=``).
///
/// Example:
///     >>> ferrox.core.diff(ferrox.core.array([1, 4, 9, 16])).tolist()
///     [3, 5, 7]
#[pyfunction]
#[pyo3(signature = (a, /, n = 1, axis = -1, *, stream = None))]
fn diff(a: &Any<'_>, n: isize, axis: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let n = usize::try_from(n).map_err(|_| {
        PyValueError::new_err(format!("diff: order n must be non-negative, got {n}"))
    })?;
    ok(on(stream, || ferrox::diff(&a, n, axis))?)
}

/// trace(a, /, offset=0, axis1=0, axis2=1, dtype=None, *, stream=None) -> array
///
/// The sum along the diagonal ``offset`` of the plane (``axis1``, ``axis2``).
///
/// Example:
///     >>> ferrox.core.trace(ferrox.core.array([[1, 2], [3, 4]])).item()
///     5
#[pyfunction]
#[pyo3(signature = (a, /, offset = 0, axis1 = 0, axis2 = 1, dtype = None, *, stream = None))]
fn trace(
    a: &Any<'_>,
    offset: isize,
    axis1: isize,
    axis2: isize,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let d = opt_dtype(dtype)?;
    ok(on(stream, || ferrox::trace(&a, offset, axis1, axis2, d))?)
}

/// minmax(a, /, axis=None, keepdims=False, *, stream=None) -> tuple[array, array]
///
/// The minimum and the maximum over the given axes.
///
/// Example:
///     >>> [v.item() for v in ferrox.core.minmax(ferrox.core.array([3, 1, 2]))]
///     [1, 3]
#[pyfunction]
#[pyo3(signature = (a, /, axis = None, keepdims = false, *, stream = None))]
fn minmax(
    a: &Any<'_>,
    axis: Option<Ints>,
    keepdims: bool,
    stream: Stream<'_, '_>,
) -> PyResult<(PyArr, PyArr)> {
    let a = to_array(a)?;
    let ax = axes(&axis);
    let (lo, hi) = on(stream, || ferrox::minmax(&a, ax.as_deref(), keepdims))?.py()?;
    Ok((PyArr::new(lo), PyArr::new(hi)))
}

/// vecdot(a, b, /, *, axis=-1, stream=None) -> array
///
/// The dot product of vectors along ``axis`` after broadcasting
/// (``sum(conj(a) * b, axis)``).
///
/// Example:
///     >>> ferrox.core.vecdot(ferrox.core.array([1.0, 2.0]), ferrox.core.array([3.0, 4.0])).item()
///     11.0
#[pyfunction]
#[pyo3(signature = (a, b, /, *, axis = -1, stream = None))]
fn vecdot(a: &Any<'_>, b: &Any<'_>, axis: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (a, b) = (to_array(a)?, to_array(b)?);
    ok(on(stream, || ferrox::vecdot(&a, &b, axis))?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        flip,
        atleast_1d,
        atleast_2d,
        atleast_3d,
        matrix_transpose,
        unstack,
        as_strided,
        broadcast_shapes,
        diff,
        trace,
        minmax,
        vecdot,
    );
    Ok(())
}
