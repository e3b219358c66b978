//! Discrete Fourier transforms: `ferrox::fft`.
//!
//! Twelve public functions ([`fft`], [`ifft`], [`fft2`], [`ifft2`],
//! [`fftn`], [`ifftn`] and their real counterparts [`rfft`], [`irfft`],
//! [`rfft2`], [`irfft2`], [`rfftn`], [`irfftn`]) build one primitive,
//! [`Fft`]. The builders pad (with zeros) or crop the input along the
//! transformed axes to the requested lengths, so the primitive itself only
//! transforms.
//!
//! Normalisation is numpy's default ("backward"): forward transforms are
//! unscaled, inverse transforms divide by the number of points.
//!
//! Dtypes: complex transforms compute in `complex64`, the only complex
//! dtype, so `float64` inputs give `complex64` results (single precision).
//! Integer, bool and half-float inputs are cast to float first. The real
//! forward transforms reject complex inputs; the real inverse transforms
//! return `float32`.
//!
//! The 1-D transforms along each axis come from `rustfft` (any length,
//! primes included), planned once per length and thread, and run in
//! parallel over the independent lines of large inputs.
//!
//! ```
//! use ferrox::{Array, Complex64};
//! let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
//! let y = ferrox::fft::fft(&x, None, -1)?;
//! let v = y.to_vec::<Complex64>()?;
//! assert_eq!(v[0], Complex64::new(10.0, 0.0));
//! assert_eq!(v[2], Complex64::new(-2.0, 0.0));
//! let back = ferrox::fft::ifft(&y, None, -1)?;
//! assert!((back.to_vec::<Complex64>()?[3].re - 4.0).abs() < 1e-6);
//! # Ok::<(), ferrox::Error>(())
//! ```
//!
//! The kernels (rustfft plans along each axis) are in
//! [`crate::backend::cpu::fft`].

use super::shape_rules::normalize_axis;
use crate::backend::cpu::fft as kernels;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::join::PadMode;
pub use crate::ops::spectral::{FftNorm, apply_norm, fftfreq, fftshift, ifftshift, rfftfreq};
pub use crate::ops::stft::{StftPad, StftParams, istft, stft};

/// A discrete Fourier transform over `axes` (distinct, in the order given).
///
/// * complex (`real == false`): `complex64` in, `complex64` out, same shape.
/// * real forward (`real && !inverse`): `float32` in; the last of `axes`
///   shrinks from `n` to `n / 2 + 1` (the non-negative frequencies).
/// * real inverse (`real && inverse`): `complex64` in with `n / 2 + 1`
///   entries on the last of `axes`; `float32` out with `n` there.
///
/// `lengths[i]` is the signal length `n` along `axes[i]`. Inverse
/// transforms divide by the product of `lengths`.
///
/// ```
/// let x = ferrox::ones(&[2, 6], ferrox::DType::Float32)?;
/// let y = ferrox::fft::rfft(&x, None, -1)?;
/// let p = y.primitive().unwrap();
/// let f = p.as_any().downcast_ref::<ferrox::fft::Fft>().unwrap();
/// assert_eq!((f.axes.clone(), f.lengths.clone(), f.real), (vec![1], vec![6], true));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Fft {
    /// The transformed axes; for real transforms the last one is the
    /// half-spectrum axis.
    pub axes: Vec<usize>,
    /// Inverse transform (`e^{+2 pi i jk / n}`, scaled by `1 / n`).
    pub inverse: bool,
    /// Real-signal transform (see the type's docs).
    pub real: bool,
    /// The signal length along each of `axes`.
    pub lengths: Vec<usize>,
}

impl Fft {
    /// Product of the signal lengths (the inverse transform's divisor).
    fn points(&self) -> usize {
        self.lengths.iter().product()
    }

    /// The output shape for an input of `shape`.
    fn out_shape(&self, shape: &[usize]) -> Result<Vec<usize>> {
        let mut out = shape.to_vec();
        if let (true, Some(&last), Some(&n)) = (self.real, self.axes.last(), self.lengths.last()) {
            let d = out
                .get_mut(last)
                .ok_or_else(|| Error::axis(self.name(), format!("axis {last} out of range")))?;
            *d = if self.inverse { n } else { n / 2 + 1 };
        }
        Ok(out)
    }

