//! The main job, end to end: train a small classifier with a compiled
//! `value_and_grad` step, then serve it from 8 threads that share one
//! compiled forward function (one trace, whatever the number of threads).
//!
//!     cargo run --release --example train_and_serve
use ferrox::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const FEATURES: usize = 32;
const HIDDEN: usize = 128;
const CLASSES: usize = 8;
const SAMPLES: usize = 4096;
const BATCH: usize = 256;

/// A small deterministic generator (the core has no random module yet).
struct Lcg(u64);

impl Lcg {
    fn uniform(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn array(&mut self, shape: &[usize], scale: f32) -> Result<Array> {
        let n = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| self.uniform() * scale).collect();
        Array::from_slice(&v, shape)
    }
}

/// Rows `lo..hi` of `a` (a zero-copy view).
fn rows(a: &Array, lo: usize, hi: usize) -> Result<Array> {
    a.index(&[(lo as isize..hi as isize).into()])
}

/// Logits of the 2-layer perceptron: `tanh(x W1 + b1) W2 + b2`.
fn forward(params: &[Array], x: &Array) -> Result<Array> {
    let h = tanh(&add(&matmul(x, &params[0])?, &params[1])?)?;
    add(&matmul(&h, &params[2])?, &params[3])
}

/// Mean cross-entropy against one-hot labels.
fn loss(params: &[Array], x: &Array, onehot: &Array) -> Result<Array> {
    let logits = forward(params, x)?;
    let lse = logsumexp(&logits, Some(&[-1]), false)?;
    let picked = sum(&multiply(&logits, onehot)?, Some(&[-1]), false)?;
    mean(&subtract(&lse, &picked)?, None, false)
}

/// A teacher network labels random inputs; the student learns it.
fn dataset(rng: &mut Lcg) -> Result<(Array, Array)> {
    let x = rng.array(&[SAMPLES, FEATURES], 1.0)?;
    let teacher = rng.array(&[FEATURES, CLASSES], 1.0)?;
    let labels = argmax(&matmul(&x, &teacher)?, Some(-1), false)?.to_vec::<u32>()?;
    let mut onehot = vec![0.0f32; SAMPLES * CLASSES];
    for (i, &c) in labels.iter().enumerate() {
        onehot[i * CLASSES + c as usize] = 1.0;
    }
    Ok((x, Array::from_slice(&onehot, &[SAMPLES, CLASSES])?))
}

fn main() -> Result<()> {
    let mut rng = Lcg(42);
    let (x, y) = dataset(&mut rng)?;
    let mut params = vec![
        rng.array(&[FEATURES, HIDDEN], (1.0 / FEATURES as f32).sqrt())?,
        zeros(&[HIDDEN], DType::Float32)?,
        rng.array(&[HIDDEN, CLASSES], (1.0 / HIDDEN as f32).sqrt())?,
        zeros(&[CLASSES], DType::Float32)?,
    ];

    // One compiled training step: loss, gradients and the SGD update.
    let grad_fn = value_and_grad(
        |a: &[Array]| Ok(vec![loss(&a[..4], &a[4], &a[5])?]),
        &[0, 1, 2, 3],
    );
    let step = compile(move |a: &[Array]| {
        let (values, grads) = grad_fn(a)?;
        let mut out = vec![values[0].clone()];
        for (p, g) in a[..4].iter().zip(&grads) {
            out.push(subtract(p, &multiply(g, &Array::from(0.5))?)?);
        }
        Ok(out)
    });

    println!(
        "training a {FEATURES}-{HIDDEN}-{CLASSES} perceptron on {SAMPLES} samples (batch {BATCH})"
    );
    let t0 = Instant::now();
    let batches = SAMPLES / BATCH;
    for epoch in 0..8 {
        let mut total = 0.0;
        for b in 0..batches {
            let mut args = params.clone();
            args.push(rows(&x, b * BATCH, (b + 1) * BATCH)?);
            args.push(rows(&y, b * BATCH, (b + 1) * BATCH)?);
            let out = step.call(&args)?;
            eval(&out)?;
            total += out[0].item::<f32>()?;
            params = out[1..].to_vec();
        }
        println!("epoch {epoch}: loss {:.4}", total / batches as f32);
    }
    let train_time = t0.elapsed();
    println!(
        "trained {} steps in {:.2} s ({:.0} steps/s); step traces: {}",
        8 * batches,
        train_time.as_secs_f64(),
        (8 * batches) as f64 / train_time.as_secs_f64(),
        step.traces()
    );

    // Serving: 8 threads share one compiled forward function.
    let predict =
        compile(|a: &[Array]| Ok(vec![argmax(&forward(&a[..4], &a[4])?, Some(-1), false)?]));
    let served = Arc::new(AtomicUsize::new(0));
    let correct = Arc::new(AtomicUsize::new(0));
    let duration = Duration::from_secs(2);
    let start = Instant::now();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (predict, params, x, y) = (predict.clone(), params.clone(), x.clone(), y.clone());
            let (served, correct) = (served.clone(), correct.clone());
            std::thread::spawn(move || -> Result<()> {
                let truth = argmax(&y, Some(-1), false)?;
                let mut b = t;
                while start.elapsed() < duration {
                    let (lo, hi) = ((b % batches) * BATCH, (b % batches + 1) * BATCH);
                    let mut args = params.clone();
                    args.push(rows(&x, lo, hi)?);
                    let pred = predict.call(&args)?;
                    let hits = sum(&equal(&pred[0], &rows(&truth, lo, hi)?)?, None, false)?;
                    correct.fetch_add(hits.item::<i32>()? as usize, Ordering::Relaxed);
                    served.fetch_add(BATCH, Ordering::Relaxed);
                    b += 1;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| Error::new(ErrorKind::Runtime, "serve", "a serving thread panicked"))??;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let n = served.load(Ordering::Relaxed);
    println!(
        "served {n} predictions from 8 threads in {elapsed:.2} s: {:.0} samples/s, accuracy {:.1}%",
        n as f64 / elapsed,
        100.0 * correct.load(Ordering::Relaxed) as f64 / n.max(1) as f64
    );
    println!(
        "forward traces: {} (8 threads, one shared trace)",
        predict.traces()
    );
    Ok(())
}
