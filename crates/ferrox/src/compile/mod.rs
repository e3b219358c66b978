//! compile: trace once, simplify, fuse, replay — behind one process-wide cache.

pub mod cache;
