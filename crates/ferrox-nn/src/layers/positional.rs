//! Positional encodings: [`Rope`] (ferrox's fused `fast::rope`),
//! [`SinusoidalPositionalEncoding`] and [`Alibi`].

use crate::error::{Result, check_positive, shape, value};
use crate::module::Forward;
use ferrox::{Array, DType};

/// Rotary positional encoding of the leading `dims` features of
/// `[B, ..., T, D]` inputs (`ferrox::fast::rope`).
///
/// ```
/// use ferrox_nn::{Forward, layers::Rope};
/// let r = Rope::new(4, false, 10000.0, 1.0)?;
/// let x = ferrox::ones(&[1, 2, 3, 8], ferrox::DType::Float32)?;
/// assert_eq!(r.forward(&x)?.shape(), &[1, 2, 3, 8]);
/// assert_eq!(r.forward_at(&x, 5)?.shape(), &[1, 2, 3, 8]);
/// assert!(Rope::new(3, false, 10000.0, 1.0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rope {
    /// Features rotated (even).
    pub dims: usize,
    /// Rotate consecutive pairs instead of halves.
    pub traditional: bool,
    /// The frequency base (MLX's default 10000).
    pub base: f32,
    /// Scale of the positions (default 1).
    pub scale: f32,
}

impl Rope {
    /// A RoPE over `dims` features.
    pub fn new(dims: usize, traditional: bool, base: f32, scale: f32) -> Result<Rope> {
        if dims == 0 || dims % 2 != 0 {
            return Err(value(
                "RoPE",
                format!("dims must be positive and even, got {dims}"),
            ));
        }
        Ok(Rope {
            dims,
            traditional,
            base,
            scale,
        })
    }

    /// The encoding with positions starting at `offset` (a KV cache's
    /// length).
    pub fn forward_at(&self, x: &Array, offset: i64) -> Result<Array> {
        ferrox::fast::rope(
            x,
            self.dims,
            self.traditional,
            Some(self.base),
            self.scale,
            ferrox::fast::RopeOffset::Scalar(offset),
            None,
        )
    }
}

impl Forward for Rope {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_at(x, 0)
    }
}
crate::impl_module!(Rope {});

/// Sinusoidal encoding of positions (or any values) `x`: `[..., dims]`
/// of `sin(x * f)` and `cos(x * f)` for `dims / 2` frequencies spaced
/// geometrically from `max_freq` down to `min_freq`, times `scale`
/// (default `sqrt(2 / dims)`).
///
/// ```
/// use ferrox_nn::{Forward, layers::SinusoidalPositionalEncoding};
/// let pe = SinusoidalPositionalEncoding::new(8, 1e-4, 1.0, None, false, false)?;
/// let t = ferrox::arange(0.0, 5.0, 1.0, ferrox::DType::Float32)?;
/// assert_eq!(pe.forward(&t)?.shape(), &[5, 8]);
/// assert!(SinusoidalPositionalEncoding::new(3, 1e-4, 1.0, None, false, false).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SinusoidalPositionalEncoding {
    sigmas: Array,
    /// Multiplies the encoding.
    pub scale: f64,
    /// Cosines before sines.
    pub cos_first: bool,
}

impl SinusoidalPositionalEncoding {
    /// An encoding of `dims` (even) features; `full_turns` multiplies the
    /// frequencies by `2 pi`.
    pub fn new(
        dims: usize,
        min_freq: f64,
        max_freq: f64,
        scale: Option<f64>,
        cos_first: bool,
        full_turns: bool,
    ) -> Result<SinusoidalPositionalEncoding> {
        if dims == 0 || dims % 2 != 0 {
            return Err(value(
                "SinusoidalPositionalEncoding",
                format!("dims must be positive and even, got {dims}"),
            ));
        }
        let half = dims / 2;
        let (lo, hi) = (min_freq.ln(), max_freq.ln());
        let mut sigmas: Vec<f32> = (0..half)
            .map(|i| {
                let one_zero = if half == 1 {
                    1.0
                } else {
                    1.0 - i as f64 / (half - 1) as f64
                };
                (one_zero * (hi - lo) + lo).exp() as f32
            })
            .collect();
        if full_turns {
            sigmas
                .iter_mut()
                .for_each(|s| *s *= 2.0 * std::f32::consts::PI);
        }
        Ok(SinusoidalPositionalEncoding {
            sigmas: Array::from_slice(&sigmas, &[half])?,
            scale: scale.unwrap_or((2.0 / dims as f64).sqrt()),
            cos_first,
        })
    }
}

