//! `ferrox::fast` against composed references: the fused float32 kernels
//! are compared with the same op on float64 inputs, which takes the
//! composed path (itself checked by finite differences below), for the
//! forward pass, the vjp, the jvp and vmap.

mod common;

use common::checks::{Rng, check_derivatives, check_vmap};
use ferrox::fast::{self, AttentionMask, RopeOffset};
use ferrox::{Array, DType, Result};

fn rand(rng: &mut Rng, shape: &[usize]) -> Array {
    rng.array(shape, -1.0, 1.0)
}

fn f64s(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap()
}

fn assert_close(what: &str, got: &Array, want: &Array, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (f64s(got), f64s(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()) || (a.is_nan() && b.is_nan()),
            "{what}: element {i}: {a} vs {b}"
        );
    }
}

fn f32(a: &Array) -> Array {
    a.astype(DType::Float32).unwrap()
}

/// Attention on float64 inputs (the composed path) as the reference.
fn attention(
    q: &Array,
    k: &Array,
    v: &Array,
    mask: AttentionMask<'_>,
    sinks: Option<&Array>,
) -> Result<Array> {
    let scale = 1.0 / (q.shape()[3] as f32).sqrt();
    fast::scaled_dot_product_attention(q, k, v, scale, mask, sinks)
}

struct Case {
    name: &'static str,
    b: usize,
    nq: usize,
    nkv: usize,
    tq: usize,
    tk: usize,
    d: usize,
    dv: usize,
}

const CASES: &[Case] = &[
    Case {
        name: "small",
        b: 1,
        nq: 2,
        nkv: 2,
        tq: 3,
        tk: 5,
        d: 4,
        dv: 4,
    },
    Case {
        name: "gqa",
        b: 2,
        nq: 6,
        nkv: 2,
        tq: 7,
        tk: 7,
        d: 8,
        dv: 5,
    },
    Case {
        name: "decode",
        b: 1,
        nq: 8,
        nkv: 2,
        tq: 1,
        tk: 300,
        d: 16,
        dv: 16,
    },
    Case {
        name: "long",
        b: 1,
        nq: 2,
        nkv: 1,
        tq: 150,
        tk: 270,
        d: 17,
        dv: 9,
    },
    Case {
        name: "more queries than keys",
        b: 1,
        nq: 1,
        nkv: 1,
        tq: 9,
        tk: 4,
        d: 3,
        dv: 3,
    },
];

#[derive(Clone, Copy, Debug)]
enum MaskKind {
    None,
    Causal,
    Bool,
    Additive,
    BroadcastBool,
}

const MASKS: &[MaskKind] = &[
    MaskKind::None,
    MaskKind::Causal,
    MaskKind::Bool,
    MaskKind::Additive,
    MaskKind::BroadcastBool,
];

fn make_mask(rng: &mut Rng, kind: MaskKind, c: &Case) -> Option<Array> {
    match kind {
        MaskKind::None | MaskKind::Causal => None,
        MaskKind::Bool => Some(
            ferrox::greater(
                &rand(rng, &[c.b, c.nq, c.tq, c.tk]),
                &Array::scalar(-0.6f64),
            )
            .unwrap(),
        ),
        MaskKind::Additive => Some(rand(rng, &[c.b, 1, c.tq, c.tk])),
        // A whole row masked out in the first query.
        MaskKind::BroadcastBool => {
            let mut v: Vec<bool> = (0..c.tq * c.tk).map(|i| i % 3 != 1).collect();
            v[..c.tk].fill(false);
            Some(Array::from_slice(&v, &[c.tq, c.tk]).unwrap())
        }
    }
}

fn as_mask<'a>(kind: MaskKind, m: &'a Option<Array>) -> AttentionMask<'a> {
    match (kind, m) {
        (MaskKind::Causal, _) => AttentionMask::Causal,
        (_, Some(m)) => AttentionMask::Array(m),
        _ => AttentionMask::None,
    }
}

