//! grad, value_and_grad, vjp, jvp, vmap and compile over Python functions
//! of trees (nested lists, tuples and dicts of arrays), as in MLX.

use crate::array::PyArr;
use crate::errors::{to_py, OrPy};
use crate::implicit::{self, ImplicitCell};
use ferrox::compile::Constant;
use ferrox::{Array, CompiledFn, Error, ErrorKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::PyTraverseError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

// ------------------------------------------------------------------ trees

/// The structure of a tree with its arrays taken out.
pub enum Tree {
    Leaf,
    List(Vec<Tree>),
    Tuple(Vec<Tree>),
    Dict(Vec<(Py<PyAny>, Tree)>),
    /// A value that is not an array, kept as it is.
    Other(Py<PyAny>),
}

/// Takes the arrays out of `obj` (depth first, dicts in insertion order).
pub fn flatten(obj: &Bound<'_, PyAny>, leaves: &mut Vec<Array>) -> PyResult<Tree> {
    if let Ok(a) = obj.cast::<PyArr>() {
        leaves.push(a.get().arr());
        return Ok(Tree::Leaf);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(Tree::List(
            l.iter()
                .map(|o| flatten(&o, leaves))
                .collect::<PyResult<_>>()?,
        ));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return Ok(Tree::Tuple(
            t.iter()
                .map(|o| flatten(&o, leaves))
                .collect::<PyResult<_>>()?,
        ));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Tree::Dict(
            d.iter()
                .map(|(k, v)| Ok((k.unbind(), flatten(&v, leaves)?)))
                .collect::<PyResult<_>>()?,
        ));
    }
    Ok(Tree::Other(obj.clone().unbind()))
}

/// Puts arrays from `leaves` back into the structure.
pub fn unflatten<'py>(
    py: Python<'py>,
    tree: &Tree,
    leaves: &mut dyn Iterator<Item = Array>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match tree {
        Tree::Leaf => {
            let a = leaves
                .next()
                .ok_or_else(|| PyValueError::new_err("tree has more leaves than arrays"))?;
            Bound::new(py, PyArr::new(a))?.into_any()
        }
        Tree::List(v) => {
            let items = v
                .iter()
                .map(|t| unflatten(py, t, leaves))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Tree::Tuple(v) => {
            let items = v
                .iter()
                .map(|t| unflatten(py, t, leaves))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Tree::Dict(v) => {
            let d = PyDict::new(py);
            for (k, t) in v {
                d.set_item(k.bind(py), unflatten(py, t, leaves)?)?;
            }
            d.into_any()
        }
        Tree::Other(o) => o.bind(py).clone(),
    })
}

fn count_leaves(t: &Tree) -> usize {
    match t {
        Tree::Leaf => 1,
        Tree::List(v) | Tree::Tuple(v) => v.iter().map(count_leaves).sum(),
        Tree::Dict(v) => v.iter().map(|(_, t)| count_leaves(t)).sum(),
        Tree::Other(_) => 0,
    }
}

