//! `ferrox.core.fft`: mlx.core.fft's transforms (numpy's "backward"
//! normalisation; results are complex64, real inverses float32).

use crate::array::PyArr;
use crate::convert::to_array;
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::Ints;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

type Any<'py> = Bound<'py, PyAny>;
type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

/// A transform length: a positive int.
fn length(op: &str, n: isize) -> PyResult<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| PyValueError::new_err(format!("{op}: invalid number of data points {n}")))
}

fn lengths(op: &str, s: &Option<Ints>) -> PyResult<Option<Vec<usize>>> {
    s.as_ref()
        .map(|s| s.to_vec().into_iter().map(|n| length(op, n)).collect())
        .transpose()
}

type OneD = fn(&ferrox::Array, Option<usize>, isize) -> ferrox::Result<ferrox::Array>;
type ManyD =
    fn(&ferrox::Array, Option<&[usize]>, Option<&[isize]>) -> ferrox::Result<ferrox::Array>;

fn one_d(
    op: &str,
    f: OneD,
    a: &Any<'_>,
    n: Option<isize>,
    axis: isize,
    norm: Option<&str>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let n = n.map(|n| length(op, n)).transpose()?;
    let norm = ferrox::fft::FftNorm::parse(norm).py()?;
    on(stream, || {
        let y = f(&a, n, axis)?;
        let points = signal_points(op, &a, &y, &[axis], n.map(|n| vec![n]).as_deref())?;
        ferrox::fft::apply_norm(&y, norm, points, op.starts_with('i'))
    })?
    .py()
    .map(PyArr::new)
}

/// The number of signal points a transform of `a` to `y` over `axes` ran
/// on: the real input's (padded) sizes for `rfft*`, the output's sizes
/// otherwise (complex transforms keep sizes; `irfft*` outputs the signal).
fn signal_points(
    op: &str,
    a: &ferrox::Array,
    y: &ferrox::Array,
    axes: &[isize],
    s: Option<&[usize]>,
) -> ferrox::Result<usize> {
    let mut n = 1usize;
    for (k, &ax) in axes.iter().enumerate() {
        let real_forward = op.starts_with("rfft");
        let src = if real_forward { a } else { y };
        let d = ferrox::ops::shape_rules::normalize_axis(op, ax, src.ndim())?;
        n *= match (real_forward, s) {
            (true, Some(s)) => s[k],
            _ => src.shape()[d],
        };
    }
    Ok(n)
}

fn many_d(
    op: &str,
    f: ManyD,
    a: &Any<'_>,
    s: Option<Ints>,
    axes: Option<Ints>,
    norm: Option<&str>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let s = lengths(op, &s)?;
    let norm = ferrox::fft::FftNorm::parse(norm).py()?;
    // The 2-D transforms take `axes=None` as numpy does: every axis
    // (their default is the last two).
    let axes = match axes {
        Some(axes) => Some(axes.to_vec()),
        None if op.ends_with('2') && s.is_none() => Some((0..a.ndim() as isize).collect()),
        None if op.ends_with('2') => s.as_ref().map(|s| {
            let nd = a.ndim() as isize;
            (nd - s.len() as isize..nd).collect()
        }),
        None => None,
    };
    on(stream, || {
        let y = f(&a, s.as_deref(), axes.as_deref())?;
        let nd = a.ndim() as isize;
        let used: Vec<isize> = match (&axes, &s) {
            (Some(ax), _) => ax.clone(),
            (None, Some(s)) => (nd - s.len() as isize..nd).collect(),
            (None, None) => (0..nd).collect(),
        };
        let points = signal_points(op, &a, &y, &used, s.as_deref())?;
        ferrox::fft::apply_norm(&y, norm, points, op.starts_with('i'))
    })?
    .py()
    .map(PyArr::new)
}

macro_rules! one_d_fn {
    ($($name:ident => $what:literal, $x:literal, $y:literal;)*) => {$(
        #[doc = concat!(stringify!($name), "(a, n=None, axis=-1, norm=None, stream=None) -> array\n\n", $what,
            " ``n`` crops or zero-pads the transformed axis; ``norm`` is numpy's (``'backward'``, ``'ortho'``, ``'forward'``).",
            "\n\nExample:\n    >>> ferrox.core.fft.", stringify!($name), "(ferrox.core.array(", $x, ")).tolist()\n    ", $y)]
        #[pyfunction]
        #[pyo3(signature = (a, n = None, axis = -1, norm = None, stream = None))]
        fn $name(a: &Any<'_>, n: Option<isize>, axis: isize, norm: Option<&str>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
            one_d(stringify!($name), ferrox::fft::$name, a, n, axis, norm, stream)
        }
    )*};
}
one_d_fn! {
    fft => "The discrete Fourier transform along ``axis`` (complex64).", "[1.0, 0.0]", "[(1+0j), (1+0j)]";
    ifft => "The inverse discrete Fourier transform along ``axis`` (complex64).", "[2.0, 0.0]", "[(1+0j), (1+0j)]";
    rfft => "The transform of a real signal: the non-negative frequencies only.", "[1.0, 1.0]", "[(2+0j), 0j]";
    irfft => "The inverse of :func:`rfft`: a real signal of ``n`` points (default ``2 * (m - 1)``).", "[2.0, 0.0]", "[1.0, 1.0]";
}

