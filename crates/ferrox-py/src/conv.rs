//! The convolutions of `ferrox.core` with mlx.core's names and
//! keywords: conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d and
//! convolve (bindings of `ferrox::ops::conv`).

use crate::array::PyArr;
use crate::convert::to_array;
use crate::device::on;
use crate::ops::{dim, ok, Any, Stream};
use ferrox::{ConvGeneralParams, ConvolveMode};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

#[derive(FromPyObject)]
enum Pair {
    One(i64),
    Two(i64, i64),
}

impl Pair {
    fn get(&self, what: &str) -> PyResult<(usize, usize)> {
        let (a, b) = match self {
            Pair::One(a) => (*a, *a),
            Pair::Two(a, b) => (*a, *b),
        };
        Ok((dim(a, what)?, dim(b, what)?))
    }
}

/// conv1d(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None) -> array
///
/// 1-D convolution (cross-correlation) of channels-last ``input`` ``(N, L,
/// C_in)`` with ``weight`` ``(C_out, K, C_in / groups)``.
///
/// Example:
///     >>> ferrox.core.conv1d(ferrox.core.ones((1, 4, 1)), ferrox.core.ones((1, 2, 1))).shape
///     (1, 3, 1)
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = 1, padding = 0, dilation = 1, groups = 1, *, stream = None))]
fn conv1d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: i64,
    padding: i64,
    dilation: i64,
    groups: i64,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(input)?, to_array(weight)?);
    let (s, p, d, g) = (
        dim(stride, "conv1d: stride")?,
        dim(padding, "conv1d: padding")?,
        dim(dilation, "conv1d: dilation")?,
        dim(groups, "conv1d: groups")?,
    );
    // MLX's conv1d is conv_general with one stride, padding and dilation
    // for every spatial axis, so inputs of another rank convolve in that
    // many dimensions (MLX's test_conv_groups_grad relies on it).
    if x.ndim() != 3 && x.ndim() == w.ndim() {
        let (s, p, d) = ([s], [p as isize], [d]);
        let params = ConvGeneralParams {
            stride: &s,
            padding_lo: &p,
            padding_hi: &p,
            kernel_dilation: &d,
            input_dilation: &[1],
            groups: g,
            flip: false,
        };
        return ok(on(stream, || ferrox::conv_general(&x, &w, &params))?);
    }
    ok(on(stream, || ferrox::conv1d(&x, &w, s, p, d, g))?)
}

/// conv2d(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None) -> array
///
/// 2-D convolution (cross-correlation) of channels-last ``input`` ``(N, H,
/// W, C_in)`` with ``weight`` ``(C_out, KH, KW, C_in / groups)``; stride,
/// padding and dilation are an int or an (h, w) pair.
///
/// Example:
///     >>> ferrox.core.conv2d(ferrox.core.ones((1, 4, 4, 1)), ferrox.core.ones((1, 3, 3, 1)), padding=1).shape
///     (1, 4, 4, 1)
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Pair::One(1), padding = Pair::One(0), dilation = Pair::One(1), groups = 1, *, stream = None))]
fn conv2d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    groups: i64,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(input)?, to_array(weight)?);
    let (s, p, d, g) = (
        stride.get("conv2d: stride")?,
        padding.get("conv2d: padding")?,
        dilation.get("conv2d: dilation")?,
        dim(groups, "conv2d: groups")?,
    );
    ok(on(stream, || ferrox::conv2d(&x, &w, s, p, d, g))?)
}

/// An int or a sequence of ints, as a list of non-negative sizes.
#[derive(FromPyObject)]
enum Sizes {
    One(i64),
    Many(Vec<i64>),
}

impl Sizes {
    fn get(&self, what: &str) -> PyResult<Vec<usize>> {
        match self {
            Sizes::One(v) => Ok(vec![dim(*v, what)?]),
            Sizes::Many(v) => v.iter().map(|&x| dim(x, what)).collect(),
        }
    }
}

/// conv3d(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *, stream=None) -> array
///
/// 3-D convolution (cross-correlation) of channels-last ``input`` ``(N, D,
/// H, W, C_in)`` with ``weight`` ``(C_out, KD, KH, KW, C_in / groups)``;
/// stride, padding and dilation are an int or a triple.
///
/// Example:
///     >>> ferrox.core.conv3d(ferrox.core.ones((1, 3, 3, 3, 1)), ferrox.core.ones((1, 2, 2, 2, 1))).shape
///     (1, 2, 2, 2, 1)
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Sizes::One(1), padding = Sizes::One(0), dilation = Sizes::One(1), groups = 1, *, stream = None))]
fn conv3d(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Sizes,
    padding: Sizes,
    dilation: Sizes,
    groups: i64,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(input)?, to_array(weight)?);
    let triple = |s: &Sizes, what: &str| -> PyResult<[usize; 3]> {
        match s.get(what)?.as_slice() {
            [v] => Ok([*v; 3]),
            [a, b, c] => Ok([*a, *b, *c]),
            v => Err(PyValueError::new_err(format!(
                "{what} needs 1 or 3 values, got {v:?}"
            ))),
        }
    };
    let (s, p, d) = (
        triple(&stride, "conv3d: stride")?,
        triple(&padding, "conv3d: padding")?,
        triple(&dilation, "conv3d: dilation")?,
    );
    let g = dim(groups, "conv3d: groups")?;
    ok(on(stream, || ferrox::conv3d(&x, &w, s, p, d, g))?)
}

/// `padding=` of conv_general: an int, one int per dimension, or a pair of
/// (low, high) sequences.
#[derive(FromPyObject)]
enum Padding {
    One(i64),
    Many(Vec<i64>),
    LowHigh(Vec<i64>, Vec<i64>),
}

