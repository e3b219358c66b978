//! `export_function`, `import_function` and `exporter` (mlx.core's
//! signatures) over `ferrox::io::function`: a Python function traced to a
//! file, and the file run again without it.

use crate::array::PyArr;
use crate::errors::{from_py, OrPy};
use crate::gil;
use crate::transforms::{check_callable, lock};
use ferrox::io::function::{self as fxfn, FunctionExporter as RsExporter, Kwargs};
use ferrox::Array;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use pyo3::PyTraverseError;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

type FunCell = Arc<Mutex<Option<Py<PyAny>>>>;

/// The arrays of a list or tuple whose items are all arrays.
fn array_seq(obj: &Bound<'_, PyAny>) -> Option<Vec<Array>> {
    if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
        return None;
    }
    obj.try_iter()
        .ok()?
        .map(|o| o.ok()?.cast::<PyArr>().ok().map(|a| a.get().arr()))
        .collect()
}

/// The arrays of a dict with string keys and array values, by key.
fn array_dict(obj: &Bound<'_, PyAny>) -> Option<Kwargs> {
    let d = obj.cast::<PyDict>().ok()?;
    d.iter()
        .map(|(k, v)| {
            let k: String = k.cast::<PyString>().ok()?.to_str().ok()?.to_string();
            Some((k, v.cast::<PyArr>().ok()?.get().arr()))
        })
        .collect()
}

/// MLX's input rules: positional and keyword arrays, or one list/tuple of
/// arrays and/or one dict of arrays.
fn inputs(
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
    op: &str,
) -> PyResult<(Vec<Array>, Kwargs)> {
    let bad = || {
        PyValueError::new_err(format!(
            "{op}: inputs can either be a variable number of positional and keyword arrays \
             or a single tuple and/or dictionary of arrays"
        ))
    };
    let kw = || match kwargs {
        Some(k) => array_dict(k.as_any()).ok_or_else(bad),
        None => Ok(Kwargs::new()),
    };
    let no_kwargs = kwargs.is_none_or(|k| k.is_empty());
    let first = args.get_item(0).ok();
    match (args.len(), first) {
        (0, _) => Ok((vec![], kw()?)),
        (_, Some(a)) if a.is_instance_of::<PyArr>() => {
            Ok((array_seq(args.as_any()).ok_or_else(bad)?, kw()?))
        }
        (1, Some(a)) if no_kwargs => match array_seq(&a) {
            Some(xs) => Ok((xs, Kwargs::new())),
            None => Ok((vec![], array_dict(&a).ok_or_else(bad)?)),
        },
        (2, Some(a)) if no_kwargs => {
            let xs = array_seq(&a).ok_or_else(bad)?;
            let kw = array_dict(&args.get_item(1)?).ok_or_else(bad)?;
            Ok((xs, kw))
        }
        _ => Err(bad()),
    }
}

/// A path argument: `str` or `os.PathLike`.
fn path_of(op: &str, file: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if file.is_instance_of::<PyString>() || file.hasattr("__fspath__")? {
        let p = file.py().import("os")?.call_method1("fspath", (file,))?;
        let s: String = p
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{op}: file paths must be str")))?;
        return Ok(Some(PathBuf::from(s)));
    }
    Ok(None)
}

/// The Python function as the core's exported function: called with the
/// interpreter lock, its outputs an array or a list/tuple of arrays.
fn body(fun: FunCell) -> Arc<fxfn::ExportFn> {
    Arc::new(move |xs: &[Array], kw: &Kwargs| {
        gil::attach(|py| {
            let run = || -> PyResult<Vec<Array>> {
                let f = lock(&fun)
                    .as_ref()
                    .map(|f| f.clone_ref(py))
                    .ok_or_else(|| {
                        PyValueError::new_err("export_function: the function was released")
                    })?;
                let args = PyTuple::new(py, xs.iter().map(|x| PyArr::new(x.clone())))?;
                let kwargs = PyDict::new(py);
                for (k, v) in kw {
                    kwargs.set_item(k, PyArr::new(v.clone()))?;
                }
                let out = f.bind(py).call(args, Some(&kwargs))?;
                if let Ok(a) = out.cast::<PyArr>() {
                    return Ok(vec![a.get().arr()]);
                }
                array_seq(&out).ok_or_else(|| {
                    PyValueError::new_err(
                        "export_function: outputs can be either a single array, a tuple, or a list of arrays",
                    )
                })
            };
            run().map_err(|e| from_py(e, py))
        })
    })
}

