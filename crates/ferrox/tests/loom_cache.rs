//! Exhaustive models of the compile cache (`compile::cache`) under loom:
//! single flight, failed and panicking traces, erase and release during a
//! replay, clear during a trace, eviction racing a hit. Loom fails a model on
//! any deadlock or lost wake-up (every thread blocked) and on any assertion
//! in any interleaving.
//!
//! Run with (add `-- --nocapture` to see how many executions each explores):
//! cargo test --workspace --features ferrox/loom --release --test loom_cache
#![cfg(feature = "loom")]

use ferrox::compile::cache::{CompileCache, FnIdentity};
use ferrox::{Error, ErrorKind};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

/// Explores the model's executions: all of them (`None`) for the
/// two-thread models, or those with at most `preemptions` forced switches
/// for the three-thread one (bound 5: 21k executions, about a second;
/// unbounded: 635k, about a minute).
/// `LOOM_MAX_PREEMPTIONS=n` overrides the bound. Prints how many executions
/// were explored (visible with `--nocapture`).
fn model(preemptions: Option<usize>, f: impl Fn() + Send + Sync + 'static) {
    // A plain std counter: it counts executions from outside the model.
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = preemptions;
    }
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    let explored = executions.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("explored {explored} executions");
}

fn failure() -> Error {
    Error::new(ErrorKind::Runtime, "f", "trace failed")
}

#[test]
fn three_threads_trace_once_and_share_one_arc() {
    model(Some(5), || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let call = |f: &FnIdentity<u8, u32>| f.get_or_trace(1, || Ok(42));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let f = f.clone();
                thread::spawn(move || call(&f).unwrap())
            })
            .collect();
        let mine = call(&f).unwrap();
        for h in handles {
            let theirs = h.join().unwrap();
            assert!(Arc::ptr_eq(&mine, &theirs));
        }
        assert_eq!(*mine, 42);
        assert_eq!(f.traces(), 1);
        assert_eq!(cache.len(), 1);
    });
}

#[test]
fn a_failed_trace_leaves_no_entry_and_its_waiter_gets_the_error() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let other = {
            let f = f.clone();
            thread::spawn(move || f.get_or_trace(1, || Err(failure())))
        };
        let mine = f.get_or_trace(1, || Err(failure()));
        let theirs = other.join().unwrap();
        assert_eq!(mine.unwrap_err(), failure());
        assert_eq!(theirs.unwrap_err(), failure());
        // One trace means one thread waited on the other's and got its error.
        assert!(matches!(f.traces(), 1 | 2));
        assert!(!cache.contains(f.id(), &1));
        assert!(cache.is_empty());
        // The next call traces again.
        let traced = f.traces();
        assert_eq!(*f.get_or_trace(1, || Ok(5)).unwrap(), 5);
        assert_eq!(f.traces(), traced + 1);
        assert!(cache.contains(f.id(), &1));
    });
}

#[test]
fn a_panicking_trace_releases_its_waiter_with_an_error() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let panicker = {
            let f = f.clone();
            thread::spawn(move || {
                // `resume_unwind` skips the panic hook: no output per
                // explored interleaving.
                let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    f.get_or_trace(1, || std::panic::resume_unwind(Box::new("trace panicked")))
                }));
                // Either it traced and the panic reached it, or it waited on
                // the other thread's (successful) trace.
                match unwound {
                    Err(_) => None,
                    Ok(result) => Some(*result.unwrap()),
                }
            })
        };
        let mine = f.get_or_trace(1, || Ok(3));
        let theirs = panicker.join().unwrap();
        match (&mine, theirs) {
            // The other thread panicked first and this one waited on it.
            (Err(e), None) => assert_eq!(e.kind(), ErrorKind::Runtime),
            // The other thread panicked, this one traced afterwards (or
            // before: then the other would have hit).
            (Ok(v), None) => assert_eq!(**v, 3),
            (Ok(v), Some(t)) => assert_eq!((**v, t), (3, 3)),
            (Err(e), Some(_)) => panic!("a successful trace cannot fail a waiter: {e}"),
        }
        // No in-flight slot is left behind: a new call never blocks.
        assert_eq!(*f.get_or_trace(1, || Ok(3)).unwrap(), 3);
    });
}

/// A value that records when it is freed.
struct Tape {
    freed: Arc<AtomicBool>,
    data: u32,
}

impl Drop for Tape {
    fn drop(&mut self) {
        self.freed.store(true, Ordering::SeqCst);
    }
}

