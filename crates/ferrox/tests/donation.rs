//! Buffer donation (see `Primitive::eval_cpu_donating`): a compiled
//! elementwise program may write its outputs over input buffers that no
//! one else holds, and never over one that any thread still reads.

mod common;

use common::join_within;
use ferrox::*;
use std::sync::{Arc, Barrier};

const N: usize = 70_001; // three chunks, the last partial

fn ramp(scale: f32) -> Array {
    let v: Vec<f32> = (0..N).map(|i| (i % 613) as f32 * scale).collect();
    Array::from_slice(&v, &[N]).expect("ramp")
}

/// An AdamW-like update: three outputs, each the same size as an input.
fn update() -> CompiledFn {
    compile(|xs: &[Array]| {
        let (p, g, m) = (&xs[0], &xs[1], &xs[2]);
        let m = add(
            &multiply(m, &Array::from(0.9f32))?,
            &multiply(g, &Array::from(0.1f32))?,
        )?;
        let p = subtract(p, &multiply(&m, &Array::from(0.01f32))?)?;
        let g = multiply(g, &Array::from(0.5f32))?;
        Ok(vec![p, g, m])
    })
}

fn expected(p: &[f32], g: &[f32], m: &[f32]) -> [Vec<f32>; 3] {
    let m: Vec<f32> = m.iter().zip(g).map(|(m, g)| m * 0.9 + g * 0.1).collect();
    let p = p.iter().zip(&m).map(|(p, m)| p - m * 0.01).collect();
    let g = g.iter().map(|g| g * 0.5).collect();
    [p, g, m]
}

#[test]
fn shared_inputs_keep_their_values_while_threads_donate_their_own() {
    let threads = 8;
    let f = Arc::new(update());
    // Held by every thread (and this one): never donated.
    let (p, g) = (ramp(1.0), ramp(0.5));
    let (pv, gv) = (p.to_vec::<f32>().unwrap(), g.to_vec::<f32>().unwrap());
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (f, p, g, start) = (f.clone(), p.clone(), g.clone(), start.clone());
            let (pv, gv) = (pv.clone(), gv.clone());
            std::thread::spawn(move || {
                let scale = 0.25 + t as f32;
                let mv = ramp(scale).to_vec::<f32>().unwrap();
                start.wait();
                for _ in 0..20 {
                    // m is this thread's alone and moves into the call.
                    let outs = f.call(&[p.clone(), g.clone(), ramp(scale)]).unwrap();
                    eval(&outs).unwrap();
                    let want = expected(&pv, &gv, &mv);
                    for (o, w) in outs.iter().zip(&want) {
                        assert_eq!(&o.to_vec::<f32>().unwrap(), w);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        join_within(120, h);
    }
    assert_eq!(p.to_vec::<f32>().unwrap(), pv, "p was overwritten");
    assert_eq!(g.to_vec::<f32>().unwrap(), gv, "g was overwritten");
}

#[test]
fn a_chain_of_steps_reuses_its_state_and_stays_correct() {
    // Parameters in, parameters out, as a training loop does: every step's
    // outputs become the next step's only inputs.
    let f = update();
    let (mut p, g, mut m) = (ramp(1.0), ramp(0.5), ramp(0.25));
    let (mut pv, gv, mut mv) = (
        p.to_vec::<f32>().unwrap(),
        g.to_vec::<f32>().unwrap(),
        m.to_vec::<f32>().unwrap(),
    );
    for _ in 0..5 {
        let outs = f.call(&[p, g.clone(), m]).unwrap();
        eval(&outs).unwrap();
        let [wp, _, wm] = expected(&pv, &gv, &mv);
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), wp);
        assert_eq!(outs[2].to_vec::<f32>().unwrap(), wm);
        (pv, mv) = (wp, wm);
        p = outs[0].clone();
        m = outs[2].clone();
    }
    assert_eq!(g.to_vec::<f32>().unwrap(), gv, "g was overwritten");
}

#[test]
fn gradients_through_a_compiled_program_read_the_inputs_it_was_given() {
    // Contract item 6: a transform still reads the primals of the nodes
    // it differentiates, so `y = exp(x)`, which only the compiled
    // program's call holds, must keep its value for d/dy = 2y + 1. Inside
    // a transform a compiled function is inlined (no fused node runs in
    // the live trace), so this checks the result, not the runtime's
    // live-trace guard on donation itself.
    let g = Arc::new(compile(|xs: &[Array]| {
        let y = &xs[0];
        Ok(vec![add(&multiply(y, y)?, y)?])
    }));
    let inner = g.clone();
    let df = grad(
        move |xs: &[Array]| {
            let out = inner.call(&[exp(&xs[0])?])?;
            Ok(vec![sum(&out[0], None, false)?])
        },
        &[0],
    );
    let x = ramp(1e-4);
    let got = df(std::slice::from_ref(&x)).unwrap()[0]
        .to_vec::<f32>()
        .unwrap();
    let want: Vec<f32> = x
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|&v| {
            let y = v.exp();
            (2.0 * y + 1.0) * y
        })
        .collect();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} against {w}");
    }
}
