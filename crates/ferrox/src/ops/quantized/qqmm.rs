//! [`qqmm`] and [`gather_qqmm`]: products in which `x` is quantized too
//! (MLX's `qqmm`, `gather_qqmm`), composed of the family's primitives.
//!
//! `x` is quantized and dequantized in the floating point mode (`nvfp4`,
//! `mxfp8`, `mxfp4`) and multiplied with `w`: a packed `w` goes through the
//! quantized product (never unpacked whole), a float `w` is quantized and
//! dequantized like `x` first. On the CPU this is all the operation means
//! (MLX's GPU kernels multiply the codes in low precision; MLX's own CPU
//! backend implements a single row of `x` against a packed `w` only). The
//! affine mode has no meaning here and is refused: MLX's CPU path ignores
//! the biases. There is no derivative rule: the quantization of `x` has
//! none (MLX differentiates with quantized cotangent products on the GPU).

use super::{QuantMode, qmm_checked};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{divide, multiply};
use crate::ops::matmul::matmul;
use crate::ops::matmul_forms::gather_mm;
use crate::ops::views::{reshape, swapaxes};

/// The mode of a `qqmm` (a floating point one) and its group size and bits.
fn params(
    op: &str,
    mode: &str,
    group_size: Option<usize>,
    bits: Option<usize>,
) -> Result<(QuantMode, usize, usize)> {
    let m = QuantMode::parse(op, mode)?;
    if m == QuantMode::Affine {
        return Err(Error::value(
            op,
            "the 'affine' mode is not supported (x is quantized with a floating point mode: \
             'nvfp4', 'mxfp8' or 'mxfp4'); use quantized_matmul for affine weights",
        ));
    }
    let (gs, b) = m.params(op, group_size, bits)?;
    Ok((m, gs, b))
}

fn require_input_float(op: &str, what: &str, a: &Array) -> Result<()> {
    match a.dtype() {
        DType::Float32 | DType::Float16 | DType::BFloat16 => Ok(()),
        other => Err(Error::dtype(
            op,
            format!("{what} must be float32, float16 or bfloat16, got {other}"),
        )),
    }
}

/// Both global scales or neither (nvfp4 only).
fn global_scales(op: &str, mode: QuantMode, gx: Option<&Array>, gw: Option<&Array>) -> Result<()> {
    super::check_global_scale(op, mode, gx)?;
    super::check_global_scale(op, mode, gw)?;
    if gx.is_some() != gw.is_some() {
        return Err(Error::value(
            op,
            "either both global_scale_x and global_scale_w must be given, or neither",
        ));
    }
    Ok(())
}

/// `a` quantized and dequantized along its last dimension, in `dtype`.
#[allow(clippy::too_many_arguments)]
fn round_trip(
    op: &str,
    what: &str,
    a: &Array,
    mode: QuantMode,
    gs: usize,
    bits: usize,
    global_scale: Option<&Array>,
    dtype: DType,
) -> Result<Array> {
    let k = a.shape().last().copied().unwrap_or(0);
    if a.ndim() == 0 || k % gs != 0 {
        return Err(Error::shape(
            op,
            format!(
                "the last dimension of {what} (shape {:?}) must be divisible by the group size {gs}",
                a.shape()
            ),
        ));
    }
    let a2 = if a.ndim() == 1 {
        reshape(a, &[1, k as isize])?
    } else {
        a.clone()
    };
    let (q, s, _) = super::quantize(&a2, Some(gs), Some(bits), mode.name(), global_scale)?;
    let back = super::dequantize(
        &q,
        &s,
        None,
        Some(gs),
        Some(bits),
        mode.name(),
        global_scale,
        Some(dtype),
    )?;
    if a.ndim() == 1 {
        reshape(&back, &[k as isize])
    } else {
        Ok(back)
    }
}

/// The nvfp4 product's factor for `w`'s global scale (`g / (448 * 6)`,
/// as `dequantize` applies it), in `dtype`.
fn w_global_factor(gw: &Array, dtype: DType) -> Result<Array> {
    divide(gw, &Array::scalar(2688.0f32))?.astype(dtype)
}

/// `x @ w^T` with `x` quantized on the fly (MLX's `qqmm`): `w` is `[N, K]`,
/// either packed by [`quantize`](super::quantize) in `mode` (give its
/// `scales`) or a float matrix (quantized on the fly too). `x` is `[..., K]`
/// (float32, float16 or bfloat16); the result is `[..., N]` in `x`'s dtype.
///
/// `mode` is `"nvfp4"` (MLX's default; group 16, 4 bits), `"mxfp8"` or
/// `"mxfp4"`; `None` takes the mode's group size and bits. With nvfp4,
/// `global_scale_x` and `global_scale_w` (float32 scalars) come together or
/// not at all. Not differentiable.
///
/// ```
/// use ferrox::{qqmm, quantize, Array};
/// let w = Array::from_slice(&[1.0f32; 3 * 32], &[3, 32])?;
/// let (wq, s, _) = quantize(&w, None, None, "mxfp8", None)?;
/// let x = Array::from_slice(&[0.5f32; 32], &[1, 32])?;
/// let y = qqmm(&x, &wq, Some(&s), None, None, "mxfp8", None, None)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![16.0; 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn qqmm(
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    global_scale_x: Option<&Array>,
    global_scale_w: Option<&Array>,
) -> Result<Array> {
    let op = "qqmm";
    let (m, gs, b) = params(op, mode, group_size, bits)?;
    if w.ndim() != 2 {
        return Err(Error::shape(
            op,
            format!(
                "w must be a 2-D matrix, got shape {:?} (gather_qqmm takes batches)",
                w.shape()
            ),
        ));
    }
    product(
        op,
        x,
        w,
        scales,
        None,
        m,
        gs,
        b,
        global_scale_x,
        global_scale_w,
    )
}

