//! The ops, from one table.
//!
//! Each row of the `c_ops!` table names an op, its C signature *shape*
//! (which arrays and scalar parameters it takes) and the ferrox call. A
//! shape is written once, below: its C parameters, how they become Rust
//! values, and its declaration text for the header. So a new op is one
//! line, and every op of a shape checks its arguments, picks its stream,
//! reports errors and writes its result the same way.
//!
//! Every generated function is
//! `ferrox_status ferrox_<op>(<result> res, <shape params>, const ferrox_stream *s, ferrox_error **err)`:
//! the op is built on stream `s` (NULL: the default stream), the result
//! replaces `*res`, and a failure leaves `*res` alone and writes an error.
//!
//! cbindgen does not expand macros, so the header's op section is this
//! table's own declaration text ([`c_declarations`]), which the header test
//! passes to cbindgen as the header's trailer.

use ferrox::{Array, DType};

use crate::array::{
    axes, dtype_of, ferrox_array, ferrox_dtype, ferrox_vector_array, raw_slice, sizes,
};
use crate::error::{ferrox_error, ferrox_status, guard, CError, CResult};
use crate::handle::{arg, check_slot, put, Slot};
use crate::stream::{ferrox_stream, stream_of};

/// The `axis` value that means "no axis" (flattened, or not batched in
/// vmap): `INT32_MIN`.
pub const FERROX_AXIS_NONE: i32 = i32::MIN;

type FResult<T> = ferrox::Result<T>;

/// Runs `f` with `s` (or the default stream) as the stream for new ops.
fn on_stream<T>(s: Option<&ferrox_stream>, op: &str, f: impl FnOnce() -> FResult<T>) -> CResult<T> {
    let stream = stream_of(s, op)?;
    Ok(ferrox::with_stream(stream, f)?)
}

fn opt_axis(axis: i32) -> Option<isize> {
    (axis != FERROX_AXIS_NONE).then_some(axis as isize)
}

fn count(n: i32, op: &str, name: &str) -> CResult<usize> {
    usize::try_from(n)
        .map_err(|_| CError::invalid(op, format!("`{name}` must not be negative, got {n}")))
}

/// `p[..n]` as axes; NULL means "all axes" (`None`).
///
/// # Safety
/// `p` is NULL or points to `n` int32s.
unsafe fn opt_axes(p: *const i32, n: usize, op: &str, name: &str) -> CResult<Option<Vec<isize>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded from the caller.
    Ok(Some(axes(unsafe { raw_slice(p, n, op, name) }?)))
}

/// `p[..n]` as int32s (required: NULL only when `n` is 0).
///
/// # Safety
/// `p` is NULL or points to `n` int32s.
unsafe fn ints<'a>(p: *const i32, n: usize, op: &str, name: &str) -> CResult<&'a [i32]> {
    // SAFETY: forwarded from the caller.
    unsafe { raw_slice(p, n, op, name) }
}

fn array<'a>(h: Option<&'a ferrox_array>, op: &str, name: &str) -> CResult<&'a Array> {
    Ok(&arg(h, op, name)?.array)
}

/// The body every op of the linear-algebra, FFT, convolution and
/// quantization shapes shares: check the result slot, build the value on
/// stream `s` (NULL: the default), wrap it in its handle and store it.
fn respond<T, H: crate::handle::Handle>(
    op: &'static str,
    res: Slot<'_, H>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
    wrap: fn(T) -> H,
    build: impl FnOnce() -> CResult<T>,
) -> ferrox_status {
    guard(op, err, || {
        check_slot(&res, op, "res")?;
        let stream = stream_of(s, op)?;
        let out = ferrox::with_stream(stream, build)?;
        put(res, wrap(out));
        Ok(())
    })
}

/// An optional count: negative means "the op's default" (`None`).
fn opt_count(n: i32) -> Option<usize> {
    usize::try_from(n).ok()
}

/// `p[..n]` as sizes; NULL means "the op's default" (`None`).
///
/// # Safety
/// `p` is NULL or points to `n` int32s.
unsafe fn opt_sizes(p: *const i32, n: usize, op: &str, name: &str) -> CResult<Option<Vec<usize>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded from the caller.
    Ok(Some(sizes(
        unsafe { raw_slice(p, n, op, name) }?,
        op,
        name,
    )?))
}

/// A quantization mode argument: NULL is `"affine"`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn mode_of<'a>(p: *const std::ffi::c_char, op: &str) -> CResult<&'a str> {
    if p.is_null() {
        return Ok("affine");
    }
    // SAFETY: forwarded from the caller.
    unsafe { crate::array::raw_str(p, op, "mode") }
}

/// A vector of the present arrays of a fixed-size result.
fn present(items: impl IntoIterator<Item = Option<Array>>) -> Vec<Array> {
    items.into_iter().flatten().collect()
}

/// A description of one generated op, for the header and the tests.
#[derive(Debug, Clone, Copy)]
pub struct OpInfo {
    /// The C function's name (`ferrox_add`).
    pub name: &'static str,
    /// The signature shape (a row of the table below).
    pub shape: &'static str,
    /// The doc comment text.
    pub doc: &'static str,
    /// The C declaration (without the doc comment).
    pub decl: &'static str,
}

/// The declaration text of a shape: `ferrox_status NAME(<res>, <params>, const ferrox_stream *s, ferrox_error **err);`.
macro_rules! decl {
    ($name:ident, $res:literal, $params:literal) => {
        concat!(
            "ferrox_status ferrox_",
            stringify!($name),
            "(",
            $res,
            " **res, ",
            $params,
            ", const ferrox_stream *s, ferrox_error **err);"
        )
    };
}