/// Every array in a tree (for `eval`).
pub fn tree_arrays(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Array>> {
    let mut leaves = vec![];
    flatten(obj, &mut leaves)?;
    Ok(leaves)
}

// ------------------------------------------------- Python errors in closures

thread_local! {
    // The Python exception raised by a Python function that Rust code
    // called on this thread, kept until the Rust call returns its error.
    static PY_ERR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

fn stash(e: PyErr, py: Python<'_>) -> Error {
    let msg = e.value(py).to_string();
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    PY_ERR.with(|c| *c.borrow_mut() = Some(e));
    Error::new(ErrorKind::Runtime, "python", format!("{kind}: {msg}"))
}

/// Turns a Rust error back into the Python exception that caused it
/// (when the Python function raised on this thread), else converts it.
fn unstash(e: Error) -> PyErr {
    PY_ERR
        .with(|c| c.borrow_mut().take())
        .unwrap_or_else(|| to_py(e))
}

/// Runs `f`, which may call Python functions, with an empty stash: a
/// Python exception one of them raised comes back as itself.
fn stashed<T>(f: impl FnOnce() -> ferrox::Result<T>) -> PyResult<T> {
    PY_ERR.with(|c| c.borrow_mut().take());
    f().map_err(unstash)
}

// --------------------------------------------------- calling Python from Rust

/// A Python function and the fixed parts of one call of it.
struct Call {
    fun: Py<PyAny>,
    /// One tree per positional argument.
    args: Vec<Tree>,
    kwargs: Option<Py<PyDict>>,
    /// Where the output's structure is recorded.
    out: Mutex<Option<Arc<Tree>>>,
}

impl Call {
    /// A call of `fun` on arguments of structure `args` (and `kwargs`).
    fn new(
        py: Python<'_>,
        fun: &Py<PyAny>,
        args: Vec<Tree>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> Arc<Call> {
        Arc::new(Call {
            fun: fun.clone_ref(py),
            args,
            kwargs: kwargs.map(|k| k.clone().unbind()),
            out: Mutex::new(None),
        })
    }
    /// Calls the function with the arrays `xs` in place of the arguments'
    /// arrays; returns the output's arrays.
    fn run(&self, xs: &[Array]) -> ferrox::Result<Vec<Array>> {
        Python::attach(|py| self.run_py(py, xs).map_err(|e| stash(e, py)))
    }
    fn run_py(&self, py: Python<'_>, xs: &[Array]) -> PyResult<Vec<Array>> {
        let mut it = xs.iter().cloned();
        let args = self
            .args
            .iter()
            .map(|t| unflatten(py, t, &mut it))
            .collect::<PyResult<Vec<_>>>()?;
        let args = PyTuple::new(py, args)?;
        let out = self
            .fun
            .bind(py)
            .call(args, self.kwargs.as_ref().map(|k| k.bind(py)))?;
        let mut leaves = vec![];
        let tree = flatten(&out, &mut leaves)?;
        if has_other(&tree) {
            return Err(PyTypeError::new_err(
                "transformed functions must return arrays or trees (lists, tuples, dicts) of arrays",
            ));
        }
        *lock(&self.out) = Some(Arc::new(tree));
        Ok(leaves)
    }
    /// The positional arguments rebuilt around the arrays `xs`.
    fn args_tuple<'py>(&self, py: Python<'py>, xs: &[Array]) -> PyResult<Bound<'py, PyTuple>> {
        let mut it = xs.iter().cloned();
        let args = self
            .args
            .iter()
            .map(|t| unflatten(py, t, &mut it))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, args)
    }
    fn out_tree(&self) -> PyResult<Arc<Tree>> {
        lock(&self.out)
            .clone()
            .ok_or_else(|| PyValueError::new_err("the function did not return"))
    }
}

