//! `compile` over Python functions of trees, as in MLX: one core
//! `CompiledFn` per compiled Python function, so every thread shares its
//! traces, and freeing it erases them.

use crate::errors::{from_py, OrPy};
use crate::gil;
use crate::implicit::{self, ImplicitCell};
use crate::transforms::{check_callable, lock};
use crate::tree::{
    any_other, count_leaves, decode, encode, flatten, is_plain_constant, unflatten, Tree,
};
use ferrox::compile::Constant;
use ferrox::{Array, CompiledFn};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::PyTraverseError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type OutTrees = Arc<Mutex<HashMap<Vec<Constant>, Arc<Tree>>>>;

/// The key of a recorded output structure: the argument encoding plus each
/// array's dtype and shape (rank only when shapeless), the parts of the
/// call signature Python code may branch on.
fn out_key(consts: &[Constant], xs: &[Array], shapeless: bool) -> Vec<Constant> {
    let mut k = consts.to_vec();
    for x in xs {
        k.push(Constant::Str(x.dtype().name().to_string()));
        k.push(Constant::Int(x.ndim() as i64));
        if !shapeless {
            k.extend(x.shape().iter().map(|&d| Constant::Int(d as i64)));
        }
    }
    k
}

/// A compiled Python function (`compile(fun)`): one process-wide cache
/// entry per call signature, traced once however many threads race, and
/// erased when this object is freed. Its identity is the Rust
/// `CompiledFn`'s, never reused, never the callable's address.
#[pyclass(name = "CompiledFunction", module = "ferrox.core", frozen)]
struct Compiled {
    cf: CompiledFn,
    fun: Arc<Mutex<Option<Py<PyAny>>>>,
    outs: OutTrees,
    implicit: ImplicitCell,
    shapeless: bool,
}

impl Compiled {
    /// The wrapped function's attribute `name` (``__name__``, ``__doc__``,
    /// ...), as functools.wraps would copy it.
    fn wrapped_attr<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match &*crate::transforms::lock(&self.fun) {
            Some(f) => f.bind(py).getattr(name),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "the compiled function was released; it has no {name}"
            ))),
        }
    }
}

#[pymethods]
impl Compiled {
    #[getter(__name__)]
    fn name<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.wrapped_attr(py, "__name__")
    }
    #[getter(__qualname__)]
    fn qualname<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.wrapped_attr(py, "__qualname__")
    }
    #[getter(__module__)]
    fn module<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.wrapped_attr(py, "__module__")
    }
    #[getter(__wrapped__)]
    fn wrapped<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &*crate::transforms::lock(&self.fun) {
            Some(f) => Ok(f.bind(py).clone()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(
                "the compiled function was released",
            )),
        }
    }
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let mut leaves = vec![];
        let mut consts = vec![];
        encode(args.as_any(), &mut leaves, &mut consts)?;
        match kwargs {
            Some(k) => encode(k.as_any(), &mut leaves, &mut consts)?,
            None => consts.push(Constant::None),
        }
        leaves.extend(implicit::input_values(py, &self.implicit)?);
        let cf = &self.cf;
        // A cached signature replays with the GIL held: that only builds the
        // lazy outputs (microseconds) and waits on nothing. A trace, or a wait
        // on another thread's trace (which may need the GIL to run its Python
        // function), runs with the GIL released.
        let outs = match cf.call_if_cached(&leaves, &consts) {
            Some(replayed) => replayed,
            None => gil::detach(py, || cf.call_with_constants(&leaves, &consts)),
        }
        .py()?;
        let tree = lock(&self.outs)
            .get(&out_key(&consts, &leaves, self.shapeless))
            .cloned()
            .ok_or_else(|| PyValueError::new_err("compile: no output structure was recorded"))?;
        let mut outs = outs.into_iter();
        let user: Vec<Array> = outs.by_ref().take(count_leaves(&tree)).collect();
        implicit::set_outputs(py, &self.implicit, outs.collect())?;
        unflatten(py, &tree, &mut user.into_iter())
    }
    /// How many times the function was traced.
    #[getter]
    fn traces(&self) -> usize {
        self.cf.traces()
    }
    /// The function's never-reused id.
    #[getter]
    fn id(&self) -> String {
        format!("{:?}", self.cf.id())
    }
    #[getter]
    fn __wrapped__(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        lock(&self.fun).as_ref().map(|f| f.clone_ref(py))
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(g) = self.fun.try_lock() {
            if let Some(f) = g.as_ref() {
                visit.call(f)?;
            }
        }
        implicit::traverse(&self.implicit, &visit)
    }
    fn __clear__(&self) {
        let f = lock(&self.fun).take();
        drop(f);
        implicit::clear(&self.implicit);
    }
}