/// The name MLX gives a primitive (`subtract` -> `Subtract`, `astype` ->
/// `AsType`) and its arguments, for the callback form of `export_function`.
fn mlx_name_and_arguments<'py>(
    py: Python<'py>,
    p: &fxfn::PrimitiveDescription,
) -> PyResult<(String, Bound<'py, PyList>)> {
    let core = py.import("ferrox.core")?;
    let args = PyList::empty(py);
    // MLX's Log primitive carries its base (0: two, 1: ten, 2: e).
    let log_base = match p.name.as_str() {
        "log2" => Some(0),
        "log10" => Some(1),
        "log" => Some(2),
        _ => None,
    };
    if let Some(b) = log_base {
        args.append(b)?;
        return Ok(("Log".to_string(), args));
    }
    let name = match p.name.as_str() {
        "astype" => "AsType".to_string(),
        n => n
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().chain(c).collect::<String>())
                    .unwrap_or_default()
            })
            .collect(),
    };
    let json = py.import("json")?;
    if let serde_json::Value::Object(fields) = &p.params {
        for (k, v) in fields {
            match (k.as_str(), v.as_str()) {
                ("dtype", Some(d)) => args.append(core.getattr(d)?)?,
                _ => args.append(json.call_method1("loads", (v.to_string(),))?)?,
            }
        }
    }
    Ok((name, args))
}

/// Calls `callback` with MLX's sequence of dicts for one trace.
fn to_callback(callback: &Bound<'_, PyAny>, d: &fxfn::TraceDescription) -> PyResult<()> {
    let py = callback.py();
    let core = py.import("ferrox.core")?;
    let specs = |v: &[(String, Vec<usize>, ferrox::DType)]| -> PyResult<Bound<'_, PyList>> {
        let l = PyList::empty(py);
        for (n, shape, dt) in v {
            l.append((n, PyTuple::new(py, shape)?, core.getattr(dt.name())?))?;
        }
        Ok(l)
    };
    let send = |kind: &str, key: &str, value: Bound<'_, PyAny>| -> PyResult<()> {
        let dict = PyDict::new(py);
        dict.set_item("type", kind)?;
        dict.set_item(key, value)?;
        callback.call1((dict,))?;
        Ok(())
    };
    send("inputs", "inputs", specs(&d.inputs)?.into_any())?;
    send(
        "keyword_inputs",
        "keywords",
        d.keywords.clone().into_pyobject(py)?.into_any(),
    )?;
    let consts = PyList::empty(py);
    for (n, a) in &d.constants {
        consts.append((n, PyArr::new(a.clone())))?;
    }
    send("constants", "constants", consts.into_any())?;
    for p in &d.primitives {
        let (name, arguments) = mlx_name_and_arguments(py, p)?;
        let dict = PyDict::new(py);
        dict.set_item("type", "primitive")?;
        dict.set_item("name", name)?;
        dict.set_item("arguments", arguments)?;
        dict.set_item("inputs", &p.inputs)?;
        dict.set_item("outputs", specs(&p.outputs)?)?;
        callback.call1((dict,))?;
    }
    send("outputs", "outputs", specs(&d.outputs)?.into_any())
}

/// export_function(file, fun, *args, shapeless=False, metadata=None, **kwargs) -> None
///
/// Traces ``fun`` on the example inputs (positional and keyword arrays, or
/// one tuple of arrays and/or one dict of arrays) and writes the trace, its
/// constants and ``metadata`` (a string) to ``file``. ``file`` may instead
/// be a callable: it is then called with one dict per part of the trace
/// (``type`` "inputs", "keyword_inputs", "constants", "primitive" — with
/// ``name`` and ``arguments`` — and "outputs"), as in MLX. With ``shapeless``
/// the imported function accepts inputs of other shapes (same ranks).
///
/// Example:
///     >>> import tempfile, os; p = os.path.join(tempfile.mkdtemp(), "f.mlxfn")
///     >>> ferrox.core.export_function(p, lambda x: ferrox.core.exp(x), ferrox.core.zeros((2,)))
#[pyfunction]
#[pyo3(signature = (file, fun, *args, shapeless = false, metadata = None, **kwargs))]
fn export_function(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    fun: Py<PyAny>,
    args: &Bound<'_, PyTuple>,
    shapeless: bool,
    metadata: Option<String>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    check_callable(py, &fun)?;
    let (xs, kw) = inputs(args, kwargs, "export_function")?;
    let Some(path) = path_of("export_function", file)? else {
        if file.is_callable() {
            if metadata.as_deref().is_some_and(|m| !m.is_empty()) {
                return Err(PyValueError::new_err(
                    "export_function: the metadata argument is only supported when exporting to a file, \
                     not when using a callback",
                ));
            }
            let cell: FunCell = Arc::new(Mutex::new(Some(fun)));
            let f = body(cell);
            let d = gil::detach(py, || {
                fxfn::describe_function(move |xs, kw| f(xs, kw), &xs, &kw, shapeless)
            })
            .py()?;
            return to_callback(file, &d);
        }
        return Err(PyTypeError::new_err(
            "export_function: file must be a path (str or os.PathLike)",
        ));
    };
    let cell: FunCell = Arc::new(Mutex::new(Some(fun)));
    let mut ex = RsExporter::new(
        &path,
        body(cell),
        shapeless,
        metadata.as_deref().unwrap_or(""),
    );
    gil::detach(py, || ex.call(&xs, &kw)).py()
}

/// A function read from a file by :func:`import_function`; call it with
/// the inputs of one exported trace. Returns a tuple of arrays.
#[pyclass(name = "ImportedFunction", module = "ferrox.core", frozen)]
struct Imported {
    f: fxfn::ImportedFunction,
}