fn has_other(t: &Tree) -> bool {
    match t {
        Tree::Leaf => false,
        Tree::List(v) | Tree::Tuple(v) => v.iter().any(has_other),
        Tree::Dict(v) => v.iter().any(|(_, t)| has_other(t)),
        Tree::Other(_) => true,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Arrays, one tree per argument, each argument's range of arrays.
type FlatArgs = (Vec<Array>, Vec<Tree>, Vec<std::ops::Range<usize>>);

/// Flattens the positional arguments, one tree per argument, and the index
/// range of each argument's arrays.
fn flatten_args(args: &Bound<'_, PyTuple>) -> PyResult<FlatArgs> {
    let mut leaves = vec![];
    let mut trees = vec![];
    let mut ranges = vec![];
    for a in args.iter() {
        let start = leaves.len();
        trees.push(flatten(&a, &mut leaves)?);
        ranges.push(start..leaves.len());
    }
    Ok((leaves, trees, ranges))
}

// ------------------------------------------------------ grad, value_and_grad

#[derive(FromPyObject)]
enum Argnums {
    One(usize),
    Many(Vec<usize>),
}

/// The function `grad` or `value_and_grad` returns.
#[pyclass(name = "GradFunction", module = "ferrox.core", frozen)]
struct GradFn {
    fun: Py<PyAny>,
    argnums: Vec<usize>,
    single: bool,
    with_value: bool,
}

#[pymethods]
impl GradFn {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let (leaves, trees, ranges) = flatten_args(args)?;
        for &i in &self.argnums {
            if i >= trees.len() {
                return Err(PyValueError::new_err(format!(
                    "grad: argnum {i} is out of range for {} arguments",
                    trees.len()
                )));
            }
        }
        let diff: Vec<usize> = self
            .argnums
            .iter()
            .flat_map(|&i| ranges[i].clone())
            .collect();
        if diff.is_empty() {
            return Err(PyValueError::new_err(
                "grad: the arguments to differentiate contain no arrays",
            ));
        }
        let call = Call::new(py, &self.fun, trees, kwargs);
        let c = call.clone();
        let vg = ferrox::value_and_grad(move |xs: &[Array]| c.run(xs), &diff);
        let (values, grads) = stashed(|| vg(&leaves))?;
        // Gradients, shaped like the differentiated arguments.
        let mut g = grads.into_iter();
        let per_arg = self
            .argnums
            .iter()
            .map(|&i| unflatten(py, &call.args[i], &mut g))
            .collect::<PyResult<Vec<_>>>()?;
        let grads = if self.single {
            per_arg.into_iter().next().ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("grad: no argument to differentiate")
            })?
        } else {
            PyTuple::new(py, per_arg)?.into_any()
        };
        if !self.with_value {
            return Ok(grads);
        }
        let value = unflatten(py, &*call.out_tree()?, &mut values.into_iter())?;
        Ok(PyTuple::new(py, [value, grads])?.into_any())
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)
    }
}

fn argnums_of(argnums: Option<Argnums>) -> (Vec<usize>, bool) {
    match argnums {
        None => (vec![0], true),
        Some(Argnums::One(i)) => (vec![i], true),
        Some(Argnums::Many(v)) => (v, false),
    }
}

/// `grad(fun, argnums=None)`: the gradient of `fun`'s (scalar) output with
/// respect to the arguments at `argnums` (default 0), shaped like them.
#[pyfunction]
#[pyo3(signature = (fun, argnums = None))]
fn grad(py: Python<'_>, fun: Py<PyAny>, argnums: Option<Argnums>) -> PyResult<GradFn> {
    let (argnums, single) = argnums_of(argnums);
    check_callable(py, &fun)?;
    Ok(GradFn {
        fun,
        argnums,
        single,
        with_value: false,
    })
}

/// `value_and_grad(fun, argnums=None)`: `fun`'s output and the gradient of
/// its first (scalar) array. `fun` may return `loss` or `(loss, aux...)`.
#[pyfunction]
#[pyo3(signature = (fun, argnums = None))]
fn value_and_grad(py: Python<'_>, fun: Py<PyAny>, argnums: Option<Argnums>) -> PyResult<GradFn> {
    let (argnums, single) = argnums_of(argnums);
    check_callable(py, &fun)?;
    Ok(GradFn {
        fun,
        argnums,
        single,
        with_value: true,
    })
}

fn check_callable(py: Python<'_>, f: &Py<PyAny>) -> PyResult<()> {
    if f.bind(py).is_callable() {
        Ok(())
    } else {
        Err(PyTypeError::new_err("expected a callable"))
    }
}

// ------------------------------------------------------------- vjp and jvp

fn array_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Array>> {
    let mut leaves = vec![];
    let t = flatten(obj, &mut leaves)?;
    let ok = match &t {
        Tree::List(v) | Tree::Tuple(v) => v.iter().all(|t| matches!(t, Tree::Leaf)),
        _ => false,
    };
    if !ok {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a list of arrays"
        )));
    }
    Ok(leaves)
}

fn simple_call(py: Python<'_>, fun: &Py<PyAny>, n: usize) -> Call {
    Call {
        fun: fun.clone_ref(py),
        args: (0..n).map(|_| Tree::Leaf).collect(),
        kwargs: None,
        out: Mutex::new(None),
    }
}

