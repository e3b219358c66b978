//! `compile`'s implicit state: the `inputs=` and `outputs=` trees.
//!
//! State arrays (a model's parameters, an optimizer's moments, a random
//! key) reach a compiled function without being arguments: at every call
//! the arrays currently in the `inputs` tree are extra inputs of the trace,
//! and after the call the arrays in the `outputs` tree are set to the
//! values the function left there. While the function is traced, the
//! `inputs` arrays hold the trace's placeholders (and get their values back
//! afterwards), so reads of the state inside the function are traced, not
//! captured as constants. Trees are nested lists, tuples and dicts; other
//! leaves are ignored. The arrays are updated in place (the Python objects
//! stay the same); the state is shared by every thread that calls the
//! function, so calls that update it should not overlap.

use crate::array::PyArr;
use crate::tree::array_objects;
use ferrox::Array;
use pyo3::exceptions::PyValueError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;
use std::sync::{Arc, Mutex};

/// The two trees, shared by the compiled object and its trace body.
#[derive(Default)]
pub struct Implicit {
    inputs: Option<Py<PyAny>>,
    outputs: Option<Py<PyAny>>,
}

pub type ImplicitCell = Arc<Mutex<Implicit>>;

fn lock(m: &Mutex<Implicit>) -> std::sync::MutexGuard<'_, Implicit> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The state trees (`None` counts as absent).
pub fn new_cell(
    py: Python<'_>,
    inputs: Option<Py<PyAny>>,
    outputs: Option<Py<PyAny>>,
) -> ImplicitCell {
    let given = |t: Option<Py<PyAny>>| t.filter(|t| !t.is_none(py));
    Arc::new(Mutex::new(Implicit {
        inputs: given(inputs),
        outputs: given(outputs),
    }))
}

fn tree_arrays<'py>(py: Python<'py>, tree: Option<Py<PyAny>>) -> PyResult<Vec<Bound<'py, PyArr>>> {
    tree.map_or(Ok(vec![]), |t| array_objects(t.bind(py)))
}

/// The arrays now in the `inputs` tree (extra inputs of a call).
pub fn input_values(py: Python<'_>, cell: &ImplicitCell) -> PyResult<Vec<Array>> {
    let inputs = lock(cell).inputs.as_ref().map(|t| t.clone_ref(py));
    Ok(tree_arrays(py, inputs)?
        .iter()
        .map(|a| a.get().arr())
        .collect())
}

/// Sets the arrays of the `outputs` tree to `values` (after a call).
pub fn set_outputs(py: Python<'_>, cell: &ImplicitCell, values: Vec<Array>) -> PyResult<()> {
    let outputs = lock(cell).outputs.as_ref().map(|t| t.clone_ref(py));
    let targets = tree_arrays(py, outputs)?;
    if targets.len() != values.len() {
        return Err(PyValueError::new_err(format!(
            "compile: the outputs tree holds {} arrays but the trace produced {}; \
             its structure changed between calls",
            targets.len(),
            values.len()
        )));
    }
    for (a, v) in targets.iter().zip(values) {
        a.get().set(v);
    }
    Ok(())
}

/// Runs `call` (the traced function) with the `inputs` arrays holding
/// `placeholders`; returns its result and the arrays the function left in
/// the `outputs` tree. The inputs get their values back in every case.
pub fn trace_with<T>(
    py: Python<'_>,
    cell: &ImplicitCell,
    placeholders: Vec<Array>,
    call: impl FnOnce() -> PyResult<T>,
) -> PyResult<(T, Vec<Array>)> {
    let (inputs, outputs) = {
        let g = lock(cell);
        let copy = |t: &Option<Py<PyAny>>| t.as_ref().map(|t| t.clone_ref(py));
        (copy(&g.inputs), copy(&g.outputs))
    };
    let targets = tree_arrays(py, inputs)?;
    if targets.len() != placeholders.len() {
        return Err(PyValueError::new_err(
            "compile: the inputs tree changed while the function was being traced",
        ));
    }
    let saved: Vec<Array> = targets.iter().map(|a| a.get().arr()).collect();
    for (a, p) in targets.iter().zip(placeholders) {
        a.get().set(p);
    }
    let result = call().and_then(|r| {
        let out = tree_arrays(py, outputs)?;
        Ok((r, out.iter().map(|a| a.get().arr()).collect()))
    });
    for (a, s) in targets.iter().zip(saved) {
        a.get().set(s);
    }
    result
}

/// GC support: visits the trees.
pub fn traverse(cell: &ImplicitCell, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    if let Ok(g) = cell.try_lock() {
        for t in g.inputs.iter().chain(&g.outputs) {
            visit.call(t)?;
        }
    }
    Ok(())
}

/// GC support: drops the trees.
pub fn clear(cell: &ImplicitCell) {
    let taken = std::mem::take(&mut *lock(cell));
    drop(taken);
}
