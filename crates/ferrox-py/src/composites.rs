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
    if let [y] = ys.as_slice() {
        return Ok(Bound::new(py, PyArr::new(y.clone()))?.into_any());
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

/// searchsorted(sorted_sequence, values, /, side='left', *, stream=None) -> array
///
/// The indices (uint32) that keep the 1-D ascending ``sorted_sequence``
/// sorted if each of ``values`` were inserted before them: with ``'left'``
/// the count of smaller elements, with ``'right'`` of smaller or equal ones.
///
/// Example:
///     >>> ferrox.core.searchsorted(ferrox.core.array([1, 2, 3]), ferrox.core.array([2, 5])).tolist()
///     [1, 3]
#[pyfunction]
#[pyo3(signature = (sorted_sequence, values, /, side = "left", *, stream = None))]
fn searchsorted(
    sorted_sequence: &Any<'_>,
    values: &Any<'_>,
    side: &str,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let side = match side {
        "left" => ferrox::Side::Left,
        "right" => ferrox::Side::Right,
        other => {
            return Err(PyValueError::new_err(format!(
                "searchsorted: side must be 'left' or 'right', got {other:?}"
            )));
        }
    };
    let (s, v) = (to_array(sorted_sequence)?, to_array(values)?);
    ok(on(stream, || ferrox::searchsorted(&s, &v, side))?)
}

/// unique(a, /, size, return_index=False, return_inverse=False, return_counts=False, fill_value=None, *, stream=None)
///
/// The sorted distinct elements of the flattened array, exactly ``size``
/// of them (truncated to the smallest, or padded with ``fill_value``,
/// default the smallest element). The output shape never depends on the
/// values, so ``a`` is not evaluated. With any ``return_*`` flag, a tuple
/// (values, index, inverse, counts) of the requested parts.
///
/// Example:
///     >>> ferrox.core.unique(ferrox.core.array([2, 1, 2, 3]), 3).tolist()
///     [1, 2, 3]
#[pyfunction]
#[pyo3(signature = (a, /, size, return_index = false, return_inverse = false, return_counts = false, fill_value = None, *, stream = None))]
fn unique<'py>(
    py: Python<'py>,
    a: &Any<'py>,
    size: isize,
    return_index: bool,
    return_inverse: bool,
    return_counts: bool,
    fill_value: Option<&Any<'py>>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyAny>> {
    let size = usize::try_from(size).map_err(|_| {
        PyValueError::new_err(format!("unique: size must be non-negative, got {size}"))
    })?;
    let a = to_array(a)?;
    let fill = match fill_value {
        Some(f) if !f.is_none() => Some(to_array(f)?),
        _ => None,
    };
    let u = on(stream, || ferrox::unique(&a, size, fill.as_ref()))?.py()?;
    if !(return_index || return_inverse || return_counts) {
        return Ok(Bound::new(py, PyArr::new(u.values))?.into_any());
    }
    let mut parts = vec![u.values];
    if return_index {
        parts.push(u.index);
    }
    if return_inverse {
        parts.push(u.inverse);
    }
    if return_counts {
        parts.push(u.counts);
    }
    Ok(PyTuple::new(py, list(py, parts)?)?.into_any())
}

macro_rules! windows {
    ($($name:ident => $what:literal),* $(,)?) => {$(
        #[doc = concat!(stringify!($name), "(M, *, stream=None) -> array\n\nThe ", $what, " window of ``M`` points (float32, symmetric).\n\nExample:\n    >>> ferrox.core.", stringify!($name), "(5).shape\n    (5,)")]
        #[pyfunction]
        #[pyo3(signature = (M, *, stream = None))]
        #[allow(non_snake_case)]
        fn $name(M: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
            let m = usize::try_from(M).map_err(|_| {
                PyValueError::new_err(format!("{}: M must be non-negative, got {M}", stringify!($name)))
            })?;
            ok(on(stream, || ferrox::$name(m))?)
        }
    )*};
}

windows! {
    bartlett => "Bartlett (triangular)",
    blackman => "Blackman",
    hamming => "Hamming",
    hanning => "Hann",
}

/// slice(a, start_indices, axes, slice_size, *, stream=None) -> array
///
/// The sub-array of ``slice_size[k]`` elements from ``start_indices[k]``
/// along each ``axes[k]``. The start is an array, so a compiled function
/// serves every offset; starts are clamped so the slice fits.
///
/// Example:
///     >>> a = ferrox.core.arange(6)
///     >>> ferrox.core.slice(a, ferrox.core.array([2]), (0,), (3,)).tolist()
///     [2, 3, 4]
#[pyfunction]
#[pyo3(name = "slice", signature = (a, start_indices, axes, slice_size, *, stream = None))]
fn dynamic_slice(
    a: &Any<'_>,
    start_indices: &Any<'_>,
    axes: Vec<isize>,
    slice_size: Vec<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, start) = (to_array(a)?, to_array(start_indices)?);
    let sizes = shape_of(&Ints::Many(slice_size))?;
    ok(on(stream, || {
        ferrox::dynamic_slice(&a, &start, &axes, &sizes)
    })?)
}