    /// The same transform shifted by one axis (a leading batch axis).
    fn shifted(&self) -> Fft {
        Fft {
            axes: self.axes.iter().map(|&a| a + 1).collect(),
            ..self.clone()
        }
    }

    /// This transform applied to `x` as a graph node.
    fn apply(&self, x: &Array) -> Result<Array> {
        let in_dtype = if self.real && !self.inverse {
            DType::Float32
        } else {
            DType::Complex64
        };
        let out_dtype = if self.real && self.inverse {
            DType::Float32
        } else {
            DType::Complex64
        };
        let x = x.astype(in_dtype)?;
        let shape = self.out_shape(x.shape())?;
        Ok(Array::from_op(shape, out_dtype, self.clone(), vec![x]))
    }
}

impl Primitive for Fft {
    fn name(&self) -> &'static str {
        match (self.real, self.inverse) {
            (false, false) => "fft",
            (false, true) => "ifft",
            (true, false) => "rfft",
            (true, true) => "irfft",
        }
    }

    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let op = self.name();
        kernels::eval(
            op,
            &self.axes,
            &self.lengths,
            self.real,
            self.inverse,
            &inputs[0],
            out,
        )
    }

    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let shape = input_shapes.first()?;
        // The lengths are parameters: other lengths need a new node.
        let same = self
            .axes
            .iter()
            .zip(&self.lengths)
            .enumerate()
            .all(|(i, (&a, &n))| {
                let want = if self.real && self.inverse && i + 1 == self.axes.len() {
                    n / 2 + 1
                } else {
                    n
                };
                shape.get(a) == Some(&want)
            });
        same.then(|| self.out_shape(shape))
    }

    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, _argnums: &[usize]) -> Result<Vec<Array>> {
        let n = self.points() as f64;
        let conj = Fft {
            inverse: !self.inverse,
            real: false,
            ..self.clone()
        };
        let x = &p[0];
        let cot = match (self.real, self.inverse) {
            // y = F x: the adjoint is conj(F) = n * ifft.
            (false, false) => scale(&conj.apply(g)?, n)?,
            // y = conj(F) x / n: the adjoint is F / n.
            (false, true) => scale(&conj.apply(g)?, 1.0 / n)?,
            // y = crop(F x), x real: x̄ = re(conj(F) pad(ḡ)).
            (true, false) => {
                let last = *self.axes.last().unwrap_or(&0);
                let m = g.shape()[last];
                let full = self.lengths.last().copied().unwrap_or(1);
                let mut widths = vec![(0, 0); g.ndim()];
                widths[last] = (0, full - m);
                let padded = crate::ops::join::pad(g, &widths, PadMode::Constant(0.0))?;
                crate::ops::unary::real(&scale(&conj.apply(&padded)?, n)?)?
            }
            // y = re(conj(F) hermitian(x)) / n: x̄ = w * rfft(ḡ) / n with
            // w = 2 on the bins that stand for a conjugate pair, 1 on the
            // self-conjugate ones (0 and, for even n, n / 2).
            (true, true) => {
                let last = *self.axes.last().unwrap_or(&0);
                let len = self.lengths.last().copied().unwrap_or(1);
                let m = len / 2 + 1;
                let w: Vec<f32> = (0..m)
                    .map(|k| {
                        if k == 0 || (len % 2 == 0 && k == len / 2) {
                            1.0
                        } else {
                            2.0
                        }
                    })
                    .map(|w| w / n as f32)
                    .collect();
                let mut wshape = vec![1usize; g.ndim()];
                wshape[last] = m;
                let w = Array::from_slice(&w, &wshape)?;
                let fwd = Fft {
                    inverse: false,
                    ..self.clone()
                };
                crate::ops::binary::multiply(&fwd.apply(g)?, &w)?
            }
        };
        Ok(vec![cot.astype(x.dtype())?])
    }

    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], _output: &Array) -> Result<Array> {
        // Linear in the input: the transform of the tangent.
        match &tangents[0] {
            Some(t) => self.apply(t),
            None => self.apply(&crate::ops::creation::zeros_like(&p[0])?),
        }
    }

    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        match axes[0] {
            None => Ok((self.apply(&inputs[0])?, None)),
            Some(ax) => {
                let x = crate::ops::grad_helpers::batch_front(&inputs[0], Some(ax))?;
                Ok((self.shifted().apply(&x)?, Some(0)))
            }
        }
    }

    crate::primitive_common!();
}

