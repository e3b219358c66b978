//! Layout arithmetic for views: shapes, strides and offsets only; no element
//! is read here.

use crate::graph::layout::row_major_strides;

/// Strides that let data laid out over `shape` with `strides` be read as
/// `new_shape` without copying, or `None` when a copy is required.
///
/// This is numpy's `_attempt_nocopy_reshape`: size-1 dimensions are ignored,
/// then each group of old dimensions whose product equals a group of new
/// dimensions must itself be contiguous (each stride the next one times the
/// next size); the new group then subdivides it. Both shapes must hold the
/// same number of elements. Empty arrays get row-major strides (nothing is
/// ever read through them).
pub(crate) fn reshape_strides(
    shape: &[usize],
    strides: &[isize],
    new_shape: &[usize],
) -> Option<Vec<isize>> {
    if shape.iter().product::<usize>() == 0 {
        return Some(row_major_strides(new_shape));
    }
    let (old_dims, old_strides): (Vec<usize>, Vec<isize>) = shape
        .iter()
        .zip(strides)
        .filter(|&(&d, _)| d != 1)
        .map(|(&d, &s)| (d, s))
        .unzip();
    // Size-1 dimensions of the result may have any stride; 1 is as good as any.
    let mut new_strides = vec![1isize; new_shape.len()];
    let (mut oi, mut oj, mut ni, mut nj) = (0usize, 1usize, 0usize, 1usize);
    while ni < new_shape.len() && oi < old_dims.len() {
        let mut new_prod = new_shape[ni];
        let mut old_prod = old_dims[oi];
        while new_prod != old_prod {
            // The shapes hold equally many (non-zero) elements, so the
            // products meet before either list runs out; `get` keeps a
            // mismatched call from panicking (it then asks for a copy).
            if new_prod < old_prod {
                new_prod *= *new_shape.get(nj)?;
                nj += 1;
            } else {
                old_prod *= *old_dims.get(oj)?;
                oj += 1;
            }
        }
        for k in oi..oj - 1 {
            if old_strides[k] != old_dims[k + 1] as isize * old_strides[k + 1] {
                return None;
            }
        }
        new_strides[nj - 1] = old_strides[oj - 1];
        for k in (ni + 1..nj).rev() {
            new_strides[k - 1] = new_strides[k] * new_shape[k] as isize;
        }
        ni = nj;
        nj += 1;
        oi = oj;
        oj += 1;
    }
    Some(new_strides)
}

