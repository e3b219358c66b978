//! [`Group`]: the processes a collective runs over, and [`init`].
//!
//! A group is a cheap handle (`Arc`) to one communicator. Its collectives
//! run when the arrays they build are evaluated, on the evaluating thread.
//!
//! # Ordering across threads
//!
//! MPI matches collectives by their order on a communicator, so two threads
//! of one process running collectives on the same communicator at once is
//! erroneous in MPI, and a per-process lock would not help: the two ranks
//! could take it in different orders and pair the wrong operations. The rule
//! here is MPI's, made checkable: **a group's operations run on one thread
//! at a time, in the same order on every rank.** A thread whose operation
//! finds another thread's operation of the same group still running gets an
//! `Err` naming the op (never a silent mismatch from that overlap); threads
//! that want to communicate concurrently [`split`](Group::split) (or
//! [`duplicate`](Group::duplicate)) a group each, one after the other on
//! every rank, and then use their own groups freely in parallel.
//!
//! The check is one atomic flag per group: it is not a lock, so a
//! collective never waits on anything another evaluation holds.

use crate::error::{Error, ErrorKind, Result};
use crate::sync::{Arc, AtomicBool, Ordering};
use std::fmt;

/// A set of processes that communicate: this process's `rank` among
/// `size` of them.
///
/// Without a launcher (or in a build without the `mpi` feature) the group
/// is this process alone, and every collective on it returns its input.
///
/// ```
/// let g = ferrox::distributed::init(false, "any")?;
/// assert_eq!((g.rank(), g.size()), (0, 1)); // not launched under mpirun
/// let x = ferrox::ones(&[2], ferrox::DType::Float32)?;
/// let y = ferrox::distributed::all_sum(&x, Some(&g))?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 1.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone)]
pub struct Group(Arc<Inner>);

struct Inner {
    id: u64,
    rank: usize,
    size: usize,
    comm: Comm,
    /// Set while one of this group's operations runs (see the module docs).
    busy: AtomicBool,
}

/// The engine behind a group.
pub(super) enum Comm {
    /// This process alone.
    Single,
    /// An MPI communicator.
    #[cfg(feature = "mpi")]
    Mpi(super::mpi::MpiComm),
}

impl fmt::Debug for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Group(rank={}, size={}, {})",
            self.0.rank,
            self.0.size,
            self.backend()
        )
    }
}

impl PartialEq for Group {
    fn eq(&self, other: &Group) -> bool {
        self.0.id == other.0.id
    }
}

fn next_id() -> u64 {
    // A process-wide counter, std's (loom's atomics cannot be statics), as
    // for the graph's node and trace ids.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Marks a group busy for the life of one operation.
#[derive(Debug)]
pub(super) struct Busy<'a>(&'a AtomicBool);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Group {
    pub(super) fn new(rank: usize, size: usize, comm: Comm) -> Group {
        Group(Arc::new(Inner {
            id: next_id(),
            rank,
            size,
            comm,
            busy: AtomicBool::new(false),
        }))
    }

    /// The group of this process alone (rank 0 of 1).
    ///
    /// ```
    /// let g = ferrox::distributed::Group::single();
    /// assert_eq!((g.rank(), g.size()), (0, 1));
    /// ```
    pub fn single() -> Group {
        Group::new(0, 1, Comm::Single)
    }

    /// This process's rank in the group, `0..size`.
    ///
    /// ```
    /// assert_eq!(ferrox::distributed::Group::single().rank(), 0);
    /// ```
    pub fn rank(&self) -> usize {
        self.0.rank
    }

    /// The number of processes in the group.
    ///
    /// ```
    /// assert_eq!(ferrox::distributed::Group::single().size(), 1);
    /// ```
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// The engine's name: `"mpi"`, or `"single"` for a process alone.
    ///
    /// ```
    /// assert_eq!(ferrox::distributed::Group::single().backend(), "single");
    /// ```
    pub fn backend(&self) -> &'static str {
        match &self.0.comm {
            Comm::Single => "single",
            #[cfg(feature = "mpi")]
            Comm::Mpi(_) => "mpi",
        }
    }

    pub(super) fn comm(&self) -> &Comm {
        &self.0.comm
    }

    /// Splits the group: processes passing the same `color` form a new
    /// group, ranked by `key` (ties by their rank here; `None` keeps this
    /// group's order). Every process of the group must call it, in the same
    /// order relative to the group's other operations (it is a collective).
    ///
    /// ```
    /// let g = ferrox::distributed::Group::single();
    /// let h = g.split(0, None)?;
    /// assert_eq!((h.rank(), h.size()), (0, 1));
    /// assert!(g.split(-1, None).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn split(&self, color: i32, key: Option<i32>) -> Result<Group> {
        if color < 0 {
            return Err(Error::value(
                "split",
                format!("color must be non-negative, got {color}"),
            ));
        }
        let key = match key {
            Some(k) if k < 0 => {
                return Err(Error::value(
                    "split",
                    format!("key must be non-negative, got {k}"),
                ));
            }
            Some(k) => k,
            None => i32::try_from(self.rank()).unwrap_or(i32::MAX),
        };
        let _busy = self.enter("split")?;
        match &self.0.comm {
            Comm::Single => {
                let _ = key;
                Ok(Group::single())
            }
            #[cfg(feature = "mpi")]
            Comm::Mpi(c) => {
                let (rank, size, comm) = c.split(color, key)?;
                Ok(Group::new(rank, size, Comm::Mpi(comm)))
            }
        }
    }

    /// A new group of the same processes with its own communicator: what a
    /// thread takes to run collectives in parallel with other threads (see
    /// the module docs). A collective, like [`split`](Self::split).
    ///
    /// ```
    /// let g = ferrox::distributed::Group::single();
    /// let d = g.duplicate()?;
    /// assert_eq!(d.size(), g.size());
    /// assert_ne!(d, g);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn duplicate(&self) -> Result<Group> {
        self.split(0, None)
    }

    /// Claims the group for one operation, or the error of the ordering
    /// rule when another thread's operation on it is running.
    pub(super) fn enter(&self, op: &str) -> Result<Busy<'_>> {
        match self
            .0
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => Ok(Busy(&self.0.busy)),
            Err(_) => Err(Error::new(
                ErrorKind::Runtime,
                op,
                format!(
                    "another thread is running an operation on this group (rank {} of {}); \
                     a group's operations run on one thread at a time: give each thread \
                     its own group with split or duplicate",
                    self.rank(),
                    self.size()
                ),
            )),
        }
    }
}

