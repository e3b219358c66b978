//! Loading and saving of `ferrox.core`, with mlx.core's names, signatures
//! and return shapes: `load`, `save`, `savez`, `savez_compressed`,
//! `save_safetensors`, `save_gguf`.
//!
//! A `file` is a path (`str` or any `os.PathLike`, e.g. `pathlib.Path`) or a
//! binary file object. Paths are read and written by the core (`ferrox::io`:
//! mapped loads, atomic saves) with the GIL released; a file object is read
//! whole (`read()`) and loaded from memory, or written once (`write()`)
//! from a buffer holding the whole file.

use crate::array::PyArr;
use crate::convert::to_array;
use crate::device::on;
use crate::errors::OrPy;
use ferrox::io::{self, Arrays, Format, GgufType, GgufValue, Loaded, Metadata};
use ferrox::{Array, DType};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::collections::BTreeMap;
use std::path::PathBuf;

type Any<'py> = Bound<'py, PyAny>;

/// Where a load reads from or a save writes to.
enum Target<'py> {
    Path(PathBuf),
    Stream(Any<'py>),
}

fn target<'py>(op: &str, file: &Any<'py>) -> PyResult<Target<'py>> {
    if file.is_instance_of::<PyString>() || file.hasattr("__fspath__")? {
        let os = file.py().import("os")?;
        let p = os.call_method1("fspath", (file,))?;
        let s: String = p.extract().map_err(|_| {
            PyTypeError::new_err(format!("{op}: file paths must be str, not bytes"))
        })?;
        return Ok(Target::Path(PathBuf::from(s)));
    }
    if file.hasattr("read")? || file.hasattr("write")? {
        return Ok(Target::Stream(file.clone()));
    }
    Err(PyTypeError::new_err(format!(
        "{op}: file must be a path (str, pathlib.Path) or a binary file object, not {}",
        file.get_type().name()?
    )))
}

/// `path` with `ext` appended unless it already ends so (MLX's rule for
/// the save functions).
fn with_ext(path: PathBuf, ext: &str) -> PathBuf {
    let s = path.to_string_lossy();
    if s.ends_with(ext) {
        path
    } else {
        PathBuf::from(format!("{s}{ext}"))
    }
}

fn format_of(file: &Any<'_>, target: &Target<'_>, format: Option<&str>) -> PyResult<Format> {
    if let Some(f) = format {
        return Format::from_name(f).py();
    }
    match target {
        Target::Path(p) => Format::from_path(p).py(),
        Target::Stream(_) => {
            let name: Option<String> = file.getattr("name").ok().and_then(|n| n.extract().ok());
            match name {
                Some(n) => Format::from_path(&n).py(),
                None => Err(PyValueError::new_err(
                    "load: could not infer the file format of a file object without a name; pass format=",
                )),
            }
        }
    }
}

/// Bytes of a binary file object, from its position to its end.
fn read_all(op: &str, f: &Any<'_>) -> PyResult<Vec<u8>> {
    let data = f.call_method0("read")?;
    match data.cast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => match data.extract::<Vec<u8>>() {
            Ok(v) if !data.is_instance_of::<PyString>() => Ok(v),
            _ => Err(PyTypeError::new_err(format!(
                "{op}: the file object must be opened in binary mode ('rb')"
            ))),
        },
    }
}

fn dict_of(py: Python<'_>, arrays: Arrays) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (k, a) in arrays {
        d.set_item(k, Py::new(py, PyArr::new(a))?)?;
    }
    Ok(d)
}