fn scale(x: &Array, s: f64) -> Result<Array> {
    crate::ops::grad_helpers::scale(x, s)
}

/// The resolved axes and lengths of an n-dimensional transform.
fn resolve(
    op: &str,
    a: &Array,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    real_inverse: bool,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let nd = a.ndim();
    let axes: Vec<usize> = match (axes, s) {
        (Some(axes), _) => {
            let mut out = Vec::with_capacity(axes.len());
            for &ax in axes {
                let a = normalize_axis(op, ax, nd)?;
                if out.contains(&a) {
                    return Err(Error::axis(
                        op,
                        format!("repeated axis {ax} in axes {axes:?}"),
                    ));
                }
                out.push(a);
            }
            out
        }
        (None, Some(s)) => {
            if s.len() > nd {
                return Err(Error::value(
                    op,
                    format!(
                        "s {s:?} has more entries than the array of shape {:?} has axes",
                        a.shape()
                    ),
                ));
            }
            (nd - s.len()..nd).collect()
        }
        (None, None) => (0..nd).collect(),
    };
    let lengths: Vec<usize> = match s {
        Some(s) => {
            if s.len() != axes.len() {
                return Err(Error::value(
                    op,
                    format!(
                        "s {s:?} and axes {axes:?} must have the same length ({} != {})",
                        s.len(),
                        axes.len()
                    ),
                ));
            }
            s.to_vec()
        }
        None => {
            let k = axes.len();
            axes.iter()
                .enumerate()
                .map(|(i, &ax)| {
                    let d = a.shape()[ax];
                    if real_inverse && i + 1 == k {
                        2 * d.saturating_sub(1)
                    } else {
                        d
                    }
                })
                .collect()
        }
    };
    for (&ax, &n) in axes.iter().zip(&lengths) {
        if n == 0 {
            return Err(Error::value(
                op,
                format!(
                    "invalid number of data points 0 along axis {ax} of an array of shape {:?}",
                    a.shape()
                ),
            ));
        }
    }
    Ok((axes, lengths))
}

/// Builds a transform: validates, casts, pads or crops, makes the node.
fn transform(
    op: &str,
    a: &Array,
    s: Option<&[usize]>,
    axes: Option<&[isize]>,
    inverse: bool,
    real: bool,
) -> Result<Array> {
    let (axes, lengths) = resolve(op, a, s, axes, real && inverse)?;
    if real && !inverse && a.dtype() == DType::Complex64 {
        return Err(Error::dtype(
            op,
            "expected a real input, got complex64 (use fft for complex signals)",
        ));
    }
    if axes.is_empty() {
        if real {
            return Err(Error::value(op, "needs at least one axis to transform"));
        }
        return a.astype(DType::Complex64);
    }
    let in_dtype = if real && !inverse {
        DType::Float32
    } else {
        DType::Complex64
    };
    // The padded input and the line buffers must be addressable; as in
    // `checked_numel`, the non-zero dimensions must fit even when another
    // is 0 (the padded array's strides are their products).
    let mut padded = a.shape().to_vec();
    for (&ax, &n) in axes.iter().zip(&lengths) {
        padded[ax] = n;
    }
    let bytes = padded
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(2 * DType::Complex64.size(), |acc, &d| acc.checked_mul(d));
    let limit = isize::MAX as usize;
    let too_long = lengths
        .iter()
        .any(|&n| n > limit / (2 * DType::Complex64.size()));
    if too_long || bytes.is_none_or(|b| b > limit) {
        return Err(Error::value(
            op,
            format!(
                "lengths {lengths:?} on axes {axes:?} of an array of shape {:?} are too large",
                a.shape()
            ),
        ));
    }
    let mut x = a.astype(in_dtype)?;
    // Pad with zeros or crop to the input lengths the primitive takes.
    let k = axes.len();
    let mut widths = vec![(0usize, 0usize); x.ndim()];
    let mut stop: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
    let (mut pads, mut crops) = (false, false);
    for (i, (&ax, &n)) in axes.iter().zip(&lengths).enumerate() {
        let want = if real && inverse && i + 1 == k {
            n / 2 + 1
        } else {
            n
        };
        let have = x.shape()[ax];
        if want > have {
            widths[ax].1 = want - have;
            pads = true;
        } else if want < have {
            stop[ax] = want as isize;
            crops = true;
        }
    }
    if crops {
        let start = vec![0isize; x.ndim()];
        let step = vec![1isize; x.ndim()];
        x = crate::ops::views::slice(&x, &start, &stop, &step)?;
    }
    if pads {
        x = crate::ops::join::pad(&x, &widths, PadMode::Constant(0.0))?;
    }
    Fft {
        axes,
        inverse,
        real,
        lengths,
    }
    .apply(&x)
}