#[test]
fn attention_forward_matches_the_composed_reference() {
    let mut rng = Rng::new(1);
    for c in CASES {
        for &kind in MASKS {
            for sinks in [false, true] {
                let q = rand(&mut rng, &[c.b, c.nq, c.tq, c.d]);
                let k = rand(&mut rng, &[c.b, c.nkv, c.tk, c.d]);
                let v = rand(&mut rng, &[c.b, c.nkv, c.tk, c.dv]);
                let m = make_mask(&mut rng, kind, c);
                let s = sinks.then(|| rand(&mut rng, &[c.nq]));
                let want = attention(&q, &k, &v, as_mask(kind, &m), s.as_ref()).unwrap();
                let m32 = m.as_ref().map(|m| {
                    if m.dtype() == DType::Bool {
                        m.clone()
                    } else {
                        f32(m)
                    }
                });
                let s32 = s.as_ref().map(f32);
                let got = attention(
                    &f32(&q),
                    &f32(&k),
                    &f32(&v),
                    as_mask(kind, &m32),
                    s32.as_ref(),
                )
                .unwrap();
                assert_eq!(got.dtype(), DType::Float32);
                assert_close(
                    &format!("{} {kind:?} sinks={sinks}", c.name),
                    &got,
                    &want,
                    1e-5,
                );
                for dt in [DType::Float16, DType::BFloat16] {
                    let mh = m.as_ref().map(|m| {
                        if m.dtype() == DType::Bool {
                            m.clone()
                        } else {
                            m.astype(dt).unwrap()
                        }
                    });
                    let sh = s.as_ref().map(|s| s.astype(dt).unwrap());
                    let h = |x: &Array| x.astype(dt).unwrap();
                    let got =
                        attention(&h(&q), &h(&k), &h(&v), as_mask(kind, &mh), sh.as_ref()).unwrap();
                    assert_eq!(got.dtype(), dt);
                    let tol = if dt == DType::Float16 { 1e-2 } else { 4e-2 };
                    assert_close(&format!("{} {kind:?} {dt}", c.name), &got, &want, tol);
                }
            }
        }
    }
}

#[test]
fn attention_reads_transposed_inputs_in_place() {
    // [B, T, N, D] transposed to [B, N, T, D], as models build q, k, v.
    let mut rng = Rng::new(2);
    let q = f32(&rand(&mut rng, &[2, 70, 4, 8]))
        .transpose(Some(&[0, 2, 1, 3]))
        .unwrap();
    let k = f32(&rand(&mut rng, &[2, 90, 2, 8]))
        .transpose(Some(&[0, 2, 1, 3]))
        .unwrap();
    let v = f32(&rand(&mut rng, &[2, 90, 2, 8]))
        .transpose(Some(&[0, 2, 1, 3]))
        .unwrap();
    let got = attention(&q, &k, &v, AttentionMask::Causal, None).unwrap();
    let c = |x: &Array| x.astype(DType::Float64).unwrap();
    let want = attention(&c(&q), &c(&k), &c(&v), AttentionMask::Causal, None).unwrap();
    assert_close("transposed", &got, &want, 1e-5);
}