macro_rules! two_d_fn {
    ($($name:ident => $what:literal;)*) => {$(
        #[doc = concat!(stringify!($name), "(a, s=None, axes=(-2, -1), norm=None, stream=None) -> array\n\n", $what,
            " ``s`` crops or zero-pads the transformed axes.",
            "\n\nExample:\n    >>> ferrox.core.fft.", stringify!($name), "(ferrox.core.ones((2, 2))).shape[0]\n    2")]
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = Some(Ints::Many(vec![-2, -1])), norm = None, stream = None))]
        fn $name(a: &Any<'_>, s: Option<Ints>, axes: Option<Ints>, norm: Option<&str>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
            many_d(stringify!($name), ferrox::fft::$name, a, s, axes, norm, stream)
        }
    )*};
}
two_d_fn! {
    fft2 => "The two-dimensional discrete Fourier transform over ``axes``.";
    ifft2 => "The inverse of :func:`fft2`.";
    rfft2 => "The two-dimensional transform of a real signal (the last axis keeps the non-negative frequencies).";
    irfft2 => "The inverse of :func:`rfft2`.";
}

macro_rules! n_d_fn {
    ($($name:ident => $what:literal;)*) => {$(
        #[doc = concat!(stringify!($name), "(a, s=None, axes=None, norm=None, stream=None) -> array\n\n", $what,
            " ``axes=None`` transforms every axis (the last ``len(s)`` ones when ``s`` is given).",
            "\n\nExample:\n    >>> ferrox.core.fft.", stringify!($name), "(ferrox.core.ones((2, 2))).shape[0]\n    2")]
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = None, norm = None, stream = None))]
        fn $name(a: &Any<'_>, s: Option<Ints>, axes: Option<Ints>, norm: Option<&str>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
            many_d(stringify!($name), ferrox::fft::$name, a, s, axes, norm, stream)
        }
    )*};
}
n_d_fn! {
    fftn => "The n-dimensional discrete Fourier transform.";
    ifftn => "The inverse of :func:`fftn`.";
    rfftn => "The n-dimensional transform of a real signal (the last axis keeps the non-negative frequencies).";
    irfftn => "The inverse of :func:`rfftn`.";
}

/// Adds `name` as a submodule of `parent`, importable as
/// `ferrox.core.<name>`.
/// fftfreq(n, d=1.0, stream=None) -> array
///
/// The sample frequencies of an ``n``-point transform with spacing ``d``
/// (float32).
///
/// Example:
///     >>> ferrox.core.fft.fftfreq(4).tolist()
///     [0.0, 0.25, -0.5, -0.25]
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, stream = None))]
fn fftfreq(n: isize, d: f64, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let n = length("fftfreq", n)?;
    crate::ops::ok(on(stream, || ferrox::fft::fftfreq(n, d))?)
}

/// rfftfreq(n, d=1.0, stream=None) -> array
///
/// The non-negative sample frequencies of an ``n``-point real transform.
///
/// Example:
///     >>> ferrox.core.fft.rfftfreq(4).tolist()
///     [0.0, 0.25, 0.5]
#[pyfunction]
#[pyo3(signature = (n, d = 1.0, stream = None))]
fn rfftfreq(n: isize, d: f64, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let n = length("rfftfreq", n)?;
    crate::ops::ok(on(stream, || ferrox::fft::rfftfreq(n, d))?)
}

/// fftshift(a, axes=None, stream=None) -> array
///
/// Roll each axis by half its length so the zero frequency is centred.
///
/// Example:
///     >>> ferrox.core.fft.fftshift(ferrox.core.arange(4)).tolist()
///     [2, 3, 0, 1]
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn fftshift(a: &Any<'_>, axes: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes.map(|v| v.to_vec());
    crate::ops::ok(on(stream, || ferrox::fft::fftshift(&a, ax.as_deref()))?)
}

/// ifftshift(a, axes=None, stream=None) -> array
///
/// The inverse of :func:`fftshift`.
///
/// Example:
///     >>> ferrox.core.fft.ifftshift(ferrox.core.arange(5)).tolist()
///     [2, 3, 4, 0, 1]
#[pyfunction]
#[pyo3(signature = (a, axes = None, stream = None))]
fn ifftshift(a: &Any<'_>, axes: Option<Ints>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let a = to_array(a)?;
    let ax = axes.map(|v| v.to_vec());
    crate::ops::ok(on(stream, || ferrox::fft::ifftshift(&a, ax.as_deref()))?)
}

