//! Times the decompositions on `n x n` matrices (default 512) and prints
//! one JSON object per line: `{"op", "dtype", "n", "ms"}` (median of
//! `reps` runs after a warm-up, each building the op's node and evaluating
//! it; the input is already evaluated). `bench/linalg_decomp.py` runs this beside numpy and MLX and prints
//! ratios.
//!
//! ```sh
//! cargo run --release -p ferrox --example decomp_bench -- 512 7
//! ```

use ferrox::{Array, DType, linalg};
use std::time::Instant;

type Op = fn(&Array) -> ferrox::Result<Vec<Array>>;

fn main() -> ferrox::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(512);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    // A fixed, well-conditioned input: uniform in [-1, 1) plus n on the
    // diagonal for the symmetric (cholesky) case.
    let mut s = 12345u64;
    let vals: Vec<f64> = (0..n * n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    let a64 = Array::from_slice(&vals, &[n, n])?;
    let sym64 = ferrox::add(&a64, &ferrox::swapaxes(&a64, 0, 1)?)?;
    let spd64 = ferrox::add(
        &ferrox::matmul(&a64, &ferrox::swapaxes(&a64, 0, 1)?)?,
        &ferrox::multiply(
            &ferrox::eye(n, None, 0, DType::Float64)?,
            &Array::scalar(n as f64),
        )?,
    )?;
    let ops: [(&str, Op, u8); 12] = [
        ("qr", |a| linalg::qr(a).map(|(q, r)| vec![q, r]), 0),
        ("svd", |a| linalg::svd(a, true), 0),
        ("svdvals", |a| linalg::svd(a, false), 0),
        (
            "eigh",
            |a| linalg::eigh(a, false).map(|(w, v)| vec![w, v]),
            1,
        ),
        ("eigvalsh", |a| Ok(vec![linalg::eigvalsh(a, false)?]), 1),
        ("eig", |a| linalg::eig(a).map(|(w, v)| vec![w, v]), 0),
        ("eigvals", |a| Ok(vec![linalg::eigvals(a)?]), 0),
        (
            "lu_factor",
            |a| linalg::lu_factor(a).map(|(l, p)| vec![l, p]),
            0,
        ),
        ("det", |a| Ok(vec![linalg::det(a)?]), 0),
        ("pinv", |a| Ok(vec![linalg::pinv(a)?]), 0),
        ("inv", |a| Ok(vec![linalg::inv(a)?]), 0),
        ("cholesky", |a| Ok(vec![linalg::cholesky(a, false)?]), 2),
    ];
    for dtype in [DType::Float32, DType::Float64] {
        let inputs = [
            a64.astype(dtype)?,
            sym64.astype(dtype)?,
            spd64.astype(dtype)?,
        ];
        for x in &inputs {
            x.eval()?;
        }
        for (name, f, which) in ops {
            let x = &inputs[which as usize];
            let mut times = vec![];
            for _ in 0..reps + 1 {
                // `f` builds a new node each run (results are not cached
                // across runs).
                let t = Instant::now();
                let outs = f(x)?;
                ferrox::eval(&outs)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.remove(0); // warm-up
            times.sort_by(f64::total_cmp);
            let ms = times[times.len() / 2];
            println!("{{\"op\": \"{name}\", \"dtype\": \"{dtype}\", \"n\": {n}, \"ms\": {ms:.4}}}");
        }
    }
    Ok(())
}
