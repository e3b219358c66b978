//! `ferrox.core.distributed`: mlx.core.distributed's groups and collectives.
//!
//! The collectives are lazy ops (they communicate when evaluated; an
//! evaluation that communicates always releases the GIL, since it waits on
//! other processes). `split` and `init` release it too: they are
//! collectives of their own.

use crate::array::PyArr;
use crate::convert::{dtype_of, to_array};
use crate::device::on;
use crate::errors::OrPy;
use crate::ops::{ok, shape_of, Any, Ints, Stream};
use ferrox::distributed::{self as dist, Group};
use pyo3::prelude::*;

/// A group of processes that communicate (``mlx.core.distributed.Group``).
///
/// Made by :func:`init` (every process of the job) and :meth:`split`.
/// A group's operations run on one thread at a time: threads that
/// communicate at the same time each take their own group (``split``).
///
/// Example:
///     >>> g = ferrox.core.distributed.init()
///     >>> g.rank(), g.size()
///     (0, 1)
#[pyclass(name = "Group", module = "ferrox.core.distributed", frozen)]
#[derive(Clone)]
pub struct PyGroup(pub Group);

#[pymethods]
impl PyGroup {
    /// rank(self) -> int
    ///
    /// This process's rank in the group, from 0 to ``size() - 1``.
    ///
    /// Example:
    ///     >>> ferrox.core.distributed.init().rank()
    ///     0
    fn rank(&self) -> usize {
        self.0.rank()
    }

    /// size(self) -> int
    ///
    /// The number of processes in the group.
    ///
    /// Example:
    ///     >>> ferrox.core.distributed.init().size()
    ///     1
    fn size(&self) -> usize {
        self.0.size()
    }

    /// split(self, color, key=-1) -> Group
    ///
    /// Splits the group: processes passing the same ``color`` form a new
    /// group, ordered by ``key`` (``-1``: by their rank here). Every process
    /// of the group must call it.
    ///
    /// Example:
    ///     >>> g = ferrox.core.distributed.init().split(0)
    ///     >>> g.size()
    ///     1
    #[pyo3(signature = (color, key = -1))]
    fn split(&self, py: Python<'_>, color: i32, key: i32) -> PyResult<PyGroup> {
        let g = self.0.clone();
        let key = (key >= 0).then_some(key);
        crate::gil::detach(py, move || g.split(color, key))
            .py()
            .map(PyGroup)
    }

    fn __repr__(&self) -> String {
        format!(
            "Group(rank={}, size={}, backend={})",
            self.0.rank(),
            self.0.size(),
            self.0.backend()
        )
    }
}

fn group_of(group: Option<&Bound<'_, PyGroup>>) -> Option<Group> {
    group.map(|g| g.get().0.clone())
}

/// is_available(backend='any') -> bool
///
/// Whether a distributed backend can be used: ``'any'`` (always: a single
/// process is a group of one) or ``'mpi'`` (ferrox was built with MPI).
///
/// Example:
///     >>> ferrox.core.distributed.is_available()
///     True
#[pyfunction]
#[pyo3(signature = (backend = "any"))]
fn is_available(backend: &str) -> bool {
    dist::is_available(backend)
}

/// init(strict=False, backend='any', *, all_gather_factory=None) -> Group
///
/// Starts the distributed backend (once) and returns the group of every
/// process of the job. MPI is used when the process was launched by
/// ``mpirun`` (and ferrox was built with MPI); otherwise the group is this
/// process alone, unless ``strict`` asks for an error instead.
/// ``all_gather_factory`` belongs to MLX's JACCL backend, which ferrox does
/// not have: it is checked as MLX checks it (a callable, with
/// ``backend='jaccl'``) and then refused.
///
/// Example:
///     >>> ferrox.core.distributed.init().size()
///     1
#[pyfunction]
#[pyo3(signature = (strict = false, backend = "any", *, all_gather_factory = None))]
fn init(
    py: Python<'_>,
    strict: bool,
    backend: &str,
    all_gather_factory: Option<&Any<'_>>,
) -> PyResult<PyGroup> {
    if let Some(f) = all_gather_factory.filter(|f| !f.is_none()) {
        if !f.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "init: all_gather_factory must be callable",
            ));
        }
        if backend != "jaccl" {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "init: all_gather_factory is only supported with backend='jaccl'",
            ));
        }
    }
    let backend = backend.to_string();
    crate::gil::detach(py, move || dist::init(strict, &backend))
        .py()
        .map(PyGroup)
}

type Collective = fn(&ferrox::Array, Option<&Group>) -> ferrox::Result<ferrox::Array>;

fn collective(
    f: Collective,
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let x = to_array(x)?;
    let g = group_of(group);
    ok(on(stream, || f(&x, g.as_ref()))?)
}

/// all_sum(x, *, group=None, stream=None) -> array
///
/// The elementwise sum of ``x`` over every process of ``group`` (the
/// job's group when ``None``).
///
/// Example:
///     >>> ferrox.core.distributed.all_sum(ferrox.core.array([1, 2])).tolist()
///     [1, 2]
#[pyfunction]
#[pyo3(signature = (x, *, group = None, stream = None))]
fn all_sum(
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    collective(dist::all_sum, x, group, stream)
}

