//! Exhaustive model of the parallel-section protocol
//! (`backend::cpu::team::Section`) under loom: every task runs exactly
//! once, and no helper runs a task after the caller's `close_and_drain`
//! returned, which is what makes lending a borrowed closure to the helpers
//! sound. And the board where callers post sections for helpers that
//! linger (`team::Board`): a caller that counted a helper as watching, and
//! so spawned no job for it, is seen by that helper.
//!
//! Run with: cargo test --workspace --features ferrox/loom --release --test loom_team
#![cfg(feature = "loom")]

use ferrox::backend::cpu::team::{Board, Section};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

/// The section plus what the model observes: runs per task, and whether the
/// caller has returned (the point after which its closure would be gone).
struct Model {
    section: Section,
    runs: Vec<AtomicUsize>,
    returned: AtomicBool,
}

impl Model {
    fn run_claims(&self) {
        while let Some(i) = self.section.claim() {
            assert!(
                !self.returned.load(Ordering::SeqCst),
                "task {i} ran after the caller returned"
            );
            self.runs[i].fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A helper job as the pool runs it: enter or go away.
    fn help(&self) {
        if self.section.enter() {
            self.run_claims();
            self.section.leave();
        }
    }
}

/// Explores the executions of a caller and `helpers` helpers on `tasks`
/// tasks: all of them with one helper; with two, those with at most five
/// forced switches (the caller's spin makes the unbounded space too large
/// for CI). `LOOM_MAX_PREEMPTIONS=n` overrides the bound.
fn check(tasks: usize, helpers: usize) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() && helpers > 1 {
        builder.preemption_bound = Some(5);
    }
    builder.check(move || {
        let model = Arc::new(Model {
            section: Section::new(tasks),
            runs: (0..tasks).map(|_| AtomicUsize::new(0)).collect(),
            returned: AtomicBool::new(false),
        });
        let handles: Vec<_> = (0..helpers)
            .map(|_| {
                let model = model.clone();
                thread::spawn(move || model.help())
            })
            .collect();
        model.run_claims();
        model.section.close_and_drain();
        for (i, r) in model.runs.iter().enumerate() {
            assert_eq!(r.load(Ordering::SeqCst), 1, "task {i} ran once");
        }
        model.returned.store(true, Ordering::SeqCst);
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[test]
fn one_helper_two_tasks() {
    check(2, 1);
}

#[test]
fn one_helper_three_tasks() {
    check(3, 1);
}

#[test]
fn two_helpers_two_tasks() {
    check(2, 2);
}

/// A caller posts one section while a helper watches with room for
/// `patience` looks: whenever the post counted the helper, the helper
/// helped that section.
fn check_board(patience: usize) {
    loom::model(move || {
        let board = Arc::new(Board::<usize>::new());
        let helped = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (board, helped) = (board.clone(), helped.clone());
            thread::spawn(move || {
                let mut left = patience;
                board.watch(
                    || {
                        left = left.saturating_sub(1);
                        left > 0
                    },
                    |s| {
                        assert_eq!(*s, 7);
                        helped.store(true, Ordering::SeqCst);
                    },
                );
            })
        };
        let counted = board.post(7);
        watcher.join().unwrap();
        assert!(
            counted == 0 || helped.load(Ordering::SeqCst),
            "the post counted a watcher that never looked at it"
        );
    });
}

#[test]
fn board_watcher_of_one_look() {
    check_board(1);
}

#[test]
fn board_watcher_of_three_looks() {
    check_board(3);
}
