//! Python values ⇄ ferrox arrays: scalars, nested lists, numpy arrays, dtypes.

use crate::array::PyArr;
use crate::errors::OrPy;
use ferrox::dtype::Element;
use ferrox::half::{bf16, f16};
use ferrox::runtime::memory::Pod;
use ferrox::{Array, Complex64, DType};
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyTuple};

/// A dtype (`ferrox.core.float32`, ...): `size` in bytes, equality, hash.
#[pyclass(name = "Dtype", module = "ferrox.core", eq, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDtype(pub DType);

#[pymethods]
impl PyDtype {
    /// Bytes per element.
    #[getter]
    fn size(&self) -> usize {
        self.0.size()
    }
    fn __repr__(&self) -> String {
        format!("ferrox.core.{}", attr_name(self.0))
    }
}

/// The module attribute naming a dtype (`bool_` for bool, as in MLX).
pub fn attr_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool_",
        d => d.name(),
    }
}

/// A `dtype=` argument: a ferrox `Dtype`, a dtype name, or a numpy dtype
/// or scalar type.
pub fn dtype_of(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDtype>() {
        return Ok(d.get().0);
    }
    if let Ok(s) = obj.extract::<String>() {
        let s = if s == "bool_" { "bool".to_string() } else { s };
        return DType::from_name(&s).py();
    }
    let np = obj.py().import("numpy")?;
    if let Ok(d) = np.call_method1("dtype", (obj,)) {
        let name: String = d.getattr("name")?.extract()?;
        if let Ok(d) = DType::from_name(&name) {
            return Ok(d);
        }
    }
    Err(PyTypeError::new_err(format!(
        "expected a dtype, got {}",
        obj.repr()?
    )))
}

pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        Some(o) if !o.is_none() => dtype_of(o).map(Some),
        _ => Ok(None),
    }
}

fn typed<T: Element + Pod + numpy::Element>(a: &Bound<'_, PyAny>) -> PyResult<Array> {
    let a = a.cast::<PyArrayDyn<T>>()?;
    let shape = a.shape().to_vec();
    let ro = a.readonly();
    let s = ro
        .as_slice()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Array::from_slice(s, &shape).py()
}

/// A numpy array as a ferrox array with the same dtype (float64 becomes
/// float32 and complex128 complex64 unless `keep_f64`).
pub fn from_numpy(a: &Bound<'_, PyAny>, keep_f64: bool) -> PyResult<Array> {
    let py = a.py();
    let np = py.import("numpy")?;
    // `ascontiguousarray` would make a 0-d array 1-d.
    let kw = pyo3::types::PyDict::new(py);
    kw.set_item("order", "C")?;
    let a = np.call_method("asarray", (a,), Some(&kw))?;
    let name: String = a.getattr("dtype")?.getattr("name")?.extract()?;
    let out = match name.as_str() {
        "bool" => typed::<bool>(&a)?,
        "uint8" => typed::<u8>(&a)?,
        "uint16" => typed::<u16>(&a)?,
        "uint32" => typed::<u32>(&a)?,
        "uint64" => typed::<u64>(&a)?,
        "int8" => typed::<i8>(&a)?,
        "int16" => typed::<i16>(&a)?,
        "int32" => typed::<i32>(&a)?,
        "int64" => typed::<i64>(&a)?,
        "float16" => typed::<f16>(&a)?,
        "float32" => typed::<f32>(&a)?,
        "float64" if keep_f64 => typed::<f64>(&a)?,
        "float64" => {
            let a = a.call_method1("astype", ("float32",))?;
            typed::<f32>(&a)?
        }
        "complex64" => typed::<Complex64>(&a)?,
        "complex128" => {
            let a = a.call_method1("astype", ("complex64",))?;
            typed::<Complex64>(&a)?
        }
        other => {
            return Err(PyTypeError::new_err(format!(
                "array: numpy dtype {other} is not supported"
            )))
        }
    };
    Ok(out)
}

fn vec_to_numpy<'py, T: Element + Pod + numpy::Element>(
    py: Python<'py>,
    a: &Array,
) -> PyResult<Bound<'py, PyAny>> {
    let shape = a.shape().to_vec();
    let v = crate::gil::keep_or_detach(py, std::slice::from_ref(a), || a.to_vec::<T>()).py()?;
    let flat = numpy::PyArray1::from_vec(py, v);
    Ok(flat.reshape(shape)?.into_any())
}

