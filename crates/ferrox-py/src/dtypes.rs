//! Dtype introspection with mlx.core's names: the category objects
//! (`floating`, `integer`, ...), `issubdtype`, `isdtype`, `finfo`, `iinfo`,
//! `result_type` and `can_cast`. Bindings of `ferrox::dtype`.

use crate::array::PyArr;
use crate::convert::{dtype_of, PyDtype};
use crate::errors::OrPy;
use ferrox::dtype::{self as fd, DtypeCategory, DtypeOrCategory};
use ferrox::DType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// An abstract dtype category (numpy's tree): ``generic`` holds ``bool_``
/// and ``number``; ``number`` holds ``integer`` (``signedinteger``,
/// ``unsignedinteger``) and ``inexact`` (``floating``,
/// ``complexfloating``). Use with :func:`issubdtype`.
///
/// Example:
///     >>> ferrox.core.issubdtype(ferrox.core.float16, ferrox.core.floating)
///     True
#[pyclass(
    name = "DtypeCategory",
    module = "ferrox.core",
    eq,
    eq_int,
    frozen,
    hash
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyDtypeCategory {
    #[pyo3(name = "complexfloating")]
    ComplexFloating,
    #[pyo3(name = "floating")]
    Floating,
    #[pyo3(name = "inexact")]
    Inexact,
    #[pyo3(name = "signedinteger")]
    SignedInteger,
    #[pyo3(name = "unsignedinteger")]
    UnsignedInteger,
    #[pyo3(name = "integer")]
    Integer,
    #[pyo3(name = "number")]
    Number,
    #[pyo3(name = "generic")]
    Generic,
}

impl PyDtypeCategory {
    fn core(self) -> DtypeCategory {
        match self {
            PyDtypeCategory::ComplexFloating => DtypeCategory::ComplexFloating,
            PyDtypeCategory::Floating => DtypeCategory::Floating,
            PyDtypeCategory::Inexact => DtypeCategory::Inexact,
            PyDtypeCategory::SignedInteger => DtypeCategory::SignedInteger,
            PyDtypeCategory::UnsignedInteger => DtypeCategory::UnsignedInteger,
            PyDtypeCategory::Integer => DtypeCategory::Integer,
            PyDtypeCategory::Number => DtypeCategory::Number,
            PyDtypeCategory::Generic => DtypeCategory::Generic,
        }
    }
    const ALL: [PyDtypeCategory; 8] = [
        PyDtypeCategory::ComplexFloating,
        PyDtypeCategory::Floating,
        PyDtypeCategory::Inexact,
        PyDtypeCategory::SignedInteger,
        PyDtypeCategory::UnsignedInteger,
        PyDtypeCategory::Integer,
        PyDtypeCategory::Number,
        PyDtypeCategory::Generic,
    ];
}

#[pymethods]
impl PyDtypeCategory {
    fn __repr__(&self) -> String {
        format!("DtypeCategory.{}", self.core().name())
    }
}

fn dtype_or_category(obj: &Bound<'_, PyAny>) -> PyResult<DtypeOrCategory> {
    if let Ok(c) = obj.cast::<PyDtypeCategory>() {
        return Ok(DtypeOrCategory::Category(c.get().core()));
    }
    dtype_of(obj).map(DtypeOrCategory::Dtype)
}

/// issubdtype(arg1, arg2) -> bool
///
/// Whether the dtype or category ``arg1`` is ``arg2`` or lies below it in
/// the category tree.
///
/// Example:
///     >>> ferrox.core.issubdtype(ferrox.core.int8, ferrox.core.integer)
///     True
///     >>> ferrox.core.issubdtype(ferrox.core.float32, ferrox.core.float16)
///     False
#[pyfunction]
fn issubdtype(arg1: &Bound<'_, PyAny>, arg2: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(fd::issubdtype(
        dtype_or_category(arg1)?,
        dtype_or_category(arg2)?,
    ))
}

/// Whether `d` is of the array-API kind named `kind`.
fn is_kind(d: DType, kind: &str) -> PyResult<bool> {
    let c = fd::category_of(d);
    Ok(match kind {
        "bool" => d == DType::Bool,
        "signed integer" => c == DtypeCategory::SignedInteger,
        "unsigned integer" => c == DtypeCategory::UnsignedInteger,
        "integral" => d.is_integer(),
        "real floating" => d.is_float(),
        "complex floating" => d == DType::Complex64,
        "numeric" => d != DType::Bool,
        other => {
            return Err(PyValueError::new_err(format!(
                "isdtype: unknown kind {other:?} (expected 'bool', 'signed integer', \
                 'unsigned integer', 'integral', 'real floating', 'complex floating' or 'numeric')"
            )));
        }
    })
}

