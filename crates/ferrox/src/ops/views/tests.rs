//! Unit tests of the view ops: storage sharing, values of view chains
//! against naive index arithmetic, and error cases.
#![allow(clippy::reversed_empty_ranges)] // test code: kept as written

use super::*;
use crate::dtype::DType;
use crate::error::ErrorKind;
use crate::graph::layout::row_major_strides;
use crate::ops::creation::arange;
use proptest::prelude::*;

fn iota(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    let v: Vec<i32> = (0..n as i32).collect();
    Array::from_slice(&v, shape).unwrap()
}

fn shares(a: &Array, b: &Array) -> bool {
    Arc::ptr_eq(&a.data().unwrap().storage, &b.data().unwrap().storage)
}

#[test]
fn views_share_the_input_storage() {
    let a = iota(&[2, 3, 4]);
    let views = [
        reshape(&a, &[6, 4]).unwrap(),
        flatten(&a, 0, -1).unwrap(),
        unflatten(&a, 2, &[2, 2]).unwrap(),
        expand_dims(&a, &[0, 2]).unwrap(),
        squeeze(&expand_dims(&a, &[1]).unwrap(), None).unwrap(),
        transpose(&a, None).unwrap(),
        swapaxes(&a, 0, 2).unwrap(),
        moveaxis(&a, 0, -1).unwrap(),
        broadcast_to(&a, &[5, 2, 3, 4]).unwrap(),
        slice(&a, &[1, -1, 0], &[2, -4, 4], &[1, -1, 2]).unwrap(),
        diagonal(&a, 1, 1, 2).unwrap(),
        a.index(&[SliceArg::REVERSED, 1.into(), SliceArg::NewAxis])
            .unwrap(),
        contiguous(&a).unwrap(),
    ];
    for v in &views {
        assert!(shares(v, &a), "{:?} does not share storage", v.primitive());
    }
    // A view of a view still shares the original buffer.
    let chain = slice(
        &transpose(&broadcast_to(&a, &[2, 2, 3, 4]).unwrap(), None).unwrap(),
        &[0, 0, 0, 0],
        &[4, 3, 2, 2],
        &[2, 1, -1, 1],
    )
    .unwrap();
    assert!(shares(&chain, &a));
}

#[test]
fn reshape_copies_only_when_the_layout_requires() {
    let a = iota(&[2, 3]);
    let t = a.t().unwrap();
    let r = reshape(&t, &[6]).unwrap();
    assert!(!shares(&r, &a));
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    // Splitting an axis of the transposed view is still a view.
    let s = reshape(&t, &[3, 2, 1]).unwrap();
    assert!(shares(&s, &a));
    let c = contiguous(&t).unwrap();
    assert!(!shares(&c, &a));
    assert!(c.data().unwrap().is_contiguous(c.shape()));
    assert_eq!(c.to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
}

#[test]
fn negative_steps_and_empty_slices() {
    let a = iota(&[3, 4]);
    let r = a
        .index(&[SliceArg::REVERSED, SliceArg::range(Some(-1), None, -2)])
        .unwrap();
    assert_eq!(r.shape(), &[3, 2]);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![11, 9, 7, 5, 3, 1]);
    assert!(r.data().unwrap().strides.iter().all(|&s| s < 0));

    #[allow(clippy::reversed_empty_ranges)]
    let e = a.index(&[(2..1).into()]).unwrap();
    assert_eq!(e.shape(), &[0, 4]);
    assert_eq!(e.to_vec::<i32>().unwrap(), Vec::<i32>::new());
    // Views of an empty view, including reversal and out-of-range bounds.
    let e2 = e
        .index(&[SliceArg::REVERSED, SliceArg::range(Some(10), Some(-10), -3)])
        .unwrap();
    assert_eq!(e2.shape(), &[0, 2]);
    assert_eq!(
        e2.t()
            .unwrap()
            .reshape(&[2, 0, 1])
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        Vec::<i32>::new()
    );
    let clamped = a.index(&[(-100..100).into(), (5..).into()]).unwrap();
    assert_eq!(clamped.shape(), &[3, 0]);
    assert_eq!(
        contiguous(&clamped).unwrap().to_vec::<i32>().unwrap(),
        Vec::<i32>::new()
    );
}

