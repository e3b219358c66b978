//! Quantization, as MLX has it: [`quantize`] packs the rows of a float
//! matrix into `bits`-wide codes with a scale (and, in the affine mode, a
//! bias) per group of `group_size` elements, [`dequantize`] unpacks them,
//! [`quantized_matmul`] multiplies by a packed matrix without unpacking
//! it, and [`gather_qmm`] is its [`gather_mm`](crate::ops::matmul_forms::gather_mm)
//! form; [`qqmm`] and [`gather_qqmm`] quantize `x` too. The packing (bit layout, shapes, dtypes) and the rounding of
//! scales and biases are MLX's, so weights quantized by either library
//! work in the other.
//!
//! | mode | group size | bits | scales | biases |
//! |---|---|---|---|---|
//! | `"affine"` | 32, 64 (default), 128 | 1, 2, 3, 4 (default), 5, 6, 8 | the weight's dtype | yes |
//! | `"mxfp4"` | 32 | 4 | uint8 (e8m0) | no |
//! | `"mxfp8"` | 32 | 8 | uint8 (e8m0) | no |
//! | `"nvfp4"` | 16 | 4 | uint8 (e4m3) | no |
//!
//! The kernels are in [`crate::backend::cpu::quantized`]; derivative and
//! batching rules are in `grad.rs`.

mod grad;
mod qqmm;
#[cfg(test)]
mod tests;

pub use qqmm::{gather_qqmm, qqmm};

pub use crate::backend::cpu::quantized::QuantMode;

use crate::backend::cpu::quantized as kernels;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::outputs::not_single;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::matmul_forms::flat_batch;
use crate::ops::shape_rules::broadcast_shapes;
use crate::ops::views::{broadcast_to, reshape, squeeze};

// ---------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------

impl QuantMode {
    /// The mode named `name` (`"affine"`, `"mxfp4"`, `"mxfp8"`, `"nvfp4"`);
    /// an error naming `op` otherwise.
    ///
    /// ```
    /// use ferrox::QuantMode;
    /// assert_eq!(QuantMode::parse("quantize", "mxfp4")?, QuantMode::Mxfp4);
    /// assert!(QuantMode::parse("quantize", "int4").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn parse(op: &str, name: &str) -> Result<QuantMode> {
        match name {
            "affine" => Ok(QuantMode::Affine),
            "mxfp4" => Ok(QuantMode::Mxfp4),
            "mxfp8" => Ok(QuantMode::Mxfp8),
            "nvfp4" => Ok(QuantMode::Nvfp4),
            other => Err(Error::value(
                op,
                format!(
                    "invalid quantization mode '{other}' (expected 'affine', 'mxfp4', 'mxfp8' or 'nvfp4')"
                ),
            )),
        }
    }

    /// `group_size` and `bits` (or the mode's defaults), checked against
    /// what the mode supports.
    fn params(
        self,
        op: &str,
        group_size: Option<usize>,
        bits: Option<usize>,
    ) -> Result<(usize, usize)> {
        let (dg, db) = self.defaults();
        let (gs, b) = (group_size.unwrap_or(dg), bits.unwrap_or(db));
        if self == QuantMode::Affine {
            if ![32, 64, 128].contains(&gs) {
                return Err(Error::value(
                    op,
                    format!(
                        "the group size {gs} is not supported; the supported group sizes are 32, 64 and 128"
                    ),
                ));
            }
            if ![1, 2, 3, 4, 5, 6, 8].contains(&b) {
                return Err(Error::value(
                    op,
                    format!(
                        "{b} bits are not supported; the supported bits are 1, 2, 3, 4, 5, 6 and 8"
                    ),
                ));
            }
        } else {
            if gs != dg {
                return Err(Error::value(
                    op,
                    format!(
                        "{} quantization requires group size {dg}, got {gs}",
                        self.name()
                    ),
                ));
            }
            if b != db {
                return Err(Error::value(
                    op,
                    format!("{} quantization requires {db} bits, got {b}", self.name()),
                ));
            }
        }
        Ok((gs, b))
    }
}

