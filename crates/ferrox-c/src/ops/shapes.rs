//! The signature shapes of the op table: for each shape, its C parameters,
//! how they become Rust values, and its declaration text for the header
//! (see the parent module).

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
    (@doc ab_bool, $n:ident) => { concat!("`", stringify!($n), "(a, b, flag)`: ferrox's `", stringify!($n), "` (`flag`: `upper`, `a` is upper triangular, for solve_triangular; `equal_nan` for array_equal).") };
    (@decl ab_bool, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, bool flag") };
    (@fn ab_bool, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab_bool, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, flag: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, bool) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, flag)?))
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
                let biases = opt_array(biases, OP, "biases")?;
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
                let biases = opt_array(biases, OP, "biases")?;
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

    // ---- two arrays, a vector of results (divmod) ---------------------
    (@doc vec_ab, $n:ident) => { concat!("`", stringify!($n), "(a, b)` (broadcasting): ferrox's `", stringify!($n), "`, its results written to a new vector in order.") };
    (@decl vec_ab, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *a, const ferrox_array *b") };
    (@fn vec_ab, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc vec_ab, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || Ok(f(array(a, OP, "a")?, array(b, OP, "b")?)?))
        }
    };

    // ---- vectors of arrays in, a vector out ---------------------------
    (@doc vec_arrays, $n:ident) => { concat!("`", stringify!($n), "(arrays)`: ferrox's `", stringify!($n), "`, its results written to a new vector in order.") };
    (@decl vec_arrays, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_vector_array *arrays") };
    (@fn vec_arrays, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc vec_arrays, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, arrays: Option<&ferrox_vector_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&[Array]) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || Ok(f(&arg(arrays, OP, "arrays")?.items())?))
        }
    };
    (@doc vec_arrays2, $n:ident) => { concat!("`", stringify!($n), "(inputs, dependencies)`: ferrox's `", stringify!($n), "`, its results written to a new vector in order.") };
    (@decl vec_arrays2, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_vector_array *inputs, const ferrox_vector_array *dependencies") };
    (@fn vec_arrays2, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc vec_arrays2, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, inputs: Option<&ferrox_vector_array>, dependencies: Option<&ferrox_vector_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&[Array], &[Array]) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || {
                Ok(f(&arg(inputs, OP, "inputs")?.items(), &arg(dependencies, OP, "dependencies")?.items())?)
            })
        }
    };

    // ---- meshgrid: arrays, sparse, indexing -----------------------------
    (@doc meshgrid, $n:ident) => { concat!("`", stringify!($n), "(arrays, sparse, indexing)`: ferrox's `", stringify!($n), "` (`indexing`: \"xy\" or \"ij\"; NULL is \"xy\"), written to a new vector.") };
    (@decl meshgrid, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_vector_array *arrays, bool sparse, const char *indexing") };
    (@fn meshgrid, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc meshgrid, $n)]
        ///
        /// # Safety
        /// `indexing` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, arrays: Option<&ferrox_vector_array>, sparse: bool, indexing: *const std::ffi::c_char, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&[Array], bool, &str) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let indexing = unsafe { opt_str(indexing, OP, "indexing") }?.unwrap_or("xy");
                Ok(f(&arg(arrays, OP, "arrays")?.items(), sparse, indexing)?)
            })
        }
    };

    // ---- einsum: subscripts, operands -----------------------------------
    (@doc einsum, $n:ident) => { concat!("`", stringify!($n), "(subscripts, operands)`: ferrox's `", stringify!($n), "`.") };
    (@decl einsum, $n:ident) => { decl!($n, "ferrox_array", "const char *subscripts, const ferrox_vector_array *operands") };
    (@fn einsum, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc einsum, $n)]
        ///
        /// # Safety
        /// `subscripts` is a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, subscripts: *const std::ffi::c_char, operands: Option<&ferrox_vector_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&str, &[Array]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes a NUL-terminated string.
                let subscripts = unsafe { crate::array::raw_str(subscripts, OP, "subscripts") }?;
                Ok(f(subscripts, &arg(operands, OP, "operands")?.items())?)
            })
        }
    };

    // ---- two arrays and a count (tensordot over the last n axes) --------
    (@doc ab_int, $n:ident) => { concat!("`", stringify!($n), "(a, b, n)`: ferrox's `", stringify!($n), "` (`n`: how many trailing axes of `a` meet leading axes of `b`).") };
    (@decl ab_int, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, int32_t n") };
    (@fn ab_int, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab_int, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, n: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, usize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, count(n, OP, "n")?)?))
        }
    };

    // ---- two arrays and two axis lists (tensordot over pairs) -----------
    (@doc ab_axes2, $n:ident) => { concat!("`", stringify!($n), "(a, b, axes_a, axes_b)`: ferrox's `", stringify!($n), "`, contracting `a`'s axis `axes_a[i]` with `b`'s `axes_b[i]`.") };
    (@decl ab_axes2, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, const int32_t *axes_a, size_t axes_a_num, const int32_t *axes_b, size_t axes_b_num") };
    (@fn ab_axes2, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc ab_axes2, $n)]
        ///
        /// # Safety
        /// Each list points to its `_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, axes_a: *const i32, axes_a_num: usize, axes_b: *const i32, axes_b_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, Vec<isize>, Vec<isize>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes each list with its length.
                let (xa, xb) = unsafe { (ints(axes_a, axes_a_num, OP, "axes_a")?, ints(axes_b, axes_b_num, OP, "axes_b")?) };
                Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, axes(xa), axes(xb))?)
            })
        }
    };

    // ---- an offset and two axes (diagonal) ------------------------------
    (@doc a_int3, $n:ident) => { concat!("`", stringify!($n), "(a, offset, axis1, axis2)`: ferrox's `", stringify!($n), "`.") };
    (@decl a_int3, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t offset, int32_t axis1, int32_t axis2") };
    (@fn a_int3, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_int3, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, offset: i32, axis1: i32, axis2: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, isize, isize, isize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, offset as isize, axis1 as isize, axis2 as isize)?))
        }
    };
    (@doc trace, $n:ident) => { concat!("`", stringify!($n), "(a, offset, axis1, axis2, dtype)`: ferrox's `", stringify!($n), "`, summed in `dtype`.") };
    (@decl trace, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t offset, int32_t axis1, int32_t axis2, ferrox_dtype dtype") };
    (@fn trace, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc trace, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, offset: i32, axis1: i32, axis2: i32, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, isize, isize, isize, DType) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, offset as isize, axis1 as isize, axis2 as isize, dtype_of(dtype, OP)?)?))
        }
    };

    // ---- creation: n, m, k, dtype (eye, tri) ----------------------------
    (@doc new_eye, $n:ident) => { concat!("`", stringify!($n), "(n, m, k, dtype)`: ferrox's `", stringify!($n), "`, `n` rows and `m` columns (negative: `n`), diagonal `k`.") };
    (@decl new_eye, $n:ident) => { decl!($n, "ferrox_array", "int32_t n, int32_t m, int32_t k, ferrox_dtype dtype") };
    (@fn new_eye, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_eye, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, n: i32, m: i32, k: i32, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(usize, Option<usize>, isize, DType) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(count(n, OP, "n")?, opt_count(m), k as isize, dtype_of(dtype, OP)?)?))
        }
    };
    (@doc new_n_dtype, $n:ident) => { concat!("`", stringify!($n), "(n, dtype)`: ferrox's `", stringify!($n), "`.") };
    (@decl new_n_dtype, $n:ident) => { decl!($n, "ferrox_array", "int32_t n, ferrox_dtype dtype") };
    (@fn new_n_dtype, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_n_dtype, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, n: i32, dtype: ferrox_dtype, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(usize, DType) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(count(n, OP, "n")?, dtype_of(dtype, OP)?)?))
        }
    };
    (@doc new_n, $n:ident) => { concat!("`", stringify!($n), "(n)`: ferrox's `", stringify!($n), "` window of `n` points (float32).") };
    (@decl new_n, $n:ident) => { decl!($n, "ferrox_array", "int32_t n") };
    (@fn new_n, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_n, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, n: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(usize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(count(n, OP, "n")?)?))
        }
    };
    (@doc new_n_d, $n:ident) => { concat!("`", stringify!($n), "(n, d)`: ferrox's `fft::", stringify!($n), "` for `n` samples spaced `d` apart.") };
    (@decl new_n_d, $n:ident) => { decl!($n, "ferrox_array", "int32_t n, double d") };
    (@fn new_n_d, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc new_n_d, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, n: i32, d: f64, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(usize, f64) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(count(n, OP, "n")?, d)?))
        }
    };

    // ---- one array and a number ----------------------------------------
    (@doc a_double, $n:ident) => { concat!("`", stringify!($n), "(a, value)`: ferrox's `", stringify!($n), "`.") };
    (@decl a_double, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, double value") };
    (@fn a_double, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_double, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, value: f64, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, f64) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, value)?))
        }
    };
    (@doc a_opt_double, $n:ident) => { concat!("`", stringify!($n), "(a, scale)`: ferrox's `", stringify!($n), "`; a `scale` without a value is the op's default.") };
    (@decl a_opt_double, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, ferrox_optional_double scale") };
    (@fn a_opt_double, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc a_opt_double, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, scale: ferrox_optional_double, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<f64>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, scale.get())?))
        }
    };
    (@doc nan_to_num, $n:ident) => { concat!("`", stringify!($n), "(a, nan, posinf, neginf)`: ferrox's `", stringify!($n), "`; infinities without a value become the dtype's largest and lowest finite values.") };
    (@decl nan_to_num, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, double nan, ferrox_optional_double posinf, ferrox_optional_double neginf") };
    (@fn nan_to_num, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc nan_to_num, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, nan: f64, posinf: ferrox_optional_double, neginf: ferrox_optional_double, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, f64, Option<f64>, Option<f64>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, nan, posinf.get(), neginf.get())?))
        }
    };

    // ---- pad: axes, low and high widths, mode, value --------------------
    (@doc pad, $n:ident) => { concat!("`", stringify!($n), "(a, axes, low, high, n, mode, value)`: ferrox's `", stringify!($n), "`: `low[i]` and `high[i]` elements before and after axis `axes[i]` (`axes` NULL: the first `n` axes; `n` 1 with NULL `axes`: every axis); `mode` \"constant\" (NULL) with `value`, \"edge\", \"reflect\" or \"symmetric\".") };
    (@decl pad, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *axes, const int32_t *low, const int32_t *high, size_t n, const char *mode, double value") };
    (@fn pad, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc pad, $n)]
        ///
        /// # Safety
        /// `axes` is NULL or points to `n` int32s; `low` and `high` point to `n` int32s; `mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axes_p: *const i32, low: *const i32, high: *const i32, n: usize, mode: *const std::ffi::c_char, value: f64, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &[(usize, usize)], ferrox::PadMode) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                let a = array(a, OP, "a")?;
                // SAFETY: the caller passes the lists with `n` entries and NULL or a string.
                let (ax, lo, hi, mode) = unsafe { (opt_axes(axes_p, n, OP, "axes")?, ints(low, n, OP, "low")?, ints(high, n, OP, "high")?, opt_str(mode, OP, "mode")?) };
                let widths = pad_widths(OP, a.ndim(), ax.as_deref(), &sizes(lo, OP, "low")?, &sizes(hi, OP, "high")?)?;
                Ok(f(a, &widths, pad_mode(OP, mode, value)?)?)
            })
        }
    };

    // ---- roll: shifts, axes (NULL: flattened) ---------------------------
    (@doc roll, $n:ident) => { concat!("`", stringify!($n), "(a, shift, axes)`: ferrox's `", stringify!($n), "`; `axes` NULL rolls the flattened array by `shift[0]`.") };
    (@decl roll, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *shift, size_t shift_num, const int32_t *axes, size_t axes_num") };
    (@fn roll, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc roll, $n)]
        ///
        /// # Safety
        /// `shift` points to `shift_num` int32s; `axes` is NULL or points to `axes_num` int32s.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, shift: *const i32, shift_num: usize, axes_p: *const i32, axes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &[isize], Option<&[isize]>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes the lists with their lengths.
                let (sh, ax) = unsafe { (ints(shift, shift_num, OP, "shift")?, opt_axes(axes_p, axes_num, OP, "axes")?) };
                Ok(f(array(a, OP, "a")?, &axes(sh), ax.as_deref())?)
            })
        }
    };

    // ---- an axis and a list (unflatten) ---------------------------------
    (@doc axis_ints, $n:ident) => { concat!("`", stringify!($n), "(a, axis, shape)`: ferrox's `", stringify!($n), "`.") };
    (@decl axis_ints, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t axis, const int32_t *shape, size_t shape_num") };
    (@fn axis_ints, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc axis_ints, $n)]
        ///
        /// # Safety
        /// `shape` points to `shape_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, axis: i32, shape: *const i32, shape_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, isize, &[isize]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `shape_num` int32s.
                let shape = unsafe { ints(shape, shape_num, OP, "shape") }?;
                Ok(f(array(a, OP, "a")?, axis as isize, &axes(shape))?)
            })
        }
    };

    // ---- as_strided: shape, strides (elements), offset ------------------
    (@doc as_strided, $n:ident) => { concat!("`", stringify!($n), "(a, shape, strides, offset)`: ferrox's `", stringify!($n), "` over `a`'s row-major elements (strides and offset in elements).") };
    (@decl as_strided, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const int32_t *shape, size_t shape_num, const int64_t *strides, size_t strides_num, size_t offset") };
    (@fn as_strided, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc as_strided, $n)]
        ///
        /// # Safety
        /// `shape` and `strides` point to their `_num` entries (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, shape: *const i32, shape_num: usize, strides: *const i64, strides_num: usize, offset: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &[usize], &[isize], usize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes the lists with their lengths.
                let (sh, st) = unsafe { (ints(shape, shape_num, OP, "shape")?, raw_slice(strides, strides_num, OP, "strides")?) };
                let st: Vec<isize> = st.iter().map(|&v| v as isize).collect();
                Ok(f(array(a, OP, "a")?, &sizes(sh, OP, "shape")?, &st, offset)?)
            })
        }
    };

    // ---- three arrays and an axis (put_along_axis) ----------------------
    (@doc abc_axis, $n:ident) => { concat!("`", stringify!($n), "(a, indices, values, axis)`: ferrox's `", stringify!($n), "`; `FERROX_AXIS_NONE` works on the flattened array.") };
    (@decl abc_axis, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *indices, const ferrox_array *values, int32_t axis") };
    (@fn abc_axis, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc abc_axis, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, indices: Option<&ferrox_array>, values: Option<&ferrox_array>, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &Array, Option<isize>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, array(indices, OP, "indices")?, array(values, OP, "values")?, opt_axis(axis))?))
        }
    };

    // ---- scatter: a, indices (one per axis), updates, axes --------------
    (@doc scatter, $n:ident) => { concat!("`", stringify!($n), "(a, indices, updates, axes)`: ferrox's `", stringify!($n), "`: `indices` holds one index array per axis of `axes`.") };
    (@decl scatter, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_vector_array *indices, const ferrox_array *updates, const int32_t *axes, size_t axes_num") };
    (@fn scatter, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc scatter, $n)]
        ///
        /// # Safety
        /// `axes` points to `axes_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, indices: Option<&ferrox_vector_array>, updates: Option<&ferrox_array>, axes_p: *const i32, axes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &[Array], &Array, &[isize]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `axes_num` int32s.
                let ax = unsafe { ints(axes_p, axes_num, OP, "axes") }?;
                Ok(f(array(a, OP, "a")?, &arg(indices, OP, "indices")?.items(), array(updates, OP, "updates")?, &axes(ax))?)
            })
        }
    };

    // ---- gather: a, indices, axes, slice sizes --------------------------
    (@doc gather, $n:ident) => { concat!("`", stringify!($n), "(a, indices, axes, slice_sizes)`: ferrox's `", stringify!($n), "`: `indices` holds one index array per axis of `axes`; `slice_sizes` one entry per dimension of `a`.") };
    (@decl gather, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_vector_array *indices, const int32_t *axes, size_t axes_num, const int32_t *slice_sizes, size_t slice_sizes_num") };
    (@fn gather, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc gather, $n)]
        ///
        /// # Safety
        /// Each list points to its `_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, indices: Option<&ferrox_vector_array>, axes_p: *const i32, axes_num: usize, slice_sizes: *const i32, slice_sizes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &[Array], &[isize], &[usize]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes each list with its length.
                let (ax, ss) = unsafe { (ints(axes_p, axes_num, OP, "axes")?, ints(slice_sizes, slice_sizes_num, OP, "slice_sizes")?) };
                Ok(f(array(a, OP, "a")?, &arg(indices, OP, "indices")?.items(), &axes(ax), &sizes(ss, OP, "slice_sizes")?)?)
            })
        }
    };

    // ---- slice_update: a, update, start, stop, strides ------------------
    (@doc slice_update, $n:ident) => { concat!("`", stringify!($n), "(a, update, start, stop, strides)`: ferrox's `", stringify!($n), "` (a copy of `a` with `update` written into the slice); `strides` NULL is all 1.") };
    (@decl slice_update, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *update, const int32_t *start, size_t start_num, const int32_t *stop, size_t stop_num, const int32_t *strides, size_t strides_num") };
    (@fn slice_update, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc slice_update, $n)]
        ///
        /// # Safety
        /// Each list points to its `_num` int32s (`strides` may be NULL).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, update: Option<&ferrox_array>, start: *const i32, start_num: usize, stop: *const i32, stop_num: usize, strides: *const i32, strides_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &[isize], &[isize], Option<&[isize]>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes each list with its length.
                let (lo, hi, st) = unsafe { (ints(start, start_num, OP, "start")?, ints(stop, stop_num, OP, "stop")?, opt_axes(strides, strides_num, OP, "strides")?) };
                Ok(f(array(a, OP, "a")?, array(update, OP, "update")?, &axes(lo), &axes(hi), st.as_deref())?)
            })
        }
    };

    // ---- split at indices into a vector ---------------------------------
    (@doc split_at, $n:ident) => { concat!("`", stringify!($n), "(a, indices, axis)`: ferrox's `split` at `indices` along `axis`, written to a new vector.") };
    (@decl split_at, $n:ident) => { decl!($n, "ferrox_vector_array", "const ferrox_array *a, const int32_t *indices, size_t indices_num, int32_t axis") };
    (@fn split_at, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc split_at, $n)]
        ///
        /// # Safety
        /// `indices` points to `indices_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_vector_array>, a: Option<&ferrox_array>, indices: *const i32, indices_num: usize, axis: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Vec<isize>, isize) -> FResult<Vec<Array>> = $f;
            respond(OP, res, s, err, ferrox_vector_array::new, || {
                // SAFETY: the caller passes `indices_num` int32s.
                let at = unsafe { ints(indices, indices_num, OP, "indices") }?;
                Ok(f(array(a, OP, "a")?, axes(at), axis as isize)?)
            })
        }
    };

    // ---- gather_mm: a, b, optional index arrays -------------------------
    (@doc gather_mm, $n:ident) => { concat!("`", stringify!($n), "(a, b, lhs_indices, rhs_indices)`: ferrox's `", stringify!($n), "`; a NULL index array takes the batch as it is.") };
    (@decl gather_mm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, const ferrox_array *lhs_indices, const ferrox_array *rhs_indices") };
    (@fn gather_mm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc gather_mm, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, lhs_indices: Option<&ferrox_array>, rhs_indices: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, Option<&Array>, Option<&Array>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, opt_array(lhs_indices, OP, "lhs_indices")?, opt_array(rhs_indices, OP, "rhs_indices")?)?))
        }
    };

    // ---- block_masked_mm: a, b, block size, optional masks --------------
    (@doc block_masked_mm, $n:ident) => { concat!("`", stringify!($n), "(a, b, block_size, mask_out, mask_lhs, mask_rhs)`: ferrox's `", stringify!($n), "`; a NULL mask masks nothing.") };
    (@decl block_masked_mm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *b, int32_t block_size, const ferrox_array *mask_out, const ferrox_array *mask_lhs, const ferrox_array *mask_rhs") };
    (@fn block_masked_mm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc block_masked_mm, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, b: Option<&ferrox_array>, block_size: i32, mask_out: Option<&ferrox_array>, mask_lhs: Option<&ferrox_array>, mask_rhs: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, usize, Option<&Array>, Option<&Array>, Option<&Array>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                Ok(f(array(a, OP, "a")?, array(b, OP, "b")?, count(block_size, OP, "block_size")?, opt_array(mask_out, OP, "mask_out")?, opt_array(mask_lhs, OP, "mask_lhs")?, opt_array(mask_rhs, OP, "mask_rhs")?)?)
            })
        }
    };

    // ---- gather_qmm ------------------------------------------------------
    (@doc gather_qmm, $n:ident) => { concat!("`", stringify!($n), "(x, w, scales, biases, lhs_indices, rhs_indices, transpose, group_size, bits, mode, sorted_indices)`: ferrox's `", stringify!($n), "`; NULL `biases` and index arrays are absent, negative sizes are the mode's defaults, a NULL `mode` is \"affine\".") };
    (@decl gather_qmm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *x, const ferrox_array *w, const ferrox_array *scales, const ferrox_array *biases, const ferrox_array *lhs_indices, const ferrox_array *rhs_indices, bool transpose, int32_t group_size, int32_t bits, const char *mode, bool sorted_indices") };
    (@fn gather_qmm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc gather_qmm, $n)]
        ///
        /// # Safety
        /// `mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, x: Option<&ferrox_array>, w: Option<&ferrox_array>, scales: Option<&ferrox_array>, biases: Option<&ferrox_array>, lhs_indices: Option<&ferrox_array>, rhs_indices: Option<&ferrox_array>, transpose: bool, group_size: i32, bits: i32, mode: *const std::ffi::c_char, sorted_indices: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &Array, Option<&Array>, Option<&Array>, Option<&Array>, bool, Option<usize>, Option<usize>, &str, bool) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let mode = unsafe { mode_of(mode, OP) }?;
                Ok(f(array(x, OP, "x")?, array(w, OP, "w")?, array(scales, OP, "scales")?, opt_array(biases, OP, "biases")?, opt_array(lhs_indices, OP, "lhs_indices")?, opt_array(rhs_indices, OP, "rhs_indices")?, transpose, opt_count(group_size), opt_count(bits), mode, sorted_indices)?)
            })
        }
    };

    // ---- conv_general ----------------------------------------------------
    (@doc conv_general, $n:ident) => { concat!("`", stringify!($n), "(input, weight, stride, padding_lo, padding_hi, kernel_dilation, input_dilation, dims, groups, flip)`: ferrox's `", stringify!($n), "` (channels last); each list holds `dims` entries (one per spatial dimension, or 1 for all; NULL when `dims` is 0 means the defaults), paddings may be negative.") };
    (@decl conv_general, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *input, const ferrox_array *weight, const int32_t *stride, const int32_t *padding_lo, const int32_t *padding_hi, const int32_t *kernel_dilation, const int32_t *input_dilation, size_t dims, int32_t groups, bool flip") };
    (@fn conv_general, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc conv_general, $n)]
        ///
        /// # Safety
        /// Each list points to `dims` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, input: Option<&ferrox_array>, weight: Option<&ferrox_array>, stride: *const i32, padding_lo: *const i32, padding_hi: *const i32, kernel_dilation: *const i32, input_dilation: *const i32, dims: usize, groups: i32, flip: bool, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &ferrox::ConvGeneralParams<'_>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `dims` int32s in each list.
                let (st, lo, hi, kd, id) = unsafe { (ints(stride, dims, OP, "stride")?, ints(padding_lo, dims, OP, "padding_lo")?, ints(padding_hi, dims, OP, "padding_hi")?, ints(kernel_dilation, dims, OP, "kernel_dilation")?, ints(input_dilation, dims, OP, "input_dilation")?) };
                let (st, kd, id) = (sizes(st, OP, "stride")?, sizes(kd, OP, "kernel_dilation")?, sizes(id, OP, "input_dilation")?);
                let (lo, hi) = (axes(lo), axes(hi));
                let params = ferrox::ConvGeneralParams { stride: &st, padding_lo: &lo, padding_hi: &hi, kernel_dilation: &kd, input_dilation: &id, groups: count(groups, OP, "groups")?, flip };
                Ok(f(array(input, OP, "input")?, array(weight, OP, "weight")?, &params)?)
            })
        }
    };

    // ---- a transposed convolution with output padding --------------------
    (@doc conv_t, $n:ident) => { concat!("`", stringify!($n), "(input, weight, stride, padding, dilation, output_padding, dims, groups)`: ferrox's `conv_transpose` over ", stringify!($n), "'s spatial rank (channels last); each list holds `dims` entries (one per spatial dimension, or 1 for all; NULL when `dims` is 0 means the defaults).") };
    (@decl conv_t, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *input, const ferrox_array *weight, const int32_t *stride, const int32_t *padding, const int32_t *dilation, const int32_t *output_padding, size_t dims, int32_t groups") };
    (@fn conv_t, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc conv_t, $n)]
        ///
        /// # Safety
        /// Each list points to `dims` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, input: Option<&ferrox_array>, weight: Option<&ferrox_array>, stride: *const i32, padding: *const i32, dilation: *const i32, output_padding: *const i32, dims: usize, groups: i32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &[usize], &[usize], &[usize], &[usize], usize) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `dims` int32s in each list.
                let (st, pd, dl, op) = unsafe { (ints(stride, dims, OP, "stride")?, ints(padding, dims, OP, "padding")?, ints(dilation, dims, OP, "dilation")?, ints(output_padding, dims, OP, "output_padding")?) };
                let (st, pd, dl, op) = (sizes(st, OP, "stride")?, sizes(pd, OP, "padding")?, sizes(dl, OP, "dilation")?, sizes(op, OP, "output_padding")?);
                Ok(f(array(input, OP, "input")?, array(weight, OP, "weight")?, &st, &pd, &dl, &op, count(groups, OP, "groups")?)?)
            })
        }
    };

    // ---- fast: norms, rope, attention ------------------------------------
    (@doc rms_norm, $n:ident) => { concat!("`", stringify!($n), "(x, weight, eps)`: ferrox's `fast::", stringify!($n), "` over the last axis; `weight` may be NULL.") };
    (@decl rms_norm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *x, const ferrox_array *weight, float eps") };
    (@fn rms_norm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc rms_norm, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, x: Option<&ferrox_array>, weight: Option<&ferrox_array>, eps: f32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<&Array>, f32) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(x, OP, "x")?, opt_array(weight, OP, "weight")?, eps)?))
        }
    };
    (@doc layer_norm, $n:ident) => { concat!("`", stringify!($n), "(x, weight, bias, eps)`: ferrox's `fast::", stringify!($n), "` over the last axis; `weight` and `bias` may be NULL.") };
    (@decl layer_norm, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *x, const ferrox_array *weight, const ferrox_array *bias, float eps") };
    (@fn layer_norm, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc layer_norm, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, x: Option<&ferrox_array>, weight: Option<&ferrox_array>, bias: Option<&ferrox_array>, eps: f32, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, Option<&Array>, Option<&Array>, f32) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || Ok(f(array(x, OP, "x")?, opt_array(weight, OP, "weight")?, opt_array(bias, OP, "bias")?, eps)?))
        }
    };
    (@doc rope, $n:ident) => { concat!("`", stringify!($n), "(a, dims, traditional, base, scale, offset, freqs)`: ferrox's `fast::rope` with offset `offset`; `base` without a value needs `freqs` (and the reverse), `freqs` may be NULL.") };
    (@decl rope, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t dims, bool traditional, ferrox_optional_double base, float scale, int32_t offset, const ferrox_array *freqs") };
    (@fn rope, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc rope, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, dims: i32, traditional: bool, base: ferrox_optional_double, scale: f32, offset: i32, freqs: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, usize, bool, Option<f32>, f32, ferrox::fast::RopeOffset<'_>, Option<&Array>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                Ok(f(array(a, OP, "a")?, count(dims, OP, "dims")?, traditional, base.get().map(|b| b as f32), scale, ferrox::fast::RopeOffset::Scalar(offset.into()), opt_array(freqs, OP, "freqs")?)?)
            })
        }
    };
    (@doc rope_dynamic, $n:ident) => { concat!("`", stringify!($n), "(a, dims, traditional, base, scale, offset, freqs)`: ferrox's `fast::rope` with an integer offset array (a scalar or one per batch element); `freqs` may be NULL.") };
    (@decl rope_dynamic, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, int32_t dims, bool traditional, ferrox_optional_double base, float scale, const ferrox_array *offset, const ferrox_array *freqs") };
    (@fn rope_dynamic, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc rope_dynamic, $n)]
        #[no_mangle]
        pub extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, dims: i32, traditional: bool, base: ferrox_optional_double, scale: f32, offset: Option<&ferrox_array>, freqs: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, usize, bool, Option<f32>, f32, ferrox::fast::RopeOffset<'_>, Option<&Array>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                Ok(f(array(a, OP, "a")?, count(dims, OP, "dims")?, traditional, base.get().map(|b| b as f32), scale, ferrox::fast::RopeOffset::Array(array(offset, OP, "offset")?), opt_array(freqs, OP, "freqs")?)?)
            })
        }
    };
    (@doc sdpa, $n:ident) => { concat!("`", stringify!($n), "(q, k, v, scale, mask_mode, mask, sinks)`: ferrox's `fast::", stringify!($n), "`; `mask_mode` NULL or \"\" (no mask unless `mask` is given), \"causal\", or \"array\" (`mask`: bool or additive); `sinks` may be NULL.") };
    (@decl sdpa, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *q, const ferrox_array *k, const ferrox_array *v, float scale, const char *mask_mode, const ferrox_array *mask, const ferrox_array *sinks") };
    (@fn sdpa, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc sdpa, $n)]
        ///
        /// # Safety
        /// `mask_mode` is NULL or a NUL-terminated string.
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, q: Option<&ferrox_array>, k: Option<&ferrox_array>, v: Option<&ferrox_array>, scale: f32, mask_mode: *const std::ffi::c_char, mask: Option<&ferrox_array>, sinks: Option<&ferrox_array>, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &Array, f32, ferrox::fast::AttentionMask<'_>, Option<&Array>) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes NULL or a NUL-terminated string.
                let mode = unsafe { opt_str(mask_mode, OP, "mask_mode") }?;
                let mask = attention_mask(OP, mode, opt_array(mask, OP, "mask")?)?;
                Ok(f(array(q, OP, "q")?, array(k, OP, "k")?, array(v, OP, "v")?, scale, mask, opt_array(sinks, OP, "sinks")?)?)
            })
        }
    };

    // ---- slices at positions held in an array ----------------------------
    (@doc slice_dynamic, $n:ident) => { concat!("`", stringify!($n), "(a, start, axes, slice_size)`: ferrox's `dynamic_slice`: `slice_size[i]` elements of axis `axes[i]` from the position `start[i]` (an integer array, so one trace serves every position).") };
    (@decl slice_dynamic, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *start, const int32_t *axes, size_t axes_num, const int32_t *slice_size, size_t slice_size_num") };
    (@fn slice_dynamic, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc slice_dynamic, $n)]
        ///
        /// # Safety
        /// Each list points to its `_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, start: Option<&ferrox_array>, axes_p: *const i32, axes_num: usize, slice_size: *const i32, slice_size_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &[isize], &[usize]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes each list with its length.
                let (ax, sz) = unsafe { (ints(axes_p, axes_num, OP, "axes")?, ints(slice_size, slice_size_num, OP, "slice_size")?) };
                Ok(f(array(a, OP, "a")?, array(start, OP, "start")?, &axes(ax), &sizes(sz, OP, "slice_size")?)?)
            })
        }
    };
    (@doc slice_update_dynamic, $n:ident) => { concat!("`", stringify!($n), "(a, update, start, axes)`: ferrox's `dynamic_slice_update`: a copy of `a` with `update` written at the position `start[i]` of axis `axes[i]` (an integer array).") };
    (@decl slice_update_dynamic, $n:ident) => { decl!($n, "ferrox_array", "const ferrox_array *a, const ferrox_array *update, const ferrox_array *start, const int32_t *axes, size_t axes_num") };
    (@fn slice_update_dynamic, $c:ident, $n:ident, $f:expr) => {
        #[doc = c_ops!(@doc slice_update_dynamic, $n)]
        ///
        /// # Safety
        /// `axes` points to `axes_num` int32s (NULL if 0).
        #[no_mangle]
        pub unsafe extern "C" fn $c(res: Slot<'_, ferrox_array>, a: Option<&ferrox_array>, update: Option<&ferrox_array>, start: Option<&ferrox_array>, axes_p: *const i32, axes_num: usize, s: Option<&ferrox_stream>, err: Slot<'_, ferrox_error>) -> ferrox_status {
            const OP: &str = stringify!($c);
            let f: fn(&Array, &Array, &Array, &[isize]) -> FResult<Array> = $f;
            respond(OP, res, s, err, ferrox_array::new, || {
                // SAFETY: the caller passes `axes_num` int32s.
                let ax = unsafe { ints(axes_p, axes_num, OP, "axes") }?;
                Ok(f(array(a, OP, "a")?, array(update, OP, "update")?, array(start, OP, "start")?, &axes(ax))?)
            })
        }
    };
}