/// load(file, /, format=None, return_metadata=False, *, stream=None) -> Union[array, dict[str, array], tuple[dict[str, array], dict]]
///
/// Loads arrays from a `.npy`, `.npz`, `.safetensors` or `.gguf` file.
/// `format` defaults to the file's extension (a file object's `name`).
/// Returns an array for npy and a dict of arrays otherwise; with
/// `return_metadata=True` (safetensors and gguf only) a tuple `(arrays,
/// metadata)`. Large files are mapped: their arrays cost no memory until
/// read. gguf's quantized tensors load dequantised to float32.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.save_safetensors("w.safetensors", {"w": mx.ones((2, 2))}, {"note": "hi"})
///     >>> arrays, meta = mx.load("w.safetensors", return_metadata=True)
///     >>> arrays["w"].shape, meta
///     ((2, 2), {'note': 'hi'})
#[pyfunction]
#[pyo3(signature = (file, /, format = None, return_metadata = false, *, stream = None))]
fn load<'py>(
    py: Python<'py>,
    file: &Any<'py>,
    format: Option<String>,
    return_metadata: bool,
    stream: Option<&Any<'py>>,
) -> PyResult<Py<PyAny>> {
    let t = target("load", file)?;
    let fmt = format_of(file, &t, format.as_deref())?;
    if return_metadata && matches!(fmt, Format::Npy | Format::Npz) {
        return Err(PyValueError::new_err(format!(
            "load: metadata is not supported for format {}",
            fmt.name()
        )));
    }
    let loaded = match &t {
        Target::Path(p) => on(stream, || crate::gil::detach(py, || io::load(p, Some(fmt))))?,
        Target::Stream(f) => {
            let bytes = read_all("load", f)?;
            let name: String = f
                .getattr("name")
                .ok()
                .and_then(|n| n.extract().ok())
                .unwrap_or_else(|| "<file object>".into());
            on(stream, || io::load_bytes(&bytes, fmt, &name))?
        }
    }
    .py()?;
    Ok(match loaded {
        Loaded::Array(a) => Py::new(py, PyArr::new(a))?.into_any(),
        Loaded::Arrays { arrays, metadata } => {
            let d = dict_of(py, arrays)?;
            if !return_metadata {
                return Ok(d.into_any().unbind());
            }
            let m = metadata_to_py(py, &metadata)?;
            PyTuple::new(py, [d.into_any(), m])?.into_any().unbind()
        }
    })
}

fn metadata_to_py<'py>(py: Python<'py>, m: &Metadata) -> PyResult<Any<'py>> {
    let d = PyDict::new(py);
    match m {
        Metadata::None => {}
        Metadata::Safetensors(m) => {
            for (k, v) in m {
                d.set_item(k, v)?;
            }
        }
        Metadata::Gguf(m) => {
            for (k, v) in m {
                d.set_item(k, gguf_to_py(py, v)?)?;
            }
        }
    }
    Ok(d.into_any())
}

fn arr<'py>(py: Python<'py>, a: ferrox::Result<Array>) -> PyResult<Any<'py>> {
    Ok(Py::new(py, PyArr::new(a.py()?))?.into_bound(py).into_any())
}

