//! The Walsh–Hadamard transform along the last axis, composed of
//! `log2(n)` butterfly stages (reshape, add, subtract, stack), so its
//! derivative (the transform itself) and batching come for free.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::ops::binary::{add, multiply, subtract};
use crate::ops::indexing::take;
use crate::ops::join::stack;
use crate::ops::views::reshape;

/// `H_n @ x` along the last axis (Sylvester's ordering), times `scale`
/// (default `1 / sqrt(n)`, which makes the transform orthonormal). `n`
/// must be a power of two. Integer and bool inputs compute in float32.
///
/// ```
/// let x = ferrox::Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[4])?;
/// let y = ferrox::hadamard_transform(&x, Some(1.0))?;
/// assert_eq!(y.to_vec::<f32>()?, vec![10.0, -2.0, -4.0, 0.0]);
/// assert!(ferrox::hadamard_transform(&ferrox::ones(&[3], ferrox::DType::Float32)?, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn hadamard_transform(a: &Array, scale: Option<f64>) -> Result<Array> {
    let op = "hadamard_transform";
    // A scalar is a transform of length 1 (the identity times `scale`).
    let n = a.shape().last().copied().unwrap_or(1);
    if !n.is_power_of_two() {
        return Err(Error::value(
            op,
            format!(
                "the last axis must have a power-of-two length, got {n} (shape {:?})",
                a.shape()
            ),
        ));
    }
    let x = match a.dtype() {
        DType::Complex64 => {
            return Err(Error::dtype(op, "complex64 is not supported".to_string()));
        }
        d if d.is_float() => a.clone(),
        _ => a.astype(DType::Float32)?,
    };
    let batch: Vec<isize> = x.shape()[..x.ndim().saturating_sub(1)]
        .iter()
        .map(|&d| d as isize)
        .collect();
    let mut y = x;
    let mut h = 1usize;
    while h < n {
        // [..., n / 2h, 2, h]: pair element j with j + h in each block.
        let mut shape = batch.clone();
        shape.extend([(n / (2 * h)) as isize, 2, h as isize]);
        let blocks = reshape(&y, &shape)?;
        let lo = take(&blocks, &Array::from(0i32), Some(-2))?;
        let hi = take(&blocks, &Array::from(1i32), Some(-2))?;
        let stacked = stack(&[add(&lo, &hi)?, subtract(&lo, &hi)?], -2)?;
        let mut flat = batch.clone();
        flat.push(n as isize);
        y = reshape(&stacked, &flat)?;
        h *= 2;
    }
    let s = scale.unwrap_or(1.0 / (n as f64).sqrt());
    multiply(&y, &Array::weak_f64(s))
}
