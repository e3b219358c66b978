//! Convolution in MLX's channels-last layout: [`conv1d`], [`conv2d`],
//! [`conv3d`], the general form [`conv_general`], [`conv_transpose`] and
//! numpy's [`convolve`].
//!
//! Input `[N, spatial..., C_in]`, weight `[C_out, kernel..., C_in / groups]`,
//! output `[N, out_spatial..., C_out]` with
//! `out = (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1`.
//! Like MLX (and unlike numpy's `convolve`), this is cross-correlation: the
//! kernel is not flipped.
//!
//! The kernel (im2col + gemm) is in [`crate::backend::cpu::conv`].

mod general;
mod grad;
use crate::backend::cpu::conv::{self as kernels, ConvGeometry, ConvParams};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
pub use general::{
    ConvGeneralParams, ConvolveMode, conv_general, conv_transpose, conv3d, convolve,
};

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
        3 => "conv3d",
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

impl crate::graph::export::Exportable for Convolution {
    const KIND: &'static str = "convolution";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x, w] = crate::graph::export::args(inputs, "convolution")?;
        convolution_nd(
            x,
            w,
            &self.stride,
            &self.padding,
            &self.dilation,
            self.groups,
        )
    }
}

impl Primitive for Convolution {
    fn name(&self) -> &'static str {
        match self.stride.len() {
            1 => "conv1d",
            2 => "conv2d",
            3 => "conv3d",
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
        kernels::eval(op, x, w, &params, out)
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let [x, w] = input_shapes else {
            return None;
        };
        let params = ConvParams {
            stride: &self.stride,
            padding: &self.padding,
            dilation: &self.dilation,
            groups: self.groups,
        };
        Some(ConvGeometry::new(self.name(), x, w, &params).map(|g| g.out_shape()))
    }
    fn vjp(
        &self,
        primals: &[Array],
        cotangent: &Array,
        _output: &Array,
        argnums: &[usize],
    ) -> Result<Vec<Array>> {
        grad::vjp(self, primals, cotangent, argnums)
    }
    fn jvp(&self, primals: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        grad::jvp(self, primals, tangents, output)
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        grad::vmap(self, inputs, axes)
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::storage::Storage;
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
        let x = crate::ops::creation::ones(&[1, 5, 4], DType::Float32).unwrap();
        let w = crate::ops::creation::ones(&[2, 3, 2], DType::Float32).unwrap();
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
        let w3 = crate::ops::creation::ones(&[3, 3, 2], DType::Float32).unwrap();
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
                &crate::ops::creation::ones(&[5, 4], DType::Float32).unwrap(),
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
        let xi = crate::ops::creation::ones(&[1, 5, 4], DType::Int32).unwrap();
        assert!(err(conv1d(&xi, &xi, 1, 0, 1, 1)).starts_with("conv1d: only floating point types"));
        let big = usize::MAX / 2;
        assert!(conv1d(&x, &w, 1, big, 1, 2).is_err());
        assert!(conv1d(&x, &w, 1, 0, big, 2).is_err());
        let w0 = crate::ops::creation::ones(&[2, 0, 2], DType::Float32).unwrap();
        assert!(
            err(conv1d(&x, &w0, 1, 0, 1, 2)).starts_with("conv1d: kernel size must be positive")
        );
    }

    #[test]
    fn huge_empty_shapes_are_errors_not_overflows() {
        // An empty array whose other dimensions overflow cannot be made
        // (numpy: "array is too big"), so conv never sees one...
        let big = 1usize << 40;
        let e = crate::ops::creation::zeros(&[0, big, big, 1], DType::Float32).unwrap_err();
        assert!(e.to_string().starts_with("zeros: shape"), "{e}");
        // ... and a padded size beyond isize is an error, not an overflow.
        let x = crate::ops::creation::ones(&[1, 3, 1], DType::Float32).unwrap();
        let w = crate::ops::creation::ones(&[1, 1, 1], DType::Float32).unwrap();
        let e = conv1d(&x, &w, 1 << 62, 1 << 62, 1, 1).unwrap_err();
        assert!(e.to_string().starts_with("conv1d: sizes overflow"), "{e}");
        let x = crate::ops::creation::ones(&[1, 4, 1], DType::Float32).unwrap();
        let w = crate::ops::creation::zeros(&[0, 1, 1], DType::Float32).unwrap();
        assert_eq!(conv1d(&x, &w, 1, 0, 1, 1).unwrap().shape(), &[1, 4, 0]);
    }

    #[test]
    fn empty_batch_and_zero_channels() {
        let x = crate::ops::creation::ones(&[0, 5, 2], DType::Float32).unwrap();
        let w = crate::ops::creation::ones(&[3, 2, 2], DType::Float32).unwrap();
        assert_eq!(conv1d(&x, &w, 1, 0, 1, 1).unwrap().shape(), &[0, 4, 3]);
        let x = crate::ops::creation::ones(&[1, 5, 0], DType::Float32).unwrap();
        let w = crate::ops::creation::ones(&[3, 2, 0], DType::Float32).unwrap();
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
        let x = crate::ops::creation::full(&xs, 0.5, DType::Float32).unwrap();
        let w = crate::ops::creation::full(&ws, 0.25, DType::Float32).unwrap();
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