/// vjp of the fused f32 attention against the vjp of the composed f64 one.
#[test]
fn attention_vjp_matches_the_composed_reference() {
    let mut rng = Rng::new(3);
    for c in CASES {
        for &kind in MASKS {
            for sinks in [false, true] {
                let xs = [
                    rand(&mut rng, &[c.b, c.nq, c.tq, c.d]),
                    rand(&mut rng, &[c.b, c.nkv, c.tk, c.d]),
                    rand(&mut rng, &[c.b, c.nkv, c.tk, c.dv]),
                ];
                let m = make_mask(&mut rng, kind, c);
                let s = sinks.then(|| rand(&mut rng, &[c.nq]));
                let cot = rand(&mut rng, &[c.b, c.nq, c.tq, c.dv]);
                let run = |dtype: DType| {
                    let m = m.as_ref().map(|m| {
                        if m.dtype() == DType::Bool {
                            m.clone()
                        } else {
                            m.astype(dtype).unwrap()
                        }
                    });
                    let s = s.as_ref().map(|s| s.astype(dtype).unwrap());
                    let xs: Vec<Array> = xs.iter().map(|x| x.astype(dtype).unwrap()).collect();
                    let (_, g) = ferrox::vjp(
                        |a| {
                            Ok(vec![attention(
                                &a[0],
                                &a[1],
                                &a[2],
                                as_mask(kind, &m),
                                s.as_ref(),
                            )?])
                        },
                        &xs,
                        &[cot.astype(dtype).unwrap()],
                    )
                    .unwrap();
                    g
                };
                let (got, want) = (run(DType::Float32), run(DType::Float64));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_close(
                        &format!("{} {kind:?} sinks={sinks}: d{}", c.name, ["q", "k", "v"][i]),
                        g,
                        w,
                        1e-4,
                    );
                }
            }
        }
    }
}

#[test]
fn attention_composed_path_matches_finite_differences() {
    let mut rng = Rng::new(4);
    let q = rand(&mut rng, &[1, 4, 3, 5]);
    let k = rand(&mut rng, &[1, 2, 6, 5]);
    let v = rand(&mut rng, &[1, 2, 6, 3]);
    let mask = rand(&mut rng, &[3, 6]);
    let f = |a: &[Array]| {
        Ok(vec![attention(
            &a[0],
            &a[1],
            &a[2],
            AttentionMask::Array(&mask),
            None,
        )?])
    };
    check_derivatives(
        "attention additive",
        &f,
        &[q.clone(), k.clone(), v.clone()],
        5,
    );
    let f = |a: &[Array]| {
        Ok(vec![attention(
            &a[0],
            &a[1],
            &a[2],
            AttentionMask::Causal,
            None,
        )?])
    };
    check_derivatives("attention causal", &f, &[q, k, v], 6);
}

#[test]
fn attention_jvp_matches_the_vjp() {
    // <u, J t> from the jvp equals <J^T u, t> from the vjp.
    let mut rng = Rng::new(7);
    let xs: Vec<Array> = [[1, 4, 5, 8], [1, 2, 9, 8], [1, 2, 9, 6]]
        .iter()
        .map(|s| f32(&rand(&mut rng, s)))
        .collect();
    let ts: Vec<Array> = xs.iter().map(|x| f32(&rand(&mut rng, x.shape()))).collect();
    let u = f32(&rand(&mut rng, &[1, 4, 5, 6]));
    let f = |a: &[Array]| {
        Ok(vec![attention(
            &a[0],
            &a[1],
            &a[2],
            AttentionMask::Causal,
            None,
        )?])
    };
    let (_, jt) = ferrox::jvp(f, &xs, &ts).unwrap();
    let (_, g) = ferrox::vjp(f, &xs, std::slice::from_ref(&u)).unwrap();
    let lhs: f64 = f64s(&u).iter().zip(f64s(&jt[0])).map(|(a, b)| a * b).sum();
    let rhs: f64 = g
        .iter()
        .zip(&ts)
        .map(|(g, t)| f64s(g).iter().zip(f64s(t)).map(|(a, b)| a * b).sum::<f64>())
        .sum();
    assert!(
        (lhs - rhs).abs() < 1e-4 * (1.0 + rhs.abs()),
        "{lhs} vs {rhs}"
    );
}

