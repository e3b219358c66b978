//! grad, value_and_grad, vjp, jvp, vmap, checkpoint and custom_function
//! over Python functions of trees (nested lists, tuples and dicts of
//! arrays), as in MLX. `compile` is in `compiled.rs`.

use crate::array::PyArr;
use crate::errors::{from_py, OrPy};
use crate::gil;
use crate::tree::{count_leaves, flatten, has_other, unflatten, unflatten_args, Tree};
use ferrox::Array;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple};
use pyo3::PyTraverseError;
use std::sync::{Arc, Mutex};

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
        gil::attach(|py| self.run_py(py, xs).map_err(|e| from_py(e, py)))
    }
    fn run_py(&self, py: Python<'_>, xs: &[Array]) -> PyResult<Vec<Array>> {
        let mut it = xs.iter().cloned();
        let args = self
            .args
            .iter()
            .map(|t| unflatten_args(py, t, &mut it))
            .collect::<PyResult<Vec<_>>>()?;
        let args = PyTuple::new(py, args)?;
        let kwargs = self.kwargs.as_ref().map(|k| k.bind(py));
        let out = self.fun.bind(py).call(args, kwargs)?;
        let mut leaves = vec![];
        let tree = flatten(&out, &mut leaves)?;
        // Non-array leaves (Python numbers, strings in `aux`) are kept in
        // the output's structure as they are; only arrays are traced.
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

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
    One(i64),
    Many(Vec<i64>),
}

#[derive(FromPyObject)]
enum Argnames {
    One(String),
    Many(Vec<String>),
}

/// The function `grad` or `value_and_grad` returns.
#[pyclass(name = "GradFunction", module = "ferrox.core", frozen)]
struct GradFn {
    fun: Py<PyAny>,
    argnums: Vec<usize>,
    single: bool,
    /// Keyword arguments to differentiate too; with any, the gradients are
    /// `(positional, {name: gradient})`, as MLX.
    argnames: Vec<String>,
    with_value: bool,
}

/// Calls `fun` with its trailing positional arguments moved back into the
/// keywords `names` (how `argnames` differentiates keyword arguments: the
/// transforms see positions only).
#[pyclass(name = "_KeywordsAsPositions", module = "ferrox.core", frozen)]
struct KeywordsAsPositions {
    fun: Py<PyAny>,
    names: Vec<String>,
}