/// Python's `slice(start, stop, step).indices(n)` for one axis: the first
/// selected index and how many are selected. Out-of-range bounds clamp;
/// negative bounds count from the end. `step` must not be zero.
///
/// For an empty selection the start may be `n` or `-1` (never read).
pub(crate) fn slice_axis(
    n: usize,
    start: Option<isize>,
    stop: Option<isize>,
    step: isize,
) -> (isize, usize) {
    // i128 so that `bound + n` and `-step` cannot overflow.
    let (n, step) = (n as i128, step as i128);
    let (lower, upper) = if step > 0 { (0, n) } else { (-1, n - 1) };
    let clamp = |b: Option<isize>, default: i128| match b {
        None => default,
        Some(b) => {
            let b = b as i128;
            let b = if b < 0 { b + n } else { b };
            b.clamp(lower, upper)
        }
    };
    let first = clamp(start, if step > 0 { lower } else { upper });
    let end = clamp(stop, if step > 0 { upper } else { lower });
    let len = if step > 0 && end > first {
        (end - first - 1) / step + 1
    } else if step < 0 && first > end {
        (first - end - 1) / (-step) + 1
    } else {
        0
    };
    (first as isize, len as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::walk::collapse;
    use proptest::prelude::*;

    #[test]
    fn reshape_of_contiguous_is_a_view() {
        assert_eq!(
            reshape_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]),
            Some(vec![4, 1])
        );
        assert_eq!(
            reshape_strides(&[2, 3, 4], &[12, 4, 1], &[24]),
            Some(vec![1])
        );
        assert_eq!(
            reshape_strides(&[6], &[1], &[1, 2, 1, 3, 1]),
            Some(vec![6, 3, 3, 1, 1])
        );
    }

    #[test]
    fn reshape_of_transposed_needs_a_copy_unless_groups_survive() {
        // [3, 2] transpose of a row-major [2, 3].
        assert_eq!(reshape_strides(&[3, 2], &[1, 3], &[6]), None);
        // Splitting a single strided dimension is fine.
        assert_eq!(reshape_strides(&[6], &[2], &[2, 3]), Some(vec![6, 2]));
        // Reversed rows keep their (negative) strides.
        assert_eq!(
            reshape_strides(&[4, 2], &[-2, 1], &[2, 2, 2]),
            Some(vec![-4, -2, 1])
        );
    }

    #[test]
    fn reshape_of_broadcast_splits_but_does_not_merge() {
        assert_eq!(
            reshape_strides(&[4, 3], &[0, 1], &[2, 2, 3]),
            Some(vec![0, 0, 1])
        );
        assert_eq!(reshape_strides(&[4, 3], &[0, 1], &[12]), None);
    }

    #[test]
    fn collapse_merges_contiguous_runs() {
        let (d, s) = collapse(&[2, 1, 3, 4], [&[12, 99, 4, 1][..]]);
        assert_eq!((d, s), (vec![24], vec![[1]]));
        let (d, s) = collapse(&[2, 3], [&[1, 2][..]]);
        assert_eq!((d, s), (vec![2, 3], vec![[1], [2]]));
        let (d, _) = collapse(&[1, 1], [&[5, 7][..]]);
        assert!(d.is_empty());
    }

    #[test]
    fn slice_axis_matches_python() {
        assert_eq!(slice_axis(5, None, None, 1), (0, 5));
        assert_eq!(slice_axis(5, None, None, -1), (4, 5));
        assert_eq!(slice_axis(5, Some(-2), None, 1), (3, 2));
        assert_eq!(slice_axis(5, Some(10), None, 1).1, 0);
        assert_eq!(slice_axis(5, Some(10), Some(-10), -2), (4, 3));
        assert_eq!(slice_axis(5, Some(1), Some(1), 1).1, 0);
        assert_eq!(slice_axis(0, None, None, -1).1, 0);
        assert_eq!(
            slice_axis(3, Some(isize::MIN), Some(isize::MAX), isize::MIN).1,
            0
        );
        assert_eq!(
            slice_axis(3, Some(isize::MAX), Some(isize::MIN), isize::MIN),
            (2, 1)
        );
    }

    /// Row-major walk of a strided layout, for comparing layouts.
    fn offsets(shape: &[usize], strides: &[isize]) -> Vec<isize> {
        let mut out = vec![];
        crate::graph::layout::for_each_offset(shape, strides, 1000, |o| out.push(o as isize));
        out
    }

    proptest! {
        #[test]
        fn reshape_view_reads_the_same_elements(
            dims in proptest::collection::vec(1usize..4, 1..5),
            perm_seed in any::<u64>(),
            split in 0usize..4,
        ) {
            // A permuted row-major layout, reshaped by merging or splitting.
            let n = dims.len();
            let mut perm: Vec<usize> = (0..n).collect();
            let mut seed = perm_seed;
            for i in (1..n).rev() {
                perm.swap(i, (seed % (i as u64 + 1)) as usize);
                seed /= i as u64 + 1;
            }
            let base = row_major_strides(&dims);
            let shape: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
            let strides: Vec<isize> = perm.iter().map(|&p| base[p]).collect();
            let numel: usize = shape.iter().product();
            let new_shape = match split % 4 {
                0 => vec![numel],
                1 => vec![1, numel, 1],
                2 if numel % 2 == 0 => vec![2, numel / 2],
                _ => shape.clone(),
            };
            if let Some(ns) = reshape_strides(&shape, &strides, &new_shape) {
                prop_assert_eq!(offsets(&new_shape, &ns), offsets(&shape, &strides));
            }
            // Identity reshapes never copy.
            prop_assert!(reshape_strides(&shape, &strides, &shape).is_some());
        }

        #[test]
        fn collapse_keeps_the_walk(
            dims in proptest::collection::vec(1usize..4, 0..5),
            neg in any::<bool>(),
        ) {
            let mut strides = row_major_strides(&dims);
            if neg && !strides.is_empty() {
                strides[0] = -strides[0];
            }
            let (d, s) = collapse(&dims, [&strides[..]]);
            let flat: Vec<isize> = s.iter().map(|x| x[0]).collect();
            prop_assert_eq!(offsets(&d, &flat), offsets(&dims, &strides));
        }

        #[test]
        fn slice_axis_matches_a_naive_loop(
            n in 0usize..8,
            start in proptest::option::of(-10isize..10),
            stop in proptest::option::of(-10isize..10),
            step in prop_oneof![-4isize..0, 1isize..5],
        ) {
            let (first, len) = slice_axis(n, start, stop, step);
            // Naive: python semantics by enumeration.
            let ni = n as isize;
            let norm = |b: isize| if b < 0 { b + ni } else { b };
            let mut want = vec![];
            if step > 0 {
                let mut i = start.map(norm).unwrap_or(0).max(0);
                let end = stop.map(norm).unwrap_or(ni).min(ni);
                while i < end { want.push(i); i += step; }
            } else {
                let mut i = start.map(norm).unwrap_or(ni - 1).min(ni - 1);
                let end = stop.map(norm).unwrap_or(-1).max(-1);
                while i > end { want.push(i); i += step; }
            }
            let got: Vec<isize> = (0..len as isize).map(|k| first + k * step).collect();
            prop_assert_eq!(got, want);
        }
    }
}
