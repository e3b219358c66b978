//! Op benchmarks for bench/run.py: prints one JSON line per case with the
//! median wall time in ms (evaluation included).
//!
//! Run: cargo run --release --example bench_ops [-- --quick]
#![allow(clippy::cloned_ref_to_slice_refs)] // test code: kept as written
use ferrox::*;
use std::time::Instant;

fn median_ms(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    f()?;
    let mut t: Vec<f64> = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(|a, b| a.total_cmp(b));
    Ok(t[reps / 2])
}

fn report(bench: &str, ms: f64) {
    println!("{{\"bench\": \"{bench}\", \"impl\": \"ferrox\", \"ms\": {ms:.4}}}");
}

/// Memory a call adds at its peak, beside the size of its `outputs`
/// results of 16M f32 each (what a fused chain should add: nothing more).
fn report_peak(bench: &str, outputs: usize, mut call: impl FnMut() -> Result<()>) -> Result<()> {
    call()?;
    clear_cache();
    reset_peak_memory();
    let before = get_active_memory();
    call()?;
    let added = get_peak_memory().saturating_sub(before);
    println!(
        "{{\"bench\": \"{bench}\", \"impl\": \"ferrox\", \"added_mib\": {:.1}, \"output_mib\": {:.1}}}",
        added as f64 / (1 << 20) as f64,
        (outputs * (4usize << 24)) as f64 / (1 << 20) as f64
    );
    Ok(())
}

fn random(shape: &[usize], seed: u32) -> Result<Array> {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(2654435761) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 4.0 - 2.0
        })
        .collect();
    Array::from_slice(&v, shape)
}

fn main() -> Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 3 } else { 9 };
    for n in [1024usize, 2048] {
        let a = random(&[n, n], 1)?;
        let b = random(&[n, n], 2)?;
        let ms = median_ms(reps, || matmul(&a, &b)?.eval())?;
        report(&format!("matmul_f32_{n}"), ms);
        eprintln!(
            "matmul {n}: {:.1} GFLOP/s",
            2.0 * (n * n * n) as f64 / ms / 1e6
        );
    }
    let x = random(&[1 << 24], 3)?;
    report(
        "x*2+1_16M_f32",
        median_ms(reps, || ((&x * 2.0)? + 1.0)?.eval())?,
    );
    report(
        "tanh_exp_16M_f32",
        median_ms(reps, || {
            let t = multiply(&tanh(&(&x * 0.5)?)?, &x)?;
            add(&t, &exp(&negative(&multiply(&x, &x)?)?)?)?.eval()
        })?,
    );
    let fused = compile(|xs: &[Array]| {
        let x = &xs[0];
        let t = multiply(&tanh(&(x * 0.5)?)?, x)?;
        Ok(vec![add(&t, &exp(&negative(&multiply(x, x)?)?)?)?])
    });
    report(
        "tanh_exp_16M_f32_compiled",
        median_ms(reps, || fused.call(std::slice::from_ref(&x))?[0].eval())?,
    );
    // Peak memory of the fused chain: the input is resident; the call
    // should add only its output (64 MiB), no intermediates.
    report_peak("tanh_exp_16M_f32_compiled_peak", 1, || {
        fused.call(std::slice::from_ref(&x))?[0].eval()
    })?;
    let affine = compile(|xs: &[Array]| Ok(vec![((&xs[0] * 2.0)? + 1.0)?]));
    report(
        "x*2+1_16M_f32_compiled",
        median_ms(reps, || affine.call(std::slice::from_ref(&x))?[0].eval())?,
    );
    // Two results from one chain: tanh and its derivative 1 - tanh².
    let tanh_grad = |xs: &[Array]| -> Result<Vec<Array>> {
        let y = tanh(&xs[0])?;
        let d = subtract(&Array::from(1.0f32), &multiply(&y, &y)?)?;
        Ok(vec![y, d])
    };
    report(
        "tanh_grad_16M_f32",
        median_ms(reps, || eval(&tanh_grad(std::slice::from_ref(&x))?))?,
    );
    let two = compile(tanh_grad);
    report(
        "tanh_grad_16M_f32_compiled",
        median_ms(reps, || eval(&two.call(std::slice::from_ref(&x))?))?,
    );
    report_peak("tanh_grad_16M_f32_compiled_peak", 2, || {
        eval(&two.call(std::slice::from_ref(&x))?)
    })?;
    // Quotient and remainder: one kernel with two outputs against the two
    // ops a caller would otherwise run (same operands, same results).
    let d = random(&[1 << 24], 6)?;
    let d = (&d + 3.0)?; // divisors in [1, 5): no zeros
    d.eval()?;
    report(
        "divmod_16M_f32",
        median_ms(reps, || {
            let (q, r) = divmod(&x, &d)?;
            eval(&[q, r])
        })?,
    );
    report(
        "floor_divide+remainder_16M_f32",
        median_ms(reps, || eval(&[floor_divide(&x, &d)?, remainder(&x, &d)?]))?,
    );
    report(
        "sum_16M_f32",
        median_ms(reps, || sum(&x, None, false)?.eval())?,
    );
    let s = random(&[4096, 4096], 4)?;
    report(
        "softmax_4096x4096_f32",
        median_ms(reps, || softmax(&s, Some(&[-1]), false)?.eval())?,
    );
    let r = random(&[1 << 20], 5)?;
    let z = r.astype(DType::Complex64)?;
    z.eval()?;
    report(
        "fft_1M_c64",
        median_ms(reps, || fft::fft(&z, None, -1)?.eval())?,
    );
    report(
        "rfft_1M_f32",
        median_ms(reps, || fft::rfft(&r, None, -1)?.eval())?,
    );
    let z2 = reshape(&z, &[1024, 1024])?;
    report(
        "fft2_1024x1024_c64",
        median_ms(reps, || fft::fft2(&z2, None, None)?.eval())?,
    );
    Ok(())
}