#[test]
fn attention_vmap_matches_a_loop() {
    let mut rng = Rng::new(8);
    let q = f32(&rand(&mut rng, &[3, 2, 4, 5, 8]));
    let k = f32(&rand(&mut rng, &[2, 2, 7, 8]));
    let v = f32(&rand(&mut rng, &[3, 2, 2, 7, 8]));
    let mask = f32(&rand(&mut rng, &[3, 5, 7]));
    let f = |a: &[Array]| {
        let s = 1.0 / 8f32.sqrt();
        Ok(vec![fast::scaled_dot_product_attention(
            &a[0],
            &a[1],
            &a[2],
            s,
            AttentionMask::Array(&a[3]),
            None,
        )?])
    };
    check_vmap(
        "attention",
        f,
        &[q, k, v, mask],
        &[Some(0), None, Some(0), Some(0)],
    );
}

#[test]
fn the_training_path_follows_the_trace_not_the_thread() {
    // A thread differentiating attention in a loop must not change what
    // another thread's plain calls build: no statistics output there.
    use std::sync::{Arc, Barrier};
    let mut rng = Rng::new(9);
    let q = f32(&rand(&mut rng, &[1, 2, 8, 4]));
    let barrier = Arc::new(Barrier::new(2));
    let (q2, b2) = (q.clone(), barrier.clone());
    let grad_thread = std::thread::spawn(move || {
        b2.wait();
        for _ in 0..50 {
            let (_, g) = ferrox::vjp(
                |a| {
                    Ok(vec![attention(
                        &a[0],
                        &a[0],
                        &a[0],
                        AttentionMask::Causal,
                        None,
                    )?])
                },
                std::slice::from_ref(&q2),
                &[ferrox::ones(&[1, 2, 8, 4], DType::Float32).unwrap()],
            )
            .unwrap();
            ferrox::eval(&g).unwrap();
        }
    });
    barrier.wait();
    for _ in 0..50 {
        let o = attention(&q, &q, &q, AttentionMask::Causal, None).unwrap();
        let p = o.primitive().unwrap();
        let op = p
            .as_any()
            .downcast_ref::<fast::ScaledDotProductAttention>()
            .unwrap();
        assert!(!op.training, "a plain call built the training node");
    }
    grad_thread.join().unwrap();
    // And inside a gradient, the node is the training one.
    let _ = ferrox::vjp(
        |a| {
            let o = attention(&a[0], &a[0], &a[0], AttentionMask::None, None)?;
            let ins = o.inputs();
            let group = ins[0].primitive().unwrap();
            assert!(
                group
                    .as_any()
                    .downcast_ref::<fast::ScaledDotProductAttention>()
                    .unwrap()
                    .training
            );
            Ok(vec![o])
        },
        std::slice::from_ref(&q),
        &[ferrox::ones(&[1, 2, 8, 4], DType::Float32).unwrap()],
    )
    .unwrap();
}

#[test]
fn attention_rejects_bad_input() {
    let z = |s: &[usize]| ferrox::zeros(s, DType::Float32).unwrap();
    let sdpa = |q: &Array, k: &Array, v: &Array, m: AttentionMask<'_>, s: Option<&Array>| {
        fast::scaled_dot_product_attention(q, k, v, 1.0, m, s)
            .unwrap_err()
            .to_string()
    };
    let (q, k) = (z(&[1, 4, 3, 8]), z(&[1, 2, 5, 8]));
    assert!(sdpa(&z(&[4, 3, 8]), &k, &k, AttentionMask::None, None).contains("rank 4"));
    assert!(
        sdpa(
            &q,
            &z(&[1, 3, 5, 8]),
            &z(&[1, 3, 5, 8]),
            AttentionMask::None,
            None
        )
        .contains("multiple")
    );
    assert!(sdpa(&q, &z(&[1, 2, 5, 7]), &k, AttentionMask::None, None).contains("last dimension"));
    assert!(sdpa(&q, &k, &z(&[1, 2, 6, 8]), AttentionMask::None, None).contains("same heads"));
    assert!(sdpa(&q, &k, &k, AttentionMask::Array(&z(&[2, 5])), None).contains("broadcast"));
    assert!(sdpa(&q, &k, &k, AttentionMask::None, Some(&z(&[3]))).contains("sinks"));
    let ints = ferrox::zeros(&[1, 4, 3, 8], DType::Int32).unwrap();
    assert!(sdpa(&ints, &ints, &ints, AttentionMask::None, None).contains("floats"));
    let f64m = ferrox::zeros(&[3, 5], DType::Float64).unwrap();
    assert!(sdpa(&q, &k, &k, AttentionMask::Array(&f64m), None).contains("promote"));
}