fn pylist<'py>(py: Python<'py>, v: Vec<Array>) -> PyResult<Bound<'py, PyList>> {
    let items = v
        .into_iter()
        .map(|a| Bound::new(py, PyArr::new(a)))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// `vjp(fun, primals, cotangents) -> (outputs, vjps)`.
#[pyfunction]
fn vjp<'py>(
    py: Python<'py>,
    fun: Py<PyAny>,
    primals: &Bound<'py, PyAny>,
    cotangents: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let p = array_list(primals, "vjp: primals")?;
    let c = array_list(cotangents, "vjp: cotangents")?;
    let call = simple_call(py, &fun, p.len());
    let (outs, vjps) = stashed(|| ferrox::vjp(|xs| call.run(xs), &p, &c))?;
    PyTuple::new(py, [pylist(py, outs)?, pylist(py, vjps)?])
}

/// `jvp(fun, primals, tangents) -> (outputs, jvps)`.
#[pyfunction]
fn jvp<'py>(
    py: Python<'py>,
    fun: Py<PyAny>,
    primals: &Bound<'py, PyAny>,
    tangents: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let p = array_list(primals, "jvp: primals")?;
    let t = array_list(tangents, "jvp: tangents")?;
    let call = simple_call(py, &fun, p.len());
    let (outs, jvps) = stashed(|| ferrox::jvp(|xs| call.run(xs), &p, &t))?;
    PyTuple::new(py, [pylist(py, outs)?, pylist(py, jvps)?])
}

// ------------------------------------------------------------------- vmap

/// One axis per leaf of `tree` from an axis spec: an int or None for the
/// whole subtree, or a list/tuple/dict matching the tree.
fn leaf_axes(tree: &Tree, spec: &Bound<'_, PyAny>, out: &mut Vec<Option<isize>>) -> PyResult<()> {
    if spec.is_none() || spec.is_instance_of::<PyInt>() {
        let ax: Option<isize> = spec.extract()?;
        out.extend(std::iter::repeat_n(ax, count_leaves(tree)));
        return Ok(());
    }
    match tree {
        Tree::List(v) | Tree::Tuple(v) => {
            let specs: Vec<Bound<'_, PyAny>> = spec.try_iter()?.collect::<PyResult<_>>()?;
            if specs.len() != v.len() {
                return Err(PyValueError::new_err(format!(
                    "vmap: axis spec has {} entries for a sequence of {}",
                    specs.len(),
                    v.len()
                )));
            }
            for (t, s) in v.iter().zip(&specs) {
                leaf_axes(t, s, out)?;
            }
            Ok(())
        }
        Tree::Dict(v) => {
            for (k, t) in v {
                leaf_axes(t, &spec.get_item(k.bind(spec.py()))?, out)?;
            }
            Ok(())
        }
        _ => Err(PyValueError::new_err(
            "vmap: axis spec does not match the arguments",
        )),
    }
}

/// The function `vmap` returns.
#[pyclass(name = "VmapFunction", module = "ferrox.core", frozen)]
struct VmapFn {
    fun: Py<PyAny>,
    in_axes: Py<PyAny>,
    out_axes: Py<PyAny>,
}

