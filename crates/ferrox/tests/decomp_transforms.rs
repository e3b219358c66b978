//! The decompositions under the transforms: vmap against a loop, and the
//! derivative rules they lack (as in MLX 0.32, an `Unsupported` error naming
//! the primitive).

use ferrox::{Array, Complex64, DType, ErrorKind, linalg};

fn arr(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).expect("array")
}

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

#[test]
fn vmap_matches_a_loop() {
    use ferrox::vmap;
    let x = arr(&values(3 * 4 * 4, 7), &[4, 3, 4]); // batch on axis 1
    let f = vmap(
        |xs| {
            let (q, r) = linalg::qr(&xs[0])?;
            let mut out = vec![q, r];
            out.extend(linalg::svd(&xs[0], true)?);
            let (p, l, u) = linalg::lu(&xs[0])?;
            out.extend([p, l, u]);
            out.push(linalg::eigvals(&xs[0])?);
            Ok(out)
        },
        &[Some(1)],
        &[Some(0)],
    );
    let batched = f(std::slice::from_ref(&x)).expect("vmap");
    for b in 0..3usize {
        let bi = b as isize;
        let xb = ferrox::squeeze(
            &ferrox::slice(&x, &[0, bi, 0], &[4, bi + 1, 4], &[1, 1, 1]).expect("slice"),
            Some(&[1]),
        )
        .expect("squeeze");
        let (q, r) = linalg::qr(&xb).expect("qr");
        let mut want = vec![q, r];
        want.extend(linalg::svd(&xb, true).expect("svd"));
        let (p, l, u) = linalg::lu(&xb).expect("lu");
        want.extend([p, l, u]);
        want.push(linalg::eigvals(&xb).expect("eigvals"));
        for (k, (got, w)) in batched.iter().zip(&want).enumerate() {
            let nd = got.ndim() as isize;
            let mut start = vec![0isize; got.ndim()];
            let mut stop: Vec<isize> = got.shape().iter().map(|&d| d as isize).collect();
            (start[0], stop[0]) = (bi, bi + 1);
            let g = ferrox::slice(got, &start, &stop, &vec![1; nd as usize]).expect("slice");
            let g = ferrox::squeeze(&g, Some(&[0])).expect("squeeze");
            let (gv, wv) = (
                ferrox::astype(&g, DType::Complex64).expect("c"),
                ferrox::astype(w, DType::Complex64).expect("c"),
            );
            let (gv, wv) = (
                gv.to_vec::<Complex64>().expect("g"),
                wv.to_vec::<Complex64>().expect("w"),
            );
            for (a, c) in gv.iter().zip(&wv) {
                assert!((a - c).norm() < 1e-5, "output {k}, batch {b}: {a} vs {c}");
            }
        }
    }
}

#[test]
fn no_derivative_rules_as_in_mlx() {
    use ferrox::vjp;
    let a = arr(&values(9, 8), &[3, 3]);
    let ones = ferrox::ones(&[3, 3], DType::Float64).expect("ones");
    let ones_k = ferrox::ones(&[3], DType::Float64).expect("ones");
    type Op = Box<dyn Fn(&Array) -> ferrox::Result<Array>>;
    let cases: Vec<(&str, Op, &Array)> = vec![
        ("qr", Box::new(|x| Ok(linalg::qr(x)?.1)), &ones),
        (
            "svd",
            Box::new(|x| Ok(linalg::svd(x, false)?.remove(0))),
            &ones_k,
        ),
        ("eigh", Box::new(|x| Ok(linalg::eigh(x, false)?.0)), &ones_k),
        (
            "lu_factor",
            Box::new(|x| Ok(linalg::lu_factor(x)?.0)),
            &ones,
        ),
    ];
    for (name, f, ct) in cases {
        let e = vjp(
            |xs| Ok(vec![f(&xs[0])?]),
            std::slice::from_ref(&a),
            std::slice::from_ref(ct),
        )
        .map(|_| ())
        .expect_err(name);
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{name}: {e}");
        assert!(
            e.to_string().contains(name) && e.to_string().contains("vjp"),
            "{e}"
        );
    }
}
