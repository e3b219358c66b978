//! Bindings of quantization (quantize, dequantize, quantized_matmul,
//! gather_qmm, qqmm, gather_qqmm) with mlx.core's names, signatures and keywords.

use crate::array::PyArr;
use crate::convert::{opt_array, opt_dtype, to_array};
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::{ok, Any, Stream};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A non-negative Python int option as a `usize`.
fn opt_size(name: &str, v: Option<i64>) -> PyResult<Option<usize>> {
    match v {
        None => Ok(None),
        Some(v) => usize::try_from(v)
            .map(Some)
            .map_err(|_| PyValueError::new_err(format!("{name} must be positive, got {v}"))),
    }
}

/// quantize(w: array, /, group_size: int | None = None, bits: int | None = None, mode: str = 'affine', *, global_scale: array | None = None, stream: StreamOrDevice = None) -> tuple[array, array, array]
///
/// Quantize the array ``w``: every ``group_size`` consecutive elements of
/// a row share a scale (and, in the ``"affine"`` mode, a bias), and each
/// element becomes a ``bits``-bit code packed into uint32 words from the
/// lowest bits up.
///
/// Modes: ``"affine"`` (group size 32, 64 (default) or 128; bits 1, 2, 3, 4
/// (default), 5, 6 or 8; scales and biases in ``w``'s dtype), ``"mxfp4"``
/// (group 32, 4 bits, e8m0 scales), ``"mxfp8"`` (group 32, 8 bits, e8m0
/// scales) and ``"nvfp4"`` (group 16, 4 bits, e4m3 scales; optional float32
/// ``global_scale``). The floating point modes have no biases and return
/// two arrays.
///
/// In the affine mode, for a group with maximum ``a`` and minimum ``b``,
/// ``s = (a - b) / (2**bits - 1)`` and ``q_i = round((w_i - b) / s)``, with
/// the larger-magnitude edge represented exactly.
///
/// Returns:
///     tuple: ``(w_q, scales, biases)`` (affine) or ``(w_q, scales)``.
///
/// Example:
///     >>> w = ferrox.core.ones((2, 64))
///     >>> w_q, scales, biases = ferrox.core.quantize(w, group_size=32, bits=4)
///     >>> w_q.shape, scales.shape
///     ((2, 8), (2, 2))
#[pyfunction]
#[pyo3(signature = (w, /, group_size = None, bits = None, mode = "affine", *, global_scale = None, stream = None))]
fn quantize<'py>(
    py: Python<'py>,
    w: &Any<'py>,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    global_scale: Option<&Any<'py>>,
    stream: Stream<'_, '_>,
) -> PyResult<Bound<'py, PyTuple>> {
    let w = to_array(w)?;
    let g = opt_array(global_scale)?;
    let (gs, b) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    let (wq, s, bi) = on(stream, || ferrox::quantize(&w, gs, b, mode, g.as_ref()))?.py()?;
    let mut out = vec![PyArr::new(wq), PyArr::new(s)];
    if let Some(bi) = bi {
        out.push(PyArr::new(bi));
    }
    PyTuple::new(py, out)
}

/// dequantize(w: array, /, scales: array, biases: array | None = None, group_size: int | None = None, bits: int | None = None, mode: str = 'affine', global_scale: array | None = None, dtype: Dtype | None = None, *, stream: StreamOrDevice = None) -> array
///
/// Dequantize the matrix ``w`` (packed by :func:`quantize`) using its
/// quantization parameters: ``w_i = s * q_i + b`` in the affine mode, the
/// code's value times the group's scale in the floating point modes.
///
/// The result dtype is ``dtype``, else that of the scales and biases
/// (affine) or bfloat16.
///
/// Example:
///     >>> w = ferrox.core.ones((2, 64))
///     >>> ferrox.core.dequantize(*ferrox.core.quantize(w)).tolist()[0][:3]
///     [1.0, 1.0, 1.0]
#[pyfunction]
#[pyo3(signature = (w, /, scales, biases = None, group_size = None, bits = None, mode = "affine", global_scale = None, dtype = None, *, stream = None))]
fn dequantize(
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    global_scale: Option<&Any<'_>>,
    dtype: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (w, s) = (to_array(w)?, to_array(scales)?);
    let b = opt_array(biases)?;
    let g = opt_array(global_scale)?;
    let d = opt_dtype(dtype)?;
    let (gs, bi) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    ok(on(stream, || {
        ferrox::dequantize(&w, &s, b.as_ref(), gs, bi, mode, g.as_ref(), d)
    })?)
}

