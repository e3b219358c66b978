//! Unit tests of the join ops: values against naive loops, dtypes of every
//! element size, non-contiguous inputs, storage sharing of split and
//! meshgrid, and error cases.
#![allow(clippy::cloned_ref_to_slice_refs)] // test code: kept as written

use super::*;
use crate::error::ErrorKind;
use crate::ops::creation::arange;
use crate::ops::views::{SliceArg, transpose};
use proptest::prelude::*;
use std::sync::Arc;

fn iota(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    let v: Vec<i32> = (0..n as i32).collect();
    Array::from_slice(&v, shape).unwrap()
}

fn vals(a: &Array) -> Vec<i32> {
    a.to_vec::<i32>().unwrap()
}

#[test]
fn concatenate_along_each_axis_with_views() {
    let a = iota(&[2, 3]);
    let b = transpose(&iota(&[3, 2]), None).unwrap(); // non-contiguous [2, 3]
    let c0 = concatenate(&[a.clone(), b.clone()], 0).unwrap();
    assert_eq!(vals(&c0), vec![0, 1, 2, 3, 4, 5, 0, 2, 4, 1, 3, 5]);
    let c1 = concatenate(&[a.clone(), b.clone(), a.clone()], -1).unwrap();
    assert_eq!(c1.shape(), &[2, 9]);
    assert_eq!(
        vals(&c1),
        vec![0, 1, 2, 0, 2, 4, 0, 1, 2, 3, 4, 5, 1, 3, 5, 3, 4, 5]
    );
    // Empty inputs contribute nothing.
    let e = iota(&[2, 0]);
    assert_eq!(
        vals(&concatenate(&[e.clone(), a.clone(), e], 1).unwrap()),
        vals(&a)
    );
}

#[test]
fn concatenate_promotes_dtypes() {
    let a = Array::from_slice(&[1u8, 2], &[2]).unwrap();
    let b = Array::from_slice(&[-1i8], &[1]).unwrap();
    let c = concatenate(&[a, b], 0).unwrap();
    assert_eq!(c.dtype(), DType::Int16);
    assert_eq!(c.to_vec::<i16>().unwrap(), vec![1, 2, -1]);
}

#[test]
fn large_copies_match_small_ones() {
    // Past the parallel threshold: concatenate along 0 (blocks) and 1
    // (slabs), pad, tril on a transposed input.
    let a = iota(&[256, 300]);
    let t = transpose(&a, None).unwrap();
    let c = concatenate(&[t.clone(), t.clone()], 1).unwrap();
    let cv = vals(&c);
    let tv = vals(&t);
    for r in 0..300 {
        assert_eq!(&cv[r * 512..r * 512 + 256], &tv[r * 256..(r + 1) * 256]);
        assert_eq!(
            &cv[r * 512 + 256..(r + 1) * 512],
            &tv[r * 256..(r + 1) * 256]
        );
    }
    let c0 = concatenate(&[t.clone(), t.clone()], 0).unwrap();
    assert_eq!(&vals(&c0)[300 * 256..], &tv[..]);
    let p = pad(&t, &[(1, 2), (3, 0)], PadMode::Constant(-1.0)).unwrap();
    let pv = vals(&p);
    assert_eq!(p.shape(), &[303, 259]);
    assert_eq!(pv[0], -1);
    assert_eq!(pv[259 + 3], tv[0]);
    assert_eq!(pv[300 * 259 + 258], tv[299 * 256 + 255]);
    assert_eq!(pv[302 * 259 + 5], -1);
    let l = vals(&tril(&t, -3).unwrap());
    for r in 0..300 {
        for col in 0..256 {
            let want = if col as isize - r as isize <= -3 {
                tv[r * 256 + col]
            } else {
                0
            };
            assert_eq!(l[r * 256 + col], want);
        }
    }
}