// ---------------------------------------------------------------------------
// Norms and rope
// ---------------------------------------------------------------------------

#[test]
fn norms_match_the_composed_reference() {
    let mut rng = Rng::new(10);
    for shape in [vec![3usize, 5], vec![2, 3, 37], vec![4, 1000]] {
        let d = *shape.last().unwrap();
        let x = rand(&mut rng, &shape);
        let w = rand(&mut rng, &[d]);
        let b = rand(&mut rng, &[d]);
        for (wo, bo) in [
            (None, None),
            (Some(&w), None),
            (None, Some(&b)),
            (Some(&w), Some(&b)),
        ] {
            let want = fast::layer_norm(&x, wo, bo, 1e-5).unwrap();
            for dt in [DType::Float32, DType::Float16, DType::BFloat16] {
                let c = |a: &Array| a.astype(dt).unwrap();
                let got =
                    fast::layer_norm(&c(&x), wo.map(c).as_ref(), bo.map(c).as_ref(), 1e-5).unwrap();
                assert_eq!(got.dtype(), dt);
                let tol = match dt {
                    DType::Float32 => 1e-5,
                    DType::Float16 => 4e-3,
                    _ => 3e-2,
                };
                assert_close(&format!("layer_norm {shape:?} {dt}"), &got, &want, tol);
                if bo.is_none() {
                    let want = fast::rms_norm(&x, wo, 1e-5).unwrap();
                    let got = fast::rms_norm(&c(&x), wo.map(c).as_ref(), 1e-5).unwrap();
                    assert_close(&format!("rms_norm {shape:?} {dt}"), &got, &want, tol);
                }
            }
        }
    }
    // A transposed (non-contiguous) input.
    let x = f32(&rand(&mut rng, &[6, 4])).transpose(None).unwrap();
    let want = fast::rms_norm(&x.astype(DType::Float64).unwrap(), None, 1e-6).unwrap();
    assert_close(
        "rms_norm transposed",
        &fast::rms_norm(&x, None, 1e-6).unwrap(),
        &want,
        1e-5,
    );
}

