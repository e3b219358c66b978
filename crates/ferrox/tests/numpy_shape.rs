//! numpy reference tests for the view ops and joins (fixtures from
//! `fixtures/gen_shape.py`). Inputs are made non-contiguous as the case's
//! `pre` and `chain_<i>` params say, exactly as numpy's inputs were.

mod common;

use common::{Case, array, assert_matches, load};
use ferrox::{Array, DType, PadMode, Result, SliceArg};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn isizes(v: &Value) -> Vec<isize> {
    v.as_array()
        .expect("list")
        .iter()
        .map(|x| x.as_i64().expect("int") as isize)
        .collect()
}
fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("list")
        .iter()
        .map(|x| x.as_u64().expect("uint") as usize)
        .collect()
}
fn int(v: &Value) -> isize {
    v.as_i64().expect("int") as isize
}
fn opt_int(v: &Value) -> Option<isize> {
    v.as_i64().map(|x| x as isize)
}

/// `[["i", k], ["r", start, stop, step], ["new"], ["ell"]]` as slice args.
fn slice_args(v: &Value) -> Vec<SliceArg> {
    v.as_array()
        .expect("args")
        .iter()
        .map(|a| match a[0].as_str().expect("kind") {
            "i" => SliceArg::Index(int(&a[1])),
            "r" => SliceArg::range(opt_int(&a[1]), opt_int(&a[2]), int(&a[3])),
            "new" => SliceArg::NewAxis,
            "ell" => SliceArg::Ellipsis,
            other => panic!("unknown slice arg {other}"),
        })
        .collect()
}

/// The non-contiguous view named by a `pre` entry.
fn pre(a: Array, kind: &str) -> Array {
    match kind {
        "none" => a,
        "T" => a.t().unwrap(),
        "rev" => a.index(&[SliceArg::REVERSED]).unwrap(),
        "step" => a
            .index(&[SliceArg::Ellipsis, SliceArg::range(None, None, 2)])
            .unwrap(),
        other => panic!("unknown pre {other}"),
    }
}

/// Applies a view op (or `contiguous`) by name; `None` if `op` is not one.
fn view_op(a: &Array, op: &str, p: &Value) -> Option<Result<Array>> {
    let axes = |v: &Value| if v.is_null() { None } else { Some(isizes(v)) };
    Some(match op {
        "reshape" => ferrox::reshape(a, &isizes(&p["shape"])),
        "flatten" => ferrox::flatten(a, int(&p["start"]), int(&p["end"])),
        "unflatten" => ferrox::unflatten(a, int(&p["axis"]), &isizes(&p["shape"])),
        "squeeze" => ferrox::squeeze(a, axes(&p["axes"]).as_deref()),
        "expand_dims" => ferrox::expand_dims(a, &isizes(&p["axes"])),
        "transpose" => {
            let ax = if p["axes"].is_null() {
                None
            } else {
                Some(usizes(&p["axes"]))
            };
            ferrox::transpose(a, ax.as_deref())
        }
        "swapaxes" => ferrox::swapaxes(a, int(&p["axis1"]), int(&p["axis2"])),
        "moveaxis" => ferrox::moveaxis(a, int(&p["source"]), int(&p["destination"])),
        "broadcast_to" => ferrox::broadcast_to(a, &usizes(&p["shape"])),
        "slice" => ferrox::slice(
            a,
            &isizes(&p["start"]),
            &isizes(&p["stop"]),
            &isizes(&p["strides"]),
        ),
        "index" => a.index(&slice_args(&p["args"])),
        "diagonal" => ferrox::diagonal(a, int(&p["offset"]), int(&p["axis1"]), int(&p["axis2"])),
        "contiguous" => ferrox::contiguous(a),
        "chain" => Ok(a.clone()),
        _ => return None,
    })
}

/// The case's inputs with `pre` and `chain_<i>` applied.
fn inputs(c: &Case) -> Vec<Array> {
    let pres = c.params["pre"].as_array().expect("pre");
    c.inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut a = pre(array(t), pres[i].as_str().expect("pre kind"));
            if let Some(chain) = c.params.get(format!("chain_{i}")) {
                for step in chain.as_array().expect("chain") {
                    let op = step[0].as_str().expect("op");
                    a = view_op(&a, op, &step[1]).expect("a view op").unwrap();
                }
            }
            a
        })
        .collect()
}

