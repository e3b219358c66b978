//! Window functions (numpy's `bartlett`, `blackman`, `hamming`,
//! `hanning`): float32 tapers of `m` points, symmetric, computed in f64 on
//! the host (a constant of `m`, no graph needed).

use crate::error::Result;
use crate::graph::array::Array;
use std::f64::consts::PI;

/// `m` points of `w(n)` for `n` in `0..m` with `x = n / (m - 1)`; one point
/// is `[1]` and none is `[]`, as numpy.
fn window(m: usize, w: impl Fn(f64) -> f64) -> Result<Array> {
    let values: Vec<f32> = match m {
        0 => vec![],
        1 => vec![1.0],
        _ => (0..m)
            .map(|n| w(n as f64 / (m - 1) as f64) as f32)
            .collect(),
    };
    Array::from_slice(&values, &[m])
}

/// The Bartlett (triangular) window: `1 - |2x - 1|`.
///
/// ```
/// assert_eq!(ferrox::bartlett(5)?.to_vec::<f32>()?, vec![0.0, 0.5, 1.0, 0.5, 0.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bartlett(m: usize) -> Result<Array> {
    window(m, |x| 1.0 - (2.0 * x - 1.0).abs())
}

/// The Blackman window: `0.42 - 0.5 cos(2 pi x) + 0.08 cos(4 pi x)`.
///
/// ```
/// let w = ferrox::blackman(3)?.to_vec::<f32>()?;
/// assert!(w[0].abs() < 1e-6 && (w[1] - 1.0).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn blackman(m: usize) -> Result<Array> {
    window(m, |x| {
        0.42 - 0.5 * (2.0 * PI * x).cos() + 0.08 * (4.0 * PI * x).cos()
    })
}

/// The Hamming window: `0.54 - 0.46 cos(2 pi x)`.
///
/// ```
/// let w = ferrox::hamming(3)?.to_vec::<f32>()?;
/// assert!((w[0] - 0.08).abs() < 1e-6 && (w[1] - 1.0).abs() < 1e-6);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hamming(m: usize) -> Result<Array> {
    window(m, |x| 0.54 - 0.46 * (2.0 * PI * x).cos())
}

/// The Hann window: `0.5 - 0.5 cos(2 pi x)`.
///
/// ```
/// assert_eq!(ferrox::hanning(1)?.to_vec::<f32>()?, vec![1.0]);
/// assert_eq!(ferrox::hanning(0)?.shape(), &[0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hanning(m: usize) -> Result<Array> {
    window(m, |x| 0.5 - 0.5 * (2.0 * PI * x).cos())
}