/// Evaluates `a` (without holding the GIL) and copies it into a new numpy
/// array of the same dtype (bfloat16, which numpy lacks, as float32).
pub fn to_numpy<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    match a.dtype() {
        DType::Bool => vec_to_numpy::<bool>(py, a),
        DType::UInt8 => vec_to_numpy::<u8>(py, a),
        DType::UInt16 => vec_to_numpy::<u16>(py, a),
        DType::UInt32 => vec_to_numpy::<u32>(py, a),
        DType::UInt64 => vec_to_numpy::<u64>(py, a),
        DType::Int8 => vec_to_numpy::<i8>(py, a),
        DType::Int16 => vec_to_numpy::<i16>(py, a),
        DType::Int32 => vec_to_numpy::<i32>(py, a),
        DType::Int64 => vec_to_numpy::<i64>(py, a),
        DType::Float16 => vec_to_numpy::<f16>(py, a),
        DType::BFloat16 => {
            let f = a.astype(DType::Float32).py()?;
            vec_to_numpy::<f32>(py, &f)
        }
        DType::Float32 => vec_to_numpy::<f32>(py, a),
        DType::Float64 => vec_to_numpy::<f64>(py, a),
        DType::Complex64 => vec_to_numpy::<Complex64>(py, a),
    }
}

fn is_numpy_like(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.cast::<PyUntypedArray>().is_ok() {
        return Ok(true);
    }
    let np = obj.py().import("numpy")?;
    obj.is_instance(&np.getattr("generic")?)
}

/// An OverflowError unless every integer in `lo..=hi` fits `dtype` (when
/// `dtype` is an integer type), numpy 2's rule for Python ints given an
/// explicit dtype.
pub fn check_int_range(lo: i128, hi: i128, dtype: Option<DType>) -> PyResult<()> {
    let Some(d) = dtype.filter(|d| d.is_integer()) else {
        return Ok(());
    };
    let info = ferrox::dtype::iinfo(d).py()?;
    for v in [lo, hi] {
        if v < info.min || v > info.max {
            return Err(pyo3::exceptions::PyOverflowError::new_err(format!(
                "Python integer {v} out of bounds for {d}"
            )));
        }
    }
    Ok(())
}

/// An int as int32 when it fits, else int64 (MLX's rule for Python ints).
fn int_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Array> {
    let v: i64 = obj
        .extract()
        .map_err(|_| PyValueError::new_err("array: integer out of the int64 range"))?;
    Ok(match i32::try_from(v) {
        Ok(v) => Array::scalar(v),
        Err(_) => Array::scalar(v),
    })
}

fn complex_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Array> {
    let c = obj.cast::<PyComplex>()?;
    Ok(Array::scalar(Complex64::new(
        c.real() as f32,
        c.imag() as f32,
    )))
}

/// An operand of an op: arrays as they are, Python scalars as weak scalars
/// (so `float16_array * 2.0` stays float16), anything else as [`new_array`].
pub fn to_array(obj: &Bound<'_, PyAny>) -> PyResult<Array> {
    // Conversions may run Python code (`__array__`, `__index__`, numpy).
    crate::gil::protect_thread();
    if let Ok(a) = obj.cast::<PyArr>() {
        return Ok(a.get().arr());
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Array::weak_bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        let v: i64 = obj
            .extract()
            .map_err(|_| PyValueError::new_err("integer out of the int64 range"))?;
        return Ok(Array::weak_i64(v));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Array::weak_f64(obj.extract()?));
    }
    new_array(obj, None)
}

