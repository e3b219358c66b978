//! Reductions, scans, softmax and logsumexp against numpy references
//! (fixtures/reduce.json, written by fixtures/gen_reduce.py).
//!
//! Every case runs on the fixture input as given and on two non-contiguous
//! views holding the same logical values (a full transpose and a swap of the
//! first two axes of a transposed copy); broadcast cases reduce a stride-0
//! view.

mod common;

use common::{Case, Tensor, array, assert_matches, load, tolerance, values};
use ferrox::{Array, DType, Result};
use serde_json::Value;

fn axes(case: &Case) -> Option<Vec<isize>> {
    case.params["axes"].as_array().map(|v| {
        v.iter()
            .map(|a| a.as_i64().expect("axis") as isize)
            .collect()
    })
}

fn axis(case: &Case) -> Option<isize> {
    case.params["axis"].as_i64().map(|a| a as isize)
}

fn flag(case: &Case, key: &str) -> bool {
    case.params[key]
        .as_bool()
        .unwrap_or_else(|| panic!("{}: missing {key}", case.name))
}

fn apply(case: &Case, x: &Array) -> Result<Array> {
    let ax = axes(case);
    let ax = ax.as_deref();
    match case.op.as_str() {
        "sum" => ferrox::sum(x, ax, flag(case, "keepdims")),
        "prod" => ferrox::prod(x, ax, flag(case, "keepdims")),
        "mean" => ferrox::mean(x, ax, flag(case, "keepdims")),
        "max" => ferrox::max(x, ax, flag(case, "keepdims")),
        "min" => ferrox::min(x, ax, flag(case, "keepdims")),
        "all" => ferrox::all(x, ax, flag(case, "keepdims")),
        "any" => ferrox::any(x, ax, flag(case, "keepdims")),
        "var" | "std" => {
            let ddof = case.params["ddof"].as_i64().expect("ddof") as i32;
            let f = if case.op == "var" {
                ferrox::var
            } else {
                ferrox::std
            };
            f(x, ax, flag(case, "keepdims"), ddof)
        }
        "logsumexp" => ferrox::logsumexp(x, ax, flag(case, "keepdims")),
        "softmax" => ferrox::softmax(x, ax, flag(case, "precise")),
        "argmax" => ferrox::argmax(x, axis(case), flag(case, "keepdims")),
        "argmin" => ferrox::argmin(x, axis(case), flag(case, "keepdims")),
        "cumsum" | "cumprod" | "cummax" | "cummin" => {
            let f = match case.op.as_str() {
                "cumsum" => ferrox::cumsum,
                "cumprod" => ferrox::cumprod,
                "cummax" => ferrox::cummax,
                _ => ferrox::cummin,
            };
            f(
                x,
                axis(case),
                flag(case, "reverse"),
                flag(case, "inclusive"),
            )
        }
        other => panic!("{}: unknown op {other}", case.name),
    }
}

/// Tolerances: the dtype's defaults, looser for products (their rounding
/// depends on the order) and relative to the largest output for complex
/// results (a small component of a large number carries its error).
fn tolerances(case: &Case) -> (f64, f64) {
    let (mut rtol, mut atol) = tolerance(case.output.dtype);
    let magnitude = case
        .output
        .data
        .iter()
        .chain(&case.output.imag)
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    if case.op.contains("prod") && matches!(case.output.dtype, DType::Float32 | DType::Complex64) {
        rtol = rtol.max(1e-5);
    }
    if case.output.dtype == DType::Complex64 {
        atol = atol.max(rtol * magnitude);
    }
    if matches!(
        case.op.as_str(),
        "var" | "std" | "mean" | "softmax" | "logsumexp"
    ) && case.output.dtype == DType::Float32
    {
        atol = atol.max(1e-6 * magnitude);
    }
    (rtol, atol)
}

