//! Stress tests of the compile cache (DESIGN.md §2 items 2–5) with real
//! threads: barrier-started callers, traces counted by a side effect in the
//! traced function, and a watchdog on every test and join so that a deadlock
//! fails instead of hanging.

mod common;

use common::{join_within, watchdog};
use ferrox::compile::cache::{CompileCache, FnIdentity};
use ferrox::{Array, DType, Error, ErrorKind, compile, exp, zeros};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

type Cache = CompileCache<u32, u64>;
type Identity = FnIdentity<u32, u64>;

fn new_cache() -> Arc<Cache> {
    Arc::new(CompileCache::new())
}

/// Starts `n` threads together behind a barrier and joins them (watchdog
/// on each join).
fn together<T: Send + 'static>(n: usize, f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let (f, barrier) = (Arc::new(f), Arc::new(Barrier::new(n)));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (f, barrier) = (f.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    handles.into_iter().map(|h| join_within(60, h)).collect()
}

/// A trace that counts itself and returns `value` after `sleep_ms`.
fn counted(count: &AtomicUsize, sleep_ms: u64, value: u64) -> ferrox::Result<u64> {
    count.fetch_add(1, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(sleep_ms));
    Ok(value)
}

#[test]
fn sixteen_first_calls_of_one_key_trace_once() {
    watchdog(120, || {
        for round in 0..20 {
            let cache = new_cache();
            let f = FnIdentity::new_in(&cache);
            let count = Arc::new(AtomicUsize::new(0));
            let results = {
                let (f, count) = (f.clone(), count.clone());
                together(16, move |_| {
                    f.get_or_trace(7, || counted(&count, 20, 49)).unwrap()
                })
            };
            assert_eq!(count.load(Ordering::SeqCst), 1, "round {round}");
            assert_eq!(f.traces(), 1, "round {round}");
            assert!(
                results
                    .iter()
                    .all(|r| Arc::ptr_eq(r, &results[0]) && **r == 49)
            );
            assert_eq!(cache.len(), 1);
        }
    });
}

