//! `ferrox.core.fast`: mlx.core.fast's fused kernels (attention, norms,
//! rotary embeddings, cross entropy) with its signatures and keywords.

use crate::array::PyArr;
use crate::convert::{opt_array, to_array};
use crate::device::on;
use crate::errors::OrPy;
use crate::fft::submodule;
use ferrox::fast::{self, AttentionMask, RopeOffset};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

type Any<'py> = Bound<'py, PyAny>;
type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// rms_norm(x: array, weight: array | None, eps: float, *, stream=None) -> array
///
/// Root-mean-square normalisation over the last axis:
/// ``x / sqrt(mean(x**2, -1) + eps) * weight``, accumulated in float32.
/// ``weight`` is one-dimensional with ``x.shape[-1]`` elements, or None.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.fast.rms_norm(mx.array([[3.0, 4.0]]), None, 0.0)
///     array([[0.848528, 1.13137]], dtype=float32)
#[pyfunction]
#[pyo3(signature = (x, weight, eps, *, stream = None))]
fn rms_norm(
    x: &Any<'_>,
    weight: Option<&Any<'_>>,
    eps: f32,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(x)?, opt_array(weight)?);
    on(stream, || fast::rms_norm(&x, w.as_ref(), eps))?
        .py()
        .map(PyArr::new)
}

/// layer_norm(x: array, weight: array | None, bias: array | None, eps: float, *, stream=None) -> array
///
/// Layer normalisation over the last axis:
/// ``(x - mean) / sqrt(var + eps) * weight + bias``, accumulated in float32.
/// ``weight`` and ``bias`` are one-dimensional with ``x.shape[-1]`` elements,
/// or None.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.fast.layer_norm(mx.array([[1.0, 3.0]]), None, None, 0.0)
///     array([[-1, 1]], dtype=float32)
#[pyfunction]
#[pyo3(signature = (x, weight, bias, eps, *, stream = None))]
fn layer_norm(
    x: &Any<'_>,
    weight: Option<&Any<'_>>,
    bias: Option<&Any<'_>>,
    eps: f32,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w, b) = (to_array(x)?, opt_array(weight)?, opt_array(bias)?);
    on(stream, || fast::layer_norm(&x, w.as_ref(), b.as_ref(), eps))?
        .py()
        .map(PyArr::new)
}

/// rope(a: array, dims: int, *, traditional: bool, base: float | None, scale: float, offset: int | array, freqs: array | None = None, stream=None) -> array
///
/// Rotary positional encoding of ``a`` (shape ``(B, *, T, D)``): the first
/// ``dims`` features of the row at position ``t`` are rotated in pairs by
/// ``(t + offset) * scale * base**(-i / (dims/2))`` (or ``1 / freqs[i]``).
/// ``traditional`` rotates consecutive pairs; otherwise the two halves.
/// ``offset`` is an int, or an integer array: a scalar or one per batch
/// element. Exactly one of ``base`` and ``freqs`` is given.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> x = mx.ones((1, 1, 2, 2))
///     >>> mx.fast.rope(x, 2, traditional=False, base=10000.0, scale=1.0, offset=0)
///     array([[[[1, 1],
///              [-0.301169, 1.38177]]]], dtype=float32)
#[pyfunction]
#[pyo3(signature = (a, dims, *, traditional, base, scale, offset, freqs = None, stream = None))]
fn rope(
    a: &Any<'_>,
    dims: isize,
    traditional: bool,
    base: Option<f32>,
    scale: f32,
    offset: &Any<'_>,
    freqs: Option<&Any<'_>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let dims = usize::try_from(dims)
        .map_err(|_| PyValueError::new_err(format!("rope: dims must be positive, got {dims}")))?;
    let freqs = opt_array(freqs)?;
    let offset_array;
    let offset = if offset.is_instance_of::<PyInt>() && !offset.is_instance_of::<PyBool>() {
        RopeOffset::Scalar(offset.extract()?)
    } else {
        offset_array = to_array(offset)?;
        RopeOffset::Array(&offset_array)
    };
    on(stream, || {
        fast::rope(&a, dims, traditional, base, scale, offset, freqs.as_ref())
    })?
    .py()
    .map(PyArr::new)
}

