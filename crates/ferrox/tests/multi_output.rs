//! Nodes with several outputs (`divmod`) through compile and the
//! transforms: traced, simplified, replayed (also shapeless), and
//! differentiated through a compiled function.

use ferrox::*;

fn arr(v: &[f32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn bits(a: &Array) -> Vec<u32> {
    a.to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

#[test]
fn a_compiled_function_replays_both_outputs_of_one_group() {
    let f = compile(|xs: &[Array]| {
        let (q, r) = divmod(&xs[0], &xs[1])?;
        Ok(vec![q, r])
    });
    let (a, b) = (arr(&[7.5, -7.5, 3.0], &[3]), arr(&[2.0, 2.0, -0.5], &[3]));
    for _ in 0..3 {
        let y = f.call(&[a.clone(), b.clone()]).unwrap();
        // Asked before evaluation: an evaluated node is detached.
        let (g0, i0) = y[0].output_of().unwrap();
        let (g1, i1) = y[1].output_of().unwrap();
        assert_eq!((g0.id(), i0, i1), (g1.id(), 0, 1), "one group, two outputs");
        assert_eq!(g0.primitive().unwrap().name(), "divmod");
        let (q, r) = divmod(&a, &b).unwrap();
        assert_eq!((bits(&y[0]), bits(&y[1])), (bits(&q), bits(&r)));
        assert!(y[0].output_of().is_none(), "detached once evaluated");
    }
    assert_eq!(f.traces(), 1);
}

#[test]
fn simplification_merges_equal_groups_but_never_two_outputs() {
    // divmod twice on the same operands is one group after CSE; its
    // quotient and remainder stay apart.
    let f = compile(|xs: &[Array]| {
        let (q1, _) = divmod(&xs[0], &xs[1])?;
        let (_, r2) = divmod(&xs[0], &xs[1])?;
        Ok(vec![q1, r2])
    });
    let (a, b) = (arr(&[9.0, -9.0], &[2]), arr(&[4.0, 4.0], &[2]));
    let y = f.call(&[a.clone(), b.clone()]).unwrap();
    let (g0, _) = y[0].output_of().unwrap();
    let (g1, _) = y[1].output_of().unwrap();
    assert_eq!(g0.id(), g1.id(), "the two groups merged");
    assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![2.0, -3.0]);
    assert_eq!(y[1].to_vec::<f32>().unwrap(), vec![1.0, 3.0]);
}

#[test]
fn a_shapeless_replay_infers_every_output_shape() {
    let f = compile_shapeless(|xs: &[Array]| {
        let (q, r) = divmod(&xs[0], &xs[1])?;
        Ok(vec![q, r])
    });
    let small = f.call(&[arr(&[5.0], &[1]), arr(&[2.0], &[1])]).unwrap();
    assert_eq!(small[1].to_vec::<f32>().unwrap(), vec![1.0]);
    let a = arr(&[5.0, 6.0, 7.0, 8.0], &[4]);
    let y = f.call(&[a.clone(), arr(&[3.0], &[1])]).unwrap();
    assert_eq!(f.traces(), 1);
    assert_eq!((y[0].shape(), y[1].shape()), (&[4][..], &[4][..]));
    assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![1.0, 2.0, 2.0, 2.0]);
    assert_eq!(y[1].to_vec::<f32>().unwrap(), vec![2.0, 0.0, 1.0, 2.0]);
}

#[test]
fn gradients_flow_through_a_compiled_function_with_a_group() {
    let f = compile(|xs: &[Array]| {
        let (q, r) = divmod(&xs[0], &xs[1])?;
        Ok(vec![sum(&add(&q, &multiply(&r, &r)?)?, None, false)?])
    });
    let g = grad(move |xs| f.call(xs), &[0, 1]);
    let (a, b) = (arr(&[7.0, -7.5], &[2]), arr(&[2.0, 2.0], &[2]));
    let got = g(&[a, b]).unwrap();
    // d/da sum(q + r^2) = 2r; d/db = 2r * (-q).
    assert_eq!(got[0].to_vec::<f32>().unwrap(), vec![2.0, 1.0]);
    assert_eq!(got[1].to_vec::<f32>().unwrap(), vec![-6.0, 4.0]);
}

#[test]
fn vmap_of_a_compiled_function_with_a_group() {
    let f = compile(|xs: &[Array]| {
        let (q, r) = divmod(&xs[0], &xs[1])?;
        Ok(vec![q, r])
    });
    let v = vmap(move |xs| f.call(xs), &[Some(1), None], &[Some(0)]);
    let a = arr(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = v(&[a, Array::from(2.0f32)]).unwrap();
    assert_eq!(y[0].shape(), &[3, 2]);
    assert_eq!(
        y[0].to_vec::<f32>().unwrap(),
        vec![0.0, 2.0, 1.0, 2.0, 1.0, 3.0]
    );
    assert_eq!(
        y[1].to_vec::<f32>().unwrap(),
        vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    );
}
