//! Fusion of elementwise chains in compiled functions: compiled results
//! are bitwise equal to uncompiled ones over random elementwise graphs
//! (broadcast inputs, several outputs of several dtypes, shared
//! intermediates, reductions read between chains), chains become one
//! `fused` node, intermediates read elsewhere become extra outputs of that
//! node, chains sharing an input merge, large and shapeless calls take
//! the chunked, parallel and whole-array paths correctly, and results
//! written over inputs the caller no longer holds (donated buffers) are
//! the same.

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

const KINDS: u8 = 16;

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
        // A reduction between chains: its readers come after it, its
        // input's chain before.
        13 => multiply(a, &tanh(&mean(b, None, true)?)?),
        // Another dtype: later ops promote, and results of several dtypes
        // share kernels.
        14 => astype(a, DType::Float16),
        _ => astype(&astype(a, DType::Float64)?, a.dtype()),
    }
}

/// Runs the program on `inputs`; returns the last value, then every value
/// that `outs` marks (outputs that other instructions may also read).
fn program(ops: &[Op], outs: &[bool], inputs: &[Array]) -> Result<Vec<Array>> {
    let mut pool = inputs.to_vec();
    let mut results = Vec::new();
    for (i, &op) in ops.iter().enumerate() {
        let v = apply(op, &pool)?;
        if outs.get(i).copied().unwrap_or(false) {
            results.push(v.clone());
        }
        pool.push(v);
    }
    let last = pool
        .last()
        .cloned()
        .ok_or_else(|| Error::new(ErrorKind::Value, "program", "no instructions".to_string()))?;
    results.insert(0, last);
    Ok(results)
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
        outs in proptest::collection::vec(proptest::bool::ANY, 12),
        double in proptest::bool::ANY,
        big in proptest::bool::ANY,
        donate in proptest::bool::ANY,
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
        let want = program(&ops, &outs, &xs).unwrap();
        let body = ops.clone();
        let f = compile(move |xs: &[Array]| program(&body, &outs, xs));
        let got = if donate {
            // Equal inputs that only the call holds: the fused node may
            // write its outputs over their buffers.
            f.call(&inputs(&shape, &mask, dtype, seed)).unwrap()
        } else {
            f.call(&xs).unwrap()
        };
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

/// The fused node behind a compiled result (itself, or the group node of
/// which it is an output).
fn kernel_of(y: &Array) -> Array {
    y.output_of().map_or_else(|| y.clone(), |(group, _)| group)
}

/// The dtypes of a group node's outputs (none for a single-output node).
fn output_dtypes(kernel: &Array) -> Vec<DType> {
    kernel
        .output_specs()
        .map(|s| s.iter().map(|(_, d)| *d).collect())
        .unwrap_or_default()
}

#[test]
fn values_used_outside_a_chain_are_computed_once_and_returned() {
    let f = compile(|xs: &[Array]| {
        let shared = exp(&xs[0])?;
        let a = add(&shared, &Array::from(1.0))?;
        let b = multiply(&shared, &Array::from(2.0))?;
        Ok(vec![shared.clone(), add(&a, &b)?])
    });
    for n in [2, 20_000] {
        let x = astype(&Rng::new(5).array(&[n], -1.0, 1.0), DType::Float32).unwrap();
        let y = f.call(std::slice::from_ref(&x)).unwrap();
        // One kernel computes both: `shared` is its extra output.
        for (index, v) in y.iter().enumerate() {
            assert_eq!(v.primitive().unwrap().name(), "output");
            assert_eq!(v.output_of().map(|(_, i)| i), Some(index));
        }
        let kernel = kernel_of(&y[0]);
        assert_eq!(kernel.id(), kernel_of(&y[1]).id());
        assert_eq!(kernel.primitive().unwrap().name(), "fused");
        assert_eq!(output_dtypes(&kernel), [DType::Float32; 2]);
        assert!(
            kernel
                .output_specs()
                .unwrap()
                .iter()
                .all(|(s, _)| s == &[n])
        );
        assert_eq!(kernel.inputs().len(), 1, "x only");
        let shared = exp(&x).unwrap();
        let a = add(&shared, &Array::from(1.0)).unwrap();
        let b = multiply(&shared, &Array::from(2.0)).unwrap();
        assert_eq!(bits(&y[0]), bits(&shared));
        assert_eq!(bits(&y[1]), bits(&add(&a, &b).unwrap()));
    }
}

#[test]
fn an_intermediate_read_by_two_chains_is_computed_once() {
    // t feeds both chains: they merge into one kernel in which t is an
    // internal step, and only the two results are written.
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let t = multiply(&xs[0], &xs[1])?;
        let first = exp(&t)?;
        let second = add(&sin(&t)?, &Array::from(1.0f32))?;
        Ok(vec![first, second])
    };
    let f = compile(body);
    let mut rng = Rng::new(11);
    let xs: Vec<Array> = (0..2)
        .map(|_| astype(&rng.array(&[300, 70], -2.0, 2.0), DType::Float32).unwrap())
        .collect();
    let y = f.call(&xs).unwrap();
    let kernel = kernel_of(&y[0]);
    assert_eq!(kernel.primitive().unwrap().name(), "fused");
    assert_eq!(
        output_dtypes(&kernel),
        [DType::Float32; 2],
        "exp(t) and sin(t) + 1"
    );
    assert_eq!(kernel_of(&y[1]).id(), kernel.id());
    assert_eq!(kernel.inputs().len(), 2, "x and y");
    let want = body(&xs).unwrap();
    for (g, w) in y.iter().zip(&want) {
        assert_eq!(bits(g), bits(w));
    }
}

