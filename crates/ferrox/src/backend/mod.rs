//! Compute backends. Only the CPU exists today.

pub mod cpu;