#[pymethods]
impl Imported {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let py = args.py();
        let (xs, kw) = inputs(args, kwargs, "import_function")?;
        let outs = self.f.call(&xs, &kw).py()?;
        PyTuple::new(py, outs.into_iter().map(PyArr::new))
    }
    /// The metadata string saved with the function.
    #[getter]
    fn metadata(&self) -> String {
        self.f.metadata().to_string()
    }
    /// How many traces the file holds.
    #[getter]
    fn traces(&self) -> usize {
        self.f.traces()
    }
}

/// import_function(file, return_metadata=False) -> Callable | tuple[Callable, str]
///
/// Reads a function written by :func:`export_function` or
/// :func:`exporter`. The result runs without the original code, from any
/// thread, and always returns a tuple of arrays; call it with positional
/// and keyword arrays or one tuple and/or dict of arrays. With
/// ``return_metadata`` also returns the metadata string.
///
/// Example:
///     >>> import tempfile, os; p = os.path.join(tempfile.mkdtemp(), "f.mlxfn")
///     >>> ferrox.core.export_function(p, lambda x: 2 * x, ferrox.core.ones((2,)))
///     >>> ferrox.core.import_function(p)(ferrox.core.ones((2,)))[0].tolist()
///     [2.0, 2.0]
#[pyfunction]
#[pyo3(signature = (file, return_metadata = false))]
fn import_function(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    return_metadata: bool,
) -> PyResult<Py<PyAny>> {
    let path = path_of("import_function", file)?.ok_or_else(|| {
        PyTypeError::new_err("import_function: file must be a path (str or os.PathLike)")
    })?;
    let f = gil::detach(py, || fxfn::import_function(&path)).py()?;
    let metadata = f.metadata().to_string();
    let imported = Py::new(py, Imported { f })?.into_any();
    if return_metadata {
        Ok((imported, metadata).into_pyobject(py)?.into_any().unbind())
    } else {
        Ok(imported)
    }
}

/// Made by :func:`exporter`: each call adds one trace of the function to
/// the file; a context manager (``close`` on exit).
#[pyclass(name = "FunctionExporter", module = "ferrox.core", frozen)]
struct Exporter {
    ex: Arc<Mutex<RsExporter>>,
    fun: FunCell,
}

#[pymethods]
impl Exporter {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let (xs, kw) = inputs(args, kwargs, "export_function")?;
        let ex = self.ex.clone();
        gil::detach(args.py(), move || lock(&ex).call(&xs, &kw)).py()
    }
    /// Stops adding traces.
    fn close(&self) {
        lock(&self.ex).close();
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (exc_type = None, exc_value = None, traceback = None))]
    fn __exit__(
        &self,
        exc_type: Option<Py<PyAny>>,
        exc_value: Option<Py<PyAny>>,
        traceback: Option<Py<PyAny>>,
    ) {
        let _ = (exc_type, exc_value, traceback);
        self.close();
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(g) = self.fun.try_lock() {
            if let Some(f) = g.as_ref() {
                visit.call(f)?;
            }
        }
        Ok(())
    }
    fn __clear__(&self) {
        let f = lock(&self.fun).take();
        drop(f);
    }
}

/// exporter(file, fun, *, shapeless=False, metadata=None) -> FunctionExporter
///
/// An object whose calls each export one more trace of ``fun`` (other
/// shapes, argument counts or keywords) to ``file``; use it as a context
/// manager. The file is complete after every call.
///
/// Example:
///     >>> import tempfile, os; p = os.path.join(tempfile.mkdtemp(), "sum.mlxfn")
///     >>> with ferrox.core.exporter(p, lambda *xs: sum(xs)) as ex:
///     ...     ex(ferrox.core.array(1)); ex(ferrox.core.array(1), ferrox.core.array(2))
#[pyfunction]
#[pyo3(signature = (file, fun, *, shapeless = false, metadata = None))]
fn exporter(
    py: Python<'_>,
    file: &Bound<'_, PyAny>,
    fun: Py<PyAny>,
    shapeless: bool,
    metadata: Option<String>,
) -> PyResult<Exporter> {
    check_callable(py, &fun)?;
    let path = path_of("exporter", file)?.ok_or_else(|| {
        PyTypeError::new_err("exporter: file must be a path (str or os.PathLike)")
    })?;
    let cell: FunCell = Arc::new(Mutex::new(Some(fun)));
    let ex = RsExporter::new(
        &path,
        body(cell.clone()),
        shapeless,
        metadata.as_deref().unwrap_or(""),
    );
    Ok(Exporter {
        ex: Arc::new(Mutex::new(ex)),
        fun: cell,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Imported>()?;
    m.add_class::<Exporter>()?;
    m.add_function(wrap_pyfunction!(export_function, m)?)?;
    m.add_function(wrap_pyfunction!(import_function, m)?)?;
    m.add_function(wrap_pyfunction!(exporter, m)?)?;
    Ok(())
}
