//! The matrix products of one step of the 784-512-10 perceptron
//! (batch 256), each timed alone: forward, and the backward products with
//! their transposed operands as views; then square products. One JSON line per shape
//! (bench/step_bench.py prints numpy's time for the same product beside it).
//!
//! Run: cargo run --release --example bench_matmul_shapes [-- --quick]
use ferrox::*;
use std::time::Instant;

fn median_ms(mut f: impl FnMut() -> Result<()>, reps: usize) -> Result<f64> {
    f()?;
    f()?;
    let mut t: Vec<f64> = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[reps / 2])
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 21 } else { 201 };
    // (name, m, k, n, transpose a, transpose b): a is m x k, b is k x n.
    let shapes = [
        ("x@w1", 256, 784, 512, false, false),
        ("h@w2", 256, 512, 10, false, false),
        ("g@w2T", 256, 10, 512, false, true),
        ("hT@g", 512, 256, 10, true, false),
        ("xT@dh", 784, 256, 512, true, false),
        ("sq512", 512, 512, 512, false, false),
        ("sq1024", 1024, 1024, 1024, false, false),
        ("sq2048", 2048, 2048, 2048, false, false),
    ];
    for (name, m, k, n, ta, tb) in shapes {
        let a = if ta {
            transpose(
                &random::normal(&[k, m], DType::Float32, 0.0, 1.0, None)?,
                None,
            )?
        } else {
            random::normal(&[m, k], DType::Float32, 0.0, 1.0, None)?
        };
        let b = if tb {
            transpose(
                &random::normal(&[n, k], DType::Float32, 0.0, 1.0, None)?,
                None,
            )?
        } else {
            random::normal(&[k, n], DType::Float32, 0.0, 1.0, None)?
        };
        eval(&[a.clone(), b.clone()])?;
        let r = if m >= 1024 { reps / 10 + 1 } else { reps };
        let ms = median_ms(|| eval(&[matmul(&a, &b)?]), r)?;
        let gflops = 2.0 * (m * k * n) as f64 / ms / 1e6;
        println!(
            "{{\"bench\": \"matmul_{name}\", \"m\": {m}, \"k\": {k}, \"n\": {n}, \"ms\": {ms:.4}, \"gflops\": {gflops:.1}}}"
        );
    }
    Ok(())
}
