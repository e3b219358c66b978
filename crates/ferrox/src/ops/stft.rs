//! The short-time Fourier transform and its inverse, composed of a framing
//! gather, the window, the 1-D transforms and an overlap-add scatter (so
//! gradients and batching come from those ops). Re-exported in
//! `ferrox::fft`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{add, divide, greater, multiply};
use crate::ops::creation::{arange, ones, zeros};
use crate::ops::indexing::{scatter_add, take};
use crate::ops::join::{PadMode, concatenate, pad};
use crate::ops::spectral::{FftNorm, apply_norm};
use crate::ops::views::{flip, moveaxis, reshape, slice, swapaxes};

/// How [`stft`] pads the signal's ends when it centres the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StftPad {
    /// Mirror the signal without repeating the edge sample.
    Reflect,
    /// Zeros.
    Constant,
    /// Repeat the edge sample.
    Edge,
}

/// The parameters of [`stft`] and [`istft`] (MLX's defaults when `None`).
#[derive(Debug, Clone)]
pub struct StftParams {
    /// Samples per frame and transform size (`n_fft`).
    pub n_fft: usize,
    /// Samples between frames (default `n_fft / 4`).
    pub hop_length: Option<usize>,
    /// The window length (default `n_fft`); the window is centred and
    /// zero-padded to `n_fft`.
    pub win_length: Option<usize>,
    /// The window (default: ones, a rectangular window).
    pub window: Option<Array>,
    /// Pad `n_fft / 2` samples at both ends so frames are centred.
    pub center: bool,
    /// How centring pads.
    pub pad_mode: StftPad,
    /// The transforms' normalisation.
    pub norm: FftNorm,
    /// Keep only the non-negative frequencies (default: for real signals).
    pub onesided: Option<bool>,
}

impl StftParams {
    /// MLX's defaults for a transform size.
    pub fn new(n_fft: usize) -> StftParams {
        StftParams {
            n_fft,
            hop_length: None,
            win_length: None,
            window: None,
            center: true,
            pad_mode: StftPad::Reflect,
            norm: FftNorm::Backward,
            onesided: None,
        }
    }

    fn hop(&self, op: &str) -> Result<usize> {
        let hop = self.hop_length.unwrap_or(self.n_fft / 4);
        if hop == 0 {
            return Err(Error::value(
                op,
                format!("hop_length must be positive (n_fft {})", self.n_fft),
            ));
        }
        Ok(hop)
    }

    /// The window centred and zero-padded to `n_fft` samples, float32.
    fn full_window(&self, op: &str) -> Result<Array> {
        let n = self.n_fft;
        let win = self.win_length.unwrap_or(n);
        if win == 0 || win > n {
            return Err(Error::value(
                op,
                format!("win_length {win} must be in 1..={n} (n_fft)"),
            ));
        }
        let w = match &self.window {
            Some(w) if w.ndim() != 1 || w.size() != win => {
                return Err(Error::shape(
                    op,
                    format!(
                        "window must be 1-D with win_length {win} samples, got shape {:?}",
                        w.shape()
                    ),
                ));
            }
            Some(w) => w.astype(DType::Float32)?,
            None => ones(&[win], DType::Float32)?,
        };
        let left = (n - win) / 2;
        pad(&w, &[(left, n - win - left)], PadMode::Constant(0.0))
    }
}

/// The index of every frame sample: `[frames, n_fft]`, frame `f` starting
/// at `f * hop`.
fn frame_indices(frames: usize, n_fft: usize, hop: usize) -> Result<Array> {
    let starts = arange(0.0, (frames * hop) as f64, hop as f64, DType::Int32)?;
    let starts = reshape(&starts, &[frames as isize, 1])?;
    let offsets = reshape(
        &arange(0.0, n_fft as f64, 1.0, DType::Int32)?,
        &[1, n_fft as isize],
    )?;
    add(&starts, &offsets)
}

