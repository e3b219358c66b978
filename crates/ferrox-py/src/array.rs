//! `ferrox.core.array`.

use crate::convert::{dtype_of, new_array, opt_dtype, to_array, to_numpy, PyDtype};
use crate::device::on;
use crate::errors::OrPy;
use crate::index::{bool_mask, getitem, parse_index, setitem, update_at, AtOp};
use ferrox::{Array, DType};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::RwLock;

/// A lazy n-dimensional array (MLX's `mx.array`).
///
/// The Python object holds a handle that `a[i] = v` and `a += b` replace;
/// the graph nodes themselves are immutable and shared between threads.
#[pyclass(name = "array", module = "ferrox.core", frozen, weakref)]
pub struct PyArr {
    inner: RwLock<Array>,
}

impl PyArr {
    pub fn new(a: Array) -> Self {
        // Every op result passes here: the cheapest common point of entry.
        crate::gil::protect_thread();
        PyArr {
            inner: RwLock::new(a),
        }
    }
    /// The current array (an `Arc` clone).
    pub fn arr(&self) -> Array {
        match self.inner.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
    /// Replaces the array (in-place ops, `__setitem__`).
    pub fn set(&self, a: Array) {
        match self.inner.write() {
            Ok(mut g) => *g = a,
            Err(p) => *p.into_inner() = a,
        }
    }
}

/// Evaluates `a`, with the GIL released unless the work is small.
pub fn eval_nogil(py: Python<'_>, a: &Array) -> PyResult<()> {
    crate::gil::keep_or_detach(py, std::slice::from_ref(a), || a.eval()).py()
}

type BinFn = fn(&Array, &Array) -> ferrox::Result<Array>;

impl PyArr {
    fn bin(&self, other: &Bound<'_, PyAny>, f: BinFn, reflected: bool) -> PyResult<Py<PyAny>> {
        let py = other.py();
        reject_sequence_operand(other)?;
        let Ok(b) = to_array(other) else {
            return Ok(py.NotImplemented());
        };
        let a = self.arr();
        let r = on(None, || if reflected { f(&b, &a) } else { f(&a, &b) })?.py()?;
        Ok(Py::new(py, PyArr::new(r))?.into_any())
    }
    fn inplace(&self, other: &Bound<'_, PyAny>, f: BinFn) -> PyResult<()> {
        self.inplace_named(other, f, "")
    }
    fn inplace_named(&self, other: &Bound<'_, PyAny>, f: BinFn, name: &str) -> PyResult<()> {
        reject_sequence_operand(other)?;
        if name == "__itruediv__" && !self.arr().dtype().is_inexact() {
            return Err(PyValueError::new_err(format!(
                "in-place division of a {} array: the quotient is not an integer type",
                self.arr().dtype()
            )));
        }
        let b = to_array(other)?;
        let a = self.arr();
        let r = on(None, || f(&a, &b))?.py()?;
        // In-place ops keep the dtype, as MLX's do.
        let r = if r.dtype() != a.dtype() {
            r.astype(a.dtype()).py()?
        } else {
            r
        };
        self.set(r);
        Ok(())
    }
}

macro_rules! binary_dunders {
    ($($name:ident, $rname:ident, $iname:ident => $f:path;)*) => {
        #[pymethods]
        impl PyArr {
            $(
                fn $name(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    self.bin(other, $f, false)
                }
                fn $rname(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    self.bin(other, $f, true)
                }
                fn $iname(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    self.inplace_named(other, $f, stringify!($iname))
                }
            )*
        }
    };
}

binary_dunders! {
    __add__, __radd__, __iadd__ => ferrox::add;
    __sub__, __rsub__, __isub__ => ferrox::subtract;
    __mul__, __rmul__, __imul__ => ferrox::multiply;
    __truediv__, __rtruediv__, __itruediv__ => ferrox::divide;
    __floordiv__, __rfloordiv__, __ifloordiv__ => ferrox::floor_divide;
    __mod__, __rmod__, __imod__ => ferrox::remainder;
    __matmul__, __rmatmul__, __imatmul__ => ferrox::matmul;
    __and__, __rand__, __iand__ => bit_and;
    __or__, __ror__, __ior__ => bit_or;
    __xor__, __rxor__, __ixor__ => ferrox::bitwise_xor;
    __lshift__, __rlshift__, __ilshift__ => ferrox::left_shift;
    __rshift__, __rrshift__, __irshift__ => ferrox::right_shift;
}

fn and_or(a: &Array, b: &Array, f: BinFn, logical: BinFn) -> ferrox::Result<Array> {
    // `&` and `|` on bools are logical, as in MLX.
    if a.dtype() == DType::Bool && b.dtype() == DType::Bool {
        logical(a, b)
    } else {
        f(a, b)
    }
}

#[pymethods]
impl PyArr {
    #[new]
    #[pyo3(signature = (val, dtype = None))]
    fn py_new(val: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(PyArr::new(new_array(val, opt_dtype(dtype)?)?))
    }

