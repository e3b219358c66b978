//! Devices, streams and the `stream` context manager.

use ferrox::{Device, DeviceType, Stream};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::cell::RefCell;

/// A device kind: `ferrox.core.cpu`, or `ferrox.core.gpu`, which names a
/// device this build does not have (`is_available(gpu)` is False), as on a
/// machine without one.
#[pyclass(name = "DeviceType", module = "ferrox.core", eq, eq_int, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PyDeviceType {
    /// The host CPU.
    #[pyo3(name = "cpu")]
    Cpu,
    /// A GPU; none is available to this build.
    #[pyo3(name = "gpu")]
    Gpu,
}

impl PyDeviceType {
    fn name(self) -> &'static str {
        match self {
            PyDeviceType::Cpu => "cpu",
            PyDeviceType::Gpu => "gpu",
        }
    }
}

/// A device: a kind and an index. Any device can be named; only the ones
/// that exist (`is_available`) can run work or be the default.
#[pyclass(name = "Device", module = "ferrox.core", frozen)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice {
    kind: PyDeviceType,
    index: usize,
}

impl PyDevice {
    /// The Python value of a core device.
    pub fn of(d: Device) -> PyDevice {
        let kind = match d.kind {
            DeviceType::Cpu => PyDeviceType::Cpu,
        };
        PyDevice {
            kind,
            index: d.index,
        }
    }

    /// The core device, or a ValueError naming what is missing.
    fn available(self) -> PyResult<Device> {
        match (self.kind, self.index) {
            (PyDeviceType::Cpu, 0) => Ok(Device::cpu()),
            (kind, index) => Err(PyValueError::new_err(format!(
                "Device({}, {index}) is not available: this build of ferrox has cpu device 0 only",
                kind.name()
            ))),
        }
    }
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index = 0))]
    fn new(r#type: PyDeviceType, index: usize) -> Self {
        PyDevice {
            kind: r#type,
            index,
        }
    }
    #[getter]
    fn r#type(&self) -> PyDeviceType {
        self.kind
    }
    #[getter]
    fn index(&self) -> usize {
        self.index
    }
    /// A device equals another device of the same kind and index, and a
    /// device kind names its device 0.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(d) = other.cast::<PyDevice>() {
            return *d.get() == *self;
        }
        if let Ok(k) = other.cast::<PyDeviceType>() {
            return self.index == 0 && *k.get() == self.kind;
        }
        false
    }
    fn __hash__(&self) -> u64 {
        let kind = match self.kind {
            PyDeviceType::Cpu => 0,
            PyDeviceType::Gpu => 1,
        };
        (self.index as u64) << 1 | kind
    }
    fn __repr__(&self) -> String {
        format!("Device({}, {})", self.kind.name(), self.index)
    }
}

/// An ordered queue of work on a device, as a value.
#[pyclass(name = "Stream", module = "ferrox.core", eq, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyStream(pub Stream);

#[pymethods]
impl PyStream {
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice::of(self.0.device)
    }
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    fn __repr__(&self) -> String {
        format!(
            "Stream(Device(cpu, {}), {})",
            self.0.device.index, self.0.index
        )
    }
}

thread_local! {
    // Streams opened by `with ferrox.core.stream(s):` on this (Python)
    // thread, innermost last. A plain value stack, as the core's own scope.
    static SCOPE: RefCell<Vec<Stream>> = const { RefCell::new(Vec::new()) };
}

/// A device or stream argument (`stream=`): a `Stream`, a `Device` or a
/// `DeviceType` (meaning that device's default stream).
pub fn stream_of(obj: &Bound<'_, PyAny>) -> PyResult<Stream> {
    if let Ok(s) = obj.cast::<PyStream>() {
        return Ok(s.get().0);
    }
    Ok(ferrox::default_stream(device_of(obj)?))
}

/// A device argument: a `Device`, a `DeviceType` (its device 0) or a
/// `Stream` (its device); a ValueError for a device this build lacks.
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return d.get().available();
    }
    if let Ok(k) = obj.cast::<PyDeviceType>() {
        return PyDevice::new(*k.get(), 0).available();
    }
    if let Ok(s) = obj.cast::<PyStream>() {
        return Ok(s.get().0.device);
    }
    Err(PyTypeError::new_err(format!(
        "expected a Device, DeviceType or Stream, got {}",
        obj.get_type().name()?
    )))
}