macro_rules! c_ops {
    ($( $name:ident : $shape:ident => $f:expr ; )*) => {
        paste::paste! {
            $( c_ops!(@fn $shape, [<ferrox_ $name>], [<$name>], $f); )*
            /// Every op of the table.
            pub const OPS: &[OpInfo] = &[$(
                OpInfo {
                    name: stringify!([<ferrox_ $name>]),
                    shape: stringify!($shape),
                    doc: c_ops!(@doc $shape, [<$name>]),
                    decl: c_ops!(@decl $shape, [<$name>]),
                },
            )*];
        }
    };

    // ---- one array, a vector of results (factorisations) ---------------
    (@doc vec_a, $n:ident) => { concat!("`", stringify!($n), "(a)`: ferrox's `", stringify!($n), "`, its results written to a new vector in order.") };
    (@decl vec_a, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *a") };
    (@fn vec_a, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc vec_a, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, a: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || Ok(f(array(a, OP, "a")?)?))
        }
    };

    // ---- one array and a flag, a vector of results ----------------------
    (@doc vec_a_bool, $n:ident) => { concat!("`", stringify!($n), "(a, flag)`: ferrox's `", stringify!($n), "` (`flag`: `upper` for eigh, `compute_uv` for svd), its results written to a new vector in order.") };
    (@decl vec_a_bool, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *a, bool flag") };
    (@fn vec_a_bool, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc vec_a_bool, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, a: Option<&ferrox_array>, flag: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, bool) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || Ok(f(array(a, OP, "a")?, flag)?))
        }
    };

    // ---- one array and a flag (`upper`) ---------------------------------
    (@doc a_bool, $n:ident) => { concat!("`", stringify!($n), "(a, upper)`: ferrox's `", stringify!($n), "` (`upper`: use or return the upper triangle).") };
    (@decl a_bool, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, bool upper") };
    (@fn a_bool, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_bool, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, upper: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, bool) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, upper)?))
        }
    };

    // ---- two arrays and a flag (`upper`) --------------------------------
    (@doc ab_bool, $n:ident) => { concat!("`", stringify!($n), "(a, b, upper)`: ferrox's `", stringify!($n), "` (`upper`: `a` is upper triangular).") };
    (@decl ab_bool, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, bool upper") };
    (@fn ab_bool, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab_bool, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, upper: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, bool) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, upper)?))
        }
    };

    // ---- norms ----------------------------------------------------------
    (@doc norm, $n:ident) => { concat!("`", stringify!($n), "(a, ord, axes, keepdims)`: ferrox's `linalg::norm`; `ord` is NULL (the 2-norm, or Frobenius for matrices), \"fro\", \"nuc\" or a number (\"1\", \"-2\", \"inf\", \"-inf\", \"0.5\"); `axes` NULL means every axis.") };
    (@decl norm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const char *ord, const int32_t *axes, size_t axes_num, bool keepdims") };
    (@fn norm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc norm, $n)]
        ///
        /// # Safety
        /// `ord` is NULL or a NUL-terminated string; `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, ord: *const std::ffi::c_char, axes: *const i32, axes_num: usize, keepdims: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<&str>, Option<&[isize]>, bool) -> CResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                let ord = if ord.is_null() {
                    None
                } else {
                    // SAFETY: the caller passes a NUL-terminated string.
                    Some(unsafe { crate::array::raw_str(ord, OP, "ord") }?)
                };
                // SAFETY: the caller passes NULL or `axes_num` int32s.
                let ax = unsafe { opt_axes(axes, axes_num, OP, "axes") }?;
                f(array(a, OP, "a")?, ord, ax.as_deref(), keepdims)
            })
        }
    };

    // ---- a one-dimensional transform: a, n, axis -----------------------
    (@doc fft1, $n:ident) => { concat!("`", stringify!($n), "(a, n, axis)`: ferrox's `fft::", stringify!($n), "`; a negative `n` means the input's length along `axis`.") };
    (@decl fft1, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t n, int32_t axis") };
    (@fn fft1, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc fft1, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, n: i32, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<usize>, isize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, opt_count(n), axis as isize)?))
        }
    };

    // ---- an n-dimensional transform: a, sizes, axes --------------------
    (@doc fftn, $n:ident) => { concat!("`", stringify!($n), "(a, sizes, axes)`: ferrox's `fft::", stringify!($n), "`; NULL `sizes` keeps the input's lengths and NULL `axes` is the op's default.") };
    (@decl fftn, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *sizes, size_t sizes_num, const int32_t *axes, size_t axes_num") };
    (@fn fftn, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc fftn, $n)]
        ///
        /// # Safety
        /// `sizes` and `axes` are NULL or point to `sizes_num` and `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, sizes: *const i32, sizes_num: usize, axes: *const i32, axes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<&[usize]>, Option<&[isize]>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes NULL or the stated counts of int32s.
                let (sz, ax) = unsafe { (opt_sizes(sizes, sizes_num, OP, "sizes")?, opt_axes(axes, axes_num, OP, "axes")?) };
                Ok(f(array(a, OP, "a")?, sz.as_deref(), ax.as_deref())?)
            })
        }
    };

    // ---- a convolution: input, weight, per-dimension lists, groups ------
    (@doc conv, $n:ident) => { concat!("`", stringify!($n), "(input, weight, stride, padding, dilation, dims, groups)`: ferrox's `", stringify!($n), "` (channels last); `stride`, `padding` and `dilation` each hold `dims` entries (one per spatial dimension, or 1 for all; NULL when `dims` is 0 means the defaults 1, 0, 1).") };
    (@decl conv, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *input, const ferrox_array *weight, const int32_t *stride, const int32_t *padding, const int32_t *dilation, size_t dims, int32_t groups") };
    (@fn conv, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc conv, $n)]
        ///
        /// # Safety
        /// `stride`, `padding` and `dilation` each point to `dims` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, input: Option<&ferrox_array>, weight: Option<&ferrox_array>, stride: *const i32, padding: *const i32, dilation: *const i32, dims: usize, groups: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &[usize], &[usize], &[usize], usize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `dims` int32s in each list.
                let (st, pd, dl) = unsafe { (ints(stride, dims, OP, "stride")?, ints(padding, dims, OP, "padding")?, ints(dilation, dims, OP, "dilation")?) };
                let (st, pd, dl) = (sizes(st, OP, "stride")?, sizes(pd, OP, "padding")?, sizes(dl, OP, "dilation")?);
                let groups = count(groups, OP, "groups")?;
                Ok(f(array(input, OP, "input")?, array(weight, OP, "weight")?, &st, &pd, &dl, groups)?)
            })
        }
    };

    // ---- quantize: w, group_size, bits, mode ----------------------------
    (@doc quantize, $n:ident) => { concat!("`", stringify!($n), "(w, group_size, bits, mode)`: ferrox's `", stringify!($n), "`, written to a new vector `[w_q, scales, biases]` (no biases for modes without them); a negative `group_size` or `bits` is the mode's default, a NULL `mode` is \"affine\".") };
    (@decl quantize, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *w, int32_t group_size, int32_t bits, const char *mode") };
    (@fn quantize, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc quantize, $n)]
        ///
        /// # Safety
        /// `mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, w: Option<&ferrox_array>, group_size: i32, bits: i32, mode: *const std::ffi::c_char, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<usize>, Option<usize>, &str) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let mode = unsafe { mode_of(mode, OP) }?;
                Ok(f(array(w, OP, "w")?, opt_count(group_size), opt_count(bits), mode)?)
            })
        }
    };

    // ---- dequantize: w, scales, biases, group_size, bits, mode ----------
    (@doc dequantize, $n:ident) => { concat!("`", stringify!($n), "(w, scales, biases, group_size, bits, mode)`: ferrox's `", stringify!($n), "`; `biases` may be NULL (modes without them), negative sizes are the mode's defaults, a NULL `mode` is \"affine\".") };
    (@decl dequantize, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *w, const ferrox_array *scales, const ferrox_array *biases, int32_t group_size, int32_t bits, const char *mode") };
    (@fn dequantize, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc dequantize, $n)]
        ///
        /// # Safety
        /// `mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, w: Option<&ferrox_array>, scales: Option<&ferrox_array>, biases: Option<&ferrox_array>, group_size: i32, bits: i32, mode: *const std::ffi::c_char, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, Option<&Array>, Option<usize>, Option<usize>, &str) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let mode = unsafe { mode_of(mode, OP) }?;
                let biases = match biases { Some(b) => Some(array(Some(b), OP, "biases")?), None => None };
                Ok(f(array(w, OP, "w")?, array(scales, OP, "scales")?, biases, opt_count(group_size), opt_count(bits), mode)?)
            })
        }
    };

    // ---- quantized_matmul: x, w, scales, biases, transpose, sizes, mode --
    (@doc qmm, $n:ident) => { concat!("`", stringify!($n), "(x, w, scales, biases, transpose, group_size, bits, mode)`: ferrox's `", stringify!($n), "` (`x @ dequantize(w).T` when `transpose`); `biases` may be NULL, negative sizes are the mode's defaults, a NULL `mode` is \"affine\".") };
    (@decl qmm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *x, const ferrox_array *w, const ferrox_array *scales, const ferrox_array *biases, bool transpose, int32_t group_size, int32_t bits, const char *mode") };
    (@fn qmm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc qmm, $n)]
        ///
        /// # Safety
        /// `mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, x: Option<&ferrox_array>, w: Option<&ferrox_array>, scales: Option<&ferrox_array>, biases: Option<&ferrox_array>, transpose: bool, group_size: i32, bits: i32, mode: *const std::ffi::c_char, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &Array, Option<&Array>, bool, Option<usize>, Option<usize>, &str) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let mode = unsafe { mode_of(mode, OP) }?;
                let biases = match biases { Some(b) => Some(array(Some(b), OP, "biases")?), None => None };
                Ok(f(array(x, OP, "x")?, array(w, OP, "w")?, array(scales, OP, "scales")?, biases, transpose, opt_count(group_size), opt_count(bits), mode)?)
            })
        }
    };

    // ---- one array in --------------------------------------------------
    (@doc a, $n:ident) => { concat!("`", stringify!($n), "(a)`: ferrox's `", stringify!($n), "`.") };
    (@decl a, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a") };
    (@fn a, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a))?));
                Ok(())
            })
        }
    };

    // ---- two arrays in -------------------------------------------------
    (@doc ab, $n:ident) => { concat!("`", stringify!($n), "(a, b)` (broadcasting): ferrox's `", stringify!($n), "`.") };
    (@decl ab, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b") };
    (@fn ab, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let (a, b) = (array(a, OP, "a")?, array(b, OP, "b")?);
                let f: fn(&Array, &Array) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, b))?));
                Ok(())
            })
        }
    };

    // ---- three arrays in -----------------------------------------------
    (@doc abc, $n:ident) => { concat!("`", stringify!($n), "(a, b, c)` (broadcasting): ferrox's `", stringify!($n), "`.") };
    (@decl abc, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, const ferrox_array *c") };
    (@fn abc, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc abc, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, c: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let (a, b, c) = (array(a, OP, "a")?, array(b, OP, "b")?, array(c, OP, "c")?);
                let f: fn(&Array, &Array, &Array) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, b, c))?));
                Ok(())
            })
        }
    };

    // ---- one array and an int ------------------------------------------
    (@doc a_int, $n:ident) => { concat!("`", stringify!($n), "(a, k)`: ferrox's `", stringify!($n), "`.") };
    (@decl a_int, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t k") };
    (@fn a_int, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_int, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, k: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, i32) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, k))?));
                Ok(())
            })
        }
    };

    // ---- one array and a dtype -----------------------------------------
    (@doc a_dtype, $n:ident) => { concat!("`", stringify!($n), "(a, dtype)`: ferrox's `", stringify!($n), "`.") };
    (@decl a_dtype, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, ferrox_dtype dtype") };
    (@fn a_dtype, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_dtype, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let dtype = dtype_of(dtype, OP)?;
                let f: fn(&Array, DType) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, dtype))?));
                Ok(())
            })
        }
    };

    // ---- reductions over axes (NULL: all axes) -------------------------
    (@doc axes_keep, $n:ident) => { concat!("`", stringify!($n), "(a, axes, keepdims)`: ferrox's `", stringify!($n), "`; `axes` NULL reduces over every axis.") };
    (@decl axes_keep, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *axes, size_t axes_num, bool keepdims") };
    (@fn axes_keep, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axes_keep, $n)]
        ///
        /// # Safety
        /// `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axes: *const i32, axes_num: usize, keepdims: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes NULL or `axes_num` int32s.
                let axes = unsafe { opt_axes(axes, axes_num, OP, "axes") }?;
                let f: fn(&Array, Option<&[isize]>, bool) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, axes.as_deref(), keepdims))?));
                Ok(())
            })
        }
    };

    // ---- variance-like: axes, keepdims, ddof ---------------------------
    (@doc axes_keep_ddof, $n:ident) => { concat!("`", stringify!($n), "(a, axes, keepdims, ddof)`: ferrox's `", stringify!($n), "`; `axes` NULL reduces over every axis.") };
    (@decl axes_keep_ddof, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *axes, size_t axes_num, bool keepdims, int32_t ddof") };
    (@fn axes_keep_ddof, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axes_keep_ddof, $n)]
        ///
        /// # Safety
        /// `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axes: *const i32, axes_num: usize, keepdims: bool, ddof: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes NULL or `axes_num` int32s.
                let axes = unsafe { opt_axes(axes, axes_num, OP, "axes") }?;
                let f: fn(&Array, Option<&[isize]>, bool, i32) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, axes.as_deref(), keepdims, ddof))?));
                Ok(())
            })
        }
    };

    // ---- softmax-like: axes (NULL: all), precise -----------------------
    (@doc axes_precise, $n:ident) => { concat!("`", stringify!($n), "(a, axes, precise)`: ferrox's `", stringify!($n), "`; `axes` NULL means every axis.") };
    (@decl axes_precise, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *axes, size_t axes_num, bool precise") };
    (@fn axes_precise, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axes_precise, $n)]
        ///
        /// # Safety
        /// `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axes: *const i32, axes_num: usize, precise: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes NULL or `axes_num` int32s.
                let axes = unsafe { opt_axes(axes, axes_num, OP, "axes") }?;
                let f: fn(&Array, Option<&[isize]>, bool) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, axes.as_deref(), precise))?));
                Ok(())
            })
        }
    };

    // ---- optional axes (NULL: all / default) ---------------------------
    (@doc axes, $n:ident) => { concat!("`", stringify!($n), "(a, axes)`: ferrox's `", stringify!($n), "`; `axes` NULL is the op's default (every axis, or reversed order for transpose).") };
    (@decl axes, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *axes, size_t axes_num") };
    (@fn axes, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axes, $n)]
        ///
        /// # Safety
        /// `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axes: *const i32, axes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes NULL or `axes_num` int32s.
                let axes = unsafe { opt_axes(axes, axes_num, OP, "axes") }?;
                let f: fn(&Array, Option<&[isize]>) -> CResult<Array> = $f;
                let stream = stream_of(s, OP)?;
                put(res, ferrox_array::new(ferrox::with_stream(stream, || f(a, axes.as_deref()))?));
                Ok(())
            })
        }
    };

    // ---- a list of ints (shape, axes, reps; required) -------------------
    (@doc ints, $n:ident) => { concat!("`", stringify!($n), "(a, shape)`: ferrox's `", stringify!($n), "` (`shape` holds its list argument: a shape, axes or repetitions).") };
    (@decl ints, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *shape, size_t shape_num") };
    (@fn ints, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ints, $n)]
        ///
        /// # Safety
        /// `shape` points to `shape_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, shape: *const i32, shape_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes `shape_num` int32s.
                let shape = unsafe { ints(shape, shape_num, OP, "shape") }?;
                let f: fn(&Array, &[i32]) -> CResult<Array> = $f;
                let out = {
                    let stream = stream_of(s, OP)?;
                    ferrox::with_stream(stream, || f(a, shape))?
                };
                put(res, ferrox_array::new(out));
                Ok(())
            })
        }
    };

    // ---- one optional axis (FERROX_AXIS_NONE: flattened) ---------------
    (@doc axis, $n:ident) => { concat!("`", stringify!($n), "(a, axis)`: ferrox's `", stringify!($n), "`; `FERROX_AXIS_NONE` works on the flattened array.") };
    (@decl axis, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t axis") };
    (@fn axis, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axis, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, Option<isize>) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, opt_axis(axis)))?));
                Ok(())
            })
        }
    };

    // ---- arg reductions: axis (NONE: flattened), keepdims --------------
    (@doc axis_keep, $n:ident) => { concat!("`", stringify!($n), "(a, axis, keepdims)`: ferrox's `", stringify!($n), "`; `FERROX_AXIS_NONE` works on the flattened array.") };
    (@decl axis_keep, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t axis, bool keepdims") };
    (@fn axis_keep, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axis_keep, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axis: i32, keepdims: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, Option<isize>, bool) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, opt_axis(axis), keepdims))?));
                Ok(())
            })
        }
    };

    // ---- scans: axis (NONE: flattened), reverse, inclusive -------------
    (@doc scan, $n:ident) => { concat!("`", stringify!($n), "(a, axis, reverse, inclusive)`: ferrox's `", stringify!($n), "`.") };
    (@decl scan, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t axis, bool reverse, bool inclusive") };
    (@fn scan, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc scan, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axis: i32, reverse: bool, inclusive: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, Option<isize>, bool, bool) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, opt_axis(axis), reverse, inclusive))?));
                Ok(())
            })
        }
    };

    // ---- two axes ------------------------------------------------------
    (@doc axis2, $n:ident) => { concat!("`", stringify!($n), "(a, axis1, axis2)`: ferrox's `", stringify!($n), "`.") };
    (@decl axis2, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t axis1, int32_t axis2") };
    (@fn axis2, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axis2, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axis1: i32, axis2: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, isize, isize) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, axis1 as isize, axis2 as isize))?));
                Ok(())
            })
        }
    };

    // ---- a count and an optional axis (topk, partition, repeat) --------
    (@doc int_axis, $n:ident) => { concat!("`", stringify!($n), "(a, n, axis)`: ferrox's `", stringify!($n), "` (`n`: its count or index; `FERROX_AXIS_NONE`: flattened).") };
    (@decl int_axis, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t n, int32_t axis") };
    (@fn int_axis, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc int_axis, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, n: i32, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let f: fn(&Array, i32, Option<isize>) -> CResult<Array> = $f;
                let stream = stream_of(s, OP)?;
                let out = ferrox::with_stream(stream, || f(a, n, opt_axis(axis)))?;
                put(res, ferrox_array::new(out));
                Ok(())
            })
        }
    };

    // ---- an array and indices along an optional axis (take) -----------
    (@doc ab_axis, $n:ident) => { concat!("`", stringify!($n), "(a, indices, axis)`: ferrox's `", stringify!($n), "`; `FERROX_AXIS_NONE` indexes the flattened array.") };
    (@decl ab_axis, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *indices, int32_t axis") };
    (@fn ab_axis, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab_axis, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, indices: Option<&ferrox_array>, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let (a, i) = (array(a, OP, "a")?, array(indices, OP, "indices")?);
                let f: fn(&Array, &Array, Option<isize>) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, i, opt_axis(axis)))?));
                Ok(())
            })
        }
    };

    // ---- closeness: a, b, rtol, atol, equal_nan -----------------------
    (@doc close, $n:ident) => { concat!("`", stringify!($n), "(a, b, rtol, atol, equal_nan)`: ferrox's `", stringify!($n), "`.") };
    (@decl close, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, double rtol, double atol, bool equal_nan") };
    (@fn close, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc close, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, rtol: f64, atol: f64, equal_nan: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let (a, b) = (array(a, OP, "a")?, array(b, OP, "b")?);
                let f: fn(&Array, &Array, f64, f64, bool) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, b, rtol, atol, equal_nan))?));
                Ok(())
            })
        }
    };

    // ---- clip: optional bounds -----------------------------------------
    (@doc clip, $n:ident) => { concat!("`", stringify!($n), "(a, a_min, a_max)`: ferrox's `", stringify!($n), "`; a NULL bound is no bound.") };
    (@decl clip, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *a_min, const ferrox_array *a_max") };
    (@fn clip, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc clip, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, a_min: Option<&ferrox_array>, a_max: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let lo = a_min.map(|h| array(Some(h), OP, "a_min")).transpose()?;
                let hi = a_max.map(|h| array(Some(h), OP, "a_max")).transpose()?;
                let f: fn(&Array, Option<&Array>, Option<&Array>) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, lo, hi))?));
                Ok(())
            })
        }
    };

    // ---- addmm: c, a, b, alpha, beta -----------------------------------
    (@doc addmm, $n:ident) => { concat!("`", stringify!($n), "(c, a, b, alpha, beta)` = alpha * (a @ b) + beta * c: ferrox's `", stringify!($n), "`.") };
    (@decl addmm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *c, const ferrox_array *a, const ferrox_array *b, float alpha, float beta") };
    (@fn addmm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc addmm, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, c: Option<&ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, alpha: f32, beta: f32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let (c, a, b) = (array(c, OP, "c")?, array(a, OP, "a")?, array(b, OP, "b")?);
                let f: fn(&Array, &Array, &Array, f32, f32) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(c, a, b, alpha, beta))?));
                Ok(())
            })
        }
    };

    // ---- slice: start, stop, strides -----------------------------------
    (@doc slice, $n:ident) => { concat!("`", stringify!($n), "(a, start, stop, strides)`: ferrox's `", stringify!($n), "`, one entry per dimension.") };
    (@decl slice, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *start, size_t start_num, const int32_t *stop, size_t stop_num, const int32_t *strides, size_t strides_num") };
    (@fn slice, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc slice, $n)]
        ///
        /// # Safety
        /// Each list points to its `_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, start: *const i32, start_num: usize, stop: *const i32, stop_num: usize, strides: *const i32, strides_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes each list with its length.
                let (lo, hi, st) = unsafe {
                    (ints(start, start_num, OP, "start")?, ints(stop, stop_num, OP, "stop")?, ints(strides, strides_num, OP, "strides")?)
                };
                let (lo, hi, st) = (axes(lo), axes(hi), axes(st));
                let f: fn(&Array, &[isize], &[isize], &[isize]) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(a, &lo, &hi, &st))?));
                Ok(())
            })
        }
    };

    // ---- a vector of arrays and an axis (concatenate, stack) ----------
    (@doc arrays_axis, $n:ident) => { concat!("`", stringify!($n), "(arrays, axis)`: ferrox's `", stringify!($n), "`.") };
    (@decl arrays_axis, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_vector_array *arrays, int32_t axis") };
    (@fn arrays_axis, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc arrays_axis, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, arrays: Option<&ferrox_vector_array>, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let xs = arg(arrays, OP, "arrays")?.items();
                let f: fn(&[Array], isize) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(&xs, axis as isize))?));
                Ok(())
            })
        }
    };

    // ---- split into a vector -------------------------------------------
    (@doc split, $n:ident) => { concat!("`", stringify!($n), "(a, num, axis)`: ferrox's `", stringify!($n), "` into `num` equal parts, written to a new vector.") };
    (@decl split, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *a, int32_t num, int32_t axis") };
    (@fn split, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc split, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, a: Option<&ferrox_array>, num: i32, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let a = array(a, OP, "a")?;
                let num = count(num, OP, "num")?;
                let f: fn(&Array, usize, isize) -> FResult<Vec<Array>> = $f;
                put(res, ferrox_vector_array::new(on_stream(s, OP, || f(a, num, axis as isize))?));
                Ok(())
            })
        }
    };

    // ---- creation from a shape and a dtype -----------------------------
    (@doc new_shape, $n:ident) => { concat!("`", stringify!($n), "(shape, dtype)`: ferrox's `", stringify!($n), "`.") };
    (@decl new_shape, $n:ident) => { decl!($n, "ferrox_array", "const int32_t *shape, size_t shape_num, ferrox_dtype dtype") };
    (@fn new_shape, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_shape, $n)]
        ///
        /// # Safety
        /// `shape` points to `shape_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, shape: *const i32, shape_num: usize, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                // SAFETY: the caller passes `shape_num` int32s.
                let shape = sizes(unsafe { ints(shape, shape_num, OP, "shape") }?, OP, "shape")?;
                let dtype = dtype_of(dtype, OP)?;
                let f: fn(&[usize], DType) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(&shape, dtype))?));
                Ok(())
            })
        }
    };

    // ---- creation from a shape, a value and a dtype --------------------
    (@doc new_full, $n:ident) => { concat!("`", stringify!($n), "(shape, value, dtype)`: ferrox's `", stringify!($n), "`.") };
    (@decl new_full, $n:ident) => { decl!($n, "ferrox_array", "const int32_t *shape, size_t shape_num, double value, ferrox_dtype dtype") };
    (@fn new_full, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_full, $n)]
        ///
        /// # Safety
        /// `shape` points to `shape_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, shape: *const i32, shape_num: usize, value: f64, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                // SAFETY: the caller passes `shape_num` int32s.
                let shape = sizes(unsafe { ints(shape, shape_num, OP, "shape") }?, OP, "shape")?;
                let dtype = dtype_of(dtype, OP)?;
                let f: fn(&[usize], f64, DType) -> FResult<Array> = $f;
                put(res, ferrox_array::new(on_stream(s, OP, || f(&shape, value, dtype))?));
                Ok(())
            })
        }
    };

    // ---- ranges: start, stop, step/num, dtype --------------------------
    (@doc range, $n:ident) => { concat!("`", stringify!($n), "(start, stop, step, dtype)`: ferrox's `", stringify!($n), "` (for linspace `step` is the count).") };
    (@decl range, $n:ident) => { decl!($n, "ferrox_array", "double start, double stop, double step, ferrox_dtype dtype") };
    (@fn range, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc range, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, start: f64, stop: f64, step: f64, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            guard(OP, err, || {
                check_slot(&res, OP, "res")?;
                let dtype = dtype_of(dtype, OP)?;
                let f: fn(f64, f64, f64, DType) -> CResult<Array> = $f;
                let stream = stream_of(s, OP)?;
                put(res, ferrox_array::new(ferrox::with_stream(stream, || f(start, stop, step, dtype))?));
                Ok(())
            })
        }
    };
}

