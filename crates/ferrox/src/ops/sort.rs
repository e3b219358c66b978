//! Sorting along an axis: [`sort`], [`argsort`], [`partition`],
//! [`argpartition`], [`topk`].
//!
//! The order is numpy's: NaNs sort last (all NaNs are equal), `-0.0` equals
//! `0.0`, `false < true`, and complex64 sorts lexicographically — by real
//! part, then imaginary part, each with NaNs last — as numpy does. Every
//! dtype is supported. Index results are uint32, as in MLX.
//!
//! The kernels are in [`crate::backend::cpu::sort`].

use super::shape_rules::normalize_axis;
use crate::backend::cpu::sort as kernels;
// The selector is the kernels' vocabulary; its public path stays here.
pub use crate::backend::cpu::sort::SortKind;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// Sorts, partitions or selects along an axis.
///
/// ```
/// let a = ferrox::Array::from_slice(&[2.0f32, 1.0], &[2])?;
/// assert_eq!(ferrox::sort(&a, None)?.primitive().unwrap().name(), "sort");
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sort {
    /// What is computed per row.
    pub kind: SortKind,
    /// The axis (normalised); `None` works on the flattened input.
    pub axis: Option<usize>,
}

impl crate::graph::export::Exportable for Sort {
    const KIND: &'static str = "sort";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [x] = crate::graph::export::args(inputs, self.kind.name())?;
        let axis = self.axis.map(|a| isize::try_from(a).unwrap_or(isize::MAX));
        let k = |v: usize| isize::try_from(v).unwrap_or(isize::MAX);
        match self.kind {
            SortKind::Sort => sort(x, axis),
            SortKind::ArgSort => argsort(x, axis),
            SortKind::Partition { kth } => partition(x, k(kth), axis),
            SortKind::ArgPartition { kth } => argpartition(x, k(kth), axis),
            SortKind::TopK { k } => topk(x, k, axis),
        }
    }
}

impl Primitive for Sort {
    fn name(&self) -> &'static str {
        self.kind.name()
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        kernels::eval(self.kind, self.axis, &inputs[0], out)
    }
    /// Values (sort, partition, topk): the cotangent goes back through the
    /// permutation (`argsort` / `argpartition`, scatter-added). Indices:
    /// zero.
    fn vjp(&self, p: &[Array], g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        let x = &p[0];
        match self.permutation(x)? {
            Some(idx) => Ok(vec![crate::ops::indexing::scatter_along_axis(
                g,
                &idx,
                self.axis,
                x.shape(),
            )?]),
            None => grad_helpers::zero_cotangents(p, argnums),
        }
    }
    fn jvp(&self, p: &[Array], tangents: &[Option<Array>], output: &Array) -> Result<Array> {
        let (Some(t), Some(idx)) = (&tangents[0], self.permutation(&p[0])?) else {
            return crate::ops::creation::zeros_like(output);
        };
        crate::ops::indexing::take_along_axis(t, &idx, self.axis.map(|a| a as isize))
    }
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let Some(ax) = axes[0] else {
            return Ok((self.apply(&inputs[0], self.axis)?, None));
        };
        let x = grad_helpers::batch_front(&inputs[0], Some(ax))?;
        let y = match self.axis {
            Some(a) => self.apply(&x, Some(a + 1))?,
            None => {
                let b = x.shape()[0];
                let flat = grad_helpers::reshape_to(&x, &[b, x.size() / b.max(1)])?;
                self.apply(&flat, Some(1))?
            }
        };
        Ok((y, Some(0)))
    }
    crate::primitive_common!();
}

impl Sort {
    /// This op on `a` along `axis`.
    fn apply(&self, a: &Array, axis: Option<usize>) -> Result<Array> {
        let ax = axis.map(|a| a as isize);
        match self.kind {
            SortKind::Sort => sort(a, ax),
            SortKind::ArgSort => argsort(a, ax),
            SortKind::Partition { kth } => partition(a, kth as isize, ax),
            SortKind::ArgPartition { kth } => argpartition(a, kth as isize, ax),
            SortKind::TopK { k } => topk(a, k, ax),
        }
    }