/// The float dtypes the kernels compute in.
fn require_float(op: &str, what: &str, dtype: DType) -> Result<()> {
    match dtype {
        DType::Float32 | DType::Float16 | DType::BFloat16 => Ok(()),
        other => Err(Error::dtype(
            op,
            format!("{what} must be float32, float16 or bfloat16, got {other}"),
        )),
    }
}

fn check_global_scale(op: &str, mode: QuantMode, g: Option<&Array>) -> Result<()> {
    let Some(g) = g else { return Ok(()) };
    if mode != QuantMode::Nvfp4 {
        return Err(Error::value(
            op,
            "a global scale is only supported for 'nvfp4' quantization",
        ));
    }
    if g.size() != 1 {
        return Err(Error::value(
            op,
            format!(
                "the global scale must be a scalar, got shape {:?}",
                g.shape()
            ),
        ));
    }
    if g.dtype() != DType::Float32 {
        return Err(Error::dtype(
            op,
            format!("the global scale must be float32, got {}", g.dtype()),
        ));
    }
    Ok(())
}

/// The dtype the scales (and biases) are read in, checked against the
/// mode: affine needs float scales and biases, the other modes uint8
/// scales and no biases.
fn scales_dtype(
    op: &str,
    mode: QuantMode,
    scales: &Array,
    biases: Option<&Array>,
) -> Result<Option<DType>> {
    if mode == QuantMode::Affine {
        let Some(b) = biases else {
            return Err(Error::value(
                op,
                "biases must be provided for affine quantization",
            ));
        };
        let dt = DType::promote(scales.dtype(), b.dtype());
        if !dt.is_float() {
            return Err(Error::dtype(
                op,
                format!(
                    "scales and biases must be floating point, got {} and {}",
                    scales.dtype(),
                    b.dtype()
                ),
            ));
        }
        if scales.shape() != b.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "scales and biases must have the same shape, got {:?} and {:?}",
                    scales.shape(),
                    b.shape()
                ),
            ));
        }
        return Ok(Some(dt));
    }
    if scales.dtype() != DType::UInt8 {
        return Err(Error::dtype(
            op,
            format!(
                "{} scales must be uint8, got {}",
                mode.name(),
                scales.dtype()
            ),
        ));
    }
    if biases.is_some() {
        return Err(Error::value(
            op,
            format!("biases must be None for '{}' quantization", mode.name()),
        ));
    }
    Ok(None)
}

/// Checks a packed `w` (uint32, `[..., rows, words]`) against its scales
/// (`[..., rows, groups]`) and returns the number of values per row.
fn packed_row_len(op: &str, w: &Array, scales: &Array, gs: usize, bits: usize) -> Result<usize> {
    if w.dtype() != DType::UInt32 {
        return Err(Error::dtype(
            op,
            format!("the packed matrix must be uint32, got {}", w.dtype()),
        ));
    }
    if w.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "the packed matrix must have at least 2 dimensions, got shape {:?}",
                w.shape()
            ),
        ));
    }
    let (ws, ss) = (w.shape(), scales.shape());
    let nd = ws.len();
    let words = ws[nd - 1];
    let bits_per_row = words.saturating_mul(32);
    let fits = ss.len() == nd
        && ws[..nd - 1] == ss[..nd - 1]
        && bits_per_row % bits == 0
        && ss[nd - 1].checked_mul(gs) == Some(bits_per_row / bits);
    if !fits {
        return Err(Error::shape(
            op,
            format!(
                "the packed matrix of shape {ws:?} and the scales of shape {ss:?} do not match \
                 with group_size={gs} and bits={bits} (scales need shape [..., rows, words * 32 / bits / group_size])"
            ),
        ));
    }
    Ok(bits_per_row / bits)
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

