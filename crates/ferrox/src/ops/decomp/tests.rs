//! Properties of the decompositions: reconstruction, orthogonality,
//! batching, bad input and empty matrices. Values against numpy are in
//! `tests/numpy_decomp.rs`, vmap and the missing derivative rules in
//! `tests/decomp_transforms.rs`.

use super::eig::{eig, eigvals};
use super::eigh::{eigh, eigvalsh};
use super::lu::{lu, lu_factor};
use super::qr::qr;
use super::svd::svd;
use crate::dtype::{Complex64, DType};
use crate::error::ErrorKind;
use crate::graph::array::Array;
use crate::ops::matmul::matmul;
use crate::ops::views::swapaxes;

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

fn f64s(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64)
        .expect("cast")
        .to_vec::<f64>()
        .expect("values")
}

fn assert_close(got: &Array, want: &Array, tol: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in f64s(got).iter().zip(f64s(want)).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: element {i}: {g} vs {w}");
    }
}

fn eye_like(n: usize, batch: &[usize]) -> Array {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    crate::ops::views::broadcast_to(
        &crate::ops::creation::eye(n, None, 0, DType::Float64).expect("eye"),
        &shape,
    )
    .expect("broadcast")
}

#[test]
fn qr_reconstructs_with_orthonormal_q() {
    for shape in [[2, 3, 3], [2, 5, 3], [2, 3, 5]] {
        let a = arr(&values(shape.iter().product(), 1), &shape);
        let (q, r) = qr(&a).expect("qr");
        let k = shape[1].min(shape[2]);
        assert_eq!(q.shape(), &[2, shape[1], k]);
        assert_eq!(r.shape(), &[2, k, shape[2]]);
        assert_close(&matmul(&q, &r).expect("qr"), &a, 1e-12, "Q R");
        let qtq = matmul(&swapaxes(&q, -1, -2).expect("t"), &q).expect("qtq");
        assert_close(&qtq, &eye_like(k, &[2]), 1e-12, "Q^T Q");
        let below = crate::ops::join::tril(&r, -1).expect("tril");
        assert!(f64s(&below).iter().all(|&v| v == 0.0));
    }
    // float32 stays float32, and a transposed (strided) input works.
    let a = arr(&values(12, 2), &[4, 3])
        .astype(DType::Float32)
        .expect("f32");
    let at = swapaxes(&a, 0, 1).expect("t");
    let (q, r) = qr(&at).expect("qr");
    assert_eq!((q.dtype(), r.dtype()), (DType::Float32, DType::Float32));
    assert_close(&matmul(&q, &r).expect("qr"), &at, 1e-5, "Q R f32");
}

#[test]
fn svd_reconstructs_and_orders_values() {
    for shape in [[3, 4, 4], [2, 5, 3], [2, 3, 5]] {
        let a = arr(&values(shape.iter().product(), 3), &shape);
        let usv = svd(&a, true).expect("svd");
        let (m, n) = (shape[1], shape[2]);
        let k = m.min(n);
        assert_eq!(usv[0].shape(), &[shape[0], m, m]);
        assert_eq!(usv[1].shape(), &[shape[0], k]);
        assert_eq!(usv[2].shape(), &[shape[0], n, n]);
        // U[:, :k] diag(S) Vt[:k]
        let u = crate::ops::views::slice(
            &usv[0],
            &[0, 0, 0],
            &[shape[0] as isize, m as isize, k as isize],
            &[1, 1, 1],
        )
        .expect("u");
        let vt = crate::ops::views::slice(
            &usv[2],
            &[0, 0, 0],
            &[shape[0] as isize, k as isize, n as isize],
            &[1, 1, 1],
        )
        .expect("vt");
        let us = crate::ops::binary::multiply(
            &u,
            &crate::ops::views::expand_dims(&usv[1], &[-2]).expect("s"),
        )
        .expect("us");
        assert_close(&matmul(&us, &vt).expect("usv"), &a, 1e-12, "U S Vt");
        let s = f64s(&usv[1]);
        for b in 0..shape[0] {
            assert!(s[b * k..(b + 1) * k].windows(2).all(|w| w[0] >= w[1]));
        }
        let s_only = svd(&a, false).expect("svd");
        assert_eq!(s_only.len(), 1);
        assert_close(&s_only[0], &usv[1], 1e-12, "S only");
        for (f, d) in [(&usv[0], m), (&usv[2], n)] {
            let ftf = matmul(&swapaxes(f, -1, -2).expect("t"), f).expect("ftf");
            assert_close(&ftf, &eye_like(d, &[shape[0]]), 1e-12, "unitary");
        }
    }
}