#[test]
fn sixteen_distinct_functions_at_once() {
    watchdog(60, || {
        let cache = new_cache();
        let fns: Arc<Vec<Identity>> =
            Arc::new((0..16).map(|_| FnIdentity::new_in(&cache)).collect());
        let counts: Arc<Vec<AtomicUsize>> =
            Arc::new((0..16).map(|_| AtomicUsize::new(0)).collect());
        let results = {
            let (fns, counts) = (fns.clone(), counts.clone());
            together(16, move |i| {
                // Every thread calls every function, starting with its own.
                (0..16)
                    .map(|j| {
                        let k = (i + j) % 16;
                        *fns[k]
                            .get_or_trace(3, || counted(&counts[k], 1, k as u64))
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        };
        for (i, r) in results.iter().enumerate() {
            assert!(
                r.iter()
                    .enumerate()
                    .all(|(j, &v)| v == ((i + j) % 16) as u64)
            );
        }
        for (k, f) in fns.iter().enumerate() {
            assert_eq!(counts[k].load(Ordering::SeqCst), 1, "function {k}");
            assert_eq!(f.traces(), 1);
        }
        assert_eq!(cache.len(), 16);
        drop(fns);
        assert!(cache.is_empty());
        assert_eq!(cache.function_count(), 0);
    });
}

#[test]
fn handles_dropped_on_other_threads_while_calls_run() {
    watchdog(120, || {
        for _round in 0..10 {
            let cache = new_cache();
            let f = FnIdentity::new_in(&cache);
            let id = f.id();
            // Callers 0..8 call through their own clone; callers 8..12 hold
            // only the id; droppers 12..16 each drop one clone.
            let handles: Arc<Vec<std::sync::Mutex<Option<Identity>>>> = Arc::new(
                (0..16)
                    .map(|_| std::sync::Mutex::new(Some(f.clone())))
                    .collect(),
            );
            drop(f);
            let outcomes = {
                let (cache, handles) = (cache.clone(), handles.clone());
                together(16, move |i| {
                    let mine = handles[i].lock().unwrap().take();
                    let mut ok = 0usize;
                    match i {
                        0..8 => {
                            let f = mine.unwrap();
                            for k in 0..200u32 {
                                let v =
                                    f.get_or_trace(k % 5, || Ok(u64::from(k % 5) * 10)).unwrap();
                                assert_eq!(*v, u64::from(k % 5) * 10);
                                ok += 1;
                            }
                            // Drops its clone here, maybe the last one.
                        }
                        8..12 => {
                            drop(mine);
                            for k in 0..200u32 {
                                match cache.get_or_trace(id, k % 5, || Ok(u64::from(k % 5) * 10)) {
                                    Ok(v) => {
                                        assert_eq!(*v, u64::from(k % 5) * 10);
                                        ok += 1;
                                    }
                                    Err(e) => assert_eq!(e.kind(), ErrorKind::Value, "{e}"),
                                }
                            }
                        }
                        _ => drop(mine),
                    }
                    ok
                })
            };
            assert_eq!(outcomes[..8].iter().sum::<usize>(), 8 * 200);
            assert_eq!(cache.function_count(), 0);
            assert!(
                cache.is_empty(),
                "{} entries of a released function",
                cache.len()
            );
            assert_eq!(cache.traces(id), 0);
        }
    });
}

#[test]
fn a_slow_trace_does_not_block_hits_on_other_keys_or_functions() {
    watchdog(60, || {
        let cache = new_cache();
        let (f, g) = (FnIdentity::new_in(&cache), FnIdentity::new_in(&cache));
        f.get_or_trace(1, || Ok(1)).unwrap();
        g.get_or_trace(1, || Ok(2)).unwrap();
        const HITTERS: usize = 8;
        const WAITERS: usize = 4;
        // Everyone starts once the slow trace is running.
        let started = Arc::new(Barrier::new(1 + HITTERS + WAITERS));
        let slow_done = Arc::new(AtomicBool::new(false));
        let slow = {
            let (f, started, slow_done) = (f.clone(), started.clone(), slow_done.clone());
            thread::spawn(move || {
                let v = f.get_or_trace(2, || {
                    started.wait();
                    thread::sleep(Duration::from_millis(300));
                    slow_done.store(true, Ordering::SeqCst);
                    Ok(3)
                });
                v.unwrap()
            })
        };
        let hitters: Vec<_> = (0..HITTERS)
            .map(|_| {
                let (f, g, started, slow_done) =
                    (f.clone(), g.clone(), started.clone(), slow_done.clone());
                thread::spawn(move || {
                    started.wait();
                    for _ in 0..200 {
                        assert_eq!(*f.get_or_trace(1, || unreachable!("hit")).unwrap(), 1);
                        assert_eq!(*g.get_or_trace(1, || unreachable!("hit")).unwrap(), 2);
                    }
                    // Finished while the slow trace of the same function runs.
                    !slow_done.load(Ordering::SeqCst)
                })
            })
            .collect();
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| {
                let (f, started) = (f.clone(), started.clone());
                thread::spawn(move || {
                    started.wait();
                    f.get_or_trace(2, || Ok(99)).unwrap()
                })
            })
            .collect();
        for h in hitters {
            assert!(
                join_within(30, h),
                "hits waited for a slow trace of another key"
            );
        }
        let slow_value = join_within(30, slow);
        for h in waiters {
            let v = join_within(30, h);
            assert!(
                Arc::ptr_eq(&v, &slow_value),
                "a waiter traced again instead of waiting"
            );
        }
        assert_eq!(f.traces(), 2);
        assert_eq!(g.traces(), 1);
    });
}

#[test]
fn ten_thousand_identities_created_used_and_dropped_leave_the_cache_empty() {
    watchdog(120, || {
        let cache = new_cache();
        let (tx, rx) = mpsc::channel::<Identity>();
        // Half of the identities are dropped on another thread.
        let dropper = thread::spawn(move || rx.into_iter().count());
        let sent = {
            let (cache, tx) = (cache.clone(), std::sync::Mutex::new(tx));
            together(8, move |t| {
                let mut sent = 0;
                for i in 0..1250u32 {
                    let f = FnIdentity::new_in(&cache);
                    let a = f.get_or_trace(i, || Ok(u64::from(i))).unwrap();
                    let b = f.get_or_trace(i + 1, || Ok(u64::from(i + 1))).unwrap();
                    assert_eq!((*a, *b), (u64::from(i), u64::from(i + 1)));
                    if (i as usize + t) % 2 == 0 {
                        tx.lock().unwrap().send(f).unwrap();
                        sent += 1;
                    }
                }
                sent
            })
        };
        assert_eq!(join_within(60, dropper), sent.iter().sum::<usize>());
        assert!(cache.is_empty(), "{} entries left", cache.len());
        assert_eq!(cache.function_count(), 0);
    });
}

#[test]
fn lru_eviction_keeps_a_small_bound_under_concurrency() {
    watchdog(120, || {
        const BOUND: usize = 8;
        const THREADS: usize = 8;
        let cache = Arc::new(Cache::with_max_entries(BOUND));
        let fns: Arc<Vec<Identity>> =
            Arc::new((0..4).map(|_| FnIdentity::new_in(&cache)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        // The bound may be exceeded only by inserts that have not evicted
        // yet: at most one per thread.
        let monitor = {
            let (cache, stop) = (cache.clone(), stop.clone());
            thread::spawn(move || {
                let mut max_seen = 0;
                while !stop.load(Ordering::SeqCst) {
                    max_seen = max_seen.max(cache.len());
                    thread::yield_now();
                }
                max_seen
            })
        };
        {
            let fns = fns.clone();
            together(THREADS, move |t| {
                for i in 0..300u32 {
                    let f = &fns[(t + i as usize) % fns.len()];
                    let key = (i * 7 + t as u32) % 40;
                    let v = f.get_or_trace(key, || Ok(u64::from(key) + 1000)).unwrap();
                    assert_eq!(*v, u64::from(key) + 1000);
                }
            });
        }
        stop.store(true, Ordering::SeqCst);
        let max_seen = join_within(30, monitor);
        assert!(max_seen <= BOUND + THREADS, "len reached {max_seen}");
        assert_eq!(cache.len(), BOUND);
        let held = fns
            .iter()
            .map(|f| (0..40).filter(|k| cache.contains(f.id(), k)).count())
            .sum::<usize>();
        assert_eq!(held, BOUND, "len agrees with the entries present");

        // Shrinking evicts the least recently used first.
        let f = &fns[0];
        cache.clear();
        for k in 0..BOUND as u32 {
            f.get_or_trace(k, || Ok(0)).unwrap();
        }
        f.get_or_trace(0, || Ok(0)).unwrap(); // 0 is now the most recent
        cache.set_max_entries(2);
        assert!(cache.contains(f.id(), &0) && cache.contains(f.id(), &(BOUND as u32 - 1)));
        assert_eq!(cache.len(), 2);
    });
}

#[test]
fn a_recursive_trace_of_its_own_key_returns_an_error() {
    watchdog(30, || {
        let cache = new_cache();
        let (f, g) = (FnIdentity::new_in(&cache), FnIdentity::new_in(&cache));
        let outer = f.get_or_trace(1, || {
            let own = f.get_or_trace(1, || Ok(0)).unwrap_err();
            assert_eq!(own.kind(), ErrorKind::Unsupported);
            assert!(own.to_string().starts_with("compile:"), "{own}");
            // Other keys and functions from inside a trace are fine.
            let other_key = f.get_or_trace(2, || Ok(20))?;
            let other_fn = g.get_or_trace(1, || Ok(30))?;
            Ok(*other_key + *other_fn)
        });
        assert_eq!(*outer.unwrap(), 50);
        assert!(
            cache.contains(f.id(), &1) && cache.contains(f.id(), &2) && cache.contains(g.id(), &1)
        );
        assert_eq!((f.traces(), g.traces()), (2, 1));
    });
}

#[test]
fn nested_traces_waiting_on_each_other_across_threads_do_not_deadlock() {
    watchdog(30, || {
        let cache = new_cache();
        let (f, g) = (FnIdentity::new_in(&cache), FnIdentity::new_in(&cache));
        let (both_tracing, both_nested) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        // Thread A traces f and calls g inside; thread B traces g and calls f
        // inside, each while the other's trace is in flight (neither trace
        // ends before both nested calls returned). Had either waited on the
        // other's trace, neither would end.
        let spawn = |outer: Identity, inner: Identity, value: u64| {
            let (both_tracing, both_nested) = (both_tracing.clone(), both_nested.clone());
            thread::spawn(move || {
                *outer
                    .get_or_trace(1, || {
                        both_tracing.wait();
                        let nested = *inner.get_or_trace(1, || Ok(100 - value))?;
                        both_nested.wait();
                        Ok(value + nested)
                    })
                    .unwrap()
            })
        };
        let a = spawn(f.clone(), g.clone(), 10);
        let b = spawn(g.clone(), f.clone(), 90);
        assert_eq!((join_within(20, a), join_within(20, b)), (100, 100));
        // Each inner call traced privately; the outer traces are cached.
        assert_eq!((f.traces(), g.traces()), (2, 2));
        assert_eq!(
            (
                *f.get_or_trace(1, || Ok(0)).unwrap(),
                *g.get_or_trace(1, || Ok(0)).unwrap()
            ),
            (100, 100)
        );
    });
}

#[test]
fn a_failed_trace_reaches_every_waiter_and_the_next_call_traces_again() {
    watchdog(60, || {
        let cache = new_cache();
        let f = FnIdentity::new_in(&cache);
        let count = Arc::new(AtomicUsize::new(0));
        let errors = {
            let (f, count) = (f.clone(), count.clone());
            together(8, move |_| {
                f.get_or_trace(1, || {
                    count.fetch_add(1, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(200));
                    Err(Error::new(ErrorKind::Shape, "f", "bad input shape"))
                })
                .unwrap_err()
            })
        };
        assert!(errors.iter().all(|e| e.to_string() == "f: bad input shape"));
        let traced = count.load(Ordering::SeqCst);
        assert!(traced < 8, "nobody waited: {traced} traces");
        assert!(cache.is_empty());
        assert_eq!(*f.get_or_trace(1, || Ok(5)).unwrap(), 5);
        assert_eq!(f.traces(), traced + 1);
    });
}

#[test]
fn a_panicking_trace_releases_its_waiters_and_keeps_unwinding() {
    watchdog(60, || {
        let cache = new_cache();
        let f = FnIdentity::new_in(&cache);
        let started = Arc::new(Barrier::new(5));
        let tracer = {
            let (f, started) = (f.clone(), started.clone());
            thread::spawn(move || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    f.get_or_trace(1, || {
                        started.wait();
                        thread::sleep(Duration::from_millis(300));
                        // No panic-hook output in the test log.
                        std::panic::resume_unwind(Box::new("trace panicked"))
                    })
                }))
                .is_err()
            })
        };
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let (f, started) = (f.clone(), started.clone());
                thread::spawn(move || {
                    started.wait();
                    f.get_or_trace(1, || Ok(1))
                })
            })
            .collect();
        assert!(
            join_within(30, tracer),
            "the panic reached the tracer's caller"
        );
        for h in waiters {
            let e = join_within(30, h).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Runtime);
            assert_eq!(
                e.to_string(),
                format!("compile: the trace of {} panicked", f.id())
            );
        }
        assert!(cache.is_empty());
        assert_eq!(*f.get_or_trace(1, || Ok(2)).unwrap(), 2);
        assert_eq!(f.traces(), 2);
    });
}

