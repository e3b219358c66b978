//! Transforms: derivatives against finite differences (f64), vmap against
//! a loop, nesting, and isolation between threads (contract item 6).

#![allow(clippy::cloned_ref_to_slice_refs, clippy::type_complexity)] // test tables read best inline

mod common;

use common::checks::{Rng, check_derivatives, check_vmap, check_vmap_out};
use common::{join_within, watchdog};
use ferrox::graph::trace::TraceKind;
use ferrox::*;
use proptest::prelude::*;
use std::sync::{Arc, Barrier};

fn f_poly(xs: &[Array]) -> Result<Vec<Array>> {
    // x*y - x/y + exp(-x), with y broadcast over rows.
    let (x, y) = (&xs[0], &xs[1]);
    let a = subtract(&multiply(x, y)?, &divide(x, y)?)?;
    Ok(vec![add(&a, &exp(&negative(x)?)?)?])
}

fn f_trig(xs: &[Array]) -> Result<Vec<Array>> {
    let x = &xs[0];
    Ok(vec![
        multiply(&sin(x)?, &tanh(x)?)?,
        sum(&multiply(&sqrt(&exp(x)?)?, &cos(x)?)?, Some(&[1]), false)?,
    ])
}

#[test]
fn derivatives_match_finite_differences() {
    let mut rng = Rng::new(7);
    let x = rng.array(&[3, 4], -1.0, 1.0);
    let y = rng.array(&[4], 0.5, 2.0);
    check_derivatives("poly", &f_poly, &[x.clone(), y], 1);
    check_derivatives("trig", &f_trig, std::slice::from_ref(&x), 2);
    let mean_sq =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![mean(&square(&xs[0])?, None, false)?]) };
    check_derivatives("mean_sq", &mean_sq, &[x], 3);
}

#[test]
fn second_derivatives_of_known_functions() {
    // d²/dx² x³ = 6x; d²/dx² sin x = -sin x.
    let cube = grad(
        |xs| {
            Ok(vec![sum(
                &multiply(&multiply(&xs[0], &xs[0])?, &xs[0])?,
                None,
                false,
            )?])
        },
        &[0],
    );
    let c2 = cube.clone();
    let second = grad(move |xs| Ok(vec![sum(&c2(xs)?[0], None, false)?]), &[0]);
    let x = Array::from_slice(&[0.5f64, -1.0, 2.0], &[3]).unwrap();
    assert_eq!(
        second(std::slice::from_ref(&x)).unwrap()[0]
            .to_vec::<f64>()
            .unwrap(),
        vec![3.0, -6.0, 12.0]
    );
    let dsin = grad(|xs| Ok(vec![sum(&sin(&xs[0])?, None, false)?]), &[0]);
    let d2 = grad(move |xs| Ok(vec![sum(&dsin(xs)?[0], None, false)?]), &[0]);
    let got = d2(std::slice::from_ref(&x)).unwrap()[0]
        .to_vec::<f64>()
        .unwrap();
    for (g, v) in got.iter().zip(x.to_vec::<f64>().unwrap()) {
        assert!((g + v.sin()).abs() < 1e-12);
    }
}

#[test]
fn vmap_matches_a_loop() {
    let mut rng = Rng::new(11);
    let x = rng.array(&[5, 3], -1.0, 1.0);
    let y = rng.array(&[3], 0.5, 2.0);
    check_vmap(
        "poly rows",
        f_poly,
        &[x.clone(), y.clone()],
        &[Some(0), None],
    );
    let xt = rng.array(&[3, 5], -1.0, 1.0);
    check_vmap("poly columns", f_poly, &[xt, y], &[Some(1), None]);
    let row_sum =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![sum(&exp(&xs[0])?, None, false)?]) };
    check_vmap("row sums", row_sum, &[x], &[Some(0)]);
}

#[test]
fn per_example_gradients_equal_a_loop() {
    let mut rng = Rng::new(5);
    let xs = rng.array(&[4, 3], -1.0, 1.0);
    let w = rng.array(&[3], -1.0, 1.0);
    // loss(w; x) = sum(tanh(x * w)); per-example gradient w.r.t. w.
    let g = grad(
        |a| Ok(vec![sum(&tanh(&multiply(&a[0], &a[1])?)?, None, false)?]),
        &[0],
    );
    let g2 = g.clone();
    let per_example = vmap(
        move |a| g2(&[a[1].clone(), a[0].clone()]),
        &[Some(0), None],
        &[Some(0)],
    );
    let batched = per_example(&[xs.clone(), w.clone()]).unwrap()[0]
        .to_vec::<f64>()
        .unwrap();
    for b in 0..4 {
        let xb = common::checks::example(&xs, 0, b);
        let want = g(&[w.clone(), xb]).unwrap()[0].to_vec::<f64>().unwrap();
        assert_eq!(&batched[b * 3..b * 3 + 3], &want[..]);
    }
}

#[test]
fn eval_inside_a_transformed_function_keeps_the_graph() {
    let g = grad(
        |xs| {
            let y = exp(&xs[0])?;
            y.eval()?; // evaluating mid-trace must not cut the graph
            Ok(vec![sum(&y, None, false)?])
        },
        &[0],
    );
    let x = Array::from_slice(&[0.0f64, 1.0], &[2]).unwrap();
    assert_eq!(
        g(&[x]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![1.0, 1f64.exp()]
    );
}

#[test]
fn a_forward_pass_on_one_thread_never_observes_another_threads_gradient() {
    watchdog(120, || {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let trainer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let g = grad(
                    |xs| {
                        assert!(xs[0].is_differentiated());
                        Ok(vec![sum(&multiply(&xs[0], &xs[0])?, None, false)?])
                    },
                    &[0],
                );
                let x = ones(&[16], DType::Float32).unwrap();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || n < 100 {
                    g(std::slice::from_ref(&x)).unwrap()[0].eval().unwrap();
                    n += 1;
                }
            })
        };
        for _ in 0..2000 {
            let x = ones(&[16], DType::Float32).unwrap();
            let y = exp(&multiply(&x, &x).unwrap()).unwrap();
            assert!(!y.is_differentiated());
            assert!(!y.is_traced(TraceKind::Vjp));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        join_within(60, trainer);
    });
}

#[test]
fn eight_threads_of_mixed_transforms_are_bitwise_equal_to_one() {
    watchdog(120, || {
        let f: ArrayFn = Arc::new(f_poly);
        let mut rng = Rng::new(3);
        let x = rng.array(&[3, 4], -1.0, 1.0);
        let y = rng.array(&[4], 0.5, 2.0);
        let run = {
            let f = f.clone();
            move |kind: usize, x: &Array, y: &Array| -> Vec<u64> {
                let ones = ones_like(&f(&[x.clone(), y.clone()]).unwrap()[0]).unwrap();
                let outs = match kind {
                    0 => vjp(|a| f(a), &[x.clone(), y.clone()], &[ones]).unwrap().1,
                    1 => {
                        jvp(
                            |a| f(a),
                            &[x.clone(), y.clone()],
                            &[ones_like(x).unwrap(), ones_like(y).unwrap()],
                        )
                        .unwrap()
                        .1
                    }
                    2 => {
                        let f = f.clone();
                        vmap(move |a| f(a), &[Some(0), None], &[Some(0)])(&[x.clone(), y.clone()])
                            .unwrap()
                    }
                    _ => {
                        let f = f.clone();
                        grad(move |a| Ok(vec![sum(&f(a)?[0], None, false)?]), &[0, 1])(&[
                            x.clone(),
                            y.clone(),
                        ])
                        .unwrap()
                    }
                };
                outs.iter()
                    .flat_map(|o| o.to_vec::<f64>().unwrap())
                    .map(f64::to_bits)
                    .collect()
            }
        };
        let want: Vec<Vec<u64>> = (0..4).map(|k| run(k, &x, &y)).collect();
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (run, x, y, barrier) = (run.clone(), x.clone(), y.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    (0..20)
                        .map(|i| ((t + i) % 4, run((t + i) % 4, &x, &y)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (k, got) in join_within(60, h) {
                assert_eq!(got, want[k], "transform {k}");
            }
        }
    });
}

#[test]
fn compile_composes_with_grad_and_vmap() {
    let f = compile(|xs: &[Array]| Ok(vec![sum(&multiply(&xs[0], &xs[0])?, None, false)?]));
    let x = Array::from_slice(&[1.0f64, 2.0, 3.0], &[3]).unwrap();
    // grad(compile(f)): the compiled function is inlined inside the trace.
    let g = grad(f.as_fn(), &[0]);
    assert_eq!(
        g(std::slice::from_ref(&x)).unwrap()[0]
            .to_vec::<f64>()
            .unwrap(),
        vec![2.0, 4.0, 6.0]
    );
    // compile(grad(f)).
    let cg = compile(move |xs: &[Array]| g(xs));
    assert_eq!(
        cg.call(std::slice::from_ref(&x)).unwrap()[0]
            .to_vec::<f64>()
            .unwrap(),
        vec![2.0, 4.0, 6.0]
    );
    assert_eq!(cg.traces(), 1);
    // vmap(compile(f)).
    let rows = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let v = vmap(f.as_fn(), &[Some(0)], &[Some(0)]);
    assert_eq!(
        v(&[rows]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![5.0, 25.0]
    );
}

#[test]
fn an_op_without_a_rule_names_the_op_and_the_transform() {
    let x = ones(&[3], DType::Float32).unwrap();
    let err = vjp(
        |xs| Ok(vec![view(&xs[0], DType::Int32)?]),
        std::slice::from_ref(&x),
        std::slice::from_ref(&x),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("vjp"), "{err}");
}

// ---------------------------------------------------------------------------
// Per-op rules: derivatives against finite differences, vmap against a loop.
// ---------------------------------------------------------------------------

type F = fn(&[Array]) -> Result<Vec<Array>>;

fn mm(xs: &[Array]) -> Result<Vec<Array>> {
    Ok(vec![matmul(&xs[0], &xs[1])?])
}

#[test]
fn matmul_rules() {
    let mut rng = Rng::new(21);
    let cases: &[(&[usize], &[usize])] = &[
        (&[3, 4], &[4, 2]),
        (&[4], &[4, 2]),
        (&[3, 4], &[4]),
        (&[4], &[4]),
        (&[2, 3, 4], &[4, 5]),
        (&[2, 2, 3, 4], &[4, 5]),
        (&[2, 1, 3, 4], &[5, 4, 2]),
        (&[4], &[2, 4, 3]),
    ];
    for (i, (sa, sb)) in cases.iter().enumerate() {
        let a = rng.array(sa, -1.0, 1.0);
        let b = rng.array(sb, -1.0, 1.0);
        check_derivatives(&format!("matmul {sa:?} {sb:?}"), &mm, &[a, b], i as u64);
    }
    let addmm_f =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![addmm(&xs[0], &xs[1], &xs[2], 0.5, 2.0)?]) };
    let c = rng.array(&[2], -1.0, 1.0);
    let a = rng.array(&[3, 4], -1.0, 1.0);
    let b = rng.array(&[4, 2], -1.0, 1.0);
    check_derivatives("addmm", &addmm_f, &[c.clone(), a.clone(), b.clone()], 9);
    let addmm_b0 =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![addmm(&xs[0], &xs[1], &xs[2], 1.5, 0.0)?]) };
    check_derivatives("addmm beta 0", &addmm_b0, &[c, a, b], 10);
}