#[test]
fn svd_of_complex_input() {
    let v: Vec<Complex64> = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)]
        .iter()
        .map(|&(r, i)| Complex64::new(r, i))
        .collect();
    let a = Array::from_slice(&v, &[2, 2]).expect("c");
    let usv = svd(&a, true).expect("svd");
    assert_eq!(
        (usv[0].dtype(), usv[1].dtype(), usv[2].dtype()),
        (DType::Complex64, DType::Float32, DType::Complex64)
    );
    let s = usv[1].astype(DType::Complex64).expect("s");
    let us = crate::ops::binary::multiply(
        &usv[0],
        &crate::ops::views::expand_dims(&s, &[-2]).expect("s"),
    )
    .expect("us");
    let back = matmul(&us, &usv[2])
        .expect("back")
        .to_vec::<Complex64>()
        .expect("v");
    for (g, w) in back.iter().zip(&v) {
        assert!((g - w).norm() < 1e-5, "{g} vs {w}");
    }
}

#[test]
fn eigh_diagonalises_and_reads_one_triangle() {
    let b = arr(&values(2 * 16, 4), &[2, 4, 4]);
    let a = crate::ops::binary::add(&b, &swapaxes(&b, -1, -2).expect("t")).expect("sym");
    let (w, v) = eigh(&a, false).expect("eigh");
    let av = matmul(&a, &v).expect("av");
    let vw =
        crate::ops::binary::multiply(&v, &crate::ops::views::expand_dims(&w, &[-2]).expect("w"))
            .expect("vw");
    assert_close(&av, &vw, 1e-12, "A V = V w");
    let wv = f64s(&w);
    assert!(wv[..4].windows(2).all(|p| p[0] <= p[1]));
    assert_close(
        &eigvalsh(&a, false).expect("eigvalsh"),
        &w,
        1e-12,
        "eigvalsh",
    );
    // Only the named triangle matters.
    let m = arr(&[1.0, 999.0, 2.0, 3.0], &[2, 2]);
    let lower = f64s(&eigvalsh(&m, false).expect("L"));
    let sym_l = f64s(&eigvalsh(&arr(&[1.0, 2.0, 2.0, 3.0], &[2, 2]), false).expect("L"));
    assert_eq!(lower, sym_l);
    let upper = f64s(&eigvalsh(&m, true).expect("U"));
    assert!(upper[1] > 900.0);
}

#[test]
fn eig_and_eigvals_agree() {
    let a = arr(&values(3 * 25, 5), &[3, 5, 5]);
    let (w, v) = eig(&a).expect("eig");
    assert_eq!((w.dtype(), v.dtype()), (DType::Complex64, DType::Complex64));
    let ac = a.astype(DType::Complex64).expect("c");
    let av = matmul(&ac, &v)
        .expect("av")
        .to_vec::<Complex64>()
        .expect("av");
    let vw =
        crate::ops::binary::multiply(&v, &crate::ops::views::expand_dims(&w, &[-2]).expect("w"))
            .expect("vw")
            .to_vec::<Complex64>()
            .expect("vw");
    for (g, h) in av.iter().zip(&vw) {
        assert!((g - h).norm() < 1e-5, "{g} vs {h}");
    }
    let only = eigvals(&a)
        .expect("eigvals")
        .to_vec::<Complex64>()
        .expect("w");
    for (g, h) in only.iter().zip(w.to_vec::<Complex64>().expect("w")) {
        assert!((g - h).norm() < 1e-5, "{g} vs {h}");
    }
}

#[test]
fn lu_pivots_permutation_and_factors_agree() {
    for shape in [[2, 4, 4], [1, 5, 3], [1, 3, 5], [3, 6, 2]] {
        let a = arr(&values(shape.iter().product(), 6), &shape);
        let (m, n) = (shape[1], shape[2]);
        let (p, l, u) = lu(&a).expect("lu");
        assert_eq!(p.dtype(), DType::UInt32);
        let idx = crate::ops::views::expand_dims(&p, &[-1]).expect("p");
        let lp = crate::ops::indexing::take_along_axis(&l, &idx, Some(-2)).expect("take");
        assert_close(&matmul(&lp, &u).expect("lu"), &a, 1e-12, "L[P] U");
        // The pivots replay to the same permutation, and the packed matrix
        // is L and U.
        let (packed, piv) = lu_factor(&a).expect("lu_factor");
        let piv = piv.to_vec::<u32>().expect("piv");
        let perm = p.to_vec::<u32>().expect("perm");
        let k = m.min(n);
        for b in 0..shape[0] {
            let mut order: Vec<usize> = (0..m).collect();
            for (i, &q) in piv[b * k..(b + 1) * k].iter().enumerate() {
                order.swap(i, q as usize);
            }
            for (r, &row) in order.iter().enumerate() {
                assert_eq!(perm[b * m + row] as usize, r, "{shape:?}");
            }
        }
        let low = crate::ops::join::tril(&packed, -1).expect("tril");
        let l_strict = crate::ops::join::tril(&l, -1).expect("tril");
        let stop = [shape[0] as isize, m as isize, k as isize];
        let low = crate::ops::views::slice(&low, &[0, 0, 0], &stop, &[1, 1, 1]).expect("slice");
        assert_close(&low, &l_strict, 0.0, "packed L");
    }
    // Singular matrices factor.
    let s = arr(&[1.0, 2.0, 2.0, 4.0], &[2, 2]);
    let (_, _, u) = lu(&s).expect("lu");
    assert_eq!(f64s(&u)[3], 0.0);
}

