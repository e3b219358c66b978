//! numpy reference tests for the indexing and sort families (fixtures from
//! `fixtures/gen_indexing.py`). Every case runs twice: with contiguous
//! inputs, and with every input replaced by an equal non-contiguous view
//! (transposed for 2+ dimensions, reversed for 1), so the kernels' strided
//! paths see the same data.

mod common;

use common::{Case, Tensor, array, assert_matches, load, tolerance, values};
use ferrox::{Array, DType, ErrorKind, Result};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::sync::OnceLock;

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| load("indexing.json"))
}

fn opt_int(v: &Value) -> Option<isize> {
    v.as_i64().map(|x| x as isize)
}
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

/// An array equal to `a` whose data is not contiguous.
fn non_contiguous(a: &Array) -> Array {
    let view = match a.ndim() {
        0 => return a.clone(),
        1 => {
            let n = a.shape()[0] as isize;
            let reversed = |x: &Array| ferrox::slice(x, &[-1], &[-n - 1], &[-1]);
            reversed(&ferrox::contiguous(&reversed(a).unwrap()).unwrap()).unwrap()
        }
        _ => ferrox::transpose(
            &ferrox::contiguous(&ferrox::transpose(a, None).unwrap()).unwrap(),
            None,
        )
        .unwrap(),
    };
    let same = |x: &[f64], y: &[f64]| {
        x.iter()
            .zip(y)
            .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
    };
    let ((vr, vi), (ar, ai)) = (values(&view), values(a));
    assert!(
        same(&vr, &ar) && same(&vi, &ai),
        "the strided view must equal its source"
    );
    view
}

fn inputs(c: &Case, strided: bool) -> Vec<Array> {
    c.inputs
        .iter()
        .map(array)
        .map(|a| if strided { non_contiguous(&a) } else { a })
        .collect()
}

/// Runs every case of `ops`, contiguous and strided; returns the dtypes of
/// the first inputs seen.
fn check_ops(ops: &[&str], run: impl Fn(&Case, &[Array]) -> Result<Array>) -> BTreeSet<DType> {
    let mut seen = BTreeSet::new();
    let mut n = 0;
    for c in cases().iter().filter(|c| ops.contains(&c.op.as_str())) {
        for strided in [false, true] {
            let got = run(c, &inputs(c, strided)).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let (rtol, atol) = tolerance(c.output.dtype);
            assert_matches(
                &format!("{} (strided: {strided})", c.name),
                &got,
                &c.output,
                rtol,
                atol,
            );
        }
        seen.insert(c.inputs[0].dtype);
        n += 1;
    }
    assert!(n > 0, "no cases for {ops:?}");
    seen
}

/// Every dtype numpy can produce (bfloat16 is covered by unit tests).
fn assert_all_dtypes(seen: &BTreeSet<DType>) {
    let missing: Vec<_> = DType::ALL
        .iter()
        .filter(|d| **d != DType::BFloat16 && !seen.contains(d))
        .collect();
    assert!(missing.is_empty(), "dtypes without fixtures: {missing:?}");
}

#[test]
fn take_matches_numpy() {
    let seen = check_ops(&["take"], |c, x| {
        ferrox::take(&x[0], &x[1], opt_int(&c.params["axis"]))
    });
    assert_all_dtypes(&seen);
}

#[test]
fn take_along_axis_matches_numpy() {
    check_ops(&["take_along_axis"], |c, x| {
        ferrox::take_along_axis(&x[0], &x[1], opt_int(&c.params["axis"]))
    });
}

#[test]
fn put_along_axis_matches_numpy() {
    check_ops(&["put_along_axis"], |c, x| {
        ferrox::put_along_axis(&x[0], &x[1], &x[2], opt_int(&c.params["axis"]))
    });
}

#[test]
fn gather_matches_loops() {
    let seen = check_ops(&["gather"], |c, x| {
        let axes = isizes(&c.params["axes"]);
        ferrox::gather(
            &x[0],
            &x[1..=axes.len()],
            &axes,
            &usizes(&c.params["slice_sizes"]),
        )
    });
    assert_all_dtypes(&seen);
}