    /// For the value-returning kinds, the indices with `out =
    /// take_along_axis(x, indices, axis)`; `None` for the index kinds.
    fn permutation(&self, x: &Array) -> Result<Option<Array>> {
        let ax = self.axis.map(|a| a as isize);
        Ok(Some(match self.kind {
            SortKind::Sort => argsort(x, ax)?,
            SortKind::Partition { kth } => argpartition(x, kth as isize, ax)?,
            SortKind::TopK { k } => {
                // The k largest in ascending order: the end of the argsort.
                let order = argsort(x, ax)?;
                let d = self.axis.unwrap_or(0);
                let n = order.shape()[d] as isize;
                let mut start = vec![0isize; order.ndim()];
                let stop: Vec<isize> = order.shape().iter().map(|&s| s as isize).collect();
                start[d] = n - k as isize;
                crate::ops::views::slice(&order, &start, &stop, &vec![1; order.ndim()])?
            }
            SortKind::ArgSort | SortKind::ArgPartition { .. } => return Ok(None),
        }))
    }
}

/// The normalised axis (`None`: flattened) and its length.
fn sort_axis(op: &str, a: &Array, axis: Option<isize>) -> Result<(Option<usize>, usize)> {
    match axis {
        None => Ok((None, a.size())),
        Some(ax) => {
            let ax = normalize_axis(op, ax, a.ndim())?;
            Ok((Some(ax), a.shape()[ax]))
        }
    }
}

/// Builds the node; the axis keeps its place with `len` elements.
fn sort_node(kind: SortKind, a: &Array, axis: Option<usize>, len: usize, dtype: DType) -> Array {
    let shape = match axis {
        None => vec![len],
        Some(ax) => {
            let mut s = a.shape().to_vec();
            s[ax] = len;
            s
        }
    };
    Array::from_op(shape, dtype, Sort { kind, axis }, vec![a.clone()])
}

/// uint32 results must hold every position along the axis.
fn check_index_range(op: &str, n: usize) -> Result<()> {
    if n as u64 > 1u64 << 32 {
        return Err(Error::value(
            op,
            format!("an axis of {n} elements exceeds the range of uint32 indices"),
        ));
    }
    Ok(())
}

fn normalize_kth(op: &str, kth: isize, n: usize) -> Result<usize> {
    let k = if kth < 0 {
        kth as i128 + n as i128
    } else {
        kth as i128
    };
    if k < 0 || k >= n as i128 {
        return Err(Error::value(
            op,
            format!("kth {kth} is out of bounds for an axis of size {n}"),
        ));
    }
    Ok(k as usize)
}

/// The values of `a` sorted along `axis` (`None`: the flattened array).
///
/// NaNs sort last; complex numbers sort lexicographically (see the
/// [module docs](self)).
///
/// ```
/// use ferrox::{sort, Array};
/// let a = Array::from_slice(&[3.0f32, f32::NAN, -1.0, 2.0, 0.5, 1.0], &[2, 3])?;
/// let s = sort(&a, Some(-1))?.to_vec::<f32>()?;
/// assert_eq!(&s[..2], &[-1.0, 3.0]);
/// assert!(s[2].is_nan());
/// assert_eq!(&s[3..], &[0.5, 1.0, 2.0]);
/// assert_eq!(sort(&a, None)?.shape(), &[6]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn sort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (axis, n) = sort_axis("sort", a, axis)?;
    Ok(sort_node(SortKind::Sort, a, axis, n, a.dtype()))
}

/// The uint32 indices that sort `a` along `axis` (`None`: flattened).
///
/// The sort is stable: equal values keep their order. Use
/// [`take_along_axis`](crate::take_along_axis) to apply the permutation.
///
/// ```
/// use ferrox::{argsort, Array};
/// let a = Array::from_slice(&[2i32, 1, 2, 0], &[4])?;
/// assert_eq!(argsort(&a, Some(0))?.to_vec::<u32>()?, vec![3, 1, 0, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn argsort(a: &Array, axis: Option<isize>) -> Result<Array> {
    let (axis, n) = sort_axis("argsort", a, axis)?;
    check_index_range("argsort", n)?;
    Ok(sort_node(SortKind::ArgSort, a, axis, n, DType::UInt32))
}

/// `a` rearranged along `axis` so that position `kth` holds the value it
/// would have after sorting, smaller-or-equal values before it and
/// greater-or-equal values after (each side in no particular order).
///
/// `kth` may be negative (counts from the end); `axis = None` partitions the
/// flattened array.
///
/// ```
/// use ferrox::{partition, Array};
/// let a = Array::from_slice(&[5i32, 1, 4, 2, 3], &[5])?;
/// let p = partition(&a, 2, Some(0))?.to_vec::<i32>()?;
/// assert_eq!(p[2], 3);
/// assert!(p[..2].iter().all(|&v| v <= 3) && p[3..].iter().all(|&v| v >= 3));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn partition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    let (axis, n) = sort_axis("partition", a, axis)?;
    let kth = normalize_kth("partition", kth, n)?;
    Ok(sort_node(
        SortKind::Partition { kth },
        a,
        axis,
        n,
        a.dtype(),
    ))
}

