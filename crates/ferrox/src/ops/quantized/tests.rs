//! Unit tests of the quantization ops: round trips, the packed product
//! against dequantize + matmul, shapes and errors.

use super::*;
use crate::error::ErrorKind;
use crate::ops::matmul::matmul;
use crate::ops::views::swapaxes;
use proptest::prelude::*;

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn arr(shape: &[usize], seed: u64) -> Array {
    let n = shape.iter().product();
    Array::from_slice(&values(n, seed), shape).unwrap()
}

fn deq(wq: &Array, s: &Array, b: Option<&Array>, gs: usize, bits: usize, mode: &str) -> Array {
    dequantize(
        wq,
        s,
        b,
        Some(gs),
        Some(bits),
        mode,
        None,
        Some(DType::Float32),
    )
    .unwrap()
}

fn max_abs_diff(a: &Array, b: &Array) -> f32 {
    let (a, b) = (
        a.astype(DType::Float32).unwrap().to_vec::<f32>().unwrap(),
        b.astype(DType::Float32).unwrap().to_vec::<f32>().unwrap(),
    );
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn round_trip_error_is_within_a_step() {
    let w = arr(&[8, 256], 1);
    let wv = w.to_vec::<f32>().unwrap();
    for gs in [32usize, 64, 128] {
        for bits in [1usize, 2, 3, 4, 5, 6, 8] {
            let (wq, s, b) = quantize(&w, Some(gs), Some(bits), "affine", None).unwrap();
            assert_eq!(wq.shape(), &[8, 256 * bits / 32]);
            assert_eq!(wq.dtype(), DType::UInt32);
            assert_eq!(s.shape(), &[8, 256 / gs]);
            let b = b.unwrap();
            let back = deq(&wq, &s, Some(&b), gs, bits, "affine")
                .to_vec::<f32>()
                .unwrap();
            let sv = s.to_vec::<f32>().unwrap();
            for (i, (&x, &y)) in wv.iter().zip(&back).enumerate() {
                // Half a step, except near the edge opposite the one the
                // zero point snaps to (MLX's bound: one step).
                let step = sv[i / gs].abs();
                assert!(
                    (x - y).abs() <= step + 1e-6,
                    "gs {gs} bits {bits} element {i}: {x} vs {y} (scale {step})"
                );
            }
        }
    }
}

#[test]
fn zeros_and_constants_round_trip_exactly() {
    for bits in [2usize, 3, 4, 8] {
        let z = crate::ops::creation::zeros(&[4, 128], DType::Float32).unwrap();
        let (wq, s, b) = quantize(&z, Some(64), Some(bits), "affine", None).unwrap();
        let back = deq(&wq, &s, b.as_ref(), 64, bits, "affine");
        assert!(back.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
        let c = crate::ops::creation::full(&[2, 64], 0.75, DType::Float32).unwrap();
        let (wq, s, b) = quantize(&c, Some(64), Some(bits), "affine", None).unwrap();
        let back = deq(&wq, &s, b.as_ref(), 64, bits, "affine");
        assert!(back.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.75));
    }
    for mode in ["mxfp4", "mxfp8", "nvfp4"] {
        let z = crate::ops::creation::zeros(&[4, 128], DType::Float32).unwrap();
        let (wq, s, b) = quantize(&z, None, None, mode, None).unwrap();
        assert!(b.is_none());
        assert_eq!(s.dtype(), DType::UInt8);
        let back = dequantize(&wq, &s, None, None, None, mode, None, None).unwrap();
        assert_eq!(back.dtype(), DType::BFloat16);
        assert_eq!(max_abs_diff(&back, &z), 0.0);
    }
}

#[test]
fn float_modes_represent_their_grids_exactly() {
    // Values on the e2m1 grid times a power of two survive mxfp4.
    let lut = crate::backend::cpu::quantized::FP4_LUT;
    let v: Vec<f32> = (0..128).map(|i| lut[(i * 5 + 1) % 16] * 0.25).collect();
    let mut v2 = v.clone();
    for g in 0..4 {
        v2[g * 32] = 1.5; // the group maximum: 6 * 0.25
    }
    let w = Array::from_slice(&v2, &[1, 128]).unwrap();
    let (wq, s, _) = quantize(&w, None, None, "mxfp4", None).unwrap();
    let back = deq(&wq, &s, None, 32, 4, "mxfp4");
    assert_eq!(max_abs_diff(&back, &w), 0.0);
    let (wq, s, _) = quantize(&w, None, None, "nvfp4", None).unwrap();
    assert_eq!(wq.shape(), &[1, 16]);
    assert_eq!(s.shape(), &[1, 8]);
    let w8 = arr(&[2, 64], 5);
    let (wq, s, _) = quantize(&w8, None, None, "mxfp8", None).unwrap();
    let back = deq(&wq, &s, None, 32, 8, "mxfp8");
    assert!(max_abs_diff(&back, &w8) < 0.15);
}

/// `quantized_matmul` against `dequantize` then `matmul`.
fn check_qmm(m: usize, k: usize, n: usize, gs: usize, bits: usize, transpose: bool, seed: u64) {
    let wshape = if transpose { [n, k] } else { [k, n] };
    let w = arr(&wshape, seed);
    let (wq, s, b) = quantize(&w, Some(gs), Some(bits), "affine", None).unwrap();
    let b = b.unwrap();
    let wd = deq(&wq, &s, Some(&b), gs, bits, "affine");
    let x = arr(&[m, k], seed + 1);
    let y = quantized_matmul(
        &x,
        &wq,
        &s,
        Some(&b),
        transpose,
        Some(gs),
        Some(bits),
        "affine",
    )
    .unwrap();
    let want = if transpose {
        matmul(&x, &swapaxes(&wd, -1, -2).unwrap()).unwrap()
    } else {
        matmul(&x, &wd).unwrap()
    };
    assert_eq!(y.shape(), want.shape());
    let scale = (k as f32).sqrt();
    let d = max_abs_diff(&y, &want);
    assert!(
        d <= 2e-5 * scale * 4.0,
        "m {m} k {k} n {n} gs {gs} bits {bits} t {transpose}: {d}"
    );
}

#[test]
fn product_matches_dequantize_then_matmul() {
    // One row (the fused decode kernel), every width and group size.
    for bits in [1usize, 2, 3, 4, 5, 6, 8] {
        for gs in [32usize, 64, 128] {
            check_qmm(1, 256, 40, gs, bits, true, 11 + bits as u64);
        }
    }
    for bits in [2usize, 3, 4, 8] {
        for transpose in [true, false] {
            check_qmm(3, 128, 64, 64, bits, transpose, bits as u64);
            // Enough rows for the tiled path.
            check_qmm(
                crate::backend::cpu::quantized::TILE_ROWS + 3,
                64,
                160,
                32,
                bits,
                transpose,
                7,
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn product_matches_dequantize_then_matmul_prop(
        m in 1usize..24,
        kg in 1usize..4,
        ng in 1usize..4,
        gi in 0usize..3,
        bi in 0usize..7,
        transpose in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let gs = [32usize, 64, 128][gi];
        let bits = [1usize, 2, 3, 4, 5, 6, 8][bi];
        let (k, n) = if transpose { (kg * gs, ng * 8 + 1) } else { (kg * 8 + 1, ng * gs) };
        check_qmm(m, k, n, gs, bits, transpose, seed);
    }
}

#[test]
fn half_precision_products_accumulate_in_f32() {
    for dt in [DType::Float16, DType::BFloat16] {
        let w = arr(&[32, 128], 3).astype(dt).unwrap();
        let (wq, s, b) = quantize(&w, Some(64), Some(4), "affine", None).unwrap();
        assert_eq!(s.dtype(), dt);
        let b = b.unwrap();
        let x = arr(&[2, 128], 4).astype(dt).unwrap();
        let y = quantized_matmul(&x, &wq, &s, Some(&b), true, Some(64), Some(4), "affine").unwrap();
        assert_eq!(y.dtype(), dt);
        let wd = dequantize(&wq, &s, Some(&b), Some(64), Some(4), "affine", None, None).unwrap();
        let want = matmul(
            &x.astype(DType::Float32).unwrap(),
            &swapaxes(&wd.astype(DType::Float32).unwrap(), -1, -2).unwrap(),
        )
        .unwrap();
        assert!(max_abs_diff(&y, &want) < 0.1, "{dt}");
    }
}

#[test]
fn batches_and_vectors_broadcast() {
    let w = arr(&[3, 16, 64], 9);
    let (wq, s, b) = quantize(&w, Some(32), Some(4), "affine", None).unwrap();
    let b = b.unwrap();
    let x = arr(&[2, 1, 5, 64], 10);
    let y = quantized_matmul(&x, &wq, &s, Some(&b), true, Some(32), Some(4), "affine").unwrap();
    assert_eq!(y.shape(), &[2, 3, 5, 16]);
    let wd = deq(&wq, &s, Some(&b), 32, 4, "affine");
    let want = matmul(&x, &swapaxes(&wd, -1, -2).unwrap()).unwrap();
    assert!(max_abs_diff(&y, &want) < 1e-4);
    // A vector x against a 2-D w.
    let w2 = arr(&[16, 64], 11);
    let (wq, s, b) = quantize(&w2, Some(32), Some(4), "affine", None).unwrap();
    let v = arr(&[64], 12);
    let y = quantized_matmul(&v, &wq, &s, b.as_ref(), true, Some(32), Some(4), "affine").unwrap();
    assert_eq!(y.shape(), &[16]);
    // Non-contiguous x (a transposed view).
    let xt = swapaxes(&arr(&[64, 7], 13), 0, 1).unwrap();
    let y = quantized_matmul(&xt, &wq, &s, b.as_ref(), true, Some(32), Some(4), "affine").unwrap();
    let wd = deq(&wq, &s, b.as_ref(), 32, 4, "affine");
    let want = matmul(&xt, &swapaxes(&wd, -1, -2).unwrap()).unwrap();
    assert!(max_abs_diff(&y, &want) < 1e-4);
}

#[test]
fn gather_qmm_matches_gathered_products() {
    let w = arr(&[3, 8, 64], 20);
    let (wq, s, b) = quantize(&w, Some(64), Some(4), "affine", None).unwrap();
    let b = b.unwrap();
    let x = arr(&[4, 2, 64], 21);
    let li = Array::from_slice(&[0u32, 3, 1], &[3]).unwrap();
    let ri = Array::from_slice(&[2u32, 0, 1], &[3]).unwrap();
    let y = gather_qmm(
        &x,
        &wq,
        &s,
        Some(&b),
        Some(&li),
        Some(&ri),
        true,
        Some(64),
        Some(4),
        "affine",
        false,
    )
    .unwrap();
    assert_eq!(y.shape(), &[3, 2, 8]);
    let wd = deq(&wq, &s, Some(&b), 64, 4, "affine");
    let want = crate::ops::matmul_forms::gather_mm(
        &x,
        &swapaxes(&wd, -1, -2).unwrap(),
        Some(&li),
        Some(&ri),
    )
    .unwrap();
    assert!(max_abs_diff(&y, &want) < 1e-4);
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let w = arr(&[4, 64], 30);
    let e = quantize(&w, Some(48), Some(4), "affine", None).unwrap_err();
    assert!(e.to_string().starts_with("quantize:"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Value);
    assert!(quantize(&w, Some(32), Some(7), "affine", None).is_err());
    assert!(quantize(&w, Some(64), Some(4), "int4", None).is_err());
    assert!(quantize(&arr(&[64], 1), Some(64), Some(4), "affine", None).is_err());
    assert!(quantize(&arr(&[2, 48], 1), Some(32), Some(4), "affine", None).is_err());
    let wi = Array::from_slice(&[1i32; 64], &[1, 64]).unwrap();
    assert_eq!(
        quantize(&wi, None, None, "affine", None)
            .unwrap_err()
            .kind(),
        ErrorKind::Dtype
    );
    assert!(quantize(&w, Some(64), None, "mxfp4", None).is_err());
    let (wq, s, b) = quantize(&w, Some(32), Some(4), "affine", None).unwrap();
    let b = b.unwrap();
    let x = arr(&[2, 32], 31);
    let e = quantized_matmul(&x, &wq, &s, Some(&b), true, Some(32), Some(4), "affine").unwrap_err();
    assert!(e.to_string().contains("[2, 32]"), "{e}");
    // Wrong group size for these scales.
    assert!(
        quantized_matmul(
            &arr(&[2, 64], 1),
            &wq,
            &s,
            Some(&b),
            true,
            Some(64),
            Some(4),
            "affine"
        )
        .is_err()
    );
    // Missing biases for affine, biases for mxfp4.
    assert!(
        quantized_matmul(
            &arr(&[2, 64], 1),
            &wq,
            &s,
            None,
            true,
            Some(32),
            Some(4),
            "affine"
        )
        .is_err()
    );
    assert!(dequantize(&wq, &s, Some(&b), None, None, "mxfp4", None, None).is_err());
    // A float w where packed codes are expected.
    assert!(dequantize(&w, &s, Some(&b), Some(32), Some(4), "affine", None, None).is_err());
    // Scales of the wrong shape.
    let s_bad = arr(&[4, 3], 2);
    assert!(
        dequantize(
            &wq,
            &s_bad,
            Some(&s_bad),
            Some(32),
            Some(4),
            "affine",
            None,
            None
        )
        .is_err()
    );
    assert!(
        dequantize(
            &wq,
            &s,
            Some(&b),
            Some(32),
            Some(4),
            "affine",
            None,
            Some(DType::Int32)
        )
        .is_err()
    );
    let gsc = Array::from_slice(&[1.0f32], &[1]).unwrap();
    assert!(quantize(&w, Some(32), Some(4), "affine", Some(&gsc)).is_err());
}

/// `x` through quantize and dequantize in `mode` (f32), as MLX's tests
/// build the reference of `qqmm`.
fn round_trip_f32(x: &Array, mode: &str, g: Option<&Array>) -> Array {
    let (q, s, _) = quantize(x, None, None, mode, g).unwrap();
    dequantize(&q, &s, None, None, None, mode, g, Some(DType::Float32)).unwrap()
}

fn amax(a: &Array) -> Array {
    crate::ops::reduce::max(&crate::ops::unary::abs(a).unwrap(), None, false).unwrap()
}

#[test]
fn qqmm_matches_the_product_of_round_trips() {
    for mode in ["nvfp4", "mxfp8", "mxfp4"] {
        for (m, n, k) in [(1, 64, 256), (3, 24, 64), (1, 67, 512)] {
            for global in [false, true] {
                if global && mode != "nvfp4" {
                    continue;
                }
                let x = arr(&[m, k], 3 + m as u64);
                let w = arr(&[n, k], 5 + n as u64);
                let (gx, gw) = if global {
                    (Some(amax(&x)), Some(amax(&w)))
                } else {
                    (None, None)
                };
                let (wq, s, _) = quantize(&w, None, None, mode, gw.as_ref()).unwrap();
                let want = matmul(
                    &round_trip_f32(&x, mode, gx.as_ref()),
                    &swapaxes(&round_trip_f32(&w, mode, gw.as_ref()), -1, -2).unwrap(),
                )
                .unwrap();
                let y = qqmm(
                    &x,
                    &wq,
                    Some(&s),
                    None,
                    None,
                    mode,
                    gx.as_ref(),
                    gw.as_ref(),
                )
                .unwrap();
                assert_eq!(y.shape(), &[m, n]);
                let err = max_abs_diff(&y, &want);
                assert!(err < 1e-3, "{mode} {m}x{n}x{k} global={global}: {err}");
                // A float w is quantized on the fly to the same matrix.
                let yf = qqmm(&x, &w, None, None, None, mode, gx.as_ref(), gw.as_ref()).unwrap();
                let err = max_abs_diff(&yf, &want);
                assert!(err < 1e-3, "float w {mode} {m}x{n}x{k}: {err}");
            }
        }
    }
    // A vector x gives a vector; the result has x's dtype.
    let w = arr(&[5, 32], 9);
    let (wq, s, _) = quantize(&w, None, None, "mxfp8", None).unwrap();
    let v = arr(&[32], 10).astype(DType::Float16).unwrap();
    let y = qqmm(&v, &wq, Some(&s), None, None, "mxfp8", None, None).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[5][..], DType::Float16));
}

#[test]
fn gather_qqmm_matches_gathered_round_trips() {
    let x = arr(&[3, 2, 32], 21);
    let w = arr(&[4, 5, 32], 22);
    let (wq, s, _) = quantize(&w, None, None, "mxfp8", None).unwrap();
    let li = Array::from_slice(&[0u32, 2], &[2]).unwrap();
    let ri = Array::from_slice(&[3u32, 1], &[2]).unwrap();
    let want = crate::ops::matmul_forms::gather_mm(
        &round_trip_f32(&x, "mxfp8", None),
        &swapaxes(&round_trip_f32(&w, "mxfp8", None), -1, -2).unwrap(),
        Some(&li),
        Some(&ri),
    )
    .unwrap();
    let y = gather_qqmm(
        &x,
        &wq,
        Some(&s),
        Some(&li),
        Some(&ri),
        None,
        None,
        "mxfp8",
        None,
        None,
        false,
    )
    .unwrap();
    assert_eq!(y.shape(), &[2, 2, 5]);
    assert!(max_abs_diff(&y, &want) < 1e-3);
}

#[test]
fn qqmm_bad_arguments_are_errors_naming_the_op() {
    let x = arr(&[1, 32], 1);
    let w = arr(&[4, 32], 2);
    let (wq, s, _) = quantize(&w, None, None, "mxfp8", None).unwrap();
    let msg = |r: Result<Array>| r.unwrap_err().to_string();
    assert!(msg(qqmm(&x, &wq, Some(&s), None, None, "affine", None, None)).contains("qqmm"));
    assert!(msg(qqmm(&x, &wq, None, None, None, "mxfp8", None, None)).contains("scales"));
    let xi = x.astype(DType::Int32).unwrap();
    let e = qqmm(&xi, &wq, Some(&s), None, None, "mxfp8", None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Dtype);
    let g = amax(&x);
    let (nq, ns, _) = quantize(&w, None, None, "nvfp4", None).unwrap();
    let e = msg(qqmm(
        &x,
        &nq,
        Some(&ns),
        None,
        None,
        "nvfp4",
        Some(&g),
        None,
    ));
    assert!(e.contains("global_scale_x"), "{e}");
    let e = msg(qqmm(
        &arr(&[1, 48], 3),
        &wq,
        Some(&s),
        None,
        None,
        "mxfp8",
        None,
        None,
    ));
    assert!(e.contains("qqmm") && e.contains("48"), "{e}");
    let w3 = arr(&[2, 4, 32], 4);
    assert!(msg(qqmm(&x, &w3, None, None, None, "mxfp8", None, None)).contains("2-D"));
}