#[test]
fn index_with_integers_new_axes_and_ellipsis() {
    let a = iota(&[2, 3, 4]);
    let b = a
        .index(&[(-1).into(), SliceArg::Ellipsis, 2.into(), SliceArg::NewAxis])
        .unwrap();
    assert_eq!(b.shape(), &[3, 1]);
    assert_eq!(b.to_vec::<i32>().unwrap(), vec![14, 18, 22]);
    let c = a.index(&[SliceArg::Ellipsis]).unwrap();
    assert_eq!(c.id(), a.id(), "a whole-array index is the array itself");
    let d = a.index(&[1.into(), 2.into(), 3.into()]).unwrap();
    assert_eq!(d.shape(), &[] as &[usize]);
    assert_eq!(d.item::<i32>().unwrap(), 23);
    let z = Array::scalar(5i32)
        .index(&[SliceArg::NewAxis, SliceArg::Ellipsis])
        .unwrap();
    assert_eq!(z.shape(), &[1]);
    assert_eq!(z.to_vec::<i32>().unwrap(), vec![5]);
}

#[test]
fn diagonal_offsets_and_reversed_inputs() {
    let a = iota(&[3, 4]);
    assert_eq!(
        diagonal(&a, 1, 0, 1).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 6, 11]
    );
    assert_eq!(
        diagonal(&a, -2, 0, 1).unwrap().to_vec::<i32>().unwrap(),
        vec![8]
    );
    assert_eq!(diagonal(&a, 5, 0, 1).unwrap().shape(), &[0]);
    assert_eq!(
        diagonal(&a, -5, 1, 0).unwrap().to_vec::<i32>().unwrap(),
        Vec::<i32>::new()
    );
    // Diagonal of a reversed view: a[::-1, ::-1].
    let r = a.index(&[SliceArg::REVERSED, SliceArg::REVERSED]).unwrap();
    assert_eq!(
        diagonal(&r, 0, 0, 1).unwrap().to_vec::<i32>().unwrap(),
        vec![11, 6, 1]
    );
    assert_eq!(
        diagonal(&r, -1, 0, 1).unwrap().to_vec::<i32>().unwrap(),
        vec![7, 2]
    );
}

#[test]
fn contiguous_copies_every_element_size() {
    for dtype in DType::ALL {
        let a = arange(0.0, 12.0, 1.0, DType::Int32)
            .unwrap()
            .astype(dtype)
            .unwrap()
            .reshape(&[3, 4])
            .unwrap();
        let t = a.t().unwrap().index(&[SliceArg::REVERSED]).unwrap();
        let c = contiguous(&t).unwrap();
        assert!(c.data().unwrap().is_contiguous(&[4, 3]), "{dtype}");
        let want = contiguous(&t.astype(DType::Float64).unwrap())
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let got = c.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(got, want, "{dtype}");
    }
}

