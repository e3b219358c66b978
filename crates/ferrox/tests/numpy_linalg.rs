//! matmul, addmm, einsum, tensordot, inner, outer, kron, conv1d and conv2d
//! against numpy references (tests/fixtures/gen_linalg.py).

mod common;

use common::{Case, array, assert_matches, load, tolerance};
use ferrox::{Array, SliceArg};
use serde_json::Value;

fn usize_param(case: &Case, key: &str) -> usize {
    case.params[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{}: param {key}", case.name)) as usize
}

fn pair_param(case: &Case, key: &str) -> (usize, usize) {
    let v = case.params[key]
        .as_array()
        .unwrap_or_else(|| panic!("{}: param {key}", case.name));
    (
        v[0].as_u64().expect("int") as usize,
        v[1].as_u64().expect("int") as usize,
    )
}

fn flag(case: &Case, key: &str, i: usize) -> bool {
    case.params[key]
        .as_array()
        .is_some_and(|v| v[i].as_bool() == Some(true))
}

/// The fixture inputs, undoing the storage tricks that make them
/// non-contiguous: `transpose` (swap the last two axes back) and `reverse`
/// (reverse axis 0 back through a negative-stride view).
fn inputs(case: &Case) -> Vec<Array> {
    case.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut a = array(t);
            if flag(case, "transpose", i) {
                a = ferrox::swapaxes(&a, -1, -2).expect("swapaxes");
            }
            if flag(case, "reverse", i) {
                a = a
                    .index(&[SliceArg::range(None, None, -1)])
                    .expect("reverse");
            }
            a
        })
        .collect()
}

fn compute(case: &Case) -> Array {
    let x = inputs(case);
    let r = match case.op.as_str() {
        "matmul" => ferrox::matmul(&x[0], &x[1]),
        "addmm" => {
            let alpha = case.params["alpha"].as_f64().expect("alpha") as f32;
            let beta = case.params["beta"].as_f64().expect("beta") as f32;
            ferrox::addmm(&x[0], &x[1], &x[2], alpha, beta)
        }
        "einsum" => ferrox::einsum(case.params["subscripts"].as_str().expect("subscripts"), &x),
        "tensordot" => match &case.params["axes"] {
            Value::Number(n) => ferrox::tensordot(&x[0], &x[1], n.as_u64().expect("axes") as usize),
            Value::Array(pair) => {
                let list = |v: &Value| -> Vec<isize> {
                    v.as_array()
                        .expect("axes list")
                        .iter()
                        .map(|a| a.as_i64().expect("axis") as isize)
                        .collect()
                };
                ferrox::tensordot(&x[0], &x[1], (list(&pair[0]), list(&pair[1])))
            }
            other => panic!("{}: bad axes {other:?}", case.name),
        },
        "inner" => ferrox::inner(&x[0], &x[1]),
        "outer" => ferrox::outer(&x[0], &x[1]),
        "kron" => ferrox::kron(&x[0], &x[1]),
        "conv1d" => ferrox::conv1d(
            &x[0],
            &x[1],
            usize_param(case, "stride"),
            usize_param(case, "padding"),
            usize_param(case, "dilation"),
            usize_param(case, "groups"),
        ),
        "conv2d" => ferrox::conv2d(
            &x[0],
            &x[1],
            pair_param(case, "stride"),
            pair_param(case, "padding"),
            pair_param(case, "dilation"),
            usize_param(case, "groups"),
        ),
        other => panic!("unknown op {other}"),
    };
    r.unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// Runs every case whose op is in `ops`; returns how many ran.
fn check(ops: &[&str]) -> usize {
    let cases: Vec<Case> = load("linalg.json")
        .into_iter()
        .filter(|c| ops.contains(&c.op.as_str()))
        .collect();
    assert!(!cases.is_empty(), "no fixtures for {ops:?}");
    for case in &cases {
        let got = compute(case);
        let (rtol, atol) = tolerance(case.output.dtype);
        assert_matches(&case.name, &got, &case.output, rtol, atol);
    }
    cases.len()
}

#[test]
fn matmul_matches_numpy() {
    check(&["matmul"]);
}

#[test]
fn matmul_covers_every_float_dtype_and_layout() {
    let cases = load("linalg.json");
    for dtype in [
        "float32",
        "float64",
        "float16",
        "bfloat16",
        "complex64",
        "int32",
    ] {
        for kind in ["vec_vec", "broadcast_batch", "transposed_11", "reversed"] {
            assert!(
                cases.iter().any(|c| c.name.starts_with("matmul_")
                    && c.name.contains(kind)
                    && c.name.ends_with(dtype)),
                "missing matmul {kind} case for {dtype}"
            );
        }
    }
}

#[test]
fn addmm_matches_numpy() {
    check(&["addmm"]);
}

#[test]
fn einsum_matches_numpy() {
    assert!(check(&["einsum"]) >= 20);
}

#[test]
fn einsum_on_non_contiguous_operands() {
    // Transposed and reversed views give the same result as the
    // contiguous arrays they equal.
    let a = Array::from_slice(&(0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]).unwrap();
    let b = Array::from_slice(
        &(0..20).map(|i| (i % 7) as f32).collect::<Vec<_>>(),
        &[5, 4],
    )
    .unwrap();
    let bt = ferrox::transpose(&b, None).unwrap();
    let b_rev = b.index(&[SliceArg::range(None, None, -1)]).unwrap();
    let b_rev_copy = ferrox::contiguous(&b_rev).unwrap();
    let x = ferrox::einsum("ij,jk->ik", &[a.clone(), bt.clone()]).unwrap();
    let y = ferrox::matmul(&a, &ferrox::contiguous(&bt).unwrap()).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    let x = ferrox::einsum("ij,kj->ik", &[a.clone(), b_rev]).unwrap();
    let y = ferrox::einsum("ij,kj->ik", &[a, b_rev_copy]).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
}

#[test]
fn tensordot_inner_outer_kron_match_numpy() {
    check(&["tensordot", "inner", "outer", "kron"]);
}

#[test]
fn conv_matches_numpy() {
    assert!(check(&["conv1d", "conv2d"]) >= 20);
}

#[test]
fn conv_on_non_contiguous_input() {
    // An NHWC input stored as NWHC and viewed back through swapaxes.
    for case in load("linalg.json")
        .iter()
        .filter(|c| c.op == "conv2d" && c.name.ends_with("float32"))
    {
        let x = array(&case.inputs[0]);
        let w = array(&case.inputs[1]);
        let stored = ferrox::contiguous(&ferrox::swapaxes(&x, 1, 2).unwrap()).unwrap();
        let view = ferrox::swapaxes(&stored, 1, 2).unwrap();
        let params = (
            pair_param(case, "stride"),
            pair_param(case, "padding"),
            pair_param(case, "dilation"),
        );
        let got = ferrox::conv2d(
            &view,
            &w,
            params.0,
            params.1,
            params.2,
            usize_param(case, "groups"),
        )
        .unwrap();
        let (rtol, atol) = tolerance(case.output.dtype);
        assert_matches(&case.name, &got, &case.output, rtol, atol);
    }
}