    /// The dimensions, as a tuple of ints.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).shape
    ///     (2, 3)
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.arr().shape())
    }
    /// The element type.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1.0]).dtype
    ///     ferrox.core.float32
    #[getter]
    fn dtype(&self) -> PyDtype {
        PyDtype(self.arr().dtype())
    }
    /// The number of dimensions.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).ndim
    ///     2
    #[getter]
    fn ndim(&self) -> usize {
        self.arr().ndim()
    }
    /// The number of elements.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).size
    ///     6
    #[getter]
    fn size(&self) -> usize {
        self.arr().size()
    }
    /// Bytes per element.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).itemsize
    ///     4
    #[getter]
    fn itemsize(&self) -> usize {
        self.arr().itemsize()
    }
    /// Bytes of all the elements (``size * itemsize``).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).nbytes
    ///     24
    #[getter]
    fn nbytes(&self) -> usize {
        self.arr().nbytes()
    }
    /// The array with its axes reversed (``transpose()``).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3)).T.shape
    ///     (3, 2)
    #[getter(T)]
    fn t(&self) -> PyResult<PyArr> {
        let a = self.arr();
        Ok(PyArr::new(on(None, || a.transpose(None))?.py()?))
    }
    /// The array with its last two axes swapped (``matrix_transpose``).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2, 3, 4)).mT.shape
    ///     (2, 4, 3)
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyArr> {
        let a = self.arr();
        Ok(PyArr::new(on(None, || ferrox::matrix_transpose(&a))?.py()?))
    }
    /// The module implementing the array API for this array (ferrox.core).
    #[pyo3(signature = (*, api_version = None))]
    fn __array_namespace__<'py>(
        &self,
        py: Python<'py>,
        api_version: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyModule>> {
        let _ = api_version;
        py.import("ferrox.core")
    }
    /// The real part (float32 for complex64 arrays).
    ///
    /// Example:
    ///     >>> ferrox.core.array([1 + 2j]).real.tolist()
    ///     [1.0]
    #[getter]
    fn real(&self) -> PyResult<PyArr> {
        Ok(PyArr::new(on(None, || ferrox::real(&self.arr()))?.py()?))
    }
    /// The imaginary part (float32 for complex64 arrays).
    ///
    /// Example:
    ///     >>> ferrox.core.array([1 + 2j]).imag.tolist()
    ///     [2.0]
    #[getter]
    fn imag(&self) -> PyResult<PyArr> {
        Ok(PyArr::new(on(None, || ferrox::imag(&self.arr()))?.py()?))
    }
    /// ``a.at[idx].add(v)`` and friends: functional updates where repeated
    /// indices all apply.
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([0, 0])].add(1.0).tolist()
    ///     [2.0, 0.0]
    #[getter]
    fn at(&self) -> AtBuilder {
        AtBuilder(self.arr())
    }

    /// item() -> scalar
    ///
    /// The value of a one-element array as a Python scalar.
    ///
    /// Example:
    ///     >>> ferrox.core.array([3]).item()
    ///     3
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.arr();
        if a.size() != 1 {
            return Err(PyValueError::new_err(format!(
                "item: can only convert an array of size 1, got shape {:?}",
                a.shape()
            )));
        }
        to_numpy(py, &a)?.call_method0("item")
    }
    /// tolist() -> list | scalar
    ///
    /// Nested Python lists of Python scalars.
    ///
    /// Example:
    ///     >>> ferrox.core.array([[1, 2]]).tolist()
    ///     [[1, 2]]
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.arr())?.call_method0("tolist")
    }
    /// astype(dtype, stream=None) -> array
    ///
    /// The array converted to ``dtype``.
    ///
    /// Example:
    ///     >>> ferrox.core.array([1.5]).astype(ferrox.core.int32).tolist()
    ///     [1]
    #[pyo3(signature = (dtype, stream = None))]
    fn astype(
        &self,
        dtype: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArr> {
        let d = dtype_of(dtype)?;
        let a = self.arr();
        Ok(PyArr::new(on(stream, || a.astype(d))?.py()?))
    }
    /// The DLPack capsule of the array's values (CPU), for
    /// ``numpy.from_dlpack``, ``torch.from_dlpack`` and the like. The
    /// export goes through numpy's: zero-copy where the consumer accepts a
    /// read-only tensor (DLPack 1.0), else a copy; bfloat16 has no numpy
    /// dtype and raises ``BufferError``.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stream;
        let py = slf.py();
        let kwargs = pyo3::types::PyDict::new(py);
        if let Some(v) = max_version {
            kwargs.set_item("max_version", v)?;
        }
        if let Some(d) = dl_device {
            kwargs.set_item("dl_device", d)?;
        }
        let np = py.import("numpy")?;
        if copy != Some(true) {
            let view = np.call_method1("asarray", (slf,))?;
            match view.call_method("__dlpack__", (), Some(&kwargs)) {
                Ok(capsule) => return Ok(capsule),
                Err(e) if copy == Some(false) => return Err(e),
                Err(_) => {}
            }
        }
        let owned = np.call_method1("array", (slf,))?;
        owned.call_method("__dlpack__", (), Some(&kwargs))
    }
    /// ``(device_type, device_id)`` in DLPack's codes: ``(1, 0)``, the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (1, 0)
    }
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::buffer::to_numpy_array(slf, dtype, copy)
    }
    /// The buffer protocol: a read-only view of the evaluated array.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        // SAFETY: CPython passes the Py_buffer it asks us to fill.
        unsafe { crate::buffer::get(&slf, view, flags) }
    }
    unsafe fn __releasebuffer__(&self, view: *mut pyo3::ffi::Py_buffer) {
        // SAFETY: CPython passes a buffer that `__getbuffer__` filled.
        unsafe { crate::buffer::release(view) }
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let a = self.arr();
        eval_nogil(py, &a)?;
        Ok(format!("{a}"))
    }
    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        self.__repr__(py)
    }
    fn __len__(&self) -> PyResult<usize> {
        let a = self.arr();
        match a.shape().first() {
            Some(&n) => Ok(n),
            None => Err(PyTypeError::new_err("len() of a 0-d array")),
        }
    }
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let a = slf.get().arr();
        let Some(&n) = a.shape().first() else {
            return Err(PyTypeError::new_err("iteration over a 0-d array"));
        };
        let items = (0..n)
            .map(|i| {
                let r = a.index(&[ferrox::SliceArg::Index(i as isize)]).py()?;
                Py::new(py, PyArr::new(r))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.try_iter()?.into_any().unbind())
    }
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        let a = self.arr();
        if a.size() != 1 {
            return Err(PyValueError::new_err(
                "the truth value of an array with more than one element is ambiguous",
            ));
        }
        to_numpy(py, &a)?.call_method0("item")?.is_truthy()
    }
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        self.item(py)?.call_method0("__float__")?.extract()
    }
    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let item = self.item(py)?;
        py.import("builtins")?.getattr("complex")?.call1((item,))
    }
    /// ``format(a, spec)``: an empty spec prints the array; any other spec
    /// formats the value of a one-element array (``f"{a:.2f}"``).
    fn __format__(&self, py: Python<'_>, spec: &str) -> PyResult<String> {
        if spec.is_empty() {
            return self.__str__(py);
        }
        if self.arr().size() != 1 {
            return Err(PyTypeError::new_err(format!(
                "unsupported format string {spec:?} for an array of shape {:?}; \
                 only one-element arrays take a format spec",
                self.arr().shape()
            )));
        }
        let item = self.item(py)?;
        py.import("builtins")?
            .getattr("format")?
            .call1((item, spec))?
            .extract()
    }
    /// Pickles as its values (a numpy array) and dtype.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let a = slf.get().arr();
        let values = to_numpy(py, &a)?.call_method0("copy")?;
        let dtype = pyo3::types::PyString::new(py, a.dtype().name()).into_any();
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                PyTuple::new(py, [values, dtype])?.into_any(),
            ],
        )
    }
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.item(py)?.call_method0("__int__")
    }
    fn __index__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = self.arr();
        if !a.dtype().is_integer() {
            return Err(PyTypeError::new_err(
                "only integer arrays can be converted to an index",
            ));
        }
        self.item(py)?.call_method0("__index__")
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __copy__(&self) -> PyArr {
        PyArr::new(self.arr())
    }
    #[pyo3(signature = (_memo = None))]
    fn __deepcopy__(&self, _memo: Option<&Bound<'_, PyAny>>) -> PyArr {
        PyArr::new(self.arr())
    }

    fn __getitem__(&self, index: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        let ix = parse_index(index)?;
        let a = self.arr();
        Ok(PyArr::new(on(None, || getitem(&a, &ix))?.py()?))
    }
    fn __setitem__(&self, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_array(value)?;
        let a = self.arr();
        if let Some(mask) = bool_mask(index)? {
            let r = on(None, || {
                ferrox::masked_scatter(&a, &mask, &v.astype(a.dtype())?)
            })?
            .py()?;
            self.set(r);
            return Ok(());
        }
        let ix = parse_index(index)?;
        let r = on(None, || setitem(&a, &ix, &v))?.py()?;
        self.set(r);
        Ok(())
    }

    fn __neg__(&self) -> PyResult<PyArr> {
        Ok(PyArr::new(
            on(None, || ferrox::negative(&self.arr()))?.py()?,
        ))
    }
    fn __pos__(&self) -> PyArr {
        PyArr::new(self.arr())
    }
    fn __abs__(&self) -> PyResult<PyArr> {
        Ok(PyArr::new(on(None, || ferrox::abs(&self.arr()))?.py()?))
    }
    fn __invert__(&self) -> PyResult<PyArr> {
        let a = self.arr();
        let r = on(None, || {
            if a.dtype() == DType::Bool {
                ferrox::logical_not(&a)
            } else {
                ferrox::bitwise_invert(&a)
            }
        })?;
        Ok(PyArr::new(r.py()?))
    }
    fn __pow__(
        &self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        self.bin(other, ferrox::power, false)
    }
    fn __rpow__(
        &self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        self.bin(other, ferrox::power, true)
    }
    fn __ipow__(
        &self,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = modulo;
        self.inplace(other, ferrox::power)
    }
    /// Element-wise ``==`` with arrays, scalars and numpy arrays; any other
    /// object (a list, a tuple, a string) is simply not equal, as in MLX.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !comparable(other)? {
            return Ok(false
                .into_pyobject(other.py())?
                .to_owned()
                .into_any()
                .unbind());
        }
        self.bin(other, ferrox::equal, false)
    }
    fn __ne__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !comparable(other)? {
            return Ok(true
                .into_pyobject(other.py())?
                .to_owned()
                .into_any()
                .unbind());
        }
        self.bin(other, ferrox::not_equal, false)
    }
    fn __lt__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin(other, ferrox::less, false)
    }
    fn __le__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin(other, ferrox::less_equal, false)
    }
    fn __gt__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin(other, ferrox::greater, false)
    }
    fn __ge__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.bin(other, ferrox::greater_equal, false)
    }
}

