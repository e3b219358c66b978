//! Arrays, vectors of arrays and string-keyed maps of arrays: creation from
//! C buffers, introspection, reading data back.

use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use ferrox::half;
use ferrox::sync::{lock, Mutex};
use ferrox::{Array, DType};

use crate::error::{ferrox_error, ferrox_status, guard, CError, CResult};
use crate::handle::{arg, check_slot, free_handle, impl_handle, put};

/// An element type: one of the `FERROX_BOOL` ... `FERROX_COMPLEX64` codes.
/// A plain integer, so an unknown code from C is an error, not UB.
pub type ferrox_dtype = i32;

/// bool (one byte, 0 or 1).
pub const FERROX_BOOL: ferrox_dtype = 0;
/// uint8_t.
pub const FERROX_UINT8: ferrox_dtype = 1;
/// uint16_t.
pub const FERROX_UINT16: ferrox_dtype = 2;
/// uint32_t.
pub const FERROX_UINT32: ferrox_dtype = 3;
/// uint64_t.
pub const FERROX_UINT64: ferrox_dtype = 4;
/// int8_t.
pub const FERROX_INT8: ferrox_dtype = 5;
/// int16_t.
pub const FERROX_INT16: ferrox_dtype = 6;
/// int32_t.
pub const FERROX_INT32: ferrox_dtype = 7;
/// int64_t.
pub const FERROX_INT64: ferrox_dtype = 8;
/// IEEE half precision (16 bits).
pub const FERROX_FLOAT16: ferrox_dtype = 9;
/// bfloat16 (16 bits).
pub const FERROX_BFLOAT16: ferrox_dtype = 10;
/// float.
pub const FERROX_FLOAT32: ferrox_dtype = 11;
/// double.
pub const FERROX_FLOAT64: ferrox_dtype = 12;
/// Two floats: real, imaginary.
pub const FERROX_COMPLEX64: ferrox_dtype = 13;

/// The [`DType`] of a C dtype code.
pub(crate) fn dtype_of(code: ferrox_dtype, op: &str) -> CResult<DType> {
    usize::try_from(code)
        .ok()
        .and_then(|i| DType::ALL.get(i).copied())
        .ok_or_else(|| CError::invalid(op, format!("unknown dtype code {code} (valid: 0..=13)")))
}

/// The C code of a [`DType`].
pub(crate) fn code_of(dtype: DType) -> ferrox_dtype {
    DType::ALL
        .iter()
        .position(|&d| d == dtype)
        .map_or(-1, |i| i as ferrox_dtype)
}

/// `n` elements at `p` as a slice; NULL is allowed when `n` is 0.
///
/// # Safety
/// When `n > 0` and `p` is not NULL, `p` points to `n` readable, initialised
/// `T`s that stay valid and unchanged for `'a`.
pub(crate) unsafe fn raw_slice<'a, T>(
    p: *const T,
    n: usize,
    op: &str,
    name: &str,
) -> CResult<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CError::null(op, name));
    }
    if !p.is_aligned() {
        return Err(CError::invalid(
            op,
            format!("`{name}` is not aligned for its element type"),
        ));
    }
    // SAFETY: non-null and aligned (checked above); the caller guarantees
    // `n` readable elements that live for 'a.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An optional string argument: NULL is `None`, else as [`raw_str`].
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn opt_str<'a>(
    p: *const c_char,
    op: &str,
    name: &str,
) -> CResult<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded from the caller.
    Ok(Some(unsafe { raw_str(p, op, name) }?))
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn raw_str<'a>(p: *const c_char, op: &str, name: &str) -> CResult<&'a str> {
    if p.is_null() {
        return Err(CError::null(op, name));
    }
    // SAFETY: non-null; the caller guarantees a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| CError::invalid(op, format!("`{name}` is not UTF-8")))
}

/// A C shape (`int32_t` dimensions) as sizes; a negative one is an error.
pub(crate) fn sizes(dims: &[i32], op: &str, name: &str) -> CResult<Vec<usize>> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                CError::invalid(
                    op,
                    format!("`{name}` has a negative dimension {d} in {dims:?}"),
                )
            })
        })
        .collect()
}

/// C axes as ferrox axes.
pub(crate) fn axes(dims: &[i32]) -> Vec<isize> {
    dims.iter().map(|&d| d as isize).collect()
}