#[test]
fn norm_gradients() {
    let mut rng = Rng::new(11);
    let x = rand(&mut rng, &[3, 6]);
    let w = rand(&mut rng, &[6]);
    let b = rand(&mut rng, &[6]);
    // The rules on float64 (composed forward, same rules) by differences.
    let f = |a: &[Array]| {
        Ok(vec![fast::layer_norm(
            &a[0],
            Some(&a[1]),
            Some(&a[2]),
            1e-5,
        )?])
    };
    check_derivatives("layer_norm", &f, &[x.clone(), w.clone(), b.clone()], 12);
    let f = |a: &[Array]| Ok(vec![fast::rms_norm(&a[0], Some(&a[1]), 1e-5)?]);
    check_derivatives("rms_norm", &f, &[x.clone(), w.clone()], 13);
    // The fused primitive's rules (float32 inputs) against them.
    let cot = rand(&mut rng, &[3, 6]);
    let grads = |dt: DType| {
        let xs: Vec<Array> = [&x, &w, &b].iter().map(|a| a.astype(dt).unwrap()).collect();
        ferrox::vjp(
            |a| {
                Ok(vec![fast::layer_norm(
                    &a[0],
                    Some(&a[1]),
                    Some(&a[2]),
                    1e-5,
                )?])
            },
            &xs,
            &[cot.astype(dt).unwrap()],
        )
        .unwrap()
        .1
    };
    for (g, w) in grads(DType::Float32).iter().zip(grads(DType::Float64)) {
        assert_close("layer_norm vjp", g, &w, 1e-4);
    }
    let f = |a: &[Array]| {
        Ok(vec![
            fast::rms_norm(&f32(&a[0]), Some(&f32(&a[1])), 1e-5)?.astype(DType::Float64)?,
        ])
    };
    let f64f = |a: &[Array]| Ok(vec![fast::rms_norm(&a[0], Some(&a[1]), 1e-5)?]);
    let ts = [rand(&mut rng, &[3, 6]), rand(&mut rng, &[6])];
    let (_, got) = ferrox::jvp(f, &[x.clone(), w.clone()], &ts).unwrap();
    let (_, want) = ferrox::jvp(f64f, &[x.clone(), w.clone()], &ts).unwrap();
    assert_close("rms_norm jvp", &got[0], &want[0], 1e-4);
    let g = |a: &[Array]| {
        Ok(vec![fast::layer_norm(
            &a[0],
            Some(&a[1]),
            Some(&a[2]),
            1e-5,
        )?])
    };
    check_vmap(
        "layer_norm",
        g,
        &[
            f32(&rand(&mut rng, &[4, 3, 6])),
            f32(&w),
            f32(&rand(&mut rng, &[6, 4])),
        ],
        &[Some(0), None, Some(1)],
    );
    let g = |a: &[Array]| Ok(vec![fast::rms_norm(&a[0], Some(&a[1]), 1e-5)?]);
    check_vmap(
        "rms_norm",
        g,
        &[
            f32(&rand(&mut rng, &[3, 6, 4])),
            f32(&rand(&mut rng, &[4, 6])),
        ],
        &[Some(2), Some(0)],
    );
}

#[test]
fn rope_matches_the_composed_reference() {
    let mut rng = Rng::new(20);
    let x = rand(&mut rng, &[2, 3, 5, 16]);
    let offsets = Array::from_slice(&[3i32, 11], &[2]).unwrap();
    let freqs = ferrox::abs(&rand(&mut rng, &[4])).unwrap();
    for traditional in [false, true] {
        for dims in [16usize, 8] {
            for (oname, offset) in [
                ("scalar", RopeOffset::Scalar(7)),
                ("per batch", RopeOffset::Array(&offsets)),
            ] {
                let fq = (dims == 8).then_some(&freqs);
                let base = fq.is_none().then_some(10000.0);
                let want =
                    fast::rope(&x, dims, traditional, base, 0.5, offset.clone(), fq).unwrap();
                for dt in [DType::Float32, DType::Float16, DType::BFloat16] {
                    let got = fast::rope(
                        &x.astype(dt).unwrap(),
                        dims,
                        traditional,
                        base,
                        0.5,
                        offset.clone(),
                        fq,
                    )
                    .unwrap();
                    let tol = match dt {
                        DType::Float32 => 1e-5,
                        DType::Float16 => 2e-3,
                        _ => 2e-2,
                    };
                    assert_close(
                        &format!("rope {traditional} {dims} {oname} {dt}"),
                        &got,
                        &want,
                        tol,
                    );
                }
            }
        }
    }
}

#[test]
fn rope_gradients_and_batching() {
    let mut rng = Rng::new(21);
    let x = rand(&mut rng, &[1, 2, 4, 8]);
    let f = |a: &[Array]| {
        Ok(vec![fast::rope(
            &a[0],
            6,
            false,
            Some(100.0),
            1.0,
            RopeOffset::Scalar(2),
            None,
        )?])
    };
    check_derivatives("rope f64", &f, std::slice::from_ref(&x), 22);
    let cot = rand(&mut rng, &[1, 2, 4, 8]);
    let run = |dt: DType| {
        ferrox::vjp(f, &[x.astype(dt).unwrap()], &[cot.astype(dt).unwrap()])
            .unwrap()
            .1
    };
    assert_close(
        "rope vjp",
        &run(DType::Float32)[0],
        &run(DType::Float64)[0],
        1e-5,
    );
    let offsets = Array::from_slice(&[1i32, 4, 9], &[3]).unwrap();
    let g = move |a: &[Array]| {
        Ok(vec![fast::rope(
            &a[0],
            8,
            true,
            Some(10.0),
            1.0,
            RopeOffset::Array(&offsets),
            None,
        )?])
    };
    check_vmap(
        "rope",
        g,
        &[f32(&rand(&mut rng, &[3, 4, 2, 5, 8]))],
        &[Some(1)],
    );
}