#[test]
fn scatters_match_loops() {
    let ops = [
        "scatter",
        "scatter_add",
        "scatter_prod",
        "scatter_max",
        "scatter_min",
    ];
    for op in ops {
        let seen = check_ops(&[op], |c, x| {
            let (axes, n) = (
                isizes(&c.params["axes"]),
                c.params["n_idx"].as_u64().expect("n_idx") as usize,
            );
            let f = match op {
                "scatter" => ferrox::scatter,
                "scatter_add" => ferrox::scatter_add,
                "scatter_prod" => ferrox::scatter_prod,
                "scatter_max" => ferrox::scatter_max,
                _ => ferrox::scatter_min,
            };
            f(&x[0], &x[1..=n], &x[n + 1], &axes)
        });
        assert_all_dtypes(&seen);
    }
}

#[test]
fn at_updates_match_numpy_ufunc_at() {
    let ops = [
        "at_set",
        "at_add",
        "at_subtract",
        "at_multiply",
        "at_maximum",
        "at_minimum",
    ];
    check_ops(&ops, |c, x| {
        let n = c.params["n_idx"].as_u64().expect("n_idx") as usize;
        let at = x[0].at(&x[1..=n])?;
        let v = &x[n + 1];
        match c.op.as_str() {
            "at_set" => at.set(v),
            "at_add" => at.add(v),
            "at_subtract" => at.subtract(v),
            "at_multiply" => at.multiply(v),
            "at_maximum" => at.maximum(v),
            _ => at.minimum(v),
        }
    });
}

#[test]
fn slice_update_matches_numpy() {
    check_ops(&["slice_update"], |c, x| {
        let p = &c.params;
        ferrox::slice_update(
            &x[0],
            &x[1],
            &isizes(&p["start"]),
            &isizes(&p["stop"]),
            Some(&isizes(&p["strides"])),
        )
    });
}

#[test]
fn sort_argsort_topk_match_numpy() {
    for op in ["sort", "argsort", "topk"] {
        let seen = check_ops(&[op], |c, x| {
            let axis = opt_int(&c.params["axis"]);
            match op {
                "sort" => ferrox::sort(&x[0], axis),
                "argsort" => ferrox::argsort(&x[0], axis),
                _ => ferrox::topk(&x[0], c.params["k"].as_u64().expect("k") as usize, axis),
            }
        });
        assert_all_dtypes(&seen);
    }
}