/// One-dimensional discrete Fourier transform along `axis`.
///
/// `n` pads (with zeros) or crops the input along `axis` to `n` points;
/// `None` keeps its length. Unscaled; the result is `complex64`.
///
/// ```
/// use ferrox::{Array, Complex64};
/// let x = Array::from_slice(&[1.0f32, 0.0, 0.0], &[3])?;
/// let y = ferrox::fft::fft(&x, Some(4), 0)?; // padded to 4 points
/// assert_eq!(y.to_vec::<Complex64>()?, vec![Complex64::new(1.0, 0.0); 4]);
/// assert!(ferrox::fft::fft(&x, Some(0), 0).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fft(a: &Array, n: Option<usize>, axis: isize) -> Result<Array> {
    let s = n.map(|n| [n]);
    transform(
        "fft",
        a,
        s.as_ref().map(|s| &s[..]),
        Some(&[axis]),
        false,
        false,
    )
}

/// One-dimensional inverse discrete Fourier transform along `axis`
/// (scaled by `1 / n`). `n` pads or crops the input as in [`fft`].
///
/// ```
/// use ferrox::{Array, Complex64};
/// let x = Array::from_slice(&[4.0f32, 0.0, 0.0, 0.0], &[4])?;
/// let y = ferrox::fft::ifft(&x, None, -1)?;
/// assert_eq!(y.to_vec::<Complex64>()?, vec![Complex64::new(1.0, 0.0); 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ifft(a: &Array, n: Option<usize>, axis: isize) -> Result<Array> {
    let s = n.map(|n| [n]);
    transform(
        "ifft",
        a,
        s.as_ref().map(|s| &s[..]),
        Some(&[axis]),
        true,
        false,
    )
}

/// Two-dimensional discrete Fourier transform over `axes` (default: the
/// last two). `s` gives the lengths along them (pad or crop).
///
/// ```
/// let x = ferrox::ones(&[2, 3], ferrox::DType::Float32)?;
/// let y = ferrox::fft::fft2(&x, None, None)?;
/// assert_eq!(y.to_vec::<ferrox::Complex64>()?[0].re, 6.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fft2(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("fft2", a, s, Some(axes.unwrap_or(&[-2, -1])), false, false)
}

/// Two-dimensional inverse discrete Fourier transform over `axes`
/// (default: the last two).
///
/// ```
/// let x = ferrox::ones(&[2, 3], ferrox::DType::Float32)?;
/// let y = ferrox::fft::ifft2(&ferrox::fft::fft2(&x, None, None)?, None, None)?;
/// assert!((ferrox::real(&y)?.to_vec::<f32>()?[5] - 1.0).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ifft2(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("ifft2", a, s, Some(axes.unwrap_or(&[-2, -1])), true, false)
}

/// N-dimensional discrete Fourier transform over `axes`.
///
/// `axes` defaults to the last `s.len()` axes when `s` is given, else to
/// every axis; `s` defaults to the input's lengths along `axes`.
///
/// ```
/// let x = ferrox::ones(&[2, 2, 2], ferrox::DType::Float32)?;
/// let y = ferrox::fft::fftn(&x, None, None)?;
/// assert_eq!(y.to_vec::<ferrox::Complex64>()?[0].re, 8.0);
/// let z = ferrox::fft::fftn(&x, Some(&[3, 1]), None)?; // the last two axes
/// assert_eq!(z.shape(), &[2, 3, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn fftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("fftn", a, s, axes, false, false)
}

/// N-dimensional inverse discrete Fourier transform over `axes` (defaults
/// as in [`fftn`]).
///
/// ```
/// let x = ferrox::ones(&[2, 2], ferrox::DType::Float32)?;
/// let y = ferrox::fft::ifftn(&x, None, None)?;
/// assert_eq!(y.to_vec::<ferrox::Complex64>()?[0].re, 1.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn ifftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("ifftn", a, s, axes, true, false)
}