#[test]
fn rope_and_norms_reject_bad_input() {
    let x = ferrox::zeros(&[1, 2, 4], DType::Float32).unwrap();
    let err = |r: Result<Array>| r.unwrap_err().to_string();
    assert!(
        err(fast::rope(
            &ferrox::zeros(&[2, 4], DType::Float32).unwrap(),
            4,
            false,
            Some(1.0),
            1.0,
            RopeOffset::Scalar(0),
            None
        ))
        .contains("3 dimensions")
    );
    assert!(
        err(fast::rope(
            &x,
            3,
            false,
            Some(1.0),
            1.0,
            RopeOffset::Scalar(0),
            None
        ))
        .contains("even")
    );
    assert!(
        err(fast::rope(
            &ferrox::zeros(&[1, 2, 4], DType::Int32).unwrap(),
            4,
            false,
            Some(1.0),
            1.0,
            RopeOffset::Scalar(0),
            None
        ))
        .contains("float")
    );
    assert!(
        err(fast::rope(
            &x,
            4,
            false,
            None,
            1.0,
            RopeOffset::Scalar(0),
            None
        ))
        .contains("base")
    );
    let f = ferrox::ones(&[3], DType::Float32).unwrap();
    assert!(
        err(fast::rope(
            &x,
            4,
            false,
            None,
            1.0,
            RopeOffset::Scalar(0),
            Some(&f)
        ))
        .contains("freqs")
    );
    let o = ferrox::zeros(&[3], DType::Int32).unwrap();
    assert!(
        err(fast::rope(
            &x,
            4,
            false,
            Some(1.0),
            1.0,
            RopeOffset::Array(&o),
            None
        ))
        .contains("offset")
    );
    let w = ferrox::ones(&[3], DType::Float32).unwrap();
    assert!(err(fast::rms_norm(&x, Some(&w), 1e-5)).contains("weight"));
    assert!(err(fast::layer_norm(&x, None, Some(&w), 1e-5)).contains("bias"));
    assert!(err(fast::rms_norm(&Array::scalar(1.0f32), None, 1e-5)).contains("at least 1"));
    assert!(
        err(fast::rms_norm(
            &ferrox::zeros(&[2], DType::Int32).unwrap(),
            None,
            1e-5
        ))
        .contains("float")
    );
}

#[test]
fn cross_entropy_is_logsumexp_minus_the_target_logit() {
    let mut rng = Rng::new(30);
    let logits = f32(&rand(&mut rng, &[3, 7]));
    let t = Array::from_slice(&[0i32, 6, 3], &[3]).unwrap();
    let got = fast::cross_entropy(&logits, &t).unwrap();
    let v = f64s(&logits);
    let want: Vec<f64> = (0..3)
        .map(|r| {
            let row = &v[r * 7..(r + 1) * 7];
            let lse = row.iter().map(|x| x.exp()).sum::<f64>().ln();
            lse - row[[0, 6, 3][r]]
        })
        .collect();
    assert_close(
        "cross_entropy",
        &got,
        &Array::from_slice(&want, &[3]).unwrap(),
        1e-5,
    );
    assert!(fast::cross_entropy(&logits, &Array::from_slice(&[0i32, 1], &[2]).unwrap()).is_err());
}