#[test]
fn every_element_size_round_trips() {
    for dtype in DType::ALL {
        let a = arange(0.0, 6.0, 1.0, DType::Int32)
            .unwrap()
            .astype(dtype)
            .unwrap()
            .reshape(&[2, 3])
            .unwrap();
        let t = transpose(&a, None).unwrap();
        let f64s = |x: &Array| x.astype(DType::Float64).unwrap().to_vec::<f64>().unwrap();
        let c = concatenate(&[t.clone(), t.clone()], 1).unwrap();
        assert_eq!(c.dtype(), dtype);
        let tv = f64s(&t);
        let want: Vec<f64> = tv
            .chunks(2)
            .flat_map(|r| [r[0], r[1], r[0], r[1]])
            .collect();
        assert_eq!(f64s(&c), want, "{dtype}");
        let p = pad(&t, &[(0, 1)], PadMode::Constant(7.0)).unwrap();
        let seven = if dtype == DType::Bool { 1.0 } else { 7.0 };
        let v = f64s(&p);
        assert_eq!(v.len(), 12);
        assert_eq!(v[11], seven, "{dtype}");
        assert_eq!(v[4], tv[3], "{dtype}");
        let tri = triu(&t, 0).unwrap();
        assert_eq!(
            f64s(&tri),
            vec![tv[0], tv[1], 0.0, tv[3], 0.0, 0.0],
            "{dtype}"
        );
        let d = diag(&t.index(&[SliceArg::FULL, 1.into()]).unwrap(), -1).unwrap();
        assert_eq!(d.shape(), &[4, 4]);
        let dv = f64s(&d);
        assert_eq!((dv[4], dv[9], dv[14]), (tv[1], tv[3], tv[5]), "{dtype}");
        assert_eq!(
            dv.iter().filter(|&&x| x != 0.0).count(),
            tv.iter().skip(1).step_by(2).filter(|&&x| x != 0.0).count()
        );
    }
}

#[test]
fn split_returns_views() {
    let a = iota(&[4, 3]);
    let parts = split(&a, 2, 0).unwrap();
    assert_eq!(parts.len(), 2);
    for p in &parts {
        assert!(Arc::ptr_eq(
            &p.data().unwrap().storage,
            &a.data().unwrap().storage
        ));
    }
    assert_eq!(vals(&parts[1]), vec![6, 7, 8, 9, 10, 11]);
    let cols = split(&a, vec![2, 1, 10], 1).unwrap();
    let sizes: Vec<_> = cols.iter().map(|c| c.shape().to_vec()).collect();
    // a[:, :2], a[:, 2:1], a[:, 1:10], a[:, 10:]
    assert_eq!(sizes, vec![vec![4, 2], vec![4, 0], vec![4, 2], vec![4, 0]]);
    assert_eq!(vals(&cols[2]), vec![1, 2, 4, 5, 7, 8, 10, 11]);
}

#[test]
fn meshgrid_views_and_indexing() {
    let x = iota(&[3]);
    let y = iota(&[2]);
    let z = iota(&[4]);
    let g = meshgrid(&[x.clone(), y.clone(), z.clone()], false, "ij").unwrap();
    assert!(g.iter().all(|a| a.shape() == [3, 2, 4]));
    assert!(Arc::ptr_eq(
        &g[2].data().unwrap().storage,
        &z.data().unwrap().storage
    ));
    let g = meshgrid(&[x.clone(), y.clone(), z], true, "xy").unwrap();
    let shapes: Vec<_> = g.iter().map(|a| a.shape().to_vec()).collect();
    assert_eq!(shapes, vec![vec![1, 3, 1], vec![2, 1, 1], vec![1, 1, 4]]);
    assert_eq!(meshgrid(&[x], false, "xy").unwrap()[0].shape(), &[3]);
    assert!(meshgrid(&[], false, "ij").unwrap().is_empty());
}

