//! Evaluation, pending work per stream, workers, memory and kernel times.

pub mod devices;
pub mod eval;
pub mod memory;
pub mod pending;
pub mod profile;
mod workers;