/// The group `init` made (the whole job), once it has run. A process-wide
/// static, so std's `OnceLock` (loom's cannot be a static; the loom models
/// do not cover `init`).
static WORLD: std::sync::OnceLock<Group> = std::sync::OnceLock::new();

/// True when this process was started by an MPI launcher (`mpirun`,
/// `mpiexec`, `srun`), read from the environment the launchers set.
fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// Whether a backend can be used: `"mpi"` (this build has the `mpi`
/// feature), or `"any"` (true: the size-1 group is always there).
///
/// ```
/// assert!(ferrox::distributed::is_available("any"));
/// assert!(!ferrox::distributed::is_available("nccl"));
/// ```
pub fn is_available(backend: &str) -> bool {
    backend == "any" || (backend == "mpi" && cfg!(feature = "mpi"))
}

/// Starts the distributed backend (once per process) and returns the group
/// of every process of the job.
///
/// `backend` is `"any"` or `"mpi"`. With `"any"`, MPI is used when the
/// process was launched by `mpirun` (and the build has the `mpi` feature);
/// otherwise the group is this process alone. `"mpi"` asks for MPI even
/// without a launcher (a job of one). With `strict`, a backend that cannot
/// start is an error instead of the size-1 group. Later calls return the
/// same group.
///
/// ```
/// let g = ferrox::distributed::init(false, "any")?;
/// assert_eq!(g.size(), 1);
/// assert!(ferrox::distributed::init(false, "ring").is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn init(strict: bool, backend: &str) -> Result<Group> {
    if !matches!(backend, "any" | "mpi") {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "init",
            format!(
                "unknown or unsupported backend {backend:?}; ferrox supports \"any\" and \"mpi\""
            ),
        ));
    }
    if let Some(g) = WORLD.get() {
        return Ok(g.clone());
    }
    let want_mpi = backend == "mpi" || launched_by_mpi();
    let group = if want_mpi {
        match start_mpi() {
            Ok(g) => g,
            Err(e) if strict || backend == "mpi" => return Err(e),
            Err(_) => Group::single(),
        }
    } else if strict {
        return Err(Error::new(
            ErrorKind::Runtime,
            "init",
            "strict: no distributed backend could be started (not launched by mpirun)",
        ));
    } else {
        Group::single()
    };
    // A racing first call may have set it: every caller gets the same one.
    let _ = WORLD.set(group);
    WORLD
        .get()
        .cloned()
        .ok_or_else(|| Error::runtime("init", "internal error: the world group is not set"))
}

#[cfg(feature = "mpi")]
fn start_mpi() -> Result<Group> {
    let (rank, size, comm) = super::mpi::world()?;
    Ok(Group::new(rank, size, Comm::Mpi(comm)))
}

#[cfg(not(feature = "mpi"))]
fn start_mpi() -> Result<Group> {
    Err(Error::new(
        ErrorKind::Unsupported,
        "init",
        "ferrox was built without MPI (rebuild with the `mpi` feature; see docs/distributed.md)",
    ))
}

/// `group`, or the job's group ([`init`] with `"any"` on first use).
pub(super) fn resolve(group: Option<&Group>) -> Result<Group> {
    match group {
        Some(g) => Ok(g.clone()),
        None => init(false, "any"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_group_refuses_a_second_operation() {
        let g = Group::single();
        let first = g.enter("all_sum").unwrap();
        let e = g.enter("all_gather").unwrap_err();
        assert!(
            e.to_string().starts_with("all_gather: another thread"),
            "{e}"
        );
        drop(first);
        assert!(g.enter("all_gather").is_ok());
    }

    #[test]
    fn split_checks_its_arguments() {
        let g = Group::single();
        assert!(g.split(0, Some(-2)).unwrap_err().to_string().contains("-2"));
        assert_eq!(g.split(3, Some(7)).unwrap().size(), 1);
    }

    #[test]
    fn strict_init_without_a_launcher_fails_or_returns_the_world() {
        // Outside mpirun, strict "any" has no backend; a test run under
        // mpirun (scripts/test-mpi.sh) gets the world.
        match init(true, "any") {
            Ok(g) => assert!(g.size() >= 1),
            Err(e) => assert!(e.to_string().starts_with("init:"), "{e}"),
        }
    }
}