/// The tensor `t` with its axes permuted (`out` axis i = `t` axis perm[i]),
/// stored contiguously.
fn permuted(t: &Tensor, perm: &[usize]) -> Tensor {
    let shape: Vec<usize> = perm.iter().map(|&p| t.shape[p]).collect();
    let nd = t.shape.len();
    let mut strides = vec![1usize; nd];
    for d in (0..nd.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * t.shape[d + 1];
    }
    let n: usize = shape.iter().product();
    let (mut data, mut imag) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for lin in 0..n {
        let mut rest = lin;
        let mut src = 0;
        for i in (0..nd).rev() {
            src += (rest % shape[i]) * strides[perm[i]];
            rest /= shape[i];
        }
        data.push(t.data[src]);
        if !t.imag.is_empty() {
            imag.push(t.imag[src]);
        }
    }
    Tensor {
        shape,
        dtype: t.dtype,
        data,
        imag,
    }
}

/// A non-contiguous view with the logical values of `t`: a contiguous copy
/// of `t` permuted by `perm`, transposed back.
fn view_of(t: &Tensor, perm: &[usize]) -> Array {
    let stored = array(&permuted(t, perm));
    let mut inverse = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let v = ferrox::transpose(&stored, Some(&inverse)).expect("transpose");
    assert_eq!(v.shape(), &t.shape[..]);
    v
}

fn input(case: &Case) -> Array {
    let x = array(&case.inputs[0]);
    match case.params.get("broadcast_to") {
        Some(Value::Array(shape)) => {
            let shape: Vec<usize> = shape
                .iter()
                .map(|d| d.as_u64().expect("dim") as usize)
                .collect();
            ferrox::broadcast_to(&x, &shape).expect("broadcast")
        }
        _ => x,
    }
}

#[test]
fn numpy_reduce_fixtures() {
    let cases = load("reduce.json");
    assert!(cases.len() > 700, "{} cases", cases.len());
    for case in &cases {
        let (rtol, atol) = tolerances(case);
        let got = apply(case, &input(case)).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_matches(&case.name, &got, &case.output, rtol, atol);
        let t = &case.inputs[0];
        if case.params.get("broadcast_to").is_some() || t.shape.len() < 2 {
            continue;
        }
        let nd = t.shape.len();
        let reversed: Vec<usize> = (0..nd).rev().collect();
        let mut swapped: Vec<usize> = (0..nd).collect();
        swapped.swap(0, 1);
        for (label, perm) in [("reversed axes", reversed), ("swapped axes", swapped)] {
            let v = view_of(t, &perm);
            let got = apply(case, &v).unwrap_or_else(|e| panic!("{} ({label}): {e}", case.name));
            assert_matches(
                &format!("{} ({label})", case.name),
                &got,
                &case.output,
                rtol,
                atol,
            );
        }
    }
}

#[test]
fn every_dtype_and_op_is_covered() {
    let cases = load("reduce.json");
    let ops = [
        "sum", "prod", "mean", "max", "min", "all", "any", "argmax", "argmin", "cumsum", "cumprod",
        "cummax", "cummin",
    ];
    for op in ops {
        for d in DType::ALL {
            assert!(
                cases.iter().any(|c| c.op == op && c.inputs[0].dtype == d),
                "no fixture for {op} on {d}"
            );
        }
    }
    for op in ["var", "std", "logsumexp", "softmax"] {
        for d in [
            DType::Float16,
            DType::BFloat16,
            DType::Float32,
            DType::Float64,
            DType::Int32,
        ] {
            assert!(
                cases.iter().any(|c| c.op == op && c.inputs[0].dtype == d),
                "no fixture for {op} on {d}"
            );
        }
    }
}

#[test]
fn results_are_independent_of_the_thread_count() {
    // Large enough for the parallel paths; same bits on one thread.
    let n = 1 << 18;
    let v: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 997.0).collect();
    let a = Array::from_slice(&v, &[64, n / 64]).unwrap();
    let run = || {
        let s = ferrox::sum(&a, None, false).unwrap().item::<f32>().unwrap();
        let r = values(&ferrox::sum(&a, Some(&[0]), false).unwrap()).0;
        let c = values(&ferrox::cumsum(&a, None, false, true).unwrap()).0;
        (s.to_bits(), r, c)
    };
    let many = run();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let one = pool.install(run);
    assert_eq!(many, one);
}