fn usizes(v: &[i32], op: &str) -> CResult<Vec<usize>> {
    sizes(v, op, "shape")
}

// The table: op name, signature shape, the ferrox call.
c_ops! {
    // Unary elementwise.
    abs: a => ferrox::abs;
    arccos: a => ferrox::arccos;
    arccosh: a => ferrox::arccosh;
    arcsin: a => ferrox::arcsin;
    arcsinh: a => ferrox::arcsinh;
    arctan: a => ferrox::arctan;
    arctanh: a => ferrox::arctanh;
    bitwise_invert: a => ferrox::bitwise_invert;
    ceil: a => ferrox::ceil;
    conjugate: a => ferrox::conjugate;
    cos: a => ferrox::cos;
    cosh: a => ferrox::cosh;
    degrees: a => ferrox::degrees;
    erf: a => ferrox::erf;
    erfinv: a => ferrox::erfinv;
    exp: a => ferrox::exp;
    expm1: a => ferrox::expm1;
    floor: a => ferrox::floor;
    imag: a => ferrox::imag;
    isfinite: a => ferrox::isfinite;
    isinf: a => ferrox::isinf;
    isnan: a => ferrox::isnan;
    isneginf: a => ferrox::isneginf;
    isposinf: a => ferrox::isposinf;
    log: a => ferrox::log;
    log1p: a => ferrox::log1p;
    log2: a => ferrox::log2;
    log10: a => ferrox::log10;
    logical_not: a => ferrox::logical_not;
    negative: a => ferrox::negative;
    radians: a => ferrox::radians;
    real: a => ferrox::real;
    reciprocal: a => ferrox::reciprocal;
    rsqrt: a => ferrox::rsqrt;
    sigmoid: a => ferrox::sigmoid;
    sign: a => ferrox::sign;
    sin: a => ferrox::sin;
    sinh: a => ferrox::sinh;
    sqrt: a => ferrox::sqrt;
    square: a => ferrox::square;
    tan: a => ferrox::tan;
    tanh: a => ferrox::tanh;
    trunc: a => ferrox::trunc;
    stop_gradient: a => ferrox::stop_gradient;
    zeros_like: a => ferrox::zeros_like;
    ones_like: a => ferrox::ones_like;
    atleast_1d: a => ferrox::atleast_1d;
    atleast_2d: a => ferrox::atleast_2d;
    atleast_3d: a => ferrox::atleast_3d;
    matrix_transpose: a => ferrox::matrix_transpose;
    round: a_int => |a, decimals| ferrox::round(a, decimals);
    // Binary elementwise and comparisons.
    add: ab => ferrox::add;
    subtract: ab => ferrox::subtract;
    multiply: ab => ferrox::multiply;
    divide: ab => ferrox::divide;
    floor_divide: ab => ferrox::floor_divide;
    remainder: ab => ferrox::remainder;
    power: ab => ferrox::power;
    maximum: ab => ferrox::maximum;
    minimum: ab => ferrox::minimum;
    arctan2: ab => ferrox::arctan2;
    logaddexp: ab => ferrox::logaddexp;
    equal: ab => ferrox::equal;
    not_equal: ab => ferrox::not_equal;
    greater: ab => ferrox::greater;
    greater_equal: ab => ferrox::greater_equal;
    less: ab => ferrox::less;
    less_equal: ab => ferrox::less_equal;
    logical_and: ab => ferrox::logical_and;
    logical_or: ab => ferrox::logical_or;
    logical_xor: ab => ferrox::logical_xor;
    bitwise_and: ab => ferrox::bitwise_and;
    bitwise_or: ab => ferrox::bitwise_or;
    bitwise_xor: ab => ferrox::bitwise_xor;
    left_shift: ab => ferrox::left_shift;
    right_shift: ab => ferrox::right_shift;
    matmul: ab => ferrox::matmul;
    inner: ab => ferrox::inner;
    outer: ab => ferrox::outer;
    kron: ab => ferrox::kron;
    isclose: close => ferrox::isclose;
    allclose: close => ferrox::allclose;
    // Selection.
    r#where: abc => ferrox::r#where;
    clip: clip => ferrox::clip;
    addmm: addmm => ferrox::addmm;
    // Reductions.
    sum: axes_keep => ferrox::sum;
    prod: axes_keep => ferrox::prod;
    mean: axes_keep => ferrox::mean;
    max: axes_keep => ferrox::max;
    min: axes_keep => ferrox::min;
    all: axes_keep => ferrox::all;
    any: axes_keep => ferrox::any;
    logsumexp: axes_keep => ferrox::logsumexp;
    median: axes_keep => ferrox::median;
    count_nonzero: axes_keep => ferrox::count_nonzero;
    var: axes_keep_ddof => ferrox::var;
    std: axes_keep_ddof => ferrox::std;
    argmax: axis_keep => ferrox::argmax;
    argmin: axis_keep => ferrox::argmin;
    softmax: axes_precise => ferrox::softmax;
    // Scans and sorting.
    cumsum: scan => ferrox::cumsum;
    cumprod: scan => ferrox::cumprod;
    cummax: scan => ferrox::cummax;
    cummin: scan => ferrox::cummin;
    logcumsumexp: scan => ferrox::logcumsumexp;
    sort: axis => ferrox::sort;
    argsort: axis => ferrox::argsort;
    topk: int_axis => |a, k, axis| Ok(ferrox::topk(a, count(k, "ferrox_topk", "n")?, axis)?);
    partition: int_axis => |a, kth, axis| Ok(ferrox::partition(a, kth as isize, axis)?);
    argpartition: int_axis => |a, kth, axis| Ok(ferrox::argpartition(a, kth as isize, axis)?);
    repeat: int_axis => |a, n, axis| Ok(ferrox::repeat(a, count(n, "ferrox_repeat", "n")?, axis)?);
    // Shapes and views.
    reshape: ints => |a, shape| Ok(ferrox::reshape(a, &axes(shape))?);
    broadcast_to: ints => |a, shape| Ok(ferrox::broadcast_to(a, &usizes(shape, "ferrox_broadcast_to")?)?);
    expand_dims: ints => |a, ax| Ok(ferrox::expand_dims(a, &axes(ax))?);
    tile: ints => |a, reps| Ok(ferrox::tile(a, &usizes(reps, "ferrox_tile")?)?);
    squeeze: axes => |a, ax| Ok(ferrox::squeeze(a, ax)?);
    flip: axes => |a, ax| Ok(ferrox::flip(a, ax)?);
    transpose: axes => |a, ax| {
        let Some(ax) = ax else { return Ok(ferrox::transpose(a, None)?) };
        let n = a.ndim() as isize;
        let perm = ax
            .iter()
            .map(|&i| usize::try_from(if i < 0 { i + n } else { i }))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| CError::new(crate::error::FERROX_ERROR_AXIS, format!("ferrox_transpose: axes {ax:?} are out of range for {n} dimensions")))?;
        Ok(ferrox::transpose(a, Some(&perm))?)
    };
    swapaxes: axis2 => ferrox::swapaxes;
    moveaxis: axis2 => ferrox::moveaxis;
    flatten: axis2 => ferrox::flatten;
    tril: a_int => |a, k| ferrox::tril(a, k as isize);
    triu: a_int => |a, k| ferrox::triu(a, k as isize);
    diag: a_int => |a, k| ferrox::diag(a, k as isize);
    slice: slice => ferrox::slice;
    concatenate: arrays_axis => ferrox::concatenate;
    stack: arrays_axis => ferrox::stack;
    split: split => |a, n, axis| ferrox::split(a, n, axis);
    take: ab_axis => ferrox::take;
    take_along_axis: ab_axis => ferrox::take_along_axis;
    // Linear algebra (`ferrox::linalg`).
    linalg_inv: a => ferrox::linalg::inv;
    linalg_pinv: a => ferrox::linalg::pinv;
    linalg_det: a => ferrox::linalg::det;
    linalg_eigvals: a => ferrox::linalg::eigvals;
    linalg_solve: ab => ferrox::linalg::solve;
    linalg_cross: ab_axis => |a, b, axis| ferrox::linalg::cross(a, b, axis.unwrap_or(-1));
    linalg_cholesky: a_bool => ferrox::linalg::cholesky;
    linalg_cholesky_inv: a_bool => ferrox::linalg::cholesky_inv;
    linalg_tri_inv: a_bool => ferrox::linalg::tri_inv;
    linalg_eigvalsh: a_bool => ferrox::linalg::eigvalsh;
    linalg_solve_triangular: ab_bool => ferrox::linalg::solve_triangular;
    linalg_qr: vec_a => |a| { let (q, r) = ferrox::linalg::qr(a)?; Ok(vec![q, r]) };
    linalg_eig: vec_a => |a| { let (w, v) = ferrox::linalg::eig(a)?; Ok(vec![w, v]) };
    linalg_slogdet: vec_a => |a| { let (sign, logabs) = ferrox::linalg::slogdet(a)?; Ok(vec![sign, logabs]) };
    linalg_lu: vec_a => |a| { let (p, l, u) = ferrox::linalg::lu(a)?; Ok(vec![p, l, u]) };
    linalg_lu_factor: vec_a => |a| { let (lu, pivots) = ferrox::linalg::lu_factor(a)?; Ok(vec![lu, pivots]) };
    linalg_svd: vec_a_bool => ferrox::linalg::svd;
    linalg_eigh: vec_a_bool => |a, upper| { let (w, v) = ferrox::linalg::eigh(a, upper)?; Ok(vec![w, v]) };
    linalg_norm: norm => |a, ord, axes, keepdims| Ok(ferrox::linalg::norm(a, norm_ord(ord)?, axes, keepdims)?);
    // FFTs (`ferrox::fft`).
    fft_fft: fft1 => ferrox::fft::fft;
    fft_ifft: fft1 => ferrox::fft::ifft;
    fft_rfft: fft1 => ferrox::fft::rfft;
    fft_irfft: fft1 => ferrox::fft::irfft;
    fft_fft2: fftn => ferrox::fft::fft2;
    fft_ifft2: fftn => ferrox::fft::ifft2;
    fft_rfft2: fftn => ferrox::fft::rfft2;
    fft_irfft2: fftn => ferrox::fft::irfft2;
    fft_fftn: fftn => ferrox::fft::fftn;
    fft_ifftn: fftn => ferrox::fft::ifftn;
    fft_rfftn: fftn => ferrox::fft::rfftn;
    fft_irfftn: fftn => ferrox::fft::irfftn;
    // Convolutions (channels last, as MLX).
    conv1d: conv => |x, w, st, pd, dl, g| plain_conv("ferrox_conv1d", 1, x, w, st, pd, dl, g);
    conv2d: conv => |x, w, st, pd, dl, g| plain_conv("ferrox_conv2d", 2, x, w, st, pd, dl, g);
    conv3d: conv => |x, w, st, pd, dl, g| plain_conv("ferrox_conv3d", 3, x, w, st, pd, dl, g);
    conv_transpose: conv => |x, w, st, pd, dl, g| ferrox::conv_transpose(x, w, st, pd, dl, &[], g);
    // Quantization.
    quantize: quantize => |w, gs, bits, mode| {
        let (wq, scales, biases) = ferrox::quantize(w, gs, bits, mode, None)?;
        Ok(present([Some(wq), Some(scales), biases]))
    };
    dequantize: dequantize => |w, scales, biases, gs, bits, mode| ferrox::dequantize(w, scales, biases, gs, bits, mode, None, None);
    quantized_matmul: qmm => ferrox::quantized_matmul;
    // Types.
    astype: a_dtype => ferrox::astype;
    view: a_dtype => ferrox::view;
    // Creation.
    zeros: new_shape => ferrox::zeros;
    ones: new_shape => ferrox::ones;
    full: new_full => ferrox::full;
    arange: range => |start, stop, step, dtype| Ok(ferrox::arange(start, stop, step, dtype)?);
    linspace: range => |start, stop, num, dtype| {
        if !(num >= 0.0 && num.fract() == 0.0 && num <= u32::MAX as f64) {
            return Err(CError::invalid("ferrox_linspace", format!("the count must be a whole number >= 0, got {num}")));
        }
        Ok(ferrox::linspace(start, stop, num as usize, dtype)?)
    };
}

