//! Trees of arrays: nested lists, tuples and dicts, as MLX's transforms and
//! compile take them. One walk ([`flatten`]; [`array_objects`] and
//! [`encode`] use it too) gives the structure and the arrays; [`encode`] and
//! [`decode`] turn a compiled call's structure and non-array values into
//! typed constants and back: the part of its cache key that Python code may
//! branch on.

use crate::array::PyArr;
use ferrox::compile::Constant;
use ferrox::Array;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

/// The structure of a tree with its arrays taken out.
pub enum Tree {
    Leaf,
    List(Vec<Tree>),
    /// A tuple's items; its type when it is a tuple subclass (a
    /// `NamedTuple`, say), which rebuilt trees keep, as MLX's do.
    Tuple(Vec<Tree>, Option<Py<PyType>>),
    /// A dict's items; the object itself when it is an instance of a dict
    /// subclass (an `nn.Module`, say), for [`unflatten_args`].
    Dict(Vec<(Py<PyAny>, Tree)>, Option<Py<PyAny>>),
    /// A value that is not an array, kept as it is.
    Other(Py<PyAny>),
}

/// Takes the arrays out of `obj` (depth first, dicts in insertion order).
pub fn flatten(obj: &Bound<'_, PyAny>, leaves: &mut Vec<Array>) -> PyResult<Tree> {
    walk(obj, &mut |a| leaves.push(a.get().arr()))
}

/// The array objects of a tree, in [`flatten`]'s order (implicit compile
/// state writes new values into them).
pub fn array_objects<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyArr>>> {
    let mut out = vec![];
    walk(obj, &mut |a| out.push(a.clone()))?;
    Ok(out)
}

/// The one walk over a tree: lists, tuples and dicts (in insertion order)
/// are containers, arrays are leaves handed to `leaf`, anything else is
/// kept as [`Tree::Other`].
fn walk<'py>(obj: &Bound<'py, PyAny>, leaf: &mut dyn FnMut(&Bound<'py, PyArr>)) -> PyResult<Tree> {
    if let Ok(a) = obj.cast::<PyArr>() {
        leaf(a);
        return Ok(Tree::Leaf);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(Tree::List(
            l.iter().map(|o| walk(&o, leaf)).collect::<PyResult<_>>()?,
        ));
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let subclass = (!obj.is_exact_instance_of::<PyTuple>()).then(|| obj.get_type().unbind());
        return Ok(Tree::Tuple(
            t.iter().map(|o| walk(&o, leaf)).collect::<PyResult<_>>()?,
            subclass,
        ));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let items = d
            .iter()
            .map(|(k, v)| Ok((k.unbind(), walk(&v, leaf)?)))
            .collect::<PyResult<_>>()?;
        let subclass = (!obj.is_exact_instance_of::<PyDict>()).then(|| obj.clone().unbind());
        return Ok(Tree::Dict(items, subclass));
    }
    Ok(Tree::Other(obj.clone().unbind()))
}

/// Puts arrays from `leaves` back into the structure. Dict subclasses come
/// back as plain dicts, as MLX's transforms return them (a gradient with
/// respect to a module is a dict of gradients).
pub fn unflatten<'py>(
    py: Python<'py>,
    tree: &Tree,
    leaves: &mut dyn Iterator<Item = Array>,
) -> PyResult<Bound<'py, PyAny>> {
    rebuild(py, tree, leaves, false)
}

/// Like [`unflatten`], but an instance of a dict subclass comes back as a
/// shallow copy of itself (`copy.copy`) holding the new leaves: what a
/// transform passes to the function it traces, so that a module argument is
/// still a module there (its methods work). The caller's object is never
/// modified, so other threads using it meanwhile see their own arrays.
pub fn unflatten_args<'py>(
    py: Python<'py>,
    tree: &Tree,
    leaves: &mut dyn Iterator<Item = Array>,
) -> PyResult<Bound<'py, PyAny>> {
    rebuild(py, tree, leaves, true)
}

fn rebuild<'py>(
    py: Python<'py>,
    tree: &Tree,
    leaves: &mut dyn Iterator<Item = Array>,
    keep_subclasses: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let unflatten =
        |py, t, leaves: &mut dyn Iterator<Item = Array>| rebuild(py, t, leaves, keep_subclasses);
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
        Tree::Tuple(v, subclass) => {
            let items = v
                .iter()
                .map(|t| unflatten(py, t, leaves))
                .collect::<PyResult<Vec<_>>>()?;
            tuple_of(py, subclass.as_ref(), items)?
        }
        Tree::Dict(v, subclass) => {
            let d = match subclass {
                Some(original) if keep_subclasses => py
                    .import("copy")?
                    .getattr("copy")?
                    .call1((original.bind(py),))?,
                _ => PyDict::new(py).into_any(),
            };
            for (k, t) in v {
                d.set_item(k.bind(py), unflatten(py, t, leaves)?)?;
            }
            d
        }
        Tree::Other(o) => o.bind(py).clone(),
    })
}

/// A tuple of `ty` (a plain tuple for `None`) holding `items`: a named
/// tuple is built from its fields (`ty(*items)`), another tuple subclass
/// from the sequence (`ty(items)`).
fn tuple_of<'py>(
    py: Python<'py>,
    ty: Option<&Py<PyType>>,
    items: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let tuple = PyTuple::new(py, items)?;
    match ty {
        None => Ok(tuple.into_any()),
        Some(ty) if ty.bind(py).hasattr("_fields")? => ty.bind(py).call1(tuple),
        Some(ty) => ty.bind(py).call1((tuple,)),
    }
}

