//! ferrox.random against mlx 0.32.4 on the CPU (fixtures written by
//! `fixtures/gen_random_mlx.py`): the same key gives the same keys, the
//! same raw bits and the same samples, bit for bit, for every sampler and
//! float dtype mlx samples, for 0-d, empty and odd shapes, and for the
//! default key after `seed`. `multivariate_normal` is the exception: mlx
//! takes the covariance's square root from a float32 SVD and ferrox from a
//! float64 eigendecomposition, so its samples agree to float32 rounding.

mod common;

use common::{Case, Tensor, array, load, values};
use ferrox::{Array, DType, random};

fn cases(ops: &[&str]) -> Vec<Case> {
    let all = load("random_mlx.json");
    let picked: Vec<Case> = all
        .into_iter()
        .filter(|c| ops.contains(&c.op.as_str()))
        .collect();
    assert!(!picked.is_empty(), "no cases for {ops:?}");
    picked
}

fn p_u64(c: &Case, k: &str) -> u64 {
    c.params[k]
        .as_u64()
        .unwrap_or_else(|| panic!("{}: {k}", c.name))
}

fn p_i64(c: &Case, k: &str) -> i64 {
    c.params[k]
        .as_i64()
        .unwrap_or_else(|| panic!("{}: {k}", c.name))
}

fn p_f64(c: &Case, k: &str) -> f64 {
    c.params[k]
        .as_f64()
        .unwrap_or_else(|| panic!("{}: {k}", c.name))
}

fn p_shape(c: &Case, k: &str) -> Option<Vec<usize>> {
    c.params.get(k).and_then(|v| v.as_array()).map(|a| {
        a.iter()
            .map(|d| d.as_u64().expect("dim") as usize)
            .collect()
    })
}

fn p_dtype(c: &Case) -> DType {
    DType::from_name(c.params["dtype"].as_str().expect("dtype")).expect("dtype name")
}

fn key_of(c: &Case) -> Array {
    random::key(p_u64(c, "seed")).expect("key")
}

/// Python floats reach mlx as float32 scalars: a weak f32 scalar here.
fn scalar(c: &Case, k: &str) -> Array {
    Array::from(p_f64(c, k))
}

/// Draws what case `c` asks for with the explicit key of its seed.
fn draw(c: &Case) -> ferrox::Result<Array> {
    let k = key_of(c);
    let key = Some(&k);
    let shape = p_shape(c, "shape").unwrap_or_default();
    let arg = |i: usize| array(&c.inputs[i]);
    match c.op.as_str() {
        "key" => Ok(k),
        "split" => random::split(&k, p_u64(c, "num") as usize),
        "bits" => random::bits(&shape, p_u64(c, "width") as usize, key),
        "uniform" => random::uniform(scalar(c, "low"), scalar(c, "high"), &shape, p_dtype(c), key),
        "uniform_arrays" => random::uniform(arg(0), arg(1), &shape, p_dtype(c), key),
        "normal" => random::normal(
            &shape,
            p_dtype(c),
            scalar(c, "loc"),
            scalar(c, "scale"),
            key,
        ),
        "normal_arrays" => random::normal(&shape, p_dtype(c), arg(0), arg(1), key),
        "truncated_normal" => random::truncated_normal(
            scalar(c, "lower"),
            scalar(c, "upper"),
            Some(&shape),
            p_dtype(c),
            key,
        ),
        "truncated_normal_arrays" => {
            random::truncated_normal(arg(0), arg(1), None, p_dtype(c), key)
        }
        "randint" => random::randint(
            Array::from(p_i64(c, "low")),
            Array::from(p_i64(c, "high")),
            &shape,
            p_dtype(c),
            key,
        ),
        "randint_arrays" => random::randint(arg(0), arg(1), &shape, p_dtype(c), key),
        "bernoulli" => random::bernoulli(scalar(c, "p"), Some(&shape), key),
        "bernoulli_array" => random::bernoulli(arg(0), p_shape(c, "shape").as_deref(), key),
        "gumbel" => random::gumbel(&shape, p_dtype(c), key),
        "laplace" => random::laplace(
            &shape,
            p_dtype(c),
            scalar(c, "loc"),
            scalar(c, "scale"),
            key,
        ),
        "categorical" => random::categorical(
            &arg(0),
            p_i64(c, "axis") as isize,
            p_shape(c, "shape").as_deref(),
            c.params
                .get("num_samples")
                .and_then(|v| v.as_u64())
                .map(|n| n as usize),
            key,
        ),
        "permutation" => random::permutation(p_u64(c, "n") as usize, key),
        "permutation_of" => random::permutation_of(&arg(0), p_i64(c, "axis") as isize, key),
        "multivariate_normal" => {
            random::multivariate_normal(&arg(0), &arg(1), &shape, DType::Float32, key)
        }
        op => panic!("unknown op {op}"),
    }
}