/// `x` (`[..., L]`) with `p` samples added at both ends of the last axis.
fn pad_ends(op: &str, x: &Array, p: usize, mode: StftPad) -> Result<Array> {
    let nd = x.ndim();
    let mut widths = vec![(0, 0); nd];
    widths[nd - 1] = (p, p);
    match mode {
        StftPad::Constant => pad(x, &widths, PadMode::Constant(0.0)),
        StftPad::Edge => pad(x, &widths, PadMode::Edge),
        StftPad::Reflect => {
            let len = x.shape()[nd - 1];
            if p >= len {
                return Err(Error::value(
                    op,
                    format!(
                        "reflect padding of {p} needs a signal longer than {p} samples, got {len}"
                    ),
                ));
            }
            let part = |a: usize, b: usize| -> Result<Array> {
                let mut start = vec![0isize; nd];
                let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
                start[nd - 1] = a as isize;
                stop[nd - 1] = b as isize;
                flip(&slice(x, &start, &stop, &vec![1; nd])?, Some(&[-1]))
            };
            concatenate(
                &[part(1, p + 1)?, x.clone(), part(len - 1 - p, len - 1)?],
                -1,
            )
        }
    }
}

/// The short-time Fourier transform of the last axis of `x`: frames of
/// `n_fft` samples every `hop` samples, windowed and transformed, as a
/// complex64 array `[..., n_freq, n_frames]`.
///
/// ```
/// use ferrox::fft::{stft, StftParams};
/// let x = ferrox::arange(0.0, 64.0, 1.0, ferrox::DType::Float32)?;
/// let s = stft(&x, &StftParams::new(16))?;
/// assert_eq!(s.shape(), &[9, 17]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn stft(x: &Array, p: &StftParams) -> Result<Array> {
    let op = "stft";
    if x.ndim() == 0 || p.n_fft == 0 {
        return Err(Error::value(
            op,
            format!(
                "needs a signal of at least one dimension and n_fft > 0 (shape {:?}, n_fft {})",
                x.shape(),
                p.n_fft
            ),
        ));
    }
    let hop = p.hop(op)?;
    let window = p.full_window(op)?;
    let complex_input = x.dtype() == DType::Complex64;
    let onesided = p.onesided.unwrap_or(!complex_input);
    if onesided && complex_input {
        return Err(Error::value(
            op,
            "onesided=True needs a real signal".to_string(),
        ));
    }
    let x = if complex_input || x.dtype().is_float() {
        x.clone()
    } else {
        x.astype(DType::Float32)?
    };
    let x = if p.center {
        pad_ends(op, &x, p.n_fft / 2, p.pad_mode)?
    } else {
        x
    };
    let len = x.shape()[x.ndim() - 1];
    if len < p.n_fft {
        return Err(Error::value(
            op,
            format!(
                "the (padded) signal has {len} samples, fewer than n_fft {}",
                p.n_fft
            ),
        ));
    }
    let frames = 1 + (len - p.n_fft) / hop;
    let idx = frame_indices(frames, p.n_fft, hop)?;
    let framed = multiply(&take(&x, &idx, Some(-1))?, &window)?;
    let spec = if onesided {
        crate::ops::fft::rfft(&framed, None, -1)?
    } else {
        crate::ops::fft::fft(&framed, None, -1)?
    };
    let spec = apply_norm(&spec, p.norm, p.n_fft, false)?;
    swapaxes(&spec, -1, -2)
}

