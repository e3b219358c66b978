//! numpy reference tests for the binary and ternary elementwise ops, the
//! closeness tests, `astype` and `view` (fixtures from
//! `fixtures/gen_binary.py`).
//!
//! Every case runs twice: through the public op on contiguous inputs, and
//! again with the op's final primitive evaluated directly on non-contiguous
//! copies of its (already promoted) inputs: stored reversed and read through
//! negative strides, and, for 2-d inputs, stored transposed and read through
//! swapped strides.

mod common;

use common::{Case, Tensor, array, assert_matches, load, tolerance};
use ferrox::array::{Data, row_major_strides};
use ferrox::dtype::Element;
use ferrox::graph::primitive::{Operand, OutSpec};
use ferrox::runtime::memory::Storage;
use ferrox::{Array, Complex64, DType, Result};
use std::sync::Arc;

/// The case's inputs; `weak` params turn 0-d inputs into weak scalars.
fn inputs(c: &Case) -> Vec<Array> {
    let weak = |i: usize| {
        c.params["weak"]
            .as_array()
            .is_some_and(|w| w[i].as_bool() == Some(true))
    };
    c.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if !weak(i) {
                return array(t);
            }
            match t.dtype {
                DType::Float64 => Array::weak_f64(t.data[0]),
                DType::Int64 => Array::weak_i64(t.data[0] as i64),
                DType::Bool => Array::weak_bool(t.data[0] != 0.0),
                other => panic!("{}: weak scalar of dtype {other}", c.name),
            }
        })
        .collect()
}

/// Builds the case's op (lazily).
fn run(c: &Case) -> Result<Array> {
    let x = inputs(c);
    let p = &c.params;
    let num = |k: &str| {
        p[k].as_f64()
            .unwrap_or_else(|| panic!("{}: param {k}", c.name))
    };
    let flag = |k: &str| {
        p[k].as_bool()
            .unwrap_or_else(|| panic!("{}: param {k}", c.name))
    };
    let dtype = || DType::from_name(p["dtype"].as_str().expect("dtype param")).expect("dtype");
    let (a, b) = (&x[0], x.get(1));
    let b = || b.expect("second input");
    match c.op.as_str() {
        "add" => ferrox::add(a, b()),
        "subtract" => ferrox::subtract(a, b()),
        "multiply" => ferrox::multiply(a, b()),
        "divide" => ferrox::divide(a, b()),
        "floor_divide" => ferrox::floor_divide(a, b()),
        "remainder" => ferrox::remainder(a, b()),
        "power" => ferrox::power(a, b()),
        "maximum" => ferrox::maximum(a, b()),
        "minimum" => ferrox::minimum(a, b()),
        "arctan2" => ferrox::arctan2(a, b()),
        "logaddexp" => ferrox::logaddexp(a, b()),
        "equal" => ferrox::equal(a, b()),
        "not_equal" => ferrox::not_equal(a, b()),
        "less" => ferrox::less(a, b()),
        "less_equal" => ferrox::less_equal(a, b()),
        "greater" => ferrox::greater(a, b()),
        "greater_equal" => ferrox::greater_equal(a, b()),
        "logical_and" => ferrox::logical_and(a, b()),
        "logical_or" => ferrox::logical_or(a, b()),
        "bitwise_and" => ferrox::bitwise_and(a, b()),
        "bitwise_or" => ferrox::bitwise_or(a, b()),
        "bitwise_xor" => ferrox::bitwise_xor(a, b()),
        "left_shift" => ferrox::left_shift(a, b()),
        "right_shift" => ferrox::right_shift(a, b()),
        "where" => ferrox::r#where(a, b(), &x[2]),
        "clip" => {
            let mut bounds = x[1..].iter();
            let min = if flag("has_min") { bounds.next() } else { None };
            let max = if flag("has_max") { bounds.next() } else { None };
            ferrox::clip(a, min, max)
        }
        "isclose" => ferrox::isclose(a, b(), num("rtol"), num("atol"), flag("equal_nan")),
        "allclose" => ferrox::allclose(a, b(), num("rtol"), num("atol"), flag("equal_nan")),
        "array_equal" => ferrox::array_equal(a, b(), flag("equal_nan")),
        "nan_to_num" => {
            ferrox::nan_to_num(a, num("nan"), p["posinf"].as_f64(), p["neginf"].as_f64())
        }
        "astype" => a.astype(dtype()),
        "view" => ferrox::view(a, dtype()),
        other => panic!("unknown op {other}"),
    }
}

/// Test tolerance for a case's output.
fn tol(c: &Case) -> (f64, f64) {
    match (c.op.as_str(), c.output.dtype) {
        // num-complex's principal power vs the C library's cpowf.
        ("power", DType::Complex64) => (1e-5, 1e-5),
        (_, d) => tolerance(d),
    }
}

#[test]
fn ops_match_numpy() {
    let cases = load("binary.json");
    assert!(cases.len() > 900, "only {} cases", cases.len());
    for c in &cases {
        let out = run(c).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let (rtol, atol) = tol(c);
        assert_matches(&c.name, &out, &c.output, rtol, atol);
    }
}

/// How `relayout` stores an input.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Back to front, read with negative strides.
    Reversed,
    /// 2-d: column-major, read with swapped strides (others: row-major).
    Transposed,
}

