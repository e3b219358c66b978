//! [`Upsample`]: nearest-neighbour and (multi)linear upsampling of
//! channels-last `[N, spatial..., C]` inputs by per-axis scale factors,
//! with MLX's index formulas. Linear interpolation is separable, so it is
//! applied one spatial axis at a time.

use crate::error::{Result, check_rank, value};
use crate::module::Forward;
use ferrox::{Array, DType};

/// How [`Upsample`] fills new positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpsampleMode {
    /// The nearest input element.
    Nearest,
    /// Linear interpolation along each spatial axis.
    Linear,
}

/// Upsampling by `scale_factor` (one per spatial axis).
///
/// ```
/// use ferrox_nn::{Forward, layers::{Upsample, UpsampleMode}};
/// let x = ferrox::Array::from_slice(&[1.0f32, 2.0], &[1, 2, 1])?;
/// let near = Upsample::new(vec![2.0], UpsampleMode::Nearest, false)?;
/// assert_eq!(near.forward(&x)?.to_vec::<f32>()?, vec![1.0, 1.0, 2.0, 2.0]);
/// let lin = Upsample::new(vec![2.0], UpsampleMode::Linear, true)?;
/// let y = lin.forward(&x)?.to_vec::<f32>()?;
/// assert!((y[1] - 4.0 / 3.0).abs() < 1e-6);
/// assert!(near.forward(&ferrox::ones(&[1, 2, 2, 1], ferrox::DType::Float32)?).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Upsample {
    /// The factor of each spatial axis.
    pub scale_factor: Vec<f64>,
    /// Nearest or linear.
    pub mode: UpsampleMode,
    /// Linear mode: the corner samples of input and output line up.
    pub align_corners: bool,
}

impl Upsample {
    /// An upsampler (positive scale factors).
    pub fn new(
        scale_factor: Vec<f64>,
        mode: UpsampleMode,
        align_corners: bool,
    ) -> Result<Upsample> {
        if scale_factor.is_empty() || scale_factor.iter().any(|&s| s.is_nan() || s <= 0.0) {
            return Err(value(
                "Upsample",
                format!("scale factors must be positive, got {scale_factor:?}"),
            ));
        }
        Ok(Upsample {
            scale_factor,
            mode,
            align_corners,
        })
    }
}

fn indices(v: Vec<u32>) -> Result<Array> {
    let n = v.len();
    Array::from_slice(&v, &[n])
}

/// Nearest-neighbour source indices of `m` outputs from `n` inputs.
fn nearest(n: usize, m: usize) -> Vec<u32> {
    let r = n as f32 / m as f32;
    (0..m)
        .map(|i| {
            let i = i as f32;
            let v = if m > n {
                ((i + 0.5) * r - 0.5).round_ties_even()
            } else {
                i * r
            };
            (v.max(0.0) as u32).min(n as u32 - 1)
        })
        .collect()
}

/// Left and right source indices and the right weight of linear
/// interpolation of `m` outputs from `n` inputs.
fn linear(n: usize, m: usize, scale: f64, align_corners: bool) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let (mut l, mut r, mut w) = (
        Vec::with_capacity(m),
        Vec::with_capacity(m),
        Vec::with_capacity(m),
    );
    for i in 0..m {
        let x = if align_corners {
            i as f32 * ((n as f64 - 1.0) / (m.max(2) - 1) as f64) as f32
        } else {
            let step = 1.0 / scale;
            let start = ((m as f64 - 1.0) * step - n as f64 + 1.0) / 2.0;
            i as f32 * step as f32 - start as f32
        };
        let x = x.clamp(0.0, n as f32 - 1.0);
        let (lo, hi) = (x.floor(), x.ceil());
        l.push(lo as u32);
        r.push(hi as u32);
        w.push(x - lo);
    }
    (l, r, w)
}

impl Forward for Upsample {
    fn forward(&self, x: &Array) -> Result<Array> {
        let dims = self.scale_factor.len();
        check_rank("Upsample", x, &[dims + 2])?;
        let mut y = x.clone();
        for (d, &s) in self.scale_factor.iter().enumerate() {
            let axis = (d + 1) as isize;
            let n = x.shape()[d + 1];
            let m = (s * n as f64) as usize;
            if m == 0 {
                return Err(value(
                    "Upsample",
                    format!("scale {s} leaves no elements of axis {axis} (size {n})"),
                ));
            }
            y = match self.mode {
                UpsampleMode::Nearest => ferrox::take(&y, &indices(nearest(n, m))?, Some(axis))?,
                UpsampleMode::Linear => {
                    let (l, r, w) = linear(n, m, s, self.align_corners);
                    let mut wshape = vec![1usize; dims + 2];
                    wshape[d + 1] = m;
                    let wr = Array::from_slice(&w, &wshape)?.astype(if y.dtype().is_float() {
                        y.dtype()
                    } else {
                        DType::Float32
                    })?;
                    let wl = ferrox::subtract(&1.0.into(), &wr)?;
                    let left = ferrox::take(&y, &indices(l)?, Some(axis))?;
                    let right = ferrox::take(&y, &indices(r)?, Some(axis))?;
                    ((left * wl)? + (right * wr)?)?
                }
            };
        }
        Ok(y)
    }
}
crate::impl_module!(Upsample {});
