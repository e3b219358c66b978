//! eval, async_eval and the memory functions.

use crate::errors::OrPy;
use crate::tree::tree_arrays;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Evaluates every array in the arguments (arrays or trees of arrays).
/// Small work runs with the GIL held, the rest with it released so other
/// Python threads keep running (see `gil::keep_or_detach`).
///
/// Example:
///     >>> a = ferrox.core.ones((2,)) * 2; ferrox.core.eval(a)
#[pyfunction]
#[pyo3(signature = (*args))]
fn eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let xs = tree_arrays(args.as_any())?;
    crate::gil::keep_or_detach(py, &xs, || ferrox::eval(&xs)).py()
}

/// Starts evaluating the arrays in the arguments and returns at once. It
/// only queues work and never waits, so it keeps the GIL.
///
/// Example:
///     >>> a = ferrox.core.ones((2,)) * 2; ferrox.core.async_eval(a)
#[pyfunction]
#[pyo3(signature = (*args))]
fn async_eval(args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let xs = tree_arrays(args.as_any())?;
    ferrox::async_eval(&xs).py()
}

/// get_active_memory() -> int
///
/// Bytes held by live arrays' buffers.
///
/// Example:
///     >>> ferrox.core.get_active_memory() >= 0
///     True
#[pyfunction]
fn get_active_memory() -> usize {
    ferrox::get_active_memory()
}
/// get_peak_memory() -> int
///
/// The largest active memory over the allocations made since start or the
/// last :func:`reset_peak_memory` (0 right after a reset, as in MLX).
///
/// Example:
///     >>> ferrox.core.get_peak_memory() >= 0
///     True
#[pyfunction]
fn get_peak_memory() -> usize {
    ferrox::get_peak_memory()
}
/// reset_peak_memory() -> None
///
/// Resets the peak memory to 0; the next allocation starts a new mark.
///
/// Example:
///     >>> ferrox.core.reset_peak_memory()
#[pyfunction]
fn reset_peak_memory() {
    ferrox::reset_peak_memory()
}
/// get_cache_memory() -> int
///
/// Bytes of freed buffers kept for reuse.
///
/// Example:
///     >>> ferrox.core.get_cache_memory() >= 0
///     True
#[pyfunction]
fn get_cache_memory() -> usize {
    ferrox::get_cache_memory()
}
/// Sets the memory limit in bytes; returns the previous one.
///
/// Example:
///     >>> old = ferrox.core.set_memory_limit(1 << 40); _ = ferrox.core.set_memory_limit(old)
#[pyfunction]
fn set_memory_limit(limit: usize) -> usize {
    ferrox::set_memory_limit(limit)
}
/// Sets the buffer cache limit in bytes; returns the previous one.
///
/// Example:
///     >>> old = ferrox.core.set_cache_limit(0); _ = ferrox.core.set_cache_limit(old)
#[pyfunction]
fn set_cache_limit(limit: usize) -> usize {
    ferrox::set_cache_limit(limit)
}
/// clear_cache() -> None
///
/// Returns every cached buffer to the system (safe from any thread).
///
/// Example:
///     >>> ferrox.core.clear_cache()
#[pyfunction]
fn clear_cache() {
    ferrox::clear_cache()
}
/// get_memory_limit() -> int
///
/// The memory limit in bytes (see :func:`set_memory_limit`).
///
/// Example:
///     >>> ferrox.core.get_memory_limit() > 0
///     True
#[pyfunction]
fn get_memory_limit() -> usize {
    ferrox::get_memory_limit()
}
/// set_wired_limit(limit) -> int
///
/// Kept for source compatibility: wiring memory is a macOS GPU feature
/// with no meaning here. Records the value and returns the previous one.
///
/// Example:
///     >>> ferrox.core.set_wired_limit(0) >= 0
///     True
#[pyfunction]
fn set_wired_limit(limit: usize) -> usize {
    WIRED_LIMIT.swap(limit, std::sync::atomic::Ordering::Relaxed)
}
static WIRED_LIMIT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// get_array_buffer_size(*args) -> int
///
/// The bytes of the buffers behind the given arrays (or trees of arrays),
/// each buffer counted once. The arrays must be evaluated.
///
/// Example:
///     >>> a = ferrox.core.zeros((256,)); ferrox.core.eval(a)
///     >>> ferrox.core.get_array_buffer_size(a)
///     1024
#[pyfunction]
#[pyo3(signature = (*args))]
fn get_array_buffer_size(args: &Bound<'_, PyTuple>) -> PyResult<usize> {
    let xs = tree_arrays(args.as_any())?;
    ferrox::runtime::memory::buffer_size(&xs).py()
}

/// The print options (``precision``: decimals of printed floats, -1 for
/// the default six significant digits), as :func:`get_printoptions`
/// returns them.
#[pyclass(name = "PrintOptions", module = "ferrox.core", frozen)]
struct PrintOptions {
    #[pyo3(get)]
    precision: i64,
}

fn precision_arg(precision: i64) -> PyResult<Option<usize>> {
    match precision {
        -1 => Ok(None),
        p => usize::try_from(p).map(Some).map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "set_printoptions: precision must be -1 or non-negative, got {p}"
            ))
        }),
    }
}

fn current_precision() -> i64 {
    ferrox::array::print_precision().map_or(-1, |p| p as i64)
}

