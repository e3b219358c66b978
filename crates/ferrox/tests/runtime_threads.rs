//! Evaluation from any thread (contract item 1): arrays cross threads, shared
//! nodes compute once, errors reach every waiter, streams synchronise.
#![allow(clippy::cloned_ref_to_slice_refs)] // test code: kept as written

mod common;

use common::{join_within, watchdog};
use ferrox::array::Data;
use ferrox::graph::primitive::{Operand, OutSpec, Primitive};
use ferrox::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// y = x + 1, counting how often the kernel runs; optionally slow or failing.
#[derive(Debug)]
struct Counted {
    runs: Arc<AtomicUsize>,
    sleep_ms: u64,
    fail: bool,
}

impl Primitive for Counted {
    fn name(&self) -> &'static str {
        "counted"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(self.sleep_ms));
        if self.fail {
            return Err(Error::new(
                ErrorKind::Runtime,
                "counted",
                "deliberate failure",
            ));
        }
        ferrox::backend::cpu::elementwise::unary(&inputs[0], out, |v: f32| v + 1.0)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn counted(x: &Array, runs: &Arc<AtomicUsize>, sleep_ms: u64, fail: bool) -> Array {
    let op = Counted {
        runs: runs.clone(),
        sleep_ms,
        fail,
    };
    Array::from_primitive(x.shape().to_vec(), x.dtype(), Arc::new(op), vec![x.clone()])
}

#[test]
fn array_built_on_one_thread_evaluates_on_another_after_it_exited() {
    let built = std::thread::spawn(|| {
        let x = arange(0.0, 6.0, 1.0, DType::Float32).unwrap();
        exp(&negative(&x).unwrap()).unwrap()
    });
    let y = join_within(10, built);
    // The building thread is gone; evaluate here and on a third thread.
    let y2 = y.clone();
    let other = std::thread::spawn(move || y2.to_vec::<f32>().unwrap());
    let here = y.to_vec::<f32>().unwrap();
    assert_eq!(here, join_within(10, other));
    assert_eq!(here[0], 1.0);
}

#[test]
fn sixteen_threads_compute_each_shared_node_once() {
    watchdog(60, || {
        for round in 0..20 {
            let runs = Arc::new(AtomicUsize::new(0));
            let x = arange(0.0, 1024.0, 1.0, DType::Float32).unwrap();
            // A diamond with a chain: every node is shared by all threads.
            let a = counted(&x, &runs, 0, false);
            let b = counted(&a, &runs, 1, false);
            let c = counted(&a, &runs, 0, false);
            let d = add(&b, &c).unwrap();
            let e = counted(&d, &runs, 0, false);
            let barrier = Arc::new(Barrier::new(16));
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    let (e, barrier) = (e.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        e.to_vec::<f32>().unwrap()
                    })
                })
                .collect();
            let results: Vec<Vec<f32>> = handles.into_iter().map(|h| join_within(30, h)).collect();
            assert_eq!(
                runs.load(Ordering::SeqCst),
                4,
                "round {round}: each counted node runs once"
            );
            let want: Vec<f32> = (0..1024)
                .map(|i| (i as f32 + 2.0) + (i as f32 + 2.0) + 1.0)
                .collect();
            for r in &results {
                assert_eq!(
                    r.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    });
}

