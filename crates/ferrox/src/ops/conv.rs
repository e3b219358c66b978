//! Convolution in MLX's channels-last layout: [`conv1d`] and [`conv2d`].
//!
//! Input `[N, spatial..., C_in]`, weight `[C_out, kernel..., C_in / groups]`,
//! output `[N, out_spatial..., C_out]` with
//! `out = (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`.
//! Like MLX (and unlike numpy's `convolve`), this is cross-correlation: the
//! kernel is not flipped.
//!
//! Kernel: im2col + gemm. Output positions are processed in chunks; for each
//! chunk the receptive fields are gathered into a `[rows, groups, kernel...,
//! C_in / groups]` matrix (zeros where the window hangs over the padding),
//! and each group's slice of it is multiplied by that group's weights, read
//! transposed in place, straight into the group's output channels. A 1x1
//! kernel with stride 1 and no padding skips the gather and multiplies the
//! (contiguous) input directly. bfloat16 is gathered as f32, multiplied in
//! f32 and rounded once.

use super::matmul::{Epilogue, MatKernel, MatMut, MatRef};
use crate::array::checked_numel;
use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::parallel::worth_splitting;
use crate::dtype::Element;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::runtime::memory::Pod;
use crate::{Array, DType, Error, Result};
use half::{bf16, f16};
use rayon::prelude::*;

/// Gathered elements per chunk of output positions: bounds the im2col
/// buffer (4 MiB of f32) while keeping each gemm large.
const CHUNK_ELEMS: usize = 1 << 20;

/// Spatial dimensions the kernel handles (conv1d, conv2d, and room for 3-D).
const MAX_SPATIAL: usize = 3;

/// Strides, padding, dilation (one per spatial dimension) and groups.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConvParams<'a> {
    stride: &'a [usize],
    padding: &'a [usize],
    dilation: &'a [usize],
    groups: usize,
}

/// Everything the kernel needs to know about the shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConvGeometry {
    batch: usize,
    in_spatial: Vec<usize>,
    c_in: usize,
    kernel: Vec<usize>,
    c_out: usize,
    out_spatial: Vec<usize>,
    groups: usize,
    /// Product of `kernel`.
    kernel_volume: usize,
    /// Product of `out_spatial`.
    out_positions: usize,
}

