//! Parallel sections the calling thread takes part in.
//!
//! A rayon section entered from a thread outside the pool queues its work
//! and puts the caller to sleep on a latch until the last piece is done: a
//! wake-up on each side, 15-45 µs per section on a 2-core VM, paid by every
//! kernel of a training step. Here the caller claims tasks itself, and the
//! helpers (threads of a pool of `cores - 1`, started on first use) claim
//! the rest as they arrive. The caller never sleeps on the pool: once
//! nothing is left to claim it waits only for tasks already running, and if
//! no helper has arrived by then it has simply done every task itself.
//!
//! The helpers are their own pool rather than rayon's global one: the
//! caller plus `cores - 1` helpers is one thread per core, while the global
//! pool's `cores` workers plus the caller would be one too many, and a
//! helper sharing a core with an idle worker's yield loop ran at half
//! speed (a measured 1.7x on one section in ten).
//!
//! A helper whose section is done lingers for a while ([`LINGER`]) watching
//! a [`Board`] where callers post their sections, instead of going back to
//! the pool to sleep: a training step alternates parallel kernels with
//! stretches of small serial ones, and a helper that has fallen asleep in
//! such a stretch joins the next parallel kernel 20-30 µs late (measured
//! scheduling delay on a 2-core VM), after the caller has done most of it
//! alone. A caller spawns pool jobs only for helpers that are not lingering.
//!
//! [`Section`] is the protocol on its own, so that loom can check it
//! (`tests/loom_team.rs`): every task runs exactly once, and no helper
//! touches the section's work after [`Section::close_and_drain`] returns,
//! which is what lets [`for_each_task`] lend helpers a closure that
//! borrows from the caller's stack. [`Board`] is checked there too: a
//! caller that spawns no job because a helper is watching is seen by that
//! helper.

use crate::sync::{Arc, AtomicUsize, Mutex, Ordering, lock};
use std::any::Any;
use std::sync::OnceLock;

/// The claim-and-drain state of one parallel section of `tasks` tasks.
///
/// Tasks are claimed by index, each by exactly one thread. A helper
/// [`enter`](Section::enter)s before claiming and [`leave`](Section::leave)s
/// after its last task; the caller claims too, then
/// [`close_and_drain`](Section::close_and_drain)s: after that no helper
/// can enter and none is inside.
///
/// ```
/// use ferrox::backend::cpu::team::Section;
/// let s = Section::new(2);
/// assert!(s.enter());
/// assert_eq!(s.claim(), Some(0));
/// s.leave();
/// assert_eq!(s.claim(), Some(1));
/// assert_eq!(s.claim(), None);
/// s.close_and_drain();
/// assert!(!s.enter());
/// ```
pub struct Section {
    next: AtomicUsize,
    tasks: usize,
    /// Helpers inside, times two, plus one once closed.
    door: AtomicUsize,
}

const CLOSED: usize = 1;
const ONE_HELPER: usize = 2;

impl Section {
    /// A section of `tasks` unclaimed tasks, open to helpers.
    pub fn new(tasks: usize) -> Self {
        Section {
            next: AtomicUsize::new(0),
            tasks,
            door: AtomicUsize::new(0),
        }
    }

    /// The next unclaimed task, or `None` when every task is claimed.
    pub fn claim(&self) -> Option<usize> {
        // Relaxed: the counter only hands out distinct indices; what a task
        // reads was published before the section started (the helper's
        // spawn or the caller's own program order).
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.tasks).then_some(i)
    }

    /// A helper's entry: false once the caller has closed the section, and
    /// then the helper must not claim.
    pub fn enter(&self) -> bool {
        let mut door = self.door.load(Ordering::Acquire);
        loop {
            if door & CLOSED != 0 {
                return false;
            }
            match self.door.compare_exchange_weak(
                door,
                door + ONE_HELPER,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => door = now,
            }
        }
    }

    /// A helper's exit after an `enter` that returned true; its tasks'
    /// writes happen before the caller's `close_and_drain` returns.
    pub fn leave(&self) {
        self.door.fetch_sub(ONE_HELPER, Ordering::Release);
    }

    /// Closes the section to helpers and returns once none is inside: a
    /// short spin, then yields (a helper inside is running a task that
    /// only reads its operands, so it always finishes).
    pub fn close_and_drain(&self) {
        let mut door = self.door.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while door != CLOSED {
            pause(&mut spins);
            door = self.door.load(Ordering::Acquire);
        }
    }
}

