//! Fusion of elementwise chains in compiled functions: compiled results
//! are bitwise equal to uncompiled ones over random elementwise graphs
//! (broadcast inputs, several outputs, shared intermediates), chains become
//! one `fused` node, and large and shapeless calls take the chunked,
//! parallel and whole-array paths correctly.

mod common;

use common::checks::Rng;
use ferrox::*;
use proptest::prelude::*;

/// One random elementwise instruction: an op and two operand picks.
#[derive(Debug, Clone, Copy)]
struct Op {
    kind: u8,
    a: usize,
    b: usize,
}

const KINDS: u8 = 14;

fn apply(op: Op, pool: &[Array]) -> Result<Array> {
    let a = &pool[op.a % pool.len()];
    let b = &pool[op.b % pool.len()];
    match op.kind % KINDS {
        0 => add(a, b),
        1 => subtract(a, b),
        2 => multiply(a, b),
        3 => divide(a, &add(&abs(b)?, &Array::from(1.0))?),
        4 => maximum(a, b),
        5 => minimum(a, b),
        6 => exp(&minimum(a, &Array::from(10.0))?),
        7 => tanh(a),
        8 => sin(a),
        9 => negative(a),
        10 => sqrt(&abs(a)?),
        11 => r#where(&greater(a, b)?, a, b),
        12 => multiply(a, &Array::from(0.5)),
        _ => astype(&astype(a, DType::Float64)?, a.dtype()),
    }
}

/// Runs the program on `inputs`; returns the last value and the value in
/// the middle (a second output that other instructions also read).
fn program(ops: &[Op], inputs: &[Array]) -> Result<Vec<Array>> {
    let mut pool = inputs.to_vec();
    let mut mid = None;
    for (i, &op) in ops.iter().enumerate() {
        let v = apply(op, &pool)?;
        if i == ops.len() / 2 {
            mid = Some(v.clone());
        }
        pool.push(v);
    }
    let last = pool
        .last()
        .cloned()
        .ok_or_else(|| Error::new(ErrorKind::Value, "program", "no instructions".to_string()))?;
    Ok(vec![last, mid.unwrap_or_else(|| inputs[0].clone())])
}

fn bits(a: &Array) -> Vec<u64> {
    let a = astype(a, DType::Float64).unwrap();
    a.to_vec::<f64>()
        .unwrap()
        .into_iter()
        .map(f64::to_bits)
        .collect()
}

fn inputs(shape: &[usize], mask: &[bool], dtype: DType, seed: u64) -> Vec<Array> {
    let mut rng = Rng::new(seed);
    let full = astype(&rng.array(shape, -3.0, 3.0), dtype).unwrap();
    let small: Vec<usize> = shape
        .iter()
        .zip(mask)
        .map(|(&d, &m)| if m { 1 } else { d })
        .collect();
    let part = astype(&rng.array(&small, -3.0, 3.0), dtype).unwrap();
    let scalar = astype(&rng.array(&[], -3.0, 3.0), dtype).unwrap();
    vec![full, part, scalar]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn compiled_equals_uncompiled_bitwise(
        shape in proptest::collection::vec(1usize..6, 1..4),
        mask in proptest::collection::vec(proptest::bool::ANY, 3),
        ops in proptest::collection::vec((0u8..KINDS, 0usize..64, 0usize..64), 1..12),
        double in proptest::bool::ANY,
        big in proptest::bool::ANY,
        seed in 0u64..1000,
    ) {
        // Big outputs (over 9000 elements) run in chunks, small ones whole.
        let mut shape = shape;
        if big {
            shape[0] += 9000;
        }
        let ops: Vec<Op> = ops.into_iter().map(|(kind, a, b)| Op { kind, a, b }).collect();
        let dtype = if double { DType::Float64 } else { DType::Float32 };
        let xs = inputs(&shape, &mask, dtype, seed);
        let want = program(&ops, &xs).unwrap();
        let body = ops.clone();
        let f = compile(move |xs: &[Array]| program(&body, xs));
        let got = f.call(&xs).unwrap();
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g.shape(), w.shape());
            prop_assert_eq!(bits(g), bits(w));
        }
    }
}