/// Quantizes the rows of `w` in groups of `group_size` elements, as MLX's
/// `quantize`: returns `(w_q, scales, biases)`, with `biases` present in
/// the affine mode only.
///
/// `w` needs at least 2 dimensions, a float dtype (float32, float16,
/// bfloat16) and a last dimension divisible by `group_size`. `w_q` is
/// uint32 of shape `[..., K * bits / 32]` (the codes of a row packed from
/// the lowest bits up); `scales` and `biases` are `[..., K / group_size]`,
/// in `w`'s dtype (affine) or uint8 codes (the floating point modes).
/// `None` takes the mode's default (affine: 64 and 4). `global_scale`
/// (nvfp4 only) is a float32 scalar.
///
/// ```
/// use ferrox::{dequantize, quantize, Array};
/// let w = Array::from_slice(&(0..64).map(|i| i as f32).collect::<Vec<_>>(), &[1, 64])?;
/// let (wq, scales, biases) = quantize(&w, Some(32), Some(4), "affine", None)?;
/// assert_eq!(wq.shape(), &[1, 8]);
/// assert_eq!(scales.shape(), &[1, 2]);
/// let biases = biases.unwrap();
/// let back = dequantize(&wq, &scales, Some(&biases), Some(32), Some(4), "affine", None, None)?;
/// let err = ferrox::max(&ferrox::abs(&(&back - &w)?)?, None, false)?.item::<f32>()?;
/// assert!(err <= 31.0 / 15.0 / 2.0 + 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn quantize(
    w: &Array,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    global_scale: Option<&Array>,
) -> Result<(Array, Array, Option<Array>)> {
    let op = "quantize";
    let mode = QuantMode::parse(op, mode)?;
    let (gs, bits) = mode.params(op, group_size, bits)?;
    if !w.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!(
                "only floating point arrays can be quantized, got {}",
                w.dtype()
            ),
        ));
    }
    require_float(op, "w", w.dtype())?;
    if w.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "the matrix to quantize must have at least 2 dimensions, got shape {:?}",
                w.shape()
            ),
        ));
    }
    let k = w.shape()[w.ndim() - 1];
    if k % gs != 0 {
        return Err(Error::shape(
            op,
            format!(
                "the last dimension of w (shape {:?}) must be divisible by the group size {gs}",
                w.shape()
            ),
        ));
    }
    check_global_scale(op, mode, global_scale)?;
    let mut qshape = w.shape().to_vec();
    let mut sshape = w.shape().to_vec();
    let last = qshape.len() - 1;
    qshape[last] = k * bits / 32;
    sshape[last] = k / gs;
    let sdtype = if mode == QuantMode::Affine {
        w.dtype()
    } else {
        DType::UInt8
    };
    let mut specs = vec![(qshape, DType::UInt32), (sshape.clone(), sdtype)];
    if mode == QuantMode::Affine {
        specs.push((sshape, sdtype));
    }
    let mut inputs = vec![w.clone()];
    if let Some(g) = global_scale {
        inputs.push(g.clone());
    }
    let prim = Quantize {
        mode,
        group_size: gs,
        bits,
    };
    let mut outs = Array::from_op_multi(specs, prim, inputs).into_iter();
    let (Some(wq), Some(s)) = (outs.next(), outs.next()) else {
        return Err(Error::runtime(op, "internal: outputs missing"));
    };
    Ok((wq, s, outs.next()))
}

