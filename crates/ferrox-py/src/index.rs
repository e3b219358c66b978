//! `a[idx]`, `a[idx] = v` and `a.at[idx]` with numpy's rules: integers,
//! slices, `...`, `None`, and integer arrays (advanced indexing).

use crate::array::PyArr;
use crate::convert::new_array;
use ferrox::{Array, DType, Error, ErrorKind, SliceArg};
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// One parsed index entry.
#[derive(Clone)]
pub enum Ix {
    Int(isize),
    Slice(Option<isize>, Option<isize>, isize),
    NewAxis,
    Ellipsis,
    Arr(Array),
}

fn opt_isize(o: &Bound<'_, PyAny>) -> PyResult<Option<isize>> {
    if o.is_none() {
        Ok(None)
    } else {
        o.call_method0("__index__")?.extract().map(Some)
    }
}

fn entry(o: &Bound<'_, PyAny>) -> PyResult<Ix> {
    if o.is_none() {
        return Ok(Ix::NewAxis);
    }
    if o.is_instance_of::<PyEllipsis>() {
        return Ok(Ix::Ellipsis);
    }
    if o.is_instance_of::<PyBool>() {
        return Err(PyIndexError::new_err(
            "boolean indices are not supported; use where() or an integer array",
        ));
    }
    if o.is_instance_of::<PyInt>() {
        return Ok(Ix::Int(o.extract()?));
    }
    let np = o.py().import("numpy")?;
    if o.is_instance(&np.getattr("integer")?)? {
        return Ok(Ix::Int(o.call_method0("__index__")?.extract()?));
    }
    if let Ok(s) = o.cast::<PySlice>() {
        let step = opt_isize(&s.getattr("step")?)?.unwrap_or(1);
        if step == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "slice step cannot be zero",
            ));
        }
        return Ok(Ix::Slice(
            opt_isize(&s.getattr("start")?)?,
            opt_isize(&s.getattr("stop")?)?,
            step,
        ));
    }
    let a = if let Ok(a) = o.cast::<PyArr>() {
        a.get().arr()
    } else if o.is_instance_of::<PyList>() || o.hasattr("__array__")? {
        new_array(o, None)?
    } else {
        return Err(PyIndexError::new_err(format!(
            "cannot index with {}",
            o.get_type().name()?
        )));
    };
    if a.dtype() == DType::Bool {
        return Err(PyIndexError::new_err(
            "boolean mask indexing is not supported; use where()",
        ));
    }
    if !a.dtype().is_integer() {
        return Err(PyTypeError::new_err(format!(
            "index arrays must have an integer dtype, got {}",
            a.dtype()
        )));
    }
    Ok(Ix::Arr(a))
}