/// Discrete Fourier transform of a real signal along `axis`: the
/// `n / 2 + 1` non-negative frequencies (the rest are their conjugates).
///
/// `n` pads or crops the input first. Complex inputs are an error.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0], &[5])?;
/// let y = ferrox::fft::rfft(&x, None, 0)?;
/// assert_eq!(y.shape(), &[3]);
/// assert_eq!(y.to_vec::<ferrox::Complex64>()?[0].re, 15.0);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rfft(a: &Array, n: Option<usize>, axis: isize) -> Result<Array> {
    let s = n.map(|n| [n]);
    transform(
        "rfft",
        a,
        s.as_ref().map(|s| &s[..]),
        Some(&[axis]),
        false,
        true,
    )
}

/// The inverse of [`rfft`]: `n` real points (default `2 * (m - 1)` for
/// `m` input entries along `axis`) from a half spectrum. The input is
/// padded or cropped to `n / 2 + 1` entries; the result is `float32`.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0], &[5])?;
/// let y = ferrox::fft::irfft(&ferrox::fft::rfft(&x, None, 0)?, Some(5), 0)?;
/// let v = y.to_vec::<f32>()?;
/// assert!((v[4] - 5.0).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn irfft(a: &Array, n: Option<usize>, axis: isize) -> Result<Array> {
    let s = n.map(|n| [n]);
    transform(
        "irfft",
        a,
        s.as_ref().map(|s| &s[..]),
        Some(&[axis]),
        true,
        true,
    )
}

/// Two-dimensional [`rfftn`] over `axes` (default: the last two).
///
/// ```
/// let x = ferrox::ones(&[4, 4], ferrox::DType::Float32)?;
/// assert_eq!(ferrox::fft::rfft2(&x, None, None)?.shape(), &[4, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rfft2(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("rfft2", a, s, Some(axes.unwrap_or(&[-2, -1])), false, true)
}

/// Two-dimensional [`irfftn`] over `axes` (default: the last two).
///
/// ```
/// let x = ferrox::ones(&[4, 4], ferrox::DType::Float32)?;
/// let y = ferrox::fft::irfft2(&ferrox::fft::rfft2(&x, None, None)?, None, None)?;
/// assert_eq!(y.shape(), &[4, 4]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn irfft2(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("irfft2", a, s, Some(axes.unwrap_or(&[-2, -1])), true, true)
}

/// N-dimensional discrete Fourier transform of a real signal: a real
/// transform over the last of `axes`, complex ones over the others
/// (defaults as in [`fftn`]).
///
/// ```
/// let x = ferrox::ones(&[2, 3, 4], ferrox::DType::Float64)?;
/// let y = ferrox::fft::rfftn(&x, None, None)?;
/// assert_eq!(y.shape(), &[2, 3, 3]);
/// assert_eq!(y.dtype(), ferrox::DType::Complex64);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn rfftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("rfftn", a, s, axes, false, true)
}