#[test]
fn bad_input_is_an_error_naming_the_op() {
    let v = arr(&[1.0, 2.0], &[2]);
    let rect = arr(&values(6, 9), &[2, 3]);
    let ints = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).expect("ints");
    let half = arr(&[1.0, 2.0, 3.0, 4.0], &[2, 2])
        .astype(DType::Float16)
        .expect("f16");
    let cplx = crate::ops::creation::ones(&[2, 2], DType::Complex64).expect("c");
    let checks: Vec<(&str, crate::error::Result<()>, ErrorKind)> = vec![
        ("qr", qr(&v).map(|_| ()), ErrorKind::Shape),
        ("qr", qr(&ints).map(|_| ()), ErrorKind::Value),
        ("qr", qr(&cplx).map(|_| ()), ErrorKind::Value),
        ("svd", svd(&half, true).map(|_| ()), ErrorKind::Value),
        ("svd", svd(&v, true).map(|_| ()), ErrorKind::Shape),
        ("eigh", eigh(&rect, false).map(|_| ()), ErrorKind::Shape),
        (
            "eigvalsh",
            eigvalsh(&ints, false).map(|_| ()),
            ErrorKind::Value,
        ),
        ("eig", eig(&rect).map(|_| ()), ErrorKind::Shape),
        ("eigvals", eigvals(&v).map(|_| ()), ErrorKind::Shape),
        ("lu_factor", lu_factor(&cplx).map(|_| ()), ErrorKind::Value),
        ("lu", lu(&ints).map(|_| ()), ErrorKind::Value),
        ("lu", lu(&Array::from(1.0)).map(|_| ()), ErrorKind::Shape),
    ];
    for (op, r, kind) in checks {
        let e = r.expect_err(op);
        assert!(e.to_string().starts_with(&format!("{op}:")), "{e}");
        assert_eq!(e.kind(), kind, "{e}");
    }
    // Non-finite input to an iterative solver is an evaluation error.
    let nan = arr(&[1.0, f64::NAN, 0.0, 1.0], &[2, 2]);
    let e = svd(&nan, false).expect("svd")[0].eval().expect_err("nan");
    assert!(e.to_string().starts_with("svd: matrix 0"), "{e}");
    let e = eigh(&nan, false).expect("eigh").0.eval().expect_err("nan");
    assert!(e.to_string().starts_with("eigh:"), "{e}");
}

#[test]
fn empty_matrices() {
    let z = |shape: &[usize]| crate::ops::creation::zeros(shape, DType::Float32).expect("zeros");
    let (q, r) = qr(&z(&[5, 0])).expect("qr");
    assert_eq!((q.shape(), r.shape()), (&[5, 0][..], &[0, 0][..]));
    q.eval().expect("q");
    let usv = svd(&z(&[2, 5, 0]), true).expect("svd");
    assert_eq!(usv[0].shape(), &[2, 5, 5]);
    assert_eq!(f64s(&usv[0])[..6], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(usv[1].shape(), &[2, 0]);
    let (w, v) = eigh(&z(&[3, 0, 0]), false).expect("eigh");
    assert_eq!((w.shape(), v.shape()), (&[3, 0][..], &[3, 0, 0][..]));
    w.eval().expect("w");
    let (w, _) = eig(&z(&[0, 4, 4])).expect("eig");
    assert_eq!(w.shape(), &[0, 4]);
    w.eval().expect("w");
    let (p, l, u) = lu(&z(&[3, 0])).expect("lu");
    assert_eq!(p.to_vec::<u32>().expect("p"), vec![0, 1, 2]);
    assert_eq!((l.shape(), u.shape()), (&[3, 0][..], &[0, 0][..]));
}