/// An n-dimensional array (a lazy value: nothing is computed until it is
/// evaluated or read). Immutable: every op makes a new handle. Free it with
/// [`ferrox_array_free`], on any thread.
pub struct ferrox_array {
    magic: u64,
    pub(crate) array: Array,
    /// A row-contiguous copy made by [`ferrox_array_data`] for a strided
    /// value, so that the pointer it returns lives as long as the handle.
    contiguous: OnceLock<Array>,
}
impl_handle!(ferrox_array, 0xfe77_0000_0000_a77a);

impl ferrox_array {
    pub(crate) fn new(array: Array) -> ferrox_array {
        ferrox_array {
            magic: <Self as crate::handle::Handle>::MAGIC,
            array,
            contiguous: OnceLock::new(),
        }
    }
}

/// A growable list of arrays (mlx-c's `mlx_vector_array`): the arguments
/// and results of closures, compiled functions and transforms. Appending is
/// internally synchronised. Free it with [`ferrox_vector_array_free`].
pub struct ferrox_vector_array {
    magic: u64,
    items: Mutex<Vec<Array>>,
}
impl_handle!(ferrox_vector_array, 0xfe77_0000_0000_7ec7);

impl ferrox_vector_array {
    pub(crate) fn new(items: Vec<Array>) -> ferrox_vector_array {
        ferrox_vector_array {
            magic: <Self as crate::handle::Handle>::MAGIC,
            items: Mutex::new(items),
        }
    }
    /// A snapshot of the arrays.
    pub(crate) fn items(&self) -> Vec<Array> {
        lock(&self.items).clone()
    }
}

fn nbytes_of(shape: &[usize], dtype: DType, op: &str) -> CResult<usize> {
    shape
        .iter()
        .try_fold(dtype.size(), |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            CError::invalid(
                op,
                format!("shape {shape:?} of {dtype} overflows the address space"),
            )
        })
}

/// Builds an array of `shape` and `dtype` from row-major bytes.
pub(crate) fn from_bytes(bytes: &[u8], shape: &[usize], dtype: DType) -> ferrox::Result<Array> {
    let flat = Array::from_slice(bytes, &[bytes.len()])?;
    let typed = if dtype == DType::Bool {
        // Any non-zero byte is true (a bool must be 0 or 1 in memory).
        ferrox::not_equal(&flat, &Array::scalar(0u8))?
    } else {
        ferrox::view(&flat, dtype)?
    };
    typed.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())
}

/// A new array of `shape` (`ndim` dimensions) and `dtype`, holding a copy
/// of the row-major elements at `data` (`size * itemsize` bytes; `data`
/// may be NULL when that is 0). For bool, any non-zero byte is true.
///
/// # Safety
/// `data` points to the bytes described; `shape` to `ndim` int32s.
#[no_mangle]
pub unsafe extern "C" fn ferrox_array_new_data(
    res: Option<&mut Option<Box<ferrox_array>>>,
    data: *const c_void,
    shape: *const i32,
    ndim: usize,
    dtype: ferrox_dtype,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_new_data";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let dtype = dtype_of(dtype, OP)?;
        // SAFETY: the caller passes `ndim` dimensions at `shape`.
        let shape = sizes(unsafe { raw_slice(shape, ndim, OP, "shape") }?, OP, "shape")?;
        let n = nbytes_of(&shape, dtype, OP)?;
        // SAFETY: the caller passes `n` bytes at `data`; u8 needs no alignment.
        let bytes = unsafe { raw_slice(data.cast::<u8>(), n, OP, "data") }?;
        put(res, ferrox_array::new(from_bytes(bytes, &shape, dtype)?));
        Ok(())
    })
}

/// Called once with its payload when ferrox no longer reads a buffer (see
/// [`ferrox_array_new_data_managed`]); may run on any thread.
pub type ferrox_release_fn = Option<unsafe extern "C" fn(payload: *mut c_void)>;