/// The uint32 indices that [`partition`] `a` along `axis`.
///
/// ```
/// use ferrox::{argpartition, Array};
/// let a = Array::from_slice(&[5i32, 1, 4, 2, 3], &[5])?;
/// let p = argpartition(&a, -1, None)?.to_vec::<u32>()?;
/// assert_eq!(p[4], 0); // the largest value, 5, is at index 0
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn argpartition(a: &Array, kth: isize, axis: Option<isize>) -> Result<Array> {
    let (axis, n) = sort_axis("argpartition", a, axis)?;
    check_index_range("argpartition", n)?;
    let kth = normalize_kth("argpartition", kth, n)?;
    Ok(sort_node(
        SortKind::ArgPartition { kth },
        a,
        axis,
        n,
        DType::UInt32,
    ))
}

/// The `k` largest values of `a` along `axis` (`None`: flattened).
///
/// MLX only promises the set of the top `k`; ferrox returns them in
/// ascending order, i.e. exactly the last `k` entries of [`sort`] (NaNs
/// count as the largest values). `0 <= k <= axis size`.
///
/// ```
/// use ferrox::{topk, Array};
/// let a = Array::from_slice(&[4.0f32, 9.0, 1.0, 7.0, 3.0, 8.0], &[2, 3])?;
/// let t = topk(&a, 2, Some(1))?;
/// assert_eq!(t.shape(), &[2, 2]);
/// assert_eq!(t.to_vec::<f32>()?, vec![4.0, 9.0, 7.0, 8.0]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn topk(a: &Array, k: usize, axis: Option<isize>) -> Result<Array> {
    let (axis, n) = sort_axis("topk", a, axis)?;
    if k > n {
        return Err(Error::value(
            "topk",
            format!(
                "k {k} is larger than the axis size {n} (shape {:?})",
                a.shape()
            ),
        ));
    }
    Ok(sort_node(SortKind::TopK { k }, a, axis, k, a.dtype()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::sort::SortKey;
    use crate::dtype::Complex64;
    use crate::error::ErrorKind;
    use crate::ops::indexing::tests_support::{eval_kernel, permuted, reversed};
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn f32s(a: &Array) -> Vec<f32> {
        a.to_vec::<f32>().unwrap()
    }

    #[test]
    fn sort_along_each_axis() {
        let a = Array::from_slice(&[3i32, 1, 2, 0, 5, 4], &[2, 3]).unwrap();
        assert_eq!(
            sort(&a, Some(1)).unwrap().to_vec::<i32>().unwrap(),
            [1, 2, 3, 0, 4, 5]
        );
        assert_eq!(
            sort(&a, Some(0)).unwrap().to_vec::<i32>().unwrap(),
            [0, 1, 2, 3, 5, 4]
        );
        assert_eq!(
            sort(&a, None).unwrap().to_vec::<i32>().unwrap(),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            argsort(&a, Some(0)).unwrap().to_vec::<u32>().unwrap(),
            [1, 0, 0, 0, 1, 1]
        );
        assert_eq!(
            argsort(&a, None).unwrap().to_vec::<u32>().unwrap(),
            [3, 1, 2, 0, 5, 4]
        );
    }

    #[test]
    fn nan_and_signed_zero_order() {
        let a = Array::from_slice(
            &[f32::NAN, 1.0, -0.0, f32::NEG_INFINITY, -f32::NAN, 0.0],
            &[6],
        )
        .unwrap();
        let s = f32s(&sort(&a, None).unwrap());
        assert_eq!(&s[..4], &[f32::NEG_INFINITY, -0.0, 0.0, 1.0]);
        assert!(s[4].is_nan() && s[5].is_nan());
        // Stable: -0.0 (index 2) before 0.0 (index 5); NaNs in input order.
        assert_eq!(
            argsort(&a, None).unwrap().to_vec::<u32>().unwrap(),
            [3, 2, 5, 1, 0, 4]
        );
        let t = f32s(&topk(&a, 3, None).unwrap());
        assert_eq!(t[0], 1.0);
        assert!(t[1].is_nan() && t[2].is_nan());
    }

    #[test]
    fn complex_bool_and_half_order() {
        let c = |re, im| Complex64::new(re, im);
        let a = Array::from_slice(
            &[c(1.0, f32::NAN), c(1.0, 2.0), c(f32::NAN, 0.0), c(0.0, 9.0)],
            &[4],
        )
        .unwrap();
        assert_eq!(
            argsort(&a, None).unwrap().to_vec::<u32>().unwrap(),
            [3, 1, 0, 2]
        );
        let b = Array::from_slice(&[true, false, true, false], &[4]).unwrap();
        assert_eq!(
            argsort(&b, None).unwrap().to_vec::<u32>().unwrap(),
            [1, 3, 0, 2]
        );
        let h = Array::from_slice(&[3.0f32, -1.0, 2.0], &[3])
            .unwrap()
            .astype(DType::BFloat16)
            .unwrap();
        let s = sort(&h, Some(0)).unwrap().astype(DType::Float32).unwrap();
        assert_eq!(f32s(&s), [-1.0, 2.0, 3.0]);
    }

    #[test]
    fn partition_and_topk() {
        let a = Array::from_slice(&[9i64, 3, 7, 1, 8, 2, 6, 4, 5, 0], &[2, 5]).unwrap();
        let p = partition(&a, -2, Some(-1))
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        for row in p.chunks(5) {
            let mut sorted = row.to_vec();
            sorted.sort();
            assert_eq!(row[3], sorted[3]);
            assert!(row[..3].iter().all(|&v| v <= row[3]) && row[4] >= row[3]);
        }
        let ap = argpartition(&a, 0, Some(0)).unwrap();
        assert_eq!(ap.to_vec::<u32>().unwrap()[..5], [1, 0, 1, 0, 1]);
        // k equal to the axis size: every column, sorted.
        assert_eq!(
            topk(&a, 2, Some(0)).unwrap().to_vec::<i64>().unwrap(),
            [2, 3, 4, 1, 0, 9, 6, 7, 5, 8]
        );
        assert_eq!(
            topk(&a, 3, None).unwrap().to_vec::<i64>().unwrap(),
            [7, 8, 9]
        );
        assert_eq!(topk(&a, 0, Some(1)).unwrap().shape(), &[2, 0]);
        assert_eq!(
            topk(&a, 5, Some(1)).unwrap().to_vec::<i64>().unwrap(),
            [1, 3, 7, 8, 9, 0, 2, 4, 5, 6]
        );
    }

    #[test]
    fn validation() {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert_eq!(sort(&a, Some(1)).unwrap_err().kind(), ErrorKind::Axis);
        assert_eq!(
            argsort(&Array::scalar(1.0f32), Some(-1))
                .unwrap_err()
                .kind(),
            ErrorKind::Axis
        );
        let e = partition(&a, 3, Some(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "partition: kth 3 is out of bounds for an axis of size 3"
        );
        assert!(argpartition(&a, -4, None).is_err());
        assert!(argpartition(&a, -3, None).is_ok());
        let e = topk(&a, 4, Some(0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "topk: k 4 is larger than the axis size 3 (shape [3])"
        );
        assert!(check_index_range("argsort", (1 << 32) + 1).is_err());
        assert!(check_index_range("argsort", 1 << 32).is_ok());
    }

    #[test]
    fn empty_and_scalar_inputs() {
        let e = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
        assert_eq!(sort(&e, Some(0)).unwrap().shape(), &[0, 3]);
        assert_eq!(
            argsort(&e, Some(1)).unwrap().to_vec::<u32>().unwrap(),
            Vec::<u32>::new()
        );
        assert_eq!(sort(&e, None).unwrap().shape(), &[0]);
        assert!(partition(&e, 0, Some(0)).is_err());
        assert_eq!(
            argsort(&Array::scalar(4i8), None)
                .unwrap()
                .to_vec::<u32>()
                .unwrap(),
            [0]
        );
    }

    #[test]
    fn strided_operands() {
        // a = [[3, 1, 2], [0, 5, 4]] stored column-major.
        let (data, shape) = permuted(&[3i32, 0, 1, 5, 2, 4], &[3, 2], &[1, 0]);
        let a = Operand {
            data: &data,
            shape: &shape,
            dtype: DType::Int32,
        };
        let s = Sort {
            kind: SortKind::Sort,
            axis: Some(1),
        };
        assert_eq!(
            eval_kernel::<i32>(&s, &[a], &[2, 3], DType::Int32).unwrap(),
            [1, 2, 3, 0, 4, 5]
        );
        let s = Sort {
            kind: SortKind::ArgSort,
            axis: Some(0),
        };
        assert_eq!(
            eval_kernel::<u32>(&s, &[a], &[2, 3], DType::UInt32).unwrap(),
            [1, 0, 0, 0, 1, 1]
        );
        let s = Sort {
            kind: SortKind::TopK { k: 2 },
            axis: None,
        };
        assert_eq!(
            eval_kernel::<i32>(&s, &[a], &[2], DType::Int32).unwrap(),
            [4, 5]
        );
        // [2.0, 3.0, 1.0] stored reversed.
        let (data, shape) = reversed(&[1.0f64, 3.0, 2.0], &[3]);
        let r = Operand {
            data: &data,
            shape: &shape,
            dtype: DType::Float64,
        };
        let s = Sort {
            kind: SortKind::ArgSort,
            axis: Some(0),
        };
        assert_eq!(
            eval_kernel::<u32>(&s, &[r], &[3], DType::UInt32).unwrap(),
            [2, 0, 1]
        );
    }

    #[test]
    fn large_inputs_split_over_cores() {
        let n = 1usize << 17;
        let v: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32).collect();
        let a = Array::from_slice(&v, &[n]).unwrap();
        let idx = argsort(&a, None).unwrap().to_vec::<u32>().unwrap();
        assert!(
            idx.windows(2)
                .all(|w| (v[w[0] as usize], w[0]) < (v[w[1] as usize], w[1]))
        );
        let m = Array::from_slice(&v, &[n / 64, 64]).unwrap();
        let s = sort(&m, Some(0)).unwrap().to_vec::<f32>().unwrap();
        for c in 0..64 {
            assert!((1..n / 64).all(|r| s[(r - 1) * 64 + c] <= s[r * 64 + c]));
        }
        let t = topk(&m, 3, Some(1)).unwrap().to_vec::<f32>().unwrap();
        for (r, top) in t.chunks(3).enumerate() {
            let mut row = v[r * 64..(r + 1) * 64].to_vec();
            row.sort_by(|x, y| x.partial_cmp(y).unwrap());
            assert_eq!(top, &row[61..]);
        }
    }

    proptest! {
        #[test]
        fn argsort_sorts_and_is_stable(v in proptest::collection::vec(-3i32..3, 0..40)) {
            let a = Array::from_slice(&v, &[v.len()]).unwrap();
            let idx = argsort(&a, Some(0)).unwrap().to_vec::<u32>().unwrap();
            let mut want: Vec<u32> = (0..v.len() as u32).collect();
            want.sort_by_key(|&i| v[i as usize]); // std's stable sort
            prop_assert_eq!(idx, want);
        }

        #[test]
        fn partition_invariant(
            v in proptest::collection::vec(proptest::num::f32::ANY, 1..40),
            kth_seed in 0usize..100,
        ) {
            let kth = kth_seed % v.len();
            let a = Array::from_slice(&v, &[v.len()]).unwrap();
            let p = partition(&a, kth as isize, None).unwrap().to_vec::<f32>().unwrap();
            let mut sorted = v.clone();
            sorted.sort_by(f32::sort_cmp);
            prop_assert_eq!(f32::sort_cmp(&p[kth], &sorted[kth]), Ordering::Equal);
            prop_assert!(p[..kth].iter().all(|x| f32::sort_cmp(x, &p[kth]) != Ordering::Greater));
            prop_assert!(p[kth + 1..].iter().all(|x| f32::sort_cmp(x, &p[kth]) != Ordering::Less));
            let ap = argpartition(&a, kth as isize, None).unwrap().to_vec::<u32>().unwrap();
            prop_assert_eq!(f32::sort_cmp(&v[ap[kth] as usize], &sorted[kth]), Ordering::Equal);
        }

        #[test]
        fn topk_is_the_sorted_tail(
            rows in 1usize..4, n in 1usize..20, k_seed in 0usize..100,
            seed in proptest::collection::vec(-50i16..50, 80),
        ) {
            let k = k_seed % (n + 1);
            let v: Vec<i16> = seed.iter().cycle().take(rows * n).copied().collect();
            let a = Array::from_slice(&v, &[rows, n]).unwrap();
            let t = topk(&a, k, Some(1)).unwrap().to_vec::<i16>().unwrap();
            let s = sort(&a, Some(1)).unwrap().to_vec::<i16>().unwrap();
            let want: Vec<i16> = s.chunks(n).flat_map(|r| r[n - k..].to_vec()).collect();
            prop_assert_eq!(t, want);
        }
    }
}