/// set_printoptions(precision=-1) -> None
///
/// Sets how many decimals printed floats get, for every thread (-1: the
/// default, six significant digits).
///
/// Example:
///     >>> ferrox.core.set_printoptions(precision=3)
///     >>> ferrox.core.set_printoptions()
#[pyfunction]
#[pyo3(signature = (precision = -1))]
fn set_printoptions(precision: i64) -> PyResult<()> {
    ferrox::array::set_print_precision(precision_arg(precision)?);
    Ok(())
}

/// get_printoptions() -> PrintOptions
///
/// The current print options.
///
/// Example:
///     >>> ferrox.core.get_printoptions().precision
///     -1
#[pyfunction]
fn get_printoptions() -> PrintOptions {
    PrintOptions {
        precision: current_precision(),
    }
}

/// The context manager :func:`printoptions` returns.
#[pyclass(name = "_PrintOptionsContext", module = "ferrox.core")]
struct PrintOptionsContext {
    precision: Option<usize>,
    saved: Vec<Option<usize>>,
}

#[pymethods]
impl PrintOptionsContext {
    fn __enter__(&mut self) {
        self.saved.push(ferrox::array::print_precision());
        ferrox::array::set_print_precision(self.precision);
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> bool {
        if let Some(p) = self.saved.pop() {
            ferrox::array::set_print_precision(p);
        }
        false
    }
}

/// printoptions(precision=-1)
///
/// A context manager that sets the print options inside a ``with`` block
/// and restores the previous ones after it (the setting is process-wide).
///
/// Example:
///     >>> with ferrox.core.printoptions(precision=2):
///     ...     print(ferrox.core.array([1.23456]))
///     array([1.23], dtype=float32)
#[pyfunction]
#[pyo3(signature = (precision = -1))]
fn printoptions(precision: i64) -> PyResult<PrintOptionsContext> {
    Ok(PrintOptionsContext {
        precision: precision_arg(precision)?,
        saved: Vec::new(),
    })
}

/// An array or a sequence of arrays, and whether it was a single array.
fn one_or_many(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<ferrox::Array>, bool)> {
    if obj.cast::<crate::array::PyArr>().is_ok() {
        return Ok((vec![crate::convert::to_array(obj)?], true));
    }
    let xs = obj
        .try_iter()?
        .map(|o| crate::convert::to_array(&o?))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((xs, false))
}

/// depends(inputs, dependencies)
///
/// The inputs again, as arrays that are evaluated only after every array
/// in ``dependencies`` (an array or a sequence, as ``inputs`` was given).
///
/// Example:
///     >>> x = ferrox.core.array([1.0]); y = ferrox.core.depends(x, ferrox.core.exp(x))
///     >>> y.tolist()
///     [1.0]
#[pyfunction]
fn depends<'py>(
    py: Python<'py>,
    inputs: &Bound<'py, PyAny>,
    dependencies: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (xs, single) = one_or_many(inputs)?;
    let (deps, _) = one_or_many(dependencies)?;
    let outs = ferrox::depends(&xs, &deps).py()?;
    if let (true, [y]) = (single, outs.as_slice()) {
        return Ok(Bound::new(py, crate::array::PyArr::new(y.clone()))?.into_any());
    }
    Ok(crate::ops::list(py, outs)?.into_any())
}

/// export_to_dot(file, *args, **kwargs) -> None
///
/// Writes the graph that computes the given arrays (and their unevaluated
/// inputs) to ``file`` (a path or a text file object) in Graphviz DOT
/// form; keyword arguments name arrays in the drawing.
///
/// Example:
///     >>> import io; f = io.StringIO()
///     >>> x = ferrox.core.array([1.0]); ferrox.core.export_to_dot(f, ferrox.core.exp(x), x=x)
///     >>> f.getvalue().startswith("digraph")
///     True
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn export_to_dot(
    file: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<()> {
    let outputs = tree_arrays(args.as_any())?;
    let mut names = Vec::new();
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            names.push((k.extract::<String>()?, crate::convert::to_array(&v)?));
        }
    }
    let dot = ferrox::graph::dot::to_dot(&outputs, &names);
    if file.hasattr("write")? {
        file.call_method1("write", (dot,))?;
        return Ok(());
    }
    let path: std::path::PathBuf = file.extract()?;
    std::fs::write(&path, dot).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("export_to_dot: {}: {e}", path.display()))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(depends, m)?)?;
    m.add_function(wrap_pyfunction!(export_to_dot, m)?)?;
    m.add_class::<PrintOptions>()?;
    m.add_class::<PrintOptionsContext>()?;
    m.add_function(wrap_pyfunction!(set_printoptions, m)?)?;
    m.add_function(wrap_pyfunction!(get_printoptions, m)?)?;
    m.add_function(wrap_pyfunction!(printoptions, m)?)?;
    m.add_function(wrap_pyfunction!(eval, m)?)?;
    m.add_function(wrap_pyfunction!(async_eval, m)?)?;
    m.add_function(wrap_pyfunction!(get_active_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(get_cache_memory, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(set_cache_limit, m)?)?;
    m.add_function(wrap_pyfunction!(clear_cache, m)?)?;
    m.add_function(wrap_pyfunction!(get_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(set_wired_limit, m)?)?;
    m.add_function(wrap_pyfunction!(get_array_buffer_size, m)?)?;
    Ok(())
}