impl ConvGeometry {
    /// Validates shapes and parameters; every error names `op` and the
    /// offending values.
    fn new(op: &str, input: &[usize], weight: &[usize], p: &ConvParams<'_>) -> Result<Self> {
        let nd = p.stride.len();
        if nd == 0 || nd > MAX_SPATIAL || p.padding.len() != nd || p.dilation.len() != nd {
            return Err(Error::value(op, format!("unsupported parameters {p:?}")));
        }
        let layout = if nd == 1 {
            "[N, L, C_in]"
        } else {
            "[N, H, W, C_in]"
        };
        let wlayout = if nd == 1 {
            "[C_out, K, C_in / groups]"
        } else {
            "[C_out, KH, KW, C_in / groups]"
        };
        if input.len() != nd + 2 {
            return Err(Error::shape(
                op,
                format!(
                    "input must have {} dimensions {layout}, got shape {input:?}",
                    nd + 2
                ),
            ));
        }
        if weight.len() != nd + 2 {
            return Err(Error::shape(
                op,
                format!(
                    "weight must have {} dimensions {wlayout}, got shape {weight:?}",
                    nd + 2
                ),
            ));
        }
        for (name, v) in [("stride", p.stride), ("dilation", p.dilation)] {
            if v.contains(&0) {
                return Err(Error::value(
                    op,
                    format!("{name} must be positive, got {v:?}"),
                ));
            }
        }
        let groups = p.groups;
        let (c_in, c_out) = (input[nd + 1], weight[0]);
        if groups == 0 {
            return Err(Error::value(op, "groups must be positive, got 0"));
        }
        if c_in % groups != 0 {
            return Err(Error::shape(
                op,
                format!("input channels ({c_in}) must be divisible by groups ({groups})"),
            ));
        }
        if c_out % groups != 0 {
            return Err(Error::shape(
                op,
                format!("output channels ({c_out}) must be divisible by groups ({groups})"),
            ));
        }
        if weight[nd + 1] != c_in / groups {
            return Err(Error::shape(
                op,
                format!(
                    "weight has shape {weight:?} but the input has {c_in} channels in {groups} \
                     group(s), so the weight's last dimension must be {}",
                    c_in / groups
                ),
            ));
        }
        let kernel = weight[1..nd + 1].to_vec();
        if kernel.contains(&0) {
            return Err(Error::shape(
                op,
                format!("kernel size must be positive, got weight shape {weight:?}"),
            ));
        }
        let mut out_spatial = Vec::with_capacity(nd);
        for d in 0..nd {
            let too_big = || {
                Error::value(
                    op,
                    format!("sizes overflow for input {input:?} and weight {weight:?}"),
                )
            };
            // The kernel forms `out_idx * stride + k * dilation - padding`
            // (at most the padded size) in isize: bound the padded size.
            let padded = p.padding[d]
                .checked_mul(2)
                .and_then(|x| x.checked_add(input[d + 1]))
                .filter(|&x| x <= isize::MAX as usize)
                .ok_or_else(too_big)?;
            let span = (kernel[d] - 1)
                .checked_mul(p.dilation[d])
                .and_then(|x| x.checked_add(1))
                .ok_or_else(too_big)?;
            if span > padded {
                return Err(Error::shape(
                    op,
                    format!(
                        "the dilated kernel (size {span} along spatial axis {d}) is larger than the \
                         padded input (size {padded}); input {input:?}, weight {weight:?}, padding \
                         {:?}, dilation {:?}",
                        p.padding, p.dilation
                    ),
                ));
            }
            out_spatial.push((padded - span) / p.stride[d] + 1);
        }
        // Every product the kernel forms must be representable (empty
        // arrays may have huge dimensions next to a zero).
        let kernel_volume = checked_numel(op, &kernel)?;
        checked_numel(op, &[kernel_volume, c_in])?;
        let out_positions = checked_numel(op, &out_spatial)?;
        checked_numel(op, &[input[0], out_positions, c_out])?;
        Ok(ConvGeometry {
            batch: input[0],
            in_spatial: input[1..nd + 1].to_vec(),
            c_in,
            kernel,
            c_out,
            out_spatial,
            groups,
            kernel_volume,
            out_positions,
        })
    }

    fn out_shape(&self) -> Vec<usize> {
        let mut s = vec![self.batch];
        s.extend(&self.out_spatial);
        s.push(self.c_out);
        s
    }
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

fn convolution(
    op: &'static str,
    input: &Array,
    weight: &Array,
    params: ConvParams<'_>,
) -> Result<Array> {
    let geo = ConvGeometry::new(op, input.shape(), weight.shape(), &params)?;
    let dtype = DType::promote(input.dtype(), weight.dtype());
    if !dtype.is_float() {
        return Err(Error::dtype(
            op,
            format!(
                "only floating point types are supported, got input {} and weight {}",
                input.dtype(),
                weight.dtype()
            ),
        ));
    }
    let prim = Convolution {
        stride: params.stride.to_vec(),
        padding: params.padding.to_vec(),
        dilation: params.dilation.to_vec(),
        groups: params.groups,
    };
    Ok(Array::from_op(
        geo.out_shape(),
        dtype,
        prim,
        vec![input.astype(dtype)?, weight.astype(dtype)?],
    ))
}

/// A convolution over `stride.len()` spatial dimensions (the transform
/// rules' builder; `conv1d` and `conv2d` are its public faces).
pub(super) fn convolution_nd(
    input: &Array,
    weight: &Array,
    stride: &[usize],
    padding: &[usize],
    dilation: &[usize],
    groups: usize,
) -> Result<Array> {
    let op = match stride.len() {
        1 => "conv1d",
        2 => "conv2d",
        _ => "convolution",
    };
    let params = ConvParams {
        stride,
        padding,
        dilation,
        groups,
    };
    convolution(op, input, weight, params)
}

/// 1-D convolution (cross-correlation) over channels-last input.
///
/// `input` is `[N, L, C_in]`, `weight` is `[C_out, K, C_in / groups]`; the
/// result is `[N, L_out, C_out]` with
/// `L_out = (L + 2 * padding - dilation * (K - 1) - 1) / stride + 1`.
/// Input and output channels split into `groups` independent groups.
/// Floating point dtypes only; mixed dtypes promote.
///
/// ```
/// use ferrox::{conv1d, Array};
/// // One channel, kernel [1, 2]: each output is x[i] + 2 * x[i + 1].
/// let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 4, 1])?;
/// let w = Array::from_slice(&[1.0f32, 2.0], &[1, 2, 1])?;
/// let y = conv1d(&x, &w, 1, 0, 1, 1)?;
/// assert_eq!(y.shape(), &[1, 3, 1]);
/// assert_eq!(y.to_vec::<f32>()?, vec![5.0, 8.0, 11.0]);
/// assert!(conv1d(&x, &w, 0, 0, 1, 1).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conv1d(
    input: &Array,
    weight: &Array,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
) -> Result<Array> {
    let params = ConvParams {
        stride: &[stride],
        padding: &[padding],
        dilation: &[dilation],
        groups,
    };
    convolution("conv1d", input, weight, params)
}

