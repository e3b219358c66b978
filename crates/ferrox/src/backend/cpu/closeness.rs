//! The closeness kernels: the element predicate ([`Closeness`]) mapped
//! over broadcast pairs (`isclose`) or folded into one bool (`allclose`,
//! `array_equal`) without materialising the elementwise result.

use super::elementwise::{binary, broadcast_strides, for_each_offset2, out_storage};
use crate::dtype::Element;
use crate::dtype::{Complex64, DType};
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::with_dtype;

/// The element test shared by `isclose`, `allclose` and `array_equal`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Closeness {
    /// numpy's `isclose`: `a == b`, or both finite and
    /// `|a - b| <= atol + rtol * |b|`, or (with `equal_nan`) both NaN.
    /// Computed in f64 (complex: on magnitudes), so integer and low
    /// precision inputs are compared exactly.
    Close {
        /// Relative tolerance.
        rtol: f64,
        /// Absolute tolerance.
        atol: f64,
        /// Whether two NaNs count as close.
        equal_nan: bool,
    },
    /// Exact equality, optionally counting two NaNs as equal.
    Equal {
        /// Whether two NaNs count as equal.
        equal_nan: bool,
    },
}

impl Closeness {
    /// Applies the test to one pair of elements.
    #[inline(always)]
    pub fn test<T: Element>(self, a: T, b: T) -> bool {
        match self {
            Closeness::Close {
                rtol,
                atol,
                equal_nan,
            } => {
                if T::DTYPE == DType::Complex64 {
                    close_complex(a.to_c64(), b.to_c64(), rtol, atol, equal_nan)
                } else {
                    close_real(a.to_f64(), b.to_f64(), rtol, atol, equal_nan)
                }
            }
            // `x != x` is NaN for floats and for complex with a NaN part.
            #[allow(clippy::eq_op)]
            Closeness::Equal { equal_nan } => a == b || (equal_nan && a != a && b != b),
        }
    }
}

/// numpy's `isclose` for one pair of reals.
#[inline(always)]
pub fn close_real(a: f64, b: f64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    a == b
        || (a.is_finite() && b.is_finite() && (a - b).abs() <= atol + rtol * b.abs())
        || (equal_nan && a.is_nan() && b.is_nan())
}

/// numpy's `isclose` for one complex pair, on magnitudes.
pub fn close_complex(a: Complex64, b: Complex64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    let (ar, ai, br, bi) = (a.re as f64, a.im as f64, b.re as f64, b.im as f64);
    let finite = ar.is_finite() && ai.is_finite() && br.is_finite() && bi.is_finite();
    let nan = |r: f64, i: f64| r.is_nan() || i.is_nan();
    a == b
        || (finite && (ar - br).hypot(ai - bi) <= atol + rtol * br.hypot(bi))
        || (equal_nan && nan(ar, ai) && nan(br, bi))
}

/// `test` of each broadcast pair of `a` and `b` (one dtype) as a bool
/// output.
pub fn isclose(
    test: Closeness,
    a: &Operand<'_>,
    b: &Operand<'_>,
    out: OutSpec<'_>,
) -> Result<Data> {
    with_dtype!(a.dtype, T => binary(a, b, out, move |x: T, y: T| test.test(x, y)))
}

/// A 0-d bool output: whether `test` holds for every pair of `a` and `b`
/// (one dtype) broadcast to `shape`.
pub fn all_pairs(
    test: Closeness,
    a: &Operand<'_>,
    b: &Operand<'_>,
    shape: &[usize],
    out: OutSpec<'_>,
) -> Result<Data> {
    let all = with_dtype!(a.dtype, T => all_pairs_of::<T>(a, b, shape, test));
    let mut storage = out_storage(out)?;
    if let Some(o) = storage.as_mut_slice::<bool>().first_mut() {
        *o = all;
    }
    Ok(Data::contiguous(storage, out.shape))
}

fn all_pairs_of<T: Element + Pod>(
    a: &Operand<'_>,
    b: &Operand<'_>,
    shape: &[usize],
    test: Closeness,
) -> bool {
    let (ra, rb) = (a.data.raw::<T>(), b.data.raw::<T>());
    let (sa, sb) = (broadcast_strides(a, shape), broadcast_strides(b, shape));
    let mut all = true;
    for_each_offset2(shape, &sa, a.data.offset, &sb, b.data.offset, |oa, ob| {
        all &= test.test(ra[oa], rb[ob]);
    });
    all
}