/// The inverse of [`rfftn`]. `s` gives the output lengths along `axes`;
/// by default the last one is `2 * (m - 1)`.
///
/// ```
/// let x = ferrox::ones(&[2, 3, 5], ferrox::DType::Float32)?;
/// let y = ferrox::fft::irfftn(&ferrox::fft::rfftn(&x, None, None)?, Some(&[2, 3, 5]), None)?;
/// assert_eq!(y.shape(), &[2, 3, 5]);
/// assert!((y.to_vec::<f32>()?[7] - 1.0).abs() < 1e-5);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn irfftn(a: &Array, s: Option<&[usize]>, axes: Option<&[isize]>) -> Result<Array> {
    transform("irfftn", a, s, axes, true, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Complex64;

    type C = Complex64;

    fn naive_dft(x: &[(f64, f64)], inverse: bool) -> Vec<(f64, f64)> {
        let n = x.len();
        let sign = if inverse { 1.0 } else { -1.0 };
        (0..n)
            .map(|k| {
                let (mut re, mut im) = (0.0, 0.0);
                for (j, &(a, b)) in x.iter().enumerate() {
                    let t = sign * 2.0 * std::f64::consts::PI * (j * k % n) as f64 / n as f64;
                    re += a * t.cos() - b * t.sin();
                    im += a * t.sin() + b * t.cos();
                }
                if inverse {
                    (re / n as f64, im / n as f64)
                } else {
                    (re, im)
                }
            })
            .collect()
    }

    fn vals(n: usize, seed: usize) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| {
                let a = ((i * 37 + seed * 11) % 23) as f64 / 11.0 - 1.0;
                let b = ((i * 17 + seed * 5) % 19) as f64 / 9.0 - 1.0;
                (a, b)
            })
            .collect()
    }

    fn carr(v: &[(f64, f64)], shape: &[usize]) -> Array {
        let c: Vec<C> = v.iter().map(|&(a, b)| C::new(a as f32, b as f32)).collect();
        Array::from_slice(&c, shape).unwrap()
    }

    fn close(got: &[C], want: &[(f64, f64)], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g.re as f64 - w.0).abs() < tol && (g.im as f64 - w.1).abs() < tol,
                "{g} vs {w:?}"
            );
        }
    }

    #[test]
    fn one_d_matches_naive_dft_for_many_lengths() {
        for n in [1, 2, 3, 5, 7, 8, 12, 13, 31, 64, 97] {
            let x = vals(n, n);
            let a = carr(&x, &[n]);
            close(
                &fft(&a, None, 0).unwrap().to_vec::<C>().unwrap(),
                &naive_dft(&x, false),
                1e-4 * n as f64,
            );
            close(
                &ifft(&a, None, 0).unwrap().to_vec::<C>().unwrap(),
                &naive_dft(&x, true),
                1e-5 * n as f64,
            );
        }
    }

    #[test]
    fn strided_axis_and_parallel_paths() {
        // 3 x 40000 along axis 0 (strided lines, enough for parallel work).
        let (r, c) = (3, 40000);
        let x = vals(r * c, 1);
        let a = carr(&x, &[r, c]);
        let y = fft(&a, None, 0).unwrap().to_vec::<C>().unwrap();
        for j in [0, 1, 12345, c - 1] {
            let col: Vec<(f64, f64)> = (0..r).map(|i| x[i * c + j]).collect();
            let want = naive_dft(&col, false);
            let got: Vec<C> = (0..r).map(|i| y[i * c + j]).collect();
            close(&got, &want, 1e-4);
        }
        let y = fft(&a, None, 1).unwrap().to_vec::<C>().unwrap();
        assert!((y[0].re as f64 - x[..c].iter().map(|v| v.0).sum::<f64>()).abs() < 1e-1);
    }

    #[test]
    fn real_round_trips() {
        for n in [1, 2, 5, 6, 11] {
            let x: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.7).sin()).collect();
            let a = Array::from_slice(&x, &[2, n]).unwrap();
            let h = rfft(&a, None, -1).unwrap();
            assert_eq!(h.shape(), &[2, n / 2 + 1]);
            let b = irfft(&h, Some(n), -1).unwrap().to_vec::<f32>().unwrap();
            for (p, q) in b.iter().zip(&x) {
                assert!((p - q).abs() < 1e-5, "n={n}");
            }
            let b = irfftn(&rfftn(&a, None, None).unwrap(), Some(&[2, n]), None)
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            for (p, q) in b.iter().zip(&x) {
                assert!((p - q).abs() < 1e-5, "n={n}");
            }
        }
    }

    #[test]
    fn bad_input_is_an_error_naming_the_op() {
        let a = crate::ops::creation::ones(&[2, 3], DType::Float32).unwrap();
        let msg = |r: Result<Array>| r.unwrap_err().to_string();
        assert!(msg(fft(&a, None, 2)).starts_with("fft:"));
        assert!(msg(fft(&a, Some(0), 0)).starts_with("fft: invalid number"));
        assert!(msg(fftn(&a, None, Some(&[0, -2]))).contains("repeated axis"));
        assert!(msg(fft2(&a, Some(&[2]), None)).contains("same length"));
        assert!(msg(rfftn(&a, Some(&[1, 2, 3]), None)).starts_with("rfftn:"));
        let c = a.astype(DType::Complex64).unwrap();
        assert!(msg(rfft(&c, None, 0)).starts_with("rfft: expected a real input"));
        let one = crate::ops::creation::ones(&[1], DType::Complex64).unwrap();
        assert!(msg(irfft(&one, None, 0)).starts_with("irfft: invalid number"));
        let s = crate::ops::creation::ones(&[], DType::Float32).unwrap();
        assert!(fft(&s, None, 0).is_err());
    }
}