/// A gguf value as MLX gives it: strings as `str`, lists of strings as
/// `list[str]`, numbers and bools as 0-d arrays, arrays of them as 1-d
/// arrays; nested arrays as lists.
fn gguf_to_py<'py>(py: Python<'py>, v: &GgufValue) -> PyResult<Any<'py>> {
    use GgufValue as V;
    macro_rules! numbers {
        ($items:expr, $variant:ident, $t:ty) => {{
            let xs: Vec<$t> = $items
                .iter()
                .filter_map(|i| {
                    if let V::$variant(x) = i {
                        Some(*x)
                    } else {
                        None
                    }
                })
                .collect();
            arr(py, Array::from_slice(&xs, &[xs.len()]))
        }};
    }
    match v {
        V::String(s) => Ok(PyString::new(py, s).into_any()),
        V::U8(x) => arr(py, Ok(Array::scalar(*x))),
        V::I8(x) => arr(py, Ok(Array::scalar(*x))),
        V::U16(x) => arr(py, Ok(Array::scalar(*x))),
        V::I16(x) => arr(py, Ok(Array::scalar(*x))),
        V::U32(x) => arr(py, Ok(Array::scalar(*x))),
        V::I32(x) => arr(py, Ok(Array::scalar(*x))),
        V::U64(x) => arr(py, Ok(Array::scalar(*x))),
        V::I64(x) => arr(py, Ok(Array::scalar(*x))),
        V::F32(x) => arr(py, Ok(Array::scalar(*x))),
        V::F64(x) => arr(py, Ok(Array::scalar(*x))),
        V::Bool(x) => arr(py, Ok(Array::scalar(*x))),
        V::Array(t, items) => match t {
            GgufType::U8 => numbers!(items, U8, u8),
            GgufType::I8 => numbers!(items, I8, i8),
            GgufType::U16 => numbers!(items, U16, u16),
            GgufType::I16 => numbers!(items, I16, i16),
            GgufType::U32 => numbers!(items, U32, u32),
            GgufType::I32 => numbers!(items, I32, i32),
            GgufType::U64 => numbers!(items, U64, u64),
            GgufType::I64 => numbers!(items, I64, i64),
            GgufType::F32 => numbers!(items, F32, f32),
            GgufType::F64 => numbers!(items, F64, f64),
            GgufType::Bool => numbers!(items, Bool, bool),
            GgufType::String | GgufType::Array => {
                let xs = items
                    .iter()
                    .map(|i| gguf_to_py(py, i))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyList::new(py, xs)?.into_any())
            }
        },
    }
}

/// A Python metadata value for `save_gguf`: `str`, a list of `str`, or an
/// array of at most one dimension (0-d: a scalar value).
fn py_to_gguf(key: &str, obj: &Any<'_>) -> PyResult<GgufValue> {
    use GgufValue as V;
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(V::String(s.to_str()?.to_string()));
    }
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        let items = obj
            .try_iter()?
            .map(|i| {
                let i = i?;
                i.cast::<PyString>()
                    .map(|s| s.to_string())
                    .map(V::String)
                    .map_err(|_| {
                        PyTypeError::new_err(format!(
                            "save_gguf: metadata {key:?}: lists must hold only str"
                        ))
                    })
            })
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(V::Array(GgufType::String, items));
    }
    let Ok(a) = obj.cast::<PyArr>() else {
        return Err(PyTypeError::new_err(format!(
            "save_gguf: metadata {key:?} must be an array, a str or a list of str, not {}",
            obj.get_type().name()?
        )));
    };
    let a = a.get().arr();
    if a.ndim() > 1 {
        return Err(PyValueError::new_err(format!(
            "save_gguf: metadata {key:?} has {} dimensions; at most one is allowed",
            a.ndim()
        )));
    }
    macro_rules! values {
        ($variant:ident, $t:ty) => {{
            let xs = a.to_vec::<$t>().py()?;
            let (ty, vals): (GgufType, Vec<GgufValue>) = (
                GgufType::$variant,
                xs.into_iter().map(V::$variant).collect(),
            );
            (ty, vals)
        }};
    }
    let (ty, mut vals) = match a.dtype() {
        DType::UInt8 => values!(U8, u8),
        DType::Int8 => values!(I8, i8),
        DType::UInt16 => values!(U16, u16),
        DType::Int16 => values!(I16, i16),
        DType::UInt32 => values!(U32, u32),
        DType::Int32 => values!(I32, i32),
        DType::UInt64 => values!(U64, u64),
        DType::Int64 => values!(I64, i64),
        DType::Float32 => values!(F32, f32),
        DType::Float64 => values!(F64, f64),
        DType::Bool => values!(Bool, bool),
        d => {
            return Err(PyValueError::new_err(format!(
                "save_gguf: metadata {key:?} has dtype {d}, which gguf cannot store"
            )));
        }
    };
    if a.ndim() == 0 {
        return vals
            .pop()
            .ok_or_else(|| PyValueError::new_err(format!("save_gguf: metadata {key:?} is empty")));
    }
    Ok(V::Array(ty, vals))
}

