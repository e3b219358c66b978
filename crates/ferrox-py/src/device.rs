//! Devices, streams and the `stream` context manager.

use ferrox::{Device, DeviceType, Stream};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::cell::RefCell;

/// A device kind (`ferrox.core.cpu`).
#[pyclass(name = "DeviceType", module = "ferrox.core", eq, eq_int, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyDeviceType {
    /// The host CPU.
    #[pyo3(name = "cpu")]
    Cpu,
}

/// A device: a kind and an index.
#[pyclass(name = "Device", module = "ferrox.core", eq, frozen, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDevice(pub Device);

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index = 0))]
    fn new(r#type: PyDeviceType, index: usize) -> PyResult<Self> {
        if index != 0 {
            return Err(PyValueError::new_err(format!(
                "Device: there is only cpu device 0, got index {index}"
            )));
        }
        let _ = r#type;
        Ok(PyDevice(Device::cpu()))
    }
    #[getter]
    fn r#type(&self) -> PyDeviceType {
        match self.0.kind {
            DeviceType::Cpu => PyDeviceType::Cpu,
        }
    }
    #[getter]
    fn index(&self) -> usize {
        self.0.index
    }
    fn __repr__(&self) -> String {
        format!("Device(cpu, {})", self.0.index)
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
        PyDevice(self.0.device)
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
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(ferrox::default_stream(d.get().0));
    }
    if obj.cast::<PyDeviceType>().is_ok() {
        return Ok(ferrox::default_stream(Device::cpu()));
    }
    Err(PyTypeError::new_err(format!(
        "expected a Stream or Device, got {}",
        obj.get_type().name()?
    )))
}

/// A device argument: a `Device` or a `DeviceType`.
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(d) = obj.cast::<PyDevice>() {
        return Ok(d.get().0);
    }
    if obj.cast::<PyDeviceType>().is_ok() {
        return Ok(Device::cpu());
    }
    if let Ok(s) = obj.cast::<PyStream>() {
        return Ok(s.get().0.device);
    }
    Err(PyTypeError::new_err(format!(
        "expected a Device, got {}",
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

#[pyfunction]
fn stream(s: &Bound<'_, PyAny>) -> PyResult<StreamContext> {
    Ok(StreamContext(stream_of(s)?))
}

#[pyfunction]
fn default_device() -> PyDevice {
    PyDevice(ferrox::default_device())
}

#[pyfunction]
fn set_default_device(device: &Bound<'_, PyAny>) -> PyResult<()> {
    ferrox::set_default_device(device_of(device)?);
    Ok(())
}

#[pyfunction]
fn default_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    Ok(PyStream(ferrox::default_stream(device_of(device)?)))
}

#[pyfunction]
fn new_stream(device: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    Ok(PyStream(ferrox::new_stream(device_of(device)?)))
}

/// Waits for async work on `stream` (default: the current stream).
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

#[pyfunction]
fn is_available(device: &Bound<'_, PyAny>) -> PyResult<bool> {
    device_of(device).map(|_| true)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeviceType>()?;
    m.add_class::<PyDevice>()?;
    m.add_class::<PyStream>()?;
    m.add_class::<StreamContext>()?;
    m.add("cpu", PyDeviceType::Cpu)?;
    m.add_function(wrap_pyfunction!(stream, m)?)?;
    m.add_function(wrap_pyfunction!(default_device, m)?)?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(default_stream, m)?)?;
    m.add_function(wrap_pyfunction!(new_stream, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(is_available, m)?)?;
    Ok(())
}
