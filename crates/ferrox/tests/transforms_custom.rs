//! `custom_function` rules and `checkpoint` under every transform, nested,
//! compiled and from several threads.

mod common;

use common::{join_within, watchdog};
use ferrox::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn x64(v: &[f64]) -> Array {
    Array::from_slice(v, &[v.len()]).unwrap()
}

fn vals(a: &Array) -> Vec<f64> {
    a.to_vec::<f64>().unwrap()
}

#[test]
fn checkpoint_recomputes_in_the_backward_pass_and_matches_plain_grad() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = {
        let calls = calls.clone();
        move |xs: &[Array]| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(vec![sum(&multiply(&tanh(&xs[0])?, &xs[1])?, None, false)?])
        }
    };
    let x = x64(&[0.5, -1.0, 2.0]);
    let w = x64(&[1.5, 0.25, -2.0]);
    let plain = grad(counted.clone(), &[0, 1])(&[x.clone(), w.clone()]).unwrap();
    let before = calls.load(Ordering::SeqCst);
    let ck = grad(checkpoint(counted), &[0, 1])(&[x, w]).unwrap();
    // Forward once, then once more to differentiate.
    assert_eq!(calls.load(Ordering::SeqCst) - before, 2);
    for (p, c) in plain.iter().zip(&ck) {
        assert_eq!(vals(p), vals(c));
    }
}

#[test]
fn checkpoint_without_transforms_is_the_function() {
    let f = checkpoint(|xs: &[Array]| Ok(vec![exp(&xs[0])?]));
    assert_eq!(vals(&f(&[x64(&[0.0])]).unwrap()[0]), vec![1.0]);
}

#[test]
fn second_derivatives_through_checkpoint() {
    // d2/dx2 sin(x) = -sin(x).
    let f = checkpoint(|xs: &[Array]| Ok(vec![sum(&sin(&xs[0])?, None, false)?]));
    let g = grad(f, &[0]);
    let gsum = move |xs: &[Array]| Ok(vec![sum(&g(xs)?[0], None, false)?]);
    let h = grad(gsum, &[0]);
    let x = x64(&[0.3, 1.1]);
    let got = vals(&h(&[x]).unwrap()[0]);
    let want = [-(0.3f64.sin()), -(1.1f64.sin())];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{got:?}");
    }
}

#[test]
fn custom_rules_replace_the_derived_ones() {
    let f = custom_function(|xs: &[Array]| Ok(vec![exp(&xs[0])?, multiply(&xs[0], &xs[1])?]))
        .with_vjp(Arc::new(|p: &[Array], ct: &[Array], _o: &[Array]| {
            // Deliberately not the true derivative, to see the rule used.
            Ok(vec![
                add(&(&ct[0] * 10.0)?, &ct[1])?,
                multiply(&ct[1], &p[0])?,
            ])
        }))
        .with_jvp(Arc::new(|_p: &[Array], t: &[Array]| {
            Ok(vec![(&t[0] * 3.0)?, (&t[1] * 5.0)?])
        }));
    let x = x64(&[1.0, 2.0]);
    let y = x64(&[3.0, 4.0]);
    // Values are the function's.
    let out = f.call(&[x.clone(), y.clone()]).unwrap();
    assert_eq!(vals(&out[1]), vec![3.0, 8.0]);
    // vjp with both outputs' cotangents: the rule sees them together
    // (summed over the two output nodes, by linearity).
    let ones = ones_like(&x).unwrap();
    let (_, ct) = vjp(
        f.as_fn(),
        &[x.clone(), y.clone()],
        &[ones.clone(), ones.clone()],
    )
    .unwrap();
    assert_eq!(vals(&ct[0]), vec![11.0, 11.0]);
    assert_eq!(vals(&ct[1]), vec![1.0, 2.0]);
    // jvp uses the jvp rule.
    let (_, t) = jvp(
        f.as_fn(),
        &[x.clone(), y.clone()],
        &[ones.clone(), ones.clone()],
    )
    .unwrap();
    assert_eq!(vals(&t[0]), vec![3.0, 3.0]);
    assert_eq!(vals(&t[1]), vec![5.0, 5.0]);
}

#[test]
fn custom_vmap_rule_and_derived_vmap() {
    let seen = Arc::new(AtomicUsize::new(0));
    let rule_seen = seen.clone();
    let f = custom_function(|xs: &[Array]| Ok(vec![sum(&xs[0], None, false)?])).with_vmap(
        Arc::new(move |xs: &[Array], axes: &[Option<usize>]| {
            rule_seen.fetch_add(1, Ordering::SeqCst);
            let ax = axes[0].unwrap_or(0) as isize;
            let moved = moveaxis(&xs[0], ax, 0)?;
            Ok((vec![sum(&moved, Some(&[1]), false)?], vec![Some(0)]))
        }),
    );
    let rows = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let v = vmap(f.as_fn(), &[Some(1)], &[Some(0)]);
    assert_eq!(
        vals(&v(std::slice::from_ref(&rows)).unwrap()[0]),
        vec![5.0, 7.0, 9.0]
    );
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    // Without a rule, vmap is derived from the function.
    let g = checkpoint(|xs: &[Array]| Ok(vec![sum(&xs[0], None, false)?]));
    let v = vmap(g, &[Some(0)], &[Some(0)]);
    assert_eq!(vals(&v(&[rows]).unwrap()[0]), vec![6.0, 15.0]);
}

#[test]
fn compiled_gradients_through_checkpoint_from_many_threads() {
    watchdog(120, || {
        let f = checkpoint(|xs: &[Array]| Ok(vec![sum(&square(&sin(&xs[0])?)?, None, false)?]));
        let step = compile(grad(f, &[0]));
        let x = x64(&[0.1, 0.2, 0.3, 0.4]);
        let want: Vec<f64> = [0.1f64, 0.2, 0.3, 0.4]
            .iter()
            .map(|v| 2.0 * v.sin() * v.cos())
            .collect();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (step, x) = (step.clone(), x.clone());
                std::thread::spawn(move || vals(&step.call(&[x]).unwrap()[0]))
            })
            .collect();
        for h in handles {
            let got = join_within(60, h);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "{got:?}");
            }
        }
        assert_eq!(step.traces(), 1);
    });
}
