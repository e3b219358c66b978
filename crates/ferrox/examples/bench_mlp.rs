//! Training-step benchmark: a 784-512-10 perceptron (ReLU), batch 256,
//! cross-entropy, SGD update, as one compiled `value_and_grad` step.
//! Prints one JSON line (bench/run.py runs JAX and PyTorch side by side).
//!
//! Run: cargo run --release --example bench_mlp [-- --quick]
use ferrox::*;
use std::time::Instant;

fn random(shape: &[usize], seed: u32, scale: f32) -> Result<Array> {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(2654435761) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            ((s as f32 / u32::MAX as f32) * 2.0 - 1.0) * scale
        })
        .collect();
    Array::from_slice(&v, shape)
}

fn loss(a: &[Array]) -> Result<Vec<Array>> {
    let (w1, b1, w2, b2, x, y) = (&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]);
    let h = maximum(&add(&matmul(x, w1)?, b1)?, &Array::from(0.0))?;
    let logits = add(&matmul(&h, w2)?, b2)?;
    let lse = logsumexp(&logits, Some(&[-1]), false)?;
    let picked = sum(&multiply(&logits, y)?, Some(&[-1]), false)?;
    Ok(vec![mean(&subtract(&lse, &picked)?, None, false)?])
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (batch, din, hidden, classes) = (256, 784, 512, 10);
    let mut params = vec![
        random(&[din, hidden], 1, (1.0 / din as f32).sqrt())?,
        zeros(&[hidden], DType::Float32)?,
        random(&[hidden, classes], 2, (1.0 / hidden as f32).sqrt())?,
        zeros(&[classes], DType::Float32)?,
    ];
    let x = random(&[batch, din], 3, 1.0)?;
    let labels: Vec<f32> = (0..batch * classes)
        .map(|i| f32::from(i % classes == (i / classes) % classes))
        .collect();
    let y = Array::from_slice(&labels, &[batch, classes])?;
    let vg = value_and_grad(loss, &[0, 1, 2, 3]);
    let step = compile(move |a: &[Array]| {
        let (values, grads) = vg(a)?;
        let mut out = vec![values[0].clone()];
        for (p, g) in a[..4].iter().zip(&grads) {
            out.push(subtract(p, &multiply(g, &Array::from(0.01))?)?);
        }
        Ok(out)
    });
    let mut run = |steps: usize| -> Result<f64> {
        let t = Instant::now();
        for _ in 0..steps {
            let mut args = params.clone();
            args.push(x.clone());
            args.push(y.clone());
            let out = step.call(&args)?;
            eval(&out)?;
            params = out[1..].to_vec();
        }
        Ok(steps as f64 / t.elapsed().as_secs_f64())
    };
    run(5)?;
    let steps_per_s = run(if quick { 50 } else { 300 })?;
    println!(
        "{{\"bench\": \"mlp_784_512_10_step\", \"impl\": \"ferrox\", \"ms\": {:.4}, \"steps_per_s\": {steps_per_s:.1}}}",
        1e3 / steps_per_s
    );
    Ok(())
}
