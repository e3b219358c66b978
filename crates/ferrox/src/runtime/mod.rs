//! Evaluation, devices and streams, workers and memory.

pub mod cell;
pub mod device;
pub mod eval;
pub mod memory;
mod workers;