/// 2-D convolution (cross-correlation) over channels-last input.
///
/// `input` is `[N, H, W, C_in]`, `weight` is `[C_out, KH, KW, C_in / groups]`;
/// `stride`, `padding` and `dilation` are `(height, width)` pairs and the
/// result is `[N, H_out, W_out, C_out]` (see [`conv1d`] for the size rule).
/// Floating point dtypes only; mixed dtypes promote.
///
/// ```
/// use ferrox::{conv2d, ones, DType};
/// let x = ones(&[1, 4, 4, 2], DType::Float32)?;
/// let w = ones(&[3, 3, 3, 2], DType::Float32)?;
/// let y = conv2d(&x, &w, (1, 1), (1, 1), (1, 1), 1)?;
/// assert_eq!(y.shape(), &[1, 4, 4, 3]);
/// // A corner sees 2x2 of the 3x3 window over 2 channels; the centre all of it.
/// assert_eq!(y.to_vec::<f32>()?[0], 8.0);
/// assert_eq!(y.to_vec::<f32>()?[(4 + 1) * 3], 18.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn conv2d(
    input: &Array,
    weight: &Array,
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
) -> Result<Array> {
    let params = ConvParams {
        stride: &[stride.0, stride.1],
        padding: &[padding.0, padding.1],
        dilation: &[dilation.0, dilation.1],
        groups,
    };
    convolution("conv2d", input, weight, params)
}

// ---------------------------------------------------------------------------
// Primitive
// ---------------------------------------------------------------------------

/// The primitive of [`conv1d`] and [`conv2d`] (any number of spatial
/// dimensions); inputs `input, weight` already have the output dtype.
///
/// ```
/// let x = ferrox::ones(&[1, 3, 1], ferrox::DType::Float32)?;
/// let y = ferrox::conv1d(&x, &x, 1, 0, 1, 1)?;
/// assert_eq!(y.primitive().unwrap().name(), "conv1d");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Convolution {
    /// Step between windows, per spatial dimension.
    pub stride: Vec<usize>,
    /// Zeros added at both ends, per spatial dimension.
    pub padding: Vec<usize>,
    /// Step between kernel taps, per spatial dimension.
    pub dilation: Vec<usize>,
    /// Number of channel groups.
    pub groups: usize,
}

impl Primitive for Convolution {
    fn name(&self) -> &'static str {
        match self.stride.len() {
            1 => "conv1d",
            2 => "conv2d",
            _ => "convolution",
        }
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.name();
        let [x, w] = inputs else {
            return Err(Error::runtime(
                op,
                format!("expected 2 inputs, got {}", inputs.len()),
            ));
        };
        let params = ConvParams {
            stride: &self.stride,
            padding: &self.padding,
            dilation: &self.dilation,
            groups: self.groups,
        };
        let geo = ConvGeometry::new(op, x.shape, w.shape, &params)?;
        let mut storage = out_storage(out)?;
        match out.dtype {
            DType::Float32 => {
                conv_kernel::<f32, f32>(x, w, &geo, &params, storage.as_mut_slice(), |v| v)?
            }
            DType::Float64 => {
                conv_kernel::<f64, f64>(x, w, &geo, &params, storage.as_mut_slice(), |v| v)?
            }
            DType::Float16 => {
                conv_kernel::<f16, f16>(x, w, &geo, &params, storage.as_mut_slice(), |v| v)?
            }
            DType::BFloat16 => {
                let mut wide = vec![0f32; storage.as_slice::<bf16>().len()];
                conv_kernel::<bf16, f32>(x, w, &geo, &params, &mut wide, f32::from)?;
                for (o, &v) in storage.as_mut_slice::<bf16>().iter_mut().zip(&wide) {
                    *o = bf16::from_f32(v);
                }
            }
            d => return Err(Error::dtype(op, format!("dtype {d} is not supported"))),
        }
        Ok(Data::contiguous(storage, out.shape))
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        super::conv_rules::vjp(self, primals, cotangent, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        super::conv_rules::jvp(self, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        super::conv_rules::vmap(self, inputs, axes)
    }
    crate::primitive_common!();
}

/// The strided input, read through its own strides (never copied whole).
struct InputView<'a, T> {
    raw: &'a [T],
    offset: isize,
    /// Strides of `[N, spatial..., C]`.
    strides: &'a [isize],
}