/// numpy's sort order on real values: NaNs last.
fn order(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// The rows along `axis` of a row-major `data` of `shape`.
fn rows(data: &[f64], shape: &[usize], axis: usize) -> Vec<Vec<f64>> {
    let (outer, n): (usize, usize) = (shape[..axis].iter().product(), shape[axis]);
    let inner: usize = shape[axis + 1..].iter().product();
    let mut out = vec![];
    for o in 0..outer {
        for i in 0..inner {
            out.push((0..n).map(|j| data[(o * n + j) * inner + i]).collect());
        }
    }
    out
}

/// `got` is a partition of the sorted reference around `kth`.
fn assert_partitioned(name: &str, got: &Array, sorted: &Tensor, kth: isize, axis: Option<isize>) {
    assert_eq!(got.shape(), &sorted.shape[..], "{name}: shape");
    let (re, _) = values(got);
    let ax = match axis {
        None => 0,
        Some(a) => a.rem_euclid(sorted.shape.len() as isize) as usize,
    };
    for (row, want) in
        rows(&re, &sorted.shape, ax)
            .iter()
            .zip(rows(&sorted.data, &sorted.shape, ax))
    {
        let k = kth.rem_euclid(row.len() as isize) as usize;
        let mut as_sorted = row.clone();
        as_sorted.sort_by(|a, b| order(*a, *b));
        let same = |a: f64, b: f64| order(a, b) == Ordering::Equal;
        assert!(
            as_sorted.iter().zip(&want).all(|(a, b)| same(*a, *b)),
            "{name}: {row:?} is not a permutation of {want:?}"
        );
        assert!(
            same(row[k], want[k]),
            "{name}: row {row:?} has {} at kth {k}, want {}",
            row[k],
            want[k]
        );
        assert!(
            row[..k]
                .iter()
                .all(|v| order(*v, row[k]) != Ordering::Greater),
            "{name}: {row:?} left of {k}"
        );
        assert!(
            row[k + 1..]
                .iter()
                .all(|v| order(*v, row[k]) != Ordering::Less),
            "{name}: {row:?} right of {k}"
        );
    }
}

#[test]
fn partitions_satisfy_the_invariant() {
    let mut seen = BTreeSet::new();
    for c in cases()
        .iter()
        .filter(|c| c.op == "partition" || c.op == "argpartition")
    {
        let (axis, kth) = (
            opt_int(&c.params["axis"]),
            c.params["kth"].as_i64().expect("kth") as isize,
        );
        for strided in [false, true] {
            let x = inputs(c, strided);
            let got = if c.op == "partition" {
                ferrox::partition(&x[0], kth, axis).unwrap()
            } else {
                let idx = ferrox::argpartition(&x[0], kth, axis).unwrap();
                assert_eq!(idx.dtype(), DType::UInt32, "{}", c.name);
                ferrox::take_along_axis(&x[0], &idx, axis).unwrap()
            };
            assert_partitioned(&c.name, &got, &c.output, kth, axis);
        }
        seen.insert(c.inputs[0].dtype);
    }
    let missing: Vec<_> = DType::ALL
        .iter()
        .filter(|d| !matches!(d, DType::BFloat16 | DType::Complex64) && !seen.contains(d))
        .collect();
    assert!(
        missing.is_empty(),
        "dtypes without partition fixtures: {missing:?}"
    );
}

#[test]
fn out_of_range_indices_fail_at_eval_with_a_message() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let idx = |v: &[i64]| Array::from_slice(v, &[v.len()]).unwrap();
    let cases: Vec<(Result<Array>, &str)> = vec![
        (
            ferrox::take(&a, &idx(&[0, 7]), Some(1)),
            "take: index 7 is out of bounds for axis 1 with size 3",
        ),
        (
            ferrox::take(&a, &idx(&[-7]), None),
            "take: index -7 is out of bounds for the flattened array with size 6",
        ),
        (
            ferrox::take_along_axis(
                &a,
                &Array::from_slice(&[2i64, -3, 0], &[1, 3]).unwrap(),
                Some(0),
            ),
            "take_along_axis: index 2 is out of bounds for axis 0 with size 2",
        ),
        (
            ferrox::put_along_axis(&a, &idx(&[6]), &Array::from(0.0), None),
            "put_along_axis: index 6 is out of bounds for the flattened array with size 6",
        ),
        (
            ferrox::gather(&a, &[idx(&[1])], &[1], &[2, 3]),
            "gather: index 1 is out of bounds for axis 1 with size 3 and slice size 3",
        ),
        (
            ferrox::scatter_add(
                &a,
                &[idx(&[0, 2])],
                &ferrox::ones(&[2, 1, 3], DType::Float32).unwrap(),
                &[0],
            ),
            "scatter_add: index 2 is out of bounds for axis 0 with size 2",
        ),
        (
            a.at(idx(&[-3])).and_then(|at| at.maximum(1.0)),
            "scatter_max: index -3 is out of bounds for axis 0 with size 2",
        ),
    ];
    for (built, message) in cases {
        let err = built
            .expect("the builder accepts data-dependent indices")
            .eval()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Index);
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn sorted_indices_feed_take_along_axis() {
    let a = Array::from_slice(&[3.0f32, f32::NAN, 1.0, 2.0, 2.0, -1.0], &[2, 3]).unwrap();
    let order = ferrox::argsort(&a, Some(-1)).unwrap();
    let sorted = ferrox::take_along_axis(&a, &order, Some(-1)).unwrap();
    let (s, _) = values(&sorted);
    let (want, _) = values(&ferrox::sort(&a, Some(-1)).unwrap());
    assert!(s.iter().zip(&want).all(|(x, y)| order_eq(*x, *y)));
    // Scattering the sorted values back through the permutation restores `a`.
    let back = ferrox::put_along_axis(&ferrox::zeros_like(&a).unwrap(), &order, &sorted, Some(-1))
        .unwrap();
    let (b, _) = values(&back);
    let (orig, _) = values(&a);
    assert!(b.iter().zip(&orig).all(|(x, y)| order_eq(*x, *y)));
}

fn order_eq(a: f64, b: f64) -> bool {
    order(a, b) == Ordering::Equal
}