fn body(
    py: Python<'_>,
    fun: &Mutex<Option<Py<PyAny>>>,
    outs: &OutTrees,
    implicit: &ImplicitCell,
    xs: &[Array],
    consts: &[Constant],
    shapeless: bool,
) -> PyResult<Vec<Array>> {
    let f = lock(fun)
        .as_ref()
        .map(|f| f.clone_ref(py))
        .ok_or_else(|| PyValueError::new_err("compile: the function was cleared"))?;
    let mut it = consts.iter();
    let mut arrays = xs.iter().cloned();
    let args = decode(py, &mut it, &mut arrays)?;
    let kwargs = match it.as_slice().first() {
        Some(Constant::None) | None => None,
        Some(_) => Some(decode(py, &mut it, &mut arrays)?.cast_into::<PyDict>()?),
    };
    // The arrays left after the arguments' are the implicit inputs.
    let state: Vec<Array> = arrays.collect();
    let (out, state_out) = implicit::trace_with(py, implicit, state, || {
        f.bind(py)
            .call(args.cast_into::<PyTuple>()?, kwargs.as_ref())
    })?;
    let mut leaves = vec![];
    // Values that are not arrays (None, numbers, strings) stay in the
    // recorded structure as the trace returned them, as in MLX: every replay
    // of this trace returns them again. Other objects are refused: frozen at
    // trace time they would go stale, and the recorded structure (not seen
    // by the garbage collector) could keep a cycle through this function
    // alive.
    let tree = flatten(&out, &mut leaves)?;
    if any_other(&tree, &|o| !is_plain_constant(o.bind(py))) {
        return Err(PyTypeError::new_err(
            "compile: a compiled function may return arrays, None, bools, ints, floats, \
             strings and lists/tuples/dicts of them",
        ));
    }
    lock(outs).insert(out_key(consts, xs, shapeless), Arc::new(tree));
    leaves.extend(state_out);
    Ok(leaves)
}

/// `compile(fun, inputs=None, outputs=None, shapeless=False)`; usable as a
/// decorator. Python scalar arguments are constants of the trace, typed
/// (`1` and `1.0` trace separately). `inputs`/`outputs` are implicit
/// state trees (see `implicit.rs`).
///
/// Example:
///     >>> f = ferrox.core.compile(lambda x: ferrox.core.exp(2 * x + 1)); f(ferrox.core.zeros((2,))).shape
///     (2,)
#[pyfunction]
#[pyo3(signature = (fun, inputs = None, outputs = None, shapeless = false))]
fn compile(
    py: Python<'_>,
    fun: Py<PyAny>,
    inputs: Option<Py<PyAny>>,
    outputs: Option<Py<PyAny>>,
    shapeless: bool,
) -> PyResult<Compiled> {
    check_callable(py, &fun)?;
    let cell = Arc::new(Mutex::new(Some(fun)));
    let outs: OutTrees = Arc::new(Mutex::new(HashMap::new()));
    let implicit = implicit::new_cell(py, inputs, outputs);
    let (c2, o2, i2) = (cell.clone(), outs.clone(), implicit.clone());
    let cf = ferrox::compile_with(
        move |xs: &[Array], consts: &[Constant]| {
            gil::attach(|py| {
                body(py, &c2, &o2, &i2, xs, consts, shapeless).map_err(|e| from_py(e, py))
            })
        },
        shapeless,
    );
    Ok(Compiled {
        cf,
        fun: cell,
        outs,
        implicit,
        shapeless,
    })
}

/// disable_compile() -> None
///
/// Makes compiled functions run their Python code directly (process-wide).
///
/// Example:
///     >>> ferrox.core.disable_compile(); ferrox.core.enable_compile()
#[pyfunction]
fn disable_compile() {
    ferrox::disable_compile()
}

/// enable_compile() -> None
///
/// Undoes :func:`disable_compile`.
///
/// Example:
///     >>> ferrox.core.enable_compile()
#[pyfunction]
fn enable_compile() {
    ferrox::enable_compile()
}

/// Entries in the process-wide compile cache (for tests and diagnostics).
///
/// Example:
///     >>> ferrox.core.compile_cache_len() >= 0
///     True
#[pyfunction]
fn compile_cache_len() -> usize {
    ferrox::compile::cache_len()
}

/// clear_compile_cache() -> None
///
/// Drops every cached trace (the next call of each compiled function traces again).
///
/// Example:
///     >>> ferrox.core.clear_compile_cache()
#[pyfunction]
fn clear_compile_cache() {
    ferrox::compile::clear_compile_cache()
}

/// The `__doc__` of `CompiledFunction`: the class's own docstring on the
/// class, the wrapped function's on an instance (as functools.wraps copies
/// it; MLX's test_compiled_preserves_attributes). A descriptor set after
/// the class is made, because a getter named `__doc__` is overwritten by
/// the class docstring when the type is created.
#[pyclass(frozen)]
struct WrappedDoc {
    class_doc: Py<PyAny>,
}

#[pymethods]
impl WrappedDoc {
    fn __get__<'py>(
        &self,
        py: Python<'py>,
        obj: Option<&Bound<'py, PyAny>>,
        _cls: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match obj.map(|o| o.cast::<Compiled>()) {
            Some(Ok(c)) => c.get().wrapped_attr(py, "__doc__"),
            _ => Ok(self.class_doc.bind(py).clone()),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Compiled>()?;
    let class = m.py().get_type::<Compiled>();
    let class_doc = class.getattr("__doc__")?.unbind();
    class.setattr("__doc__", WrappedDoc { class_doc })?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(disable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(enable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(compile_cache_len, m)?)?;
    m.add_function(wrap_pyfunction!(clear_compile_cache, m)?)?;
    Ok(())
}
