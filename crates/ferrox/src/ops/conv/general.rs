//! The general convolution (MLX's `conv_general`: asymmetric padding,
//! input dilation, flipped kernels), the transposed convolutions built on
//! it, `conv3d`, and numpy's 1-D `convolve`. All compose the one
//! [`Convolution`](super::Convolution) primitive with views, `pad` and
//! `slice_update`, so their derivatives and batching come from those.

use super::convolution_nd;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::creation::zeros;
use crate::ops::indexing::slice_update;
use crate::ops::join::{PadMode, pad};
use crate::ops::views::{flip, reshape, slice};

/// The parameters of [`conv_general`], one entry per spatial dimension
/// (a single entry applies to all of them).
#[derive(Debug, Clone, Default)]
pub struct ConvGeneralParams<'a> {
    /// Step between windows (default 1).
    pub stride: &'a [usize],
    /// Zeros (negative: elements removed) before each spatial dimension.
    pub padding_lo: &'a [isize],
    /// Zeros (negative: elements removed) after each spatial dimension.
    pub padding_hi: &'a [isize],
    /// Step between kernel taps (default 1).
    pub kernel_dilation: &'a [usize],
    /// Step between input elements: `d - 1` zeros between neighbours
    /// (default 1).
    pub input_dilation: &'a [usize],
    /// Channel groups (0 means 1).
    pub groups: usize,
    /// Flip the kernel along its spatial dimensions (a true convolution
    /// rather than cross-correlation).
    pub flip: bool,
}

/// `values` with one entry per spatial dimension: as given, one entry
/// repeated, or `default` for none.
fn per_dim<T: Copy>(op: &str, what: &str, values: &[T], d: usize, default: T) -> Result<Vec<T>>
where
    T: std::fmt::Debug,
{
    match values.len() {
        0 => Ok(vec![default; d]),
        1 => Ok(vec![values[0]; d]),
        n if n == d => Ok(values.to_vec()),
        _ => Err(Error::value(
            op,
            format!("{what} {values:?} needs 1 or {d} entries (one per spatial dimension)"),
        )),
    }
}

/// A convolution over `input.ndim() - 2` spatial dimensions in MLX's
/// channels-last layout (`[N, spatial..., C_in]`, weight `[C_out,
/// kernel..., C_in / groups]`) with asymmetric padding, kernel and input
/// dilation and an optional kernel flip.
///
/// ```
/// use ferrox::{conv_general, Array, ConvGeneralParams};
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0], &[1, 3, 1])?;
/// let w = Array::from_slice(&[1.0f32, 10.0], &[1, 2, 1])?;
/// // Input dilation 2 reads [1, 0, 2, 0, 3]; one zero of padding before.
/// let p = ConvGeneralParams { padding_lo: &[1], input_dilation: &[2], ..Default::default() };
/// let y = conv_general(&x, &w, &p)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![10.0, 1.0, 20.0, 2.0, 30.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conv_general(input: &Array, weight: &Array, p: &ConvGeneralParams<'_>) -> Result<Array> {
    let op = "conv_general";
    if input.ndim() < 3 || weight.ndim() != input.ndim() {
        return Err(Error::shape(
            op,
            format!(
                "input (shape {:?}) must be [N, spatial..., C] and weight (shape {:?}) [C_out, kernel..., C] with as many dimensions",
                input.shape(),
                weight.shape()
            ),
        ));
    }
    let d = input.ndim() - 2;
    let stride = per_dim(op, "stride", p.stride, d, 1)?;
    let lo = per_dim(op, "padding", p.padding_lo, d, 0)?;
    let hi = per_dim(op, "padding", p.padding_hi, d, 0)?;
    let kdil = per_dim(op, "kernel_dilation", p.kernel_dilation, d, 1)?;
    let idil = per_dim(op, "input_dilation", p.input_dilation, d, 1)?;
    if let Some(&z) = idil.iter().chain(&stride).chain(&kdil).find(|&&v| v == 0) {
        return Err(Error::value(
            op,
            format!(
                "strides and dilations must be positive, got {z} (stride {stride:?}, kernel_dilation {kdil:?}, input_dilation {idil:?})"
            ),
        ));
    }
    let mut x = dilate(input, &idil)?;
    // Negative padding crops; positive padding is symmetric in the
    // primitive where it can be, explicit zeros otherwise.
    x = crop(&x, &lo, &hi)?;
    let lo_pos: Vec<usize> = lo.iter().map(|&v| v.max(0) as usize).collect();
    let hi_pos: Vec<usize> = hi.iter().map(|&v| v.max(0) as usize).collect();
    let symmetric = lo_pos == hi_pos;
    if !symmetric {
        let mut widths = vec![(0, 0); x.ndim()];
        for k in 0..d {
            widths[k + 1] = (lo_pos[k], hi_pos[k]);
        }
        x = pad(&x, &widths, PadMode::Constant(0.0))?;
    }
    let w = if p.flip {
        let axes: Vec<isize> = (1..=d as isize).collect();
        flip(weight, Some(&axes))?
    } else {
        weight.clone()
    };
    let padding = if symmetric { lo_pos } else { vec![0; d] };
    convolution_nd(&x, &w, &stride, &padding, &kdil, p.groups.max(1))
}

