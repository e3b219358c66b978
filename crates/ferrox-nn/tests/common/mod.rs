//! Shared helpers: the mlx fixture (`fixtures/nn.json`, written by
//! `fixtures/gen_nn.py`) and comparisons.
#![allow(dead_code)]

use ferrox::{Array, DType};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The parsed fixture.
pub fn fixture() -> &'static Value {
    static F: OnceLock<Value> = OnceLock::new();
    F.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/nn.json");
        let text = std::fs::read_to_string(path).expect("read nn.json");
        serde_json::from_str(&text).expect("parse nn.json")
    })
}

/// The cases of one section.
pub fn section(name: &str) -> &'static [Value] {
    fixture()[name].as_array().expect(name)
}

/// A fixture tensor as an array.
pub fn array(v: &Value) -> Array {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data = v["data"].as_array().expect("data");
    match v["dtype"].as_str().expect("dtype") {
        "float32" => {
            let d: Vec<f32> = data.iter().map(|x| x.as_f64().expect("f") as f32).collect();
            Array::from_slice(&d, &shape).expect("array")
        }
        "int32" => {
            let d: Vec<i32> = data.iter().map(|x| x.as_i64().expect("i") as i32).collect();
            Array::from_slice(&d, &shape).expect("array")
        }
        "uint32" => {
            let d: Vec<u32> = data.iter().map(|x| x.as_u64().expect("u") as u32).collect();
            Array::from_slice(&d, &shape).expect("array")
        }
        other => panic!("dtype {other}"),
    }
}

/// A map of named fixture tensors.
pub fn named(v: &Value) -> BTreeMap<String, Array> {
    v.as_object()
        .expect("object")
        .iter()
        .map(|(k, t)| (k.clone(), array(t)))
        .collect()
}

/// Values as f64.
pub fn values(a: &Array) -> Vec<f64> {
    a.astype(DType::Float64)
        .and_then(|a| a.to_vec::<f64>())
        .expect("values")
}

/// `got` equals the fixture tensor `want` to `atol + rtol * |want|`.
pub fn assert_close(name: &str, got: &Array, want: &Value, atol: f64, rtol: f64) {
    let w = array(want);
    assert_eq!(got.shape(), w.shape(), "{name}: shape");
    for (i, (g, e)) in values(got).iter().zip(values(&w)).enumerate() {
        let ok = (g - e).abs() <= atol + rtol * e.abs() || (g.is_infinite() && g == &e);
        assert!(ok, "{name}: element {i}: got {g}, want {e}");
    }
}

pub fn usize_arg(v: &Value, k: &str) -> usize {
    v["args"][k].as_u64().unwrap_or_else(|| panic!("arg {k}")) as usize
}

pub fn f64_arg(v: &Value, k: &str) -> f64 {
    v["args"][k].as_f64().unwrap_or_else(|| panic!("arg {k}"))
}

pub fn bool_arg(v: &Value, k: &str) -> bool {
    v["args"][k].as_bool().unwrap_or_else(|| panic!("arg {k}"))
}

pub fn dims<const N: usize>(v: &Value, k: &str) -> [usize; N] {
    let a: Vec<usize> = v["args"][k]
        .as_array()
        .unwrap_or_else(|| panic!("arg {k}"))
        .iter()
        .map(|d| d.as_u64().expect("d") as usize)
        .collect();
    a.try_into().expect("rank")
}