#[test]
fn roll_pairs_and_repeated_axes() {
    let a = iota(&[2, 3]);
    assert_eq!(
        vals(&roll(&a, &[1], Some(&[0, 1])).unwrap()),
        vec![5, 3, 4, 2, 0, 1]
    );
    assert_eq!(
        vals(&roll(&a, &[1, 1], Some(&[1])).unwrap()),
        vals(&roll(&a, &[2], Some(&[1])).unwrap())
    );
    assert_eq!(
        vals(&roll(&a, &[-7], None).unwrap()),
        vec![1, 2, 3, 4, 5, 0]
    );
    assert_eq!(
        vals(&roll(&a, &[isize::MIN, isize::MIN], Some(&[1, -1])).unwrap()),
        {
            let s = (2 * (isize::MIN as i128)).rem_euclid(3) as usize;
            [0, 1, 2, 3, 4, 5]
                .chunks(3)
                .flat_map(|r| (0..3).map(move |c| r[(c + 3 - s) % 3]))
                .collect::<Vec<_>>()
        }
    );
    assert_eq!(
        roll(&iota(&[0, 2]), &[3], Some(&[0])).unwrap().shape(),
        &[0, 2]
    );
}

#[test]
fn tile_repeat_and_edge_pad() {
    let a = iota(&[2, 2]);
    assert_eq!(tile(&a, &[2]).unwrap().shape(), &[2, 4]);
    assert_eq!(tile(&a, &[2, 1, 1]).unwrap().shape(), &[2, 2, 2]);
    assert_eq!(
        vals(&tile(&a, &[1, 2]).unwrap()),
        vec![0, 1, 0, 1, 2, 3, 2, 3]
    );
    assert_eq!(tile(&a, &[0, 3]).unwrap().shape(), &[0, 6]);
    assert_eq!(
        vals(&repeat(&a, 2, Some(0)).unwrap()),
        vec![0, 1, 0, 1, 2, 3, 2, 3]
    );
    assert_eq!(repeat(&a, 0, Some(-1)).unwrap().shape(), &[2, 0]);
    let e = pad(&a, &[(1, 0), (0, 2)], PadMode::Edge).unwrap();
    assert_eq!(vals(&e), vec![0, 1, 1, 1, 0, 1, 1, 1, 2, 3, 3, 3]);
    let s = Array::scalar(3i32);
    assert_eq!(
        pad(&s, &[(1, 1)], PadMode::Constant(0.0)).unwrap().shape(),
        &[] as &[usize]
    );
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
    check(concatenate(&[], 0), ErrorKind::Value, &["concatenate:"]);
    check(
        concatenate(&[Array::scalar(1i32)], 0),
        ErrorKind::Shape,
        &["concatenate:", "zero-dimensional"],
    );
    check(
        concatenate(&[a.clone(), iota(&[3, 3])], 1),
        ErrorKind::Shape,
        &["concatenate:", "[3, 3]", "[2, 3]", "axis 1"],
    );
    check(
        concatenate(&[a.clone(), iota(&[6])], 0),
        ErrorKind::Shape,
        &["concatenate:", "[6]"],
    );
    check(
        concatenate(std::slice::from_ref(&a), 2),
        ErrorKind::Axis,
        &["concatenate:", "axis 2"],
    );
    check(stack(&[], 0), ErrorKind::Value, &["stack:"]);
    check(
        stack(&[a.clone(), iota(&[3, 2])], 0),
        ErrorKind::Shape,
        &["stack:", "[2, 3]", "[3, 2]"],
    );
    check(
        stack(std::slice::from_ref(&a), 3),
        ErrorKind::Axis,
        &["stack:", "axis 3"],
    );
    check(tile(&a, &[usize::MAX, 2]), ErrorKind::Value, &["tile:"]);
    check(
        repeat(&a, usize::MAX, Some(0)),
        ErrorKind::Value,
        &["repeat:"],
    );
    check(
        repeat(&a, 2, Some(2)),
        ErrorKind::Axis,
        &["repeat:", "axis 2"],
    );
    check(
        pad(&a, &[(1, 1), (1, 1), (1, 1)], PadMode::Edge),
        ErrorKind::Value,
        &["pad:", "[2, 3]"],
    );
    check(
        pad(&a, &[(usize::MAX, 1)], PadMode::Constant(0.0)),
        ErrorKind::Value,
        &["pad:"],
    );
    check(
        pad(&iota(&[0, 2]), &[(1, 0)], PadMode::Edge),
        ErrorKind::Value,
        &["pad:", "axis 0", "size 0"],
    );
    check(
        roll(&a, &[1, 2, 3], Some(&[0, 1])),
        ErrorKind::Value,
        &["roll:", "[1, 2, 3]", "[0, 1]"],
    );
    check(
        roll(&a, &[1], Some(&[2])),
        ErrorKind::Axis,
        &["roll:", "axis 2"],
    );
    check(tril(&iota(&[3]), 0), ErrorKind::Shape, &["tril:", "[3]"]);
    check(triu(&Array::scalar(1i32), 0), ErrorKind::Shape, &["triu:"]);
    check(
        diag(&iota(&[2, 2, 2]), 0),
        ErrorKind::Shape,
        &["diag:", "[2, 2, 2]"],
    );
    check(diag(&iota(&[2]), isize::MIN), ErrorKind::Value, &["diag:"]);
    let s = split(&a, 4, 1).unwrap_err();
    assert!(
        s.to_string().contains("split:") && s.to_string().contains("size 3"),
        "{s}"
    );
    assert!(
        split(&a, 0, 0)
            .unwrap_err()
            .to_string()
            .starts_with("split:")
    );
    assert!(
        split(&a, 1, 2)
            .unwrap_err()
            .to_string()
            .starts_with("split:")
    );
    let m = meshgrid(&[a], false, "ji").unwrap_err();
    assert!(
        m.to_string().contains("meshgrid:") && m.to_string().contains("\"ji\""),
        "{m}"
    );
}

