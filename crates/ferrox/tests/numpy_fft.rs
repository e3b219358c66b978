//! ferrox::fft against numpy references (tests/fixtures/gen_fft.py).

mod common;

use common::{Case, array, assert_matches, load};
use ferrox::Array;
use serde_json::Value;

fn opt_usize(v: &Value) -> Option<usize> {
    v.as_u64().map(|n| n as usize)
}

fn list<T>(v: &Value, f: impl Fn(&Value) -> T) -> Option<Vec<T>> {
    v.as_array().map(|a| a.iter().map(f).collect())
}

fn compute(case: &Case) -> Array {
    let mut x = array(&case.inputs[0]);
    if case.params["transpose"].as_bool() == Some(true) {
        x = ferrox::swapaxes(&x, -1, -2).expect("swapaxes");
    }
    let p = &case.params;
    let n = opt_usize(&p["n"]);
    let axis = p["axis"].as_i64().unwrap_or(-1) as isize;
    let s = list(&p["s"], |v| v.as_u64().expect("s") as usize);
    let axes = list(&p["axes"], |v| v.as_i64().expect("axis") as isize);
    let (s, axes) = (s.as_deref(), axes.as_deref());
    use ferrox::fft::*;
    let r = match case.op.as_str() {
        "fft" => fft(&x, n, axis),
        "ifft" => ifft(&x, n, axis),
        "rfft" => rfft(&x, n, axis),
        "irfft" => irfft(&x, n, axis),
        "fft2" => fft2(&x, s, axes),
        "ifft2" => ifft2(&x, s, axes),
        "rfft2" => rfft2(&x, s, axes),
        "irfft2" => irfft2(&x, s, axes),
        "fftn" => fftn(&x, s, axes),
        "ifftn" => ifftn(&x, s, axes),
        "rfftn" => rfftn(&x, s, axes),
        "irfftn" => irfftn(&x, s, axes),
        other => panic!("{}: unknown op {other}", case.name),
    };
    r.unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

#[test]
fn fft_matches_numpy() {
    let cases = load("fft.json");
    assert!(cases.len() > 100);
    for case in &cases {
        let got = compute(case);
        // Single-precision transforms: errors grow with the largest
        // magnitude in the result.
        let scale = case
            .output
            .data
            .iter()
            .chain(&case.output.imag)
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert_matches(&case.name, &got, &case.output, 1e-5, 2e-6 * (1.0 + scale));
    }
}