#[test]
fn a_failing_shared_node_reports_to_every_waiter_and_stays_failed() {
    watchdog(60, || {
        let runs = Arc::new(AtomicUsize::new(0));
        let x = ones(&[8], DType::Float32).unwrap();
        let bad = counted(&x, &runs, 20, true);
        let y = add(&bad, &x).unwrap();
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (y, barrier) = (y.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    y.eval()
                })
            })
            .collect();
        for h in handles {
            let err = join_within(30, h).unwrap_err();
            assert_eq!(err.to_string(), "counted: deliberate failure");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Later reads see the same error without recomputing.
        assert!(y.to_vec::<f32>().is_err());
        assert!(bad.eval().is_err());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn async_eval_and_synchronize_across_streams() {
    watchdog(60, || {
        let s1 = new_stream(Device::cpu());
        let s2 = new_stream(Device::cpu());
        let runs = Arc::new(AtomicUsize::new(0));
        let x = ones(&[4096], DType::Float32).unwrap();
        // Produced on s1 (slowly), consumed on s2.
        let a = with_stream(s1, || counted(&x, &runs, 30, false));
        let b = with_stream(s2, || multiply(&a, &a).unwrap());
        assert_eq!(a.stream(), s1);
        assert_eq!(b.stream(), s2);
        async_eval(std::slice::from_ref(&b)).unwrap();
        async_eval(std::slice::from_ref(&a)).unwrap();
        synchronize(s2);
        assert!(b.is_available());
        synchronize(s1);
        assert!(a.is_available());
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![4.0; 4096]);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn synchronize_from_another_thread_and_async_eval_returns_immediately() {
    watchdog(60, || {
        let s = new_stream(Device::cpu());
        let runs = Arc::new(AtomicUsize::new(0));
        let x = ones(&[16], DType::Float32).unwrap();
        let y = with_stream(s, || counted(&x, &runs, 200, false));
        let t0 = std::time::Instant::now();
        async_eval(std::slice::from_ref(&y)).unwrap();
        assert!(
            t0.elapsed() < Duration::from_millis(150),
            "async_eval must not wait for the work"
        );
        let waiter = std::thread::spawn(move || synchronize(s));
        join_within(30, waiter);
        assert!(y.is_available());
    });
}

#[test]
fn evaluated_graphs_are_detached() {
    let x = ones(&[4], DType::Float32).unwrap();
    let y = exp(&x).unwrap();
    let z = add(&y, &x).unwrap();
    assert_eq!(z.inputs().len(), 2);
    z.eval().unwrap();
    assert!(z.inputs().is_empty(), "an evaluated node drops its inputs");
}

#[test]
fn a_million_deep_graph_evaluates_and_drops_without_overflow() {
    watchdog(120, || {
        let one = Array::from_slice(&[1.0f32], &[1]).unwrap();
        let mut y = one.clone();
        for _ in 0..1_000_000 {
            y = add(&y, &one).unwrap();
        }
        assert_eq!(y.item::<f32>().unwrap(), 1_000_001.0);
        // An unevaluated deep graph drops iteratively too.
        let mut z = one.clone();
        for _ in 0..1_000_000 {
            z = add(&z, &one).unwrap();
        }
        drop(z);
    });
}

#[test]
fn streams_and_default_device_are_process_wide_values() {
    let here = default_stream(default_device());
    let there = join_within(
        10,
        std::thread::spawn(|| (default_stream(default_device()), current_stream())),
    );
    assert_eq!(here, there.0);
    assert_eq!(here, there.1);
    let s = new_stream(Device::cpu());
    with_stream(s, || {
        assert_eq!(current_stream(), s);
        // A scope on this thread does not leak into another.
        let other = join_within(10, std::thread::spawn(current_stream));
        assert_eq!(other, here);
    });
    assert_eq!(current_stream(), here);
}

#[test]
fn outputs_written_with_cache_bypassing_stores_are_whole_when_other_threads_read_them() {
    // 9M f32 = 36 MiB per array: above the streaming threshold, so the
    // contiguous unary and binary kernels write with non-temporal stores.
    // Four threads evaluate one shared graph (and a compiled, fused copy of
    // it); every element must equal the plain scalar computation.
    watchdog(240, || {
        let n = 9 << 20;
        let v: Vec<f32> = (0..n).map(|i| (i % 977) as f32 * 0.01 - 4.0).collect();
        let x = Array::from_slice(&v, &[n]).unwrap();
        let y = add(&negative(&x).unwrap(), &multiply(&x, &x).unwrap()).unwrap();
        let f =
            compile(|xs: &[Array]| Ok(vec![add(&negative(&xs[0])?, &multiply(&xs[0], &xs[0])?)?]));
        let start = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (x, y, f, start) = (x.clone(), y.clone(), f.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let out = if t % 2 == 0 {
                        y
                    } else {
                        f.call(&[x]).unwrap().remove(0)
                    };
                    out.to_vec::<f32>().unwrap()
                })
            })
            .collect();
        for h in handles {
            let got = join_within(120, h);
            assert_eq!(got.len(), n);
            let bad = got
                .iter()
                .zip(&v)
                .position(|(&g, &x)| g.to_bits() != (-x + x * x).to_bits());
            assert_eq!(bad, None, "first wrong element");
        }
    });
}