/// Computes the convolution into `dst` (the contiguous output in the
/// compute type `C`); `widen` converts input elements to `C`.
fn conv_kernel<T: Pod + Element, C: MatKernel>(
    x: &Operand<'_>,
    w: &Operand<'_>,
    geo: &ConvGeometry,
    p: &ConvParams<'_>,
    dst: &mut [C],
    widen: impl Fn(T) -> C + Sync + Copy,
) -> Result<()> {
    let positions = geo.batch * geo.out_positions;
    if positions == 0 || geo.c_out == 0 {
        return Ok(());
    }
    let groups = geo.groups;
    let (cin_g, cout_g) = (geo.c_in / groups, geo.c_out / groups);
    let kk = geo.kernel_volume;
    let depth = kk * cin_g; // the contraction length per group
    // Weights as a contiguous [C_out, kernel..., C_in/g] matrix in C; group
    // g's (depth x cout_g) right operand is read transposed in place.
    let weights: Vec<C> = w.data.to_vec::<T>(w.shape).into_iter().map(widen).collect();
    let weight_group = |g: usize| {
        MatRef::new(
            &weights,
            g * cout_g * depth,
            (depth, cout_g),
            (1, depth.max(1)),
        )
    };
    if depth == 0 {
        // No input channels: every output is an empty sum.
        dst.fill(C::default());
        return Ok(());
    }

    let pointwise = kk == 1
        && p.stride.iter().all(|&s| s == 1)
        && p.padding.iter().all(|&q| q == 0)
        && x.data.is_contiguous(x.shape);
    if pointwise {
        // The input is already the [positions, C_in] im2col matrix.
        let converted: Vec<C>;
        let cols: &[C] = if T::DTYPE == C::DTYPE {
            // Same element type: the storage read as C is the input itself.
            x.data.raw::<C>()
        } else {
            converted = x.data.raw::<T>().iter().map(|&v| widen(v)).collect();
            &converted
        };
        for g in 0..groups {
            let lhs = MatRef::new(
                cols,
                x.data.offset + g * cin_g,
                (positions, cin_g),
                (geo.c_in, 1),
            )?;
            let out = MatMut::new(&mut dst[g * cout_g..], positions, cout_g, geo.c_out)?;
            C::product(out, lhs, weight_group(g)?, Epilogue::Store, true)?;
        }
        return Ok(());
    }

    let view = InputView {
        raw: x.data.raw::<T>(),
        offset: x.data.offset as isize,
        strides: &x.data.strides,
    };
    let row_len = groups * depth; // = kk * c_in
    let chunk_rows = (CHUNK_ELEMS / row_len).clamp(1, positions);
    let mut cols = vec![C::default(); chunk_rows * row_len];
    for r0 in (0..positions).step_by(chunk_rows) {
        let rows = chunk_rows.min(positions - r0);
        let cols = &mut cols[..rows * row_len];
        gather_rows(&view, geo, p, r0, cols, widen);
        for g in 0..groups {
            let lhs = MatRef::new(cols, g * depth, (rows, depth), (row_len, 1))?;
            let out = MatMut::new(
                &mut dst[r0 * geo.c_out + g * cout_g..],
                rows,
                cout_g,
                geo.c_out,
            )?;
            C::product(out, lhs, weight_group(g)?, Epilogue::Store, true)?;
        }
    }
    Ok(())
}

