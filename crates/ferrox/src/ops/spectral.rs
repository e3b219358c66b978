//! The helpers around the Fourier transforms: sample frequencies
//! ([`fftfreq`], [`rfftfreq`]) and moving the zero frequency to the centre
//! and back ([`fftshift`], [`ifftshift`]). Re-exported in `ferrox::fft`.

use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::shape_rules::normalize_axes;

fn spacing(op: &str, d: f64) -> Result<f64> {
    if d == 0.0 || !d.is_finite() {
        return Err(Error::value(
            op,
            format!("sample spacing d must be finite and non-zero, got {d}"),
        ));
    }
    Ok(d)
}

/// The sample frequencies of an `n`-point transform with sample spacing
/// `d`: `[0, 1, ..., (n-1)/2, -n/2, ..., -1] / (d n)`, as float32.
///
/// ```
/// let f = ferrox::fft::fftfreq(5, 1.0)?.to_vec::<f32>()?;
/// assert_eq!(f, vec![0.0, 0.2, 0.4, -0.4, -0.2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fftfreq(n: usize, d: f64) -> Result<Array> {
    let d = spacing("fftfreq", d)?;
    let scale = 1.0 / (d * n as f64);
    let v: Vec<f32> = (0..n)
        .map(|i| {
            let k = if i < n.div_ceil(2) {
                i as f64
            } else {
                i as f64 - n as f64
            };
            (k * scale) as f32
        })
        .collect();
    Array::from_slice(&v, &[n])
}

/// The non-negative sample frequencies of an `n`-point real transform
/// ([`crate::fft::rfft`]): `[0, 1, ..., n/2] / (d n)`, as float32.
///
/// ```
/// assert_eq!(ferrox::fft::rfftfreq(5, 1.0)?.to_vec::<f32>()?, vec![0.0, 0.2, 0.4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rfftfreq(n: usize, d: f64) -> Result<Array> {
    let d = spacing("rfftfreq", d)?;
    let scale = 1.0 / (d * n as f64);
    let v: Vec<f32> = (0..n / 2 + 1).map(|i| (i as f64 * scale) as f32).collect();
    Array::from_slice(&v, &[v.len()])
}

fn shift(op: &str, a: &Array, axes: Option<&[isize]>, inverse: bool) -> Result<Array> {
    let axes = normalize_axes(op, axes, a.ndim())?;
    if axes.is_empty() {
        return Ok(a.clone());
    }
    let shifts: Vec<isize> = axes
        .iter()
        .map(|&ax| {
            let n = a.shape()[ax] as isize;
            if inverse { -(n / 2) } else { n / 2 }
        })
        .collect();
    let axes: Vec<isize> = axes.iter().map(|&d| d as isize).collect();
    crate::ops::join::roll(a, &shifts, Some(&axes))
}

/// Rolls each of `axes` (`None`: all) by half its length so the zero
/// frequency moves to the centre.
///
/// ```
/// let f = ferrox::fft::fftfreq(5, 1.0)?;
/// let s = ferrox::fft::fftshift(&f, None)?.to_vec::<f32>()?;
/// assert_eq!(s, vec![-0.4, -0.2, 0.0, 0.2, 0.4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift("fftshift", a, axes, false)
}

/// The inverse of [`fftshift`] (they differ for odd lengths).
///
/// ```
/// let f = ferrox::fft::fftfreq(5, 1.0)?;
/// let back = ferrox::fft::ifftshift(&ferrox::fft::fftshift(&f, None)?, None)?;
/// assert_eq!(back.to_vec::<f32>()?, f.to_vec::<f32>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ifftshift(a: &Array, axes: Option<&[isize]>) -> Result<Array> {
    shift("ifftshift", a, axes, true)
}

/// numpy's `norm=` of the Fourier transforms: where the `1/n` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FftNorm {
    /// `1/n` on the inverse (the default; what the transforms compute).
    Backward,
    /// `1/sqrt(n)` on both directions.
    Ortho,
    /// `1/n` on the forward transform.
    Forward,
}

impl FftNorm {
    /// Parses numpy's spelling (`None` is `"backward"`).
    ///
    /// ```
    /// use ferrox::fft::FftNorm;
    /// assert_eq!(FftNorm::parse(Some("ortho"))?, FftNorm::Ortho);
    /// assert!(FftNorm::parse(Some("sideways")).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn parse(s: Option<&str>) -> Result<FftNorm> {
        match s {
            None | Some("backward") => Ok(FftNorm::Backward),
            Some("ortho") => Ok(FftNorm::Ortho),
            Some("forward") => Ok(FftNorm::Forward),
            Some(other) => Err(Error::value(
                "fft",
                format!("norm must be 'backward', 'ortho' or 'forward', got {other:?}"),
            )),
        }
    }
}

/// Rescales `y`, the result of a transform computed with the default
/// (`Backward`) normalisation over `n` signal points, to `norm`.
/// `inverse` says whether `y` came from an inverse transform.
///
/// ```
/// use ferrox::fft::{apply_norm, fft, FftNorm};
/// let x = ferrox::ones(&[4], ferrox::DType::Float32)?;
/// let y = apply_norm(&fft(&x, None, -1)?, FftNorm::Forward, 4, false)?;
/// assert_eq!(ferrox::real(&y)?.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn apply_norm(y: &Array, norm: FftNorm, n: usize, inverse: bool) -> Result<Array> {
    let n = n.max(1) as f64;
    let factor = match (norm, inverse) {
        (FftNorm::Backward, _) => return Ok(y.clone()),
        (FftNorm::Ortho, false) => 1.0 / n.sqrt(),
        (FftNorm::Ortho, true) => n.sqrt(),
        (FftNorm::Forward, false) => 1.0 / n,
        (FftNorm::Forward, true) => n,
    };
    crate::ops::binary::multiply(y, &Array::weak_f64(factor))
}