/// [`qqmm`] with matrix-level gather (MLX's `gather_qqmm`), as
/// [`gather_qmm`](super::gather_qmm) is to
/// [`quantized_matmul`](super::quantized_matmul): `x` is `[A..., M, K]`,
/// `w` `[B..., N, K]` (packed, with `scales`, or float), the index arrays
/// pick flat batch entries of each (all in order when `None`) and broadcast
/// together to `I`; the result is `[I..., M, N]` in `x`'s dtype.
/// `sorted_indices` is a hint only.
///
/// ```
/// use ferrox::{gather_qqmm, quantize, Array};
/// let w = ferrox::stack(&[ferrox::full(&[2, 32], 1.0, ferrox::DType::Float32)?,
///                         ferrox::full(&[2, 32], 2.0, ferrox::DType::Float32)?], 0)?;
/// let (wq, s, _) = quantize(&w, None, None, "mxfp8", None)?;
/// let x = Array::from_slice(&[1.0f32; 32], &[1, 1, 32])?;
/// let idx = Array::from_slice(&[1u32, 0], &[2])?;
/// let y = gather_qqmm(&x, &wq, Some(&s), None, Some(&idx), None, None, "mxfp8", None, None, false)?;
/// assert_eq!(y.shape(), &[2, 1, 2]);
/// assert_eq!(y.to_vec::<f32>()?, vec![64.0, 64.0, 32.0, 32.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gather_qqmm(
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    global_scale_x: Option<&Array>,
    global_scale_w: Option<&Array>,
    sorted_indices: bool,
) -> Result<Array> {
    let op = "gather_qqmm";
    let (m, gs, b) = params(op, mode, group_size, bits)?;
    if x.ndim() < 2 || w.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "x and w must have at least 2 dimensions, got shapes {:?} and {:?}",
                x.shape(),
                w.shape()
            ),
        ));
    }
    let gather = Gather {
        lhs: lhs_indices,
        rhs: rhs_indices,
        sorted: sorted_indices,
    };
    product(
        op,
        x,
        w,
        scales,
        Some(gather),
        m,
        gs,
        b,
        global_scale_x,
        global_scale_w,
    )
}

struct Gather<'a> {
    lhs: Option<&'a Array>,
    rhs: Option<&'a Array>,
    sorted: bool,
}

#[allow(clippy::too_many_arguments)]
fn product(
    op: &str,
    x: &Array,
    w: &Array,
    scales: Option<&Array>,
    gather: Option<Gather<'_>>,
    mode: QuantMode,
    gs: usize,
    bits: usize,
    gx: Option<&Array>,
    gw: Option<&Array>,
) -> Result<Array> {
    require_input_float(op, "x", x)?;
    global_scales(op, mode, gx, gw)?;
    let dtype = x.dtype();
    let x_hat = round_trip(op, "x", x, mode, gs, bits, gx, dtype)?;
    if w.dtype() == DType::UInt32 {
        let Some(s) = scales else {
            return Err(Error::value(
                op,
                "scales must be provided when w is quantized (uint32)",
            ));
        };
        let y = match gather {
            None => qmm_checked(op, &x_hat, w, s, None, true, Some(gs), Some(bits), mode)?,
            Some(g) => super::gather_qmm(
                &x_hat,
                w,
                s,
                None,
                g.lhs,
                g.rhs,
                true,
                Some(gs),
                Some(bits),
                mode.name(),
                g.sorted,
            )?,
        };
        return match gw {
            Some(g) => multiply(&y, &w_global_factor(g, dtype)?),
            None => Ok(y),
        };
    }
    require_input_float(op, "w (not quantized)", w)?;
    if scales.is_some() {
        return Err(Error::value(
            op,
            format!(
                "scales must be None when w is not quantized (w is {})",
                w.dtype()
            ),
        ));
    }
    let k = x.shape().last().copied().unwrap_or(0);
    if w.shape().last() != Some(&k) {
        return Err(Error::shape(
            op,
            format!(
                "the last dimension of x (shape {:?}) must match the last dimension of w (shape {:?})",
                x.shape(),
                w.shape()
            ),
        ));
    }
    let w_hat = round_trip(op, "w", w, mode, gs, bits, gw, dtype)?;
    let wt = swapaxes(&w_hat, -1, -2)?;
    match gather {
        None => matmul(&x_hat, &wt),
        Some(g) => gather_mm(&x_hat, &wt, g.lhs, g.rhs),
    }
}