/// Unpacks a matrix quantized by [`quantize`] (MLX's `dequantize`):
/// `scale * q + bias` per element (affine), or the code's value times the
/// group's scale (the floating point modes).
///
/// The result has `w`'s shape with the last dimension `words * 32 / bits`;
/// its dtype is `dtype`, or the scales' and biases' dtype (affine), or
/// bfloat16 (the other modes; float32 for nvfp4 with a `global_scale`, as
/// MLX). Affine values are computed in the scales' dtype, as MLX does.
///
/// ```
/// use ferrox::{dequantize, Array};
/// // Codes 0..8 packed in one word, scale 0.5, bias -1.
/// let w = Array::from_slice(&[0x7654_3210u32, 0, 0, 0], &[1, 4])?;
/// let s = Array::from_slice(&[0.5f32], &[1, 1])?;
/// let b = Array::from_slice(&[-1.0f32], &[1, 1])?;
/// let v = dequantize(&w, &s, Some(&b), Some(32), Some(4), "affine", None, None)?;
/// assert_eq!(v.to_vec::<f32>()?[..8], [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn dequantize(
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    global_scale: Option<&Array>,
    dtype: Option<DType>,
) -> Result<Array> {
    let op = "dequantize";
    let mode = QuantMode::parse(op, mode)?;
    if let Some(dt) = dtype {
        if !dt.is_float() {
            return Err(Error::dtype(
                op,
                format!("the output dtype must be floating point, got {dt}"),
            ));
        }
        require_float(op, "the output dtype", dt)?;
    }
    let sdt = scales_dtype(op, mode, scales, biases)?;
    let (gs, bits) = mode.params(op, group_size, bits)?;
    let row = packed_row_len(op, w, scales, gs, bits)?;
    check_global_scale(op, mode, global_scale)?;
    let mut shape = w.shape().to_vec();
    let last = shape.len() - 1;
    shape[last] = row;
    match (sdt, biases) {
        (Some(sdt), Some(b)) => {
            require_float(op, "scales and biases", sdt)?;
            let inputs = vec![w.clone(), scales.astype(sdt)?, b.astype(sdt)?];
            let prim = Dequantize {
                mode,
                group_size: gs,
                bits,
                dtype: sdt,
            };
            let out = Array::from_op(shape, sdt, prim, inputs);
            match dtype {
                Some(dt) if dt != sdt => out.astype(dt),
                _ => Ok(out),
            }
        }
        _ => {
            let mut inputs = vec![w.clone(), scales.clone()];
            if let Some(g) = global_scale {
                inputs.push(g.clone());
            }
            // MLX's default is bfloat16, and float32 with a global scale
            // (its float32 scale promotes the product).
            let dtype = dtype.unwrap_or(if global_scale.is_some() {
                DType::Float32
            } else {
                DType::BFloat16
            });
            let prim = Dequantize {
                mode,
                group_size: gs,
                bits,
                dtype,
            };
            Ok(Array::from_op(shape, dtype, prim, inputs))
        }
    }
}

/// `x @ W^T` (`transpose`, W stored as `[..., N, K]`, the usual layout of
/// a linear layer's weight) or `x @ W` (W stored as `[..., K, N]`) for the
/// matrix `W` quantized by [`quantize`], without unpacking `W` (MLX's
/// `quantized_matmul`).
///
/// `x` is `[..., M, K]` (or `[K]`); batch dimensions of `x` and `w`
/// broadcast. The result dtype is the promotion of `x`'s and the scales'
/// dtypes (affine) or `x`'s (the other modes); products accumulate in
/// float32.
///
/// ```
/// use ferrox::{quantize, quantized_matmul, ones, DType};
/// let w = ones(&[3, 64], DType::Float32)?;
/// let (wq, s, b) = quantize(&w, None, None, "affine", None)?;
/// let x = ones(&[2, 64], DType::Float32)?;
/// let y = quantized_matmul(&x, &wq, &s, b.as_ref(), true, None, None, "affine")?;
/// assert_eq!(y.shape(), &[2, 3]);
/// assert_eq!(y.to_vec::<f32>()?, vec![64.0; 6]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn quantized_matmul(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    transpose: bool,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
) -> Result<Array> {
    let mode = QuantMode::parse("quantized_matmul", mode)?;
    qmm_checked(
        "quantized_matmul",
        x,
        w,
        scales,
        biases,
        transpose,
        group_size,
        bits,
        mode,
    )
}