/// Arithmetic and ordering with a string, list or tuple is a ValueError,
/// as in MLX (numpy would convert the sequence; `mx.array(seq)` says so).
fn reject_sequence_operand(other: &Bound<'_, PyAny>) -> PyResult<()> {
    use pyo3::types::{PyList, PyString, PyTuple};
    if other.is_instance_of::<PyString>()
        || other.is_instance_of::<PyList>()
        || other.is_instance_of::<PyTuple>()
    {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "cannot combine an array with a {} in an arithmetic or comparison operator; \
             convert it with array(...) first",
            other.get_type().name()?
        )));
    }
    Ok(())
}

// `&`/`|` on bool arrays are logical ops; override the bitwise versions'
// behaviour through these helpers used by the dunders above.
/// True for what `==` compares element-wise: arrays, Python scalars and
/// numpy arrays or scalars.
fn comparable(other: &Bound<'_, PyAny>) -> PyResult<bool> {
    use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};
    if other.cast::<PyArr>().is_ok()
        || other.is_instance_of::<PyBool>()
        || other.is_instance_of::<PyInt>()
        || other.is_instance_of::<PyFloat>()
        || other.is_instance_of::<PyComplex>()
    {
        return Ok(true);
    }
    let np = other.py().import("numpy")?;
    Ok(
        other.is_instance(&np.getattr("ndarray")?)?
            || other.is_instance(&np.getattr("generic")?)?,
    )
}

