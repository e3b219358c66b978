//! The compile layer under concurrency (contract items 2–6): one trace per
//! signature however many threads race, nested compiled functions,
//! handles dropped on other threads, shapeless calls, erase on drop.

mod common;

use common::{join_within, watchdog};
use ferrox::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// y = exp(x * 2 + 1), counting how often the body is traced.
fn counted_body(
    traced: Arc<AtomicUsize>,
    sleep_ms: u64,
) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync {
    move |xs: &[Array]| {
        traced.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(sleep_ms));
        Ok(vec![exp(&((&xs[0] * 2.0)? + 1.0)?)?])
    }
}

fn input(n: usize) -> Array {
    let v: Vec<f32> = (0..n).map(|i| (i as f32) * 0.01 - 1.0).collect();
    Array::from_slice(&v, &[n]).unwrap()
}

#[test]
fn sixteen_racing_first_calls_trace_once_and_agree_bitwise() {
    watchdog(120, || {
        let traced = Arc::new(AtomicUsize::new(0));
        let f = compile(counted_body(traced.clone(), 50));
        let x = input(1000);
        let want: Vec<u32> = {
            let y = exp(&((&x * 2.0).unwrap() + 1.0).unwrap()).unwrap();
            y.to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        let barrier = Arc::new(Barrier::new(16));
        let t0 = Instant::now();
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (f, x, barrier) = (f.clone(), x.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    f.call(&[x]).unwrap()[0].to_vec::<f32>().unwrap()
                })
            })
            .collect();
        for h in handles {
            let got: Vec<u32> = join_within(60, h).iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want);
        }
        assert_eq!(traced.load(Ordering::SeqCst), 1);
        assert_eq!(f.traces(), 1);
        // Wall time is about one trace (50 ms), not sixteen.
        assert!(t0.elapsed() < Duration::from_secs(5));
    });
}

#[test]
fn sixteen_distinct_functions_at_once() {
    watchdog(120, || {
        let barrier = Arc::new(Barrier::new(16));
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let traced = Arc::new(AtomicUsize::new(0));
                    let f = compile(counted_body(traced.clone(), 5));
                    barrier.wait();
                    for _ in 0..20 {
                        f.call(&[input(16 + i)]).unwrap()[0].eval().unwrap();
                    }
                    traced.load(Ordering::SeqCst)
                })
            })
            .collect();
        for h in handles {
            assert_eq!(join_within(60, h), 1);
        }
    });
}