#[test]
fn large_products_and_tiled_programs_from_many_threads_equal_one_thread() {
    // Products above the split threshold run as slabs on the pool, from
    // several callers at once: six barrier-started threads evaluate a shared
    // product node (computed once), their own products of both slab
    // directions, and a compiled ReLU-backward program (the tile loop with a
    // mask). Each result must equal, bitwise, the one computed alone first.
    watchdog(240, || {
        let ramp =
            |n: usize, s: f32| -> Vec<f32> { (0..n).map(|i| (i % 101) as f32 * s - 1.0).collect() };
        let a = Array::from_slice(&ramp(256 * 300, 0.02), &[256, 300]).unwrap();
        let b = Array::from_slice(&ramp(300 * 520, 0.01), &[300, 520]).unwrap();
        let tall = Array::from_slice(&ramp(600 * 300, 0.015), &[600, 300]).unwrap();
        let relu_grad = compile(|xs: &[Array]| {
            let pick = greater_equal(&xs[0], &Array::from(0.0f32))?;
            Ok(vec![r#where(&pick, &xs[1], &zeros_like(&xs[1])?)?])
        });
        let alone = |a: &Array, b: &Array, tall: &Array| -> Vec<Vec<f32>> {
            let wide = matmul(a, b).unwrap();
            let rows = matmul(tall, &transpose(a, None).unwrap()).unwrap();
            let masked = relu_grad
                .call(&[wide.clone(), wide.clone()])
                .unwrap()
                .remove(0);
            [wide, rows, masked]
                .iter()
                .map(|r| r.to_vec::<f32>().unwrap())
                .collect()
        };
        let want = alone(&a, &b, &tall);
        let shared = matmul(&a, &b).unwrap(); // lazy, evaluated by every thread
        let start = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (a, b, tall, shared, start, f) = (
                    a.clone(),
                    b.clone(),
                    tall.clone(),
                    shared.clone(),
                    start.clone(),
                    relu_grad.clone(),
                );
                std::thread::spawn(move || {
                    start.wait();
                    let wide = matmul(&a, &b).unwrap();
                    let rows = matmul(&tall, &transpose(&a, None).unwrap()).unwrap();
                    let masked = f.call(&[shared.clone(), wide.clone()]).unwrap().remove(0);
                    [shared, wide, rows, masked]
                        .iter()
                        .map(|r| r.to_vec::<f32>().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            let got = join_within(120, h);
            assert_eq!(got[0], want[0], "the shared product");
            assert_eq!(got[1], want[0], "a thread's own product (column slabs)");
            assert_eq!(got[2], want[1], "a thread's own product (row slabs)");
            assert_eq!(got[3], want[2], "the tiled ReLU backward");
        }
    });
}

/// (x + 1, x * 2) from one kernel with two outputs, counting its runs;
/// optionally slow or failing.
#[derive(Debug)]
struct CountedPair(Counted);

impl Primitive for CountedPair {
    fn name(&self) -> &'static str {
        "counted_pair"
    }
    fn eval_cpu(&self, _: &[Operand<'_>], _: OutSpec<'_>) -> Result<Data> {
        Err(ferrox::graph::outputs::not_single(self.name()))
    }
    fn eval_cpu_multi(&self, inputs: &[Operand<'_>], outs: &[OutSpec<'_>]) -> Result<Vec<Data>> {
        let first = self.0.eval_cpu(inputs, outs[0])?;
        let second =
            ferrox::backend::cpu::elementwise::unary(&inputs[0], outs[1], |v: f32| v * 2.0)?;
        Ok(vec![first, second])
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn counted_pair(x: &Array, runs: &Arc<AtomicUsize>, sleep_ms: u64, fail: bool) -> Vec<Array> {
    let op = CountedPair(Counted {
        runs: runs.clone(),
        sleep_ms,
        fail,
    });
    let spec = (x.shape().to_vec(), x.dtype());
    Array::from_primitive_multi(vec![spec.clone(), spec], Arc::new(op), vec![x.clone()])
}

#[test]
fn sibling_outputs_compute_once_whichever_thread_reads_or_drops_first() {
    watchdog(120, || {
        for round in 0..50u64 {
            let runs = Arc::new(AtomicUsize::new(0));
            let x = arange(0.0, 64.0, 1.0, DType::Float32).unwrap();
            let outs = counted_pair(&x, &runs, round % 3, false);
            let barrier = Arc::new(Barrier::new(6));
            // Threads 0-3 read one sibling each (two per output), thread 4
            // drops its handle of output 0, thread 5 builds on output 1.
            let handles: Vec<_> = (0..6usize)
                .map(|t| {
                    let (mine, barrier) = (outs[t % 2].clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        match t {
                            4 => {
                                drop(mine);
                                None
                            }
                            5 => Some(add(&mine, &mine).unwrap().to_vec::<f32>().unwrap()),
                            _ => Some(mine.to_vec::<f32>().unwrap()),
                        }
                    })
                })
                .collect();
            let (first, second) = (outs[0].clone(), outs[1].clone());
            drop(outs);
            let got: Vec<_> = handles.into_iter().map(|h| join_within(30, h)).collect();
            let plus_one: Vec<f32> = (0..64).map(|v| v as f32 + 1.0).collect();
            let twice: Vec<f32> = (0..64).map(|v| v as f32 * 2.0).collect();
            let four_times: Vec<f32> = (0..64).map(|v| v as f32 * 4.0).collect();
            assert_eq!(got[0].as_ref(), Some(&plus_one));
            assert_eq!(got[1].as_ref(), Some(&twice));
            assert_eq!(got[2].as_ref(), Some(&plus_one));
            assert_eq!(got[3].as_ref(), Some(&twice));
            assert_eq!(got[5].as_ref(), Some(&four_times));
            assert_eq!(runs.load(Ordering::SeqCst), 1, "round {round}");
            // Each output is its own buffer.
            let (a, b) = (first.data().unwrap(), second.data().unwrap());
            assert!(!Arc::ptr_eq(&a.storage, &b.storage));
        }
    });
}

#[test]
fn a_failing_kernel_with_two_outputs_fails_both_for_every_reader() {
    watchdog(60, || {
        let runs = Arc::new(AtomicUsize::new(0));
        let x = ones(&[8], DType::Float32).unwrap();
        let outs = counted_pair(&x, &runs, 10, true);
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4usize)
            .map(|t| {
                let (mine, barrier) = (outs[t % 2].clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    mine.eval()
                })
            })
            .collect();
        for h in handles {
            let err = join_within(30, h).unwrap_err();
            assert_eq!(err.to_string(), "counted: deliberate failure");
        }
        assert!(outs[1].to_vec::<f32>().is_err());
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}