/// Whether a `stream=` argument names a GPU (a `gpu` device or device
/// kind): `Some(true)`; `Some(false)` for the CPU or a stream (every stream
/// of this build is on the CPU); a TypeError for anything else.
pub fn names_gpu(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(d.get().kind == PyDeviceType::Gpu);
    }
    if let Ok(k) = obj.cast::<PyDeviceType>() {
        return Ok(*k.get() == PyDeviceType::Gpu);
    }
    if obj.cast::<PyStream>().is_ok() {
        return Ok(false);
    }
    Err(PyTypeError::new_err(format!(
        "expected a Device, DeviceType or Stream, got {}",
        obj.get_type().name()?
    )))
}

/// Runs `f` on the stream named by `stream=` if given, else on the
/// innermost `with stream(...)` of this thread, else on the default.
pub fn on<R>(stream: Option<&Bound<'_, PyAny>>, f: impl FnOnce() -> R) -> PyResult<R> {
    let s = match stream {
        Some(s) if !s.is_none() => Some(stream_of(s)?),
        _ => SCOPE.with(|c| c.borrow().last().copied()),
    };
    Ok(match s {
        Some(s) => ferrox::with_stream(s, f),
        None => f(),
    })
}

/// The stream ops built now go to (scope-aware).
pub fn scoped_stream() -> Stream {
    SCOPE
        .with(|c| c.borrow().last().copied())
        .unwrap_or_else(ferrox::current_stream)
}

/// `with ferrox.core.stream(s): ...` — ops built inside go to `s`.
#[pyclass(name = "StreamContext", module = "ferrox.core", frozen)]
pub struct StreamContext(Stream);

#[pymethods]
impl StreamContext {
    fn __enter__(&self) -> PyStream {
        SCOPE.with(|c| c.borrow_mut().push(self.0));
        PyStream(self.0)
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        SCOPE.with(|c| {
            c.borrow_mut().pop();
        });
        false
    }
}

/// stream(s) -> StreamContext
///
/// A context manager: ops built inside ``with stream(s):`` go to the stream ``s`` (a Stream, Device or DeviceType).
///
/// Example:
///     >>> with ferrox.core.stream(ferrox.core.cpu): pass
#[pyfunction]
fn stream(s: &Bound<'_, PyAny>) -> PyResult<StreamContext> {
    Ok(StreamContext(stream_of(s)?))
}

/// default_device() -> Device
///
/// The process-wide default device.
///
/// Example:
///     >>> ferrox.core.default_device()
///     Device(cpu, 0)
#[pyfunction]
fn default_device() -> PyDevice {
    PyDevice::of(ferrox::default_device())
}

/// set_default_device(device) -> None
///
/// Sets the process-wide default device (for every thread).
///
/// Example:
///     >>> ferrox.core.set_default_device(ferrox.core.cpu)
#[pyfunction]
fn set_default_device(device: &Bound<'_, PyAny>) -> PyResult<()> {
    ferrox::set_default_device(device_of(device)?);
    Ok(())
}

/// default_stream(device) -> Stream
///
/// The default stream of ``device`` (the same on every thread).
///
/// Example:
///     >>> ferrox.core.default_stream(ferrox.core.cpu).device
///     Device(cpu, 0)
#[pyfunction]
fn default_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    Ok(PyStream(ferrox::default_stream(device_of(device)?)))
}

/// new_stream(device) -> Stream
///
/// A new stream on ``device``, usable from any thread.
///
/// Example:
///     >>> s = ferrox.core.new_stream(ferrox.core.cpu)
#[pyfunction]
fn new_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    Ok(PyStream(ferrox::new_stream(device_of(device)?)))
}

/// Waits for async work on `stream` (default: the current stream).
///
/// Example:
///     >>> ferrox.core.synchronize()
#[pyfunction]
#[pyo3(signature = (stream = None))]
fn synchronize(py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let s = match stream {
        Some(s) if !s.is_none() => stream_of(s)?,
        _ => scoped_stream(),
    };
    crate::gil::detach(py, || ferrox::synchronize(s));
    Ok(())
}

/// True if `device` (a `Device` or `DeviceType`) can run work.
///
/// Example:
///     >>> ferrox.core.is_available(ferrox.core.cpu)
///     True
#[pyfunction]
fn is_available(device: &Bound<'_, PyAny>) -> PyResult<bool> {
    match device_of(device) {
        Ok(_) => Ok(true),
        Err(e) if e.is_instance_of::<PyValueError>(device.py()) => Ok(false),
        Err(e) => Err(e),
    }
}

/// device_count(device_type) -> int
///
/// The number of devices of a kind: 1 for ``cpu``, 0 for ``gpu`` (this
/// build has no GPU back end).
///
/// Example:
///     >>> ferrox.core.device_count(ferrox.core.cpu)
///     1
#[pyfunction]
fn device_count(device_type: PyDeviceType) -> usize {
    match device_type {
        PyDeviceType::Cpu => ferrox::device_count(DeviceType::Cpu),
        PyDeviceType::Gpu => 0,
    }
}