/// slice_update(a, update, start_indices, axes, *, stream=None) -> array
///
/// ``a`` with ``update`` written from ``start_indices[k]`` along each
/// ``axes[k]`` (from 0 along the other axes); starts are clamped so the
/// block fits.
///
/// Example:
///     >>> a = ferrox.core.zeros((4,), dtype=ferrox.core.int32)
///     >>> ferrox.core.slice_update(a, ferrox.core.array([7, 8]), ferrox.core.array([1]), (0,)).tolist()
///     [0, 7, 8, 0]
#[pyfunction]
#[pyo3(name = "slice_update", signature = (a, update, start_indices, axes, *, stream = None))]
fn dynamic_slice_update(
    a: &Any<'_>,
    update: &Any<'_>,
    start_indices: &Any<'_>,
    axes: Vec<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, u, start) = (to_array(a)?, to_array(update)?, to_array(start_indices)?);
    ok(on(stream, || {
        ferrox::dynamic_slice_update(&a, &u, &start, &axes)
    })?)
}

/// contiguous(a, /, allow_col_major=False, *, stream=None) -> array
///
/// ``a`` laid out row-major and contiguous (a copy of a view that is not;
/// ``allow_col_major`` is accepted for compatibility, the result is always
/// row-major).
///
/// Example:
///     >>> a = ferrox.core.array([[1, 2], [3, 4]])
///     >>> ferrox.core.contiguous(a.T).tolist()
///     [[1, 3], [2, 4]]
#[pyfunction]
#[pyo3(signature = (a, /, allow_col_major = false, *, stream = None))]
fn contiguous(a: &Any<'_>, allow_col_major: bool, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let _ = allow_col_major;
    let a = to_array(a)?;
    ok(on(stream, || ferrox::contiguous(&a))?)
}

/// gather_mm(a, b, /, lhs_indices=None, rhs_indices=None, *, sorted_indices=False, stream=None) -> array
///
/// ``matmul(a[lhs_indices], b[rhs_indices])`` where the indices pick
/// entries of the flattened batch dimensions (all but the last two) of
/// each operand; a missing index array takes every entry in order.
/// ``sorted_indices`` is accepted for compatibility (a performance hint).
///
/// Example:
///     >>> a = ferrox.core.ones((3, 2, 4)); b = ferrox.core.ones((4, 5))
///     >>> ferrox.core.gather_mm(a, b, ferrox.core.array([2, 0])).shape
///     (2, 2, 5)
#[pyfunction]
#[pyo3(signature = (a, b, /, lhs_indices = None, rhs_indices = None, *, sorted_indices = false, stream = None))]
fn gather_mm(
    a: &Any<'_>,
    b: &Any<'_>,
    lhs_indices: Option<&Any<'_>>,
    rhs_indices: Option<&Any<'_>>,
    sorted_indices: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let _ = sorted_indices;
    let (a, b) = (to_array(a)?, to_array(b)?);
    let li = crate::convert::opt_array(lhs_indices)?;
    let ri = crate::convert::opt_array(rhs_indices)?;
    ok(on(stream, || {
        ferrox::gather_mm(&a, &b, li.as_ref(), ri.as_ref())
    })?)
}

/// block_masked_mm(a, b, /, block_size=64, mask_out=None, mask_lhs=None, mask_rhs=None, *, stream=None) -> array
///
/// ``matmul(a, b)`` with ``block_size`` x ``block_size`` blocks of the
/// operands and the result masked (bool masks keep or zero a block,
/// numeric ones scale it).
///
/// Example:
///     >>> a = ferrox.core.ones((4, 4))
///     >>> ferrox.core.block_masked_mm(a, a, 2, ferrox.core.array([[True, False], [False, True]])).shape
///     (4, 4)
#[pyfunction]
#[pyo3(signature = (a, b, /, block_size = 64, mask_out = None, mask_lhs = None, mask_rhs = None, *, stream = None))]
fn block_masked_mm(
    a: &Any<'_>,
    b: &Any<'_>,
    block_size: isize,
    mask_out: Option<&Any<'_>>,
    mask_lhs: Option<&Any<'_>>,
    mask_rhs: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let bs = usize::try_from(block_size).map_err(|_| {
        PyValueError::new_err(format!(
            "block_masked_mm: block_size must be positive, got {block_size}"
        ))
    })?;
    let (a, b) = (to_array(a)?, to_array(b)?);
    let mo = crate::convert::opt_array(mask_out)?;
    let ml = crate::convert::opt_array(mask_lhs)?;
    let mr = crate::convert::opt_array(mask_rhs)?;
    ok(on(stream, || {
        ferrox::block_masked_mm(&a, &b, bs, mo.as_ref(), ml.as_ref(), mr.as_ref())
    })?)
}