#[test]
fn an_extra_output_never_waits_on_its_own_readers() {
    // e is read by a reduction whose result the same chain needs: making e
    // an output of that chain's kernel would be a cycle, so e stays apart.
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let e = exp(&xs[0])?;
        let s = sum(&e, None, true)?;
        Ok(vec![tanh(&multiply(&e, &s)?)?])
    };
    let f = compile(body);
    let x = astype(&Rng::new(2).array(&[4, 5], -1.0, 1.0), DType::Float32).unwrap();
    let y = f.call(std::slice::from_ref(&x)).unwrap();
    assert_eq!(y[0].primitive().unwrap().name(), "fused");
    assert_eq!(
        bits(&y[0]),
        bits(&body(std::slice::from_ref(&x)).unwrap()[0])
    );
}

#[test]
fn outputs_of_several_dtypes_share_a_kernel_also_when_shapeless() {
    let with_mask = |xs: &[Array]| -> Result<Vec<Array>> {
        let e = exp(&xs[0])?;
        let mask = greater(&e, &Array::from(1.0f32))?;
        let half = astype(&e, DType::Float16)?;
        Ok(vec![r#where(&mask, &e, &xs[0])?, e, mask, half])
    };
    let dtypes = [DType::Float32, DType::Float32, DType::Bool, DType::Float16];
    for n in [9, 20_001] {
        let x = astype(&Rng::new(4).array(&[n], -1.0, 1.0), DType::Float32).unwrap();
        let want = with_mask(std::slice::from_ref(&x)).unwrap();
        // One kernel, four outputs of three dtypes, each its own buffer.
        let y = compile(with_mask).call(std::slice::from_ref(&x)).unwrap();
        let kernel = kernel_of(&y[0]);
        assert!(y.iter().all(|v| kernel_of(v).id() == kernel.id()));
        let kernel_dtypes = output_dtypes(&kernel);
        assert_eq!(kernel_dtypes.len(), 4);
        for v in &y {
            let (_, index) = v.output_of().unwrap();
            assert_eq!(kernel_dtypes[index], v.dtype());
        }
        let z = compile_shapeless(with_mask)
            .call(std::slice::from_ref(&x))
            .unwrap();
        assert!(z.iter().all(|v| kernel_of(v).id() == kernel_of(&z[0]).id()));
        for (((a, b), w), d) in y.iter().zip(&z).zip(&want).zip(dtypes) {
            assert_eq!(a.dtype(), d);
            assert_eq!(bits(a), bits(w));
            assert_eq!(bits(b), bits(w));
        }
    }
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

#[test]
fn several_outputs_of_scalars_and_empty_arrays() {
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let e = exp(&xs[0])?;
        Ok(vec![e.clone(), multiply(&e, &Array::from(2.0f32))?])
    };
    let f = compile(body);
    for shape in [vec![], vec![0], vec![3, 0]] {
        let x = zeros(&shape, DType::Float32).unwrap();
        let y = f.call(std::slice::from_ref(&x)).unwrap();
        assert_eq!(kernel_of(&y[0]).id(), kernel_of(&y[1]).id());
        for (g, w) in y.iter().zip(&body(std::slice::from_ref(&x)).unwrap()) {
            assert_eq!(g.shape(), w.shape());
            assert_eq!(bits(g), bits(w));
        }
    }
}

#[test]
fn chains_that_share_only_an_input_become_one_kernel() {
    // exp(x) and sin(x) * 2 read x in one pass; the select reads x and
    // another input and joins them too.
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let e = exp(&xs[0])?;
        let s = multiply(&sin(&xs[0])?, &Array::from(2.0f32))?;
        let m = maximum(&xs[0], &xs[1])?;
        Ok(vec![e, s, m])
    };
    let mut rng = Rng::new(9);
    let xs: Vec<Array> = (0..2)
        .map(|_| astype(&rng.array(&[200, 60], -2.0, 2.0), DType::Float32).unwrap())
        .collect();
    let y = compile(body).call(&xs).unwrap();
    let kernel = kernel_of(&y[0]);
    assert_eq!(output_dtypes(&kernel), [DType::Float32; 3]);
    assert!(y.iter().all(|v| kernel_of(v).id() == kernel.id()));
    assert_eq!(kernel.inputs().len(), 2, "x once, and the second input");
    for (g, w) in y.iter().zip(&body(&xs).unwrap()) {
        assert_eq!(bits(g), bits(w));
    }
}

#[test]
fn chains_that_share_only_a_scalar_stay_apart() {
    // A shared scalar saves no reading: the two chains keep their kernels.
    let f = compile(|xs: &[Array]| {
        let two = Array::from(2.0f32);
        Ok(vec![
            exp(&multiply(&xs[0], &two)?)?,
            exp(&multiply(&xs[1], &two)?)?,
        ])
    });
    let x = ones(&[50], DType::Float32).unwrap();
    let y = f.call(&[x.clone(), x]).unwrap();
    for v in &y {
        assert_eq!(v.primitive().unwrap().name(), "fused");
    }
    assert_ne!(y[0].id(), y[1].id());
    assert_eq!(y[1].to_vec::<f32>().unwrap(), vec![2.0f32.exp(); 50]);
}

#[test]
fn a_shapeless_kernel_with_several_outputs_replays_at_new_broadcast_shapes() {
    // Traced with y of x's shape, the two results share one kernel; called
    // with a y that broadcasts, they get different shapes.
    let body = |xs: &[Array]| -> Result<Vec<Array>> {
        let e = exp(&xs[0])?;
        Ok(vec![e.clone(), add(&e, &xs[1])?])
    };
    let f = compile_shapeless(body);
    let x = Array::from_slice(&[0.0f32, 1.0, -1.0], &[1, 3]).unwrap();
    let y = f.call(&[x.clone(), x.clone()]).unwrap();
    assert_eq!(kernel_of(&y[0]).id(), kernel_of(&y[1]).id());
    let wide = astype(&Rng::new(8).array(&[2, 3], -1.0, 1.0), DType::Float32).unwrap();
    let z = f.call(&[x.clone(), wide.clone()]).unwrap();
    assert_eq!(f.traces(), 1);
    assert_eq!((z[0].shape(), z[1].shape()), (&[1, 3][..], &[2, 3][..]));
    let want = body(&[x, wide]).unwrap();
    for (g, w) in z.iter().zip(&want) {
        assert_eq!(bits(g), bits(w));
    }
}

/// Every float unary op with an element kernel, as a step of a chain.
type UnaryFn = fn(&Array) -> Result<Array>;
const FLOAT_UNARY: [UnaryFn; 29] = [
    abs,
    negative,
    sign,
    square,
    sqrt,
    rsqrt,
    reciprocal,
    exp,
    expm1,
    log,
    log1p,
    log2,
    log10,
    arcsin,
    arccos,
    arctan,
    sinh,
    cosh,
    tanh,
    arcsinh,
    arccosh,
    arctanh,
    sigmoid,
    erf,
    erfinv,
    floor,
    ceil,
    trunc,
    |a| round(a, 0),
];

/// Every float arithmetic binary op.
type BinaryFn = fn(&Array, &Array) -> Result<Array>;
const FLOAT_BINARY: [BinaryFn; 8] = [
    add, subtract, multiply, divide, power, maximum, minimum, logaddexp,
];

#[test]
fn flat_chains_of_every_float_op_equal_the_unfused_ops_bitwise() {
    // Flat programs (full contiguous inputs and scalars) of every float
    // op, f32 and f64, at lengths below one chunk, across several chunks
    // and split over cores; values include NaN, infinities, zeros and
    // out-of-domain arguments. Two outputs: an intermediate and the last.
    let specials = [
        f64::NAN,
        f64::INFINITY,
        -f64::INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        2.5,
    ];
    for dtype in [DType::Float32, DType::Float64] {
        for n in [1usize, 511, 513, 8192 + 700, 3 * 32768 + 5] {
            let mut rng = Rng::new(n as u64);
            let mut x = rng.array(&[n], -4.0, 4.0).to_vec::<f64>().unwrap();
            for (v, s) in x.iter_mut().zip(specials) {
                *v = s;
            }
            let x = astype(&Array::from_slice(&x, &[n]).unwrap(), dtype).unwrap();
            let y = astype(&rng.array(&[n], -3.0, 3.0), dtype).unwrap();
            for (u, unary) in FLOAT_UNARY.iter().enumerate() {
                let binary = FLOAT_BINARY[u % FLOAT_BINARY.len()];
                let scalar = astype(&Array::from([2.0, 0.75, 3.0][u % 3]), dtype).unwrap();
                let body = move |xs: &[Array]| -> Result<Vec<Array>> {
                    let h = unary(&multiply(&xs[0], &xs[2])?)?;
                    let z = binary(&h, &xs[1])?;
                    Ok(vec![h, add(&binary(&xs[1], &xs[2])?, &z)?])
                };
                let args = [x.clone(), y.clone(), scalar];
                let want = body(&args).unwrap();
                let got = compile(body).call(&args).unwrap();
                assert_eq!(kernel_of(&got[1]).primitive().unwrap().name(), "fused");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(bits(g), bits(w), "op {u} with {dtype}, n = {n}");
                }
            }
        }
    }
}