#[test]
fn erase_during_a_replay_keeps_the_replayed_value_alive() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, Tape>::new());
        let f = FnIdentity::new_in(&cache);
        let freed = Arc::new(AtomicBool::new(false));
        let replayer = {
            let (f, freed) = (f.clone(), freed.clone());
            thread::spawn(move || {
                let tape = f
                    .get_or_trace(1, || {
                        Ok(Tape {
                            freed: freed.clone(),
                            data: 9,
                        })
                    })
                    .unwrap();
                // "Replay": read the tape while the other thread erases.
                thread::yield_now();
                assert!(!freed.load(Ordering::SeqCst));
                tape.data
            })
        };
        cache.erase(f.id());
        assert_eq!(replayer.join().unwrap(), 9);
        // Erased before or after the insert: at most the one entry remains,
        // and only if the insert came after the erase.
        assert!(cache.len() <= 1);
        cache.erase(f.id());
        assert!(cache.is_empty());
        assert!(
            freed.load(Ordering::SeqCst),
            "the cache holds no reference after erase"
        );
    });
}

#[test]
fn dropping_the_last_handle_during_a_replay_erases_and_nothing_resurrects() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, Tape>::new());
        let f = FnIdentity::new_in(&cache);
        let freed = Arc::new(AtomicBool::new(false));
        let replayer = {
            let (f, freed) = (f.clone(), freed.clone());
            thread::spawn(move || {
                let tape = f
                    .get_or_trace(1, || {
                        Ok(Tape {
                            freed: freed.clone(),
                            data: 4,
                        })
                    })
                    .unwrap();
                drop(f); // maybe the last handle, released while holding the tape
                assert!(!freed.load(Ordering::SeqCst));
                tape.data
            })
        };
        drop(f); // maybe the last handle, released while the other thread traces
        assert_eq!(replayer.join().unwrap(), 4);
        assert_eq!(cache.function_count(), 0);
        assert!(cache.is_empty());
        assert!(freed.load(Ordering::SeqCst));
    });
}

#[test]
fn a_trace_landing_after_the_release_inserts_nothing() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let id = f.id();
        // A caller that holds only the id, not a handle.
        let caller = {
            let cache = cache.clone();
            thread::spawn(move || cache.get_or_trace(id, 1, || Ok(6)).map(|v| *v))
        };
        drop(f); // the last handle
        match caller.join().unwrap() {
            Ok(v) => assert_eq!(v, 6),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Value),
        }
        assert_eq!(cache.function_count(), 0);
        assert!(cache.is_empty(), "a released function's entry came back");
        assert!(!cache.contains(id, &1));
    });
}

#[test]
fn clear_during_a_trace_leaves_no_entry_of_that_trace() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let started = Arc::new(AtomicBool::new(false));
        let tracer = {
            let (f, started) = (f.clone(), started.clone());
            thread::spawn(move || {
                f.get_or_trace(1, || {
                    started.store(true, Ordering::SeqCst);
                    Ok(8)
                })
                .unwrap()
            })
        };
        let started_before_clear = started.load(Ordering::SeqCst);
        cache.clear();
        let cleared_with_trace_started = started_before_clear;
        assert_eq!(*tracer.join().unwrap(), 8);
        if cleared_with_trace_started {
            assert!(
                !cache.contains(f.id(), &1),
                "a trace that started before clear inserted its entry"
            );
        }
        assert_eq!(cache.len(), usize::from(cache.contains(f.id(), &1)));
    });
}

#[test]
fn eviction_racing_a_hit_keeps_the_bound_and_the_hit_valid() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::with_max_entries(1));
        let f = FnIdentity::new_in(&cache);
        f.get_or_trace(1, || Ok(1)).unwrap();
        let hitter = {
            let f = f.clone();
            thread::spawn(move || *f.get_or_trace(1, || Ok(1)).unwrap())
        };
        // Inserting key 2 evicts the least recently used entry.
        assert_eq!(*f.get_or_trace(2, || Ok(2)).unwrap(), 2);
        assert_eq!(hitter.join().unwrap(), 1);
        assert_eq!(cache.len(), 1);
    });
}

#[test]
fn traces_of_two_keys_run_side_by_side() {
    model(None, || {
        let cache = Arc::new(CompileCache::<u8, u32>::new());
        let f = FnIdentity::new_in(&cache);
        let g = FnIdentity::new_in(&cache);
        let traces = Arc::new(AtomicUsize::new(0));
        let other = {
            let (g, traces) = (g.clone(), traces.clone());
            thread::spawn(move || {
                *g.get_or_trace(1, || {
                    traces.fetch_add(1, Ordering::SeqCst);
                    Ok(10)
                })
                .unwrap()
            })
        };
        let mine = *f
            .get_or_trace(2, || {
                traces.fetch_add(1, Ordering::SeqCst);
                Ok(20)
            })
            .unwrap();
        assert_eq!((mine, other.join().unwrap()), (20, 10));
        assert_eq!(traces.load(Ordering::SeqCst), 2);
        assert_eq!(cache.len(), 2);
    });
}
