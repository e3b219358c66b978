//! Evaluation, pending work per stream, workers and memory.

pub mod devices;
pub mod eval;
pub mod memory;
pub mod pending;
mod workers;