fn run(c: &Case) -> Result<Array> {
    let xs = inputs(c);
    let p = &c.params;
    if let Some(r) = view_op(&xs[0], &c.op, p) {
        return r;
    }
    let piece = || p["piece"].as_u64().expect("piece") as usize;
    match c.op.as_str() {
        "concatenate" => ferrox::concatenate(&xs, int(&p["axis"])),
        "stack" => ferrox::stack(&xs, int(&p["axis"])),
        "split" => {
            let sections: ferrox::Sections = match &p["sections"] {
                Value::Number(n) => (n.as_u64().expect("count") as usize).into(),
                v => isizes(v).into(),
            };
            Ok(ferrox::split(&xs[0], sections, int(&p["axis"]))?.swap_remove(piece()))
        }
        "tile" => ferrox::tile(&xs[0], &usizes(&p["reps"])),
        "repeat" => ferrox::repeat(
            &xs[0],
            p["repeats"].as_u64().expect("repeats") as usize,
            opt_int(&p["axis"]),
        ),
        "pad" => {
            let widths: Vec<(usize, usize)> = p["widths"]
                .as_array()
                .expect("widths")
                .iter()
                .map(|w| (usizes(w)[0], usizes(w)[1]))
                .collect();
            let mode = match p["mode"].as_str().expect("mode") {
                "constant" => PadMode::Constant(p["value"].as_f64().expect("value")),
                _ => PadMode::Edge,
            };
            ferrox::pad(&xs[0], &widths, mode)
        }
        "roll" => {
            let axes = if p["axes"].is_null() {
                None
            } else {
                Some(isizes(&p["axes"]))
            };
            ferrox::roll(&xs[0], &isizes(&p["shift"]), axes.as_deref())
        }
        "meshgrid" => {
            let sparse = p["sparse"].as_bool().expect("sparse");
            Ok(
                ferrox::meshgrid(&xs, sparse, p["indexing"].as_str().expect("indexing"))?
                    .swap_remove(piece()),
            )
        }
        "tril" => ferrox::tril(&xs[0], int(&p["k"])),
        "triu" => ferrox::triu(&xs[0], int(&p["k"])),
        "diag" => ferrox::diag(&xs[0], int(&p["k"])),
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn shape_ops_match_numpy() {
    let cases = load("shape.json");
    assert!(cases.len() > 300);
    for c in &cases {
        let out = run(c).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        // Shape ops move elements without arithmetic: results are exact.
        assert_matches(&c.name, &out, &c.output, 0.0, 0.0);
        // A contiguous copy of the result holds the same values.
        let copy = ferrox::contiguous(&out).unwrap();
        assert_matches(
            &format!("{} (contiguous)", c.name),
            &copy,
            &c.output,
            0.0,
            0.0,
        );
    }
}

#[test]
fn fixtures_cover_every_dtype_for_the_copy_kernels() {
    let cases = load("shape.json");
    let mut seen: BTreeMap<String, BTreeSet<DType>> = BTreeMap::new();
    for c in &cases {
        seen.entry(c.op.clone()).or_default().insert(c.output.dtype);
    }
    for op in [
        "reshape",
        "contiguous",
        "concatenate",
        "stack",
        "tile",
        "repeat",
        "pad",
        "roll",
        "tril",
        "triu",
        "diag",
    ] {
        assert_eq!(
            seen.get(op).map(|s| s.len()),
            Some(DType::ALL.len()),
            "{op}"
        );
    }
}

#[test]
fn errors_are_reported_not_panics() {
    let a = ferrox::zeros(&[2, 3], DType::Float32).unwrap();
    let msg = |r: Result<Array>| r.unwrap_err().to_string();
    assert_eq!(
        msg(a.reshape(&[4, -1])),
        "reshape: cannot reshape array of shape [2, 3] into shape [4, -1]"
    );
    assert_eq!(
        msg(a.index(&[5.into()])),
        "index: index 5 is out of bounds for axis 0 with size 2"
    );
    assert!(msg(a.index(&[SliceArg::range(None, None, 0)])).starts_with("index:"));
    assert!(msg(ferrox::concatenate(&[a.clone(), a.t().unwrap()], 0)).starts_with("concatenate:"));
    assert!(msg(ferrox::broadcast_to(&a, &[3, 3])).starts_with("broadcast_to:"));
    assert!(msg(ferrox::pad(&a, &[(1, 1); 3], PadMode::Edge)).starts_with("pad:"));
}