/// One step of a wait: a CPU pause for the first few thousand, then a
/// yield to the OS (under loom, always a yield, which the model needs).
fn pause(spins: &mut u32) {
    #[cfg(not(feature = "loom"))]
    {
        if *spins < 4096 {
            *spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    #[cfg(feature = "loom")]
    {
        *spins += 1;
        loom::thread::yield_now();
    }
}

/// How long a helper whose section is done keeps watching the [`Board`]
/// for the next one before it goes back to the pool (where it sleeps
/// after a few dozen idle yields). Long enough to span the serial
/// stretches between a training step's parallel kernels (tens to a couple
/// of hundred µs). The cost is up to this much CPU time on one core after
/// the last parallel kernel of a burst, spent in pauses and loads of one
/// cache line, as an OpenMP thread spins after a parallel region.
pub const LINGER: std::time::Duration = std::time::Duration::from_micros(300);

/// CPU pauses between two looks at the board by a lingering helper.
#[cfg(not(feature = "loom"))]
const PAUSES_PER_LOOK: usize = 32;

/// Where callers post sections for helpers that linger.
///
/// A caller [`post`](Board::post)s its section and learns how many helpers
/// are watching; it spawns pool jobs only for the others. A watching
/// helper ([`watch`](Board::watch)) helps each section posted after it
/// began, one after another, until it runs out of patience. Only the
/// latest post is kept: a section replaced before a helper looked gets no
/// help from it (its caller still runs every task itself).
///
/// The guarantee, modelled under loom (`tests/loom_team.rs`): a caller
/// that counted a helper as watching is seen by it. Posting, starting
/// and stopping to watch take one lock, so a post comes either before a
/// helper starts (and does not count it) or before it stops (and it looks).
///
/// ```
/// use ferrox::backend::cpu::team::Board;
/// let board: Board<&str> = Board::new();
/// assert_eq!(board.post("first"), 0); // nobody watching: spawn helpers
/// let mut seen = Vec::new();
/// let mut looks = 0;
/// board.watch(|| { looks += 1; looks < 3 }, |s| seen.push(*s));
/// assert!(seen.is_empty()); // "first" came before the helper did
/// ```
pub struct Board<S> {
    /// Posts so far; written under `state`'s lock, read without it by
    /// watchers between looks.
    posts: AtomicUsize,
    state: Mutex<BoardState<S>>,
}

struct BoardState<S> {
    /// The latest post.
    posted: Option<S>,
    /// Helpers between the start and the end of a `watch`.
    watching: usize,
}

impl<S: Clone> Board<S> {
    /// An empty board.
    pub fn new() -> Self {
        Board {
            posts: AtomicUsize::new(0),
            state: Mutex::new(BoardState {
                posted: None,
                watching: 0,
            }),
        }
    }

    /// Posts `section` and returns how many helpers are watching: each will
    /// look at it (unless a later post replaces it first) and needs no
    /// pool job.
    pub fn post(&self, section: S) -> usize {
        let mut state = lock(&self.state);
        state.posted = Some(section);
        self.posts.fetch_add(1, Ordering::Release);
        state.watching
    }

    /// Watches: helps (`help`) each section posted from now on, until
    /// `patient()` (asked between looks) says to stop, then takes a last
    /// look. A section posted while one is being helped is helped next.
    pub fn watch(&self, mut patient: impl FnMut() -> bool, mut help: impl FnMut(&S)) {
        let mut seen = {
            let mut state = lock(&self.state);
            state.watching += 1;
            self.posts.load(Ordering::Relaxed)
        };
        loop {
            if self.posts.load(Ordering::Relaxed) != seen {
                let section = {
                    let state = lock(&self.state);
                    seen = self.posts.load(Ordering::Relaxed);
                    state.posted.clone()
                };
                if let Some(section) = section {
                    help(&section);
                }
                continue;
            }
            if !patient() {
                break;
            }
            #[cfg(feature = "loom")]
            loom::thread::yield_now();
            // A burst of pauses between looks (a fraction of a µs): with a
            // tight loop of loads here, a serial kernel the caller ran
            // meanwhile took 1.5 times as long on a 2-core VM (g @ w2.T
            // of the training step, 21 -> 32 µs); with the pauses, no
            // slower than with the helper asleep.
            #[cfg(not(feature = "loom"))]
            for _ in 0..PAUSES_PER_LOOK {
                std::hint::spin_loop();
            }
        }
        let last = {
            let mut state = lock(&self.state);
            state.watching -= 1;
            (self.posts.load(Ordering::Relaxed) != seen)
                .then(|| state.posted.clone())
                .flatten()
        };
        if let Some(section) = last {
            help(&section);
        }
    }
}

impl<S: Clone> Default for Board<S> {
    fn default() -> Self {
        Self::new()
    }
}

/// The board of the helper pool (see [`helpers`]). Not under loom, whose
/// types cannot outlive one model run: there helpers do not linger (the
/// protocol itself is modelled on boards made inside each run).
#[cfg(not(feature = "loom"))]
fn board() -> &'static Board<Arc<Shared>> {
    static BOARD: std::sync::OnceLock<Board<Arc<Shared>>> = std::sync::OnceLock::new();
    BOARD.get_or_init(Board::new)
}

/// Posts `shared` for lingering helpers; returns how many there were.
fn post(shared: &Arc<Shared>) -> usize {
    #[cfg(not(feature = "loom"))]
    return board().post(shared.clone());
    #[cfg(feature = "loom")]
    {
        let _ = shared;
        0
    }
}

/// A pool job: helps `shared`, then lingers on the board, helping what is
/// posted, until nothing new has come for [`LINGER`].
fn help_then_linger(shared: Arc<Shared>) {
    shared.help();
    drop(shared);
    #[cfg(not(feature = "loom"))]
    {
        let last = std::cell::Cell::new(std::time::Instant::now());
        board().watch(
            || last.get().elapsed() < LINGER,
            |next| {
                next.help();
                last.set(std::time::Instant::now());
            },
        );
    }
}

/// The helper threads, `cores - 1` of them; `None` on one core or if the
/// pool could not start (every section then runs on its caller).
fn helpers() -> Option<&'static rayon::ThreadPool> {
    static HELPERS: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    HELPERS
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores > 1)
                .then(|| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(cores - 1)
                        .thread_name(|i| format!("ferrox-helper-{i}"))
                        .build()
                        .ok()
                })
                .flatten()
        })
        .as_ref()
}

