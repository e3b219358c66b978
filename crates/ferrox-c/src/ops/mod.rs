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
    axes, dtype_of, ferrox_array, ferrox_dtype, ferrox_vector_array, opt_str, raw_slice, sizes,
};
use crate::error::{ferrox_error, ferrox_status, guard, CError, CResult};
use crate::handle::{arg, check_slot, opt_arg, put, Slot};
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
pub(crate) fn respond<T, H: crate::handle::Handle>(
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
pub(crate) unsafe fn opt_sizes(
    p: *const i32,
    n: usize,
    op: &str,
    name: &str,
) -> CResult<Option<Vec<usize>>> {
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
    // SAFETY: forwarded from the caller.
    Ok(unsafe { opt_str(p, op, "mode") }?.unwrap_or("affine"))
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

/// An optional number, as mlx-c's optional types: `value` counts only
/// when `has_value` is true.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ferrox_optional_double {
    /// The number, when `has_value`.
    pub value: f64,
    /// Whether `value` is given.
    pub has_value: bool,
}

impl ferrox_optional_double {
    fn get(self) -> Option<f64> {
        self.has_value.then_some(self.value)
    }
}

/// An optional array argument: NULL is absent; anything else must be a
/// live handle.
fn opt_array<'a>(h: Option<&'a ferrox_array>, op: &str, name: &str) -> CResult<Option<&'a Array>> {
    Ok(opt_arg(h, op, name)?.map(|h| &h.array))
}

/// Per-dimension `(before, after)` pad widths from C's lists: `low[i]` and
/// `high[i]` for axis `axes[i]`; NULL axes are the first `n` axes, except
/// that one width with NULL axes pads every axis (as numpy's scalar width).
fn pad_widths(
    op: &str,
    ndim: usize,
    axes: Option<&[isize]>,
    low: &[usize],
    high: &[usize],
) -> CResult<Vec<(usize, usize)>> {
    let pairs: Vec<(usize, usize)> = low.iter().copied().zip(high.iter().copied()).collect();
    let Some(axes) = axes else {
        return match pairs.len() {
            1 => Ok(vec![pairs[0]; ndim]),
            n if n <= ndim => Ok(pairs
                .into_iter()
                .chain(std::iter::repeat((0, 0)))
                .take(ndim)
                .collect()),
            n => Err(CError::invalid(
                op,
                format!("{n} pad widths for an array of {ndim} dimensions"),
            )),
        };
    };
    let mut widths = vec![(0, 0); ndim];
    for (&axis, pair) in axes.iter().zip(pairs) {
        let a = if axis < 0 { axis + ndim as isize } else { axis };
        let slot = usize::try_from(a)
            .ok()
            .and_then(|a| widths.get_mut(a))
            .ok_or_else(|| {
                CError::new(
                    crate::error::FERROX_ERROR_AXIS,
                    format!("{op}: axis {axis} is out of range for {ndim} dimensions"),
                )
            })?;
        *slot = pair;
    }
    Ok(widths)
}

/// A pad mode by name: NULL or "constant" (with `value`), "edge",
/// "reflect", "symmetric".
fn pad_mode(op: &str, mode: Option<&str>, value: f64) -> CResult<ferrox::PadMode> {
    use ferrox::PadMode;
    Ok(match mode.unwrap_or("constant") {
        "constant" => PadMode::Constant(value),
        "edge" => PadMode::Edge,
        "reflect" => PadMode::Reflect,
        "symmetric" => PadMode::Symmetric,
        other => {
            return Err(CError::invalid(
                op,
                format!("`mode` must be \"constant\", \"edge\", \"reflect\" or \"symmetric\", got {other:?}"),
            ))
        }
    })
}

/// An attention mask from C's mode string and optional array.
fn attention_mask<'a>(
    op: &str,
    mode: Option<&str>,
    mask: Option<&'a Array>,
) -> CResult<ferrox::fast::AttentionMask<'a>> {
    use ferrox::fast::AttentionMask;
    match (mode.unwrap_or(""), mask) {
        ("", None) => Ok(AttentionMask::None),
        ("causal", None) => Ok(AttentionMask::Causal),
        ("" | "array", Some(m)) => Ok(AttentionMask::Array(m)),
        ("array", None) => Err(CError::invalid(op, "`mask_mode` \"array\" needs a `mask`")),
        ("causal", Some(_)) => Err(CError::invalid(
            op,
            "`mask_mode` \"causal\" takes no `mask` array",
        )),
        (other, _) => Err(CError::invalid(
            op,
            format!("`mask_mode` must be \"\", \"causal\" or \"array\", got {other:?}"),
        )),
    }
}