/// segmented_mm(a, b, /, segments, *, stream=None) -> array
///
/// One product per segment of the inner dimension: ``out[s] = a[:, start:end]
/// @ b[start:end, :]`` for each ``(start, end)`` pair in ``segments``.
///
/// Example:
///     >>> a = ferrox.core.ones((2, 4)); b = ferrox.core.ones((4, 3))
///     >>> ferrox.core.segmented_mm(a, b, ferrox.core.array([[0, 1], [1, 4]])).shape
///     (2, 2, 3)
#[pyfunction]
#[pyo3(signature = (a, b, /, segments, *, stream = None))]
fn segmented_mm(
    a: &Any<'_>,
    b: &Any<'_>,
    segments: &Any<'_>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (a, b, s) = (to_array(a)?, to_array(b)?, to_array(segments)?);
    ok(on(stream, || ferrox::segmented_mm(&a, &b, &s))?)
}

/// einsum_path(subscripts, *operands) -> tuple[list[tuple[int, ...]], str]
///
/// The contraction order :func:`einsum` uses (greedy, as numpy's
/// ``optimize="greedy"``): a list of position tuples (each contracted pair
/// is removed and its result appended) and a description.
///
/// Example:
///     >>> a, b = ferrox.core.zeros((5, 8)), ferrox.core.zeros((8, 3))
///     >>> ferrox.core.einsum_path("ij,jk", a, b)[0]
///     [(0, 1)]
#[pyfunction]
#[pyo3(signature = (subscripts, *operands))]
fn einsum_path<'py>(
    py: Python<'py>,
    subscripts: &str,
    operands: &Bound<'py, PyTuple>,
) -> PyResult<(Bound<'py, pyo3::types::PyList>, String)> {
    let xs = operands
        .iter()
        .map(|o| to_array(&o))
        .collect::<PyResult<Vec<_>>>()?;
    let shapes: Vec<&[usize]> = xs.iter().map(|a| a.shape()).collect();
    let (path, info) = ferrox::einsum_path(subscripts, &shapes).py()?;
    let steps = path
        .into_iter()
        .map(|p| PyTuple::new(py, p))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((pyo3::types::PyList::new(py, steps)?, info))
}

/// hadamard_transform(a, scale=None, stream=None) -> array
///
/// The Walsh-Hadamard transform along the last axis (a power-of-two
/// length), times ``scale`` (default ``1/sqrt(n)``).
///
/// Example:
///     >>> ferrox.core.hadamard_transform(ferrox.core.array([1.0, 2.0, 3.0, 4.0]), scale=1.0).tolist()
///     [10.0, -2.0, -4.0, 0.0]
#[pyfunction]
#[pyo3(signature = (a, scale = None, stream = None))]
fn hadamard_transform(a: &Any<'_>, scale: Option<f64>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    ok(on(stream, || ferrox::hadamard_transform(&a, scale))?)
}

/// to_fp8(x, *, stream=None) -> array
///
/// The fp8 (e4m3) codes of a float array, as uint8 (round to nearest even,
/// saturating at +-448).
///
/// Example:
///     >>> ferrox.core.to_fp8(ferrox.core.array([1.0, -2.0])).tolist()
///     [56, 192]
#[pyfunction]
#[pyo3(signature = (x, *, stream = None))]
fn to_fp8(x: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let x = to_array(x)?;
    ok(on(stream, || ferrox::to_fp8(&x))?)
}

/// from_fp8(x, dtype=bfloat16, *, stream=None) -> array
///
/// The values of fp8 (e4m3) codes stored as uint8.
///
/// Example:
///     >>> ferrox.core.from_fp8(ferrox.core.array([56, 192], dtype=ferrox.core.uint8), ferrox.core.float32).tolist()
///     [1.0, -2.0]
#[pyfunction]
#[pyo3(signature = (x, dtype = None, *, stream = None))]
fn from_fp8(x: &Any<'_>, dtype: Option<&Any<'_>>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let x = to_array(x)?;
    let d = opt_dtype(dtype)?.unwrap_or(ferrox::DType::BFloat16);
    ok(on(stream, || ferrox::from_fp8(&x, d))?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        flip,
        contiguous,
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
        searchsorted,
        unique,
        bartlett,
        blackman,
        hamming,
        hanning,
        dynamic_slice,
        dynamic_slice_update,
        gather_mm,
        block_masked_mm,
        segmented_mm,
        einsum_path,
        hadamard_transform,
        to_fp8,
        from_fp8,
    );
    Ok(())
}