#[pymethods]
impl VmapFn {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let (leaves, trees, _) = flatten_args(args)?;
        let mut in_axes = vec![];
        let spec = self.in_axes.bind(py);
        if spec.is_none() || spec.is_instance_of::<PyInt>() {
            for t in &trees {
                leaf_axes(t, spec, &mut in_axes)?;
            }
        } else {
            leaf_axes(&Tree::Tuple(trees_ref(&trees)), spec, &mut in_axes)?;
        }
        let call = Call::new(py, &self.fun, trees, kwargs);
        let out_spec = self.out_axes.bind(py);
        let out_axes = if out_spec.is_none() || out_spec.is_instance_of::<PyInt>() {
            // One axis for every output: the core applies a single entry
            // to all of them, so the function runs once, traced.
            vec![out_spec.extract::<Option<isize>>()?]
        } else {
            // A tree of axes must match the output's structure, which one
            // unbatched call (on the first example) finds first.
            let example = leaves
                .iter()
                .zip(&in_axes)
                .map(|(x, ax)| match ax {
                    Some(ax) => {
                        let n = x.ndim() as isize;
                        let ax = if *ax < 0 { ax + n } else { *ax };
                        let mut args = vec![ferrox::SliceArg::FULL; ax.max(0) as usize];
                        args.push(ferrox::SliceArg::Index(0));
                        x.index(&args)
                    }
                    None => Ok(x.clone()),
                })
                .collect::<ferrox::Result<Vec<_>>>()
                .py()?;
            stashed(|| call.run(&example))?;
            let out_tree = call.out_tree()?;
            let mut out_axes = vec![];
            leaf_axes(&out_tree, out_spec, &mut out_axes)?;
            out_axes
        };
        let c = call.clone();
        let f = ferrox::vmap(move |xs: &[Array]| c.run(xs), &in_axes, &out_axes);
        let outs = stashed(|| f(&leaves))?;
        unflatten(py, &*call.out_tree()?, &mut outs.into_iter())
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)?;
        visit.call(&self.in_axes)?;
        visit.call(&self.out_axes)
    }
}

/// A shallow structural copy (leaves and containers; `Other` values are
/// only placeholders here, used for axis matching).
fn trees_ref(trees: &[Tree]) -> Vec<Tree> {
    fn copy(t: &Tree) -> Tree {
        match t {
            Tree::Leaf => Tree::Leaf,
            Tree::List(v) => Tree::List(v.iter().map(copy).collect()),
            Tree::Tuple(v) => Tree::Tuple(v.iter().map(copy).collect()),
            Tree::Dict(v) => Tree::Dict(
                v.iter()
                    .map(|(k, t)| (Python::attach(|py| k.clone_ref(py)), copy(t)))
                    .collect(),
            ),
            Tree::Other(o) => Tree::Other(Python::attach(|py| o.clone_ref(py))),
        }
    }
    trees.iter().map(copy).collect()
}

/// A function with custom transform rules (`custom_function(fun)`), as
/// MLX's: `@f.vjp`, `@f.jvp` and `@f.vmap` register the rules; rules not
/// given are derived from the function.
///
/// * `vjp(primals, cotangent, output)`: `primals` is the tuple of
///   positional arguments, `cotangent` and `output` have the output's
///   structure; returns cotangents with the primals' structure.
/// * `jvp(primals, tangents)`: both tuples of the positional arguments'
///   structure; returns tangents with the output's structure.
/// * `vmap(inputs, axes)`: `axes` has one entry (int or None) per array of
///   the arguments, in order; returns `(outputs, out_axes)` with `out_axes`
///   one int or None, or one per output array.
#[pyclass(name = "custom_function", module = "ferrox.core", frozen)]
struct CustomFn {
    fun: Py<PyAny>,
    rules: Mutex<[Option<Py<PyAny>>; 3]>,
}

const VJP: usize = 0;
const JVP: usize = 1;
const VMAP: usize = 2;

impl CustomFn {
    fn set_rule(&self, which: usize, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        Python::attach(|py| check_callable(py, &rule))?;
        let ret = Python::attach(|py| rule.clone_ref(py));
        lock(&self.rules)[which] = Some(rule);
        Ok(ret)
    }
}

