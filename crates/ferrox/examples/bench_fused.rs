//! Compiled elementwise chains on 16M f32, one JSON line per case with the
//! median wall time in ms (evaluation included): the fused row of
//! bench/step_bench.py without Python, and three more chains, in alternating
//! rounds: a quick A/B of fusion changes against an earlier build. Then an
//! AdamW update of a 1024 x 784 weight (the nn_bench MLP's first layer),
//! with its state threaded through the calls so that the buffers of p, m
//! and v are donated, as in a training loop.
//!
//! Run: cargo run --release --example bench_fused [-- --reps N]
use ferrox::*;
use std::time::Instant;

type Chain = fn(&[Array]) -> Result<Vec<Array>>;

fn tanh_exp(xs: &[Array]) -> Result<Vec<Array>> {
    let x = &xs[0];
    let t = multiply(&tanh(&(x * 0.5)?)?, x)?;
    Ok(vec![add(&t, &exp(&negative(&multiply(x, x)?)?)?)?])
}

fn affine(xs: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![((&xs[0] * 2.0)? + 1.0)?])
}

fn tanh_and_grad(xs: &[Array]) -> Result<Vec<Array>> {
    let y = tanh(&xs[0])?;
    let d = subtract(&Array::from(1.0f32), &multiply(&y, &y)?)?;
    Ok(vec![y, d])
}

/// The tanh approximation of GELU, as nn layers write it.
fn gelu_tanh(xs: &[Array]) -> Result<Vec<Array>> {
    let x = &xs[0];
    let inner = (&(x + &(&power(x, &Array::from(3.0f32))? * 0.044715)?)? * 0.797_884_6)?;
    Ok(vec![(&(x * 0.5)? * &(&tanh(&inner)? + 1.0)?)?])
}

/// One AdamW update (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight
/// decay 0.01, bias correction at step 3): p, g, m, v in; p, m, v out.
fn adamw(xs: &[Array]) -> Result<Vec<Array>> {
    let (p, g, m, v) = (&xs[0], &xs[1], &xs[2], &xs[3]);
    let p = (p * (1.0 - 1e-3 * 0.01))?;
    let m = add(&(m * 0.9)?, &(g * 0.1)?)?;
    let v = add(&(v * 0.999)?, &(&square(g)? * 0.001)?)?;
    let (c1, c2) = (1.0 - 0.9f64.powi(3), 1.0 - 0.999f64.powi(3));
    let step = divide(&(&m * (1e-3 / c1))?, &(&sqrt(&(&v / c2)?)? + 1e-8)?)?;
    Ok(vec![subtract(&p, &step)?, m, v])
}

/// The median ms of `reps` AdamW steps on a 1024 x 784 state, after two.
fn adamw_ms(reps: usize) -> Result<f64> {
    let f = compile(adamw);
    let n = 1024 * 784;
    let state = |scale: f32| -> Result<Array> {
        let v: Vec<f32> = (0..n).map(|i| (i % 977) as f32 * scale).collect();
        Array::from_slice(&v, &[1024, 784])
    };
    let g = state(1e-3)?;
    let (mut p, mut m, mut v) = (state(1e-2)?, state(1e-4)?, state(1e-6)?);
    let mut times = Vec::with_capacity(reps);
    for round in 0..reps + 2 {
        let start = Instant::now();
        let outs = f.call(&[p, g.clone(), m, v])?;
        eval(&outs)?;
        if round >= 2 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        [p, m, v] = [outs[0].clone(), outs[1].clone(), outs[2].clone()];
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(15usize);
    let n = 1usize << 24;
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 4001) as f32 / 1000.0 - 2.0)
        .collect();
    let x = Array::from_slice(&v, &[n])?;
    let cases: [(&str, Chain); 4] = [
        ("tanh_exp_16M_f32_compiled", tanh_exp),
        ("x*2+1_16M_f32_compiled", affine),
        ("tanh_grad_16M_f32_compiled", tanh_and_grad),
        ("gelu_tanh_16M_f32_compiled", gelu_tanh),
    ];
    let compiled: Vec<_> = cases.iter().map(|&(_, f)| compile(f)).collect();
    // Rounds alternate the cases, so a slow phase of the machine hits all.
    let mut times = vec![Vec::with_capacity(reps); cases.len()];
    for round in 0..reps + 2 {
        for (t, f) in times.iter_mut().zip(&compiled) {
            let start = Instant::now();
            eval(&f.call(std::slice::from_ref(&x))?)?;
            if round >= 2 {
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    for ((name, _), mut t) in cases.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let (lo, mid, hi) = (t[0], t[t.len() / 2], t[t.len() - 1]);
        println!(
            "{{\"bench\": \"{name}\", \"impl\": \"ferrox\", \"ms\": {mid:.3}, \"min\": {lo:.3}, \"max\": {hi:.3}}}"
        );
    }
    let ms = adamw_ms(reps * 10)?;
    println!("{{\"bench\": \"adamw_1024x784_donated\", \"impl\": \"ferrox\", \"ms\": {ms:.3}}}");
    Ok(())
}
