//! numpy reference tests for the unary ops (fixtures from
//! `fixtures/gen_unary.py`): every op on every dtype it supports, with
//! nan, ±inf and ±0 among the inputs.
//!
//! Every case runs three times: on the contiguous 3x4 input, on a
//! transposed view (compared with the transposed expectation), and on a
//! view reversed along both axes by negative strides. Views go through
//! `ferrox::transpose`/`ferrox::slice`, so they reach the kernels with
//! non-contiguous strides.

mod common;

use common::{Case, Tensor, array, assert_matches, load, tolerance};
use ferrox::{Array, DType, Result};

/// The op a case names, applied to `x`.
fn apply(c: &Case, x: &Array) -> Result<Array> {
    let f = match c.op.as_str() {
        "abs" => ferrox::abs,
        "negative" => ferrox::negative,
        "sign" => ferrox::sign,
        "square" => ferrox::square,
        "sqrt" => ferrox::sqrt,
        "rsqrt" => ferrox::rsqrt,
        "reciprocal" => ferrox::reciprocal,
        "exp" => ferrox::exp,
        "expm1" => ferrox::expm1,
        "log" => ferrox::log,
        "log1p" => ferrox::log1p,
        "log2" => ferrox::log2,
        "log10" => ferrox::log10,
        "sin" => ferrox::sin,
        "cos" => ferrox::cos,
        "tan" => ferrox::tan,
        "arcsin" => ferrox::arcsin,
        "arccos" => ferrox::arccos,
        "arctan" => ferrox::arctan,
        "sinh" => ferrox::sinh,
        "cosh" => ferrox::cosh,
        "tanh" => ferrox::tanh,
        "arcsinh" => ferrox::arcsinh,
        "arccosh" => ferrox::arccosh,
        "arctanh" => ferrox::arctanh,
        "sigmoid" => ferrox::sigmoid,
        "erf" => ferrox::erf,
        "erfinv" => ferrox::erfinv,
        "floor" => ferrox::floor,
        "ceil" => ferrox::ceil,
        "logical_not" => ferrox::logical_not,
        "bitwise_invert" => ferrox::bitwise_invert,
        "isnan" => ferrox::isnan,
        "isinf" => ferrox::isinf,
        "isfinite" => ferrox::isfinite,
        "real" => ferrox::real,
        "imag" => ferrox::imag,
        "conjugate" => ferrox::conjugate,
        "round" => {
            let decimals = c.params["decimals"].as_i64().expect("decimals") as i32;
            return ferrox::round(x, decimals);
        }
        other => panic!("{}: unknown op {other}", c.name),
    };
    f(x)
}

/// Tolerances: the dtype's defaults, looser for complex transcendental
/// functions (num_complex's formulas and numpy's differ by a few ulp of
/// the larger component).
fn tolerances(c: &Case) -> (f64, f64) {
    let exact = [
        "abs",
        "negative",
        "conjugate",
        "real",
        "imag",
        "square",
        "sign",
    ];
    if c.inputs[0].dtype == DType::Complex64 && !exact.contains(&c.op.as_str()) {
        return (2e-5, 2e-6);
    }
    tolerance(c.output.dtype)
}

/// `t` (2-d) with its axes swapped.
fn transposed(t: &Tensor) -> Tensor {
    let (r, c) = (t.shape[0], t.shape[1]);
    let pick = |v: &Vec<f64>| {
        if v.is_empty() {
            return vec![];
        }
        (0..c)
            .flat_map(|j| (0..r).map(move |i| (i, j)))
            .map(|(i, j)| v[i * c + j])
            .collect()
    };
    Tensor {
        shape: vec![c, r],
        dtype: t.dtype,
        data: pick(&t.data),
        imag: pick(&t.imag),
    }
}

/// `t` reversed along every axis (its flat data reversed).
fn reversed(t: &Tensor) -> Tensor {
    let rev = |v: &Vec<f64>| v.iter().rev().copied().collect();
    Tensor {
        shape: t.shape.clone(),
        dtype: t.dtype,
        data: rev(&t.data),
        imag: rev(&t.imag),
    }
}

#[test]
fn unary_ops_match_numpy() {
    let cases = load("unary.json");
    assert!(cases.len() > 300, "fixture has {} cases", cases.len());
    for c in &cases {
        let (rtol, atol) = tolerances(c);
        let x = array(&c.inputs[0]);
        let y = apply(c, &x).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_matches(&c.name, &y, &c.output, rtol, atol);

        let xt = ferrox::transpose(&x, None).unwrap();
        let yt = apply(c, &xt).unwrap();
        assert_matches(
            &format!("{} (transposed)", c.name),
            &yt,
            &transposed(&c.output),
            rtol,
            atol,
        );

        let xr = ferrox::slice(&x, &[-1, -1], &[-4, -5], &[-1, -1]).unwrap();
        let yr = apply(c, &xr).unwrap();
        assert_matches(
            &format!("{} (reversed)", c.name),
            &yr,
            &reversed(&c.output),
            rtol,
            atol,
        );
    }
}

#[test]
fn every_op_has_fixtures_for_float_int_and_bool_inputs() {
    let cases = load("unary.json");
    let ops: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.op.as_str()).collect();
    assert_eq!(ops.len(), 39, "{ops:?}");
    for dtype in [
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Bool,
        DType::Complex64,
    ] {
        assert!(cases.iter().any(|c| c.inputs[0].dtype == dtype), "{dtype}");
    }
}

#[test]
fn unsupported_dtypes_are_errors_naming_the_op() {
    let z = ferrox::zeros(&[2], DType::Complex64).unwrap();
    for (name, r) in [
        ("expm1", ferrox::expm1(&z)),
        ("sigmoid", ferrox::sigmoid(&z)),
        ("erf", ferrox::erf(&z)),
        ("erfinv", ferrox::erfinv(&z)),
        ("floor", ferrox::floor(&z)),
        ("ceil", ferrox::ceil(&z)),
        ("bitwise_invert", ferrox::bitwise_invert(&z)),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ferrox::ErrorKind::Dtype);
        assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
    }
    assert!(ferrox::negative(&ferrox::ones(&[1], DType::Bool).unwrap()).is_err());
    // Complex log1p and round are compositions (log(1 + z); each part
    // rounded), checked against numpy in the Python suite.
    assert!(ferrox::log1p(&z).is_ok() && ferrox::round(&z, 1).is_ok());
}
