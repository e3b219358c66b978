//! ferrox-nn: modules, layers, losses, initializers, optimizers and
//! learning-rate schedules for [ferrox], the Rust face of MLX's
//! `mlx.nn` and `mlx.optimizers`.
//!
//! A model is a plain struct of layers ([`Module`]); its parameters form a
//! named tree ([`Params`]) that transforms, optimizers and files share.
//!
//! ```
//! use ferrox::{Array, DType};
//! use ferrox_nn::{Forward, Module, layers::{Linear, Relu, Sequential}, losses, optim::{Optimizer, Sgd}};
//! let mut model = Sequential::new()
//!     .push(Linear::new(2, 8, true)?)
//!     .push(Relu)
//!     .push(Linear::new(8, 1, true)?);
//! let x = Array::from_slice(&[0.0f32, 1.0, 1.0, 0.0], &[2, 2])?;
//! let y = Array::from_slice(&[1.0f32, -1.0], &[2, 1])?;
//! let loss_and_grad = ferrox_nn::value_and_grad(|m: &Sequential, xs: &[Array]| {
//!     losses::mse_loss(&m.forward(&xs[0])?, &xs[1], losses::Reduction::Mean)
//! });
//! let mut opt = Sgd::new(0.1);
//! let (first, grads) = loss_and_grad(&mut model, &[x.clone(), y.clone()])?;
//! opt.update(&mut model, &grads)?;
//! let (second, _) = loss_and_grad(&mut model, &[x, y])?;
//! assert!(second.item::<f32>()? < first.item::<f32>()?);
//! # Ok::<(), ferrox::Error>(())
//! ```
//!
//! Thread safety: modules are `Send + Sync` and immutable while shared;
//! [`SharedModule`] lets one thread swap in new weights while others run
//! inference (each forward pass sees one whole weight set).
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod error;
pub mod grad;
pub mod init;
pub mod io;
pub mod layers;
pub mod losses;
pub mod module;
pub mod optim;
pub mod params;
pub mod shared;
pub mod step;

pub use grad::value_and_grad;
pub use module::{Forward, Layer, Module, Param, Training};
pub use params::Params;
pub use shared::SharedModule;
