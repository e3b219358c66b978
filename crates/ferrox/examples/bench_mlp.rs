//! Training-step benchmark: a 784-512-10 perceptron (ReLU), batch 256,
//! cross-entropy, SGD update, as one compiled `value_and_grad` step; once
//! with one-hot labels (a product with the logits) and once with integer
//! labels picked by `take_along_axis` (the step bench/step_bench.py times
//! from Python), in alternating rounds. Prints one JSON line per form
//! (bench/run.py runs JAX and PyTorch side by side).
//!
//! With `--profile`, first prints where the integer-label step's time goes:
//! each kind of kernel (op, output shape, input shapes) with its time per
//! step, over 300 steps (see `ferrox::runtime::profile`).
//!
//! Run: cargo run --release --example bench_mlp [-- --quick] [--profile]
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

fn logits(a: &[Array]) -> Result<Array> {
    let (w1, b1, w2, b2, x) = (&a[0], &a[1], &a[2], &a[3], &a[4]);
    let h = maximum(&add(&matmul(x, w1)?, b1)?, &Array::from(0.0))?;
    add(&matmul(&h, w2)?, b2)
}

/// Cross-entropy with one-hot labels `a[5]` (`[batch, classes]` f32).
fn loss_one_hot(a: &[Array]) -> Result<Vec<Array>> {
    let logits = logits(a)?;
    let lse = logsumexp(&logits, Some(&[-1]), false)?;
    let picked = sum(&multiply(&logits, &a[5])?, Some(&[-1]), false)?;
    Ok(vec![mean(&subtract(&lse, &picked)?, None, false)?])
}

/// Cross-entropy with integer labels `a[5]` (`[batch]` i32).
fn loss_labels(a: &[Array]) -> Result<Vec<Array>> {
    let logits = logits(a)?;
    let lse = logsumexp(&logits, Some(&[-1]), false)?;
    let picked = take_along_axis(&logits, &expand_dims(&a[5], &[-1])?, Some(-1))?;
    let picked = squeeze(&picked, Some(&[-1]))?;
    Ok(vec![mean(&subtract(&lse, &picked)?, None, false)?])
}

/// One compiled SGD step of `loss` over the four parameters.
fn sgd_step(loss: fn(&[Array]) -> Result<Vec<Array>>) -> CompiledFn {
    let vg = value_and_grad(loss, &[0, 1, 2, 3]);
    compile(move |a: &[Array]| {
        let (values, grads) = vg(a)?;
        let mut out = vec![values[0].clone()];
        for (p, g) in a[..4].iter().zip(&grads) {
            out.push(subtract(p, &multiply(g, &Array::from(0.01))?)?);
        }
        Ok(out)
    })
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (batch, din, hidden, classes) = (256, 784, 512, 10);
    let params = vec![
        random(&[din, hidden], 1, (1.0 / din as f32).sqrt())?,
        zeros(&[hidden], DType::Float32)?,
        random(&[hidden, classes], 2, (1.0 / hidden as f32).sqrt())?,
        zeros(&[classes], DType::Float32)?,
    ];
    let x = random(&[batch, din], 3, 1.0)?;
    let one_hot: Vec<f32> = (0..batch * classes)
        .map(|i| f32::from(i % classes == (i / classes) % classes))
        .collect();
    let one_hot = Array::from_slice(&one_hot, &[batch, classes])?;
    let labels: Vec<i32> = (0..batch).map(|i| (i % classes) as i32).collect();
    let labels = Array::from_slice(&labels, &[batch])?;
    let forms = [
        ("mlp_784_512_10_step", sgd_step(loss_one_hot), one_hot),
        (
            "mlp_784_512_10_step_int_labels",
            sgd_step(loss_labels),
            labels,
        ),
    ];
    // Milliseconds per step over `steps` steps of one form.
    let run = |step: &CompiledFn, y: &Array, steps: usize| -> Result<f64> {
        let mut p = params.clone();
        let t = Instant::now();
        for _ in 0..steps {
            let mut args = p.clone();
            args.push(x.clone());
            args.push(y.clone());
            let out = step.call(&args)?;
            eval(&out)?;
            p = out[1..].to_vec();
        }
        Ok(t.elapsed().as_secs_f64() * 1e3 / steps as f64)
    };
    if std::env::args().any(|a| a == "--profile") {
        let (_, step, y) = &forms[1];
        run(step, y, 20)?;
        let _ = runtime::profile::take_kernel_times();
        let steps = 300;
        runtime::profile::profile_kernels(true);
        let ms = run(step, y, steps)?;
        runtime::profile::profile_kernels(false);
        println!("kernel times per step ({ms:.3} ms a step with timing on):");
        let mut sum = 0.0;
        for t in runtime::profile::take_kernel_times() {
            let us = t.total.as_secs_f64() * 1e6 / steps as f64;
            sum += us;
            let inputs: Vec<String> = t.inputs.iter().map(|s| format!("{s:?}")).collect();
            println!(
                "  {us:8.2} us  {} {:?} <- {}",
                t.op,
                t.shape,
                inputs.join(" ")
            );
        }
        println!("  {sum:8.2} us  in kernels");
    }
    let (rounds, steps) = if quick { (1, 50) } else { (5, 100) };
    let mut times = vec![Vec::new(); forms.len()];
    for (f, (_, step, y)) in forms.iter().enumerate() {
        run(step, y, 5)?;
        times[f].reserve(rounds);
    }
    for _ in 0..rounds {
        for (f, (_, step, y)) in forms.iter().enumerate() {
            times[f].push(run(step, y, steps)?);
        }
    }
    for ((name, _, _), t) in forms.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let ms = t[t.len() / 2];
        println!(
            "{{\"bench\": \"{name}\", \"impl\": \"ferrox\", \"ms\": {ms:.4}, \"steps_per_s\": {:.1}}}",
            1e3 / ms
        );
    }
    Ok(())
}