#[macro_use]
mod shapes;

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
    // Shapes, views and joins (continued).
    contiguous: a => ferrox::contiguous;
    broadcast_arrays: vec_arrays => ferrox::broadcast_arrays;
    depends: vec_arrays2 => ferrox::depends;
    meshgrid: meshgrid => ferrox::meshgrid;
    diagonal: a_int3 => ferrox::diagonal;
    unflatten: axis_ints => ferrox::unflatten;
    as_strided: as_strided => ferrox::as_strided;
    roll: roll => ferrox::roll;
    pad: pad => ferrox::pad;
    split_sections: split_at => |a, at, axis| ferrox::split(a, ferrox::Sections::Indices(at), axis);
    // Indexing and updates.
    gather: gather => ferrox::gather;
    scatter: scatter => ferrox::scatter;
    scatter_add: scatter => ferrox::scatter_add;
    scatter_prod: scatter => ferrox::scatter_prod;
    scatter_max: scatter => ferrox::scatter_max;
    scatter_min: scatter => ferrox::scatter_min;
    slice_update: slice_update => ferrox::slice_update;
    slice_dynamic: slice_dynamic => ferrox::dynamic_slice;
    slice_update_dynamic: slice_update_dynamic => ferrox::dynamic_slice_update;
    put_along_axis: abc_axis => ferrox::put_along_axis;
    masked_scatter: abc => ferrox::masked_scatter;
    // Arithmetic, comparison and conversion (continued).
    divmod: vec_ab => |a, b| { let (q, r) = ferrox::divmod(a, b)?; Ok(vec![q, r]) };
    array_equal: ab_bool => ferrox::array_equal;
    nan_to_num: nan_to_num => ferrox::nan_to_num;
    hadamard_transform: a_opt_double => ferrox::hadamard_transform;
    full_like: a_double => ferrox::full_like;
    to_fp8: a => ferrox::to_fp8;
    from_fp8: a_dtype => ferrox::from_fp8;
    trace: trace => |a, offset, axis1, axis2, dtype| ferrox::trace(a, offset, axis1, axis2, Some(dtype));
    // Products (continued).
    einsum: einsum => ferrox::einsum;
    tensordot: ab_axes2 => |a, b, xa, xb| ferrox::tensordot(a, b, (xa, xb));
    tensordot_axis: ab_int => |a, b, n| ferrox::tensordot(a, b, n);
    gather_mm: gather_mm => ferrox::gather_mm;
    block_masked_mm: block_masked_mm => ferrox::block_masked_mm;
    segmented_mm: abc => ferrox::segmented_mm;
    gather_qmm: gather_qmm => ferrox::gather_qmm;
    conv_general: conv_general => ferrox::conv_general;
    conv_transpose1d: conv_t => |x, w, st, pd, dl, op, g| ranked_conv_transpose("ferrox_conv_transpose1d", 1, x, w, st, pd, dl, op, g);
    conv_transpose2d: conv_t => |x, w, st, pd, dl, op, g| ranked_conv_transpose("ferrox_conv_transpose2d", 2, x, w, st, pd, dl, op, g);
    conv_transpose3d: conv_t => |x, w, st, pd, dl, op, g| ranked_conv_transpose("ferrox_conv_transpose3d", 3, x, w, st, pd, dl, op, g);
    // Creation (continued).
    eye: new_eye => ferrox::eye;
    tri: new_eye => ferrox::tri;
    identity: new_n_dtype => ferrox::identity;
    bartlett: new_n => ferrox::bartlett;
    blackman: new_n => ferrox::blackman;
    hamming: new_n => ferrox::hamming;
    hanning: new_n => ferrox::hanning;
    // FFT helpers.
    fft_fftfreq: new_n_d => ferrox::fft::fftfreq;
    fft_rfftfreq: new_n_d => ferrox::fft::rfftfreq;
    fft_fftshift: axes => |a, ax| Ok(ferrox::fft::fftshift(a, ax)?);
    fft_ifftshift: axes => |a, ax| Ok(ferrox::fft::ifftshift(a, ax)?);
    // Fused kernels (`ferrox::fast`).
    fast_rms_norm: rms_norm => ferrox::fast::rms_norm;
    fast_layer_norm: layer_norm => ferrox::fast::layer_norm;
    fast_rope: rope => ferrox::fast::rope;
    fast_rope_dynamic: rope_dynamic => ferrox::fast::rope;
    fast_scaled_dot_product_attention: sdpa => ferrox::fast::scaled_dot_product_attention;
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
    check_spatial_rank(op, dims, input)?;
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

/// Fails unless `input` is `[N, dims spatial dimensions, C]`.
fn check_spatial_rank(op: &str, dims: usize, input: &Array) -> FResult<()> {
    if input.ndim() == dims + 2 {
        return Ok(());
    }
    Err(ferrox::Error::new(
        ferrox::ErrorKind::Shape,
        op,
        format!(
            "the input must be [N, {dims} spatial dimensions, C] (rank {}), got shape {:?}",
            dims + 2,
            input.shape()
        ),
    ))
}

/// A transposed convolution over `dims` spatial dimensions.
#[allow(clippy::too_many_arguments)]
fn ranked_conv_transpose(
    op: &str,
    dims: usize,
    input: &Array,
    weight: &Array,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    output_padding: &[usize],
    groups: usize,
) -> FResult<Array> {
    check_spatial_rank(op, dims, input)?;
    ferrox::conv_transpose(
        input,
        weight,
        stride,
        padding,
        dilation,
        output_padding,
        groups,
    )
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