type CompareFn = fn(&Array, &Array) -> Result<Array>;
const COMPARISONS: [CompareFn; 6] = [equal, not_equal, less, less_equal, greater, greater_equal];

#[test]
fn flat_masks_and_where_equal_the_unfused_ops_bitwise() {
    // Each comparison feeding a `where` inside the program, with the picked
    // values from inputs, scalars and steps, on values with NaN, signed
    // zeros and infinities, below one chunk and over several; float32 (the
    // tile loop) and float64 (the general path).
    let specials = [
        f64::NAN,
        0.0,
        -0.0,
        f64::INFINITY,
        -f64::INFINITY,
        1.0,
        1.0,
        -2.0,
    ];
    for dtype in [DType::Float32, DType::Float64] {
        for n in [1usize, 8, 2048 + 3, 3 * 32768 + 5] {
            let mut rng = Rng::new(n as u64 + 7);
            let mut x = rng.array(&[n], -2.0, 2.0).to_vec::<f64>().unwrap();
            let mut y = rng.array(&[n], -2.0, 2.0).to_vec::<f64>().unwrap();
            for (k, s) in specials.iter().enumerate().take(n) {
                x[k] = *s;
                y[k] = specials[(k + 1) % specials.len()];
            }
            // Equal values where the comparisons' edges are.
            for k in (specials.len()..n).step_by(5) {
                y[k] = x[k];
            }
            let x = astype(&Array::from_slice(&x, &[n]).unwrap(), dtype).unwrap();
            let y = astype(&Array::from_slice(&y, &[n]).unwrap(), dtype).unwrap();
            let zero = astype(&Array::from(0.0f32), dtype).unwrap();
            for (c, compare) in COMPARISONS.iter().enumerate() {
                let compare = *compare;
                let body = move |xs: &[Array]| -> Result<Vec<Array>> {
                    let picked = r#where(&compare(&xs[0], &xs[1])?, &exp(&xs[0])?, &xs[1])?;
                    let relu_grad = r#where(&compare(&xs[0], &xs[2])?, &xs[1], &xs[2])?;
                    let scalars = r#where(&compare(&xs[1], &xs[2])?, &xs[2], &Array::from(2.5f32))?;
                    Ok(vec![add(&add(&picked, &relu_grad)?, &scalars)?])
                };
                let args = [x.clone(), y.clone(), zero.clone()];
                let want = body(&args).unwrap();
                let got = compile(body).call(&args).unwrap();
                assert_eq!(kernel_of(&got[0]).primitive().unwrap().name(), "fused");
                assert_eq!(
                    bits(&got[0]),
                    bits(&want[0]),
                    "comparison {c}, {dtype}, n = {n}"
                );
            }
        }
    }
}

