//! ferrox::linalg::{norm, cross, inv, solve, cholesky, tri_inv,
//! solve_triangular} against numpy references
//! (tests/fixtures/gen_linalg_norm.py).

mod common;

use common::{Case, array, assert_matches, load, tolerance};
use ferrox::Array;
use ferrox::linalg::{NormOrd, cholesky, cross, inv, norm, solve, solve_triangular, tri_inv};
use serde_json::Value;

fn ord(v: &Value) -> Option<NormOrd> {
    match v {
        Value::Null => None,
        Value::String(s) if s == "inf" => Some(NormOrd::P(f64::INFINITY)),
        Value::String(s) if s == "-inf" => Some(NormOrd::P(f64::NEG_INFINITY)),
        Value::String(s) => Some(s.parse().expect("ord")),
        Value::Number(n) => Some(NormOrd::P(n.as_f64().expect("ord"))),
        other => panic!("bad ord {other:?}"),
    }
}

fn axes(v: &Value) -> Option<Vec<isize>> {
    match v {
        Value::Null => None,
        Value::Number(n) => Some(vec![n.as_i64().expect("axis") as isize]),
        Value::Array(a) => Some(
            a.iter()
                .map(|x| x.as_i64().expect("axis") as isize)
                .collect(),
        ),
        other => panic!("bad axis {other:?}"),
    }
}

fn compute(case: &Case) -> Array {
    let mut x: Vec<Array> = case.inputs.iter().map(array).collect();
    if case.params["transpose"].as_bool() == Some(true) {
        x[0] = ferrox::swapaxes(&x[0], -1, -2).expect("swapaxes");
    }
    let p = &case.params;
    let r = match case.op.as_str() {
        "norm" => norm(
            &x[0],
            ord(&p["ord"]),
            axes(&p["axis"]).as_deref(),
            p["keepdims"].as_bool().unwrap_or(false),
        ),
        "cross" => cross(&x[0], &x[1], p["axis"].as_i64().expect("axis") as isize),
        "inv" => inv(&x[0]),
        "solve" => solve(&x[0], &x[1]),
        "cholesky" => cholesky(&x[0], p["upper"].as_bool().expect("upper")),
        "tri_inv" => tri_inv(&x[0], p["upper"].as_bool().expect("upper")),
        "solve_triangular" => solve_triangular(&x[0], &x[1], p["upper"].as_bool().expect("upper")),
        other => panic!("unknown op {other}"),
    };
    r.unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

#[test]
fn norm_and_cross_match_numpy() {
    let cases = load("linalg_norm.json");
    assert!(cases.len() > 100);
    for case in &cases {
        let got = compute(case);
        let (rtol, atol) = tolerance(case.output.dtype);
        // Sums of powers round a little more than one op.
        assert_matches(&case.name, &got, &case.output, 20.0 * rtol, 20.0 * atol);
    }
}