#[test]
fn errors_name_the_op_and_values() {
    let a = iota(&[2, 3]);
    let check = |r: Result<Array>, kind: ErrorKind, parts: &[&str]| {
        let e = r.expect_err("an error");
        assert_eq!(e.kind(), kind, "{e}");
        let s = e.to_string();
        for p in parts {
            assert!(s.contains(p), "{s:?} lacks {p:?}");
        }
    };
    check(
        reshape(&a, &[4, 2]),
        ErrorKind::Shape,
        &["reshape:", "[2, 3]", "[4, 2]"],
    );
    check(
        reshape(&a, &[-1, -1]),
        ErrorKind::Shape,
        &["reshape:", "one unknown"],
    );
    check(reshape(&a, &[-2, 3]), ErrorKind::Value, &["reshape:", "-2"]);
    check(
        reshape(&zeros(&[0, 2]), &[0, -1]),
        ErrorKind::Shape,
        &["reshape:"],
    );
    check(
        reshape(&a, &[isize::MAX, 4]),
        ErrorKind::Value,
        &["reshape:"],
    );
    check(flatten(&a, 1, 0), ErrorKind::Axis, &["flatten:", "1", "0"]);
    check(flatten(&a, 0, 2), ErrorKind::Axis, &["flatten:", "axis 2"]);
    check(
        unflatten(&a, 1, &[2, -1]),
        ErrorKind::Shape,
        &["unflatten:", "[3]", "[2, -1]"],
    );
    check(unflatten(&a, 1, &[]), ErrorKind::Shape, &["unflatten:"]);
    check(
        squeeze(&a, Some(&[0])),
        ErrorKind::Shape,
        &["squeeze:", "axis 0", "size 2"],
    );
    check(
        squeeze(&a, Some(&[2])),
        ErrorKind::Axis,
        &["squeeze:", "axis 2"],
    );
    check(
        expand_dims(&a, &[0, 0]),
        ErrorKind::Axis,
        &["expand_dims:", "repeated"],
    );
    check(
        expand_dims(&a, &[3]),
        ErrorKind::Axis,
        &["expand_dims:", "axis 3"],
    );
    check(
        transpose(&a, Some(&[0])),
        ErrorKind::Axis,
        &["transpose:", "[0]"],
    );
    check(
        transpose(&a, Some(&[0, 2])),
        ErrorKind::Axis,
        &["transpose:", "[0, 2]"],
    );
    check(swapaxes(&a, 0, 2), ErrorKind::Axis, &["swapaxes:"]);
    check(moveaxis(&a, -3, 0), ErrorKind::Axis, &["moveaxis:", "-3"]);
    check(
        broadcast_to(&a, &[3, 3]),
        ErrorKind::Shape,
        &["broadcast_to:", "[2, 3]", "[3, 3]"],
    );
    check(broadcast_to(&a, &[3]), ErrorKind::Shape, &["broadcast_to:"]);
    check(
        broadcast_to(&a, &[usize::MAX, 2, 3]),
        ErrorKind::Value,
        &["broadcast_to:"],
    );
    let e = broadcast_arrays(&[a.clone(), iota(&[2])]).unwrap_err();
    assert!(
        e.to_string().starts_with("broadcast_arrays:") && e.kind() == ErrorKind::Shape,
        "{e}"
    );
    check(
        slice(&a, &[0], &[1], &[1]),
        ErrorKind::Value,
        &["slice:", "[0]"],
    );
    check(
        slice(&a, &[0, 0], &[1, 1], &[1, 0]),
        ErrorKind::Value,
        &["slice:", "zero", "axis 1"],
    );
    check(
        diagonal(&iota(&[3]), 0, 0, 1),
        ErrorKind::Shape,
        &["diagonal:", "[3]"],
    );
    check(
        diagonal(&a, 0, 1, -1),
        ErrorKind::Axis,
        &["diagonal:", "same axis"],
    );
    check(
        a.index(&[2.into()]),
        ErrorKind::Index,
        &["index:", "index 2", "axis 0", "size 2"],
    );
    check(
        a.index(&[0.into(), (-4).into()]),
        ErrorKind::Index,
        &["index:", "-4", "axis 1", "size 3"],
    );
    check(
        a.index(&[SliceArg::range(None, None, 0)]),
        ErrorKind::Value,
        &["index:", "zero"],
    );
    check(
        a.index(&[SliceArg::Ellipsis, SliceArg::Ellipsis]),
        ErrorKind::Index,
        &["index:", "ellipsis"],
    );
    check(
        a.index(&[0.into(), 0.into(), 0.into()]),
        ErrorKind::Index,
        &["index:", "2-dimensional", "3"],
    );
}

fn zeros(shape: &[usize]) -> Array {
    crate::ops::creation::zeros(shape, DType::Int32).unwrap()
}

// ------------------------------------------- random chains vs naive model

/// A reference array: row-major values and shape.
#[derive(Debug, Clone)]
struct Model {
    shape: Vec<usize>,
    data: Vec<i32>,
}

impl Model {
    /// Materialises a strided view over the model's row-major data by
    /// explicit index arithmetic.
    fn view(&self, shape: Vec<usize>, strides: &[isize], offset: isize) -> Model {
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|mut flat| {
                let mut o = offset;
                for d in (0..shape.len()).rev() {
                    o += (flat % shape[d]) as isize * strides[d];
                    flat /= shape[d];
                }
                self.data[o as usize]
            })
            .collect();
        Model { shape, data }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Transpose(u64),
    Slice(Vec<(Option<isize>, Option<isize>, isize)>),
    Reshape(u8),
    Broadcast(usize),
    Index(isize),
    Contiguous,
}

fn step() -> impl Strategy<Value = Step> {
    let bound = proptest::option::of(-5isize..6);
    let step = prop_oneof![-3isize..0, 1isize..4];
    prop_oneof![
        any::<u64>().prop_map(Step::Transpose),
        proptest::collection::vec((bound.clone(), bound, step), 5).prop_map(Step::Slice),
        any::<u8>().prop_map(Step::Reshape),
        (1usize..3).prop_map(Step::Broadcast),
        (-3isize..3).prop_map(Step::Index),
        Just(Step::Contiguous),
    ]
}