// --------------------------------------------------- naive-loop proptests

/// Reads element `idx` of a row-major `shape` from `v`.
fn at(v: &[i32], shape: &[usize], idx: &[usize]) -> i32 {
    let mut o = 0;
    for (&i, &d) in idx.iter().zip(shape) {
        o = o * d + i;
    }
    v[o]
}

/// Every multi-index of `shape` in row-major order.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut f| {
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = f % shape[d];
                f /= shape[d];
            }
            idx
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn pad_and_roll_match_naive_loops(
        dims in proptest::collection::vec(0usize..4, 1..4),
        widths in proptest::collection::vec((0usize..3, 0usize..3), 3),
        shifts in proptest::collection::vec(-7isize..7, 3),
        edge in any::<bool>(),
        reversed in any::<bool>(),
    ) {
        let nd = dims.len();
        let mut a = iota(&dims);
        let base = vals(&a);
        if reversed {
            a = a.index(&[SliceArg::REVERSED]).unwrap();
        }
        let src = vals(&a);
        let w = &widths[..nd];
        let can_edge = !edge || dims.iter().zip(w).all(|(&d, &(b, e))| d > 0 || (b, e) == (0, 0));
        let p = pad(&a, w, if edge { PadMode::Edge } else { PadMode::Constant(-1.0) });
        prop_assert_eq!(p.is_ok(), can_edge);
        if let Ok(p) = p {
            let out: Vec<usize> = dims.iter().zip(w).map(|(&d, &(b, e))| d + b + e).collect();
            prop_assert_eq!(p.shape(), out.as_slice());
            let want: Vec<i32> = indices(&out).iter().map(|o| {
                let mut idx = vec![0; nd];
                for d in 0..nd {
                    let i = o[d] as isize - w[d].0 as isize;
                    if edge {
                        idx[d] = i.clamp(0, dims[d] as isize - 1) as usize;
                    } else if i < 0 || i >= dims[d] as isize {
                        return -1;
                    } else {
                        idx[d] = i as usize;
                    }
                }
                at(&src, &dims, &idx)
            }).collect();
            prop_assert_eq!(vals(&p), want);
        }
        let axes: Vec<isize> = (0..nd as isize).collect();
        let r = roll(&a, &shifts[..nd], Some(&axes)).unwrap();
        let want: Vec<i32> = indices(&dims).iter().map(|o| {
            let idx: Vec<usize> = (0..nd).map(|d| {
                let n = dims[d] as isize;
                (o[d] as isize - shifts[d]).rem_euclid(n) as usize
            }).collect();
            at(&src, &dims, &idx)
        }).collect();
        prop_assert_eq!(vals(&r), want);
        prop_assert_eq!(base.len(), src.len());
    }

    #[test]
    fn tile_repeat_triangles_match_naive_loops(
        dims in proptest::collection::vec(0usize..4, 2..4),
        reps in proptest::collection::vec(0usize..3, 0..4),
        rep in 0usize..3,
        k in -4isize..4,
    ) {
        let nd = dims.len();
        let a = transpose(&iota(&dims), None).unwrap();
        let tdims: Vec<usize> = dims.iter().rev().copied().collect();
        let src = vals(&a);
        // tile
        let m = nd.max(reps.len());
        let shape: Vec<usize> = std::iter::repeat_n(1, m - nd).chain(tdims.iter().copied()).collect();
        let rp: Vec<usize> = std::iter::repeat_n(1, m - reps.len()).chain(reps.iter().copied()).collect();
        let out: Vec<usize> = shape.iter().zip(&rp).map(|(&d, &r)| d * r).collect();
        let t = tile(&a, &reps).unwrap();
        prop_assert_eq!(t.shape(), out.as_slice());
        let want: Vec<i32> = indices(&out).iter().map(|o| {
            let idx: Vec<usize> = o.iter().zip(&shape).skip(m - nd).map(|(&i, &d)| i % d).collect();
            at(&src, &tdims, &idx)
        }).collect();
        prop_assert_eq!(vals(&t), want);
        // repeat along the last axis
        let r = repeat(&a, rep, Some(-1)).unwrap();
        let mut rout = tdims.clone();
        rout[nd - 1] *= rep;
        let want: Vec<i32> = indices(&rout).iter().map(|o| {
            let mut idx = o.clone();
            idx[nd - 1] /= rep.max(1);
            at(&src, &tdims, &idx)
        }).collect();
        prop_assert_eq!(vals(&r), want);
        // tril / triu
        for upper in [false, true] {
            let got = vals(&if upper { triu(&a, k) } else { tril(&a, k) }.unwrap());
            let want: Vec<i32> = indices(&tdims).iter().map(|o| {
                let d = o[nd - 1] as isize - o[nd - 2] as isize;
                let keep = if upper { d >= k } else { d <= k };
                if keep { at(&src, &tdims, o) } else { 0 }
            }).collect();
            prop_assert_eq!(got, want);
        }
    }
}

