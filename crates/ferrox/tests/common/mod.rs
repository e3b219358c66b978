//! Shared helpers for integration tests: loading numpy fixtures and
//! comparing arrays against them.
#![allow(dead_code)]

pub mod checks;

use ferrox::{Array, DType};
use serde_json::Value;

/// One tensor from a fixture file.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Real values (complex: real parts) as f64.
    pub data: Vec<f64>,
    /// Imaginary parts for complex tensors.
    pub imag: Vec<f64>,
}

/// One case: an op applied to inputs with parameters.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub op: String,
    pub params: Value,
    pub inputs: Vec<Tensor>,
    pub output: Tensor,
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::Number(n) => n.as_f64().expect("number"),
        other => panic!("bad number {other:?}"),
    }
}

fn tensor(v: &Value) -> Tensor {
    let shape = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let dtype = DType::from_name(v["dtype"].as_str().expect("dtype")).expect("known dtype");
    let (mut data, mut imag) = (vec![], vec![]);
    for x in v["data"].as_array().expect("data") {
        match x {
            Value::Array(pair) => {
                data.push(num(&pair[0]));
                imag.push(num(&pair[1]));
            }
            other => data.push(num(other)),
        }
    }
    Tensor {
        shape,
        dtype,
        data,
        imag,
    }
}

/// Loads `tests/fixtures/<file>`.
pub fn load(file: &str) -> Vec<Case> {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).expect("json");
    v.as_array()
        .expect("list of cases")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().unwrap_or("").to_string(),
            op: c["op"].as_str().expect("op").to_string(),
            params: c["params"].clone(),
            inputs: c["inputs"]
                .as_array()
                .expect("inputs")
                .iter()
                .map(tensor)
                .collect(),
            output: tensor(&c["output"]),
        })
        .collect()
}

/// Builds an array holding a fixture tensor.
pub fn array(t: &Tensor) -> Array {
    use half::{bf16, f16};
    let d = &t.data;
    let s = &t.shape;
    let r = match t.dtype {
        DType::Bool => Array::from_slice(&d.iter().map(|&x| x != 0.0).collect::<Vec<_>>(), s),
        DType::UInt8 => Array::from_slice(&d.iter().map(|&x| x as u8).collect::<Vec<_>>(), s),
        DType::UInt16 => Array::from_slice(&d.iter().map(|&x| x as u16).collect::<Vec<_>>(), s),
        DType::UInt32 => Array::from_slice(&d.iter().map(|&x| x as u32).collect::<Vec<_>>(), s),
        DType::UInt64 => Array::from_slice(&d.iter().map(|&x| x as u64).collect::<Vec<_>>(), s),
        DType::Int8 => Array::from_slice(&d.iter().map(|&x| x as i8).collect::<Vec<_>>(), s),
        DType::Int16 => Array::from_slice(&d.iter().map(|&x| x as i16).collect::<Vec<_>>(), s),
        DType::Int32 => Array::from_slice(&d.iter().map(|&x| x as i32).collect::<Vec<_>>(), s),
        DType::Int64 => Array::from_slice(&d.iter().map(|&x| x as i64).collect::<Vec<_>>(), s),
        DType::Float16 => {
            Array::from_slice(&d.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>(), s)
        }
        DType::BFloat16 => {
            Array::from_slice(&d.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>(), s)
        }
        DType::Float32 => Array::from_slice(&d.iter().map(|&x| x as f32).collect::<Vec<_>>(), s),
        DType::Float64 => Array::from_slice(d, s),
        DType::Complex64 => Array::from_slice(
            &d.iter()
                .zip(&t.imag)
                .map(|(&a, &b)| ferrox::Complex64::new(a as f32, b as f32))
                .collect::<Vec<_>>(),
            s,
        ),
    };
    r.expect("fixture tensor")
}

/// The elements of `a` as (re, im) f64 pairs, whatever its dtype.
pub fn values(a: &Array) -> (Vec<f64>, Vec<f64>) {
    use ferrox::dtype::Element;
    let re_im = |v: Vec<ferrox::Complex64>| {
        (
            v.iter().map(|c| c.re as f64).collect(),
            v.iter().map(|c| c.im as f64).collect(),
        )
    };
    if a.dtype() == DType::Complex64 {
        return re_im(a.to_vec::<ferrox::Complex64>().expect("values"));
    }
    let re: Vec<f64> = ferrox::with_dtype!(a.dtype(), T => {
        a.to_vec::<T>().expect("values").into_iter().map(|x| x.to_f64()).collect()
    });
    let n = re.len();
    (re, vec![0.0; n])
}

fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= atol + rtol * b.abs()
}

/// Asserts that `actual` has the fixture's shape and dtype and values within
/// `rtol`/`atol` (NaNs equal NaNs).
pub fn assert_matches(case: &str, actual: &Array, want: &Tensor, rtol: f64, atol: f64) {
    assert_eq!(actual.shape(), &want.shape[..], "{case}: shape");
    assert_eq!(actual.dtype(), want.dtype, "{case}: dtype");
    let (re, im) = values(actual);
    for (i, (&a, &b)) in re.iter().zip(&want.data).enumerate() {
        assert!(
            close(a, b, rtol, atol),
            "{case}: element {i}: got {a}, want {b}"
        );
    }
    for (i, (&a, &b)) in im.iter().zip(&want.imag).enumerate() {
        assert!(
            close(a, b, rtol, atol),
            "{case}: element {i} (imag): got {a}, want {b}"
        );
    }
}

/// Default tolerances per dtype.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::Float16 => (2e-3, 1e-3),
        DType::BFloat16 => (1.6e-2, 1e-2),
        DType::Float32 | DType::Complex64 => (2e-6, 1e-6),
        DType::Float64 => (1e-12, 1e-12),
        _ => (0.0, 0.0),
    }
}

/// Runs `f` on a fresh thread and fails the test if it does not finish
/// within `secs` seconds: a deadlock becomes a failure instead of a hang.
pub fn watchdog<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(Ok(r)) => r,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("watchdog: did not finish within {secs} s (deadlock?)"),
    }
}

/// Joins `handle` within `secs` seconds or fails.
pub fn join_within<R: Send + 'static>(secs: u64, handle: std::thread::JoinHandle<R>) -> R {
    watchdog(secs, move || handle.join().expect("thread panicked"))
}