/// Runs `f` with the GIL; a Python error is stashed for the caller.
fn with_py<T>(f: impl FnOnce(Python<'_>) -> PyResult<T>) -> ferrox::Result<T> {
    Python::attach(|py| f(py).map_err(|e| stash(e, py)))
}

/// Flattens a rule's result into exactly `n` arrays.
fn rule_leaves(what: &str, out: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<Array>> {
    let mut leaves = vec![];
    let tree = flatten(out, &mut leaves)?;
    if has_other(&tree) || leaves.len() != n {
        return Err(PyValueError::new_err(format!(
            "custom_function: the {what} rule returned {} arrays where {n} were expected",
            leaves.len()
        )));
    }
    Ok(leaves)
}

#[pymethods]
impl CustomFn {
    /// Registers the vjp rule (a decorator).
    fn vjp(&self, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        self.set_rule(VJP, rule)
    }
    /// Registers the jvp rule (a decorator).
    fn jvp(&self, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        self.set_rule(JVP, rule)
    }
    /// Registers the vmap rule (a decorator).
    fn vmap(&self, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        self.set_rule(VMAP, rule)
    }
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let (leaves, trees, _) = flatten_args(args)?;
        let call = Call::new(py, &self.fun, trees, kwargs);
        let [vjp, jvp, vmap] = lock(&self.rules)
            .each_ref()
            .map(|r| r.as_ref().map(|r| r.clone_ref(py)));
        let c = call.clone();
        let mut f = ferrox::custom_function(move |xs: &[Array]| c.run(xs));
        if let Some(rule) = vjp {
            let c = call.clone();
            f = f.with_vjp(Arc::new(move |p: &[Array], ct: &[Array], o: &[Array]| {
                with_py(|py| {
                    let tree = c.out_tree()?;
                    let ct = unflatten(py, &tree, &mut ct.iter().cloned())?;
                    let o = unflatten(py, &tree, &mut o.iter().cloned())?;
                    let r = rule.bind(py).call1((c.args_tuple(py, p)?, ct, o))?;
                    rule_leaves("vjp", &r, p.len())
                })
            }));
        }
        if let Some(rule) = jvp {
            let c = call.clone();
            f = f.with_jvp(Arc::new(move |p: &[Array], t: &[Array]| {
                with_py(|py| {
                    let n = count_leaves(&*c.out_tree()?);
                    let r = rule
                        .bind(py)
                        .call1((c.args_tuple(py, p)?, c.args_tuple(py, t)?))?;
                    rule_leaves("jvp", &r, n)
                })
            }));
        }
        if let Some(rule) = vmap {
            let c = call.clone();
            f = f.with_vmap(Arc::new(move |xs: &[Array], axes: &[Option<usize>]| {
                with_py(|py| {
                    let axes = PyTuple::new(py, axes.iter().copied())?;
                    let r = rule.bind(py).call1((c.args_tuple(py, xs)?, axes))?;
                    let (outs, out_axes): (Bound<'_, PyAny>, Bound<'_, PyAny>) = r.extract()?;
                    let mut leaves = vec![];
                    let tree = flatten(&outs, &mut leaves)?;
                    if has_other(&tree) {
                        return Err(PyTypeError::new_err(
                            "custom_function: the vmap rule must return arrays",
                        ));
                    }
                    let mut ax = vec![];
                    leaf_axes(&tree, &out_axes, &mut ax)?;
                    let ax = ax
                        .into_iter()
                        .map(|a| a.map(|a| a.max(0) as usize))
                        .collect();
                    Ok((leaves, ax))
                })
            }));
        }
        let outs = stashed(|| f.call(&leaves))?;
        unflatten(py, &*call.out_tree()?, &mut outs.into_iter())
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)?;
        if let Ok(rules) = self.rules.try_lock() {
            for r in rules.iter().flatten() {
                visit.call(r)?;
            }
        }
        Ok(())
    }
}

/// `custom_function(fun)` (see [`CustomFn`]).
#[pyfunction(name = "custom_function")]
fn custom_function_fn(py: Python<'_>, fun: Py<PyAny>) -> PyResult<CustomFn> {
    check_callable(py, &fun)?;
    Ok(CustomFn {
        fun,
        rules: Mutex::new([None, None, None]),
    })
}

/// The function `checkpoint` returns.
#[pyclass(name = "CheckpointFunction", module = "ferrox.core", frozen)]
struct CheckpointFn {
    fun: Py<PyAny>,
}

