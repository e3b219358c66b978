//! Distributed communication: `mx.distributed`'s groups and collectives.
//!
//! [`init`] starts the backend (MPI, feature `mpi`, when the process was
//! launched by `mpirun`) and returns the [`Group`] of every process of the
//! job; without a launcher or without the feature the group is this
//! process alone and every collective returns its input, so the same
//! program runs on one machine unchanged. The collectives ([`all_sum`],
//! [`all_max`], [`all_min`], [`all_gather`], [`sum_scatter`], [`send`],
//! [`recv`], [`recv_like`]) are lazy ops like any other: they communicate
//! when evaluated, work on every dtype, have MLX's derivative and batching
//! rules, and can be traced by `compile`.
//!
//! The ordering rule across threads is in [`group`]'s docs: a group's
//! operations run on one thread at a time (a second thread gets an error);
//! threads that communicate at once each use a group of their own.
//! docs/distributed.md has launching (mpirun, host files) and what is
//! missing.
//!
//! ```
//! use ferrox::{distributed, Array};
//! let world = distributed::init(false, "any")?;
//! let x = Array::from_slice(&[1.0f32, 2.0], &[2])?;
//! let mean = (&distributed::all_sum(&x, Some(&world))? / world.size() as f64)?;
//! assert_eq!(mean.to_vec::<f32>()?, vec![1.0, 2.0]);
//! # Ok::<(), ferrox::Error>(())
//! ```

pub mod group;
#[cfg(feature = "mpi")]
mod mpi;
pub mod ops;

pub use group::{Group, init, is_available};
pub use ops::{
    ReduceOp, all_gather, all_max, all_min, all_sum, recv, recv_like, send, sum_scatter,
};
