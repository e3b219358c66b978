//! mlx.core.array's methods that mirror module functions.

use crate::array::PyArr;
use crate::ops::{self, Ints};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

type Stream<'a, 'py> = Option<&'a Bound<'py, PyAny>>;

macro_rules! reductions {
    ($($name:ident => $f:path),* $(,)?) => {
        #[pymethods]
        impl PyArr {
            $(
                #[doc = concat!(stringify!($name), "(axis=None, keepdims=False, *, stream=None) -> array\n\nThe method form of :func:`ferrox.core.", stringify!($name), "`.\n\nExample:\n    >>> ferrox.core.array([[1.0, 2.0]]).", stringify!($name), "(axis=1).shape\n    (1,)")]
                #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
                fn $name(
                    slf: &Bound<'_, Self>,
                    axis: Option<Ints>,
                    keepdims: bool,
                    stream: Stream<'_, '_>,
                ) -> PyResult<PyArr> {
                    $f(slf.as_any(), axis, keepdims, stream)
                }
            )*
        }
    };
}

reductions! {
    sum => ops::sum, prod => ops::prod, mean => ops::mean, max => ops::max,
    min => ops::min, all => ops::all, any => ops::any, logsumexp => ops::logsumexp,
}

macro_rules! unaries {
    ($($name:ident => $f:path),* $(,)?) => {
        #[pymethods]
        impl PyArr {
            $(
                #[doc = concat!(stringify!($name), "(*, stream=None) -> array\n\nThe method form of :func:`ferrox.core.", stringify!($name), "`.\n\nExample:\n    >>> ferrox.core.array([1.0]).", stringify!($name), "().shape\n    (1,)")]
                #[pyo3(signature = (*, stream = None))]
                fn $name(slf: &Bound<'_, Self>, stream: Stream<'_, '_>) -> PyResult<PyArr> {
                    $f(slf.as_any(), stream)
                }
            )*
        }
    };
}

unaries! {
    abs => ops::abs, square => ops::square, sqrt => ops::sqrt, rsqrt => ops::rsqrt,
    reciprocal => ops::reciprocal, exp => ops::exp, log => ops::log, log2 => ops::log2,
    log10 => ops::log10, log1p => ops::log1p, sin => ops::sin, cos => ops::cos,
    conj => ops::conjugate,
}

macro_rules! scans {
    ($($name:ident => $f:path),* $(,)?) => {
        #[pymethods]
        impl PyArr {
            $(
                #[doc = concat!(stringify!($name), "(axis=None, *, reverse=False, inclusive=True, stream=None) -> array\n\nThe method form of :func:`ferrox.core.", stringify!($name), "`.\n\nExample:\n    >>> ferrox.core.array([1.0, 2.0]).", stringify!($name), "().shape\n    (2,)")]
                #[pyo3(signature = (axis = None, *, reverse = false, inclusive = true, stream = None))]
                fn $name(
                    slf: &Bound<'_, Self>,
                    axis: Option<isize>,
                    reverse: bool,
                    inclusive: bool,
                    stream: Stream<'_, '_>,
                ) -> PyResult<PyArr> {
                    $f(slf.as_any(), axis, reverse, inclusive, None, stream)
                }
            )*
        }
    };
}

scans! {
    cumsum => ops::cumsum, cumprod => ops::cumprod, cummax => ops::cummax, cummin => ops::cummin,
    logcumsumexp => ops::logcumsumexp,
}

/// `*shape` or one sequence, as MLX's `reshape(*shape)` / `transpose(*axes)`.
fn star_ints(args: &Bound<'_, PyTuple>) -> PyResult<Option<Ints>> {
    match args.len() {
        0 => Ok(None),
        1 => args.get_item(0)?.extract().map(Some),
        _ => args.extract::<Vec<isize>>().map(|v| Some(Ints::Many(v))),
    }
}