fn matches_kind(d: DType, kind: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(t) = kind.cast::<PyTuple>() {
        for k in t.iter() {
            if matches_kind(d, &k)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    if let Ok(s) = kind.extract::<String>() {
        return is_kind(d, &s);
    }
    if let Ok(k) = kind.cast::<PyDtype>() {
        return Ok(k.get().0 == d);
    }
    Err(PyTypeError::new_err(format!(
        "isdtype: kind must be a dtype, a kind string or a tuple of them, got {}",
        kind.repr()?
    )))
}

/// isdtype(dtype, kind) -> bool
///
/// Whether ``dtype`` is of one of the given kinds: a dtype, one of the
/// strings ``"bool"``, ``"signed integer"``, ``"unsigned integer"``,
/// ``"integral"``, ``"real floating"``, ``"complex floating"``,
/// ``"numeric"``, or a tuple of those.
///
/// Example:
///     >>> ferrox.core.isdtype(ferrox.core.int8, "integral")
///     True
#[pyfunction]
fn isdtype(dtype: &Bound<'_, PyAny>, kind: &Bound<'_, PyAny>) -> PyResult<bool> {
    let d = dtype.cast::<PyDtype>().map(|d| d.get().0).map_err(|_| {
        PyTypeError::new_err(format!(
            "isdtype: expected a dtype, got {}",
            dtype.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    matches_kind(d, kind)
}

/// The dtype of an array or a dtype argument.
fn dtype_of_arg(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(a) = obj.cast::<PyArr>() {
        return Ok(a.get().arr().dtype());
    }
    dtype_of(obj)
}

/// result_type(*arrays_and_dtypes) -> Dtype
///
/// The dtype type promotion gives for the given arrays and dtypes.
///
/// Example:
///     >>> ferrox.core.result_type(ferrox.core.uint8, ferrox.core.int8)
///     ferrox.core.int16
#[pyfunction]
#[pyo3(signature = (*arrays_and_dtypes))]
fn result_type(arrays_and_dtypes: &Bound<'_, PyTuple>) -> PyResult<PyDtype> {
    let ds = arrays_and_dtypes
        .iter()
        .map(|o| dtype_of_arg(&o))
        .collect::<PyResult<Vec<_>>>()?;
    fd::result_type(&ds).py().map(PyDtype)
}

/// can_cast(from_, to) -> bool
///
/// Whether ``from_`` (an array or a dtype) promotes with ``to`` to ``to``
/// itself.
///
/// Example:
///     >>> ferrox.core.can_cast(ferrox.core.int32, ferrox.core.float32)
///     True
#[pyfunction]
fn can_cast(from_: &Bound<'_, PyAny>, to: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(fd::can_cast(dtype_of_arg(from_)?, dtype_of(to)?))
}

/// finfo(dtype)
///
/// The limits of a floating point dtype: ``min``, ``max``, ``eps``,
/// ``smallest_normal``, ``bits`` and ``dtype`` (complex64 reports
/// float32's).
///
/// Example:
///     >>> ferrox.core.finfo(ferrox.core.float16).max
///     65504.0
#[pyclass(name = "finfo", module = "ferrox.core", frozen)]
pub struct PyFinfo(fd::FloatInfo);

#[pymethods]
impl PyFinfo {
    #[new]
    fn new(dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        fd::finfo(dtype_of(dtype)?).py().map(PyFinfo)
    }
    /// The most negative finite value.
    #[getter]
    fn min(&self) -> f64 {
        self.0.min
    }
    /// The largest finite value.
    #[getter]
    fn max(&self) -> f64 {
        self.0.max
    }
    /// The gap between 1 and the next representable value.
    #[getter]
    fn eps(&self) -> f64 {
        self.0.eps
    }
    /// The smallest positive normal value.
    #[getter]
    fn smallest_normal(&self) -> f64 {
        self.0.smallest_normal
    }
    /// Bits per value.
    #[getter]
    fn bits(&self) -> usize {
        self.0.bits
    }
    /// The dtype described.
    #[getter]
    fn dtype(&self) -> PyDtype {
        PyDtype(self.0.dtype)
    }
    fn __repr__(&self) -> String {
        format!(
            "finfo(min={}, max={}, dtype={})",
            self.0.min,
            self.0.max,
            self.0.dtype.name()
        )
    }
}

/// iinfo(dtype)
///
/// The limits of an integer dtype: ``min``, ``max``, ``bits`` and
/// ``dtype``.
///
/// Example:
///     >>> ferrox.core.iinfo(ferrox.core.int8).min
///     -128
#[pyclass(name = "iinfo", module = "ferrox.core", frozen)]
pub struct PyIinfo(fd::IntInfo);

#[pymethods]
impl PyIinfo {
    #[new]
    fn new(dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        fd::iinfo(dtype_of(dtype)?).py().map(PyIinfo)
    }
    /// The smallest value.
    #[getter]
    fn min(&self) -> i128 {
        self.0.min
    }
    /// The largest value.
    #[getter]
    fn max(&self) -> i128 {
        self.0.max
    }
    /// Bits per value.
    #[getter]
    fn bits(&self) -> usize {
        self.0.bits
    }
    /// The dtype described.
    #[getter]
    fn dtype(&self) -> PyDtype {
        PyDtype(self.0.dtype)
    }
    fn __repr__(&self) -> String {
        format!(
            "iinfo(min={}, max={}, dtype={})",
            self.0.min,
            self.0.max,
            self.0.dtype.name()
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDtypeCategory>()?;
    m.add_class::<PyFinfo>()?;
    m.add_class::<PyIinfo>()?;
    for c in PyDtypeCategory::ALL {
        m.add(c.core().name(), c)?;
    }
    m.add_function(wrap_pyfunction!(issubdtype, m)?)?;
    m.add_function(wrap_pyfunction!(isdtype, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    Ok(())
}