pub fn bit_and(a: &Array, b: &Array) -> ferrox::Result<Array> {
    and_or(a, b, ferrox::bitwise_and, ferrox::logical_and)
}
pub fn bit_or(a: &Array, b: &Array) -> ferrox::Result<Array> {
    and_or(a, b, ferrox::bitwise_or, ferrox::logical_or)
}

/// `a.at`: index it to get an [`AtUpdate`].
#[pyclass(name = "ArrayAt", module = "ferrox.core", frozen)]
pub struct AtBuilder(Array);

#[pymethods]
impl AtBuilder {
    fn __getitem__(&self, index: &Bound<'_, PyAny>) -> PyResult<AtUpdate> {
        Ok(AtUpdate {
            array: self.0.clone(),
            index: index.clone().unbind(),
        })
    }
    /// `a.at.add(v)` without an index is a mistake: say so (MLX raises
    /// ValueError too).
    fn __getattr__(&self, name: &str) -> PyResult<Py<PyAny>> {
        Err(pyo3::exceptions::PyValueError::new_err(format!(
            "array.at must be indexed before .{name}(): write a.at[index].{name}(value)"
        )))
    }
}

/// `a.at[idx]`: `set`, `add`, `subtract`, `multiply`, `divide`, `maximum`,
/// `minimum` return the updated array; repeated indices all apply.
#[pyclass(name = "ArrayAtIndex", module = "ferrox.core", frozen)]
pub struct AtUpdate {
    array: Array,
    index: Py<PyAny>,
}