#[test]
fn matmul_vmap_rules() {
    let mut rng = Rng::new(22);
    // (a shape, b shape, in_axes)
    let cases: &[(&[usize], &[usize], [Option<isize>; 2])] = &[
        (&[5, 3, 4], &[4, 2], [Some(0), None]),
        (&[3, 5, 4], &[4, 2], [Some(1), None]),
        (&[3, 4], &[4, 2, 5], [None, Some(2)]),
        (&[5, 3, 4], &[4, 5, 2], [Some(0), Some(1)]),
        (&[4, 5], &[4, 2], [Some(1), None]), // batched row vectors
        (&[3, 4], &[4, 5], [None, Some(1)]), // batched column vectors
        (&[5, 4], &[4, 5], [Some(0), Some(1)]), // batched dot products
        (&[5, 3, 4], &[2, 4, 6], [Some(0), None]), // unbatched b has more batch dims
        (&[4], &[5, 2, 4, 3], [None, Some(0)]),
    ];
    for (sa, sb, axes) in cases {
        let a = rng.array(sa, -1.0, 1.0);
        let b = rng.array(sb, -1.0, 1.0);
        check_vmap(&format!("matmul {sa:?} {sb:?} {axes:?}"), mm, &[a, b], axes);
    }
    let a = rng.array(&[3, 5, 4], -1.0, 1.0);
    let b = rng.array(&[4, 2], -1.0, 1.0);
    check_vmap_out(
        "matmul out axis 1",
        mm,
        &[a.clone(), b.clone()],
        &[Some(1), None],
        1,
    );
    let c = rng.array(&[2, 5], -1.0, 1.0);
    let f =
        |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![addmm(&xs[0], &xs[1], &xs[2], 0.5, 2.0)?]) };
    check_vmap_out("addmm", f, &[c, a, b], &[Some(1), Some(1), None], 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn matmul_derivatives_over_shapes(
        m in 1usize..4, k in 1usize..4, n in 1usize..4, batch in 0usize..3, seed in 0u64..1000,
    ) {
        let mut rng = Rng::new(seed);
        let mut sa = vec![m, k];
        let mut sb = vec![k, n];
        if batch > 0 {
            sa.insert(0, batch);
            sb.insert(0, 1);
        }
        let a = rng.array(&sa, -1.0, 1.0);
        let b = rng.array(&sb, -1.0, 1.0);
        check_derivatives("matmul prop", &mm, &[a, b], seed);
    }
}