#[pymethods]
impl PyArr {
    /// reshape(*shape, stream=None) -> array
    ///
    /// ``a`` with a new shape (the shape as one sequence or as arguments).
    ///
    /// Example:
    ///     >>> ferrox.core.arange(6).reshape(2, 3).shape
    ///     (2, 3)
    #[pyo3(signature = (*shape, stream = None))]
    fn reshape(
        slf: &Bound<'_, Self>,
        shape: &Bound<'_, PyTuple>,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        let s = star_ints(shape)?.unwrap_or(Ints::Many(vec![]));
        ops::reshape(slf.as_any(), s, stream)
    }
    /// transpose(*axes, stream=None) -> array
    ///
    /// ``a`` with its axes permuted (reversed when none are given).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).transpose().shape
    ///     (3, 2)
    #[pyo3(signature = (*axes, stream = None))]
    fn transpose(
        slf: &Bound<'_, Self>,
        axes: &Bound<'_, PyTuple>,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::transpose(slf.as_any(), star_ints(axes)?, stream)
    }
    /// flatten(start_axis=0, end_axis=-1, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.flatten`.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).flatten().shape
    ///     (6,)
    #[pyo3(signature = (start_axis = 0, end_axis = -1, *, stream = None))]
    fn flatten(
        slf: &Bound<'_, Self>,
        start_axis: isize,
        end_axis: isize,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::flatten(slf.as_any(), start_axis, end_axis, stream)
    }
    /// squeeze(axis=None, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.squeeze`.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((1, 3)).squeeze().shape
    ///     (3,)
    #[pyo3(signature = (axis = None, *, stream = None))]
    fn squeeze(
        slf: &Bound<'_, Self>,
        axis: Option<Ints>,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::squeeze(slf.as_any(), axis, stream)
    }
    /// expand_dims(axis, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.expand_dims`.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((3,)).expand_dims(0).shape
    ///     (1, 3)
    #[pyo3(signature = (axis, *, stream = None))]
    fn expand_dims(slf: &Bound<'_, Self>, axis: Ints, stream: Stream<'_, '_>) -> PyResult<PyArr> {
        ops::expand_dims(slf.as_any(), axis, stream)
    }
    /// swapaxes(axis1, axis2, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.swapaxes`.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).swapaxes(0, 1).shape
    ///     (3, 2)
    #[pyo3(signature = (axis1, axis2, *, stream = None))]
    fn swapaxes(
        slf: &Bound<'_, Self>,
        axis1: isize,
        axis2: isize,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::swapaxes(slf.as_any(), axis1, axis2, stream)
    }
    /// moveaxis(source, destination, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.moveaxis`.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3, 4)).moveaxis(0, -1).shape
    ///     (3, 4, 2)
    #[pyo3(signature = (source, destination, *, stream = None))]
    fn moveaxis(
        slf: &Bound<'_, Self>,
        source: isize,
        destination: isize,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::moveaxis(slf.as_any(), source, destination, stream)
    }
    /// var(axis=None, keepdims=False, ddof=0, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.var`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1.0, 3.0]).var().item()
    ///     1.0
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn var(
        slf: &Bound<'_, Self>,
        axis: Option<Ints>,
        keepdims: bool,
        ddof: i32,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::var(slf.as_any(), axis, keepdims, ddof, stream)
    }
    /// std(axis=None, keepdims=False, ddof=0, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.std`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1.0, 3.0]).std().item()
    ///     1.0
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0, *, stream = None))]
    fn std(
        slf: &Bound<'_, Self>,
        axis: Option<Ints>,
        keepdims: bool,
        ddof: i32,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::std_(slf.as_any(), axis, keepdims, ddof, stream)
    }
    /// argmax(axis=None, keepdims=False, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.argmax`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1, 3, 2]).argmax().item()
    ///     1
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmax(
        slf: &Bound<'_, Self>,
        axis: Option<isize>,
        keepdims: bool,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::argmax(slf.as_any(), axis, keepdims, stream)
    }
    /// argmin(axis=None, keepdims=False, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.argmin`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([3, 1, 2]).argmin().item()
    ///     1
    #[pyo3(signature = (axis = None, keepdims = false, *, stream = None))]
    fn argmin(
        slf: &Bound<'_, Self>,
        axis: Option<isize>,
        keepdims: bool,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::argmin(slf.as_any(), axis, keepdims, stream)
    }
    /// round(decimals=0, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.round`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1.5, 2.5]).round().tolist()
    ///     [2.0, 2.0]
    #[pyo3(signature = (decimals = 0, *, stream = None))]
    fn round(slf: &Bound<'_, Self>, decimals: i32, stream: Stream<'_, '_>) -> PyResult<PyArr> {
        ops::round(slf.as_any(), decimals, stream)
    }
    /// diagonal(offset=0, axis1=0, axis2=1, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.diagonal`.
    ///
    /// Example:
    ///     >>> ferrox.core.eye(2).diagonal().tolist()
    ///     [1.0, 1.0]
    #[pyo3(signature = (offset = 0, axis1 = 0, axis2 = 1, *, stream = None))]
    fn diagonal(
        slf: &Bound<'_, Self>,
        offset: isize,
        axis1: isize,
        axis2: isize,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::diagonal(slf.as_any(), offset, axis1, axis2, stream)
    }
    /// view(dtype, *, stream=None) -> array
    ///
    /// The same bytes read as another dtype (the last axis scales by the
    /// ratio of the item sizes).
    #[pyo3(signature = (dtype, *, stream = None))]
    fn view(
        slf: &Bound<'_, Self>,
        dtype: &Bound<'_, PyAny>,
        stream: Stream<'_, '_>,
    ) -> PyResult<PyArr> {
        ops::view(slf.as_any(), dtype, stream)
    }
    /// diag(k=0, *, stream=None) -> array
    ///
    /// The method form of :func:`ferrox.core.diag`.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1, 2]).diag().shape
    ///     (2, 2)
    #[pyo3(signature = (k = 0, *, stream = None))]
    fn diag(slf: &Bound<'_, Self>, k: isize, stream: Stream<'_, '_>) -> PyResult<PyArr> {
        ops::diag(slf.as_any(), k, stream)
    }
    /// split(indices_or_sections, axis=0, *, stream=None) -> list[array]
    ///
    /// The method form of :func:`ferrox.core.split`.
    ///
    /// Example:
    ///     >>> len(ferrox.core.arange(4).split(2))
    ///     2
    #[pyo3(signature = (indices_or_sections, axis = 0, *, stream = None))]
    fn split<'py>(
        slf: &Bound<'py, Self>,
        indices_or_sections: Ints,
        axis: isize,
        stream: Stream<'_, '_>,
    ) -> PyResult<Bound<'py, PyList>> {
        ops::split(slf.as_any(), indices_or_sections, axis, stream)
    }
}