/// Like [`ferrox_array_new_data`] for a buffer the caller lends, read in
/// place without copying: ferrox calls `release(payload)` exactly once (if
/// `release` is not NULL), on whichever thread drops the last array or
/// view reading `data` (possibly inside a later ferrox call or
/// `ferrox_array_free` on another thread). Until then the caller must
/// neither write nor free `data`.
///
/// Two cases copy instead and call `release` before this returns: `data`
/// not aligned to 8 bytes, and bool data (stored normalised to 0 and 1).
/// A failing call also calls `release` before it returns.
///
/// # Safety
/// As [`ferrox_array_new_data`]; `data` stays valid and unchanged until
/// `release` is called, and `release` may be called with `payload` on any
/// thread.
#[no_mangle]
pub unsafe extern "C" fn ferrox_array_new_data_managed(
    res: Option<&mut Option<Box<ferrox_array>>>,
    data: *const c_void,
    shape: *const i32,
    ndim: usize,
    dtype: ferrox_dtype,
    payload: *mut c_void,
    release: ferrox_release_fn,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_new_data_managed";
    // Owns the loan from here on: every early return drops it, releasing.
    let mut lent = Lent {
        data: data.cast::<u8>(),
        len: 0,
        payload,
        release,
    };
    guard(OP, err, move || {
        check_slot(&res, OP, "res")?;
        let dtype = dtype_of(dtype, OP)?;
        // SAFETY: the caller passes `ndim` dimensions at `shape`.
        let shape = sizes(unsafe { raw_slice(shape, ndim, OP, "shape") }?, OP, "shape")?;
        lent.len = nbytes_of(&shape, dtype, OP)?;
        if lent.data.is_null() && lent.len > 0 {
            return Err(CError::null(OP, "data"));
        }
        put(
            res,
            ferrox_array::new(Array::from_external(lent, &shape, dtype)?),
        );
        Ok(())
    })
}

/// A caller's buffer on loan to ferrox (see
/// [`ferrox_array_new_data_managed`]); dropping it returns the loan.
struct Lent {
    data: *const u8,
    len: usize,
    payload: *mut c_void,
    release: ferrox_release_fn,
}

// SAFETY: `Lent` only reads `data` (through `as_ref`) and calls `release`
// once, from `Drop`. The caller of ferrox_array_new_data_managed promises
// that the `len` bytes at `data` stay valid and unchanged until `release`
// runs, and that `release(payload)` may run on any thread; so reading the
// bytes from several threads at once, and dropping the loan on another
// thread than the one that made it, are both within that promise.
unsafe impl Send for Lent {}
// SAFETY: as above; shared access only ever reads the unchanging bytes.
unsafe impl Sync for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `data` is non-NULL here (checked before a non-zero `len`
        // is set) and the caller lends `len` readable bytes there until
        // `release` runs, which is after the last borrow of `self`.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(f) = self.release {
            // SAFETY: the caller handed us `f` and its payload to call once
            // when the buffer is no longer read; this drop runs once.
            unsafe { f(self.payload) }
        }
    }
}

fn new_scalar(
    op: &'static str,
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: Array,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard(op, err, || {
        check_slot(&res, op, "res")?;
        put(res, ferrox_array::new(value));
        Ok(())
    })
}

/// A 0-d bool array.
#[no_mangle]
pub extern "C" fn ferrox_array_new_bool(
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: bool,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    new_scalar("ferrox_array_new_bool", res, Array::scalar(value), err)
}

/// A 0-d int32 array.
#[no_mangle]
pub extern "C" fn ferrox_array_new_int32(
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: i32,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    new_scalar("ferrox_array_new_int32", res, Array::scalar(value), err)
}

/// A 0-d int64 array.
#[no_mangle]
pub extern "C" fn ferrox_array_new_int64(
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: i64,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    new_scalar("ferrox_array_new_int64", res, Array::scalar(value), err)
}

/// A 0-d float32 array.
#[no_mangle]
pub extern "C" fn ferrox_array_new_float32(
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: f32,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    new_scalar("ferrox_array_new_float32", res, Array::scalar(value), err)
}

/// A 0-d float64 array.
#[no_mangle]
pub extern "C" fn ferrox_array_new_float64(
    res: Option<&mut Option<Box<ferrox_array>>>,
    value: f64,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    new_scalar("ferrox_array_new_float64", res, Array::scalar(value), err)
}

/// A second handle to the same array (cheap: arrays are shared values).
/// Both handles must be freed.
#[no_mangle]
pub extern "C" fn ferrox_array_clone(
    res: Option<&mut Option<Box<ferrox_array>>>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_clone";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let a = arg(a, OP, "a")?.array.clone();
        put(res, ferrox_array::new(a));
        Ok(())
    })
}

/// Frees an array handle (on any thread; never blocks on pending work).
/// NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_array_free(a: Option<Box<ferrox_array>>) -> ferrox_status {
    free_handle("ferrox_array_free", a)
}

/// The number of dimensions of `a`; 0 if `a` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_array_ndim(a: Option<&ferrox_array>) -> usize {
    arg(a, "", "").map_or(0, |a| a.array.ndim())
}

/// The shape of `a`: `ferrox_array_ndim(a)` sizes owned by `a`, valid
/// until it is freed; NULL if `a` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_array_shape(a: Option<&ferrox_array>) -> *const usize {
    arg(a, "", "").map_or(std::ptr::null(), |a| a.array.shape().as_ptr())
}