/// What a helper needs: the section and the work, and where a panicking
/// task leaves its payload for the caller to rethrow.
struct Shared {
    section: Section,
    /// The caller's closure with its lifetime erased; see `for_each_task`.
    work: &'static (dyn Fn(usize) + Sync),
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Shared {
    /// A helper's part: enters unless the section is closed, claims and
    /// runs tasks until none is left, and leaves.
    fn help(&self) {
        if self.section.enter() {
            self.run_claims();
            self.section.leave();
        }
    }

    /// Claims and runs tasks until none is left; a panic stops this thread's
    /// claiming and is kept (the first one) for the caller.
    fn run_claims(&self) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            while let Some(i) = self.section.claim() {
                (self.work)(i);
            }
        }));
        if let Err(payload) = result {
            lock(&self.panic).get_or_insert(payload);
        }
    }
}

/// Runs `work(0)`, ..., `work(tasks - 1)`, each once, on the calling thread
/// and on whichever helpers join in time; returns when all are done. At
/// most as many threads take part as the caller's rayon pool has
/// (`rayon::current_num_threads`), so a one-thread pool runs everything on
/// the caller.
///
/// Meant for a kernel's parallel loop: tasks should be big enough to be
/// worth a hand-off (tens of microseconds) and must not wait on graph
/// values. A panic in a task is rethrown here after every running task has
/// finished.
///
/// ```
/// use ferrox::backend::cpu::team::for_each_task;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// let sum = AtomicUsize::new(0);
/// for_each_task(100, |i| {
///     sum.fetch_add(i, Ordering::Relaxed);
/// });
/// assert_eq!(sum.into_inner(), 4950);
/// ```
pub fn for_each_task(tasks: usize, work: impl Fn(usize) + Sync) {
    // The caller's rayon pool sets the width (a user's one-thread pool, or
    // RAYON_NUM_THREADS, means one thread here too).
    let width = rayon::current_num_threads().min(tasks);
    let pool = helpers().filter(|_| width > 1);
    let Some(pool) = pool else {
        (0..tasks).for_each(work);
        return;
    };
    let work: &(dyn Fn(usize) + Sync) = &work;
    // SAFETY: only the lifetime is changed. The reference is used by
    // `Shared::run_claims`, which helpers call only after `Section::enter`
    // succeeded and before their `leave`; `close_and_drain` below returns
    // only once the section is closed (no `enter` can succeed any more) and
    // every helper that entered has left, and it runs on every path out of
    // this function (panics are caught in `run_claims`). So no helper uses
    // `work` after this frame, which owns what it borrows, returns. Helper
    // jobs that start later, and lingering helpers that take the section
    // from the board later (it stays posted until the next post), find it
    // closed and drop their `Arc` without touching `work`.
    let work: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(work) };
    let shared = Arc::new(Shared {
        section: Section::new(tasks),
        work,
        panic: Mutex::new(None),
    });
    let lingering = post(&shared);
    let wanted = pool.current_num_threads().min(width - 1);
    for _ in lingering.min(wanted)..wanted {
        let shared = shared.clone();
        pool.spawn(move || help_then_linger(shared));
    }
    shared.run_claims();
    shared.section.close_and_drain();
    let payload = lock(&shared.panic).take();
    if let Some(payload) = payload {
        std::panic::resume_unwind(payload);
    }
}