impl AtUpdate {
    fn apply(&self, value: &Bound<'_, PyAny>, op: AtOp) -> PyResult<PyArr> {
        let ix = parse_index(self.index.bind(value.py()))?;
        let v = to_array(value)?;
        Ok(PyArr::new(
            on(None, || update_at(&self.array, &ix, &v, op))?.py()?,
        ))
    }
}

#[pymethods]
impl AtUpdate {
    /// set(value) -> array
    ///
    /// The array with ``value`` written at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].set(2.0).shape
    ///     (2,)
    fn set(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Set)
    }
    /// add(value) -> array
    ///
    /// The array with ``value`` added at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].add(2.0).shape
    ///     (2,)
    fn add(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Add)
    }
    /// subtract(value) -> array
    ///
    /// The array with ``value`` subtracted at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].subtract(2.0).shape
    ///     (2,)
    fn subtract(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Subtract)
    }
    /// multiply(value) -> array
    ///
    /// The array with ``value`` multiplied in at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].multiply(2.0).shape
    ///     (2,)
    fn multiply(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Multiply)
    }
    /// divide(value) -> array
    ///
    /// The array with ``value`` divided in at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].divide(2.0).shape
    ///     (2,)
    fn divide(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Divide)
    }
    /// maximum(value) -> array
    ///
    /// The array with ``value`` combined with maximum at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].maximum(2.0).shape
    ///     (2,)
    fn maximum(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Maximum)
    }
    /// minimum(value) -> array
    ///
    /// The array with ``value`` combined with minimum at the indices (repeated indices all apply).
    ///
    /// Example:
    ///     >>> ferrox.core.zeros((2,)).at[ferrox.core.array([1])].minimum(2.0).shape
    ///     (2,)
    fn minimum(&self, value: &Bound<'_, PyAny>) -> PyResult<PyArr> {
        self.apply(value, AtOp::Minimum)
    }
}