fn arrays_of(op: &str, d: &Bound<'_, PyDict>) -> PyResult<Arrays> {
    d.iter()
        .map(|(k, v)| {
            let k: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("{op}: array names must be str")))?;
            Ok((k, to_array(&v)?))
        })
        .collect()
}

/// Writes a whole file to `target`: a path through `to_path` (atomic, GIL
/// released), a file object through `to_bytes` and one `write` call.
fn write_to<'py>(
    py: Python<'py>,
    op: &str,
    target: Target<'py>,
    to_path: impl Send + FnOnce(&std::path::Path) -> ferrox::Result<()>,
    to_bytes: impl FnOnce() -> ferrox::Result<Vec<u8>>,
) -> PyResult<()> {
    match target {
        Target::Path(p) => crate::gil::detach(py, || to_path(&p)).py(),
        Target::Stream(f) => {
            if !f.hasattr("write")? {
                return Err(PyTypeError::new_err(format!(
                    "{op}: the file object has no write method"
                )));
            }
            let bytes = to_bytes().py()?;
            f.call_method1("write", (PyBytes::new(py, &bytes),))?;
            Ok(())
        }
    }
}

fn path_with<'py>(t: Target<'py>, ext: &str) -> Target<'py> {
    match t {
        Target::Path(p) => Target::Path(with_ext(p, ext)),
        s => s,
    }
}

/// save(file, arr) -> None
///
/// Saves `arr` as a `.npy` file (`.npy` is appended to a path that lacks
/// it). numpy reads it with `numpy.load`; bfloat16 is written as `<V2`, as
/// MLX does.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.save("a.npy", mx.arange(4))
///     >>> mx.load("a.npy")
///     array([0, 1, 2, 3], dtype=int32)
#[pyfunction]
#[pyo3(signature = (file, arr))]
fn save<'py>(py: Python<'py>, file: &Any<'py>, arr: &Any<'py>) -> PyResult<()> {
    let a = to_array(arr)?;
    let t = path_with(target("save", file)?, ".npy");
    write_to(
        py,
        "save",
        t,
        |p| io::save(p, &a),
        || {
            let mut v = vec![];
            io::npy::write(&mut v, &a)?;
            Ok(v)
        },
    )
}

fn savez_impl<'py>(
    py: Python<'py>,
    op: &str,
    file: &Any<'py>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    compressed: bool,
) -> PyResult<()> {
    let mut arrays = match kwargs {
        Some(k) => arrays_of(op, k)?,
        None => Arrays::new(),
    };
    for (i, a) in args.iter().enumerate() {
        let name = format!("arr_{i}");
        if arrays.contains_key(&name) {
            return Err(PyValueError::new_err(format!(
                "{op}: cannot use un-named arrays together with the keyword {name}"
            )));
        }
        arrays.insert(name, to_array(&a)?);
    }
    let t = path_with(target(op, file)?, ".npz");
    write_to(
        py,
        op,
        t,
        |p| io::savez(p, &arrays, compressed),
        || {
            let mut c = std::io::Cursor::new(vec![]);
            io::npz::write(&mut c, &arrays, compressed)?;
            Ok(c.into_inner())
        },
    )
}

/// savez(file, *args, **kwargs) -> None
///
/// Saves several arrays in an uncompressed `.npz` archive (`.npz` is
/// appended to a path that lacks it). Positional arrays are named `arr_0`,
/// `arr_1`, ...; keyword arrays by their keyword.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.savez("ab.npz", mx.ones(2), b=mx.zeros(3))
///     >>> sorted(mx.load("ab.npz"))
///     ['arr_0', 'b']
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez<'py>(
    py: Python<'py>,
    file: &Any<'py>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<()> {
    savez_impl(py, "savez", file, args, kwargs, false)
}