#[test]
fn mirror_padding_folds_like_numpy() -> crate::error::Result<()> {
    let a = Array::from_slice(&[1i32, 2, 3], &[3])?;
    let reflect = pad(&a, &[(4, 5)], PadMode::Reflect)?;
    // numpy.pad([1, 2, 3], (4, 5), "reflect")
    assert_eq!(vals(&reflect), vec![1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2]);
    let symmetric = pad(&a, &[(4, 5)], PadMode::Symmetric)?;
    // numpy.pad([1, 2, 3], (4, 5), "symmetric")
    assert_eq!(vals(&symmetric), vec![3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2]);
    let one = Array::from_slice(&[7i32], &[1])?;
    assert_eq!(vals(&pad(&one, &[(2, 1)], PadMode::Reflect)?), vec![7; 4]);
    let m = iota(&[2, 3]);
    let both = pad(&m, &[(1, 1), (2, 0)], PadMode::Reflect)?;
    assert_eq!(both.shape(), &[4, 5]);
    assert_eq!(vals(&both)[..5], [5, 4, 3, 4, 5]);
    let empty = crate::ops::creation::zeros(&[0], crate::dtype::DType::Int32)?;
    assert!(pad(&empty, &[(1, 1)], PadMode::Symmetric).is_err());
    Ok(())
}