/// The number of elements of `a`; 0 if `a` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_array_size(a: Option<&ferrox_array>) -> usize {
    arg(a, "", "").map_or(0, |a| a.array.size())
}

/// Bytes per element of `a`; 0 if `a` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_array_itemsize(a: Option<&ferrox_array>) -> usize {
    arg(a, "", "").map_or(0, |a| a.array.itemsize())
}

/// The bytes of `a`'s elements (size times itemsize); 0 if `a` is NULL or
/// not live.
#[no_mangle]
pub extern "C" fn ferrox_array_nbytes(a: Option<&ferrox_array>) -> usize {
    arg(a, "", "").map_or(0, |a| a.array.nbytes())
}

/// The dtype code of `a`; -1 if `a` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_array_dtype(a: Option<&ferrox_array>) -> ferrox_dtype {
    arg(a, "", "").map_or(-1, |a| code_of(a.array.dtype()))
}

/// Evaluates `a` (waits for its value). The value is computed once however
/// many threads ask.
#[no_mangle]
pub extern "C" fn ferrox_array_eval(
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_eval";
    guard(OP, err, || Ok(arg(a, OP, "a")?.array.eval()?))
}

/// Evaluates `a` and copies its elements, row-major, to `dst`, which has
/// room for exactly `nbytes` bytes; `nbytes` must equal
/// [`ferrox_array_nbytes`].
///
/// # Safety
/// `dst` points to `nbytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ferrox_array_copy_to(
    a: Option<&ferrox_array>,
    dst: *mut c_void,
    nbytes: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_copy_to";
    guard(OP, err, || {
        let a = &arg(a, OP, "a")?.array;
        if nbytes != a.nbytes() {
            return Err(CError::invalid(
                OP,
                format!(
                    "nbytes is {nbytes} but the {} array of shape {:?} holds {} bytes",
                    a.dtype(),
                    a.shape(),
                    a.nbytes()
                ),
            ));
        }
        if nbytes == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(CError::null(OP, "dst"));
        }
        ferrox::with_dtype!(a.dtype(), T => {
            let v = a.to_vec::<T>()?;
            // SAFETY: `v` holds exactly `nbytes` initialised bytes (size *
            // itemsize, checked above); the caller guarantees `nbytes`
            // writable bytes at `dst`, which cannot overlap our new Vec.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), dst.cast::<u8>(), nbytes) };
        });
        Ok(())
    })
}

/// Evaluates `a` and writes to `*out` a pointer to its row-major elements,
/// without copying when the value is already row-contiguous. The bytes are
/// read-only and stay valid until the handle `a` is freed.
#[no_mangle]
pub extern "C" fn ferrox_array_data(
    out: Option<&mut *const c_void>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_array_data";
    guard(OP, err, || {
        let out = out.ok_or_else(|| CError::null(OP, "out"))?;
        let h = arg(a, OP, "a")?;
        let mut arr = &h.array;
        let mut data = arr.data()?;
        if !data.is_contiguous(arr.shape()) {
            if h.contiguous.get().is_none() {
                let c = ferrox::contiguous(arr)?;
                c.eval()?;
                let _ = h.contiguous.set(c);
            }
            arr = h
                .contiguous
                .get()
                .ok_or_else(|| CError::invalid(OP, "no contiguous copy"))?;
            data = arr.data()?;
        }
        let start = data.offset * arr.itemsize();
        let bytes = data.storage.as_slice::<u8>();
        let ptr = bytes.get(start..).map_or(bytes.as_ptr(), |b| b.as_ptr());
        *out = ptr.cast();
        Ok(())
    })
}

fn read_item<T: ferrox::dtype::Element + ferrox::runtime::memory::Pod>(
    op: &'static str,
    out: Option<&mut T>,
    a: Option<&ferrox_array>,
    dtype: DType,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    guard(op, err, || {
        let out = out.ok_or_else(|| CError::null(op, "out"))?;
        let a = &arg(a, op, "a")?.array;
        *out = a.astype(dtype)?.item::<T>()?;
        Ok(())
    })
}

/// Evaluates a one-element array and writes its value, converted to bool.
#[no_mangle]
pub extern "C" fn ferrox_array_item_bool(
    out: Option<&mut bool>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    read_item("ferrox_array_item_bool", out, a, DType::Bool, err)
}

/// Evaluates a one-element array and writes its value, converted to int32.
#[no_mangle]
pub extern "C" fn ferrox_array_item_int32(
    out: Option<&mut i32>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    read_item("ferrox_array_item_int32", out, a, DType::Int32, err)
}