/// savez_compressed(file, *args, **kwargs) -> None
///
/// Like `savez`, with the members deflated.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.savez_compressed("z.npz", x=mx.zeros((100,)))
///     >>> mx.load("z.npz")["x"].shape
///     (100,)
#[pyfunction]
#[pyo3(signature = (file, *args, **kwargs))]
fn savez_compressed<'py>(
    py: Python<'py>,
    file: &Any<'py>,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<()> {
    savez_impl(py, "savez_compressed", file, args, kwargs, true)
}

/// save_safetensors(file, arrays, metadata=None) -> None
///
/// Saves a dict of arrays, and optional `str` → `str` metadata, as a
/// `.safetensors` file (`.safetensors` is appended to a path that lacks
/// it). Every dtype is supported.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.save_safetensors("m.safetensors", {"w": mx.ones((2,), dtype=mx.bfloat16)}, {"format": "mlx"})
///     >>> mx.load("m.safetensors")["w"].dtype
///     mlx.core.bfloat16
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_safetensors<'py>(
    py: Python<'py>,
    file: &Any<'py>,
    arrays: &Bound<'py, PyDict>,
    metadata: Option<&Bound<'py, PyDict>>,
) -> PyResult<()> {
    let op = "save_safetensors";
    let arrays = arrays_of(op, arrays)?;
    let meta = match metadata {
        Some(m) => Some(
            m.iter()
                .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<String>()?)))
                .collect::<PyResult<BTreeMap<String, String>>>()
                .map_err(|_| {
                    PyValueError::new_err(format!(
                        "{op}: metadata must be a dict with str keys and str values"
                    ))
                })?,
        ),
        None => None,
    };
    let t = path_with(target(op, file)?, ".safetensors");
    write_to(
        py,
        op,
        t,
        |p| io::save_safetensors(p, &arrays, meta.as_ref()),
        || {
            let mut v = vec![];
            io::safetensors::write(&mut v, &arrays, meta.as_ref())?;
            Ok(v)
        },
    )
}

/// save_gguf(file, arrays, metadata=None) -> None
///
/// Saves a dict of arrays (float32, float16, bfloat16, float64, int8,
/// int16, int32, int64) and optional metadata as a `.gguf` file (`.gguf` is
/// appended to a path that lacks it). Metadata values are `str`, lists of
/// `str`, or arrays of at most one dimension (a 0-d array is a scalar);
/// float16, bfloat16 and complex64 metadata raise `ValueError`.
///
/// Example:
///     >>> import ferrox.core as mx
///     >>> mx.save_gguf("m.gguf", {"w": mx.ones((2, 3))}, {"general.name": "tiny", "n": mx.array(3)})
///     >>> arrays, meta = mx.load("m.gguf", return_metadata=True)
///     >>> meta["general.name"], meta["n"].item()
///     ('tiny', 3)
#[pyfunction]
#[pyo3(signature = (file, arrays, metadata = None))]
fn save_gguf<'py>(
    py: Python<'py>,
    file: &Any<'py>,
    arrays: &Bound<'py, PyDict>,
    metadata: Option<&Bound<'py, PyDict>>,
) -> PyResult<()> {
    let op = "save_gguf";
    let arrays = arrays_of(op, arrays)?;
    let mut meta = BTreeMap::new();
    if let Some(m) = metadata {
        for (k, v) in m.iter() {
            let k: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err(format!("{op}: metadata keys must be str")))?;
            let v = py_to_gguf(&k, &v)?;
            meta.insert(k, v);
        }
    }
    let t = path_with(target(op, file)?, ".gguf");
    write_to(
        py,
        op,
        t,
        |p| io::save_gguf(p, &arrays, &meta),
        || {
            let mut v = vec![];
            io::gguf::write(&mut v, &arrays, &meta)?;
            Ok(v)
        },
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(savez, m)?)?;
    m.add_function(wrap_pyfunction!(savez_compressed, m)?)?;
    m.add_function(wrap_pyfunction!(save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(save_gguf, m)?)?;
    Ok(())
}