/// quantized_matmul(x: array, w: array, /, scales: array, biases: array | None = None, transpose: bool = True, group_size: int | None = None, bits: int | None = None, mode: str = 'affine', *, stream: StreamOrDevice = None) -> array
///
/// Perform the matrix multiplication with the quantized matrix ``w``:
/// ``x @ w.T`` (``transpose=True``, ``w`` packed as ``(N, K)``) or
/// ``x @ w``, where ``w`` is given by its packed codes and one scale (and
/// bias) per ``group_size`` elements. The matrix is never unpacked whole;
/// products accumulate in float32.
///
/// Example:
///     >>> w_q, s, b = ferrox.core.quantize(ferrox.core.ones((3, 64)))
///     >>> ferrox.core.quantized_matmul(ferrox.core.ones((1, 64)), w_q, s, b).tolist()
///     [[64.0, 64.0, 64.0]]
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, transpose = true, group_size = None, bits = None, mode = "affine", *, stream = None))]
fn quantized_matmul(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    transpose: bool,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w, s) = (to_array(x)?, to_array(w)?, to_array(scales)?);
    let b = opt_array(biases)?;
    let (gs, bi) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    ok(on(stream, || {
        ferrox::quantized_matmul(&x, &w, &s, b.as_ref(), transpose, gs, bi, mode)
    })?)
}

/// gather_qmm(x: array, w: array, /, scales: array, biases: array | None = None, lhs_indices: array | None = None, rhs_indices: array | None = None, transpose: bool = True, group_size: int | None = None, bits: int | None = None, mode: str = 'affine', global_scale: array | None = None, *, sorted_indices: bool = False, stream: StreamOrDevice = None) -> array
///
/// Perform quantized matrix multiplication with matrix-level gather, the
/// quantized equivalent of :func:`gather_mm`: ``lhs_indices`` and
/// ``rhs_indices`` are flat indices into the batch dimensions (all but the
/// last two) of ``x`` and of ``w`` (with its ``scales`` and ``biases``).
/// ``global_scale`` is only supported on the GPU in MLX and is rejected
/// here; ``sorted_indices`` is a hint.
///
/// Example:
///     >>> w_q, s, b = ferrox.core.quantize(ferrox.core.ones((4, 3, 64)))
///     >>> x = ferrox.core.ones((1, 1, 64))
///     >>> ferrox.core.gather_qmm(x, w_q, s, b, rhs_indices=ferrox.core.array([3, 0])).shape
///     (2, 1, 3)
#[pyfunction]
#[pyo3(signature = (x, w, /, scales, biases = None, lhs_indices = None, rhs_indices = None, transpose = true, group_size = None, bits = None, mode = "affine", global_scale = None, *, sorted_indices = false, stream = None))]
fn gather_qmm(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: &Any<'_>,
    biases: Option<&Any<'_>>,
    lhs_indices: Option<&Any<'_>>,
    rhs_indices: Option<&Any<'_>>,
    transpose: bool,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    global_scale: Option<&Any<'_>>,
    sorted_indices: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    if global_scale.is_some_and(|g| !g.is_none()) {
        return Err(PyValueError::new_err(
            "gather_qmm: global_scale is only supported on the GPU",
        ));
    }
    let (x, w, s) = (to_array(x)?, to_array(w)?, to_array(scales)?);
    let b = opt_array(biases)?;
    let li = opt_array(lhs_indices)?;
    let ri = opt_array(rhs_indices)?;
    let (gs, bi) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    ok(on(stream, || {
        ferrox::gather_qmm(
            &x,
            &w,
            &s,
            b.as_ref(),
            li.as_ref(),
            ri.as_ref(),
            transpose,
            gs,
            bi,
            mode,
            sorted_indices,
        )
    })?)
}