#[allow(clippy::too_many_arguments)]
fn qmm_checked(
    op: &str,
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    transpose: bool,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: QuantMode,
) -> Result<Array> {
    let sdt = scales_dtype(op, mode, scales, biases)?;
    let (gs, bits) = mode.params(op, group_size, bits)?;
    let row = packed_row_len(op, w, scales, gs, bits)?;
    let wn = w.ndim();
    let (k, n) = if transpose {
        (row, w.shape()[wn - 2])
    } else {
        (w.shape()[wn - 2], row)
    };
    if x.ndim() == 0 || x.shape()[x.ndim() - 1] != k {
        return Err(Error::shape(
            op,
            format!(
                "x has shape {:?} but the quantized matrix (w of shape {:?}, group_size={gs}, \
                 bits={bits}, transpose={transpose}) is {k} x {n}; the last dimension of x must be {k}",
                x.shape(),
                w.shape(),
            ),
        ));
    }
    let dtype = match sdt {
        Some(s) => DType::promote(x.dtype(), s),
        None => x.dtype(),
    };
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            format!(
                "x must be floating point, got {} (result dtype {dtype})",
                x.dtype()
            ),
        ));
    }
    require_float(op, "the result", dtype)?;
    let vector = x.ndim() == 1;
    let mut x2 = if vector {
        reshape(x, &[1, k as isize])?
    } else {
        x.clone()
    };
    let mut w2 = w.clone();
    let mut s2 = scales.clone();
    let mut b2 = biases.cloned();
    if sdt.is_some() {
        x2 = x2.astype(dtype)?;
        s2 = s2.astype(dtype)?;
        b2 = b2.map(|b| b.astype(dtype)).transpose()?;
    }
    if wn > 2 {
        let xb = &x2.shape()[..x2.ndim() - 2];
        let batch = broadcast_shapes(op, xb, &w.shape()[..wn - 2])?;
        let with = |a: &Array| -> Result<Array> {
            let mut s = batch.clone();
            s.extend_from_slice(&a.shape()[a.ndim() - 2..]);
            if a.shape() == s.as_slice() {
                Ok(a.clone())
            } else {
                broadcast_to(a, &s)
            }
        };
        x2 = with(&x2)?;
        w2 = with(&w2)?;
        s2 = with(&s2)?;
        b2 = b2.as_ref().map(with).transpose()?;
    }
    let mut shape = x2.shape().to_vec();
    let last = shape.len() - 1;
    shape[last] = n;
    crate::graph::layout::checked_numel(op, &shape)?;
    let mut inputs = vec![x2, w2, s2];
    inputs.extend(b2);
    let prim = QuantizedMatmul {
        mode,
        group_size: gs,
        bits,
        transpose,
    };
    let out = Array::from_op(shape, dtype, prim, inputs);
    if vector {
        squeeze(&out, Some(&[-2]))
    } else {
        Ok(out)
    }
}

/// [`quantized_matmul`] with matrix-level gather, the quantized form of
/// [`gather_mm`](crate::ops::matmul_forms::gather_mm) (MLX's
/// `gather_qmm`): `quantized_matmul(x[lhs_indices], W[rhs_indices])`,
/// where the indices pick entries of the flattened batch dimensions of
/// `x` (`[A..., M, K]`) and of `w`, `scales` and `biases` (`[B..., ...]`);
/// a missing index array takes every entry in order. The index arrays
/// broadcast together to `I` and the result is `[I..., M, N]`.
/// `sorted_indices` is accepted for MLX compatibility (a hint only).
///
/// ```
/// use ferrox::{gather_qmm, quantize, ones, Array, DType};
/// let w = ferrox::stack(&[ones(&[2, 32], DType::Float32)?,
///                         ferrox::full(&[2, 32], 2.0, DType::Float32)?], 0)?;
/// let (wq, s, b) = quantize(&w, Some(32), Some(4), "affine", None)?;
/// let x = ones(&[1, 1, 32], DType::Float32)?;
/// let idx = Array::from_slice(&[1u32, 0, 1], &[3])?;
/// let y = gather_qmm(&x, &wq, &s, b.as_ref(), None, Some(&idx), true, Some(32), Some(4), "affine", false)?;
/// assert_eq!(y.shape(), &[3, 1, 2]);
/// assert_eq!(y.to_vec::<f32>()?, vec![64.0, 64.0, 32.0, 32.0, 64.0, 64.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gather_qmm(
    x: &Array,
    w: &Array,
    scales: &Array,
    biases: Option<&Array>,
    lhs_indices: Option<&Array>,
    rhs_indices: Option<&Array>,
    transpose: bool,
    group_size: Option<usize>,
    bits: Option<usize>,
    mode: &str,
    sorted_indices: bool,
) -> Result<Array> {
    let op = "gather_qmm";
    let _ = sorted_indices;
    let mode = QuantMode::parse(op, mode)?;
    if lhs_indices.is_none() && rhs_indices.is_none() {
        return qmm_checked(op, x, w, scales, biases, transpose, group_size, bits, mode);
    }
    scales_dtype(op, mode, scales, biases)?;
    let (gs, b) = mode.params(op, group_size, bits)?;
    packed_row_len(op, w, scales, gs, b)?;
    if x.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "x must have at least 2 dimensions, got shape {:?}",
                x.shape()
            ),
        ));
    }
    let (xf, xi) = flat_batch(op, x, lhs_indices)?;
    let (wf, wi) = flat_batch(op, w, rhs_indices)?;
    let (sf, _) = flat_batch(op, scales, None)?;
    let bf = biases
        .map(|b| flat_batch(op, b, None).map(|(f, _)| f))
        .transpose()?;
    let shape = broadcast_shapes(op, xi.shape(), wi.shape())?;
    let xi = broadcast_to(&xi, &shape)?;
    let wi = broadcast_to(&wi, &shape)?;
    let take = |a: &Array, i: &Array| crate::ops::indexing::take(a, i, Some(0));
    let bs = bf.as_ref().map(|b| take(b, &wi)).transpose()?;
    qmm_checked(
        op,
        &take(&xf, &xi)?,
        &take(&wf, &wi)?,
        &take(&sf, &wi)?,
        bs.as_ref(),
        transpose,
        Some(gs),
        Some(b),
        mode,
    )
}

