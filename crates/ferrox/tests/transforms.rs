//! Transforms: derivatives against finite differences (f64), vmap against
//! a loop, nesting, and isolation between threads (contract item 6).

mod common;

use common::checks::{check_derivatives, check_vmap, Rng};
use common::{join_within, watchdog};
use ferrox::transforms::TraceKind;
use ferrox::*;
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
        |xs| Ok(vec![sort(&xs[0], Some(0))?]),
        std::slice::from_ref(&x),
        std::slice::from_ref(&x),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("vjp"), "{err}");
}