/// The inverse of [`stft`]: each frame's inverse transform, windowed and
/// overlap-added, divided by the summed squared window; `[..., samples]`
/// (float32; for a two-sided spectrum the real part). `n_fft` of `0` infers
/// it from the spectrum (`2 * (n_freq - 1)` when one-sided); `length` cuts
/// or zero-pads the result.
///
/// ```
/// use ferrox::fft::{istft, stft, StftParams};
/// let x = ferrox::arange(0.0, 64.0, 1.0, ferrox::DType::Float32)?;
/// let p = StftParams::new(16);
/// let y = istft(&stft(&x, &p)?, &p, Some(64))?;
/// let (a, b) = (x.to_vec::<f32>()?, y.to_vec::<f32>()?);
/// assert!(a.iter().zip(&b).all(|(u, v)| (u - v).abs() < 1e-3));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn istft(spec: &Array, p: &StftParams, length: Option<usize>) -> Result<Array> {
    let op = "istft";
    if spec.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "expects [..., n_freq, n_frames], got shape {:?}",
                spec.shape()
            ),
        ));
    }
    let nd = spec.ndim();
    let (n_freq, frames) = (spec.shape()[nd - 2], spec.shape()[nd - 1]);
    let onesided = p.onesided.unwrap_or(true);
    let n_fft = match p.n_fft {
        0 if onesided => 2 * n_freq.saturating_sub(1),
        0 => n_freq,
        n => n,
    };
    if n_fft == 0 || frames == 0 {
        return Err(Error::value(
            op,
            format!("empty spectrum (shape {:?})", spec.shape()),
        ));
    }
    let p = StftParams { n_fft, ..p.clone() };
    let hop = p.hop(op)?;
    let window = p.full_window(op)?;
    let spec = swapaxes(&spec.astype(DType::Complex64)?, -1, -2)?;
    let spec = apply_norm(&spec, p.norm, n_fft, true)?;
    let framed = if onesided {
        crate::ops::fft::irfft(&spec, Some(n_fft), -1)?
    } else {
        crate::ops::unary::real(&crate::ops::fft::ifft(&spec, Some(n_fft), -1)?)?
    };
    let framed = multiply(&framed, &window)?;
    // Overlap-add: batch axes last, so the scatter indexes the sample axis.
    let batch: Vec<usize> = framed.shape()[..framed.ndim() - 2].to_vec();
    let b: usize = batch.iter().product();
    let total = n_fft + hop * (frames - 1);
    let idx = frame_indices(frames, n_fft, hop)?;
    let upd = moveaxis(
        &reshape(&framed, &[b as isize, frames as isize, n_fft as isize])?,
        0,
        -1,
    )?;
    let upd = reshape(&upd, &[frames as isize, n_fft as isize, 1, b as isize])?;
    let sum = scatter_add(
        &zeros(&[total, b], DType::Float32)?,
        std::slice::from_ref(&idx),
        &upd,
        &[0],
    )?;
    let sq = multiply(&window, &window)?;
    let sq = crate::ops::views::broadcast_to(
        &reshape(&sq, &[1, n_fft as isize, 1])?,
        &[frames, n_fft, 1],
    )?;
    let env = scatter_add(&zeros(&[total], DType::Float32)?, &[idx], &sq, &[0])?;
    let env = reshape(&env, &[total as isize, 1])?;
    let safe = crate::ops::select::r#where(
        &greater(&env, &Array::weak_f64(1e-11))?,
        &env,
        &Array::weak_f64(1.0),
    )?;
    let y = divide(&sum, &safe)?;
    // [total, b] -> [..., total], then drop the centring pad.
    let mut shape: Vec<isize> = batch.iter().map(|&d| d as isize).collect();
    shape.push(total as isize);
    let y = reshape(&moveaxis(&y, 0, -1)?, &shape)?;
    let start = if p.center { n_fft / 2 } else { 0 };
    let end = match length {
        Some(l) => start + l,
        None if p.center => total.saturating_sub(n_fft / 2),
        None => total,
    };
    let y = if end > total {
        let nd = y.ndim();
        let mut widths = vec![(0, 0); nd];
        widths[nd - 1] = (0, end - total);
        pad(&y, &widths, PadMode::Constant(0.0))?
    } else {
        y
    };
    let nd = y.ndim();
    let mut lo = vec![0isize; nd];
    let mut hi: Vec<isize> = y.shape().iter().map(|&d| d as isize).collect();
    lo[nd - 1] = start as isize;
    hi[nd - 1] = end.max(start) as isize;
    slice(&y, &lo, &hi, &vec![1; nd])
}