// ---------------------------------------------------------------------------
// Primitives
// ---------------------------------------------------------------------------

/// The primitive of [`quantize`]: input `w` (and the nvfp4 global scale),
/// outputs `[w_q, scales, biases]` (affine) or `[w_q, scales]`.
///
/// ```
/// let w = ferrox::ones(&[2, 64], ferrox::DType::Float32)?;
/// let (wq, _, _) = ferrox::quantize(&w, None, None, "affine", None)?;
/// assert!(wq.primitive().is_some());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Quantize {
    /// The quantization mode.
    pub mode: QuantMode,
    /// Elements per group.
    pub group_size: usize,
    /// Bits per element.
    pub bits: usize,
}

impl Primitive for Quantize {
    fn name(&self) -> &'static str {
        "quantize"
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let Some(w) = inputs.first() else {
            return Err(Error::runtime("quantize", "internal: no input"));
        };
        kernels::quantize(
            w,
            inputs.get(1),
            self.mode,
            self.group_size,
            self.bits,
            outs,
        )
    }
    fn output_shapes(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<Vec<usize>>>> {
        let w = input_shapes.first()?;
        let k = *w.last()?;
        let mut q = w.to_vec();
        let mut s = w.to_vec();
        *q.last_mut()? = k * self.bits / 32;
        *s.last_mut()? = k / self.group_size;
        let mut v = vec![q, s.clone()];
        if self.mode == QuantMode::Affine {
            v.push(s);
        }
        Some(Ok(v))
    }
    fn vmap_multi(
        &self,
        inputs: &[Array],
        axes: &[Option<usize>],
    ) -> Result<Vec<(Array, Option<usize>)>> {
        grad::quantize_vmap(self, inputs, axes)
    }
    crate::primitive_common!();
}

/// The primitive of [`dequantize`]: inputs `w, scales, biases` (affine,
/// scales and biases of the output dtype) or `w, scales` (and the nvfp4
/// global scale).
///
/// ```
/// let w = ferrox::ones(&[2, 64], ferrox::DType::Float32)?;
/// let (wq, s, b) = ferrox::quantize(&w, None, None, "affine", None)?;
/// let v = ferrox::dequantize(&wq, &s, b.as_ref(), None, None, "affine", None, None)?;
/// assert_eq!(v.primitive().unwrap().name(), "dequantize");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dequantize {
    /// The quantization mode.
    pub mode: QuantMode,
    /// Elements per group.
    pub group_size: usize,
    /// Bits per element.
    pub bits: usize,
    /// The output dtype.
    pub dtype: DType,
}