/// [`for_each_task`] over owned parts (disjoint `&mut` chunks of an
/// output, ranges, tuples of both): `work` gets each part once.
///
/// ```
/// use ferrox::backend::cpu::team::for_each_part;
/// let mut v = vec![0u32; 10];
/// for_each_part(v.chunks_mut(3).enumerate().collect(), |(i, chunk)| chunk.fill(i as u32));
/// assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]);
/// ```
pub fn for_each_part<P: Send>(parts: Vec<P>, work: impl Fn(P) + Sync) {
    // A mutex per part: taken once, uncontended (each index is claimed by
    // one thread), a few nanoseconds against a task's microseconds.
    let parts: Vec<Mutex<Option<P>>> = parts.into_iter().map(|p| Mutex::new(Some(p))).collect();
    for_each_task(parts.len(), |i| {
        if let Some(part) = lock(&parts[i]).take() {
            work(part);
        }
    });
}

/// [`for_each_part`] for fallible work: every part still runs, and the
/// first error (by part order) is returned.
///
/// ```
/// use ferrox::backend::cpu::team::try_for_each_part;
/// let r = try_for_each_part(vec![1, 2, 3], |p| if p == 2 { Err(p) } else { Ok(()) });
/// assert_eq!(r, Err(2));
/// ```
pub fn try_for_each_part<P: Send, E: Send>(
    parts: Vec<P>,
    work: impl Fn(P) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let errors: Vec<Mutex<Option<E>>> = (0..parts.len()).map(|_| Mutex::new(None)).collect();
    let indexed: Vec<(usize, P)> = parts.into_iter().enumerate().collect();
    for_each_part(indexed, |(i, part)| {
        if let Err(e) = work(part) {
            *lock(&errors[i]) = Some(e);
        }
    });
    errors
        .iter()
        .find_map(|e| lock(e).take())
        .map_or(Ok(()), Err)
}

