//! The per-node evaluation state: pending → running → done (a value or an
//! error).
//!
//! Exactly one thread wins [`EvalCell::claim`] and computes; every other
//! thread that needs the value blocks in [`EvalCell::wait`] until the winner
//! publishes a value or an error. The result goes into a write-once
//! [`OnceLock`], set under the state mutex: a reader that finds it set
//! (an acquire load, no lock, no write to shared memory) sees every byte the
//! winner wrote, and a waiter woken through the mutex finds it set. Reading
//! a finished node is therefore contention-free, which matters because
//! many threads read the same weights and constants on every call. A winner
//! that unwinds without publishing (its [`Claim`] guard drops) publishes an
//! error instead, so no waiter is ever left behind: there is no lost
//! wake-up and no spinning.
//!
//! The loom model in `tests/loom_cell.rs` explores these interleavings.

use crate::error::{Error, Result};
use crate::sync::{Condvar, Mutex, OnceLock, lock};

enum State {
    Pending,
    /// Claimed; `true` once some thread waits (the publisher then wakes
    /// the condvar — a system call, skipped when nobody waits).
    Running(bool),
    /// The result is in `EvalCell::result`.
    Done,
}

/// A value computed at most once, by whichever thread claims it first.
pub struct EvalCell<T> {
    /// Set once, by the claim holder, under `state`'s mutex.
    result: OnceLock<Result<T>>,
    state: Mutex<State>,
    published: Condvar,
}

/// What [`EvalCell::claim`] found.
pub enum Claimed<'a, T: Clone> {
    /// The caller must compute and then call [`Claim::publish`].
    Mine(Claim<'a, T>),
    /// Another thread is computing; call [`EvalCell::wait`] when needed.
    Running,
    /// The value (or the error) is already there.
    Done(Result<T>),
}

/// The right (and duty) to publish a cell's value.
pub struct Claim<'a, T: Clone> {
    cell: &'a EvalCell<T>,
    published: bool,
}

impl<T: Clone> EvalCell<T> {
    /// A cell with no value yet.
    pub fn pending() -> Self {
        EvalCell {
            result: OnceLock::new(),
            state: Mutex::new(State::Pending),
            published: Condvar::new(),
        }
    }
    /// A cell that already holds `value`.
    pub fn ready(value: T) -> Self {
        EvalCell {
            result: OnceLock::from(Ok(value)),
            state: Mutex::new(State::Done),
            published: Condvar::new(),
        }
    }

    /// Takes the right to compute if nobody has; otherwise reports the state.
    pub fn claim(&self) -> Claimed<'_, T> {
        if let Some(r) = self.result.get() {
            return Claimed::Done(r.clone());
        }
        let mut s = lock(&self.state);
        match &*s {
            State::Pending => {
                *s = State::Running(false);
                Claimed::Mine(Claim {
                    cell: self,
                    published: false,
                })
            }
            State::Running(_) => Claimed::Running,
            State::Done => Claimed::Done(self.finished()),
        }
    }

    /// The value if it is there, without blocking.
    pub fn get(&self) -> Option<Result<T>> {
        self.result.get().cloned()
    }

    /// The value if it is there, borrowed: no lock, no clone.
    pub fn get_ref(&self) -> Option<Result<&T>> {
        self.result.get().map(borrowed)
    }

    /// The published value, mutably: with `&mut self` no other thread can
    /// hold the cell, so this needs no lock. `None` before publication
    /// and for an error.
    pub fn value_mut(&mut self) -> Option<&mut T> {
        self.result.get_mut()?.as_mut().ok()
    }

    /// True once a value or an error is published.
    pub fn is_done(&self) -> bool {
        self.result.get().is_some()
    }

    /// True while some thread computes the value (claimed, not published).
    pub fn is_running(&self) -> bool {
        !self.is_done() && matches!(*lock(&self.state), State::Running(_))
    }

    /// Blocks until the value is published. A pending (unclaimed) cell is
    /// reported as an error rather than waited on: only a claimed cell has a
    /// thread that will publish.
    pub fn wait(&self) -> Result<T> {
        self.wait_ref().cloned()
    }

    /// [`wait`](Self::wait), borrowing the value.
    pub fn wait_ref(&self) -> Result<&T> {
        if let Some(r) = self.result.get() {
            return borrowed(r);
        }
        let mut s = lock(&self.state);
        loop {
            match &*s {
                State::Done => return self.result.get().map_or_else(unset, borrowed),
                State::Pending => {
                    return Err(Error::runtime(
                        "eval",
                        "waited on a node that nobody is computing",
                    ));
                }
                State::Running(waiters) => {
                    let marked = *waiters;
                    if !marked {
                        *s = State::Running(true);
                    }
                    s = match self.published.wait(s) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    }
                }
            }
        }
    }

    /// The result of a cell whose state is `Done`.
    fn finished(&self) -> Result<T> {
        self.result.get().map_or_else(unset, |r| r.clone())
    }
}

fn borrowed<T>(r: &Result<T>) -> Result<&T> {
    r.as_ref().map_err(Clone::clone)
}

/// `Done` is stored only after the result is set, under the same mutex; a
/// cell in that state without a result would be a bug in this file.
fn unset<R>() -> Result<R> {
    Err(Error::runtime(
        "eval",
        "internal error: a finished node has no result",
    ))
}

impl<T: Clone> Claim<'_, T> {
    /// Publishes the result and wakes every waiter.
    pub fn publish(mut self, result: Result<T>) {
        self.set(result);
    }

    fn set(&mut self, result: Result<T>) {
        self.published = true;
        let mut s = lock(&self.cell.state);
        let waiters = matches!(*s, State::Running(true));
        // Only the claim holder sets the result, once (`published` guards
        // the drop path), so this cannot find it set.
        let _ = self.cell.result.set(result);
        *s = State::Done;
        drop(s);
        // A waiter marks the state under the mutex before it sleeps, so
        // either it is marked here or it will see the published value.
        if waiters {
            self.cell.published.notify_all();
        }
    }
}

impl<T: Clone> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        if !self.published {
            self.set(Err(Error::runtime(
                "eval",
                "the computation of this node panicked",
            )));
        }
    }
}