#[pymethods]
impl KeywordsAsPositions {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let n = args.len() - self.names.len();
        let kw = match kwargs {
            Some(k) => k.copy()?,
            None => PyDict::new(py),
        };
        for (name, value) in self.names.iter().zip(args.iter().skip(n)) {
            kw.set_item(name, value)?;
        }
        let positional = PyTuple::new(py, args.iter().take(n))?;
        self.fun.bind(py).call(positional, Some(&kw))
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)
    }
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
        if !self.argnames.is_empty() {
            return self.call_with_argnames(args, kwargs);
        }
        let (leaves, trees, ranges) = flatten_args(args)?;
        for &i in &self.argnums {
            if i >= trees.len() {
                return Err(PyValueError::new_err(format!(
                    "grad: argnum {i} is out of range for {} arguments",
                    trees.len()
                )));
            }
        }
        for &i in &self.argnums {
            if crate::tree::has_other(&trees[i]) {
                return Err(PyValueError::new_err(format!(
                    "grad: argument {i} holds values that are not arrays; the arguments \
                     to differentiate must be arrays or lists, tuples and dicts of arrays"
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
        let (values, grads) = vg(&leaves).py()?;
        // grad (unlike value_and_grad, which allows `(loss, aux...)`)
        // differentiates a function returning one array, as MLX.
        if !self.with_value && !matches!(*call.out_tree()?, crate::tree::Tree::Leaf) {
            return Err(PyValueError::new_err(
                "grad: the function must return a scalar array (use value_and_grad for a function returning (loss, aux...))",
            ));
        }
        // The differentiated output (the first) is a scalar, as in MLX.
        if let Some(loss) = values.first() {
            if loss.ndim() != 0 {
                return Err(PyValueError::new_err(format!(
                    "grad: the function must return a scalar (0-d) array, got shape {:?}",
                    loss.shape()
                )));
            }
        }
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

impl GradFn {
    /// The function `grad` (`with_value: false`) or `value_and_grad`
    /// returns.
    fn new(
        py: Python<'_>,
        fun: Py<PyAny>,
        argnums: Option<Argnums>,
        argnames: Option<Argnames>,
        with_value: bool,
    ) -> PyResult<GradFn> {
        let argnames = argnames_of(argnames);
        // With argnames and no argnums, no positional argument is
        // differentiated.
        let (argnums, single) = match argnums {
            None if !argnames.is_empty() => (Vec::new(), false),
            a => argnums_of(a)?,
        };
        if argnums.is_empty() && argnames.is_empty() {
            return Err(PyValueError::new_err(
                "grad: argnums is empty and there are no argnames: nothing to differentiate",
            ));
        }
        check_callable(py, &fun)?;
        Ok(GradFn {
            fun,
            argnums,
            single,
            argnames,
            with_value,
        })
    }

    /// `argnames`: the named keyword arguments become trailing positions of
    /// a wrapper, differentiated with the chosen positions; the result is
    /// `(positional gradients or None, {name: gradient})`.
    fn call_with_argnames<'py>(
        &self,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = args.py();
        let rest = match kwargs {
            Some(k) => k.copy()?,
            None => PyDict::new(py),
        };
        if let Some(&i) = self.argnums.iter().find(|&&i| i >= args.len()) {
            return Err(PyValueError::new_err(format!(
                "grad: argnum {i} is out of range for {} positional arguments",
                args.len()
            )));
        }
        let mut all: Vec<Bound<'py, PyAny>> = args.iter().collect();
        for name in &self.argnames {
            let v = rest.get_item(name)?.ok_or_else(|| {
                PyValueError::new_err(format!(
                    "grad: argnames names the keyword argument {name:?}, which the call does not pass"
                ))
            })?;
            rest.del_item(name)?;
            all.push(v);
        }
        let n = args.len();
        let wrapper = Py::new(
            py,
            KeywordsAsPositions {
                fun: self.fun.clone_ref(py),
                names: self.argnames.clone(),
            },
        )?;
        let positions: Vec<usize> = self
            .argnums
            .iter()
            .copied()
            .chain(n..n + self.argnames.len())
            .collect();
        let inner = GradFn {
            fun: wrapper.into_any(),
            argnums: positions,
            single: false,
            argnames: Vec::new(),
            with_value: self.with_value,
        };
        let out = inner.__call__(&PyTuple::new(py, all)?, Some(&rest))?;
        let (value, grads) = if self.with_value {
            let t = out.cast::<PyTuple>()?;
            (Some(t.get_item(0)?), t.get_item(1)?)
        } else {
            (None, out)
        };
        let grads = grads.cast::<PyTuple>()?;
        let k = self.argnums.len();
        let positional = match (k, self.single) {
            (0, _) => py.None().into_bound(py),
            (_, true) => grads.get_item(0)?,
            _ => PyTuple::new(py, grads.iter().take(k))?.into_any(),
        };
        let named = PyDict::new(py);
        for (name, g) in self.argnames.iter().zip(grads.iter().skip(k)) {
            named.set_item(name, g)?;
        }
        let g = PyTuple::new(py, [positional, named.into_any()])?.into_any();
        match value {
            Some(v) => Ok(PyTuple::new(py, [v, g])?.into_any()),
            None => Ok(g),
        }
    }
}

fn argnames_of(argnames: Option<Argnames>) -> Vec<String> {
    match argnames {
        None => Vec::new(),
        Some(Argnames::One(s)) => vec![s],
        Some(Argnames::Many(v)) => v,
    }
}

fn argnums_of(argnums: Option<Argnums>) -> PyResult<(Vec<usize>, bool)> {
    let (v, single) = match argnums {
        None => (vec![0], true),
        Some(Argnums::One(i)) => (vec![i], true),
        // As MLX: a sequence of one index also gives a bare gradient.
        Some(Argnums::Many(v)) => {
            let single = v.len() == 1;
            (v, single)
        }
    };
    let v: Vec<usize> = v
        .iter()
        .map(|&i| {
            usize::try_from(i).map_err(|_| {
                PyValueError::new_err(format!("grad: argnums must be non-negative, got {i}"))
            })
        })
        .collect::<PyResult<_>>()?;
    if let Some((_, &i)) = v.iter().enumerate().find(|(k, i)| v[..*k].contains(i)) {
        return Err(PyValueError::new_err(format!(
            "grad: argument index {i} appears twice in argnums {v:?}"
        )));
    }
    Ok((v, single))
}

/// `grad(fun, argnums=None, argnames=[])`: the gradient of `fun`'s (scalar) output with
/// respect to the arguments at `argnums` (default 0), shaped like them.
/// With `argnames`, the named keyword arguments too, and the result is
/// `(positional gradients or None, {name: gradient})`.
///
/// Example:
///     >>> ferrox.core.grad(lambda x: (x * x).sum())(ferrox.core.array([3.0])).tolist()
///     [6.0]
#[pyfunction]
#[pyo3(signature = (fun, argnums = None, argnames = None))]
fn grad(
    py: Python<'_>,
    fun: Py<PyAny>,
    argnums: Option<Argnums>,
    argnames: Option<Argnames>,
) -> PyResult<GradFn> {
    GradFn::new(py, fun, argnums, argnames, false)
}

/// `value_and_grad(fun, argnums=None, argnames=[])`: `fun`'s output and the gradient of
/// its first (scalar) array. `fun` may return `loss` or `(loss, aux...)`.
///
/// Example:
///     >>> v, g = ferrox.core.value_and_grad(lambda x: (x * x).sum())(ferrox.core.array([3.0])); (v.item(), g.tolist())
///     (9.0, [6.0])
#[pyfunction]
#[pyo3(signature = (fun, argnums = None, argnames = None))]
fn value_and_grad(
    py: Python<'_>,
    fun: Py<PyAny>,
    argnums: Option<Argnums>,
    argnames: Option<Argnames>,
) -> PyResult<GradFn> {
    GradFn::new(py, fun, argnums, argnames, true)
}

pub fn check_callable(py: Python<'_>, f: &Py<PyAny>) -> PyResult<()> {
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
        Tree::List(v) | Tree::Tuple(v, _) => v.iter().all(|t| matches!(t, Tree::Leaf)),
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
///
/// Example:
///     >>> out, vjps = ferrox.core.vjp(lambda x: x * 2, [ferrox.core.array([1.0])], [ferrox.core.array([1.0])]); vjps[0].tolist()
///     [2.0]
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
    let (outs, vjps) = ferrox::vjp(|xs| call.run(xs), &p, &c).py()?;
    PyTuple::new(py, [pylist(py, outs)?, pylist(py, vjps)?])
}

/// `jvp(fun, primals, tangents) -> (outputs, jvps)`.
///
/// Example:
///     >>> out, jvps = ferrox.core.jvp(lambda x: x * 2, [ferrox.core.array([1.0])], [ferrox.core.array([1.0])]); jvps[0].tolist()
///     [2.0]
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
    let (outs, jvps) = ferrox::jvp(|xs| call.run(xs), &p, &t).py()?;
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
        Tree::List(v) | Tree::Tuple(v, _) => {
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
        Tree::Dict(v, _) => {
            let Ok(spec) = spec.cast::<PyDict>() else {
                return Err(PyValueError::new_err(format!(
                    "vmap: the axis spec {} does not match a dict",
                    spec.repr()?
                )));
            };
            if spec.len() != v.len() {
                return Err(PyValueError::new_err(format!(
                    "vmap: the axis spec has {} keys for a dict of {}",
                    spec.len(),
                    v.len()
                )));
            }
            for (k, t) in v {
                let Some(s) = spec.get_item(k.bind(spec.py()))? else {
                    return Err(PyValueError::new_err(format!(
                        "vmap: the axis spec has no entry for key {}",
                        k.bind(spec.py()).repr()?
                    )));
                };
                leaf_axes(t, &s, out)?;
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
        } else if trees.len() == 1
            && !spec.is_instance_of::<PyTuple>()
            && !spec.is_instance_of::<PyList>()
        {
            // A dict (or other tree) spec of the only argument, as MLX
            // takes it: `vmap(f, in_axes={"a": 0})(tree)`.
            leaf_axes(&trees[0], spec, &mut in_axes)?;
        } else {
            leaf_axes(&Tree::Tuple(trees_ref(&trees), None), spec, &mut in_axes)?;
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
            call.run(&example).py()?;
            let out_tree = call.out_tree()?;
            let mut out_axes = vec![];
            // `out_axes=(1,)` for a function returning one array, as MLX
            // takes it.
            let one = match (&*out_tree, out_spec.len()) {
                (Tree::Leaf, Ok(1)) => Some(out_spec.get_item(0)?),
                _ => None,
            };
            leaf_axes(&out_tree, one.as_ref().unwrap_or(out_spec), &mut out_axes)?;
            out_axes
        };
        let c = call.clone();
        let f = ferrox::vmap(move |xs: &[Array]| c.run(xs), &in_axes, &out_axes);
        let outs = f(&leaves).py()?;
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
            Tree::Tuple(v, ty) => Tree::Tuple(
                v.iter().map(copy).collect(),
                ty.as_ref().map(|t| gil::attach(|py| t.clone_ref(py))),
            ),
            Tree::Dict(v, subclass) => Tree::Dict(
                v.iter()
                    .map(|(k, t)| (gil::attach(|py| k.clone_ref(py)), copy(t)))
                    .collect(),
                subclass.as_ref().map(|o| gil::attach(|py| o.clone_ref(py))),
            ),
            Tree::Other(o) => Tree::Other(gil::attach(|py| o.clone_ref(py))),
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
///
/// As in MLX, a function of one argument gets that argument (and its
/// tangent, and its axis) itself rather than a tuple of one.
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
        gil::attach(|py| check_callable(py, &rule))?;
        let ret = gil::attach(|py| rule.clone_ref(py));
        lock(&self.rules)[which] = Some(rule);
        Ok(ret)
    }
}

/// Runs `f` with the GIL; a Python error becomes the error's payload.
fn with_py<T>(f: impl FnOnce(Python<'_>) -> PyResult<T>) -> ferrox::Result<T> {
    gil::attach(|py| f(py).map_err(|e| from_py(e, py)))
}

/// The arguments as a custom rule receives them, as in MLX: the argument
/// itself for a function of one argument, else the tuple.
fn only_or_all(args: Bound<'_, PyTuple>) -> PyResult<Bound<'_, PyAny>> {
    if args.len() == 1 {
        args.get_item(0)
    } else {
        Ok(args.into_any())
    }
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
    ///
    /// Example:
    ///     >>> out, vjps = ferrox.core.vjp(lambda x: x * 2, [ferrox.core.array([1.0])], [ferrox.core.array([1.0])]); vjps[0].tolist()
    ///     [2.0]
    fn vjp(&self, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        self.set_rule(VJP, rule)
    }
    /// Registers the jvp rule (a decorator).
    ///
    /// Example:
    ///     >>> out, jvps = ferrox.core.jvp(lambda x: x * 2, [ferrox.core.array([1.0])], [ferrox.core.array([1.0])]); jvps[0].tolist()
    ///     [2.0]
    fn jvp(&self, rule: Py<PyAny>) -> PyResult<Py<PyAny>> {
        self.set_rule(JVP, rule)
    }
    /// Registers the vmap rule (a decorator).
    ///
    /// Example:
    ///     >>> ferrox.core.vmap(lambda x: x.sum())(ferrox.core.ones((3, 4))).tolist()
    ///     [4.0, 4.0, 4.0]
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
                    let r = rule
                        .bind(py)
                        .call1((only_or_all(c.args_tuple(py, p)?)?, ct, o))?;
                    rule_leaves("vjp", &r, p.len())
                })
            }));
        }
        if let Some(rule) = jvp {
            let c = call.clone();
            f = f.with_jvp(Arc::new(move |p: &[Array], t: &[Array]| {
                with_py(|py| {
                    let n = count_leaves(&*c.out_tree()?);
                    let r = rule.bind(py).call1((
                        only_or_all(c.args_tuple(py, p)?)?,
                        only_or_all(c.args_tuple(py, t)?)?,
                    ))?;
                    rule_leaves("jvp", &r, n)
                })
            }));
        }
        if let Some(rule) = vmap {
            let c = call.clone();
            f = f.with_vmap(Arc::new(move |xs: &[Array], axes: &[Option<usize>]| {
                with_py(|py| {
                    let axes = PyTuple::new(py, axes.iter().copied())?;
                    let args = c.args_tuple(py, xs)?;
                    let axes = if args.len() == 1 && axes.len() == 1 {
                        axes.get_item(0)?
                    } else {
                        axes.into_any()
                    };
                    let r = rule.bind(py).call1((only_or_all(args)?, axes))?;
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
        let outs = f.call(&leaves).py()?;
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

/// custom_function(fun) -> custom_function
///
/// ``fun`` with rules of its own for the transforms: decorate functions
/// with ``@f.vjp``, ``@f.jvp`` and ``@f.vmap`` to set them.
///
/// Example:
///     >>> f = ferrox.core.custom_function(lambda x: x * 2); f(ferrox.core.array([1.0])).tolist()
///     [2.0]
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
        let outs = f(&leaves).py()?;
        unflatten(py, &*call.out_tree()?, &mut outs.into_iter())
    }
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fun)
    }
}

/// `checkpoint(fun)`: `fun` whose intermediates are not kept for the
/// backward pass; gradients run it again instead (trading compute for
/// memory), as MLX's `checkpoint`.
///
/// Example:
///     >>> ferrox.core.grad(lambda x: ferrox.core.checkpoint(lambda y: (y * y).sum())(x))(ferrox.core.array([2.0])).tolist()
///     [4.0]
#[pyfunction]
fn checkpoint(py: Python<'_>, fun: Py<PyAny>) -> PyResult<CheckpointFn> {
    check_callable(py, &fun)?;
    Ok(CheckpointFn { fun })
}

/// `vmap(fun, in_axes=0, out_axes=0)`. The function is traced once per
/// call; only an `out_axes` tree (not a plain int or None) makes it run
/// once more first, unbatched on the first example, to match the tree
/// against the output's structure.
///
/// Example:
///     >>> ferrox.core.vmap(lambda x: x.sum())(ferrox.core.ones((3, 4))).tolist()
///     [4.0, 4.0, 4.0]
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GradFn>()?;
    m.add_class::<VmapFn>()?;
    m.add_class::<CheckpointFn>()?;
    m.add_function(wrap_pyfunction!(checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(custom_function_fn, m)?)?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(value_and_grad, m)?)?;
    m.add_function(wrap_pyfunction!(vjp, m)?)?;
    m.add_function(wrap_pyfunction!(jvp, m)?)?;
    m.add_function(wrap_pyfunction!(vmap, m)?)?;
    Ok(())
}