/// Evaluates a one-element array and writes its value, converted to int64.
#[no_mangle]
pub extern "C" fn ferrox_array_item_int64(
    out: Option<&mut i64>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    read_item("ferrox_array_item_int64", out, a, DType::Int64, err)
}

/// Evaluates a one-element array and writes its value, converted to float32.
#[no_mangle]
pub extern "C" fn ferrox_array_item_float32(
    out: Option<&mut f32>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    read_item("ferrox_array_item_float32", out, a, DType::Float32, err)
}

/// Evaluates a one-element array and writes its value, converted to float64.
#[no_mangle]
pub extern "C" fn ferrox_array_item_float64(
    out: Option<&mut f64>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    read_item("ferrox_array_item_float64", out, a, DType::Float64, err)
}

// ---- vectors ------------------------------------------------------------

/// A new, empty vector.
#[no_mangle]
pub extern "C" fn ferrox_vector_array_new(
    res: Option<&mut Option<Box<ferrox_vector_array>>>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vector_array_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        put(res, ferrox_vector_array::new(Vec::new()));
        Ok(())
    })
}

/// A new vector holding the `num` arrays at `arrays` (each handle stays
/// the caller's; the vector shares the arrays).
///
/// # Safety
/// `arrays` points to `num` handle pointers.
#[no_mangle]
pub unsafe extern "C" fn ferrox_vector_array_new_data(
    res: Option<&mut Option<Box<ferrox_vector_array>>>,
    arrays: *const Option<&ferrox_array>,
    num: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vector_array_new_data";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes `num` handle pointers at `arrays`.
        let hs = unsafe { raw_slice(arrays, num, OP, "arrays") }?;
        let items = hs
            .iter()
            .enumerate()
            .map(|(i, &h)| Ok(arg(h, OP, &format!("arrays[{i}]"))?.array.clone()))
            .collect::<CResult<Vec<_>>>()?;
        put(res, ferrox_vector_array::new(items));
        Ok(())
    })
}

/// Appends `a` to `vec` (the vector shares the array; `a` stays the
/// caller's to free).
#[no_mangle]
pub extern "C" fn ferrox_vector_array_append(
    vec: Option<&ferrox_vector_array>,
    a: Option<&ferrox_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vector_array_append";
    guard(OP, err, || {
        let v = arg(vec, OP, "vec")?;
        let a = arg(a, OP, "a")?.array.clone();
        lock(&v.items).push(a);
        Ok(())
    })
}

/// The number of arrays in `vec`; 0 if `vec` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_vector_array_size(vec: Option<&ferrox_vector_array>) -> usize {
    arg(vec, "", "").map_or(0, |v| lock(&v.items).len())
}

/// A new handle to the array at `index` of `vec`.
#[no_mangle]
pub extern "C" fn ferrox_vector_array_get(
    res: Option<&mut Option<Box<ferrox_array>>>,
    vec: Option<&ferrox_vector_array>,
    index: usize,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_vector_array_get";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let v = arg(vec, OP, "vec")?;
        let items = lock(&v.items);
        let a = items.get(index).cloned().ok_or_else(|| {
            CError::new(
                crate::error::FERROX_ERROR_INDEX,
                format!(
                    "{OP}: index {index} is out of range for {} arrays",
                    items.len()
                ),
            )
        })?;
        drop(items);
        put(res, ferrox_array::new(a));
        Ok(())
    })
}

/// Frees a vector (not the caller's array handles). NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_vector_array_free(vec: Option<Box<ferrox_vector_array>>) -> ferrox_status {
    free_handle("ferrox_vector_array_free", vec)
}

// ---- maps -----------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_codes_round_trip() {
        for d in DType::ALL {
            assert_eq!(dtype_of(code_of(d), "t").ok(), Some(d));
        }
        assert!(dtype_of(14, "t").is_err());
        assert!(dtype_of(-1, "t").is_err());
    }

    #[test]
    fn bytes_become_typed_arrays() -> ferrox::Result<()> {
        let v = [1.5f32, -2.0, 3.25, 0.0];
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        let a = from_bytes(&bytes, &[2, 2], DType::Float32)?;
        assert_eq!(a.shape(), &[2, 2]);
        assert_eq!(a.to_vec::<f32>()?, v);
        let b = from_bytes(&[0, 7, 1], &[3], DType::Bool)?;
        assert_eq!(b.to_vec::<bool>()?, [false, true, true]);
        let s = from_bytes(&7i64.to_ne_bytes(), &[], DType::Int64)?;
        assert_eq!(s.item::<i64>()?, 7);
        Ok(())
    }
}
