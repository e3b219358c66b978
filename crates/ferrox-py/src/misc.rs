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
    Ok(())
}