/// scaled_dot_product_attention(q: array, k: array, v: array, *, scale: float, mask: None | str | array = None, sinks: array | None = None, force_fused: bool = False, stream=None) -> array
///
/// Multi-head attention ``softmax(scale * q @ k.T + mask) @ v`` per head,
/// without materialising the score matrix. ``q`` is ``[B, N_q, T_q, D]``,
/// ``k`` ``[B, N_kv, T_kv, D]``, ``v`` ``[B, N_kv, T_kv, D_v]``; ``N_q`` a
/// multiple of ``N_kv`` (grouped-query attention; do not repeat k and v).
/// ``mask`` is ``"causal"`` (lower-right aligned), a boolean mask or an
/// additive mask broadcastable to ``[B, N_q, T_q, T_kv]``. ``sinks`` adds
/// one logit per query head to each softmax's denominator. The softmax is
/// accumulated in float32. ``force_fused`` is accepted for compatibility:
/// the fused kernel always runs (float64 inputs take the composed path).
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> q = k = v = mx.ones((1, 2, 3, 4))
///     >>> mx.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal").shape
///     (1, 2, 3, 4)
#[pyfunction]
#[pyo3(signature = (q, k, v, *, scale, mask = None, sinks = None, force_fused = false, stream = None))]
fn scaled_dot_product_attention(
    q: &Any<'_>,
    k: &Any<'_>,
    v: &Any<'_>,
    scale: f32,
    mask: Option<&Any<'_>>,
    sinks: Option<&Any<'_>>,
    force_fused: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let _ = force_fused;
    let (q, k, v) = (to_array(q)?, to_array(k)?, to_array(v)?);
    let sinks = opt_array(sinks)?;
    let mask_array;
    let mask = match mask {
        None => AttentionMask::None,
        Some(m) if m.is_none() => AttentionMask::None,
        Some(m) if m.is_instance_of::<PyString>() => {
            let s: String = m.extract()?;
            match s.as_str() {
                "causal" => AttentionMask::Causal,
                "" => AttentionMask::None,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "scaled_dot_product_attention: invalid mask {other:?}; the only string mask is \"causal\""
                    )));
                }
            }
        }
        Some(m) => {
            mask_array = to_array(m).map_err(|_| {
                PyTypeError::new_err(
                    "scaled_dot_product_attention: mask must be None, \"causal\" or an array",
                )
            })?;
            AttentionMask::Array(&mask_array)
        }
    };
    on(stream, || {
        fast::scaled_dot_product_attention(&q, &k, &v, scale, mask, sinks.as_ref())
    })?
    .py()
    .map(PyArr::new)
}

/// cross_entropy(logits: array, targets: array, *, stream=None) -> array
///
/// Cross entropy with class indices: ``logsumexp(logits, -1) -
/// logits[..., targets]``, in float32, with the shape of ``targets``.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.fast.cross_entropy(mx.zeros((2, 2)), mx.array([0, 1]))
///     array([0.693147, 0.693147], dtype=float32)
#[pyfunction]
#[pyo3(signature = (logits, targets, *, stream = None))]
fn cross_entropy(logits: &Any<'_>, targets: &Any<'_>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let (l, t) = (to_array(logits)?, to_array(targets)?);
    on(stream, || fast::cross_entropy(&l, &t))?
        .py()
        .map(PyArr::new)
}

/// Registers `ferrox.core.fast`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = submodule(
        parent,
        "fast",
        "Fused kernels: attention, normalisations, rotary embeddings, cross entropy.",
    )?;
    m.add_function(wrap_pyfunction!(rms_norm, &m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, &m)?)?;
    m.add_function(wrap_pyfunction!(rope, &m)?)?;
    m.add_function(wrap_pyfunction!(scaled_dot_product_attention, &m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, &m)?)?;
    crate::custom_kernel::register(&m)?;
    Ok(())
}