/// conv_general(input, weight, /, stride=1, padding=0, kernel_dilation=1, input_dilation=1, groups=1, flip=False, *, stream=None) -> array
///
/// The general convolution over ``input.ndim - 2`` spatial dimensions:
/// ``padding`` may be a (low, high) pair of sequences, ``input_dilation``
/// spaces the input out, ``flip`` flips the kernel (a true convolution).
///
/// Example:
///     >>> x = ferrox.core.ones((1, 3, 1)); w = ferrox.core.ones((1, 2, 1))
///     >>> ferrox.core.conv_general(x, w, padding=([1], [0]), input_dilation=2).shape
///     (1, 5, 1)
#[pyfunction]
#[pyo3(signature = (input, weight, /, stride = Sizes::One(1), padding = Padding::One(0), kernel_dilation = Sizes::One(1), input_dilation = Sizes::One(1), groups = 1, flip = false, *, stream = None))]
fn conv_general(
    input: &Any<'_>,
    weight: &Any<'_>,
    stride: Sizes,
    padding: Padding,
    kernel_dilation: Sizes,
    input_dilation: Sizes,
    groups: i64,
    flip: bool,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let (x, w) = (to_array(input)?, to_array(weight)?);
    let to_i = |v: &[i64]| v.iter().map(|&x| x as isize).collect::<Vec<_>>();
    let (lo, hi) = match &padding {
        Padding::One(v) => (vec![*v as isize], vec![*v as isize]),
        Padding::Many(v) => (to_i(v), to_i(v)),
        Padding::LowHigh(l, h) => (to_i(l), to_i(h)),
    };
    let stride = stride.get("conv_general: stride")?;
    let kd = kernel_dilation.get("conv_general: kernel_dilation")?;
    let id = input_dilation.get("conv_general: input_dilation")?;
    let p = ConvGeneralParams {
        stride: &stride,
        padding_lo: &lo,
        padding_hi: &hi,
        kernel_dilation: &kd,
        input_dilation: &id,
        groups: dim(groups, "conv_general: groups")?,
        flip,
    };
    ok(on(stream, || ferrox::conv_general(&x, &w, &p))?)
}

macro_rules! conv_transpose {
    ($($name:ident => $d:literal, $layout:literal),* $(,)?) => {$(
        #[doc = concat!(stringify!($name), "(input, weight, /, stride=1, padding=0, dilation=1, output_padding=0, groups=1, *, stream=None) -> array\n\n", $d, "-D transposed convolution of channels-last input ", $layout, " with weight ``(C_out, kernel..., C_in / groups)``.\n\nExample:\n    >>> y = ferrox.core.", stringify!($name), "(ferrox.core.ones((1,) + (2,) * ", $d, " + (1,)), ferrox.core.ones((1,) + (3,) * ", $d, " + (1,)), stride=2)")]
        #[pyfunction]
        #[pyo3(signature = (input, weight, /, stride = Sizes::One(1), padding = Sizes::One(0), dilation = Sizes::One(1), output_padding = Sizes::One(0), groups = 1, *, stream = None))]
        fn $name(
            input: &Any<'_>,
            weight: &Any<'_>,
            stride: Sizes,
            padding: Sizes,
            dilation: Sizes,
            output_padding: Sizes,
            groups: i64,
            stream: Stream<'_, '_>,
        ) -> PyResult<PyArr> {
            let (x, w) = (to_array(input)?, to_array(weight)?);
            let op = stringify!($name);
            if w.ndim() != $d + 2 {
                return Err(PyValueError::new_err(format!(
                    "{op}: weight must have {} dimensions, got shape {:?}", $d + 2, w.shape()
                )));
            }
            let s = stride.get(op)?;
            let p = padding.get(op)?;
            let d = dilation.get(op)?;
            let o = output_padding.get(op)?;
            let g = dim(groups, op)?;
            ok(on(stream, || ferrox::conv_transpose(&x, &w, &s, &p, &d, &o, g))?)
        }
    )*};
}

conv_transpose! {
    conv_transpose1d => 1, "``(N, L, C_in)``",
    conv_transpose2d => 2, "``(N, H, W, C_in)``",
    conv_transpose3d => 3, "``(N, D, H, W, C_in)``",
}

/// convolve(a, v, /, mode="full", *, stream=None) -> array
///
/// numpy's discrete linear convolution of two 1-D arrays (``mode`` is
/// ``"full"``, ``"same"`` or ``"valid"``).
///
/// Example:
///     >>> ferrox.core.convolve(ferrox.core.array([1.0, 2.0]), ferrox.core.array([1.0, 1.0])).tolist()
///     [1.0, 3.0, 2.0]
#[pyfunction]
#[pyo3(signature = (a, v, /, mode = "full", *, stream = None))]
fn convolve(a: &Any<'_>, v: &Any<'_>, mode: &str, stream: Stream<'_, '_>) -> PyResult<PyArr> {
    let mode = match mode {
        "full" => ConvolveMode::Full,
        "same" => ConvolveMode::Same,
        "valid" => ConvolveMode::Valid,
        other => {
            return Err(PyValueError::new_err(format!(
                "convolve: mode must be 'full', 'same' or 'valid', got {other:?}"
            )));
        }
    };
    let (a, v) = (to_array(a)?, to_array(v)?);
    ok(on(stream, || ferrox::convolve(&a, &v, mode))?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, m)?)?; )* };
    }
    add!(
        conv1d,
        conv2d,
        conv3d,
        conv_general,
        conv_transpose1d,
        conv_transpose2d,
        conv_transpose3d,
        convolve,
    );
    Ok(())
}
