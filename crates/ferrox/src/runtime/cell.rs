//! The per-node evaluation state: pending → running → ready | failed.
//!
//! Exactly one thread wins [`EvalCell::claim`] and computes; every other
//! thread that needs the value blocks in [`EvalCell::wait`] until the winner
//! publishes a value or an error. Publication happens under the mutex, so a
//! waiter that sees `Ready` also sees every byte the winner wrote (the mutex
//! is the happens-before edge). A winner that unwinds without publishing
//! (its [`Claim`] guard drops) publishes an error instead, so no waiter is
//! ever left behind: there is no lost wake-up and no spinning.
//!
//! The loom model in `tests/loom_cell.rs` explores these interleavings.

use crate::sync::{Condvar, Mutex, lock};
use crate::{Error, Result};

enum State<T> {
    Pending,
    /// Claimed; `true` once some thread waits (the publisher then wakes
    /// the condvar — a system call, skipped when nobody waits).
    Running(bool),
    Ready(T),
    Failed(Error),
}

/// A value computed at most once, by whichever thread claims it first.
pub struct EvalCell<T> {
    state: Mutex<State<T>>,
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
            state: Mutex::new(State::Pending),
            published: Condvar::new(),
        }
    }
    /// A cell that already holds `value`.
    pub fn ready(value: T) -> Self {
        EvalCell {
            state: Mutex::new(State::Ready(value)),
            published: Condvar::new(),
        }
    }

    /// Takes the right to compute if nobody has; otherwise reports the state.
    pub fn claim(&self) -> Claimed<'_, T> {
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
            State::Ready(v) => Claimed::Done(Ok(v.clone())),
            State::Failed(e) => Claimed::Done(Err(e.clone())),
        }
    }

    /// The value if it is there, without blocking.
    pub fn get(&self) -> Option<Result<T>> {
        match &*lock(&self.state) {
            State::Ready(v) => Some(Ok(v.clone())),
            State::Failed(e) => Some(Err(e.clone())),
            _ => None,
        }
    }

    /// True once a value or an error is published.
    pub fn is_done(&self) -> bool {
        matches!(&*lock(&self.state), State::Ready(_) | State::Failed(_))
    }

    /// Blocks until the value is published. A pending (unclaimed) cell is
    /// reported as an error rather than waited on: only a claimed cell has a
    /// thread that will publish.
    pub fn wait(&self) -> Result<T> {
        let mut s = lock(&self.state);
        loop {
            match &*s {
                State::Ready(v) => return Ok(v.clone()),
                State::Failed(e) => return Err(e.clone()),
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
        *s = match result {
            Ok(v) => State::Ready(v),
            Err(e) => State::Failed(e),
        };
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