/// Asserts `got` equals the fixture exactly: shape, dtype and every value
/// (NaN equal to NaN; signed zeros alike). Float values are compared as
/// float32 (every sample is one), which also absorbs the JSON parser's
/// last f64 bit.
fn assert_same(name: &str, got: &Array, want: &Tensor) {
    assert_eq!(got.shape(), &want.shape[..], "{name}: shape");
    assert_eq!(got.dtype(), want.dtype, "{name}: dtype");
    let (re, im) = values(got);
    let float = got.dtype().is_float() || got.dtype() == DType::Complex64;
    let same = |a: f64, b: f64| {
        (a.is_nan() && b.is_nan())
            || if float {
                (a as f32).to_bits() == (b as f32).to_bits()
            } else {
                a == b
            }
    };
    for (i, (&g, &w)) in re.iter().zip(&want.data).enumerate() {
        assert!(same(g, w), "{name}: element {i}: got {g}, want {w}");
    }
    for (i, (&g, &w)) in im.iter().zip(&want.imag).enumerate() {
        assert!(
            same(g, w),
            "{name}: element {i} (imaginary): got {g}, want {w}"
        );
    }
}

fn check_all(ops: &[&str]) -> usize {
    let cs = cases(ops);
    for c in &cs {
        let got = draw(c).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_same(&c.name, &got, &c.output);
    }
    cs.len()
}

#[test]
fn keys_split_and_bits_match_mlx() {
    let n = check_all(&["key", "split", "bits"]);
    assert!(n >= 80, "{n} cases");
}

#[test]
fn long_streams_match_mlx() {
    for c in cases(&["bits_sampled"]) {
        let n = p_u64(&c, "n") as usize;
        let b = random::bits(&[n], p_u64(&c, "width") as usize, Some(&key_of(&c))).expect("bits");
        let b = b
            .astype(DType::UInt64)
            .expect("u64")
            .to_vec::<u64>()
            .expect("values");
        let sum: u64 = b.iter().sum();
        assert_eq!(sum, p_u64(&c, "sum"), "{}: sum", c.name);
        let idx = c.params["idx"].as_array().expect("idx");
        for (i, w) in idx.iter().zip(&c.output.data) {
            let i = i.as_u64().expect("index") as usize;
            assert_eq!(b[i] as f64, *w, "{}: element {i}", c.name);
        }
    }
}

#[test]
fn vmap_over_keys_matches_mlx() {
    for c in cases(&["vmap_uniform"]) {
        let keys = random::split(&key_of(&c), p_u64(&c, "num") as usize).expect("keys");
        let f = ferrox::vmap(
            |k: &[Array]| {
                Ok(vec![random::uniform(
                    0.0,
                    1.0,
                    &[3],
                    DType::Float32,
                    Some(&k[0]),
                )?])
            },
            &[Some(0)],
            &[Some(0)],
        );
        let u = f(&[keys]).expect("vmap")[0].clone();
        let v = u.to_vec::<f32>().expect("values");
        let sum: f64 = v.iter().map(|&x| f64::from(x)).sum();
        let want = p_f64(&c, "sum");
        assert!((sum - want).abs() <= 1e-9 * want.abs(), "{sum} vs {want}");
        let rows = c.params["rows"].as_array().expect("rows");
        for (j, r) in rows.iter().enumerate() {
            let r = r.as_u64().expect("row") as usize;
            for k in 0..3 {
                assert_eq!(v[3 * r + k], c.output.data[3 * j + k] as f32, "row {r}");
            }
        }
    }
}

#[test]
fn continuous_samplers_match_mlx() {
    let n = check_all(&[
        "uniform",
        "uniform_arrays",
        "normal",
        "normal_arrays",
        "truncated_normal",
        "truncated_normal_arrays",
        "gumbel",
        "laplace",
    ]);
    assert!(n >= 90, "{n} cases");
}

#[test]
fn discrete_samplers_match_mlx() {
    let n = check_all(&[
        "randint",
        "randint_arrays",
        "bernoulli",
        "bernoulli_array",
        "categorical",
        "permutation",
        "permutation_of",
    ]);
    assert!(n >= 60, "{n} cases");
}

#[test]
fn multivariate_normal_is_close_to_mlx() {
    for c in cases(&["multivariate_normal"]) {
        let got = draw(&c).expect("multivariate_normal");
        common::assert_matches(&c.name, &got, &c.output, 1e-5, 1e-5);
    }
}

/// One draw of the fixture's global-state sequence, with the default key.
fn step(name: &str) -> ferrox::Result<Array> {
    let f = DType::Float32;
    match name {
        "uniform" => random::uniform(0.0, 1.0, &[3], f, None),
        "normal" => random::normal(&[2, 2], f, 0.0, 1.0, None),
        "randint" => random::randint(0, 100, &[4], DType::Int32, None),
        "bernoulli" => random::bernoulli(0.5, Some(&[5]), None),
        "gumbel" => random::gumbel(&[3], f, None),
        "laplace" => random::laplace(&[3], f, 0.0, 1.0, None),
        "truncated_normal" => random::truncated_normal(-1.0, 1.0, Some(&[3]), f, None),
        "categorical" => {
            let l = Array::from_slice(&[0.5f32, -1.0, 2.0, 0.0, 1.0], &[5])?;
            random::categorical(&l, -1, Some(&[4]), None, None)
        }
        "permutation" => random::permutation(6, None),
        other => panic!("unknown step {other}"),
    }
}

#[test]
fn the_default_key_after_seed_matches_mlx() {
    let cs = cases(&["global"]);
    for c in &cs {
        random::seed(p_u64(c, "global_seed"));
        let steps = c.params["steps"].as_array().expect("steps");
        let mut last = None;
        for s in steps {
            last = Some(step(s.as_str().expect("step")).expect("draw"));
        }
        assert_same(&c.name, &last.expect("a step"), &c.output);
    }
    assert!(cs.len() >= 20);
}