/// The values of `a` in a fresh storage laid out as `layout` says.
fn relayout(a: &Array, layout: Layout) -> Data {
    let shape = a.shape().to_vec();
    ferrox::with_dtype!(a.dtype(), T => {
        let v = a.to_vec::<T>().expect("input values");
        let n = v.len();
        let mut storage = Storage::new(n * std::mem::size_of::<T>(), a.dtype() == DType::Bool).expect("storage");
        let dst = storage.as_mut_slice::<T>();
        let (strides, offset) = match layout {
            Layout::Transposed if shape.len() == 2 => {
                let (r, k) = (shape[0], shape[1]);
                for i in 0..r {
                    for j in 0..k {
                        dst[j * r + i] = v[i * k + j];
                    }
                }
                (vec![1, r as isize], 0)
            }
            Layout::Reversed if n > 0 => {
                for (d, x) in dst.iter_mut().rev().zip(&v) {
                    *d = *x;
                }
                (row_major_strides(&shape).iter().map(|s| -s).collect(), n - 1)
            }
            _ => {
                dst.copy_from_slice(&v);
                (row_major_strides(&shape), 0)
            }
        };
        Data { storage: Arc::new(storage), strides, offset }
    })
}

/// `(re, im)` of every element of `d` read as `shape`/`dtype`.
fn data_values(d: &Data, shape: &[usize], dtype: DType) -> (Vec<f64>, Vec<f64>) {
    if dtype == DType::Complex64 {
        let v = d.to_vec::<Complex64>(shape);
        return (
            v.iter().map(|c| c.re as f64).collect(),
            v.iter().map(|c| c.im as f64).collect(),
        );
    }
    let re: Vec<f64> = ferrox::with_dtype!(dtype, T => d.to_vec::<T>(shape).into_iter().map(|x| x.to_f64()).collect());
    let n = re.len();
    (re, vec![0.0; n])
}

fn check(name: &str, got: (Vec<f64>, Vec<f64>), want: &Tensor, rtol: f64, atol: f64) {
    let close = |a: f64, b: f64| {
        (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= atol + rtol * b.abs()
    };
    assert_eq!(got.0.len(), want.data.len(), "{name}: element count");
    for (i, (&a, &b)) in got.0.iter().zip(&want.data).enumerate() {
        assert!(close(a, b), "{name}: element {i}: got {a}, want {b}");
    }
    for (i, (&a, &b)) in got.1.iter().zip(&want.imag).enumerate() {
        assert!(close(a, b), "{name}: element {i} (imag): got {a}, want {b}");
    }
}

#[test]
fn kernels_match_numpy_on_non_contiguous_inputs() {
    let mut checked = 0;
    for c in &load("binary.json") {
        let out = run(c).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        // Ops that returned an input or a constant have no kernel to test.
        let Some(prim) = out.primitive().cloned() else {
            continue;
        };
        let ins = out.inputs();
        if ins.is_empty() || ins.iter().all(|i| i.size() <= 1) {
            continue;
        }
        let (rtol, atol) = tol(c);
        for layout in [Layout::Reversed, Layout::Transposed] {
            let datas: Vec<Data> = ins.iter().map(|i| relayout(i, layout)).collect();
            let ops: Vec<Operand<'_>> = ins
                .iter()
                .zip(&datas)
                .map(|(i, d)| Operand {
                    data: d,
                    shape: i.shape(),
                    dtype: i.dtype(),
                })
                .collect();
            let spec = OutSpec {
                shape: out.shape(),
                dtype: out.dtype(),
            };
            let name = format!("{} ({layout:?})", c.name);
            let data = prim
                .eval_cpu(&ops, spec)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            check(
                &name,
                data_values(&data, out.shape(), out.dtype()),
                &c.output,
                rtol,
                atol,
            );
        }
        checked += 1;
    }
    assert!(checked > 800, "only {checked} cases checked");
}

#[test]
fn every_supported_dtype_is_covered() {
    // Each op appears in the fixtures with every dtype it accepts.
    let cases = load("binary.json");
    let ops = [
        "add",
        "subtract",
        "multiply",
        "divide",
        "floor_divide",
        "remainder",
        "power",
        "maximum",
        "minimum",
        "arctan2",
        "logaddexp",
        "equal",
        "not_equal",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "left_shift",
        "right_shift",
        "where",
        "isclose",
        "array_equal",
        "astype",
    ];
    for op in ops {
        for dtype in DType::ALL {
            let accepted = match op {
                "where" | "isclose" | "array_equal" | "astype" => true,
                _ => {
                    let probe = Case {
                        name: op.into(),
                        op: op.into(),
                        params: serde_json::json!({}),
                        inputs: vec![one(dtype), one(dtype)],
                        output: one(dtype),
                    };
                    run(&probe).is_ok()
                }
            };
            let covered = cases
                .iter()
                .any(|c| c.op == op && c.inputs[c.inputs.len() - 1].dtype == dtype);
            assert_eq!(
                covered, accepted,
                "{op} on {dtype}: covered {covered}, accepted {accepted}"
            );
        }
    }
}

/// A one-element tensor holding 1.
fn one(dtype: DType) -> Tensor {
    Tensor {
        shape: vec![1],
        dtype,
        data: vec![1.0],
        imag: vec![0.0],
    }
}