/// all_max(x, *, group=None, stream=None) -> array
///
/// The elementwise maximum of ``x`` over every process of ``group``.
///
/// Example:
///     >>> ferrox.core.distributed.all_max(ferrox.core.array([1, 2])).tolist()
///     [1, 2]
#[pyfunction]
#[pyo3(signature = (x, *, group = None, stream = None))]
fn all_max(
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    collective(dist::all_max, x, group, stream)
}

/// all_min(x, *, group=None, stream=None) -> array
///
/// The elementwise minimum of ``x`` over every process of ``group``.
///
/// Example:
///     >>> ferrox.core.distributed.all_min(ferrox.core.array([1, 2])).tolist()
///     [1, 2]
#[pyfunction]
#[pyo3(signature = (x, *, group = None, stream = None))]
fn all_min(
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    collective(dist::all_min, x, group, stream)
}

/// all_gather(x, *, group=None, stream=None) -> array
///
/// Every process's ``x`` concatenated along the first axis, in rank order.
///
/// Example:
///     >>> ferrox.core.distributed.all_gather(ferrox.core.ones((2, 3))).shape
///     (2, 3)
#[pyfunction]
#[pyo3(signature = (x, *, group = None, stream = None))]
fn all_gather(
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    collective(dist::all_gather, x, group, stream)
}

/// sum_scatter(x, *, group=None, stream=None) -> array
///
/// The sum of ``x`` over the processes, of which each keeps its block of
/// the first axis (which must be divisible by the group's size).
///
/// Example:
///     >>> ferrox.core.distributed.sum_scatter(ferrox.core.ones((4,))).tolist()
///     [1.0, 1.0, 1.0, 1.0]
#[pyfunction]
#[pyo3(signature = (x, *, group = None, stream = None))]
fn sum_scatter(
    x: &Any<'_>,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    collective(dist::sum_scatter, x, group, stream)
}

/// send(x, dst, *, group=None, stream=None) -> array
///
/// Sends ``x`` to process ``dst`` of ``group``; evaluate the result (it is
/// ``x``) to send. ``dst`` receives it with :func:`recv` or :func:`recv_like`.
///
/// Example:
///     >>> try:
///     ...     ferrox.core.distributed.send(ferrox.core.ones((2,)), 1)
///     ... except ValueError as e:
///     ...     print(str(e)[:5])
///     send:
#[pyfunction]
#[pyo3(signature = (x, dst, *, group = None, stream = None))]
fn send(
    x: &Any<'_>,
    dst: i64,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let x = to_array(x)?;
    let g = group_of(group);
    ok(on(stream, || dist::send(&x, dst, g.as_ref()))?)
}

/// recv(shape, dtype, src, *, group=None, stream=None) -> array
///
/// An array of ``shape`` and ``dtype`` received from process ``src``.
///
/// Example:
///     >>> try:
///     ...     ferrox.core.distributed.recv((2,), ferrox.core.float32, 1)
///     ... except ValueError as e:
///     ...     print(str(e)[:5])
///     recv:
#[pyfunction]
#[pyo3(signature = (shape, dtype, src, *, group = None, stream = None))]
fn recv(
    shape: Ints,
    dtype: &Any<'_>,
    src: i64,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let shape = shape_of(&shape)?;
    let dtype = dtype_of(dtype)?;
    let g = group_of(group);
    ok(on(stream, || dist::recv(&shape, dtype, src, g.as_ref()))?)
}

/// recv_like(x, src, *, group=None, stream=None) -> array
///
/// :func:`recv` with the shape and dtype of ``x``.
///
/// Example:
///     >>> try:
///     ...     ferrox.core.distributed.recv_like(ferrox.core.ones((2,)), 1)
///     ... except ValueError as e:
///     ...     print(str(e)[:5])
///     recv:
#[pyfunction]
#[pyo3(signature = (x, src, *, group = None, stream = None))]
fn recv_like(
    x: &Any<'_>,
    src: i64,
    group: Option<&Bound<'_, PyGroup>>,
    stream: Stream<'_, '_>,
) -> PyResult<PyArr> {
    let x = to_array(x)?;
    let g = group_of(group);
    ok(on(stream, || dist::recv_like(&x, src, g.as_ref()))?)
}

/// Registers `ferrox.core.distributed`.
pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = crate::fft::submodule(
        parent,
        "distributed",
        "Communication between processes (mlx.core.distributed): MPI when launched by mpirun, \
         a group of one otherwise.",
    )?;
    m.add_class::<PyGroup>()?;
    macro_rules! add {
        ($($f:ident),* $(,)?) => { $( m.add_function(wrap_pyfunction!($f, &m)?)?; )* };
    }
    add!(
        is_available,
        init,
        all_sum,
        all_max,
        all_min,
        all_gather,
        sum_scatter
    );
    add!(send, recv, recv_like);
    Ok(())
}