/// The index as a boolean mask, when it is one: a bool, or a ferrox array,
/// numpy array or list of bools (MLX's `a[mask] = v`).
pub fn bool_mask(index: &Bound<'_, PyAny>) -> PyResult<Option<Array>> {
    if index.is_instance_of::<PyBool>() {
        return Ok(Some(Array::scalar(index.extract::<bool>()?)));
    }
    let a = if let Ok(a) = index.cast::<PyArr>() {
        a.get().arr()
    } else if index.is_instance_of::<PyList>() || index.hasattr("__array__")? {
        match new_array(index, None) {
            Ok(a) => a,
            Err(_) => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    Ok((a.dtype() == DType::Bool).then_some(a))
}

/// Parses a Python index expression.
pub fn parse_index(index: &Bound<'_, PyAny>) -> PyResult<Vec<Ix>> {
    if let Ok(t) = index.cast::<PyTuple>() {
        t.iter().map(|o| entry(&o)).collect()
    } else {
        Ok(vec![entry(index)?])
    }
}

fn index_err(msg: String) -> Error {
    Error::new(ErrorKind::Index, "index", msg)
}

/// Replaces `...` (or the missing tail) by whole slices.
fn expand(ix: &[Ix], ndim: usize) -> ferrox::Result<Vec<Ix>> {
    let consumed = ix
        .iter()
        .filter(|i| !matches!(i, Ix::NewAxis | Ix::Ellipsis))
        .count();
    if consumed > ndim {
        return Err(index_err(format!(
            "too many indices ({consumed}) for an array with {ndim} dimensions"
        )));
    }
    if ix.iter().filter(|i| matches!(i, Ix::Ellipsis)).count() > 1 {
        return Err(index_err(
            "an index can only have a single ellipsis ('...')".into(),
        ));
    }
    let fill = ndim - consumed;
    let mut out = Vec::with_capacity(ix.len() + fill);
    let mut seen = false;
    for i in ix {
        if let Ix::Ellipsis = i {
            seen = true;
            out.extend(std::iter::repeat_n(Ix::Slice(None, None, 1), fill));
        } else {
            out.push(i.clone());
        }
    }
    if !seen {
        out.extend(std::iter::repeat_n(Ix::Slice(None, None, 1), fill));
    }
    Ok(out)
}

fn basic_arg(i: &Ix) -> SliceArg {
    match i {
        Ix::Int(k) => SliceArg::Index(*k),
        Ix::Slice(a, b, s) => SliceArg::range(*a, *b, *s),
        Ix::NewAxis => SliceArg::NewAxis,
        Ix::Ellipsis => SliceArg::Ellipsis,
        Ix::Arr(_) => SliceArg::FULL,
    }
}

/// `a[ix]`.
pub fn getitem(a: &Array, ix: &[Ix]) -> ferrox::Result<Array> {
    if !ix.iter().any(|i| matches!(i, Ix::Arr(_))) {
        let args: Vec<SliceArg> = ix.iter().map(basic_arg).collect();
        return a.index(&args);
    }
    let ix = expand(ix, a.ndim())?;
    // With index arrays present, integers are advanced indices too (they
    // broadcast with the arrays), as in numpy.
    let mut basic = Vec::with_capacity(ix.len());
    let mut arrays = Vec::new();
    let mut positions = Vec::new();
    for (p, i) in ix.iter().enumerate() {
        match i {
            Ix::Arr(x) => {
                arrays.push(x.clone());
                positions.push(p);
                basic.push(SliceArg::FULL);
            }
            Ix::Int(k) => {
                arrays.push(Array::scalar(*k as i64));
                positions.push(p);
                basic.push(SliceArg::FULL);
            }
            other => basic.push(basic_arg(other)),
        }
    }
    let b = a.index(&basic)?;
    // Bounds of the integer entries are checked here; arrays at evaluation.
    for (p, i) in ix.iter().enumerate() {
        if let Ix::Int(k) = i {
            let n = b.shape()[p] as isize;
            if *k < -n || *k >= n {
                return Err(index_err(format!(
                    "index {k} is out of bounds for axis {p} with size {n}"
                )));
            }
        }
    }
    let mut sizes = b.shape().to_vec();
    for &p in &positions {
        sizes[p] = 1;
    }
    let axes: Vec<isize> = positions.iter().map(|&p| p as isize).collect();
    let g = ferrox::gather(&b, &arrays, &axes, &sizes)?;
    let n_idx = g.ndim() - sizes.len();
    let mut out_shape: Vec<isize> = g.shape()[..n_idx].iter().map(|&d| d as isize).collect();
    for (d, &s) in b.shape().iter().enumerate() {
        if !positions.contains(&d) {
            out_shape.push(s as isize);
        }
    }
    let r = g.reshape(&out_shape)?;
    let adjacent = positions.windows(2).all(|w| w[1] == w[0] + 1);
    let p0 = positions[0];
    if adjacent && p0 > 0 {
        // The index dims go where the (adjacent) advanced indices were.
        let nd = r.ndim();
        let mut perm: Vec<usize> = (n_idx..n_idx + p0).collect();
        perm.extend(0..n_idx);
        perm.extend(n_idx + p0..nd);
        return r.transpose(Some(&perm));
    }
    Ok(r)
}

fn is_basic(ix: &[Ix]) -> bool {
    !ix.iter().any(|i| matches!(i, Ix::Arr(_)))
}

/// `a[ix] = v` as a new array.
pub fn setitem(a: &Array, ix: &[Ix], v: &Array) -> ferrox::Result<Array> {
    let v = v.astype(a.dtype())?;
    if is_basic(ix) {
        return basic_set(a, ix, &v);
    }
    update_at(a, ix, &v, AtOp::Set)
}

fn basic_set(a: &Array, ix: &[Ix], v: &Array) -> ferrox::Result<Array> {
    let view_shape = getitem(a, ix)?.shape().to_vec();
    let ix = expand(ix, a.ndim())?;
    let (mut start, mut stop, mut step, mut region) = (vec![], vec![], vec![], vec![]);
    let mut d = 0;
    for i in &ix {
        match i {
            Ix::NewAxis => {}
            Ix::Int(k) => {
                let n = a.shape()[d] as isize;
                if *k < -n || *k >= n {
                    return Err(index_err(format!(
                        "index {k} is out of bounds for axis {d} with size {n}"
                    )));
                }
                let k = if *k < 0 { k + n } else { *k };
                start.push(k);
                stop.push(k + 1);
                step.push(1);
                region.push(1);
                d += 1;
            }
            Ix::Slice(b, e, s) => {
                let n = a.shape()[d] as isize;
                let (b0, e0, len) = slice_indices(*b, *e, *s, n);
                start.push(b0);
                stop.push(e0);
                step.push(*s);
                region.push(len as isize);
                d += 1;
            }
            Ix::Ellipsis | Ix::Arr(_) => {
                return Err(ferrox::Error::new(
                    ferrox::ErrorKind::Runtime,
                    "__setitem__",
                    "internal error: a basic index still holds an ellipsis or an array",
                ))
            }
        }
    }
    let v = fit_update(v, &view_shape)?.reshape(&region)?;
    ferrox::slice_update(a, &v, &start, &stop, Some(&step))
}

/// Python's `slice.indices(n)`: normalised start, stop (with
/// `isize::MIN` meaning "before the first element" for negative steps)
/// and the length.
fn slice_indices(b: Option<isize>, e: Option<isize>, s: isize, n: isize) -> (isize, isize, usize) {
    let clamp = |x: isize, lo: isize, hi: isize| x.max(lo).min(hi);
    let norm = |x: isize| if x < 0 { x + n } else { x };
    let (start, stop) = if s > 0 {
        (
            b.map_or(0, |x| clamp(norm(x), 0, n)),
            e.map_or(n, |x| clamp(norm(x), 0, n)),
        )
    } else {
        (
            b.map_or(n - 1, |x| clamp(norm(x), -1, n - 1)),
            e.map_or(-1, |x| clamp(norm(x), -1, n - 1)),
        )
    };
    let len = if s > 0 {
        if stop > start {
            ((stop - start + s - 1) / s) as usize
        } else {
            0
        }
    } else if start > stop {
        ((start - stop + (-s) - 1) / (-s)) as usize
    } else {
        0
    };
    let stop = if s < 0 && stop < 0 { isize::MIN } else { stop };
    (start, stop, len)
}

/// The update applied by `a.at[idx]`.
#[derive(Clone, Copy)]
pub enum AtOp {
    Set,
    Add,
    Subtract,
    Multiply,
    Divide,
    Maximum,
    Minimum,
}

/// `v` broadcast to `shape` by numpy's assignment rule: leading size-1
/// axes beyond `shape`'s rank are dropped first (`a[0] = ones((1, n))`).
fn fit_update(v: &Array, shape: &[usize]) -> ferrox::Result<Array> {
    let extra = v.ndim().saturating_sub(shape.len());
    let drop: Vec<isize> = (0..extra)
        .take_while(|&d| v.shape()[d] == 1)
        .map(|d| d as isize)
        .collect();
    let v = if drop.is_empty() {
        v.clone()
    } else {
        ferrox::squeeze(v, Some(&drop))?
    };
    ferrox::broadcast_to(&v, shape)
}

/// A general indexed update: the flat positions `ix` selects (indexing an
/// iota with the same expression) receive `v`, repeated positions all
/// applying.
pub fn update_at(a: &Array, ix: &[Ix], v: &Array, op: AtOp) -> ferrox::Result<Array> {
    let n = a.size();
    let idx_dtype = if n <= i32::MAX as usize {
        DType::Int32
    } else {
        DType::Int64
    };
    let iota = ferrox::arange(0.0, n.max(1) as f64, 1.0, idx_dtype)?;
    let iota = if n == 0 {
        iota.index(&[SliceArg::range(Some(0), Some(0), 1)])?
    } else {
        iota
    };
    let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    let sel = getitem(&iota.reshape(&shape)?, ix)?;
    let v = fit_update(&v.astype(a.dtype())?, sel.shape())?.reshape(&[-1])?;
    let flat_idx = sel.reshape(&[-1])?;
    let at = a.reshape(&[-1])?.at(&flat_idx)?;
    let r = match op {
        AtOp::Set => at.set(v)?,
        AtOp::Add => at.add(v)?,
        AtOp::Subtract => at.subtract(v)?,
        AtOp::Multiply => at.multiply(v)?,
        AtOp::Divide => at.multiply(ferrox::reciprocal(&v)?)?,
        AtOp::Maximum => at.maximum(v)?,
        AtOp::Minimum => at.minimum(v)?,
    };
    r.reshape(&shape)
}