/// The tuple subclasses compiled functions have seen, each kept alive for
/// the life of the process so that its index (in the cache key) always
/// names the same type.
static TUPLE_TYPES: std::sync::Mutex<Vec<Py<PyType>>> = std::sync::Mutex::new(Vec::new());

fn tuple_type_index(py: Python<'_>, ty: &Py<PyType>) -> i64 {
    let mut types = TUPLE_TYPES.lock().unwrap_or_else(|p| p.into_inner());
    let at = types.iter().position(|t| t.is(ty)).unwrap_or_else(|| {
        types.push(ty.clone_ref(py));
        types.len() - 1
    });
    at as i64
}

fn tuple_type(py: Python<'_>, index: i64) -> Option<Py<PyType>> {
    let types = TUPLE_TYPES.lock().unwrap_or_else(|p| p.into_inner());
    usize::try_from(index)
        .ok()
        .and_then(|i| types.get(i))
        .map(|t| t.clone_ref(py))
}

pub fn count_leaves(t: &Tree) -> usize {
    match t {
        Tree::Leaf => 1,
        Tree::List(v) | Tree::Tuple(v, _) => v.iter().map(count_leaves).sum(),
        Tree::Dict(v, _) => v.iter().map(|(_, t)| count_leaves(t)).sum(),
        Tree::Other(_) => 0,
    }
}

/// Every array in a tree (for `eval`).
pub fn tree_arrays(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Array>> {
    let mut leaves = vec![];
    flatten(obj, &mut leaves)?;
    Ok(leaves)
}

/// True when the tree holds a value that is not an array or a container.
pub fn has_other(t: &Tree) -> bool {
    any_other(t, &|_| true)
}

/// True when the tree holds a value, not an array or a container, for
/// which `pred` holds.
pub fn any_other(t: &Tree, pred: &dyn Fn(&Py<PyAny>) -> bool) -> bool {
    match t {
        Tree::Leaf => false,
        Tree::List(v) | Tree::Tuple(v, _) => v.iter().any(|t| any_other(t, pred)),
        Tree::Dict(v, _) => v.iter().any(|(_, t)| any_other(t, pred)),
        Tree::Other(o) => pred(o),
    }
}

/// None, a bool, an int, a float or a str: a value that holds no reference
/// to other objects (so keeping it cannot form a reference cycle).
pub fn is_plain_constant(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_none()
        || obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
        || obj.is_instance_of::<PyString>()
}

/// Encodes the arguments' structure and non-array values as typed
/// constants (part of the cache key) and takes out their arrays, in
/// [`flatten`]'s order: one walk, then the structure as constants.
pub fn encode(
    obj: &Bound<'_, PyAny>,
    leaves: &mut Vec<Array>,
    out: &mut Vec<Constant>,
) -> PyResult<()> {
    let tree = flatten(obj, leaves)?;
    constants(obj.py(), &tree, out)
}

/// The constants of one tree (see [`decode`] for the tags).
fn constants(py: Python<'_>, tree: &Tree, out: &mut Vec<Constant>) -> PyResult<()> {
    let tag = |s: &str| Constant::Str(s.to_string());
    match tree {
        Tree::Leaf => out.push(tag("a")),
        Tree::List(v) | Tree::Tuple(v, _) => {
            match tree {
                Tree::List(_) => out.push(tag("l")),
                Tree::Tuple(_, Some(ty)) => {
                    out.push(tag("T"));
                    out.push(Constant::Int(tuple_type_index(py, ty)));
                }
                _ => out.push(tag("t")),
            }
            out.push(Constant::Int(v.len() as i64));
            for t in v {
                constants(py, t, out)?;
            }
        }
        // A dict subclass is encoded (and rebuilt) as a plain dict, as in MLX.
        Tree::Dict(v, _) => {
            out.push(tag("d"));
            out.push(Constant::Int(v.len() as i64));
            for (k, t) in v {
                let k = k.bind(py).cast::<PyString>().map_err(|_| {
                    PyTypeError::new_err("compile: dict arguments must have str keys")
                })?;
                out.push(Constant::Str(k.to_string()));
                constants(py, t, out)?;
            }
        }
        Tree::Other(o) => {
            let obj = o.bind(py);
            if obj.is_none() {
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
            } else {
                // ValueError, as MLX raises for this.
                return Err(PyValueError::new_err(format!(
                    "compile: unsupported argument type {}; pass arrays, Python scalars, \
                     strings, None or lists/tuples/dicts of them",
                    obj.get_type().name()?
                )));
            }
        }
    }
    Ok(())
}

/// Rebuilds the arguments from [`encode`]'s constants and the arrays.
pub fn decode<'py>(
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
        "l" | "t" | "T" => {
            let ty = if tag == "T" {
                let Some(Constant::Int(i)) = c.next() else {
                    return Err(bad());
                };
                Some(tuple_type(py, *i).ok_or_else(bad)?)
            } else {
                None
            };
            let n = count(c)?;
            let items = (0..n)
                .map(|_| decode(py, c, xs))
                .collect::<PyResult<Vec<_>>>()?;
            if tag == "l" {
                PyList::new(py, items)?.into_any()
            } else {
                tuple_of(py, ty.as_ref(), items)?
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