#[test]
fn view_rules() {
    let mut rng = Rng::new(23);
    let x = rng.array(&[2, 3, 4], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("reshape", |xs| Ok(vec![reshape(&xs[0], &[4, -1])?])),
        ("transpose", |xs| {
            Ok(vec![transpose(&xs[0], Some(&[2, 0, 1]))?])
        }),
        ("broadcast", |xs| {
            let s = sum(&xs[0], Some(&[1]), true)?;
            Ok(vec![broadcast_to(&s, &[5, 2, 3, 4])?])
        }),
        ("slice", |xs| {
            Ok(vec![slice(&xs[0], &[1, -1, 0], &[2, -4, 4], &[1, -1, 2])?])
        }),
        ("diagonal", |xs| Ok(vec![diagonal(&xs[0], 1, 2, 1)?])),
        ("diagonal neg", |xs| Ok(vec![diagonal(&xs[0], -1, 0, 1)?])),
        ("contiguous", |xs| {
            Ok(vec![contiguous(&transpose(&xs[0], None)?)?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        let xb = rng.array(&[2, 3, 5, 4], -1.0, 1.0);
        check_vmap_out(name, *f, &[xb], &[Some(2)], 1);
    }
}

#[test]
fn softmax_and_logsumexp_rules() {
    let mut rng = Rng::new(24);
    let x = rng.array(&[3, 4, 2], -2.0, 2.0);
    let fs: Vec<(&str, F)> = vec![
        ("logsumexp last", |xs| {
            Ok(vec![logsumexp(&xs[0], Some(&[-1]), false)?])
        }),
        ("logsumexp two keep", |xs| {
            Ok(vec![logsumexp(&xs[0], Some(&[0, 2]), true)?])
        }),
        ("logsumexp all", |xs| {
            Ok(vec![logsumexp(&xs[0], None, false)?])
        }),
        ("softmax", |xs| {
            Ok(vec![softmax(&xs[0], Some(&[1]), false)?])
        }),
        ("softmax two", |xs| {
            Ok(vec![softmax(&xs[0], Some(&[0, 2]), true)?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        let xb = rng.array(&[3, 4, 5, 2], -2.0, 2.0);
        check_vmap_out(name, *f, &[xb], &[Some(2)], 0);
    }
}

#[test]
fn reduction_rules() {
    let mut rng = Rng::new(25);
    let x = rng.array(&[3, 4, 2], 0.5, 2.0);
    let fs: Vec<(&str, F)> = vec![
        ("prod", |xs| Ok(vec![prod(&xs[0], Some(&[0, 2]), false)?])),
        ("prod all", |xs| Ok(vec![prod(&xs[0], None, true)?])),
        ("max", |xs| Ok(vec![max(&xs[0], Some(&[1]), false)?])),
        ("min", |xs| Ok(vec![min(&xs[0], Some(&[0, 1]), true)?])),
        ("var", |xs| Ok(vec![var(&xs[0], Some(&[1]), false, 1)?])),
        ("std", |xs| Ok(vec![std(&xs[0], None, false, 0)?])),
        ("sum", |xs| Ok(vec![sum(&xs[0], Some(&[2]), true)?])),
        ("mean", |xs| Ok(vec![mean(&xs[0], Some(&[0]), false)?])),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        let xb = rng.array(&[3, 5, 4, 2], 0.5, 2.0);
        check_vmap_out(name, *f, &[xb], &[Some(1)], 0);
    }
    // prod with zeros: the derivative at a zero is the product of the others.
    let z = Array::from_slice(&[2.0f64, 0.0, 3.0, 0.0, 5.0, 4.0], &[2, 3]).unwrap();
    let g = grad(
        |xs| Ok(vec![sum(&prod(&xs[0], Some(&[1]), false)?, None, false)?]),
        &[0],
    );
    assert_eq!(
        g(&[z.clone()]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![0.0, 6.0, 0.0, 20.0, 0.0, 0.0]
    );
    check_derivatives(
        "prod with zeros",
        &|xs| Ok(vec![prod(&xs[0], Some(&[1]), false)?]),
        &[z],
        3,
    );
    // max splits the cotangent evenly among ties.
    let t = Array::from_slice(&[1.0f64, 3.0, 3.0, 2.0], &[4]).unwrap();
    let g = grad(|xs| Ok(vec![max(&xs[0], None, false)?]), &[0]);
    assert_eq!(
        g(&[t]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![0.0, 0.5, 0.5, 0.0]
    );
}

#[test]
fn argreduce_rules() {
    let mut rng = Rng::new(26);
    let x = rng.array(&[3, 5, 4], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("argmax", |xs| Ok(vec![argmax(&xs[0], Some(1), false)?])),
        ("argmin keep", |xs| Ok(vec![argmin(&xs[0], Some(0), true)?])),
        ("argmax flat", |xs| Ok(vec![argmax(&xs[0], None, false)?])),
        ("argmin flat keep", |xs| {
            Ok(vec![argmin(&xs[0], None, true)?])
        }),
    ];
    for (name, f) in &fs {
        check_vmap_out(name, *f, &[x.clone()], &[Some(1)], 0);
    }
    // No gradient flows through the indices.
    let g = grad(
        |xs| {
            let i = argmax(&xs[0], None, false)?.astype(DType::Float64)?;
            Ok(vec![add(&i, &sum(&xs[0], None, false)?)?])
        },
        &[0],
    );
    let x = rng.array(&[4], -1.0, 1.0);
    assert_eq!(g(&[x]).unwrap()[0].to_vec::<f64>().unwrap(), vec![1.0; 4]);
}

#[test]
fn where_rules() {
    let mut rng = Rng::new(27);
    let c = greater(&rng.array(&[3, 4], -1.0, 1.0), &Array::from(0.0)).unwrap();
    let x = rng.array(&[3, 4], -1.0, 1.0);
    let y = rng.array(&[4], -1.0, 1.0);
    let c2 = c.clone();
    let f = move |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![r#where(&c2, &xs[0], &xs[1])?]) };
    check_derivatives("where", &f, &[x.clone(), y.clone()], 1);
    let g = |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![r#where(&xs[0], &xs[1], &xs[2])?]) };
    let cb = greater(&rng.array(&[4, 5], -1.0, 1.0), &Array::from(0.0)).unwrap();
    let xb = rng.array(&[5, 3, 4], -1.0, 1.0);
    check_vmap_out("where", g, &[cb, xb, y], &[Some(1), Some(0), None], 1);
    let g2 = |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![r#where(&xs[0], &xs[1], &xs[2])?]) };
    let xb = rng.array(&[3, 4, 5], -1.0, 1.0);
    let yb = rng.array(&[5], -1.0, 1.0);
    check_vmap(
        "where unbatched condition",
        g2,
        &[c, xb, yb],
        &[None, Some(2), Some(0)],
    );
}

/// A 2-layer MLP with a softmax cross-entropy loss.
fn mlp_loss(xs: &[Array]) -> Result<Vec<Array>> {
    let (w1, b1, w2, b2, x, onehot) = (&xs[0], &xs[1], &xs[2], &xs[3], &xs[4], &xs[5]);
    let h = tanh(&add(&matmul(x, w1)?, b1)?)?;
    let h = maximum(&h, &multiply(&h, &Array::from(0.1))?)?; // leaky relu
    let logits = add(&matmul(&h, w2)?, b2)?;
    let lse = logsumexp(&logits, Some(&[-1]), true)?;
    let logp = subtract(&logits, &lse)?;
    let nll = negative(&sum(&multiply(&logp, onehot)?, Some(&[-1]), false)?)?;
    Ok(vec![mean(&nll, None, false)?])
}

#[test]
fn mlp_gradient_matches_finite_differences() {
    let mut rng = Rng::new(28);
    let (batch, din, hidden, classes) = (6, 5, 7, 3);
    let w1 = rng.array(&[din, hidden], -0.7, 0.7);
    let b1 = rng.array(&[hidden], -0.2, 0.2);
    let w2 = rng.array(&[hidden, classes], -0.7, 0.7);
    let b2 = rng.array(&[classes], -0.2, 0.2);
    let x = rng.array(&[batch, din], -1.0, 1.0);
    let labels: Vec<f64> = (0..batch * classes)
        .map(|i| {
            if i % classes == (i / classes) % classes {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let onehot = Array::from_slice(&labels, &[batch, classes]).unwrap();
    let params = vec![w1, b1, w2, b2, x, onehot];
    // grad against central differences, coordinate by coordinate.
    let g = grad(mlp_loss, &[0, 1, 2, 3]);
    let grads = g(&params).unwrap();
    let eps = 1e-6;
    for p in 0..4 {
        let base = params[p].to_vec::<f64>().unwrap();
        let got = grads[p].to_vec::<f64>().unwrap();
        assert_eq!(grads[p].shape(), params[p].shape());
        for i in 0..base.len() {
            let at = |d: f64| {
                let mut v = base.clone();
                v[i] += d;
                let mut ps = params.clone();
                ps[p] = Array::from_slice(&v, params[p].shape()).unwrap();
                mlp_loss(&ps).unwrap()[0].item::<f64>().unwrap()
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (got[i] - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "param {p} element {i}: grad {} finite differences {fd}",
                got[i]
            );
        }
    }
    // And the generic vjp/jvp check on all parameters at once.
    check_derivatives("mlp", &mlp_loss, &params, 4);
    // Per-example losses with vmap over the batch of x and the labels.
    let per_example = |xs: &[Array]| -> Result<Vec<Array>> {
        let x = expand_dims(&xs[4], &[0])?;
        let y = expand_dims(&xs[5], &[0])?;
        mlp_loss(&[
            xs[0].clone(),
            xs[1].clone(),
            xs[2].clone(),
            xs[3].clone(),
            x,
            y,
        ])
    };
    check_vmap(
        "mlp per example",
        per_example,
        &params,
        &[None, None, None, None, Some(0), Some(0)],
    );
}

fn idx(v: &[i32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// Checks derivatives of `f` at `x` and vmap of `f` over a batched copy
/// (batch axis `in_axis`, output batch axis `out_axis`).
fn check_unary_op(
    name: &str,
    f: F,
    x: &Array,
    xb: &Array,
    in_axis: isize,
    out_axis: usize,
    seed: u64,
) {
    check_derivatives(name, &f, &[x.clone()], seed);
    check_vmap_out(name, f, &[xb.clone()], &[Some(in_axis)], out_axis);
}

#[test]
fn join_rules() {
    let mut rng = Rng::new(31);
    let fs: Vec<(&str, F)> = vec![
        ("pad", |xs| {
            Ok(vec![pad(
                &xs[0],
                &[(1, 0), (0, 2), (2, 1)],
                PadMode::Constant(3.0),
            )?])
        }),
        ("pad edge", |xs| {
            Ok(vec![pad(&xs[0], &[(1, 2)], PadMode::Edge)?])
        }),
        ("tril", |xs| Ok(vec![tril(&xs[0], 0)?])),
        ("triu", |xs| Ok(vec![triu(&xs[0], 1)?])),
        ("concatenate", |xs| {
            let a = multiply(&xs[0], &xs[0])?;
            Ok(vec![concatenate(&[xs[0].clone(), a, xs[0].clone()], 1)?])
        }),
        ("stack", |xs| {
            Ok(vec![stack(&[xs[0].clone(), exp(&xs[0])?], 2)?])
        }),
        ("repeat tile roll", |xs| {
            let r = repeat(&xs[0], 2, Some(1))?;
            Ok(vec![roll(&tile(&r, &[1, 2, 1])?, &[1], Some(&[2]))?])
        }),
    ];
    let x = rng.array(&[2, 3, 4], -1.0, 1.0);
    let xb = rng.array(&[2, 3, 5, 4], -1.0, 1.0);
    for (i, (name, f)) in fs.iter().enumerate() {
        check_unary_op(name, *f, &x, &xb, 2, 1, i as u64);
    }
    // concatenate with one batched and one unbatched input.
    let cat = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![concatenate(&[xs[0].clone(), xs[1].clone()], 0)?])
    };
    let a = rng.array(&[3, 5, 2], -1.0, 1.0);
    let b = rng.array(&[4, 2], -1.0, 1.0);
    check_vmap_out("concatenate mixed", cat, &[a, b], &[Some(1), None], 2);
    // diag of a vector.
    let d: F = |xs| Ok(vec![diag(&xs[0], -1)?]);
    check_unary_op(
        "diag",
        d,
        &rng.array(&[3], -1.0, 1.0),
        &rng.array(&[3, 4], -1.0, 1.0),
        1,
        2,
        7,
    );
}

#[test]
fn indexing_rules() {
    let mut rng = Rng::new(32);
    let x = rng.array(&[3, 4, 2], -1.0, 1.0);
    let xb = rng.array(&[3, 5, 4, 2], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("take axis", |xs| {
            Ok(vec![take(
                &xs[0],
                &idx(&[3, 0, 3, -1, 1, 2], &[2, 3]),
                Some(1),
            )?])
        }),
        ("take flat", |xs| {
            Ok(vec![take(&xs[0], &idx(&[5, 0, 5, 23], &[2, 2]), None)?])
        }),
        ("take_along_axis", |xs| {
            let i = idx(&[0, 3, 3, 1, 2, 0], &[3, 2, 1]);
            Ok(vec![take_along_axis(&xs[0], &i, Some(1))?])
        }),
        ("take_along_axis flat", |xs| {
            Ok(vec![take_along_axis(&xs[0], &idx(&[1, 1, 7], &[3]), None)?])
        }),
        ("put_along_axis", |xs| {
            let i = idx(&[0, 3, 1], &[3, 1, 1]);
            let v = multiply(&sum(&xs[0], Some(&[1]), true)?, &Array::from(2.0))?;
            Ok(vec![put_along_axis(&xs[0], &i, &v, Some(1))?])
        }),
        ("slice_update", |xs| {
            let u = exp(&slice(&xs[0], &[0, 0, 0], &[3, 2, 1], &[1, 1, 1])?)?;
            Ok(vec![slice_update(
                &xs[0],
                &u,
                &[0, 3, 1],
                &[3, 0, 2],
                Some(&[1, -2, 1]),
            )?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_unary_op(name, *f, &x, &xb, 1, 0, i as u64);
    }
    // Batched indices, with and without a batched source.
    let tk = |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![take(&xs[0], &xs[1], Some(1))?]) };
    let src = rng.array(&[3, 4], -1.0, 1.0);
    let ib = idx(&[0, 3, 2, 1, 1, 0, 3, 3, 2, 0], &[5, 2]);
    check_vmap_out(
        "take batched indices",
        tk,
        &[src.clone(), ib.clone()],
        &[None, Some(0)],
        1,
    );
    let srcb = rng.array(&[3, 4, 5], -1.0, 1.0);
    check_vmap(
        "take both batched",
        tk,
        &[srcb.clone(), ib.clone()],
        &[Some(2), Some(0)],
    );
    let tf = |xs: &[Array]| -> Result<Vec<Array>> { Ok(vec![take(&xs[0], &xs[1], None)?]) };
    check_vmap(
        "take flat both batched",
        tf,
        &[srcb, ib.clone()],
        &[Some(2), Some(0)],
    );
    let ta = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![take_along_axis(&xs[0], &xs[1], Some(0))?])
    };
    let ib2 = idx(&[0, 2, 1, 1, 0, 2, 2, 2, 0, 1], &[5, 2, 1]);
    check_vmap(
        "take_along_axis batched indices",
        ta,
        &[src.clone(), ib2.clone()],
        &[None, Some(0)],
    );
    let pa = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![put_along_axis(&xs[0], &xs[1], &xs[2], Some(0))?])
    };
    let vals = rng.array(&[2, 1, 5], -1.0, 1.0);
    check_vmap(
        "put_along_axis mixed",
        pa,
        &[src.clone(), ib2, vals],
        &[None, Some(0), Some(2)],
    );
    let su = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![slice_update(
            &xs[0],
            &xs[1],
            &[1, 0],
            &[3, 4],
            Some(&[1, 2]),
        )?])
    };
    let ub = rng.array(&[2, 5], -1.0, 1.0);
    check_vmap_out(
        "slice_update batched update",
        su,
        &[src, ub],
        &[None, Some(1)],
        1,
    );
    // Duplicate indices accumulate in the cotangent.
    let g = grad(
        |xs| {
            Ok(vec![sum(
                &take(&xs[0], &idx(&[1, 1, 2], &[3]), None)?,
                None,
                false,
            )?])
        },
        &[0],
    );
    let z = zeros(&[4], DType::Float64).unwrap();
    assert_eq!(
        g(&[z]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![0.0, 2.0, 1.0, 0.0]
    );
}

#[test]
fn scan_and_sort_rules() {
    let mut rng = Rng::new(33);
    let x = rng.array(&[3, 4, 2], 0.5, 2.0);
    let xb = rng.array(&[3, 4, 5, 2], 0.5, 2.0);
    let fs: Vec<(&str, F)> = vec![
        ("cumsum", |xs| {
            Ok(vec![cumsum(&xs[0], Some(1), false, true)?])
        }),
        ("cumsum rev excl", |xs| {
            Ok(vec![cumsum(&xs[0], Some(0), true, false)?])
        }),
        ("cumsum flat", |xs| {
            Ok(vec![cumsum(&xs[0], None, false, true)?])
        }),
        ("cumprod", |xs| {
            Ok(vec![cumprod(&xs[0], Some(1), false, true)?])
        }),
        ("cumprod rev excl", |xs| {
            Ok(vec![cumprod(&xs[0], Some(2), true, false)?])
        }),
        ("cummax", |xs| {
            Ok(vec![cummax(&xs[0], Some(1), false, true)?])
        }),
        ("cummin rev", |xs| {
            Ok(vec![cummin(&xs[0], Some(0), true, true)?])
        }),
        ("cummax flat", |xs| {
            Ok(vec![cummax(&xs[0], None, true, true)?])
        }),
        ("sort", |xs| Ok(vec![sort(&xs[0], Some(1))?])),
        ("sort flat", |xs| Ok(vec![sort(&xs[0], None)?])),
        ("topk", |xs| Ok(vec![topk(&xs[0], 2, Some(1))?])),
        ("partition", |xs| Ok(vec![partition(&xs[0], 1, Some(1))?])),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_unary_op(name, *f, &x, &xb, 2, 1, i as u64);
    }
    let idx_ops: Vec<(&str, F)> = vec![
        ("argsort", |xs| Ok(vec![argsort(&xs[0], Some(1))?])),
        ("argpartition", |xs| {
            Ok(vec![argpartition(&xs[0], 2, None)?])
        }),
    ];
    for (name, f) in &idx_ops {
        check_vmap_out(name, *f, &[xb.clone()], &[Some(2)], 0);
    }
}

#[test]
fn elementwise_extras_rules() {
    let mut rng = Rng::new(34);
    let x = rng.array(&[3, 4], -1.0, 1.0);
    let xb = rng.array(&[3, 5, 4], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("astype", |xs| {
            Ok(vec![xs[0].astype(DType::Float32)?.astype(DType::Float64)?])
        }),
        ("nan_to_num", |xs| {
            Ok(vec![nan_to_num(&xs[0], 0.0, None, None)?])
        }),
        ("clip", |xs| {
            Ok(vec![clip(
                &xs[0],
                Some(&Array::from(-0.5)),
                Some(&Array::from(0.5)),
            )?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        if *name != "astype" {
            check_derivatives(name, f, &[x.clone()], i as u64);
        }
        check_vmap_out(name, *f, &[xb.clone()], &[Some(1)], 1);
    }
    // nan_to_num: no gradient through replaced values.
    let v = Array::from_slice(&[1.0f64, f64::NAN, f64::INFINITY], &[3]).unwrap();
    let g = grad(
        |xs| {
            Ok(vec![sum(
                &nan_to_num(&xs[0], 0.0, None, None)?,
                None,
                false,
            )?])
        },
        &[0],
    );
    assert_eq!(
        g(&[v]).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![1.0, 0.0, 0.0]
    );
    let ic = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![
            isclose(&xs[0], &xs[1], 0.1, 0.0, false)?,
            allclose(&xs[0], &xs[1], 0.5, 0.0, false)?,
        ])
    };
    let y = rng.array(&[4], -1.0, 1.0);
    check_vmap("isclose/allclose", ic, &[xb, y], &[Some(1), None]);
    let bits: F = |xs| Ok(vec![view(&xs[0], DType::UInt32)?]);
    check_vmap_out(
        "view",
        bits,
        &[rng.array(&[3, 5, 4], -1.0, 1.0)],
        &[Some(2)],
        0,
    );
}

#[test]
fn second_order_through_new_rules() {
    // Hessian-vector-ish: grad of grad through matmul, softmax and logsumexp.
    let mut rng = Rng::new(35);
    let w = rng.array(&[3, 2], -1.0, 1.0);
    let x = rng.array(&[4, 3], -1.0, 1.0);
    let inner = grad(
        |xs| {
            let l = logsumexp(&matmul(&xs[1], &xs[0])?, Some(&[-1]), false)?;
            Ok(vec![sum(&l, None, false)?])
        },
        &[0],
    );
    let outer_f = move |xs: &[Array]| -> Result<Vec<Array>> {
        let g = inner(xs)?;
        Ok(vec![sum(&multiply(&g[0], &g[0])?, None, false)?])
    };
    check_derivatives("grad of grad", &outer_f, &[w, x], 1);
}

#[test]
fn gather_and_scatter_rules() {
    let mut rng = Rng::new(36);
    let x = rng.array(&[4, 3, 2], -1.0, 1.0);
    let xb = rng.array(&[4, 3, 5, 2], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("gather", |xs| {
            let r = idx(&[2, 0, 3, 2], &[2, 2]);
            let c = idx(&[1, 0], &[2, 1]);
            Ok(vec![gather(&xs[0], &[r, c], &[0, 1], &[1, 2, 2])?])
        }),
        ("scatter_add", |xs| {
            let r = idx(&[2, 0, 2], &[3]);
            let u = multiply(
                &slice(&xs[0], &[0, 0, 0], &[3, 2, 2], &[1, 1, 1])?,
                &Array::from(3.0),
            )?;
            let u = reshape(&u, &[3, 1, 2, 2])?;
            Ok(vec![scatter_add(&xs[0], &[r], &u, &[0])?])
        }),
        ("scatter", |xs| {
            let r = idx(&[3, 0], &[2]);
            let c = idx(&[1, 2], &[2]);
            let u = exp(&reshape(
                &slice(&xs[0], &[0, 0, 0], &[2, 1, 2], &[1, 1, 1])?,
                &[2, 1, 1, 2],
            )?)?;
            Ok(vec![scatter(&xs[0], &[r, c], &u, &[0, 1])?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        check_vmap_out(name, *f, &[xb.clone()], &[Some(2)], 1);
    }
    // Batched indices and updates against unbatched and batched sources.
    let ga = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![gather(&xs[0], &[xs[1].clone()], &[1], &[2, 1, 2])?])
    };
    let src = rng.array(&[3, 4, 2], -1.0, 1.0);
    let ib = idx(&[0, 3, 2, 1, 1, 0, 3, 3, 2, 0], &[5, 2]);
    check_vmap(
        "gather batched indices",
        ga,
        &[src.clone(), ib.clone()],
        &[None, Some(0)],
    );
    let srcb = rng.array(&[3, 4, 5, 2], -1.0, 1.0);
    check_vmap(
        "gather both batched",
        ga,
        &[srcb.clone(), ib.clone()],
        &[Some(2), Some(0)],
    );
    let sa = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![scatter_add(&xs[0], &[xs[1].clone()], &xs[2], &[1])?])
    };
    let ub = rng.array(&[2, 5, 3, 1, 2], -1.0, 1.0);
    check_vmap(
        "scatter_add all batched",
        sa,
        &[srcb, ib.clone(), ub.clone()],
        &[Some(2), Some(0), Some(1)],
    );
    check_vmap(
        "scatter_add unbatched source",
        sa,
        &[src, ib, ub],
        &[None, Some(0), Some(1)],
    );
}

#[test]
fn binary_op_rules() {
    let mut rng = Rng::new(41);
    // (name, f, a range, b range)
    let fs: Vec<(&str, F, (f64, f64), (f64, f64))> = vec![
        (
            "power",
            |xs| Ok(vec![power(&xs[0], &xs[1])?]),
            (0.5, 2.0),
            (-1.5, 1.5),
        ),
        (
            "arctan2",
            |xs| Ok(vec![arctan2(&xs[0], &xs[1])?]),
            (-1.0, 1.0),
            (0.2, 1.0),
        ),
        (
            "logaddexp",
            |xs| Ok(vec![logaddexp(&xs[0], &xs[1])?]),
            (-2.0, 2.0),
            (-2.0, 2.0),
        ),
        (
            "remainder",
            |xs| Ok(vec![remainder(&xs[0], &xs[1])?]),
            (-3.0, 3.0),
            (0.7, 1.3),
        ),
        (
            "floor_divide",
            |xs| Ok(vec![floor_divide(&xs[0], &xs[1])?]),
            (-3.0, 3.0),
            (0.7, 1.3),
        ),
        (
            "greater",
            |xs| Ok(vec![greater(&xs[0], &xs[1])?]),
            (-1.0, 1.0),
            (-1.0, 1.0),
        ),
        (
            "equal, logical_or",
            |xs| {
                let e = equal(&xs[0], &xs[1])?;
                Ok(vec![logical_or(&e, &less(&xs[0], &xs[1])?)?])
            },
            (-1.0, 1.0),
            (-1.0, 1.0),
        ),
    ];
    for (i, (name, f, ra, rb)) in fs.iter().enumerate() {
        // Same shapes, then broadcasting.
        let a = rng.array(&[3, 4], ra.0, ra.1);
        let b = rng.array(&[3, 4], rb.0, rb.1);
        check_derivatives(name, f, &[a, b], i as u64);
        let a = rng.array(&[2, 1, 4], ra.0, ra.1);
        let b = rng.array(&[3, 1], rb.0, rb.1);
        check_derivatives(&format!("{name} broadcast"), f, &[a, b], i as u64 + 100);
        // vmap: both batched on non-zero axes, and one unbatched.
        let ab = rng.array(&[3, 5, 4], ra.0, ra.1);
        let bb = rng.array(&[4, 5], rb.0, rb.1);
        check_vmap_out(name, *f, &[ab.clone(), bb], &[Some(1), Some(1)], 1);
        let b1 = rng.array(&[4], rb.0, rb.1);
        check_vmap_out(name, *f, &[ab, b1], &[Some(1), None], 2);
    }
    // The exponent's gradient at a zero base is 0 (not NaN).
    let g = grad(
        |xs| Ok(vec![sum(&power(&xs[0], &xs[1])?, None, false)?]),
        &[0, 1],
    );
    let a = Array::from_slice(&[0.0f64, 2.0], &[2]).unwrap();
    let b = Array::from_slice(&[2.0f64, 3.0], &[2]).unwrap();
    let gs = g(&[a, b]).unwrap();
    assert_eq!(gs[0].to_vec::<f64>().unwrap(), vec![0.0, 12.0]);
    let gb = gs[1].to_vec::<f64>().unwrap();
    assert_eq!(gb[0], 0.0);
    assert!((gb[1] - 8.0 * 2f64.ln()).abs() < 1e-12);
    // Integer ops: zero cotangents and tangents, no errors.
    let ia = Array::from_slice(&[3i32, 5, 6], &[3]).unwrap();
    let ib = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let int_fs: Vec<F> = vec![
        |xs| Ok(vec![bitwise_and(&xs[0], &xs[1])?]),
        |xs| Ok(vec![bitwise_xor(&xs[0], &xs[1])?]),
        |xs| Ok(vec![left_shift(&xs[0], &xs[1])?]),
        |xs| Ok(vec![power(&xs[0], &xs[1])?]),
    ];
    for f in int_fs {
        let args = [ia.clone(), ib.clone()];
        let (_, g) = vjp(f, &args, &[ia.clone()]).unwrap();
        assert_eq!(g[0].to_vec::<i32>().unwrap(), vec![0; 3]);
        assert_eq!(g[1].to_vec::<i32>().unwrap(), vec![0; 3]);
        let (_, t) = jvp(f, &args, &args).unwrap();
        assert_eq!(
            t[0].astype(DType::Int32).unwrap().to_vec::<i32>().unwrap(),
            vec![0; 3]
        );
    }
}

#[test]
fn unary_op_rules() {
    let mut rng = Rng::new(42);
    // (name, f, range)
    let fs: Vec<(&str, F, (f64, f64))> = vec![
        ("arcsin", |xs| Ok(vec![arcsin(&xs[0])?]), (-0.9, 0.9)),
        ("arccos", |xs| Ok(vec![arccos(&xs[0])?]), (-0.9, 0.9)),
        ("arctan", |xs| Ok(vec![arctan(&xs[0])?]), (-3.0, 3.0)),
        ("arcsinh", |xs| Ok(vec![arcsinh(&xs[0])?]), (-3.0, 3.0)),
        ("arccosh", |xs| Ok(vec![arccosh(&xs[0])?]), (1.2, 3.0)),
        ("arctanh", |xs| Ok(vec![arctanh(&xs[0])?]), (-0.9, 0.9)),
        ("erfinv", |xs| Ok(vec![erfinv(&xs[0])?]), (-0.9, 0.9)),
        ("round", |xs| Ok(vec![round(&xs[0], 1)?]), (-3.0, 3.0)),
        ("floor", |xs| Ok(vec![floor(&xs[0])?]), (-3.0, 3.0)),
        ("sign", |xs| Ok(vec![sign(&xs[0])?]), (-3.0, 3.0)),
        ("isnan", |xs| Ok(vec![isnan(&xs[0])?]), (-3.0, 3.0)),
        (
            "real imag conjugate",
            |xs| {
                let r = real(&xs[0])?;
                let c = conjugate(&xs[0])?;
                Ok(vec![add(&multiply(&r, &c)?, &imag(&xs[0])?)?])
            },
            (-3.0, 3.0),
        ),
    ];
    for (i, (name, f, r)) in fs.iter().enumerate() {
        let x = rng.array(&[3, 4], r.0, r.1);
        let xb = rng.array(&[3, 5, 4], r.0, r.1);
        check_unary_op(name, *f, &x, &xb, 1, 2, i as u64);
    }
    // Complex parts: tangents are the parts of the tangent, cotangents
    // follow MLX (re -> g, im -> g * i, conj -> conj(g)).
    let z = Array::from_slice(&[Complex64::new(1.0, 2.0)], &[1]).unwrap();
    let tz = Array::from_slice(&[Complex64::new(3.0, -4.0)], &[1]).unwrap();
    let parts = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![real(&xs[0])?, imag(&xs[0])?, conjugate(&xs[0])?])
    };
    let (_, t) = jvp(parts, std::slice::from_ref(&z), std::slice::from_ref(&tz)).unwrap();
    assert_eq!(t[0].to_vec::<f32>().unwrap(), vec![3.0]);
    assert_eq!(t[1].to_vec::<f32>().unwrap(), vec![-4.0]);
    assert_eq!(
        t[2].to_vec::<Complex64>().unwrap(),
        vec![Complex64::new(3.0, 4.0)]
    );
    let g1 = Array::from_slice(&[2.0f32], &[1]).unwrap();
    let (_, g) = vjp(
        |xs| Ok(vec![real(&xs[0])?, imag(&xs[0])?]),
        std::slice::from_ref(&z),
        &[g1.clone(), g1],
    )
    .unwrap();
    assert_eq!(
        g[0].to_vec::<Complex64>().unwrap(),
        vec![Complex64::new(2.0, 2.0)]
    );
}

// ----- convolution ---------------------------------------------------------

/// A conv1d case: (N, L, C_in, C_out, K, stride, padding, dilation, groups).
type Conv1Case = (
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
);

const CONV1_CASES: &[Conv1Case] = &[
    (2, 7, 2, 3, 3, 1, 0, 1, 1),
    (2, 8, 4, 4, 3, 2, 1, 1, 2),
    (1, 9, 3, 6, 2, 3, 2, 2, 3),
    (2, 5, 2, 2, 2, 1, 3, 1, 1),
    (1, 6, 4, 2, 3, 2, 0, 2, 2),
    (1, 4, 1, 1, 4, 1, 0, 1, 1),
    (3, 10, 2, 4, 3, 4, 1, 3, 2),
];

fn conv1_fn(c: Conv1Case) -> impl Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync + Clone {
    move |xs: &[Array]| Ok(vec![conv1d(&xs[0], &xs[1], c.5, c.6, c.7, c.8)?])
}

#[test]
fn conv1d_rules() {
    let mut rng = Rng::new(43);
    for (i, &c) in CONV1_CASES.iter().enumerate() {
        let (n, l, ci, co, k, _, _, _, g) = c;
        let x = rng.array(&[n, l, ci], -1.0, 1.0);
        let w = rng.array(&[co, k, ci / g], -1.0, 1.0);
        let f = conv1_fn(c);
        check_derivatives(&format!("conv1d {c:?}"), &f, &[x, w], i as u64);
        // vmap: input only (batch axis 1), weight only (axis 2), both.
        let xb = rng.array(&[n, 3, l, ci], -1.0, 1.0);
        let wb = rng.array(&[co, k, 3, ci / g], -1.0, 1.0);
        let x = rng.array(&[n, l, ci], -1.0, 1.0);
        let w = rng.array(&[co, k, ci / g], -1.0, 1.0);
        let name = format!("conv1d vmap {c:?}");
        check_vmap_out(&name, f.clone(), &[xb.clone(), w], &[Some(1), None], 2);
        check_vmap_out(&name, f.clone(), &[x, wb.clone()], &[None, Some(2)], 1);
        check_vmap_out(&name, f, &[xb, wb], &[Some(1), Some(2)], 0);
    }
}

#[test]
fn conv2d_rules() {
    let mut rng = Rng::new(44);
    // (x shape, C_out, kernel, stride, padding, dilation, groups)
    type Case = (
        [usize; 4],
        usize,
        (usize, usize),
        (usize, usize),
        (usize, usize),
        (usize, usize),
        usize,
    );
    let cases: &[Case] = &[
        ([2, 5, 4, 2], 3, (3, 2), (1, 1), (0, 0), (1, 1), 1),
        ([1, 6, 5, 4], 4, (2, 3), (2, 1), (1, 0), (1, 2), 2),
        ([2, 7, 6, 3], 3, (3, 3), (2, 3), (1, 2), (2, 1), 3),
        ([1, 3, 4, 2], 2, (1, 1), (2, 2), (2, 0), (1, 1), 1),
    ];
    for (i, &(xs, co, k, s, p, d, g)) in cases.iter().enumerate() {
        let f = move |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![conv2d(&a[0], &a[1], s, p, d, g)?])
        };
        let x = rng.array(&xs, -1.0, 1.0);
        let w = rng.array(&[co, k.0, k.1, xs[3] / g], -1.0, 1.0);
        let name = format!("conv2d {:?}", cases[i]);
        check_derivatives(&name, &f, &[x.clone(), w.clone()], i as u64);
        let xb = rng.array(&[xs[0], xs[1], xs[2], 2, xs[3]], -1.0, 1.0);
        let wb = rng.array(&[2, co, k.0, k.1, xs[3] / g], -1.0, 1.0);
        check_vmap_out(&name, f, &[xb.clone(), w], &[Some(3), None], 1);
        check_vmap_out(&name, f, &[x, wb.clone()], &[None, Some(0)], 3);
        check_vmap_out(&name, f, &[xb, wb], &[Some(3), Some(0)], 2);
    }
    // Second order: the rules are built from convolutions themselves.
    let inner = grad(
        |a| {
            let y = conv2d(&a[0], &a[1], (2, 1), (1, 1), (1, 2), 2)?;
            Ok(vec![sum(&tanh(&y)?, None, false)?])
        },
        &[0, 1],
    );
    let outer = move |a: &[Array]| -> Result<Vec<Array>> {
        let g = inner(a)?;
        Ok(vec![sum(
            &multiply(&g[0], &sum(&g[1], None, false)?)?,
            None,
            false,
        )?])
    };
    let x = rng.array(&[1, 5, 5, 4], -1.0, 1.0);
    let w = rng.array(&[2, 2, 2, 2], -1.0, 1.0);
    check_derivatives("conv2d grad of grad", &outer, &[x, w], 9);
}

// ----- coverage --------------------------------------------------------------

type OpFn = Arc<dyn Fn(&[Array]) -> Result<Vec<Array>> + Send + Sync>;

/// vjp, jvp and vmap of `f` at `args` (ones as cotangents and tangents,
/// two stacked copies of every argument for vmap); returns which failed,
/// with the error, and panics on any result that fails to evaluate.
fn transform_errors(name: &str, f: &OpFn, args: &[Array]) -> Vec<(&'static str, Error)> {
    let mut errors = vec![];
    let outs = f(args).unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    let cots: Vec<Array> = outs.iter().map(|o| ones_like(o).unwrap()).collect();
    let g = f.clone();
    match vjp(move |a| g(a), args, &cots) {
        Ok((_, cts)) => eval(&cts).unwrap_or_else(|e| panic!("{name}: vjp eval: {e}")),
        Err(e) => errors.push(("vjp", e)),
    }
    let tans: Vec<Array> = args.iter().map(|a| ones_like(a).unwrap()).collect();
    let g = f.clone();
    match jvp(move |a| g(a), args, &tans) {
        Ok((_, ts)) => eval(&ts).unwrap_or_else(|e| panic!("{name}: jvp eval: {e}")),
        Err(e) => errors.push(("jvp", e)),
    }
    let stacked: Vec<Array> = args
        .iter()
        .map(|a| stack(&[a.clone(), a.clone()], 0).unwrap())
        .collect();
    let g = f.clone();
    let vf = ferrox::vmap(
        move |a| g(a),
        &vec![Some(0); args.len()],
        &vec![Some(0); outs.len()],
    );
    match vf(&stacked) {
        Ok(ys) => eval(&ys).unwrap_or_else(|e| panic!("{name}: vmap eval: {e}")),
        Err(e) => errors.push(("vmap", e)),
    }
    errors
}

#[test]
fn every_differentiable_op_has_rules() {
    // Ops documented as non-differentiable: vjp and jvp are Unsupported
    // (vmap still works).
    // The decompositions have no rules, as in MLX 0.32.
    const NON_DIFFERENTIABLE: &[&str] = &[
        "view",
        "qr",
        "svd",
        "eigh",
        "eigvalsh",
        "lu_factor",
        "lu",
        "pinv",
        "det 4x4",
        "slogdet 4x4",
    ];

    let mut rng = Rng::new(45);
    let x = rng.array(&[2, 3], 0.2, 0.9);
    let y = rng.array(&[2, 3], 0.2, 0.9);
    let m = rng.array(&[3, 3], 0.2, 0.9);
    let v = rng.array(&[3], 0.2, 0.9);
    let ints = Array::from_slice(&[3i32, 5, 6, 1, 2, 7], &[2, 3]).unwrap();
    let shifts = Array::from_slice(&[1i32, 2, 0, 3, 1, 2], &[2, 3]).unwrap();
    let z =
        Array::from_slice(&[Complex64::new(1.0, 2.0), Complex64::new(-0.5, 0.3)], &[2]).unwrap();
    let x1 = rng.array(&[2, 7, 4], -1.0, 1.0);
    let w1 = rng.array(&[4, 3, 2], -1.0, 1.0);
    let x2 = rng.array(&[1, 5, 4, 2], -1.0, 1.0);
    let w2 = rng.array(&[2, 2, 3, 2], -1.0, 1.0);
    fn i2() -> Array {
        idx(&[1, 0], &[2])
    }
    fn i23() -> Array {
        idx(&[2, 0, 1, 1, 2, 0], &[2, 3])
    }

    let mut cases: Vec<(&str, OpFn, Vec<Array>)> = vec![];
    macro_rules! case {
        ($name:expr, [$($arg:expr),*], |$a:ident| $body:expr) => {
            cases.push((
                $name,
                Arc::new(|$a: &[Array]| -> Result<Vec<Array>> { Ok(vec![$body]) }),
                vec![$($arg.clone()),*],
            ));
        };
    }
    // Unary.
    case!("abs", [x], |a| abs(&a[0])?);
    case!("arccos", [x], |a| arccos(&a[0])?);
    case!("arccosh", [x], |a| arccosh(&add(
        &a[0],
        &Array::from(1.0)
    )?)?);
    case!("arcsin", [x], |a| arcsin(&a[0])?);
    case!("arcsinh", [x], |a| arcsinh(&a[0])?);
    case!("arctan", [x], |a| arctan(&a[0])?);
    case!("arctanh", [x], |a| arctanh(&a[0])?);
    case!("bitwise_invert", [ints], |a| bitwise_invert(&a[0])?);
    case!("ceil", [x], |a| ceil(&a[0])?);
    case!("conjugate", [z], |a| conjugate(&a[0])?);
    case!("cos", [x], |a| cos(&a[0])?);
    case!("cosh", [x], |a| cosh(&a[0])?);
    case!("erf", [x], |a| erf(&a[0])?);
    case!("erfinv", [x], |a| erfinv(&a[0])?);
    case!("exp", [x], |a| exp(&a[0])?);
    case!("expm1", [x], |a| expm1(&a[0])?);
    case!("floor", [x], |a| floor(&a[0])?);
    case!("imag", [z], |a| imag(&a[0])?);
    case!("isfinite", [x], |a| isfinite(&a[0])?);
    case!("isinf", [x], |a| isinf(&a[0])?);
    case!("isnan", [x], |a| isnan(&a[0])?);
    case!("log", [x], |a| log(&a[0])?);
    case!("log10", [x], |a| log10(&a[0])?);
    case!("log1p", [x], |a| log1p(&a[0])?);
    case!("log2", [x], |a| log2(&a[0])?);
    case!("logical_not", [x], |a| logical_not(&a[0])?);
    case!("negative", [x], |a| negative(&a[0])?);
    case!("real", [z], |a| real(&a[0])?);
    case!("reciprocal", [x], |a| reciprocal(&a[0])?);
    case!("round", [x], |a| round(&a[0], 1)?);
    case!("rsqrt", [x], |a| rsqrt(&a[0])?);
    case!("sigmoid", [x], |a| sigmoid(&a[0])?);
    case!("sign", [x], |a| sign(&a[0])?);
    case!("sin", [x], |a| sin(&a[0])?);
    case!("sinh", [x], |a| sinh(&a[0])?);
    case!("sqrt", [x], |a| sqrt(&a[0])?);
    case!("square", [x], |a| square(&a[0])?);
    case!("tan", [x], |a| tan(&a[0])?);
    case!("tanh", [x], |a| tanh(&a[0])?);
    // Binary.
    case!("add", [x, y], |a| add(&a[0], &a[1])?);
    case!("arctan2", [x, y], |a| arctan2(&a[0], &a[1])?);
    case!("divide", [x, y], |a| divide(&a[0], &a[1])?);
    case!("equal", [x, y], |a| equal(&a[0], &a[1])?);
    case!("floor_divide", [x, y], |a| floor_divide(&a[0], &a[1])?);
    case!("greater", [x, y], |a| greater(&a[0], &a[1])?);
    case!("greater_equal", [x, y], |a| greater_equal(&a[0], &a[1])?);
    case!("less", [x, y], |a| less(&a[0], &a[1])?);
    case!("less_equal", [x, y], |a| less_equal(&a[0], &a[1])?);
    case!("logaddexp", [x, y], |a| logaddexp(&a[0], &a[1])?);
    case!("logical_and", [x, y], |a| logical_and(&a[0], &a[1])?);
    case!("logical_or", [x, y], |a| logical_or(&a[0], &a[1])?);
    case!("maximum", [x, y], |a| maximum(&a[0], &a[1])?);
    case!("minimum", [x, y], |a| minimum(&a[0], &a[1])?);
    case!("multiply", [x, y], |a| multiply(&a[0], &a[1])?);
    case!("not_equal", [x, y], |a| not_equal(&a[0], &a[1])?);
    case!("power", [x, y], |a| power(&a[0], &a[1])?);
    case!("remainder", [x, y], |a| remainder(&a[0], &a[1])?);
    case!("subtract", [x, y], |a| subtract(&a[0], &a[1])?);
    case!("bitwise_and", [ints, shifts], |a| bitwise_and(
        &a[0], &a[1]
    )?);
    case!("bitwise_or", [ints, shifts], |a| bitwise_or(&a[0], &a[1])?);
    case!("bitwise_xor", [ints, shifts], |a| bitwise_xor(
        &a[0], &a[1]
    )?);
    case!("left_shift", [ints, shifts], |a| left_shift(&a[0], &a[1])?);
    case!("right_shift", [ints, shifts], |a| right_shift(
        &a[0], &a[1]
    )?);
    // Casts.
    case!("astype", [x], |a| a[0].astype(DType::Float32)?);
    case!("view", [x], |a| view(&a[0], DType::Int64)?);
    // Convolution.
    case!("conv1d", [x1, w1], |a| conv1d(&a[0], &a[1], 2, 1, 2, 2)?);
    case!("conv2d", [x2, w2], |a| conv2d(
        &a[0],
        &a[1],
        (2, 1),
        (1, 1),
        (1, 1),
        1
    )?);
    // Indexing.
    case!("gather", [m], |a| gather(&a[0], &[i2()], &[0], &[1, 3])?);
    case!("put_along_axis", [x, v], |a| put_along_axis(
        &a[0],
        &idx(&[1, 0, 1], &[1, 3]),
        &reshape(&a[1], &[1, 3])?,
        Some(0)
    )?);
    case!("scatter", [m, x], |a| scatter(
        &a[0],
        &[i2()],
        &reshape(&a[1], &[2, 1, 3])?,
        &[0]
    )?);
    case!("scatter_add", [m, x], |a| scatter_add(
        &a[0],
        &[i2()],
        &reshape(&a[1], &[2, 1, 3])?,
        &[0]
    )?);
    case!("scatter_prod", [m, x], |a| scatter_prod(
        &a[0],
        &[i2()],
        &reshape(&a[1], &[2, 1, 3])?,
        &[0]
    )?);
    case!("scatter_max", [m, x], |a| scatter_max(
        &a[0],
        &[i2()],
        &reshape(&a[1], &[2, 1, 3])?,
        &[0]
    )?);
    case!("scatter_min", [m, x], |a| scatter_min(
        &a[0],
        &[i2()],
        &reshape(&a[1], &[2, 1, 3])?,
        &[0]
    )?);
    case!("at set", [m, x], |a| a[0].at(i2())?.set(&a[1])?);
    case!("at add", [m, x], |a| a[0].at(i2())?.add(&a[1])?);
    case!("at subtract", [m, x], |a| a[0].at(i2())?.subtract(&a[1])?);
    case!("at multiply", [m, x], |a| a[0].at(i2())?.multiply(&a[1])?);
    case!("at maximum", [m, x], |a| a[0].at(i2())?.maximum(&a[1])?);
    case!("at minimum", [m, x], |a| a[0].at(i2())?.minimum(&a[1])?);
    case!("slice_update", [m, x], |a| slice_update(
        &a[0],
        &a[1],
        &[1, 0],
        &[3, 3],
        None
    )?);
    case!("take", [m], |a| take(&a[0], &i23(), Some(1))?);
    case!("take_along_axis", [m], |a| take_along_axis(
        &a[0],
        &idx(&[2, 0, 1], &[3, 1]),
        Some(1)
    )?);
    // Joining.
    case!("concatenate", [x, y], |a| concatenate(
        &[a[0].clone(), a[1].clone()],
        1
    )?);
    case!("diag", [v], |a| diag(&a[0], 1)?);
    case!("meshgrid", [v, v], |a| meshgrid(a, false, "xy")?[1].clone());
    case!("pad", [x], |a| pad(
        &a[0],
        &[(1, 0), (0, 2)],
        PadMode::Edge
    )?);
    case!("repeat", [x], |a| repeat(&a[0], 2, Some(1))?);
    case!("roll", [x], |a| roll(&a[0], &[1], Some(&[1]))?);
    case!("split", [x], |a| split(&a[0], 3, 1)?[1].clone());
    case!("stack", [x, y], |a| stack(
        &[a[0].clone(), a[1].clone()],
        1
    )?);
    case!("tile", [x], |a| tile(&a[0], &[2, 1])?);
    case!("tril", [m], |a| tril(&a[0], 0)?);
    case!("triu", [m], |a| triu(&a[0], 1)?);
    // Linear algebra.
    case!("einsum", [x, m], |a| einsum("ij,jk->ik", a)?);
    case!("inner", [x, v], |a| inner(&a[0], &a[1])?);
    case!("kron", [x, v], |a| kron(&a[0], &a[1])?);
    case!("outer", [v, v], |a| outer(&a[0], &a[1])?);
    case!("tensordot", [x, m], |a| tensordot(&a[0], &a[1], 1)?);
    case!("matmul", [x, m], |a| matmul(&a[0], &a[1])?);
    case!("addmm", [v, x, m], |a| addmm(
        &a[0], &a[1], &a[2], 0.5, 2.0
    )?);
    // Quantized products: x (and the affine scales and biases) are
    // differentiable, the packed codes are not.
    case!("quantized_matmul", [x1], |a| {
        let (wq, s, b) = qweights(3, 64)?;
        let x = reshape(&a[0], &[2, 28])?;
        let x = concatenate(&[x.clone(), x.clone(), x], 1)?;
        let x = slice(&x, &[0, 0], &[2, 64], &[1, 1])?.astype(DType::Float32)?;
        quantized_matmul(&x, &wq, &s, b.as_ref(), true, Some(32), Some(4), "affine")?
    });
    case!("dequantize", [x1], |a| {
        let (wq, s, b) = qweights(3, 64)?;
        let b = b.ok_or_else(|| Error::new(ErrorKind::Value, "test", "biases"))?;
        let s2 = &s * &sum(&a[0], None, false)?.astype(DType::Float32)?;
        dequantize(&wq, &s2?, Some(&b), Some(32), Some(4), "affine", None, None)?
    });
    // Reductions.
    case!("all", [x], |a| all(&a[0], Some(&[1]), false)?);
    case!("any", [x], |a| ferrox::any(&a[0], Some(&[1]), false)?);
    case!("argmax", [x], |a| argmax(&a[0], Some(1), false)?);
    case!("argmin", [x], |a| argmin(&a[0], Some(1), false)?);
    case!("max", [x], |a| max(&a[0], Some(&[1]), false)?);
    case!("mean", [x], |a| mean(&a[0], Some(&[1]), false)?);
    case!("min", [x], |a| min(&a[0], Some(&[1]), false)?);
    case!("prod", [x], |a| prod(&a[0], Some(&[1]), false)?);
    case!("std", [x], |a| std(&a[0], Some(&[1]), false, 0)?);
    case!("sum", [x], |a| sum(&a[0], Some(&[1]), false)?);
    case!("var", [x], |a| var(&a[0], Some(&[1]), true, 1)?);
    // Scans.
    case!("cummax", [x], |a| cummax(&a[0], Some(1), false, true)?);
    case!("cummin", [x], |a| cummin(&a[0], Some(1), true, true)?);
    case!("cummax exclusive", [x], |a| cummax(
        &a[0],
        Some(1),
        false,
        false
    )?);
    case!("cummin exclusive", [x], |a| cummin(
        &a[0], None, true, false
    )?);
    case!("cumprod", [x], |a| cumprod(&a[0], Some(1), false, false)?);
    case!("cumsum", [x], |a| cumsum(&a[0], Some(1), true, false)?);
    // Softmax.
    case!("logsumexp", [x], |a| logsumexp(&a[0], Some(&[1]), false)?);
    case!("softmax", [x], |a| softmax(&a[0], Some(&[1]), false)?);
    // Sorting.
    case!("argpartition", [x], |a| argpartition(&a[0], 1, Some(1))?);
    case!("argsort", [x], |a| argsort(&a[0], Some(1))?);
    case!("partition", [x], |a| partition(&a[0], 1, Some(1))?);
    case!("sort", [x], |a| sort(&a[0], Some(1))?);
    case!("topk", [x], |a| topk(&a[0], 2, Some(1))?);
    // Ternary.
    case!("allclose", [x, y], |a| allclose(
        &a[0], &a[1], 0.1, 0.0, false
    )?);
    case!("array_equal", [x, y], |a| array_equal(&a[0], &a[1], false)?);
    case!("clip", [x, y], |a| clip(&a[0], Some(&a[1]), None)?);
    case!("isclose", [x, y], |a| isclose(
        &a[0], &a[1], 0.1, 0.0, false
    )?);
    case!("nan_to_num", [x], |a| nan_to_num(&a[0], 0.0, None, None)?);
    case!("where", [x, y], |a| r#where(
        &greater(&a[0], &a[1])?,
        &a[0],
        &a[1]
    )?);
    // Views.
    case!("broadcast_arrays", [x, v], |a| broadcast_arrays(a)?[1]
        .clone());
    case!("broadcast_to", [v], |a| broadcast_to(&a[0], &[2, 3])?);
    case!("contiguous", [m], |a| contiguous(&transpose(&a[0], None)?)?);
    case!("diagonal", [m], |a| diagonal(&a[0], 0, 0, 1)?);
    case!("expand_dims", [x], |a| expand_dims(&a[0], &[1])?);
    case!("flatten", [x], |a| flatten(&a[0], 0, 1)?);
    case!("index", [m], |a| a[0].index(&[SliceArg::Index(1)])?);
    case!("moveaxis", [x], |a| moveaxis(&a[0], 0, 1)?);
    case!("reshape", [x], |a| reshape(&a[0], &[3, 2])?);
    case!("slice", [m], |a| slice(&a[0], &[2, 0], &[-4, 3], &[-1, 2])?);
    case!("squeeze", [x], |a| squeeze(
        &reshape(&a[0], &[2, 1, 3])?,
        None
    )?);
    case!("swapaxes", [x], |a| swapaxes(&a[0], 0, 1)?);
    case!("transpose", [x], |a| transpose(&a[0], None)?);
    case!("unflatten", [v], |a| unflatten(&a[0], 0, &[1, 3])?);
    // Creation from arrays, gradient stopping.
    case!("ones_like", [x], |a| multiply(&a[0], &ones_like(&a[0])?)?);
    case!("full_like", [x], |a| add(&a[0], &full_like(&a[0], 2.0)?)?);
    case!("stop_gradient", [x], |a| multiply(
        &a[0],
        &stop_gradient(&a[0])?
    )?);
    // Fourier transforms (real results through real/imag) and linalg.
    case!("fft", [x], |a| real(&fft::fft(&a[0], Some(4), -1)?)?);
    case!("ifft", [x], |a| imag(&fft::ifft(&a[0], None, 0)?)?);
    case!("fftn", [x], |a| real(&fft::fftn(&a[0], None, None)?)?);
    case!("rfft", [x], |a| imag(&fft::rfft(&a[0], None, -1)?)?);
    case!("irfft", [z], |a| fft::irfft(&a[0], Some(3), -1)?);
    case!("rfftn", [x], |a| real(&fft::rfftn(
        &a[0],
        Some(&[2, 5]),
        None
    )?)?);
    case!("irfftn", [x], |a| fft::irfftn(&a[0], None, None)?);
    case!("norm", [x], |a| linalg::norm(
        &a[0],
        None,
        Some(&[1]),
        false
    )?);
    case!("norm_matrix", [x], |a| linalg::norm(
        &a[0],
        Some(linalg::NormOrd::P(1.0)),
        None,
        false
    )?);
    case!("cross", [m, v], |a| linalg::cross(&a[0], &a[1], -1)?);
    case!("inv", [m], |a| linalg::inv(&add(
        &a[0],
        &eye(3, None, 0, DType::Float64)?
    )?)?);
    case!("cholesky", [m], |a| linalg::cholesky(
        &add(&a[0], &eye(3, None, 0, DType::Float64)?)?,
        false
    )?);
    case!("tri_inv", [m], |a| linalg::tri_inv(&a[0], true)?);
    case!("solve_triangular", [m, v], |a| linalg::solve_triangular(
        &a[0], &a[1], false
    )?);
    case!("solve", [m, v], |a| linalg::solve(
        &add(&a[0], &eye(3, None, 0, DType::Float64)?)?,
        &a[1]
    )?);

    let m4 = rng.array(&[4, 4], 0.2, 0.9);
    case!("qr", [m], |a| linalg::qr(&a[0])?.1);
    case!("svd", [m], |a| linalg::svd(&a[0], false)?.remove(0));
    case!("eigh", [m], |a| linalg::eigh(&a[0], false)?.1);
    case!("eigvalsh", [m], |a| linalg::eigvalsh(&a[0], false)?);
    case!("lu_factor", [m], |a| linalg::lu_factor(&a[0])?.0);
    case!("lu", [m], |a| linalg::lu(&a[0])?.2);
    case!("pinv", [m], |a| linalg::pinv(&a[0])?);
    case!("det", [m], |a| linalg::det(&a[0])?);
    case!("slogdet", [m], |a| linalg::slogdet(&a[0])?.1);
    case!("det 4x4", [m4], |a| linalg::det(&a[0])?);
    case!("slogdet 4x4", [m4], |a| linalg::slogdet(&a[0])?.1);
    case!("cholesky_inv", [m], |a| linalg::cholesky_inv(
        &add(&a[0], &eye(3, None, 0, DType::Float64)?)?,
        false
    )?);
    // Fused kernels (float32: float64 inputs take the composed path).
    fn f32(a: &Array) -> Result<Array> {
        a.astype(DType::Float32)
    }
    case!("rms_norm", [x, v], |a| ferrox::fast::rms_norm(
        &f32(&a[0])?,
        Some(&f32(&a[1])?),
        1e-5
    )?);
    case!("layer_norm", [x, v, v], |a| ferrox::fast::layer_norm(
        &f32(&a[0])?,
        Some(&f32(&a[1])?),
        Some(&f32(&a[2])?),
        1e-5
    )?);
    case!("rope", [x1], |a| ferrox::fast::rope(
        &f32(&a[0])?,
        4,
        false,
        Some(10000.0),
        1.0,
        ferrox::fast::RopeOffset::Scalar(3),
        None
    )?);
    case!("scaled_dot_product_attention", [x2, x2, x2], |a| {
        ferrox::fast::scaled_dot_product_attention(
            &f32(&a[0])?,
            &f32(&a[1])?,
            &f32(&a[2])?,
            0.5,
            ferrox::fast::AttentionMask::Causal,
            None,
        )?
    });

    let mut missing = vec![];
    for (name, f, args) in &cases {
        let errors = transform_errors(name, f, args);
        if NON_DIFFERENTIABLE.contains(name) {
            let failed: Vec<&str> = errors
                .iter()
                .filter(|(_, e)| e.kind() == ErrorKind::Unsupported)
                .map(|(t, _)| *t)
                .collect();
            assert_eq!(failed, ["vjp", "jvp"], "{name}: {errors:?}");
            continue;
        }
        for (t, e) in errors {
            missing.push(format!("{name}: {t}: {e}"));
        }
    }
    assert!(
        missing.is_empty(),
        "ops without rules:\n{}",
        missing.join("\n")
    );
}

#[test]
fn scatter_prod_max_min_rules() {
    let mut rng = Rng::new(46);
    let x = rng.array(&[4, 3, 2], -1.0, 1.0);
    let xb = rng.array(&[4, 3, 5, 2], -1.0, 1.0);
    // Duplicate indices (2 twice) so that several updates combine.
    let fs: Vec<(&str, F)> = vec![
        ("scatter_prod", |xs| {
            let r = idx(&[2, 0, 2], &[3]);
            let u = multiply(
                &slice(&xs[0], &[1, 0, 0], &[4, 2, 2], &[1, 1, 1])?,
                &Array::from(3.0),
            )?;
            let u = reshape(&u, &[3, 1, 2, 2])?;
            Ok(vec![scatter_prod(&xs[0], &[r], &u, &[0])?])
        }),
        ("scatter_max", |xs| {
            let r = idx(&[2, 0, 2], &[3]);
            let u = multiply(
                &slice(&xs[0], &[1, 0, 0], &[4, 2, 2], &[1, 1, 1])?,
                &Array::from(1.7),
            )?;
            let u = reshape(&u, &[3, 1, 2, 2])?;
            Ok(vec![scatter_max(&xs[0], &[r], &u, &[0])?])
        }),
        ("scatter_min", |xs| {
            let r = idx(&[3, 1, 3], &[3]);
            let c = idx(&[1, 0, 2], &[3]);
            let u = reshape(
                &exp(&slice(&xs[0], &[0, 0, 0], &[3, 1, 1], &[1, 1, 1])?)?,
                &[3, 1, 1, 1],
            )?;
            let u = subtract(&u, &Array::from(2.0))?;
            Ok(vec![scatter_min(&xs[0], &[r, c], &u, &[0, 1])?])
        }),
        ("at multiply", |xs| {
            let u = slice(&xs[0], &[0, 0, 0], &[2, 3, 2], &[1, 1, 1])?;
            Ok(vec![xs[0].at(idx(&[3, 3], &[2]))?.multiply(&u)?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        check_vmap_out(name, *f, &[xb.clone()], &[Some(2)], 1);
    }
    // prod with zeros among the factors: exact derivatives.
    let sp = |xs: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![scatter_prod(
            &xs[0],
            &[idx(&[1, 1, 0], &[3])],
            &reshape(&xs[1], &[3, 1, 2])?,
            &[0],
        )?])
    };
    let a = Array::from_slice(&[2.0f64, 0.0, 3.0, 5.0], &[2, 2]).unwrap();
    let u = Array::from_slice(&[0.0f64, 2.0, 4.0, 0.0, 7.0, 0.0], &[3, 2]).unwrap();
    let (_, g) = vjp(
        sp,
        &[a.clone(), u.clone()],
        &[ones(&[2, 2], DType::Float64).unwrap()],
    )
    .unwrap();
    // out[0] = a[0] * u[2]; out[1] = a[1] * u[0] * u[1] (elementwise).
    assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![7.0, 0.0, 0.0, 0.0]);
    assert_eq!(
        g[1].to_vec::<f64>().unwrap(),
        vec![12.0, 0.0, 0.0, 10.0, 2.0, 0.0]
    );
    check_derivatives("scatter_prod with zeros", &sp, &[a, u], 7);
}

#[test]
fn exclusive_cummax_cummin_rules() {
    let mut rng = Rng::new(47);
    let x = rng.array(&[3, 5], -1.0, 1.0);
    let xb = rng.array(&[3, 4, 5], -1.0, 1.0);
    let fs: Vec<(&str, F)> = vec![
        ("cummax exclusive", |xs| {
            // Replace the identity (-inf) in front so differences stay finite.
            let y = cummax(&xs[0], Some(1), false, false)?;
            Ok(vec![maximum(&y, &Array::from(-5.0))?])
        }),
        ("cummin exclusive reverse", |xs| {
            let y = cummin(&xs[0], Some(1), true, false)?;
            Ok(vec![minimum(&y, &Array::from(5.0))?])
        }),
        ("cummax exclusive flat reverse", |xs| {
            let y = cummax(&xs[0], None, true, false)?;
            Ok(vec![maximum(&y, &Array::from(-5.0))?])
        }),
    ];
    for (i, (name, f)) in fs.iter().enumerate() {
        check_derivatives(name, f, &[x.clone()], i as u64);
        check_vmap_out(name, *f, &[xb.clone()], &[Some(1)], 0);
    }
}

#[test]
fn vmap_applies_a_single_out_axis_to_every_output() {
    let f = vmap(
        |xs: &[Array]| Ok(vec![multiply(&xs[0], &xs[0])?, add(&xs[0], &xs[0])?]),
        &[Some(0)],
        &[Some(1)],
    );
    let x = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
    let out = f(std::slice::from_ref(&x)).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].shape(), &[2, 3]);
    assert_eq!(
        out[0].to_vec::<f32>().unwrap(),
        vec![1.0, 9.0, 25.0, 4.0, 16.0, 36.0]
    );
    assert_eq!(
        out[1].to_vec::<f32>().unwrap(),
        vec![2.0, 6.0, 10.0, 4.0, 8.0, 12.0]
    );
}

/// A fixed `[rows, k]` weight quantized with group size 32 and 4 bits.
fn qweights(rows: usize, k: usize) -> Result<(Array, Array, Option<Array>)> {
    let n = (rows * k) as f64;
    let w = sin(&arange(0.0, n, 1.0, DType::Float32)?)?.reshape(&[rows as isize, k as isize])?;
    quantize(&w, Some(32), Some(4), "affine", None)
}

#[test]
fn quantized_rules() {
    let (wq, s, b) = qweights(5, 64).unwrap();
    let b = b.unwrap();
    let (wqn, sn, bn) = qweights(64, 32).unwrap();
    let bn = bn.unwrap();
    let mut rng = Rng::new(77);
    let f32_ = |a: &Array| a.astype(DType::Float32);
    // The x-gradient (both layouts); functions of f64 inputs computed in f32.
    {
        let (wq, s, b) = (wq.clone(), s.clone(), b.clone());
        let f = move |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![quantized_matmul(
                &f32_(&a[0])?,
                &wq,
                &s,
                Some(&b),
                true,
                Some(32),
                Some(4),
                "affine",
            )?])
        };
        common::checks::check_derivatives_with(
            "qmm x",
            &f,
            &[rng.array(&[3, 64], -1.0, 1.0)],
            1,
            1e-2,
            1e-3,
        );
    }
    {
        let (wq, s, b) = (wqn.clone(), sn.clone(), bn.clone());
        let f = move |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![quantized_matmul(
                &f32_(&a[0])?,
                &wq,
                &s,
                Some(&b),
                false,
                Some(32),
                Some(4),
                "affine",
            )?])
        };
        common::checks::check_derivatives_with(
            "qmm x transposed",
            &f,
            &[rng.array(&[2, 3, 64], -1.0, 1.0)],
            2,
            1e-2,
            1e-3,
        );
    }
    // Scales and biases (MLX has these rules too).
    {
        let (wq, x) = (
            wq.clone(),
            rng.array(&[4, 64], -1.0, 1.0)
                .astype(DType::Float32)
                .unwrap(),
        );
        let f = move |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![quantized_matmul(
                &x,
                &wq,
                &f32_(&a[0])?,
                Some(&f32_(&a[1])?),
                true,
                Some(32),
                Some(4),
                "affine",
            )?])
        };
        let s64 = s.astype(DType::Float64).unwrap();
        let b64 = b.astype(DType::Float64).unwrap();
        common::checks::check_derivatives_with(
            "qmm scales biases",
            &f,
            &[s64.clone(), b64.clone()],
            3,
            1e-2,
            1e-3,
        );
        let wq = wqn.clone();
        let g = move |a: &[Array]| -> Result<Vec<Array>> {
            Ok(vec![dequantize(
                &wq,
                &f32_(&a[0])?,
                Some(&f32_(&a[1])?),
                Some(32),
                Some(4),
                "affine",
                None,
                None,
            )?])
        };
        let sn64 = sn.astype(DType::Float64).unwrap();
        let bn64 = bn.astype(DType::Float64).unwrap();
        common::checks::check_derivatives_with(
            "dequantize scales biases",
            &g,
            &[sn64, bn64],
            4,
            1e-2,
            1e-3,
        );
    }
    // The packed codes have no derivative: a clear Unsupported error.
    let x = ones(&[2, 64], DType::Float32).unwrap();
    let (wq2, s2, b2) = (wq.clone(), s.clone(), b.clone());
    let e = vjp(
        move |a: &[Array]| {
            Ok(vec![quantized_matmul(
                &x,
                &a[0],
                &s2,
                Some(&b2),
                true,
                Some(32),
                Some(4),
                "affine",
            )?])
        },
        &[wq2],
        &[ones(&[2, 5], DType::Float32).unwrap()],
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().starts_with("quantized_matmul: "), "{e}");
    // vmap over x, over the weights, and over both.
    let xs = rng
        .array(&[3, 2, 64], -1.0, 1.0)
        .astype(DType::Float32)
        .unwrap();
    let ws: Vec<Array> = (0..3)
        .map(|i| {
            let w = sin(
                &(arange(0.0, 320.0, 1.0, DType::Float32).unwrap() * (i as f64 + 1.0)).unwrap(),
            )
            .unwrap();
            w.reshape(&[5, 64]).unwrap()
        })
        .collect();
    let wb = stack(&ws, 0).unwrap();
    let (wqb, sb, bb) = quantize(&wb, Some(32), Some(4), "affine", None).unwrap();
    let bb = bb.unwrap();
    let qf = |a: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![quantized_matmul(
            &a[0],
            &a[1],
            &a[2],
            Some(&a[3]),
            true,
            Some(32),
            Some(4),
            "affine",
        )?])
    };
    check_vmap(
        "qmm vmap x",
        qf,
        &[xs.clone(), wq.clone(), s.clone(), b.clone()],
        &[Some(0), None, None, None],
    );
    check_vmap(
        "qmm vmap w",
        qf,
        &[
            ones(&[2, 64], DType::Float32).unwrap(),
            wqb.clone(),
            sb.clone(),
            bb.clone(),
        ],
        &[None, Some(0), Some(0), Some(0)],
    );
    check_vmap(
        "qmm vmap both",
        qf,
        &[xs.clone(), wqb.clone(), sb.clone(), bb.clone()],
        &[Some(0), Some(0), Some(0), Some(0)],
    );
    let xs1 = swapaxes(&xs, 0, 1).unwrap();
    check_vmap(
        "qmm vmap axis 1",
        qf,
        &[xs1, wqb.clone(), sb.clone(), bb.clone()],
        &[Some(1), Some(0), Some(0), Some(0)],
    );
    let df = |a: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![dequantize(
            &a[0],
            &a[1],
            Some(&a[2]),
            Some(32),
            Some(4),
            "affine",
            None,
            None,
        )?])
    };
    check_vmap(
        "dequantize vmap",
        df,
        &[wqb.clone(), sb.clone(), b.clone()],
        &[Some(0), Some(0), None],
    );
    let quf = |a: &[Array]| -> Result<Vec<Array>> {
        let (q, s, b) = quantize(&a[0], Some(32), Some(4), "affine", None)?;
        Ok(vec![
            q,
            s,
            b.ok_or_else(|| Error::new(ErrorKind::Value, "test", "biases"))?,
        ])
    };
    check_vmap("quantize vmap", quf, &[wb.clone()], &[Some(0)]);
    // gather_qmm's x-gradient (through take and the product's rule).
    let li = Array::from_slice(&[2u32, 0, 1, 1], &[4]).unwrap();
    let ri = Array::from_slice(&[1u32, 2, 0, 2], &[4]).unwrap();
    let f = move |a: &[Array]| -> Result<Vec<Array>> {
        Ok(vec![gather_qmm(
            &f32_(&a[0])?,
            &wqb,
            &sb,
            Some(&bb),
            Some(&li),
            Some(&ri),
            true,
            Some(32),
            Some(4),
            "affine",
            false,
        )?])
    };
    common::checks::check_derivatives_with(
        "gather_qmm x",
        &f,
        &[rng.array(&[3, 2, 64], -1.0, 1.0)],
        5,
        1e-2,
        1e-3,
    );
}