/// A C norm order: NULL (the op's default), `"fro"`, `"nuc"` or a number.
fn norm_ord(ord: Option<&str>) -> CResult<Option<ferrox::linalg::NormOrd>> {
    use ferrox::linalg::NormOrd;
    let Some(text) = ord else { return Ok(None) };
    Ok(Some(match text {
        "fro" => NormOrd::Fro,
        "nuc" => NormOrd::Nuc,
        number => NormOrd::P(number.parse::<f64>().map_err(|_| {
            CError::invalid(
                "ferrox_linalg_norm",
                format!("`ord` must be \"fro\", \"nuc\" or a number, got {number:?}"),
            )
        })?),
    }))
}

/// A convolution over `dims` spatial dimensions (symmetric padding, no
/// input dilation, no flip), through `conv_general`.
fn plain_conv(
    op: &str,
    dims: usize,
    input: &Array,
    weight: &Array,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    groups: usize,
) -> FResult<Array> {
    if input.ndim() != dims + 2 {
        return Err(ferrox::Error::new(
            ferrox::ErrorKind::Shape,
            op,
            format!(
                "the input must be [N, {dims} spatial dimensions, C] (rank {}), got shape {:?}",
                dims + 2,
                input.shape()
            ),
        ));
    }
    let padding: Vec<isize> = padding.iter().map(|&p| p as isize).collect();
    let params = ferrox::ConvGeneralParams {
        stride,
        padding_lo: &padding,
        padding_hi: &padding,
        kernel_dilation: dilation,
        groups,
        ..Default::default()
    };
    ferrox::conv_general(input, weight, &params)
}