/// Applies one step to the ferrox array and the model; skips steps that do
/// not apply (returns false).
fn apply(s: &Step, a: &mut Array, m: &mut Model) -> bool {
    let nd = m.shape.len();
    let rm = row_major_strides(&m.shape);
    match s {
        Step::Transpose(seed) => {
            let mut perm: Vec<usize> = (0..nd).collect();
            let mut seed = *seed;
            for i in (1..nd).rev() {
                perm.swap(i, (seed % (i as u64 + 1)) as usize);
                seed /= i as u64 + 1;
            }
            *a = transpose(a, Some(&perm)).unwrap();
            let shape = perm.iter().map(|&p| m.shape[p]).collect();
            let strides: Vec<isize> = perm.iter().map(|&p| rm[p]).collect();
            *m = m.view(shape, &strides, 0);
        }
        Step::Slice(axes) => {
            let args: Vec<SliceArg> = axes[..nd]
                .iter()
                .map(|&(b, e, k)| SliceArg::range(b, e, k))
                .collect();
            *a = a.index(&args).unwrap();
            let (mut shape, mut strides, mut offset) = (vec![], vec![], 0isize);
            for (d, &(b, e, k)) in axes[..nd].iter().enumerate() {
                // Enumerate the selected indices Python's way.
                let n = m.shape[d] as isize;
                let norm = |x: isize| if x < 0 { x + n } else { x };
                let idx: Vec<isize> = if k > 0 {
                    let (lo, hi) = (
                        b.map(norm).unwrap_or(0).max(0),
                        e.map(norm).unwrap_or(n).min(n),
                    );
                    (lo..hi).step_by(k as usize).collect()
                } else {
                    let (hi, lo) = (
                        b.map(norm).unwrap_or(n - 1).min(n - 1),
                        e.map(norm).unwrap_or(-1).max(-1),
                    );
                    ((lo + 1)..=hi).rev().step_by((-k) as usize).collect()
                };
                if let Some(&first) = idx.first() {
                    offset += first * rm[d];
                }
                shape.push(idx.len());
                strides.push(k * rm[d]);
            }
            // An empty result reads nothing, so its offset does not matter.
            *m = m.view(shape, &strides, offset);
        }
        Step::Reshape(kind) => {
            let n = m.data.len();
            let shape: Vec<usize> = match kind % 4 {
                0 => vec![n],
                1 if nd > 0 && m.shape[0] % 2 == 0 => {
                    let mut s = m.shape.clone();
                    s[0] /= 2;
                    s.insert(0, 2);
                    s
                }
                2 if nd >= 2 => {
                    let mut s = m.shape[1..].to_vec();
                    s[0] *= m.shape[0];
                    s
                }
                _ => {
                    let mut s = m.shape.clone();
                    s.push(1);
                    s
                }
            };
            if shape.len() > 5 {
                return false;
            }
            let req: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
            *a = reshape(a, &req).unwrap();
            m.shape = shape;
        }
        Step::Broadcast(k) => {
            if nd >= 5 {
                return false;
            }
            let mut shape = vec![*k];
            shape.extend(m.shape.iter().map(|&d| if d == 1 { 2 } else { d }));
            *a = broadcast_to(a, &shape).unwrap();
            let mut strides = vec![0];
            strides.extend(
                m.shape
                    .iter()
                    .zip(&rm)
                    .map(|(&d, &s)| if d == 1 { 0 } else { s }),
            );
            *m = m.view(shape, &strides, 0);
        }
        Step::Index(i) => {
            let Some(&n) = m.shape.first() else {
                return false;
            };
            if *i < -(n as isize) || *i >= n as isize {
                assert!(a.index(&[(*i).into()]).is_err());
                return false;
            }
            *a = a.index(&[(*i).into()]).unwrap();
            let i = if *i < 0 { *i + n as isize } else { *i };
            *m = m.view(m.shape[1..].to_vec(), &rm[1..], i * rm[0]);
        }
        Step::Contiguous => *a = contiguous(a).unwrap(),
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn view_chains_match_naive_indexing(
        dims in proptest::collection::vec(1usize..4, 1..4),
        steps in proptest::collection::vec(step(), 1..6),
        eval_each in any::<bool>(),
    ) {
        let n: usize = dims.iter().product();
        let mut m = Model { shape: dims.clone(), data: (0..n as i32).collect() };
        let mut a = iota(&dims);
        let base = a.clone();
        let mut all_views = true;
        for s in &steps {
            if apply(s, &mut a, &mut m) {
                all_views &= !matches!(s, Step::Contiguous | Step::Reshape(_));
                if eval_each {
                    a.eval().unwrap();
                }
            }
        }
        prop_assert_eq!(a.shape(), m.shape.as_slice());
        prop_assert_eq!(a.to_vec::<i32>().unwrap(), m.data.clone());
        prop_assert_eq!(contiguous(&a).unwrap().to_vec::<i32>().unwrap(), m.data);
        if all_views && a.size() > 0 {
            prop_assert!(shares(&a, &base));
        }
    }
}
