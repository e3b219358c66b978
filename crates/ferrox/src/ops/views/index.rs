//! Python-style basic indexing for the Rust API: `a.index(&[...])` with
//! integers, ranges with steps, new axes and an ellipsis. The result is a
//! view: one [`Slice`](super::Slice) node (skipped when every axis is whole)
//! and, when integers drop axes or new axes are added, one reshape that only
//! removes or inserts size-1 axes (always a view).

use super::{reshape_to, slice_axis, slice_parts};
use crate::error::{Error, Result};
use crate::graph::array::Array;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of an index expression, as in `a[1, ::-1, None, ...]`.
///
/// Rust ranges convert into it (`(1..3).into()`, `(..).into()`), as do
/// integers (`2.into()`):
///
/// ```
/// use ferrox::SliceArg;
/// assert_eq!(SliceArg::from(1..3), SliceArg::Range { start: Some(1), stop: Some(3), step: 1 });
/// assert_eq!(SliceArg::from(..), SliceArg::FULL);
/// assert_eq!(SliceArg::from(-1), SliceArg::Index(-1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceArg {
    /// Selects one index (negative counts from the end) and drops the axis.
    Index(isize),
    /// `start:stop:step` with Python semantics: missing bounds mean "from
    /// the beginning / to the end" in the direction of `step`; out-of-range
    /// bounds clamp; `step` must not be zero.
    Range {
        /// First index, or `None`.
        start: Option<isize>,
        /// End (exclusive), or `None`.
        stop: Option<isize>,
        /// Step (negative walks backwards).
        step: isize,
    },
    /// Inserts a size-1 axis (`None` / `np.newaxis`).
    NewAxis,
    /// Stands for as many whole axes as the other entries leave (`...`).
    Ellipsis,
}

impl SliceArg {
    /// The whole axis, `:`.
    pub const FULL: SliceArg = SliceArg::Range {
        start: None,
        stop: None,
        step: 1,
    };
    /// The whole axis reversed, `::-1`.
    pub const REVERSED: SliceArg = SliceArg::Range {
        start: None,
        stop: None,
        step: -1,
    };

    /// `start:stop:step` with optional bounds.
    ///
    /// ```
    /// use ferrox::SliceArg;
    /// let a = ferrox::arange(0.0, 5.0, 1.0, ferrox::DType::Int32)?;
    /// let b = a.index(&[SliceArg::range(None, Some(0), -2)])?; // a[:0:-2]
    /// assert_eq!(b.to_vec::<i32>()?, vec![4, 2]);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn range(start: Option<isize>, stop: Option<isize>, step: isize) -> SliceArg {
        SliceArg::Range { start, stop, step }
    }
}

impl From<isize> for SliceArg {
    fn from(i: isize) -> SliceArg {
        SliceArg::Index(i)
    }
}
impl From<Range<isize>> for SliceArg {
    fn from(r: Range<isize>) -> SliceArg {
        SliceArg::range(Some(r.start), Some(r.end), 1)
    }
}
impl From<RangeFrom<isize>> for SliceArg {
    fn from(r: RangeFrom<isize>) -> SliceArg {
        SliceArg::range(Some(r.start), None, 1)
    }
}
impl From<RangeTo<isize>> for SliceArg {
    fn from(r: RangeTo<isize>) -> SliceArg {
        SliceArg::range(None, Some(r.end), 1)
    }
}
impl From<RangeInclusive<isize>> for SliceArg {
    /// `a..=b`; `b == -1` means "through the last element".
    fn from(r: RangeInclusive<isize>) -> SliceArg {
        let stop = r.end().checked_add(1).filter(|&s| s != 0);
        SliceArg::range(Some(*r.start()), stop, 1)
    }
}
impl From<RangeToInclusive<isize>> for SliceArg {
    /// `..=b`; `b == -1` means "through the last element".
    fn from(r: RangeToInclusive<isize>) -> SliceArg {
        SliceArg::range(None, r.end.checked_add(1).filter(|&s| s != 0), 1)
    }
}
impl From<RangeFull> for SliceArg {
    fn from(_: RangeFull) -> SliceArg {
        SliceArg::FULL
    }
}

impl Array {
    /// Basic indexing with numpy semantics, e.g. `a[1, ::-1, None, ...]` is
    /// `a.index(&[1.into(), SliceArg::REVERSED, SliceArg::NewAxis,
    /// SliceArg::Ellipsis])`. Integers drop their axis, ranges keep it,
    /// axes not mentioned are taken whole. The result is a view.
    ///
    /// Errors: an integer out of range, a zero step, more than one
    /// ellipsis, or more integers and ranges than axes.
    ///
    /// ```
    /// use ferrox::SliceArg;
    /// let a = ferrox::arange(0.0, 12.0, 1.0, ferrox::DType::Int32)?.reshape(&[3, 4])?;
    /// // a[1, ::-2]
    /// let b = a.index(&[1.into(), SliceArg::range(None, None, -2)])?;
    /// assert_eq!(b.to_vec::<i32>()?, vec![7, 5]);
    /// // a[None, ..., 1:3]
    /// let c = a.index(&[SliceArg::NewAxis, SliceArg::Ellipsis, (1..3).into()])?;
    /// assert_eq!(c.shape(), &[1, 3, 2]);
    /// assert!(a.index(&[3.into()]).is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn index(&self, args: &[SliceArg]) -> Result<Array> {
        let shape = self.shape();
        let nd = shape.len();
        if args.iter().filter(|a| **a == SliceArg::Ellipsis).count() > 1 {
            return Err(Error::index(
                "index",
                "an index can only have a single ellipsis ('...')",
            ));
        }
        let consumed = args
            .iter()
            .filter(|a| matches!(a, SliceArg::Index(_) | SliceArg::Range { .. }))
            .count();
        if consumed > nd {
            return Err(Error::index(
                "index",
                format!(
                    "too many indices for array: array is {nd}-dimensional, but {consumed} were indexed"
                ),
            ));
        }
        let mut parts: Vec<(isize, usize, isize)> = Vec::with_capacity(nd);
        let mut out_shape: Vec<usize> = Vec::with_capacity(nd + args.len());
        let whole_axis = |ax: usize, parts: &mut Vec<_>, out: &mut Vec<usize>| {
            parts.push((0, shape[ax], 1));
            out.push(shape[ax]);
        };
        for arg in args {
            let ax = parts.len();
            match *arg {
                SliceArg::Index(i) => {
                    let n = shape[ax] as isize;
                    if i < -n || i >= n {
                        return Err(Error::index(
                            "index",
                            format!("index {i} is out of bounds for axis {ax} with size {n}"),
                        ));
                    }
                    parts.push((if i < 0 { i + n } else { i }, 1, 1));
                }
                SliceArg::Range { start, stop, step } => {
                    if step == 0 {
                        return Err(Error::value(
                            "index",
                            format!("slice step cannot be zero (axis {ax})"),
                        ));
                    }
                    let (first, len) = slice_axis(shape[ax], start, stop, step);
                    parts.push((first, len, step));
                    out_shape.push(len);
                }
                SliceArg::NewAxis => out_shape.push(1),
                SliceArg::Ellipsis => {
                    for ax in ax..ax + (nd - consumed) {
                        whole_axis(ax, &mut parts, &mut out_shape);
                    }
                }
            }
        }
        for ax in parts.len()..nd {
            whole_axis(ax, &mut parts, &mut out_shape);
        }
        let sliced = slice_parts(self, &parts);
        if sliced.shape() == out_shape.as_slice() {
            return Ok(sliced);
        }
        Ok(reshape_to(&sliced, out_shape))
    }
}