/// `x` with `dil - 1` zeros between neighbours along each spatial axis.
fn dilate(x: &Array, dil: &[usize]) -> Result<Array> {
    if dil.iter().all(|&v| v == 1) {
        return Ok(x.clone());
    }
    let mut shape = x.shape().to_vec();
    let mut strides = vec![1isize; x.ndim()];
    for (k, &v) in dil.iter().enumerate() {
        let n = shape[k + 1];
        shape[k + 1] = if n == 0 { 0 } else { (n - 1) * v + 1 };
        strides[k + 1] = v as isize;
    }
    let base = zeros(&shape, x.dtype())?;
    let start = vec![0isize; x.ndim()];
    let stop: Vec<isize> = shape.iter().map(|&s| s as isize).collect();
    slice_update(&base, x, &start, &stop, Some(&strides))
}

/// `x` with `-lo[k]` / `-hi[k]` elements removed from the ends of spatial
/// axis `k` where those paddings are negative.
fn crop(x: &Array, lo: &[isize], hi: &[isize]) -> Result<Array> {
    if lo.iter().chain(hi).all(|&v| v >= 0) {
        return Ok(x.clone());
    }
    let nd = x.ndim();
    let mut start = vec![0isize; nd];
    let mut stop: Vec<isize> = x.shape().iter().map(|&s| s as isize).collect();
    for k in 0..lo.len() {
        let n = x.shape()[k + 1] as isize;
        let (a, b) = ((-lo[k]).max(0), (-hi[k]).max(0));
        if a + b > n {
            return Err(Error::value(
                "conv_general",
                format!(
                    "negative padding ({}, {}) removes more than the {n} elements of spatial axis {k}",
                    lo[k], hi[k]
                ),
            ));
        }
        start[k + 1] = a;
        stop[k + 1] = n - b;
    }
    slice(x, &start, &stop, &vec![1; nd])
}

/// The transposed convolution (the gradient of a convolution with respect
/// to its input) over `input.ndim() - 2` spatial dimensions, MLX's
/// `conv_transpose{1,2,3}d`: input `[N, spatial..., C_in]`, weight `[C_out,
/// kernel..., C_in / groups]`, output size `(L - 1) * stride - 2 * padding
/// + dilation * (K - 1) + output_padding + 1`.
///
/// ```
/// use ferrox::{conv_transpose, Array};
/// let x = Array::from_slice(&[1.0f32, 2.0], &[1, 2, 1])?;
/// let w = Array::from_slice(&[1.0f32, 10.0, 100.0], &[1, 3, 1])?;
/// let y = conv_transpose(&x, &w, &[2], &[0], &[1], &[0], 1)?;
/// assert_eq!(y.shape(), &[1, 5, 1]);
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 10.0, 102.0, 20.0, 200.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conv_transpose(
    input: &Array,
    weight: &Array,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    output_padding: &[usize],
    groups: usize,
) -> Result<Array> {
    let op = "conv_transpose";
    if weight.ndim() < 3 || input.ndim() != weight.ndim() {
        return Err(Error::shape(
            op,
            format!(
                "input (shape {:?}) and weight (shape {:?}) must both be [batch, spatial..., channels]",
                input.shape(),
                weight.shape()
            ),
        ));
    }
    let d = weight.ndim() - 2;
    let stride = per_dim(op, "stride", stride, d, 1)?;
    let padding = per_dim(op, "padding", padding, d, 0)?;
    let dilation = per_dim(op, "dilation", dilation, d, 1)?;
    let out_pad = per_dim(op, "output_padding", output_padding, d, 0)?;
    if let Some(k) = (0..d).find(|&k| out_pad[k] >= stride[k].max(dilation[k])) {
        return Err(Error::value(
            op,
            format!(
                "output_padding {} must be smaller than the stride {} or the dilation {} (axis {k})",
                out_pad[k], stride[k], dilation[k]
            ),
        ));
    }
    let mut lo = Vec::with_capacity(d);
    let mut hi = Vec::with_capacity(d);
    for k in 0..d {
        let span = (dilation[k] * (weight.shape()[k + 1].saturating_sub(1))) as isize;
        lo.push(span - padding[k] as isize);
        hi.push(span - padding[k] as isize + out_pad[k] as isize);
    }
    let p = ConvGeneralParams {
        stride: &[1],
        padding_lo: &lo,
        padding_hi: &hi,
        kernel_dilation: &dilation,
        input_dilation: &stride,
        groups,
        flip: true,
    };
    conv_general(input, weight, &p)
}