#[test]
fn a_slow_trace_of_one_signature_does_not_block_hits_on_another() {
    watchdog(120, || {
        let traced = Arc::new(AtomicUsize::new(0));
        let slow_shape = 333;
        let t = traced.clone();
        let f = compile(move |xs: &[Array]| {
            t.fetch_add(1, Ordering::SeqCst);
            if xs[0].shape() == [slow_shape] {
                std::thread::sleep(Duration::from_millis(1500));
            }
            Ok(vec![(&xs[0] + 1.0)?])
        });
        f.call(&[input(8)]).unwrap(); // warm the fast signature
        let slow = {
            let f = f.clone();
            std::thread::spawn(move || {
                f.call(&[input(slow_shape)]).unwrap();
                Instant::now()
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        let hits_done = {
            let f = f.clone();
            std::thread::spawn(move || {
                for _ in 0..100 {
                    f.call(&[input(8)]).unwrap()[0].eval().unwrap();
                }
                Instant::now()
            })
        };
        let hits_done = join_within(60, hits_done);
        let slow_done = join_within(60, slow);
        assert!(
            hits_done < slow_done,
            "hits on another signature finished while the slow trace ran"
        );
        assert_eq!(traced.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn handles_dropped_on_other_threads_while_calls_run() {
    watchdog(120, || {
        for _ in 0..20 {
            let f = compile(counted_body(Arc::new(AtomicUsize::new(0)), 0));
            let id = f.id();
            let callers: Vec<_> = (0..4)
                .map(|_| {
                    let f = f.clone();
                    std::thread::spawn(move || {
                        for _ in 0..10 {
                            f.call(&[input(64)]).unwrap()[0].eval().unwrap();
                        }
                    })
                })
                .collect();
            let dropper = std::thread::spawn(move || drop(f));
            join_within(30, dropper);
            for c in callers {
                join_within(30, c);
            }
            let _ = id;
        }
    });
}

#[test]
fn nested_compiled_functions_from_many_threads_with_a_cold_cache() {
    watchdog(120, || {
        let inner = compile(|xs: &[Array]| Ok(vec![(&xs[0] * 3.0)?]));
        let inner2 = inner.clone();
        let outer = compile(move |xs: &[Array]| {
            let y = inner2.call(xs)?;
            Ok(vec![(&y[0] + 1.0)?])
        });
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (outer, inner, barrier) = (outer.clone(), inner.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let a = outer.call(&[input(4)]).unwrap()[0].to_vec::<f32>().unwrap();
                    let b = inner.call(&[input(4)]).unwrap()[0].to_vec::<f32>().unwrap();
                    (a, b)
                })
            })
            .collect();
        for h in handles {
            let (a, b) = join_within(60, h);
            let x = input(4).to_vec::<f32>().unwrap();
            assert_eq!(a, x.iter().map(|v| v * 3.0 + 1.0).collect::<Vec<_>>());
            assert_eq!(b, x.iter().map(|v| v * 3.0).collect::<Vec<_>>());
        }
        assert_eq!(outer.traces(), 1);
        // Inside the outer trace the inner function was inlined; its own
        // direct calls traced it once.
        assert_eq!(inner.traces(), 1);
    });
}

#[test]
fn shapeless_from_eight_threads_traces_once() {
    watchdog(120, || {
        let traced = Arc::new(AtomicUsize::new(0));
        let t = traced.clone();
        let f = compile_shapeless(move |xs: &[Array]| {
            t.fetch_add(1, Ordering::SeqCst);
            Ok(vec![(&(&xs[0] * 2.0)? + 1.0)?])
        });
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (f, barrier) = (f.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let x = input(10 + i);
                    let y = f.call(std::slice::from_ref(&x)).unwrap()[0]
                        .to_vec::<f32>()
                        .unwrap();
                    let want: Vec<f32> = x
                        .to_vec::<f32>()
                        .unwrap()
                        .iter()
                        .map(|v| v * 2.0 + 1.0)
                        .collect();
                    assert_eq!(y, want);
                })
            })
            .collect();
        for h in handles {
            join_within(60, h);
        }
        assert_eq!(traced.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn ten_thousand_compiled_closures_dropped_leave_the_cache_empty() {
    watchdog(300, || {
        let before = compile::cache_len();
        for i in 0..10_000 {
            let k = i as f64;
            let f = compile(move |xs: &[Array]| Ok(vec![(&xs[0] + k)?]));
            f.call(&[input(4)]).unwrap();
        }
        // Other tests in this binary may hold entries; ours are all gone.
        assert!(
            compile::cache_len() <= before + 16,
            "cache grew to {}",
            compile::cache_len()
        );
    });
}

#[test]
fn a_failed_trace_leaves_no_entry_and_the_next_call_traces_again() {
    let traced = Arc::new(AtomicUsize::new(0));
    let t = traced.clone();
    let f = compile(move |xs: &[Array]| {
        if t.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(Error::new(ErrorKind::Value, "body", "first call fails"));
        }
        Ok(vec![(&xs[0] + 1.0)?])
    });
    assert_eq!(
        f.call(&[input(4)]).unwrap_err().to_string(),
        "body: first call fails"
    );
    assert!(f.call(&[input(4)]).is_ok());
    assert_eq!(traced.load(Ordering::SeqCst), 2);
}

#[test]
fn typed_constants_are_distinct_keys() {
    use ferrox::compile::Constant;
    let f = compile_with(
        |xs: &[Array], c: &[Constant]| Ok(vec![(&xs[0] * c[0].as_f64().unwrap_or(0.0))?]),
        false,
    );
    let x = input(4);
    f.call_with_constants(std::slice::from_ref(&x), &[Constant::float(1.0)])
        .unwrap();
    f.call_with_constants(std::slice::from_ref(&x), &[Constant::Int(1)])
        .unwrap();
    f.call_with_constants(&[x], &[Constant::float(1.0)])
        .unwrap();
    assert_eq!(f.traces(), 2);
}

#[test]
fn simplify_merges_common_subexpressions_and_constants() {
    let traced = compile(|xs: &[Array]| {
        let a = (&xs[0] * 2.0)?;
        let b = (&xs[0] * 2.0)?; // the same expression with another constant array
        // A consumer that is not elementwise, so the merged node stays a
        // node of its own (elementwise consumers would fuse with it).
        Ok(vec![concatenate(&[a, b], 0)?])
    });
    let y = traced.call(&[input(4)]).unwrap();
    // Read the replayed graph before evaluation detaches it.
    let tape = y[0].inputs();
    let x = input(4).to_vec::<f32>().unwrap();
    let twice: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(
        y[0].to_vec::<f32>().unwrap(),
        [twice.clone(), twice].concat()
    );
    assert_eq!(tape.len(), 2);
    assert_eq!(
        tape[0].id(),
        tape[1].id(),
        "both operands are one merged node"
    );
}

#[test]
fn outputs_of_one_fused_kernel_read_from_many_threads_at_once() {
    // Contract item 1 for packed kernels: 8 threads each evaluate one of the
    // results of one call (views of one shared node) at the same moment;
    // the kernel runs once and every thread sees its finished row.
    watchdog(120, || {
        let body = |xs: &[Array]| -> Result<Vec<Array>> {
            let e = exp(&xs[0])?;
            let mask = greater(&e, &Array::from(1.0f32))?;
            let t = tanh(&xs[0])?;
            Ok(vec![e, mask, t.clone(), multiply(&t, &t)?])
        };
        let f = compile(body);
        let x = input(50_000);
        let want: Vec<Vec<u64>> = body(std::slice::from_ref(&x))
            .unwrap()
            .iter()
            .map(bits_of)
            .collect();
        for _ in 0..20 {
            let ys = f.call(std::slice::from_ref(&x)).unwrap();
            let packed = ys[0].inputs()[0].id();
            assert!(ys.iter().all(|y| y.inputs()[0].id() == packed));
            let barrier = Arc::new(Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (y, barrier) = (ys[i % ys.len()].clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        bits_of(&y)
                    })
                })
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                assert_eq!(join_within(60, h), want[i % want.len()]);
            }
        }
        assert_eq!(f.traces(), 1);
    });
}

/// The values of `a` as f64 bit patterns (any dtype).
fn bits_of(a: &Array) -> Vec<u64> {
    astype(a, DType::Float64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
        .into_iter()
        .map(f64::to_bits)
        .collect()
}