fn stft_params(
    n_fft: usize,
    hop_length: Option<isize>,
    win_length: Option<isize>,
    window: Option<&Any<'_>>,
    center: bool,
    norm: Option<&str>,
    onesided: Option<bool>,
) -> PyResult<ferrox::fft::StftParams> {
    let non_negative = |v: Option<isize>, what: &str| -> PyResult<Option<usize>> {
        v.map(|v| {
            usize::try_from(v)
                .map_err(|_| PyValueError::new_err(format!("{what} must be non-negative, got {v}")))
        })
        .transpose()
    };
    Ok(ferrox::fft::StftParams {
        n_fft,
        hop_length: non_negative(hop_length, "hop_length")?,
        win_length: non_negative(win_length, "win_length")?,
        window: crate::convert::opt_array(window)?,
        center,
        pad_mode: ferrox::fft::StftPad::Reflect,
        norm: ferrox::fft::FftNorm::parse(norm).py()?,
        onesided,
    })
}

/// stft(x, n_fft=2048, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect', norm='backward', onesided=None, stream=None) -> array
///
/// The short-time Fourier transform of the last axis: frames of ``n_fft``
/// samples every ``hop_length`` (default ``n_fft // 4``), windowed and
/// transformed; complex64 of shape ``(..., n_freq, n_frames)``.
///
/// Example:
///     >>> ferrox.core.fft.stft(ferrox.core.arange(64.0), n_fft=16).shape
///     (9, 17)
#[pyfunction]
#[pyo3(signature = (x, n_fft = 2048, hop_length = None, win_length = None, window = None, center = true, pad_mode = "reflect", norm = None, onesided = None, stream = None))]
fn stft(
    x: &Any<'_>,
    n_fft: isize,
    hop_length: Option<isize>,
    win_length: Option<isize>,
    window: Option<&Any<'_>>,
    center: bool,
    pad_mode: &str,
    norm: Option<&str>,
    onesided: Option<bool>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let x = to_array(x)?;
    let mut p = stft_params(
        length("stft", n_fft)?,
        hop_length,
        win_length,
        window,
        center,
        norm,
        onesided,
    )?;
    p.pad_mode = match pad_mode {
        "reflect" => ferrox::fft::StftPad::Reflect,
        "constant" => ferrox::fft::StftPad::Constant,
        "edge" => ferrox::fft::StftPad::Edge,
        other => {
            return Err(PyValueError::new_err(format!(
                "stft: pad_mode must be 'reflect', 'constant' or 'edge', got {other:?}"
            )));
        }
    };
    crate::ops::ok(on(stream, || ferrox::fft::stft(&x, &p))?)
}

/// istft(stft_matrix, n_fft=None, hop_length=None, win_length=None, window=None, center=True, norm='backward', onesided=None, length=None, stream=None) -> array
///
/// The inverse of :func:`stft`: each frame's inverse transform, windowed,
/// overlap-added and divided by the summed squared window.
///
/// Example:
///     >>> x = ferrox.core.arange(64.0)
///     >>> ferrox.core.fft.istft(ferrox.core.fft.stft(x, n_fft=16), n_fft=16, length=64).shape
///     (64,)
#[pyfunction]
#[pyo3(signature = (stft_matrix, n_fft = None, hop_length = None, win_length = None, window = None, center = true, norm = None, onesided = None, length = None, stream = None))]
fn istft(
    stft_matrix: &Any<'_>,
    n_fft: Option<isize>,
    hop_length: Option<isize>,
    win_length: Option<isize>,
    window: Option<&Any<'_>>,
    center: bool,
    norm: Option<&str>,
    onesided: Option<bool>,
    length: Option<isize>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let s = to_array(stft_matrix)?;
    let n = n_fft
        .map(|n| self::length("istft", n))
        .transpose()?
        .unwrap_or(0);
    let p = stft_params(n, hop_length, win_length, window, center, norm, onesided)?;
    let len = length.map(|l| self::length("istft", l)).transpose()?;
    crate::ops::ok(on(stream, || ferrox::fft::istft(&s, &p, len))?)
}

pub fn submodule<'py>(
    parent: &Bound<'py, PyModule>,
    name: &str,
    doc: &str,
) -> PyResult<Bound<'py, PyModule>> {
    let py = parent.py();
    let m = PyModule::new(py, name)?;
    let full = format!("ferrox.core.{name}");
    m.setattr("__name__", &full)?;
    m.setattr("__doc__", doc)?;
    parent.add(name, &m)?;
    py.import("sys")?.getattr("modules")?.set_item(&full, &m)?;
    Ok(m)
}

/// Registers `ferrox.core.fft`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = submodule(
        parent,
        "fft",
        "Discrete Fourier transforms (numpy's default normalisation).",
    )?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, &m)?)?; )* };
    }
    add!(fft, ifft, rfft, irfft, fft2, ifft2, rfft2, irfft2, fftn, ifftn, rfftn, irfftn);
    add!(fftfreq, rfftfreq, fftshift, ifftshift, stft, istft);
    Ok(())
}
