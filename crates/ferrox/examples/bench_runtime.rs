//! Runtime overhead benchmark: build + eval of a 3-op graph on small arrays,
//! single-threaded latency and two-thread throughput scaling.
//!
//! Run: cargo run --release --example bench_runtime
//! Prints one JSON line per measurement (bench/run.py collects them).
use ferrox::*;
use std::time::Instant;

fn three_ops(x: &Array) -> Result<Array> {
    let y = (x * 2.0)?;
    let y = (&y + 1.0)?;
    exp(&y)
}

/// Median of `reps` timings of `iters` iterations, in µs per iteration.
fn time_per_iter(iters: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / iters as f64
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[reps / 2]
}

/// Calls per second of `call` from `threads` threads started together.
fn throughput_of(
    threads: usize,
    secs: f64,
    call: impl Fn() -> Result<()> + Send + Sync + Clone + 'static,
) -> f64 {
    let start = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (start, call) = (start.clone(), call.clone());
            std::thread::spawn(move || {
                call().expect("warm-up");
                start.wait();
                let t = Instant::now();
                let mut count = 0usize;
                while t.elapsed().as_secs_f64() < secs {
                    call().expect("call");
                    count += 1;
                }
                count as f64 / t.elapsed().as_secs_f64()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("thread")).sum()
}

fn compiled_three_ops() -> CompiledFn {
    compile(|xs: &[Array]| Ok(vec![three_ops(&xs[0])?]))
}

fn throughput(threads: usize, n: usize, secs: f64) -> f64 {
    let start = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let start = start.clone();
            std::thread::spawn(move || {
                let x = ones(&[n], DType::Float32).expect("ones");
                x.eval().expect("eval");
                start.wait();
                let t = Instant::now();
                let mut count = 0usize;
                while t.elapsed().as_secs_f64() < secs {
                    three_ops(&x).and_then(|y| y.eval()).expect("eval");
                    count += 1;
                }
                count as f64 / t.elapsed().as_secs_f64()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("thread")).sum()
}

fn main() -> Result<()> {
    let x = ones(&[16], DType::Float32)?;
    x.eval()?;
    let us = time_per_iter(20_000, 7, || {
        three_ops(&x).and_then(|y| y.eval()).expect("eval");
    });
    println!("{{\"bench\": \"eval_3op_16_f32\", \"impl\": \"ferrox\", \"us_per_call\": {us:.3}}}");
    let one = throughput(1, 1024, 1.0);
    let two = throughput(2, 1024, 1.0);
    println!(
        "{{\"bench\": \"eval_3op_1024_threads\", \"impl\": \"ferrox\", \"calls_per_s_1t\": {one:.0}, \"calls_per_s_2t\": {two:.0}, \"scaling\": {:.2}}}",
        two / one
    );
    // Compiled: a cached call (trace once, then replay) of the same graph.
    let f = compiled_three_ops();
    let us = time_per_iter(20_000, 7, || {
        f.call(std::slice::from_ref(&x))
            .and_then(|y| y[0].eval())
            .expect("call");
    });
    println!(
        "{{\"bench\": \"compiled_3op_16_f32\", \"impl\": \"ferrox\", \"us_per_call\": {us:.3}}}"
    );
    let x1024 = ones(&[1024], DType::Float32)?;
    x1024.eval()?;
    let call = {
        let (f, x) = (f.clone(), x1024.clone());
        move || f.call(std::slice::from_ref(&x))?[0].eval()
    };
    let one = throughput_of(1, 1.0, call.clone());
    let two = throughput_of(2, 1.0, call);
    println!(
        "{{\"bench\": \"compiled_3op_1024_threads\", \"impl\": \"ferrox\", \"calls_per_s_1t\": {one:.0}, \"calls_per_s_2t\": {two:.0}, \"scaling\": {:.2}}}",
        two / one
    );
    // First call from 16 racing threads against one thread's first call,
    // with a trace that takes a while (a 2000-op chain).
    let long_chain = || {
        compile(|xs: &[Array]| {
            let mut y = xs[0].clone();
            for _ in 0..2000 {
                y = (&y + 1.0)?;
            }
            Ok(vec![y])
        })
    };
    let t = Instant::now();
    long_chain().call(std::slice::from_ref(&x))?;
    let single_ms = t.elapsed().as_secs_f64() * 1e3;
    let g = long_chain();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
    let t = Instant::now();
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let (g, x, barrier) = (g.clone(), x.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                g.call(std::slice::from_ref(&x)).map(|_| ())
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread")?;
    }
    let racing_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{{\"bench\": \"first_call_16_threads\", \"impl\": \"ferrox\", \"single_ms\": {single_ms:.2}, \"racing_16_ms\": {racing_ms:.2}, \"traces\": {}}}",
        g.traces()
    );
    Ok(())
}