impl crate::graph::export::Exportable for Dequantize {
    const KIND: &'static str = "dequantize";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let op = "dequantize";
        let mode = self.mode.name();
        let (gs, bits, dt) = (Some(self.group_size), Some(self.bits), Some(self.dtype));
        match (self.mode, inputs) {
            (QuantMode::Affine, [w, s, b]) => dequantize(w, s, Some(b), gs, bits, mode, None, dt),
            (QuantMode::Affine, _) => Err(crate::graph::export::wrong_inputs(op, inputs.len())),
            (_, [w, s]) => dequantize(w, s, None, gs, bits, mode, None, dt),
            (_, [w, s, g]) => dequantize(w, s, None, gs, bits, mode, Some(g), dt),
            _ => Err(crate::graph::export::wrong_inputs(op, inputs.len())),
        }
    }
}

impl Primitive for Dequantize {
    fn name(&self) -> &'static str {
        "dequantize"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let w = input_shapes.first()?;
        let mut s = w.to_vec();
        *s.last_mut()? = w.last()? * 32 / self.bits;
        Some(Ok(s))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (w, s, b, g) = match (self.mode, inputs) {
            (QuantMode::Affine, [w, s, b]) => (w, s, Some(b), None),
            (QuantMode::Affine, _) => {
                return Err(Error::runtime("dequantize", "internal: expected 3 inputs"));
            }
            (_, [w, s]) => (w, s, None, None),
            (_, [w, s, g]) => (w, s, None, Some(g)),
            _ => return Err(Error::runtime("dequantize", "internal: inputs")),
        };
        kernels::dequantize(w, s, b, g, self.mode, self.group_size, self.bits, out)
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        grad::dequantize_vjp(self, primals, cotangent, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        grad::dequantize_jvp(self, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        grad::dequantize_vmap(self, inputs, axes)
    }
    crate::primitive_common!();
}

/// The primitive of [`quantized_matmul`]: inputs `x, w, scales[, biases]`
/// with broadcast batch dimensions, `x` at least 2-D.
///
/// ```
/// let w = ferrox::ones(&[2, 64], ferrox::DType::Float32)?;
/// let (wq, s, b) = ferrox::quantize(&w, None, None, "affine", None)?;
/// let y = ferrox::quantized_matmul(&w, &wq, &s, b.as_ref(), true, None, None, "affine")?;
/// assert_eq!(y.primitive().unwrap().name(), "quantized_matmul");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QuantizedMatmul {
    /// The quantization mode.
    pub mode: QuantMode,
    /// Elements per group.
    pub group_size: usize,
    /// Bits per element.
    pub bits: usize,
    /// `x @ W^T` (W stored `[N, K]`) rather than `x @ W`.
    pub transpose: bool,
}

impl crate::graph::export::Exportable for QuantizedMatmul {
    const KIND: &'static str = "quantized_matmul";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let op = "quantized_matmul";
        let (x, w, s, b) = match inputs {
            [x, w, s] => (x, w, s, None),
            [x, w, s, b] => (x, w, s, Some(b)),
            _ => return Err(crate::graph::export::wrong_inputs(op, inputs.len())),
        };
        qmm_checked(
            op,
            x,
            w,
            s,
            b,
            self.transpose,
            Some(self.group_size),
            Some(self.bits),
            self.mode,
        )
    }
}

impl Primitive for QuantizedMatmul {
    fn name(&self) -> &'static str {
        "quantized_matmul"
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let (x, w) = (input_shapes.first()?, input_shapes.get(1)?);
        let wn = w.len();
        let n = if self.transpose {
            w[wn.checked_sub(2)?]
        } else {
            w[wn.checked_sub(1)?] * 32 / self.bits
        };
        let mut s = x.to_vec();
        *s.last_mut()? = n;
        Some(Ok(s))
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let (x, w, s, b) = match inputs {
            [x, w, s] => (x, w, s, None),
            [x, w, s, b] => (x, w, s, Some(b)),
            _ => {
                return Err(Error::runtime(
                    "quantized_matmul",
                    format!("internal: {} inputs", inputs.len()),
                ));
            }
        };
        kernels::qmm(
            x,
            w,
            s,
            b,
            self.mode,
            self.group_size,
            self.bits,
            self.transpose,
            out,
        )
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        grad::qmm_vjp(self, primals, cotangent, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        grad::qmm_jvp(self, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        grad::qmm_vmap(self, inputs, axes)
    }
    crate::primitive_common!();
}