impl Forward for SinusoidalPositionalEncoding {
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = (x.expand_dims(&[-1])? * &self.sigmas)?;
        let (c, s) = (ferrox::cos(&y)?, ferrox::sin(&y)?);
        let parts = if self.cos_first { [c, s] } else { [s, c] };
        let y = ferrox::concatenate(&parts, -1)?;
        if self.scale != 1.0 {
            y * self.scale
        } else {
            Ok(y)
        }
    }
}
crate::impl_module!(SinusoidalPositionalEncoding {});

/// Attention with linear biases: adds `-slope_h * |i - j|` to the scores
/// `[B, heads, T_q, T_kv]` of head `h` (slopes the geometric sequence of
/// Press et al.).
///
/// ```
/// use ferrox_nn::layers::Alibi;
/// let scores = ferrox::zeros(&[1, 2, 3, 3], ferrox::DType::Float32)?;
/// let biased = Alibi.forward(&scores, 0, None)?;
/// let v = biased.to_vec::<f32>()?;
/// assert_eq!(v[0], 0.0);
/// assert!((v[1] + 0.0625).abs() < 1e-7); // head 0 slope 1/16, distance 1
/// assert!(Alibi.forward(&ferrox::zeros(&[3, 3], ferrox::DType::Float32)?, 0, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Alibi;

/// The ALiBi slopes of `n` heads.
fn slopes(n: usize) -> Vec<f64> {
    let log2 = (n as f64).log2();
    if log2.fract() == 0.0 {
        let start = 2f64.powf(-(2f64.powf(-(log2 - 3.0))));
        (0..n).map(|i| start * start.powi(i as i32)).collect()
    } else {
        let p = 1usize << (n as f64).log2().floor() as u32;
        let mut s = slopes(p);
        s.extend(slopes(2 * p).into_iter().step_by(2).take(n - p));
        s
    }
}

impl Alibi {
    /// The bias `[1, heads, T_q, T_kv]` for queries at positions
    /// `offset..q_len` and keys at `0..k_len`.
    ///
    /// ```
    /// let m = ferrox_nn::layers::Alibi::matrix(4, 4, 8, 0, ferrox::DType::Float32)?;
    /// assert_eq!(m.shape(), &[1, 8, 4, 4]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn matrix(
        q_len: usize,
        k_len: usize,
        num_heads: usize,
        offset: usize,
        dtype: DType,
    ) -> Result<Array> {
        check_positive("ALiBi", "num_heads", num_heads)?;
        if offset > q_len {
            return Err(value(
                "ALiBi",
                format!("offset {offset} exceeds the query length {q_len}"),
            ));
        }
        let x1 = ferrox::arange(offset as f64, q_len as f64, 1.0, DType::Float32)?;
        let x2 = ferrox::arange(0.0, k_len as f64, 1.0, DType::Float32)?;
        let dist = ferrox::negative(&ferrox::abs(
            &(x1.expand_dims(&[1])? - x2.expand_dims(&[0])?)?,
        )?)?;
        let s: Vec<f32> = slopes(num_heads).into_iter().map(|v| v as f32).collect();
        let s = Array::from_slice(&s, &[1, num_heads, 1, 1])?;
        (dist.expand_dims(&[0, 1])? * s)?.astype(dtype)
    }

    /// `scores` plus the bias (and `mask`, if given).
    pub fn forward(&self, scores: &Array, offset: usize, mask: Option<&Array>) -> Result<Array> {
        if scores.ndim() != 4 {
            return Err(shape(
                "ALiBi",
                format!(
                    "expected scores [B, heads, T_q, T_kv], got shape {:?}",
                    scores.shape()
                ),
            ));
        }
        let s = scores.shape();
        let mut bias = Alibi::matrix(s[2] + offset, s[3], s[1], offset, scores.dtype())?;
        if let Some(m) = mask {
            bias = (bias + m)?;
        }
        scores + bias
    }
}
crate::impl_module!(Alibi {});