/// qqmm(x: array, w: array, scales: array | None = None, group_size: int | None = None, bits: int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, global_scale_w: array | None = None, *, stream: StreamOrDevice = None) -> array
///
/// Perform the matrix multiplication ``x @ w.T`` with ``x`` quantized on
/// the fly: ``x`` is quantized and dequantized in ``mode`` (``"nvfp4"``,
/// ``"mxfp8"`` or ``"mxfp4"``) and multiplied with ``w``, which is either
/// packed by :func:`quantize` in the same mode (pass its ``scales``; it is
/// never unpacked whole) or a float matrix (quantized on the fly too).
/// ``w`` is 2-D; the result has ``x``'s dtype. With ``"nvfp4"``,
/// ``global_scale_x`` and ``global_scale_w`` (float32 scalars) are given
/// together or not at all. The affine mode is not supported, and there is
/// no gradient.
///
/// Example:
///     >>> w_q, s = ferrox.core.quantize(ferrox.core.ones((3, 32)), mode="mxfp8")
///     >>> ferrox.core.qqmm(ferrox.core.ones((1, 32)), w_q, s, mode="mxfp8").tolist()
///     [[32.0, 32.0, 32.0]]
#[pyfunction]
#[pyo3(signature = (x, w, scales = None, group_size = None, bits = None, mode = "nvfp4", global_scale_x = None, global_scale_w = None, *, stream = None))]
fn qqmm(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: Option<&Any<'_>>,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    global_scale_x: Option<&Any<'_>>,
    global_scale_w: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(x)?, to_array(w)?);
    let s = opt_array(scales)?;
    let (gx, gw) = (opt_array(global_scale_x)?, opt_array(global_scale_w)?);
    let (gs, bi) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    ok(on(stream, || {
        ferrox::qqmm(&x, &w, s.as_ref(), gs, bi, mode, gx.as_ref(), gw.as_ref())
    })?)
}

/// gather_qqmm(x: array, w: array, /, scales: array | None = None, lhs_indices: array | None = None, rhs_indices: array | None = None, group_size: int | None = None, bits: int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, global_scale_w: array | None = None, *, sorted_indices: bool = False, stream: StreamOrDevice = None) -> array
///
/// :func:`qqmm` with matrix-level gather: ``lhs_indices`` and
/// ``rhs_indices`` are flat indices into the batch dimensions (all but the
/// last two) of ``x`` and of ``w`` (with its ``scales``), as in
/// :func:`gather_mm`; ``sorted_indices`` is a hint.
///
/// Example:
///     >>> w_q, s = ferrox.core.quantize(ferrox.core.ones((4, 3, 32)), mode="mxfp8")
///     >>> x = ferrox.core.ones((1, 1, 32))
///     >>> ferrox.core.gather_qqmm(x, w_q, s, rhs_indices=ferrox.core.array([3, 0]), mode="mxfp8").shape
///     (2, 1, 3)
#[pyfunction]
#[pyo3(signature = (x, w, /, scales = None, lhs_indices = None, rhs_indices = None, group_size = None, bits = None, mode = "nvfp4", global_scale_x = None, global_scale_w = None, *, sorted_indices = false, stream = None))]
fn gather_qqmm(
    x: &Any<'_>,
    w: &Any<'_>,
    scales: Option<&Any<'_>>,
    lhs_indices: Option<&Any<'_>>,
    rhs_indices: Option<&Any<'_>>,
    group_size: Option<i64>,
    bits: Option<i64>,
    mode: &str,
    global_scale_x: Option<&Any<'_>>,
    global_scale_w: Option<&Any<'_>>,
    sorted_indices: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(x)?, to_array(w)?);
    let s = opt_array(scales)?;
    let li = opt_array(lhs_indices)?;
    let ri = opt_array(rhs_indices)?;
    let (gx, gw) = (opt_array(global_scale_x)?, opt_array(global_scale_w)?);
    let (gs, bi) = (opt_size("group_size", group_size)?, opt_size("bits", bits)?);
    ok(on(stream, || {
        ferrox::gather_qqmm(
            &x,
            &w,
            s.as_ref(),
            li.as_ref(),
            ri.as_ref(),
            gs,
            bi,
            mode,
            gx.as_ref(),
            gw.as_ref(),
            sorted_indices,
        )
    })?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(quantized_matmul, m)?)?;
    m.add_function(wrap_pyfunction!(gather_qmm, m)?)?;
    m.add_function(wrap_pyfunction!(qqmm, m)?)?;
    m.add_function(wrap_pyfunction!(gather_qqmm, m)?)?;
    Ok(())
}