#[test]
fn a_chain_becomes_one_fused_node() {
    let f = compile(|xs: &[Array]| {
        let t = multiply(&tanh(&multiply(&xs[0], &Array::from(0.5))?)?, &xs[0])?;
        let e = exp(&negative(&multiply(&xs[0], &xs[0])?)?)?;
        Ok(vec![add(&t, &e)?])
    });
    let x = Rng::new(1).array(&[1000], -2.0, 2.0);
    let x = astype(&x, DType::Float32).unwrap();
    let y = f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].primitive().unwrap().name(), "fused");
    // The evaluated scalar 0.5 is embedded in the program, not an input.
    assert_eq!(y[0].inputs().len(), 1, "x only");
    let want = add(
        &multiply(
            &tanh(&multiply(&x, &Array::from(0.5)).unwrap()).unwrap(),
            &x,
        )
        .unwrap(),
        &exp(&negative(&multiply(&x, &x).unwrap()).unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(bits(&y[0]), bits(&want));
}

#[test]
fn large_outputs_are_chunked_in_parallel_and_broadcast_rows_are_shared() {
    // 300k elements: many chunks, split over cores; a row bias broadcast
    // along axis 0 takes the row-block path.
    let mut rng = Rng::new(7);
    let x = astype(&rng.array(&[600, 500], -1.0, 1.0), DType::Float32).unwrap();
    let bias = astype(&rng.array(&[500], -1.0, 1.0), DType::Float32).unwrap();
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let z = add(&xs[0], &xs[1])?;
        Ok(vec![tanh(&multiply(&z, &z)?)?])
    };
    let f = compile(body);
    let got = f.call(&[x.clone(), bias.clone()]).unwrap();
    let want = body(&[x.clone(), bias]).unwrap();
    assert_eq!(got[0].primitive().unwrap().name(), "fused");
    assert_eq!(bits(&got[0]), bits(&want[0]));
    // A transposed (non-contiguous) full input also takes the row path.
    let xt = transpose(&x, None).unwrap();
    let g = compile(|xs: &[Array]| Ok(vec![exp(&negative(&xs[0])?)?]));
    let got = g.call(std::slice::from_ref(&xt)).unwrap();
    assert_eq!(bits(&got[0]), bits(&exp(&negative(&xt).unwrap()).unwrap()));
}

#[test]
fn shapeless_replays_at_new_broadcasts_stay_correct() {
    // Traced with equal shapes (every step full), replayed where one input
    // broadcasts: the steps then run on whole arrays.
    let f =
        compile_shapeless(|xs: &[Array]| Ok(vec![add(&exp(&xs[1])?, &multiply(&xs[0], &xs[0])?)?]));
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = Array::from_slice(&[0.5f32, 0.25, 0.0], &[3]).unwrap();
    let y = f.call(&[a.clone(), b]).unwrap();
    assert_eq!(y[0].primitive().unwrap().name(), "fused");
    let b1 = Array::from_slice(&[0.5f32], &[1]).unwrap();
    let y = f.call(&[a.clone(), b1.clone()]).unwrap();
    let want = add(&exp(&b1).unwrap(), &multiply(&a, &a).unwrap()).unwrap();
    assert_eq!(y[0].shape(), &[3]);
    assert_eq!(bits(&y[0]), bits(&want));
    assert_eq!(f.traces(), 1);
}

#[test]
fn values_used_outside_a_chain_are_computed_once_and_returned() {
    let f = compile(|xs: &[Array]| {
        let shared = exp(&xs[0])?;
        let a = add(&shared, &Array::from(1.0))?;
        let b = multiply(&shared, &Array::from(2.0))?;
        Ok(vec![shared.clone(), add(&a, &b)?])
    });
    let x = Array::from_slice(&[0.0f32, 1.0], &[2]).unwrap();
    let y = f.call(std::slice::from_ref(&x)).unwrap();
    let e = [1.0f32, 1.0f32.exp()];
    assert_eq!(y[0].to_vec::<f32>().unwrap(), e.to_vec());
    let want: Vec<f32> = e.iter().map(|v| (v + 1.0) + v * 2.0).collect();
    assert_eq!(y[1].to_vec::<f32>().unwrap(), want);
}

#[test]
fn an_intermediate_read_twice_inside_a_chain_is_one_step() {
    let f = compile(|xs: &[Array]| {
        let y = multiply(&xs[0], &Array::from(2.0f32))?;
        Ok(vec![add(&exp(&y)?, &y)?])
    });
    let x = Array::from_slice(&[0.0f32, 0.5, -1.0], &[3]).unwrap();
    let got = f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(got[0].primitive().unwrap().name(), "fused");
    assert_eq!(
        got[0].inputs().len(),
        1,
        "x only: y is a step, 2 is embedded"
    );
    let y = multiply(&x, &Array::from(2.0f32)).unwrap();
    let want = add(&exp(&y).unwrap(), &y).unwrap();
    assert_eq!(bits(&got[0]), bits(&want));
}

#[test]
fn embedded_constants_keep_their_rank_and_lazy_constants_stay_inputs() {
    // A [1, 1] constant makes the output rank 2; big enough for chunks.
    let c = Array::from_slice(&[0.25f32], &[1, 1]).unwrap();
    c.eval().unwrap();
    let lazy = exp(&Array::from_slice(&[0.5f32], &[1]).unwrap()).unwrap();
    let body = {
        let (c, lazy) = (c.clone(), lazy.clone());
        move |xs: &[Array]| -> Result<Vec<Array>> {
            let t = tanh(&multiply(&xs[0], &c)?)?;
            Ok(vec![add(&multiply(&t, &lazy)?, &c)?])
        }
    };
    let f = compile(body.clone());
    let x = astype(&Rng::new(3).array(&[20_000], -2.0, 2.0), DType::Float32).unwrap();
    let got = f.call(std::slice::from_ref(&x)).unwrap();
    let want = body(std::slice::from_ref(&x)).unwrap();
    assert_eq!(got[0].shape(), &[1, 20_000]);
    assert_eq!(got[0].primitive().unwrap().name(), "fused");
    assert_eq!(got[0].inputs().len(), 2, "x and the unevaluated constant");
    assert_eq!(bits(&got[0]), bits(&want[0]));
}
