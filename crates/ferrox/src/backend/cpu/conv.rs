//! CPU kernel of convolution: the shape geometry, and im2col + gemm.
//!
//! im2col + gemm. Output positions are processed in chunks; for each
//! chunk the receptive fields are gathered into a `[rows, groups, kernel...,
//! C_in / groups]` matrix (zeros where the window hangs over the padding),
//! and each group's slice of it is multiplied by that group's weights, read
//! transposed in place, straight into the group's output channels. A 1x1
//! kernel with stride 1 and no padding skips the gather and multiplies the
//! (contiguous) input directly. bfloat16 is gathered as f32, multiplied in
//! f32 and rounded once.

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::matmul::{Epilogue, MatKernel, MatMut, MatRef};
use crate::backend::cpu::parallel::worth_splitting;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use half::{bf16, f16};
use rayon::prelude::*;

/// Gathered elements per chunk of output positions: bounds the im2col
/// buffer (4 MiB of f32) while keeping each gemm large.
pub(crate) const CHUNK_ELEMS: usize = 1 << 20;

/// Spatial dimensions the kernel handles (conv1d, conv2d, and room for 3-D).
pub(crate) const MAX_SPATIAL: usize = 3;

/// Strides, padding, dilation (one per spatial dimension) and groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConvParams<'a> {
    pub(crate) stride: &'a [usize],
    pub(crate) padding: &'a [usize],
    pub(crate) dilation: &'a [usize],
    pub(crate) groups: usize,
}

/// Everything the kernel needs to know about the shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConvGeometry {
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
    pub(crate) fn new(
        op: &str,
        input: &[usize],
        weight: &[usize],
        p: &ConvParams<'_>,
    ) -> Result<Self> {
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

    pub(crate) fn out_shape(&self) -> Vec<usize> {
        let mut s = vec![self.batch];
        s.extend(&self.out_spatial);
        s.push(self.c_out);
        s
    }
}

/// The convolution of `x` with weights `w` under `p` into a fresh output
/// described by `out`; `op` names the op in errors.
pub(crate) fn eval(
    op: &str,
    x: &Operand<'_>,
    w: &Operand<'_>,
    p: &ConvParams<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    let params = p;
    let geo = ConvGeometry::new(op, x.shape, w.shape, params)?;
    let mut storage = out_storage(out)?;
    match out.dtype {
        DType::Float32 => {
            conv_kernel::<f32, f32>(x, w, &geo, params, storage.as_mut_slice(), |v| v)?
        }
        DType::Float64 => {
            conv_kernel::<f64, f64>(x, w, &geo, params, storage.as_mut_slice(), |v| v)?
        }
        DType::Float16 => {
            conv_kernel::<f16, f16>(x, w, &geo, params, storage.as_mut_slice(), |v| v)?
        }
        DType::BFloat16 => {
            let mut wide = vec![0f32; storage.as_slice::<bf16>().len()];
            conv_kernel::<bf16, f32>(x, w, &geo, params, &mut wide, f32::from)?;
            for (o, &v) in storage.as_mut_slice::<bf16>().iter_mut().zip(&wide) {
                *o = bf16::from_f32(v);
            }
        }
        d => return Err(Error::dtype(op, format!("dtype {d} is not supported"))),
    }
    Ok(Data::contiguous(storage, out.shape))
}

/// The strided input, read through its own strides (never copied whole).
pub(crate) struct InputView<'a, T> {
    raw: &'a [T],
    offset: isize,
    /// Strides of `[N, spatial..., C]`.
    strides: &'a [isize],
}

/// Computes the convolution into `dst` (the contiguous output in the
/// compute type `C`); `widen` converts input elements to `C`.
pub(crate) fn conv_kernel<T: Pod + Element, C: MatKernel>(
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
pub(crate) fn gather_rows<T: Pod, C: Pod + Default>(
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
