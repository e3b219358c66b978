//! [`Dropout`], [`Dropout2d`] and [`Dropout3d`].
//!
//! In training mode each element (or each whole channel) is zeroed with
//! probability `p` and the rest scaled by `1 / (1 - p)`; in evaluation
//! mode they return the input.
//!
//! The mask draws from the calling thread's default key. Inside
//! `compile` that key is a constant of the trace, so every replay would
//! reuse one mask: a compiled training step passes a key as an input and
//! calls [`Dropout::forward_with_key`].

use crate::error::{Result, check_rank, value};
use crate::module::{Forward, Training};
use ferrox::Array;

fn check_p(who: &str, p: f64) -> Result<f64> {
    if !(0.0..1.0).contains(&p) {
        return Err(value(
            who,
            format!("the drop probability must be in [0, 1), got {p}"),
        ));
    }
    Ok(p)
}

/// `x` times a keep mask of `mask_shape`, scaled by `1 / (1 - p)`.
fn drop(x: &Array, p: f64, mask_shape: &[usize], key: Option<&Array>) -> Result<Array> {
    let keep = 1.0 - p;
    let mask = ferrox::random::bernoulli(keep, Some(mask_shape), key)?;
    (mask.astype(x.dtype())? * x)? * (1.0 / keep)
}

macro_rules! dropout {
    ($(#[$doc:meta])* $name:ident, $who:literal, ranks: $ranks:expr, channel_axes: $n:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            p: f64,
            /// Training or evaluation mode.
            pub training: Training,
        }

        impl $name {
            /// A dropout layer dropping with probability `p` (in `[0, 1)`).
            pub fn new(p: f64) -> Result<$name> {
                Ok($name { p: check_p($who, p)?, training: Training::default() })
            }
            /// The drop probability.
            pub fn p(&self) -> f64 {
                self.p
            }
            /// The forward pass with an explicit random key (for compiled
            /// steps: pass a fresh key as an input each call).
            pub fn forward_with_key(&self, x: &Array, key: Option<&Array>) -> Result<Array> {
                let ranks: &[usize] = $ranks;
                if !ranks.is_empty() {
                    check_rank($who, x, ranks)?;
                }
                if self.p == 0.0 || !self.training.get() {
                    return Ok(x.clone());
                }
                let mut shape = x.shape().to_vec();
                let nd = shape.len();
                // Channel dropout: one draw per (example, channel), shared by
                // the spatial axes just before the channel axis.
                for d in shape.iter_mut().take(nd.saturating_sub(1)).skip(nd.saturating_sub(1 + $n)) {
                    *d = 1;
                }
                drop(x, self.p, &shape, key)
            }
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                self.forward_with_key(x, None)
            }
        }
        crate::impl_module!($name { training });
    };
}

dropout!(
    /// Zeroes elements with probability `p`.
    ///
    /// ```
    /// use ferrox_nn::{Forward, Module, layers::Dropout};
    /// let mut d = Dropout::new(0.5)?;
    /// let x = ferrox::ones(&[1000], ferrox::DType::Float32)?;
    /// let y = d.forward(&x)?.to_vec::<f32>()?;
    /// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
    /// d.eval();
    /// assert_eq!(d.forward(&x)?.to_vec::<f32>()?, vec![1.0; 1000]);
    /// assert!(Dropout::new(1.0).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Dropout, "Dropout", ranks: &[], channel_axes: 0);
dropout!(
    /// Zeroes whole channels of `[N, H, W, C]` or `[H, W, C]` inputs.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Dropout2d};
    /// let d = Dropout2d::new(0.5)?;
    /// let y = d.forward(&ferrox::ones(&[2, 4, 4, 8], ferrox::DType::Float32)?)?;
    /// assert_eq!(y.shape(), &[2, 4, 4, 8]);
    /// assert!(d.forward(&ferrox::ones(&[4, 8], ferrox::DType::Float32)?).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Dropout2d, "Dropout2d", ranks: &[3, 4], channel_axes: 2);
dropout!(
    /// Zeroes whole channels of `[N, D, H, W, C]` or `[D, H, W, C]` inputs.
    ///
    /// ```
    /// use ferrox_nn::{Forward, layers::Dropout3d};
    /// let d = Dropout3d::new(0.25)?;
    /// assert_eq!(d.forward(&ferrox::ones(&[1, 2, 2, 2, 3], ferrox::DType::Float32)?)?.shape(), &[1, 2, 2, 2, 3]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    Dropout3d, "Dropout3d", ranks: &[4, 5], channel_axes: 3);