/// The op section of the header: every op's doc comment and declaration,
/// inside `extern "C"` for C++.
pub fn c_declarations() -> String {
    let mut out = String::from(
        "/* ---- ops, generated from the op table (crates/ferrox-c/src/ops.rs) ---- */\n\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif  // __cplusplus\n\n",
    );
    for op in OPS {
        out.push_str("/**\n * ");
        out.push_str(op.doc);
        out.push_str("\n */\n");
        out.push_str(op.decl);
        out.push_str("\n\n");
    }
    out.push_str("#ifdef __cplusplus\n}  // extern \"C\"\n#endif  // __cplusplus\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{FERROX_ERROR_SHAPE, FERROX_OK};

    #[test]
    fn the_table_has_unique_names_and_matching_declarations() {
        let mut names: Vec<_> = OPS.iter().map(|o| o.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate op names");
        for op in OPS {
            assert!(
                op.decl.starts_with(&format!("ferrox_status {}(", op.name)),
                "{}",
                op.decl
            );
            assert!(
                op.decl
                    .ends_with(", const ferrox_stream *s, ferrox_error **err);"),
                "{}",
                op.decl
            );
            assert!(op.doc.starts_with('`'), "{}", op.doc);
        }
        assert!(n >= 100, "{n} ops");
        // The raw identifier becomes the C name `ferrox_where`.
        assert!(OPS.iter().any(|o| o.name == "ferrox_where"));
    }

    #[test]
    fn table_ops_run_and_report_errors() {
        let x = ferrox_array::new(
            ferrox::arange(0.0, 6.0, 1.0, DType::Float32).unwrap_or_else(|_| Array::scalar(0f32)),
        );
        let mut r: Option<Box<ferrox_array>> = None;
        let shape = [2, 3];
        // SAFETY: `shape` holds 2 int32s.
        let st = unsafe { ferrox_reshape(Some(&mut r), Some(&x), shape.as_ptr(), 2, None, None) };
        assert_eq!(st, FERROX_OK);
        let y = r.take().map(|h| h.array.clone());
        assert_eq!(y.as_ref().map(|a| a.shape().to_vec()), Some(vec![2, 3]));
        let mut e: Option<Box<ferrox_error>> = None;
        let bad = [4, 4];
        // SAFETY: `bad` holds 2 int32s.
        let st =
            unsafe { ferrox_reshape(Some(&mut r), Some(&x), bad.as_ptr(), 2, None, Some(&mut e)) };
        assert_eq!(st, FERROX_ERROR_SHAPE);
        assert!(r.is_none());
        let msg = e.map(|e| e.message()).unwrap_or_default();
        assert!(
            msg.contains("reshape") && msg.contains('6') && msg.contains('4'),
            "{msg}"
        );
        // A NULL input is an error, not a crash.
        let mut e: Option<Box<ferrox_error>> = None;
        assert_eq!(
            ferrox_exp(Some(&mut r), None, None, Some(&mut e)),
            crate::error::FERROX_ERROR_NULL_POINTER
        );
        assert!(e
            .map(|e| e.message())
            .unwrap_or_default()
            .contains("`a` is NULL"));
    }
}