/// `to_array` for an optional argument (`None` stays `None`).
pub fn opt_array(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Array>> {
    match obj {
        Some(o) if !o.is_none() => to_array(o).map(Some),
        _ => Ok(None),
    }
}

/// `ferrox.core.array(obj, dtype=None)`: strongly typed. Python bool, int,
/// float, complex become bool, int32 (int64 if needed), float32,
/// complex64; nested lists the same, by their widest element; numpy arrays
/// keep their dtype except float64 (float32 unless `dtype` says otherwise).
pub fn new_array(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Array> {
    crate::gil::protect_thread();
    let a = if let Ok(a) = obj.cast::<PyArr>() {
        a.get().arr()
    } else if obj.is_instance_of::<PyBool>() {
        Array::scalar(obj.extract::<bool>()?)
    } else if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i128>() {
            check_int_range(v, v, dtype)?;
        }
        int_scalar(obj)?
    } else if obj.is_instance_of::<PyFloat>() {
        if dtype == Some(DType::Float64) {
            Array::scalar(obj.extract::<f64>()?)
        } else {
            Array::scalar(obj.extract::<f64>()? as f32)
        }
    } else if obj.is_instance_of::<PyComplex>() {
        complex_scalar(obj)?
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        from_sequence(obj, dtype)?
    } else if obj.is_instance_of::<pyo3::types::PyBytes>()
        || obj.is_instance_of::<pyo3::types::PyByteArray>()
    {
        // Raw bytes are uint8 data, as MLX reads them.
        let bytes: Vec<u8> = obj.extract()?;
        let n = bytes.len();
        Array::from_slice(&bytes, &[n]).py()?
    } else if is_numpy_like(obj)? {
        from_numpy(obj, dtype == Some(DType::Float64))?
    } else if obj.hasattr("__array__")? {
        let np = obj.py().import("numpy")?;
        from_numpy(
            &np.call_method1("asarray", (obj,))?,
            dtype == Some(DType::Float64),
        )?
    } else {
        return Err(PyTypeError::new_err(format!(
            "cannot convert {} to an array",
            obj.get_type().name()?
        )));
    };
    match dtype {
        Some(d) if d != a.dtype() => a.astype(d).py(),
        _ => Ok(a),
    }
}

fn contains_array(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    for item in obj.try_iter()? {
        let item = item?;
        if item.cast::<PyArr>().is_ok() {
            return Ok(true);
        }
        if (item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>())
            && contains_array(&item)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

fn from_sequence(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Array> {
    // Lists holding ferrox arrays stack them (keeping the graph, so the
    // result stays differentiable); plain data goes through numpy.
    if contains_array(obj)? {
        let parts = obj
            .try_iter()?
            .map(|i| new_array(&i?, dtype))
            .collect::<PyResult<Vec<_>>>()?;
        if parts.is_empty() {
            return Err(PyValueError::new_err("array: empty list of arrays"));
        }
        if parts.iter().any(|p| p.shape() != parts[0].shape()) {
            return Err(PyValueError::new_err(
                "Initialization encountered non-uniform length.",
            ));
        }
        return ferrox::stack(&parts, 0).py();
    }
    let py = obj.py();
    let np = py.import("numpy")?;
    let a = np.call_method1("array", (obj,))?;
    let kind: String = a.getattr("dtype")?.getattr("kind")?.extract()?;
    let a = match kind.as_str() {
        "i" | "u" => {
            // Python ints: int32 when every value fits, like MLX.
            if a.getattr("size")?.extract::<usize>()? == 0 {
                a.call_method1("astype", ("int32",))?
            } else {
                let lo: i64 = a.call_method0("min")?.extract()?;
                let hi: i64 = a.call_method0("max")?.extract().unwrap_or(i64::MAX);
                check_int_range(lo as i128, hi as i128, dtype)?;
                if lo >= i32::MIN as i64 && hi <= i32::MAX as i64 {
                    a.call_method1("astype", ("int32",))?
                } else {
                    a
                }
            }
        }
        "f" => {
            if a.getattr("size")?.extract::<usize>()? == 0 && dtype.is_none() {
                a.call_method1("astype", ("float32",))?
            } else {
                a
            }
        }
        "b" | "c" => a,
        _ => {
            return Err(PyValueError::new_err(format!(
                "array: cannot convert {} to an array (ragged or non-numeric)",
                obj.repr()?
            )))
        }
    };
    from_numpy(&a, dtype == Some(DType::Float64))
}

/// asarray(a, dtype=None, *, copy=None) -> array
///
/// ``a`` as an array: arrays are returned as they are (or cast to
/// ``dtype``), anything else converts as :func:`array` does. Arrays are
/// immutable, so sharing is always safe. ``copy=False`` raises
/// ``ValueError``, as in MLX on the CPU: ferrox never adopts a foreign
/// buffer, so it cannot promise a conversion without a copy.
///
/// Example:
///     >>> ferrox.core.asarray([1, 2]).tolist()
///     [1, 2]
#[pyfunction]
#[pyo3(signature = (a, dtype = None, *, copy = None))]
fn asarray(
    a: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<PyArr> {
    if copy == Some(false) {
        return Err(PyValueError::new_err(
            "asarray: copy=False is not supported: ferrox does not adopt other buffers \
             without copying (pass copy=None or copy=True)",
        ));
    }
    let d = opt_dtype(dtype)?;
    if a.hasattr("__dlpack__")? && a.cast::<PyArr>().is_err() && !is_numpy_like(a)? {
        return from_dlpack(a, None).and_then(|x| match d {
            Some(d) => Ok(PyArr::new(x.arr().astype(d).py()?)),
            None => Ok(x),
        });
    }
    new_array(a, d).map(PyArr::new)
}

/// from_dlpack(x, /, *, copy=None) -> array
///
/// An array with the values of any DLPack producer on the CPU (a numpy or
/// torch tensor, ...). The values are copied into ferrox's buffers, keeping
/// the producer's strides (a transposed or broadcast tensor stays a strided
/// view; negative strides raise ``ValueError``); float64 becomes float32
/// and complex128 complex64, as :func:`array` does.
///
/// Example:
///     >>> import numpy as np
///     >>> ferrox.core.from_dlpack(np.arange(3)).tolist()
///     [0, 1, 2]
#[pyfunction]
#[pyo3(signature = (x, /, *, copy = None))]
fn from_dlpack(x: &Bound<'_, PyAny>, copy: Option<bool>) -> PyResult<PyArr> {
    let _ = copy;
    let py = x.py();
    let np = py.import("numpy")?;
    // numpy reports a tensor it cannot take (an unsupported dtype such as
    // torch's complex32, a device it cannot read) as a RuntimeError or a
    // BufferError; MLX raises ValueError for these.
    let a = np.call_method1("from_dlpack", (x,)).map_err(|e| {
        let bad_tensor = e.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py)
            || e.is_instance_of::<pyo3::exceptions::PyBufferError>(py);
        if bad_tensor {
            PyValueError::new_err(format!("from_dlpack: {}", e.value(py)))
        } else {
            e
        }
    })?;
    // Like `array(x)`: float64 becomes float32 (MLX's mapping).
    strided_from_numpy(&a).map(PyArr::new)
}

/// A numpy array as a ferrox array with the same strides (as MLX keeps a
/// DLPack producer's layout): the span of memory the view reaches is copied
/// once and the result is an [`ferrox::as_strided`] view of that copy, so a
/// transposed, stepped or broadcast producer keeps its strides and a
/// broadcast one is not expanded. Negative strides are a `ValueError` (as
/// in MLX); a contiguous array is copied as [`from_numpy`] copies it.
fn strided_from_numpy(a: &Bound<'_, PyAny>) -> PyResult<Array> {
    let strides: Vec<isize> = a.getattr("strides")?.extract()?;
    let shape: Vec<usize> = a.getattr("shape")?.extract()?;
    let item: isize = a.getattr("itemsize")?.extract()?;
    if let Some(s) = strides.iter().find(|&&s| s < 0) {
        return Err(PyValueError::new_err(format!(
            "from_dlpack: negative strides are not supported (strides {strides:?} bytes, {s} < 0)"
        )));
    }
    let c_contiguous: bool = a.getattr("flags")?.get_item("C_CONTIGUOUS")?.extract()?;
    let whole_items = item > 0 && strides.iter().all(|s| s % item == 0);
    if c_contiguous || shape.contains(&0) || !whole_items {
        return from_numpy(a, false);
    }
    let elem_strides: Vec<isize> = strides.iter().map(|s| s / item).collect();
    let span = 1 + shape
        .iter()
        .zip(&elem_strides)
        .map(|(&d, &s)| (d as isize - 1) * s)
        .sum::<isize>();
    let np = a.py().import("numpy")?;
    let kw = pyo3::types::PyDict::new(a.py());
    kw.set_item("shape", (span,))?;
    kw.set_item("strides", (item,))?;
    let flat =
        np.getattr("lib")?
            .getattr("stride_tricks")?
            .call_method("as_strided", (a,), Some(&kw))?;
    let base = from_numpy(&flat, false)?;
    ferrox::as_strided(&base, &shape, &elem_strides, 0).py()
}

/// Registers the dtype objects.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(asarray, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_class::<PyDtype>()?;
    for d in DType::ALL {
        m.add(attr_name(d), PyDtype(d))?;
    }
    let _ = (bf16::ZERO, f16::ZERO);
    Ok(())
}