#[pymethods]
impl CheckpointFn {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let (leaves, trees, _) = flatten_args(args)?;
        let call = Call::new(py, &self.fun, trees, kwargs);
        let c = call.clone();
        let f = ferrox::checkpoint(move |xs: &[Array]| c.run(xs));
        let outs = stashed(|| f(&leaves))?;
        unflatten(py, &*call.out_tree()?, &mut outs.into_iter())
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)
    }
}

/// `checkpoint(fun)`: `fun` whose intermediates are not kept for the
/// backward pass; gradients run it again instead (trading compute for
/// memory), as MLX's `checkpoint`.
#[pyfunction]
fn checkpoint(py: Python<'_>, fun: Py<PyAny>) -> PyResult<CheckpointFn> {
    check_callable(py, &fun)?;
    Ok(CheckpointFn { fun })
}

/// `vmap(fun, in_axes=0, out_axes=0)`. The function is traced once per
/// call; only an `out_axes` tree (not a plain int or None) makes it run
/// once more first, unbatched on the first example, to match the tree
/// against the output's structure.
#[pyfunction]
#[pyo3(signature = (fun, in_axes = None, out_axes = None))]
fn vmap(
    py: Python<'_>,
    fun: Py<PyAny>,
    in_axes: Option<Py<PyAny>>,
    out_axes: Option<Py<PyAny>>,
) -> PyResult<VmapFn> {
    check_callable(py, &fun)?;
    let zero = || 0i64.into_pyobject(py).map(|o| o.into_any().unbind());
    Ok(VmapFn {
        fun,
        in_axes: match in_axes {
            Some(a) => a,
            None => zero()?,
        },
        out_axes: match out_axes {
            Some(a) => a,
            None => zero()?,
        },
    })
}

// ----------------------------------------------------------------- compile

/// Encodes the arguments' structure and non-array values as typed
/// constants (part of the cache key) and takes out their arrays.
fn encode(
    obj: &Bound<'_, PyAny>,
    leaves: &mut Vec<Array>,
    out: &mut Vec<Constant>,
) -> PyResult<()> {
    let tag = |s: &str| Constant::Str(s.to_string());
    if let Ok(a) = obj.cast::<PyArr>() {
        leaves.push(a.get().arr());
        out.push(tag("a"));
    } else if obj.is_none() {
        out.push(tag("n"));
    } else if obj.is_instance_of::<PyBool>() {
        out.push(tag("b"));
        out.push(Constant::Bool(obj.extract()?));
    } else if obj.is_instance_of::<PyInt>() {
        let v: i64 = obj.extract().map_err(|_| {
            PyValueError::new_err("compile: integer argument out of the int64 range")
        })?;
        out.push(tag("i"));
        out.push(Constant::Int(v));
    } else if obj.is_instance_of::<PyFloat>() {
        out.push(tag("f"));
        out.push(Constant::float(obj.extract()?));
    } else if let Ok(s) = obj.cast::<PyString>() {
        out.push(tag("s"));
        out.push(Constant::Str(s.to_string()));
    } else if let Ok(l) = obj.cast::<PyList>() {
        out.push(tag("l"));
        out.push(Constant::Int(l.len() as i64));
        for o in l.iter() {
            encode(&o, leaves, out)?;
        }
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        out.push(tag("t"));
        out.push(Constant::Int(t.len() as i64));
        for o in t.iter() {
            encode(&o, leaves, out)?;
        }
    } else if let Ok(d) = obj.cast::<PyDict>() {
        out.push(tag("d"));
        out.push(Constant::Int(d.len() as i64));
        for (k, v) in d.iter() {
            let k = k
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err("compile: dict arguments must have str keys"))?;
            out.push(Constant::Str(k.to_string()));
            encode(&v, leaves, out)?;
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "compile: unsupported argument type {}; pass arrays, Python scalars, strings, None \
             or lists/tuples/dicts of them",
            obj.get_type().name()?
        )));
    }
    Ok(())
}