/// 3-D convolution (cross-correlation) over channels-last input `[N, D, H,
/// W, C_in]` with weight `[C_out, KD, KH, KW, C_in / groups]`; see
/// [`crate::conv1d`] for the size rule.
///
/// ```
/// use ferrox::{conv3d, ones, DType};
/// let x = ones(&[1, 3, 3, 3, 1], DType::Float32)?;
/// let w = ones(&[2, 2, 2, 2, 1], DType::Float32)?;
/// let y = conv3d(&x, &w, [1, 1, 1], [0, 0, 0], [1, 1, 1], 1)?;
/// assert_eq!(y.shape(), &[1, 2, 2, 2, 2]);
/// assert_eq!(y.to_vec::<f32>()?[0], 8.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conv3d(
    input: &Array,
    weight: &Array,
    stride: [usize; 3],
    padding: [usize; 3],
    dilation: [usize; 3],
    groups: usize,
) -> Result<Array> {
    if input.ndim() != 5 || weight.ndim() != 5 {
        return Err(Error::shape(
            "conv3d",
            format!(
                "input (shape {:?}) must be [N, D, H, W, C] and weight (shape {:?}) [C_out, KD, KH, KW, C]",
                input.shape(),
                weight.shape()
            ),
        ));
    }
    convolution_nd(input, weight, &stride, &padding, &dilation, groups)
}

/// How much of a full 1-D convolution [`convolve`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvolveMode {
    /// Every overlap: `n + m - 1` values.
    Full,
    /// The centre `max(n, m)` values.
    Same,
    /// Only full overlaps: `max(n, m) - min(n, m) + 1` values.
    Valid,
}

/// numpy's discrete linear convolution of two 1-D arrays (the kernel is
/// flipped; the longer operand slides under the shorter one).
///
/// ```
/// use ferrox::{convolve, Array, ConvolveMode};
/// let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
/// let v = Array::from_slice(&[0.0f32, 1.0, 0.5], &[3])?;
/// assert_eq!(convolve(&a, &v, ConvolveMode::Full)?.to_vec::<f32>()?, vec![0.0, 1.0, 2.5, 4.0, 1.5]);
/// assert_eq!(convolve(&a, &v, ConvolveMode::Same)?.to_vec::<f32>()?, vec![1.0, 2.5, 4.0]);
/// assert_eq!(convolve(&a, &v, ConvolveMode::Valid)?.to_vec::<f32>()?, vec![2.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn convolve(a: &Array, v: &Array, mode: ConvolveMode) -> Result<Array> {
    let op = "convolve";
    if a.ndim() != 1 || v.ndim() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "both inputs must be 1-D, got shapes {:?} and {:?}",
                a.shape(),
                v.shape()
            ),
        ));
    }
    if a.size() == 0 || v.size() == 0 {
        return Err(Error::value(op, "inputs cannot be empty".to_string()));
    }
    let (long, short) = if v.size() > a.size() { (v, a) } else { (a, v) };
    let dtype = DType::promote(long.dtype(), short.dtype());
    let dtype = if dtype.is_float() {
        dtype
    } else {
        DType::Float32
    };
    let (n, m) = (long.size(), short.size());
    let (lo, hi) = match mode {
        ConvolveMode::Full => (m - 1, m - 1),
        ConvolveMode::Same => (m - 1 - (m - 1) / 2, (m - 1) / 2),
        ConvolveMode::Valid => (0, 0),
    };
    let x = reshape(&long.astype(dtype)?, &[1, n as isize, 1])?;
    let w = reshape(&short.astype(dtype)?, &[1, m as isize, 1])?;
    let p = ConvGeneralParams {
        padding_lo: &[lo as isize],
        padding_hi: &[hi as isize],
        flip: true,
        ..Default::default()
    };
    reshape(&conv_general(&x, &w, &p)?, &[-1])
}