/// A pairwise fold of `lo..hi` whose upper splits run as one section.
///
/// `split(lo, hi)` is the midpoint where the sequential fold would halve the
/// range and the halves are worth running apart, `None` where the range is
/// one task; `task(lo, hi)` folds one task's range sequentially. The tasks'
/// results are merged bottom-up in the same pairs as the sequential fold,
/// so the result is bitwise the same whichever threads ran them.
///
/// ```
/// use ferrox::backend::cpu::team::pairwise;
/// let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.1).collect();
/// let split = |lo: usize, hi: usize| (hi - lo > 100).then_some(lo + (hi - lo) / 2);
/// let sum = pairwise(0, xs.len(), &split, |lo, hi| xs[lo..hi].iter().sum::<f32>(), |a, b| a + b);
/// assert!((sum - 49950.0).abs() < 1e-2);
/// ```
pub fn pairwise<A: Send>(
    lo: usize,
    hi: usize,
    split: &dyn Fn(usize, usize) -> Option<usize>,
    task: impl Fn(usize, usize) -> A + Sync,
    merge: impl Fn(A, A) -> A,
) -> A {
    fn ranges(
        lo: usize,
        hi: usize,
        split: &dyn Fn(usize, usize) -> Option<usize>,
        out: &mut Vec<(usize, usize)>,
    ) {
        match split(lo, hi) {
            Some(mid) => {
                ranges(lo, mid, split, out);
                ranges(mid, hi, split, out);
            }
            None => out.push((lo, hi)),
        }
    }
    let mut tasks = Vec::new();
    ranges(lo, hi, split, &mut tasks);
    let slots: Vec<Mutex<Option<A>>> = tasks.iter().map(|_| Mutex::new(None)).collect();
    for_each_task(tasks.len(), |i| {
        let (lo, hi) = tasks[i];
        *lock(&slots[i]) = Some(task(lo, hi));
    });
    // Merged in the order `ranges` listed them; a slot is never empty after
    // the section, but if one were, its range is folded here instead.
    let mut next = tasks.iter().zip(&slots).map(|(&(lo, hi), slot)| {
        let done = lock(slot).take();
        done.unwrap_or_else(|| task(lo, hi))
    });
    fn merged<A>(
        lo: usize,
        hi: usize,
        split: &dyn Fn(usize, usize) -> Option<usize>,
        next: &mut dyn Iterator<Item = A>,
        merge: &dyn Fn(A, A) -> A,
        task: &dyn Fn(usize, usize) -> A,
    ) -> A {
        match split(lo, hi) {
            Some(mid) => {
                let a = merged(lo, mid, split, next, merge, task);
                let b = merged(mid, hi, split, next, merge, task);
                merge(a, b)
            }
            None => next.next().unwrap_or_else(|| task(lo, hi)),
        }
    }
    merged(lo, hi, split, &mut next, &merge, &task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_task_runs_once_whoever_claims_it() {
        for tasks in [0, 1, 2, 3, 17, 1000] {
            let runs: Vec<AtomicU32> = (0..tasks).map(|_| AtomicU32::new(0)).collect();
            for_each_task(tasks, |i| {
                runs[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            });
            assert!(
                runs.iter()
                    .all(|r| r.load(std::sync::atomic::Ordering::Relaxed) == 1)
            );
        }
    }

    #[test]
    fn sections_from_many_threads_and_nested_sections_finish() {
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for round in 0..50 {
                        let mut out = vec![0usize; 64];
                        for_each_part(out.chunks_mut(8).enumerate().collect(), |(i, c)| {
                            // A section inside a task: its caller is a helper
                            // or the outer caller, and it must not wait on
                            // the busy pool.
                            let inner = AtomicUsize::new(0);
                            for_each_task(3, |j| {
                                inner.fetch_add(j, Ordering::Relaxed);
                            });
                            c.fill(i + t + round + inner.load(Ordering::Relaxed));
                        });
                        for (k, v) in out.iter().enumerate() {
                            assert_eq!(*v, k / 8 + t + round + 3);
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn a_watching_helper_helps_what_is_posted_after_it_started() {
        use std::sync::atomic::AtomicBool;
        use std::time::{Duration, Instant};
        let board: Board<usize> = Board::new();
        let stop = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| board.watch(|| !stop.load(Ordering::Relaxed), |v| tx.send(*v).unwrap()));
            // Posts of 0 until one counts the watcher (watchdog: 10 s).
            let deadline = Instant::now() + Duration::from_secs(10);
            while board.post(0) == 0 {
                assert!(Instant::now() < deadline, "the watcher never started");
                std::thread::yield_now();
            }
            assert_eq!(board.post(42), 1);
            // The watcher may still report the zeros posted after it began.
            let got = (0..1000)
                .map(|_| rx.recv_timeout(Duration::from_secs(10)))
                .find(|v| *v != Ok(0));
            assert_eq!(got, Some(Ok(42)));
            stop.store(true, Ordering::Relaxed);
        });
    }

    #[test]
    fn a_helper_that_stops_watching_takes_a_last_look() {
        let board: Board<usize> = Board::new();
        let mut seen = Vec::new();
        // Out of patience at the first ask, after a post made meanwhile.
        board.watch(
            || {
                assert_eq!(board.post(7), 1, "the watcher counts while it watches");
                false
            },
            |v| seen.push(*v),
        );
        assert_eq!(seen, [7]);
        assert_eq!(board.post(8), 0, "and no more once it has stopped");
    }

    #[test]
    fn a_panicking_task_is_rethrown_after_the_others_finish() {
        let done = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_task(8, |i| {
                if i == 3 {
                    panic!("task three");
                }
                done.fetch_add(1, Ordering::Relaxed);
            })
        }));
        let payload = r.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task three"));
        // Whoever claimed 3 stopped claiming; the others ran the rest.
        assert!(done.load(Ordering::Relaxed) <= 7);
    }

    #[test]
    fn pairwise_folds_match_the_sequential_fold_bitwise() {
        let xs: Vec<f32> = (0..100_000)
            .map(|i| ((i * 7919) % 1013) as f32 * 1e-3)
            .collect();
        let split = |lo: usize, hi: usize| (hi - lo > 4096).then_some(lo + (hi - lo) / 2);
        fn sequential(xs: &[f32], lo: usize, hi: usize) -> f32 {
            if hi - lo > 4096 {
                let mid = lo + (hi - lo) / 2;
                sequential(xs, lo, mid) + sequential(xs, mid, hi)
            } else {
                xs[lo..hi].iter().sum()
            }
        }
        for (lo, hi) in [(0, 100_000), (17, 99_999), (5, 5000), (3, 3)] {
            let leaf = |lo: usize, hi: usize| xs[lo..hi].iter().sum::<f32>();
            let par = pairwise(lo, hi, &split, leaf, |a, b| a + b);
            assert_eq!(par.to_bits(), sequential(&xs, lo, hi).to_bits());
        }
    }

    #[test]
    fn errors_come_back_in_part_order() {
        let r = try_for_each_part(
            (0..20).collect(),
            |p: i32| {
                if p % 7 == 5 { Err(p) } else { Ok(()) }
            },
        );
        assert_eq!(r, Err(5));
        assert_eq!(try_for_each_part(vec![1, 2], |_| Ok::<(), ()>(())), Ok(()));
    }
}
