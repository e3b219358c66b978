//! The language model of the main job: its config, the transformer, its
//! training step, checkpoints and generation.

mod config;
mod model;

pub use config::LmConfig;
pub use model::{Block, Lm};
pub mod checkpoint;
pub mod generate;
pub mod sample;
pub mod train;
