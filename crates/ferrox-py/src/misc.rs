//! eval, async_eval and the memory functions.

use crate::errors::OrPy;
use crate::tree::tree_arrays;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Evaluates every array in the arguments (arrays or trees of arrays).
/// Small work runs with the GIL held, the rest with it released so other
/// Python threads keep running (see `gil::keep_or_detach`).
#[pyfunction]
#[pyo3(signature = (*args))]
fn eval(py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let xs = tree_arrays(args.as_any())?;
    crate::gil::keep_or_detach(py, &xs, || ferrox::eval(&xs)).py()
}

/// Starts evaluating the arrays in the arguments and returns at once. It
/// only queues work and never waits, so it keeps the GIL.
#[pyfunction]
#[pyo3(signature = (*args))]
fn async_eval(args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let xs = tree_arrays(args.as_any())?;
    ferrox::async_eval(&xs).py()
}

#[pyfunction]
fn get_active_memory() -> usize {
    ferrox::get_active_memory()
}
#[pyfunction]
fn get_peak_memory() -> usize {
    ferrox::get_peak_memory()
}
#[pyfunction]
fn reset_peak_memory() {
    ferrox::reset_peak_memory()
}
#[pyfunction]
fn get_cache_memory() -> usize {
    ferrox::get_cache_memory()
}
/// Sets the memory limit in bytes; returns the previous one.
#[pyfunction]
fn set_memory_limit(limit: usize) -> usize {
    ferrox::set_memory_limit(limit)
}
/// Sets the buffer cache limit in bytes; returns the previous one.
#[pyfunction]
fn set_cache_limit(limit: usize) -> usize {
    ferrox::set_cache_limit(limit)
}
#[pyfunction]
fn clear_cache() {
    ferrox::clear_cache()
}
/// get_memory_limit() -> int
///
/// The memory limit in bytes (see :func:`set_memory_limit`).
#[pyfunction]
fn get_memory_limit() -> usize {
    ferrox::get_memory_limit()
}
/// set_wired_limit(limit) -> int
///
/// Kept for source compatibility: wiring memory is a macOS GPU feature
/// with no meaning here. Records the value and returns the previous one.
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
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
