//! Exhaustive model of the per-node evaluation state machine
//! (`graph::cell::EvalCell`) under loom: compute once, every waiter sees
//! the published value or error, no lost wake-up, an abandoned claim
//! still releases its waiters.
//!
//! Run with: cargo test --workspace --features ferrox/loom --release --test loom_cell
#![cfg(feature = "loom")]

use ferrox::graph::cell::{Claimed, EvalCell};
use ferrox::{Error, ErrorKind};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;

/// What a thread evaluating the node does: compute if it wins the claim,
/// otherwise wait for whoever won.
fn evaluate(
    cell: &EvalCell<u32>,
    computed: &AtomicUsize,
    result: Result<u32, Error>,
) -> Result<u32, Error> {
    match cell.claim() {
        Claimed::Mine(claim) => {
            computed.fetch_add(1, Ordering::SeqCst);
            claim.publish(result.clone());
            result
        }
        Claimed::Running => cell.wait(),
        Claimed::Done(r) => r,
    }
}

#[test]
fn three_threads_compute_once_and_agree() {
    loom::model(|| {
        let cell = Arc::new(EvalCell::<u32>::pending());
        let computed = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (cell, computed) = (cell.clone(), computed.clone());
                thread::spawn(move || evaluate(&cell, &computed, Ok(7)))
            })
            .collect();
        assert_eq!(evaluate(&cell, &computed, Ok(7)), Ok(7));
        for h in handles {
            assert_eq!(h.join().unwrap(), Ok(7));
        }
        assert_eq!(computed.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn an_error_reaches_every_waiter() {
    loom::model(|| {
        let cell = Arc::new(EvalCell::<u32>::pending());
        let computed = Arc::new(AtomicUsize::new(0));
        let err = Error::new(ErrorKind::Runtime, "k", "failed");
        let h = {
            let (cell, computed, err) = (cell.clone(), computed.clone(), err.clone());
            thread::spawn(move || evaluate(&cell, &computed, Err(err)))
        };
        let mine = evaluate(&cell, &computed, Err(err.clone()));
        assert_eq!(mine, Err(err.clone()));
        assert_eq!(h.join().unwrap(), Err(err));
        assert_eq!(computed.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn an_abandoned_claim_releases_waiters_with_an_error() {
    loom::model(|| {
        let cell = Arc::new(EvalCell::<u32>::pending());
        let winner = {
            let cell = cell.clone();
            thread::spawn(move || {
                if let Claimed::Mine(claim) = cell.claim() {
                    drop(claim); // e.g. the kernel unwound
                }
            })
        };
        let seen = match cell.claim() {
            Claimed::Mine(claim) => {
                claim.publish(Ok(1));
                None
            }
            Claimed::Running => Some(cell.wait()),
            Claimed::Done(r) => Some(r),
        };
        winner.join().unwrap();
        if let Some(r) = seen {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Runtime);
        }
        assert!(cell.is_done());
    });
}