/// device_info(d=None) -> dict[str, str | int]
///
/// The properties of a device (default: the default device):
/// ``device_name``, ``architecture``, ``memory_size`` and ``cpu_count``.
///
/// Example:
///     >>> "architecture" in ferrox.core.device_info(ferrox.core.cpu)
///     True
#[pyfunction]
#[pyo3(signature = (d = None))]
fn device_info<'py>(
    py: Python<'py>,
    d: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let device = match d {
        Some(d) if !d.is_none() => device_of(d)?,
        _ => ferrox::default_device(),
    };
    let out = pyo3::types::PyDict::new(py);
    for (key, value) in ferrox::device_info(device) {
        match value {
            ferrox::DeviceProperty::Text(t) => out.set_item(key, t)?,
            ferrox::DeviceProperty::Number(n) => out.set_item(key, n)?,
        }
    }
    Ok(out)
}

/// clear_streams() -> None
///
/// Kept for source compatibility with MLX, where it destroys the streams
/// of the calling thread. ferrox has no per-thread streams or stream
/// resources (a stream is a value), so there is nothing to destroy: a
/// no-op, safe from any thread at any time.
///
/// Example:
///     >>> ferrox.core.clear_streams()
#[pyfunction]
fn clear_streams() {}

/// new_thread_local_stream(device) -> Stream
///
/// A new stream on ``device``. MLX gives each thread its own instance of
/// such a stream; in ferrox every stream can be used from any thread
/// (work on one stream runs in submission order whichever thread submits
/// it), so this is :func:`new_stream`.
///
/// Example:
///     >>> s = ferrox.core.new_thread_local_stream(ferrox.core.cpu)
#[pyfunction]
fn new_thread_local_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    new_stream(device)
}

/// new_thread_unsafe_stream(device) -> Stream
///
/// A new stream on ``device``, for source compatibility: every ferrox
/// stream may be used from any thread, so this is :func:`new_stream`.
///
/// Example:
///     >>> s = ferrox.core.new_thread_unsafe_stream(ferrox.core.cpu)
#[pyfunction]
fn new_thread_unsafe_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    new_stream(device)
}

/// set_default_stream(stream) -> None
///
/// Makes ``stream`` the default stream of its device, for every thread
/// (process-wide, like :func:`set_default_device`; MLX keeps it per
/// thread).
///
/// Example:
///     >>> ferrox.core.set_default_stream(ferrox.core.default_stream(ferrox.core.cpu))
#[pyfunction]
fn set_default_stream(stream: &Bound<'_, PyAny>) -> PyResult<()> {
    let s = stream
        .cast::<PyStream>()
        .map_err(|_| PyTypeError::new_err("set_default_stream: expected a Stream"))?;
    ferrox::set_default_stream(s.get().0);
    Ok(())
}

/// `ferrox.core.metal.is_available()` / `ferrox.core.cuda.is_available()`:
/// False, as on a machine without that GPU back end.
///
/// Example:
///     >>> ferrox.core.metal.is_available()
///     False
#[pyfunction]
#[pyo3(name = "is_available")]
fn backend_is_available() -> bool {
    false
}

/// The `metal` and `cuda` namespaces: each says it is not available.
fn register_gpu_backends(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for name in ["metal", "cuda"] {
        let doc = format!("The {name} GPU back end: not part of this build.");
        let sub = crate::fft::submodule(m, name, &doc)?;
        sub.add_function(wrap_pyfunction!(backend_is_available, &sub)?)?;
    }
    Ok(())
}

// `new_thread_unsafe_stream` is mlx.core's name; nothing here is `unsafe`.
#[allow(clippy::unsafe_removed_from_name)]
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeviceType>()?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyStream>()?;
    m.add_class::<StreamContext>()?;
    m.add("cpu", PyDeviceType::Cpu)?;
    m.add("gpu", PyDeviceType::Gpu)?;
    register_gpu_backends(m)?;
    m.add_function(wrap_pyfunction!(stream, m)?)?;
    m.add_function(wrap_pyfunction!(default_device, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_stream, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(is_available, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(clear_streams, m)?)?;
    m.add_function(wrap_pyfunction!(new_thread_local_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_thread_unsafe_stream, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_stream, m)?)?;
    // Every stream is usable from any thread: the thread-local kind is the
    // same class.
    m.add("ThreadLocalStream", m.getattr("Stream")?)?;
    Ok(())
}