/// im2col: fills `cols` (rows of `groups * kernel volume * C_in/groups`)
/// with the receptive fields of output positions `r0..`, zeros where a tap
/// falls into the padding.
fn gather_rows<T: Pod, C: Pod + Default>(
    x: &InputView<'_, T>,
    geo: &ConvGeometry,
    p: &ConvParams<'_>,
    r0: usize,
    cols: &mut [C],
    widen: impl Fn(T) -> C + Sync + Copy,
) {
    let nd = geo.kernel.len();
    let cin_g = geo.c_in / geo.groups;
    let kk = geo.kernel_volume;
    let row_len = kk * geo.c_in;
    let per_image = geo.out_positions;
    let cs = x.strides[nd + 1];
    let fill_row = |r: usize, row: &mut [C]| {
        // Decompose the global output row into (image, output position).
        let (n, mut pos) = (r / per_image, r % per_image);
        let mut out_idx = [0usize; MAX_SPATIAL];
        for d in (0..nd).rev() {
            out_idx[d] = pos % geo.out_spatial[d];
            pos /= geo.out_spatial[d];
        }
        let base = x.offset + n as isize * x.strides[0];
        for t in 0..kk {
            // Tap t's input offset, or None if it lies in the padding.
            let mut rem = t;
            let mut off = Some(base);
            for d in (0..nd).rev() {
                let k = rem % geo.kernel[d];
                rem /= geo.kernel[d];
                let i =
                    (out_idx[d] * p.stride[d] + k * p.dilation[d]) as isize - p.padding[d] as isize;
                if i < 0 || i >= geo.in_spatial[d] as isize {
                    off = None;
                }
                off = off.map(|o| o + i * x.strides[d + 1]);
            }
            for g in 0..geo.groups {
                let dst = &mut row[(g * kk + t) * cin_g..(g * kk + t + 1) * cin_g];
                match off {
                    None => dst.fill(C::default()),
                    Some(o) => {
                        let start = o + (g * cin_g) as isize * cs;
                        if cs == 1 {
                            let src = &x.raw[start as usize..start as usize + cin_g];
                            for (v, &s) in dst.iter_mut().zip(src) {
                                *v = widen(s);
                            }
                        } else {
                            for (c, v) in dst.iter_mut().enumerate() {
                                *v = widen(x.raw[(start + c as isize * cs) as usize]);
                            }
                        }
                    }
                }
            }
        }
    };
    if worth_splitting(cols.len()) {
        cols.par_chunks_mut(row_len)
            .enumerate()
            .for_each(|(i, row)| fill_row(r0 + i, row));
    } else {
        for (i, row) in cols.chunks_mut(row_len).enumerate() {
            fill_row(r0 + i, row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::memory::Storage;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A leaf array over `values` laid out with arbitrary strides.
    fn strided(values: &[f64], shape: &[usize], strides: &[isize], offset: usize) -> Array {
        let mut st = Storage::new(std::mem::size_of_val(values), false).unwrap();
        st.as_mut_slice::<f64>().copy_from_slice(values);
        let data = Data {
            storage: Arc::new(st),
            strides: strides.to_vec(),
            offset,
        };
        Array::from_data(data, shape.to_vec(), DType::Float64)
    }

    /// Direct 2-D convolution over row-major f64 data (conv1d is H = 1).
    #[allow(clippy::type_complexity)]
    fn naive2d(
        x: &[f64],
        xs: [usize; 4],
        w: &[f64],
        ws: [usize; 4],
        s: (usize, usize),
        p: (usize, usize),
        d: (usize, usize),
        g: usize,
    ) -> (Vec<f64>, [usize; 4]) {
        let [n, h, wd, cin] = xs;
        let [cout, kh, kw, cin_g] = ws;
        let oh = (h + 2 * p.0 - d.0 * (kh - 1) - 1) / s.0 + 1;
        let ow = (wd + 2 * p.1 - d.1 * (kw - 1) - 1) / s.1 + 1;
        let cout_g = cout / g;
        let mut y = vec![0.0; n * oh * ow * cout];
        for b in 0..n {
            for i in 0..oh {
                for j in 0..ow {
                    for co in 0..cout {
                        let grp = co / cout_g;
                        let mut acc = 0.0;
                        for a in 0..kh {
                            for c in 0..kw {
                                let ii = (i * s.0 + a * d.0) as isize - p.0 as isize;
                                let jj = (j * s.1 + c * d.1) as isize - p.1 as isize;
                                if ii < 0 || jj < 0 || ii >= h as isize || jj >= wd as isize {
                                    continue;
                                }
                                for ci in 0..cin_g {
                                    let xv = x[((b * h + ii as usize) * wd + jj as usize) * cin
                                        + grp * cin_g
                                        + ci];
                                    acc += xv * w[((co * kh + a) * kw + c) * cin_g + ci];
                                }
                            }
                        }
                        y[((b * oh + i) * ow + j) * cout + co] = acc;
                    }
                }
            }
        }
        (y, [n, oh, ow, cout])
    }

    fn values(n: usize, seed: usize) -> Vec<f64> {
        (0..n)
            .map(|i| ((i * 7 + seed * 13) % 11) as f64 - 5.0)
            .collect()
    }

    #[test]
    fn conv1d_matches_naive() {
        let (xs, ws) = ([2, 1, 9, 4], [6, 1, 3, 2]);
        let x = values(2 * 9 * 4, 1);
        let w = values(6 * 3 * 2, 2);
        let (want, shape) = naive2d(&x, xs, &w, ws, (1, 2), (0, 1), (1, 2), 2);
        let xa = Array::from_slice(&x, &[2, 9, 4]).unwrap();
        let wa = Array::from_slice(&w, &[6, 3, 2]).unwrap();
        let y = conv1d(&xa, &wa, 2, 1, 2, 2).unwrap();
        assert_eq!(y.shape(), &[shape[0], shape[2], shape[3]]);
        assert_eq!(y.to_vec::<f64>().unwrap(), want);
    }

    #[test]
    fn conv2d_every_float_dtype() {
        let (xs, ws) = ([1, 5, 4, 2], [3, 2, 3, 2]);
        let x = values(40, 3);
        let w = values(36, 4);
        let (want, shape) = naive2d(&x, xs, &w, ws, (2, 1), (1, 1), (1, 1), 1);
        for dtype in [
            DType::Float32,
            DType::Float64,
            DType::Float16,
            DType::BFloat16,
        ] {
            let xa = Array::from_slice(&x, &xs).unwrap().astype(dtype).unwrap();
            let wa = Array::from_slice(&w, &ws).unwrap().astype(dtype).unwrap();
            let y = conv2d(&xa, &wa, (2, 1), (1, 1), (1, 1), 1).unwrap();
            assert_eq!(y.shape(), &shape);
            assert_eq!(y.dtype(), dtype);
            let got = y.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(got, want, "{dtype}");
        }
    }

    #[test]
    fn pointwise_and_non_contiguous_inputs() {
        // 1x1 kernel over contiguous input (no gather), then the same input
        // seen through transposed strides (gather path).
        let x = values(2 * 3 * 4 * 6, 5);
        let w = values(4 * 6, 6);
        let (want, _) = naive2d(
            &x,
            [2, 3, 4, 6],
            &w,
            [4, 1, 1, 6],
            (1, 1),
            (0, 0),
            (1, 1),
            1,
        );
        let wa = Array::from_slice(&w, &[4, 1, 1, 6]).unwrap();
        let xa = Array::from_slice(&x, &[2, 3, 4, 6]).unwrap();
        assert_eq!(
            conv2d(&xa, &wa, (1, 1), (0, 0), (1, 1), 1)
                .unwrap()
                .to_vec::<f64>()
                .unwrap(),
            want
        );
        // Store x with H and W swapped and view it back: strides [72, 6, 18, 1].
        let mut xt = vec![0.0; x.len()];
        for b in 0..2 {
            for i in 0..3 {
                for j in 0..4 {
                    for c in 0..6 {
                        xt[((b * 4 + j) * 3 + i) * 6 + c] = x[((b * 3 + i) * 4 + j) * 6 + c];
                    }
                }
            }
        }
        let xv = strided(&xt, &[2, 3, 4, 6], &[72, 6, 18, 1], 0);
        assert_eq!(
            conv2d(&xv, &wa, (1, 1), (0, 0), (1, 1), 1)
                .unwrap()
                .to_vec::<f64>()
                .unwrap(),
            want
        );
        // Reversed channels (negative channel stride) and a 3x3 kernel.
        let xr: Vec<f64> = x.chunks(6).flat_map(|c| c.iter().rev().copied()).collect();
        let xv = strided(&xr, &[2, 3, 4, 6], &[72, 24, 6, -1], 5);
        let w3 = values(2 * 3 * 3 * 6, 7);
        let (want, _) = naive2d(
            &x,
            [2, 3, 4, 6],
            &w3,
            [2, 3, 3, 6],
            (1, 1),
            (1, 1),
            (1, 1),
            1,
        );
        let w3a = Array::from_slice(&w3, &[2, 3, 3, 6]).unwrap();
        assert_eq!(
            conv2d(&xv, &w3a, (1, 1), (1, 1), (1, 1), 1)
                .unwrap()
                .to_vec::<f64>()
                .unwrap(),
            want
        );
    }

    #[test]
    fn large_input_spans_several_chunks() {
        // 1 x 70 x 70 x 16 with a 5x5 kernel: 4900 rows of 400 gathered
        // elements, more than one CHUNK_ELEMS chunk.
        let xs = [1, 70, 70, 16];
        let ws = [8, 5, 5, 16];
        let x = values(70 * 70 * 16, 8);
        let w = values(8 * 25 * 16, 9);
        let (want, _) = naive2d(&x, xs, &w, ws, (1, 1), (2, 2), (1, 1), 1);
        let y = conv2d(
            &Array::from_slice(&x, &xs).unwrap(),
            &Array::from_slice(&w, &ws).unwrap(),
            (1, 1),
            (2, 2),
            (1, 1),
            1,
        )
        .unwrap();
        assert_eq!(y.to_vec::<f64>().unwrap(), want);
    }

    #[test]
    fn errors_name_the_op_and_values() {
        let x = crate::ones(&[1, 5, 4], DType::Float32).unwrap();
        let w = crate::ones(&[2, 3, 2], DType::Float32).unwrap();
        let err = |r: Result<Array>| r.unwrap_err().to_string();
        assert_eq!(
            err(conv1d(&x, &w, 1, 0, 1, 3)),
            "conv1d: input channels (4) must be divisible by groups (3)"
        );
        assert_eq!(
            err(conv1d(&x, &w, 1, 0, 1, 0)),
            "conv1d: groups must be positive, got 0"
        );
        assert_eq!(
            err(conv1d(&x, &w, 0, 0, 1, 2)),
            "conv1d: stride must be positive, got [0]"
        );
        assert_eq!(
            err(conv1d(&x, &w, 1, 0, 0, 2)),
            "conv1d: dilation must be positive, got [0]"
        );
        assert_eq!(
            err(conv1d(&x, &w, 1, 0, 1, 1)),
            "conv1d: weight has shape [2, 3, 2] but the input has 4 channels in 1 group(s), so the \
             weight's last dimension must be 4"
        );
        let w3 = crate::ones(&[3, 3, 2], DType::Float32).unwrap();
        assert_eq!(
            err(conv1d(&x, &w3, 1, 0, 1, 2)),
            "conv1d: output channels (3) must be divisible by groups (2)"
        );
        assert!(err(conv1d(&x, &w, 1, 0, 3, 2)).starts_with("conv1d: the dilated kernel (size 7"));
        // Padding makes room: 5 + 2 = 7 fits the dilated kernel exactly.
        assert_eq!(conv1d(&x, &w, 1, 1, 3, 2).unwrap().shape(), &[1, 1, 2]);
        assert!(conv1d(&x, &w, 1, 1, 2, 2).is_ok());
        assert_eq!(
            err(conv1d(
                &crate::ones(&[5, 4], DType::Float32).unwrap(),
                &w,
                1,
                0,
                1,
                2
            )),
            "conv1d: input must have 3 dimensions [N, L, C_in], got shape [5, 4]"
        );
        assert!(
            err(conv2d(&x, &w, (1, 1), (0, 0), (1, 1), 1))
                .starts_with("conv2d: input must have 4 dimensions")
        );
        let xi = crate::ones(&[1, 5, 4], DType::Int32).unwrap();
        assert!(err(conv1d(&xi, &xi, 1, 0, 1, 1)).starts_with("conv1d: only floating point types"));
        let big = usize::MAX / 2;
        assert!(conv1d(&x, &w, 1, big, 1, 2).is_err());
        assert!(conv1d(&x, &w, 1, 0, big, 2).is_err());
        let w0 = crate::ones(&[2, 0, 2], DType::Float32).unwrap();
        assert!(
            err(conv1d(&x, &w0, 1, 0, 1, 2)).starts_with("conv1d: kernel size must be positive")
        );
    }

    #[test]
    fn huge_empty_shapes_are_errors_not_overflows() {
        // An empty array whose other dimensions overflow cannot be made
        // (numpy: "array is too big"), so conv never sees one...
        let big = 1usize << 40;
        let e = crate::zeros(&[0, big, big, 1], DType::Float32).unwrap_err();
        assert!(e.to_string().starts_with("zeros: shape"), "{e}");
        // ... and a padded size beyond isize is an error, not an overflow.
        let x = crate::ones(&[1, 3, 1], DType::Float32).unwrap();
        let w = crate::ones(&[1, 1, 1], DType::Float32).unwrap();
        let e = conv1d(&x, &w, 1 << 62, 1 << 62, 1, 1).unwrap_err();
        assert!(e.to_string().starts_with("conv1d: sizes overflow"), "{e}");
        let x = crate::ones(&[1, 4, 1], DType::Float32).unwrap();
        let w = crate::zeros(&[0, 1, 1], DType::Float32).unwrap();
        assert_eq!(conv1d(&x, &w, 1, 0, 1, 1).unwrap().shape(), &[1, 4, 0]);
    }

    #[test]
    fn empty_batch_and_zero_channels() {
        let x = crate::ones(&[0, 5, 2], DType::Float32).unwrap();
        let w = crate::ones(&[3, 2, 2], DType::Float32).unwrap();
        assert_eq!(conv1d(&x, &w, 1, 0, 1, 1).unwrap().shape(), &[0, 4, 3]);
        let x = crate::ones(&[1, 5, 0], DType::Float32).unwrap();
        let w = crate::ones(&[3, 2, 0], DType::Float32).unwrap();
        assert_eq!(
            conv1d(&x, &w, 1, 0, 1, 1).unwrap().to_vec::<f32>().unwrap(),
            vec![0.0; 12]
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn conv2d_matches_naive_loop(
            n in 1usize..3, h in 1usize..7, w in 1usize..7, cin_g in 1usize..4, cout_g in 1usize..4,
            groups in 1usize..3, kh in 1usize..4, kw in 1usize..4, sh in 1usize..3, sw in 1usize..3,
            ph in 0usize..3, pw in 0usize..3, dh in 1usize..3, dw in 1usize..3, seed in 0usize..50,
        ) {
            let (cin, cout) = (cin_g * groups, cout_g * groups);
            prop_assume!(h + 2 * ph > dh * (kh - 1) && w + 2 * pw > dw * (kw - 1));
            let xs = [n, h, w, cin];
            let ws = [cout, kh, kw, cin_g];
            let x = values(xs.iter().product(), seed);
            let wv = values(ws.iter().product(), seed + 1);
            let (want, shape) = naive2d(&x, xs, &wv, ws, (sh, sw), (ph, pw), (dh, dw), groups);
            let y = conv2d(
                &Array::from_slice(&x, &xs).unwrap(), &Array::from_slice(&wv, &ws).unwrap(),
                (sh, sw), (ph, pw), (dh, dw), groups,
            ).unwrap();
            prop_assert_eq!(y.shape(), &shape);
            prop_assert_eq!(y.to_vec::<f64>().unwrap(), want);
        }
    }

    /// conv2d f32 GFLOP/s on a ResNet-like layer (run with --release
    /// --ignored --nocapture).
    #[test]
    #[ignore]
    fn bench_conv2d_f32() {
        let (xs, ws) = ([8, 56, 56, 64], [64, 3, 3, 64]);
        let x = crate::full(&xs, 0.5, DType::Float32).unwrap();
        let w = crate::full(&ws, 0.25, DType::Float32).unwrap();
        x.eval().unwrap();
        w.eval().unwrap();
        conv2d(&x, &w, (1, 1), (1, 1), (1, 1), 1)
            .unwrap()
            .eval()
            .unwrap();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            conv2d(&x, &w, (1, 1), (1, 1), (1, 1), 1)
                .unwrap()
                .eval()
                .unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        let flops = 2.0 * (8 * 56 * 56 * 64 * 9 * 64) as f64;
        println!(
            "conv2d f32 {xs:?} * {ws:?}: best {:.3} ms, {:.1} GFLOP/s",
            best * 1e3,
            flops / best / 1e9
        );
    }
}
