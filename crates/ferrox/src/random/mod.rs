//! Random numbers: counter-based, splittable keys (Threefry-2x32) and the
//! common distributions, drawing MLX's numbers.
//!
//! A key is a `uint32` array of shape `[2]`. Every sampler takes an
//! optional key; the same key always gives the same numbers (on every
//! thread, compiled or not), and [`split`] derives independent keys from
//! one. The stream matches MLX's (CPU): [`key`], [`split`] and [`bits`]
//! give MLX's words, and each sampler repeats MLX's transform from bits to
//! values in the same dtypes with the same float functions, so code ported
//! from MLX with a key or a seed draws the same weights and samples (see
//! each sampler for the few differences: float64, which MLX mostly does
//! not sample, and `multivariate_normal`'s matrix square root). Samplers
//! are built from [`bits`] with graph ops, so `vmap` (over keys too),
//! `compile` and `grad` compose with them; the bits themselves have zero
//! derivative.
//!
//! ```
//! use ferrox::{DType, random};
//! let k = random::key(42)?;
//! let ks = random::split(&k, 2)?;
//! let k1 = ferrox::take(&ks, &ferrox::Array::scalar(0u32), Some(0))?;
//! let x = random::normal(&[3], DType::Float32, 0.0, 1.0, Some(&k1))?;
//! let again = random::normal(&[3], DType::Float32, 0.0, 1.0, Some(&k1))?;
//! assert_eq!(x.to_vec::<f32>()?, again.to_vec::<f32>()?);
//! # Ok::<(), ferrox::Error>(())
//! ```
//!
//! # The default key is per thread
//!
//! With `key: None` a sampler splits the calling thread's default key on
//! the host (plain integer arithmetic, no graph), as MLX's key sequence
//! does: one half becomes the new default, the other is the draw's key. A thread's first default key is
//! block `n` of the process seed's stream, where the process seed mixes the
//! clock and the process id and `n` counts the threads that needed a key,
//! so two threads never draw the same numbers by accident. [`seed`] resets
//! only the calling thread's key: after `seed(s)` that thread draws the same
//! numbers as any thread after `seed(s)`, and as MLX after
//! `mlx.core.random.seed(s)`. Concretely, a draw with default
//! key `d` uses `split(d, 2)[1]` and leaves `split(d, 2)[0]` as the new
//! default, so after `seed(s)` the first draw equals a draw with
//! `split(key(s), 2)[1]`. The per-thread value is a plain
//! two-word `Cell` with no destructor and no allocation, so a thread that
//! draws owns no resource and exits like any other.
//!
//! A function given to `compile` that draws with `key: None` draws fresh
//! numbers at every call: its trace records the draws as key inputs, and
//! each call feeds them keys split off the calling thread's default key, in
//! the order the function drew them, exactly as calling it uncompiled
//! would. So `seed(s)` before a compiled call reproduces it.
//!
//! ```
//! use ferrox::{DType, compile, random};
//! let f = compile(|_: &[ferrox::Array]| Ok(vec![random::uniform(0.0, 1.0, &[4], DType::Float32, None)?]));
//! let (a, b) = (f.call(&[])?, f.call(&[])?);
//! assert_ne!(a[0].to_vec::<f32>()?, b[0].to_vec::<f32>()?);
//! random::seed(3);
//! let c = f.call(&[])?;
//! random::seed(3);
//! let plain = random::uniform(0.0, 1.0, &[4], DType::Float32, None)?;
//! assert_eq!(c[0].to_vec::<f32>()?, plain.to_vec::<f32>()?);
//! assert_eq!(f.traces(), 1);
//! # Ok::<(), ferrox::Error>(())
//! ```

pub(crate) mod bits;
mod continuous;
mod discrete;
pub(crate) mod mlx_math;
mod psd_sqrt;
mod support;

pub use crate::backend::cpu::threefry::threefry2x32;
pub use crate::transforms::default_key::{current_key, seed};
pub use bits::{RandomBits, bits, key, split};
pub use continuous::{gumbel, laplace, multivariate_normal, normal, truncated_normal, uniform};
pub use discrete::{bernoulli, categorical, permutation, permutation_of, randint};
