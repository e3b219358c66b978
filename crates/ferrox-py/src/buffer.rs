//! Zero-copy export: the buffer protocol and `__array__`.
//!
//! An exported buffer points into the evaluated array's storage, read-only
//! (ferrox arrays are immutable), with the array's own strides, so a
//! transposed, reversed or broadcast view exports without a copy. The
//! export holds its own handle to the storage (not to the Python object's
//! current array, which `a += 1` or `a[i] = v` may replace), so the bytes
//! stay valid until the consumer releases the buffer, whatever happens to
//! the Python object meanwhile.

use crate::array::PyArr;
use crate::convert::to_numpy;
use crate::errors::OrPy;
use ferrox::array::Data;
use ferrox::DType;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyMemoryView;
use std::ffi::{c_int, c_void, CStr};

/// What an exported buffer keeps alive; owned by `Py_buffer::internal`.
struct Export {
    _data: Data,
    shape: Vec<ffi::Py_ssize_t>,
    strides: Vec<ffi::Py_ssize_t>,
}

/// The struct-module format of a dtype (bfloat16 has none).
fn format_of(dtype: DType) -> Option<&'static CStr> {
    Some(match dtype {
        DType::Bool => c"?",
        DType::UInt8 => c"B",
        DType::UInt16 => c"H",
        DType::UInt32 => c"I",
        DType::UInt64 => c"Q",
        DType::Int8 => c"b",
        DType::Int16 => c"h",
        DType::Int32 => c"i",
        DType::Int64 => c"q",
        DType::Float16 => c"e",
        DType::Float32 => c"f",
        DType::Float64 => c"d",
        DType::Complex64 => c"Zf",
        DType::BFloat16 => return None,
    })
}

fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    ferrox::array::is_row_contiguous(shape, strides)
}

/// Fills `view` for `slf` (`__getbuffer__`).
///
/// # Safety
/// `view` must be null or point to a `Py_buffer` that CPython passed to
/// `bf_getbuffer`.
pub unsafe fn get(slf: &Bound<'_, PyArr>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("array: a null buffer view"));
    }
    if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
        return Err(PyBufferError::new_err(
            "array: the buffer is read-only (ferrox arrays are immutable)",
        ));
    }
    let a = slf.get().arr();
    let format = format_of(a.dtype()).ok_or_else(|| {
        PyBufferError::new_err("array: bfloat16 has no buffer format; use astype(float32)")
    })?;
    let data = crate::gil::keep_or_detach(slf.py(), std::slice::from_ref(&a), || a.data()).py()?;
    let item = a.itemsize();
    let contiguous = is_c_contiguous(a.shape(), &data.strides);
    let wants_contiguous = flags & ffi::PyBUF_ANY_CONTIGUOUS == ffi::PyBUF_ANY_CONTIGUOUS
        || flags & ffi::PyBUF_C_CONTIGUOUS == ffi::PyBUF_C_CONTIGUOUS
        || flags & ffi::PyBUF_F_CONTIGUOUS == ffi::PyBUF_F_CONTIGUOUS;
    let wants_strides = flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES;
    let f_order_asked = flags & ffi::PyBUF_F_CONTIGUOUS == ffi::PyBUF_F_CONTIGUOUS
        && flags & ffi::PyBUF_ANY_CONTIGUOUS != ffi::PyBUF_ANY_CONTIGUOUS;
    if (!contiguous && (wants_contiguous || !wants_strides)) || (f_order_asked && a.ndim() > 1) {
        return Err(PyBufferError::new_err(format!(
            "array: a view with strides {:?} is not contiguous as requested; copy it first",
            data.strides
        )));
    }
    let bytes = data.storage.as_slice::<u8>();
    let start = data.offset * item;
    let ptr = bytes.get(start..).map_or(bytes.as_ptr(), |b| b.as_ptr());
    let export = Box::new(Export {
        shape: a.shape().iter().map(|&d| d as ffi::Py_ssize_t).collect(),
        strides: data
            .strides
            .iter()
            .map(|&s| (s * item as isize) as ffi::Py_ssize_t)
            .collect(),
        _data: data,
    });
    // SAFETY: `view` is a valid, writable Py_buffer (checked non-null;
    // CPython owns it for the duration of this call). The pointers stored
    // into it stay valid until `release` frees `export`: `ptr` points into
    // storage that `export._data` keeps alive, `shape`/`strides` are
    // `export`'s own vectors (not moved while boxed), `format` is static.
    // `obj` receives a new reference, which `PyBuffer_Release` drops.
    unsafe {
        (*view).buf = ptr as *mut c_void;
        (*view).obj = slf.clone().into_any().into_ptr();
        (*view).len = (a.size() * item) as ffi::Py_ssize_t;
        (*view).readonly = 1;
        (*view).itemsize = item as ffi::Py_ssize_t;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            format.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).ndim = a.ndim() as c_int;
        (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
            export.shape.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).strides = if wants_strides {
            export.strides.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = Box::into_raw(export) as *mut c_void;
    }
    Ok(())
}

/// Frees what [`get`] exported (`__releasebuffer__`).
///
/// # Safety
/// `view` must be a `Py_buffer` that [`get`] filled successfully.
pub unsafe fn release(view: *mut ffi::Py_buffer) {
    // SAFETY: `get` stored a `Box<Export>` in `internal`; CPython calls
    // this once per successful export, so the box is freed exactly once.
    unsafe {
        let internal = (*view).internal as *mut Export;
        if !internal.is_null() {
            drop(Box::from_raw(internal));
            (*view).internal = std::ptr::null_mut();
        }
    }
}

/// `__array__`: a read-only numpy view of the evaluated array when its
/// dtype exists in numpy and no copy is asked for; otherwise a copy
/// (bfloat16 becomes float32, as in MLX). `copy=False` when a copy is
/// unavoidable raises `ValueError`, as numpy's protocol asks.
pub fn to_numpy_array<'py>(
    slf: &Bound<'py, PyArr>,
    dtype: Option<&Bound<'py, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let dtype = dtype.filter(|d| !d.is_none());
    let a = slf.get().arr();
    let exportable = format_of(a.dtype()).is_some();
    if copy == Some(false) && !exportable {
        return Err(PyValueError::new_err(
            "array: bfloat16 has no numpy dtype, so a copy is needed (copy=False was given)",
        ));
    }
    let np = py.import("numpy")?;
    let n = if exportable && copy != Some(true) {
        np.call_method1("asarray", (PyMemoryView::from(slf.as_any())?,))?
    } else {
        to_numpy(py, &a)?
    };
    match dtype {
        Some(d) if copy == Some(false) => {
            let same = n.getattr("dtype")?.eq(np.call_method1("dtype", (d,))?)?;
            if same {
                Ok(n)
            } else {
                Err(PyValueError::new_err(
                    "array: a dtype conversion needs a copy (copy=False was given)",
                ))
            }
        }
        Some(d) => np.call_method1("asarray", (n, d)),
        None => Ok(n),
    }
}