#[test]
fn inputs_broadcast_from_one_element_are_read_as_scalars_bitwise() {
    // A full-shaped view of one element (stride 0 everywhere, like a loss's
    // cotangent) keeps a chain flat; outputs over several chunks, f32 (the
    // tile loop) and f64.
    for dtype in [DType::Float32, DType::Float64] {
        for n in [40_000usize, 3 * 32768 + 5] {
            let x = astype(&Rng::new(n as u64).array(&[n], -3.0, 3.0), dtype).unwrap();
            let b = broadcast_to(&astype(&Array::from(1.5f32), dtype).unwrap(), &[n]).unwrap();
            b.eval().unwrap();
            let body = |xs: &[Array]| -> Result<Vec<Array>> {
                let y = multiply(&exp(&minimum(&xs[0], &xs[1])?)?, &xs[1])?;
                Ok(vec![subtract(&y, &xs[0])?])
            };
            let args = [x, b];
            let want = body(&args).unwrap();
            let got = compile(body).call(&args).unwrap();
            assert_eq!(kernel_of(&got[0]).primitive().unwrap().name(), "fused");
            assert_eq!(bits(&got[0]), bits(&want[0]), "{dtype}, n = {n}");
        }
    }
}

#[test]
fn chains_with_a_bias_row_equal_the_unfused_ops_bitwise() {
    // A row broadcast over the rows (a bias, shaped [d] or [1, d]) takes
    // the row-block path: rows of 700, rows longer than a chunk, many
    // short rows, and a single element; f32 and f64.
    for dtype in [DType::Float32, DType::Float64] {
        for (rows, d) in [(300usize, 700usize), (3, 20_000), (2000, 10), (1, 1)] {
            let mut rng = Rng::new((rows * d) as u64);
            let x = astype(&rng.array(&[rows, d], -3.0, 3.0), dtype).unwrap();
            let bias = astype(&rng.array(&[d], -1.0, 1.0), dtype).unwrap();
            let bias2 = astype(&rng.array(&[1, d], -1.0, 1.0), dtype).unwrap();
            let body = |xs: &[Array]| -> Result<Vec<Array>> {
                let h = maximum(&add(&xs[0], &xs[1])?, &xs[3])?;
                Ok(vec![multiply(&tanh(&h)?, &xs[2])?])
            };
            let zero = astype(&Array::from(0.0f32), dtype).unwrap();
            let args = [x, bias, bias2, zero];
            let want = body(&args).unwrap();
            let got = compile(body).call(&args).unwrap();
            assert_eq!(got[0].shape(), want[0].shape());
            assert_eq!(bits(&got[0]), bits(&want[0]), "{rows}x{d} {dtype}");
        }
    }
}