#[test]
fn clear_from_another_thread_while_traces_run() {
    watchdog(60, || {
        let cache = new_cache();
        let f = FnIdentity::new_in(&cache);
        let started = Arc::new(Barrier::new(2));
        let tracer = {
            let (f, started) = (f.clone(), started.clone());
            thread::spawn(move || {
                f.get_or_trace(1, || {
                    started.wait();
                    thread::sleep(Duration::from_millis(100));
                    Ok(11)
                })
                .unwrap()
            })
        };
        started.wait();
        let clearer = {
            let cache = cache.clone();
            thread::spawn(move || cache.clear())
        };
        join_within(30, clearer);
        assert_eq!(
            *join_within(30, tracer),
            11,
            "the caller still gets its result"
        );
        assert!(
            !cache.contains(f.id(), &1),
            "a trace that started before clear inserted its entry"
        );
        assert!(cache.is_empty());

        // Many callers and a clearing thread at once: no deadlock, and the
        // count agrees with the entries at the end.
        let stop = Arc::new(AtomicBool::new(false));
        let clearer = {
            let (cache, stop) = (cache.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    cache.clear();
                    thread::yield_now();
                }
            })
        };
        {
            let f = f.clone();
            together(8, move |t| {
                for i in 0..500u32 {
                    let k = (i + t as u32) % 16;
                    assert_eq!(
                        *f.get_or_trace(k, || Ok(u64::from(k))).unwrap(),
                        u64::from(k)
                    );
                }
            });
        }
        stop.store(true, Ordering::SeqCst);
        join_within(30, clearer);
        let present = (0..16).filter(|k| cache.contains(f.id(), k)).count();
        assert_eq!(cache.len(), present);
    });
}

#[test]
fn the_process_wide_cache_is_shared_by_every_thread() {
    watchdog(60, || {
        let f = compile(|xs: &[Array]| Ok(vec![exp(&xs[0])?]));
        let id = f.id();
        {
            let f = f.clone();
            together(8, move |_| {
                assert!(Arc::ptr_eq(&compile::tape_cache(), &compile::tape_cache()));
                let x = zeros(&[3], DType::Float32).unwrap();
                f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap()
            });
        }
        let cache = compile::tape_cache();
        assert_eq!((f.traces(), cache.traces(id)), (1, 1));
        thread::spawn(move || drop(f)).join().unwrap();
        assert_eq!(cache.traces(id), 0, "erased with its last handle");
    });
}
