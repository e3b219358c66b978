//! Decode throughput of the demo model with 8 requests in flight: one
//! thread per request (what the server does) against requests batched into
//! one forward call, one JSON line per configuration.
//!
//! ```text
//! cargo run --release -p ferrox-cli --example decode_batching -- --steps 48 --rounds 5
//! ```
//!
//! A configuration is `W` worker threads, each decoding a batch of `B`
//! requests (`W * B` requests in flight): `1x1` is one client alone,
//! `8x1` is per-request threads, `1x8` is one batched forward for all 8,
//! the best case of continuous batching (every row at the same position,
//! no scheduling cost). Each worker prefills a 16-token prompt (untimed),
//! then decodes `--steps` greedy tokens; tokens/s counts every request's
//! decoded tokens over the wall time of the decode phase. Rounds of the
//! configurations alternate, and each line gives the median over rounds.
//! The thread count is rayon's (`RAYON_NUM_THREADS`).

use clap::Parser;
use ferrox::Array;
use ferrox_cli::lm::generate::Generator;
use ferrox_cli::lm::{Lm, LmConfig};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Decoded tokens per request.
    #[arg(long, default_value_t = 48)]
    steps: usize,
    /// Timed rounds of every configuration.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

const PROMPT: usize = 16;

/// Decodes `steps` tokens for a batch of `batch` requests; returns the
/// time the decode phase took (the prefill is not timed).
fn decode(
    g: &Generator,
    batch: usize,
    steps: usize,
    start: &Barrier,
) -> ferrox_cli::Result<Duration> {
    let vocab = g.model().config.vocab;
    let prompt: Vec<i32> = (0..batch * PROMPT)
        .map(|i| (i * 7 % vocab) as i32)
        .collect();
    let tokens = Array::from_slice(&prompt, &[batch, PROMPT])?;
    let cache = g.model().empty_cache(batch)?;
    let (mut logits, mut cache) = g.forward_step(tokens, 0, PROMPT - 1, &cache)?;
    start.wait();
    let t0 = Instant::now();
    for step in 0..steps {
        let next: Vec<i32> = logits.chunks(vocab).map(argmax).collect();
        let tokens = Array::from_slice(&next, &[batch, 1])?;
        (logits, cache) = g.forward_step(tokens, PROMPT + step, 0, &cache)?;
    }
    Ok(t0.elapsed())
}

/// Whether a request's logits are bit for bit the same decoded alone and
/// as one row of a batch of 8 (other rows holding other prompts): what
/// "a seed gives the same text alone or beside others" needs of batching.
fn batched_rows_equal_solo(g: &Generator) -> ferrox_cli::Result<bool> {
    let vocab = g.model().config.vocab as i32;
    let run = |batch: usize| -> ferrox_cli::Result<Vec<f32>> {
        let prompt: Vec<i32> = (0..batch * PROMPT)
            .map(|i| (i as i32 * 7) % vocab)
            .collect();
        let tokens = Array::from_slice(&prompt, &[batch, PROMPT])?;
        let (logits, cache) =
            g.forward_step(tokens, 0, PROMPT - 1, &g.model().empty_cache(batch)?)?;
        let next: Vec<i32> = logits.chunks(vocab as usize).map(argmax).collect();
        let tokens = Array::from_slice(&next, &[batch, 1])?;
        let (logits, _) = g.forward_step(tokens, PROMPT, 0, &cache)?;
        Ok(logits[..vocab as usize].to_vec())
    };
    let (solo, batched) = (run(1)?, run(8)?);
    Ok(solo
        .iter()
        .zip(&batched)
        .all(|(a, b)| a.to_bits() == b.to_bits()))
}

fn argmax(row: &[f32]) -> i32 {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best as i32
}

/// Tokens per second of `workers` threads each decoding a batch of `batch`.
fn round(
    g: &Arc<Generator>,
    workers: usize,
    batch: usize,
    steps: usize,
) -> ferrox_cli::Result<f64> {
    let start = Arc::new(Barrier::new(workers));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let (g, start) = (Arc::clone(g), Arc::clone(&start));
            std::thread::spawn(move || decode(&g, batch, steps, &start))
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for h in handles {
        let t = h
            .join()
            .map_err(|_| ferrox_cli::Error::Config("a worker panicked".into()))??;
        slowest = slowest.max(t);
    }
    Ok((workers * batch * steps) as f64 / slowest.as_secs_f64())
}

fn main() -> ferrox_cli::Result<()> {
    let args = Args::parse();
    ferrox::random::seed(0);
    let g = Arc::new(Generator::new(Lm::new(LmConfig::demo())?)?);
    let configs = [(1, 1), (8, 1), (2, 4), (1, 8)];
    // One untimed round traces every shape.
    for &(w, b) in &configs {
        round(&g, w, b, 2)?;
    }
    println!(
        "{{\"batched_rows_equal_solo_bitwise\": {}}}",
        batched_rows_equal_solo(&g)?
    );
    let mut rates = vec![Vec::new(); configs.len()];
    for _ in 0..args.rounds {
        for (k, &(w, b)) in configs.iter().enumerate() {
            rates[k].push(round(&g, w, b, args.steps)?);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let alone = median(&mut rates[0].clone());
    for (k, &(w, b)) in configs.iter().enumerate() {
        let spread: Vec<String> = rates[k].iter().map(|r| format!("{r:.0}")).collect();
        let m = median(&mut rates[k]);
        println!(
            "{{\"config\": \"{w}x{b}\", \"threads\": {w}, \"batch\": {b}, \"tokens_per_s\": {m:.1}, \"vs_one_client\": {:.2}, \"rounds\": [{}]}}",
            m / alone,
            spread.join(", ")
        );
    }
    Ok(())
}