/// Rebuilds the arguments from [`encode`]'s constants and the arrays.
fn decode<'py>(
    py: Python<'py>,
    c: &mut std::slice::Iter<'_, Constant>,
    xs: &mut dyn Iterator<Item = Array>,
) -> PyResult<Bound<'py, PyAny>> {
    let bad = || PyValueError::new_err("compile: malformed argument encoding");
    let Some(Constant::Str(tag)) = c.next() else {
        return Err(bad());
    };
    let count = |c: &mut std::slice::Iter<'_, Constant>| match c.next() {
        Some(Constant::Int(n)) => Ok(*n as usize),
        _ => Err(bad()),
    };
    Ok(match tag.as_str() {
        "a" => Bound::new(py, PyArr::new(xs.next().ok_or_else(bad)?))?.into_any(),
        "n" => py.None().into_bound(py),
        "b" => match c.next() {
            Some(Constant::Bool(b)) => PyBool::new(py, *b).to_owned().into_any(),
            _ => return Err(bad()),
        },
        "i" => match c.next() {
            Some(Constant::Int(i)) => i.into_pyobject(py)?.into_any(),
            _ => return Err(bad()),
        },
        "f" => match c.next() {
            Some(k @ Constant::Float(_)) => k.as_f64().unwrap_or(0.0).into_pyobject(py)?.into_any(),
            _ => return Err(bad()),
        },
        "s" => match c.next() {
            Some(Constant::Str(s)) => PyString::new(py, s).into_any(),
            _ => return Err(bad()),
        },
        "l" | "t" => {
            let n = count(c)?;
            let items = (0..n)
                .map(|_| decode(py, c, xs))
                .collect::<PyResult<Vec<_>>>()?;
            if tag == "l" {
                PyList::new(py, items)?.into_any()
            } else {
                PyTuple::new(py, items)?.into_any()
            }
        }
        "d" => {
            let n = count(c)?;
            let d = PyDict::new(py);
            for _ in 0..n {
                let Some(Constant::Str(k)) = c.next() else {
                    return Err(bad());
                };
                d.set_item(k, decode(py, c, xs)?)?;
            }
            d.into_any()
        }
        _ => return Err(bad()),
    })
}

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

#[pymethods]
impl Compiled {
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
        let cf = self.cf.clone();
        // Released while tracing, replaying or waiting for another thread's
        // trace: that trace may need the GIL to run its Python function.
        let outs = stashed(|| py.detach(|| cf.call_with_constants(&leaves, &consts)))?;
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
    let tree = flatten(&out, &mut leaves)?;
    if has_other(&tree) {
        return Err(PyTypeError::new_err(
            "compiled functions must return arrays or trees (lists, tuples, dicts) of arrays",
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
            Python::attach(|py| {
                body(py, &c2, &o2, &i2, xs, consts, shapeless).map_err(|e| stash(e, py))
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

#[pyfunction]
fn disable_compile() {
    ferrox::disable_compile()
}

#[pyfunction]
fn enable_compile() {
    ferrox::enable_compile()
}

/// Entries in the process-wide compile cache (for tests and diagnostics).
#[pyfunction]
fn compile_cache_len() -> usize {
    ferrox::compile::cache_len()
}

#[pyfunction]
fn clear_compile_cache() {
    ferrox::compile::clear_compile_cache()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GradFn>()?;
    m.add_class::<VmapFn>()?;
    m.add_class::<CheckpointFn>()?;
    m.add_function(wrap_pyfunction!(checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(custom_function_fn, m)?)?;
    m.add_class::<Compiled>()?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(value_and_grad, m)?)?;
    m.add_function(wrap_pyfunction!(vjp, m)?)?;
    m.add_function(wrap_pyfunction!(jvp, m)?)?;
    m.add_function(wrap_pyfunction!(vmap, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(disable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(enable_compile, m)?)?;
    m.add_function(wrap_pyfunction!(compile_cache_len, m)?)?;
    m.add_function(wrap_pyfunction!(clear_compile_cache, m)?)?;
    Ok(())
}
