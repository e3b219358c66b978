//! The `nan_to_num` kernel: NaN, +inf and -inf replaced by given values
//! (complex: in each part), finite values passed through untouched.

use super::elementwise::unary;
use crate::dtype::{Complex64, DType, Element};
use crate::error::{Error, Result};
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;

/// `v`, or its replacement when it is NaN or infinite.
#[inline(always)]
fn replace<T: Element>(v: T, nan: T, posinf: T, neginf: T) -> T {
    let f = v.to_f64();
    if f.is_nan() {
        nan
    } else if f == f64::INFINITY {
        posinf
    } else if f == f64::NEG_INFINITY {
        neginf
    } else {
        v
    }
}

/// Applies [`replace`] to each element of a float `x`, with the
/// replacements converted to the dtype once.
fn replace_all<T: Element + Pod>(
    x: &Operand<'_>,
    nan: f64,
    posinf: f64,
    neginf: f64,
    out: OutSpec<'_>,
) -> Result<Data> {
    let (nan, pos, neg) = (T::from_f64(nan), T::from_f64(posinf), T::from_f64(neginf));
    unary(x, out, move |v: T| replace(v, nan, pos, neg))
}

/// `x` (a float or complex dtype) with NaN replaced by `nan`, +inf by
/// `posinf` and -inf by `neginf`, each rounded to the dtype.
pub fn nan_to_num(
    x: &Operand<'_>,
    nan: f64,
    posinf: f64,
    neginf: f64,
    out: OutSpec<'_>,
) -> Result<Data> {
    match x.dtype {
        DType::Complex64 => {
            let (n, p, m) = (nan as f32, posinf as f32, neginf as f32);
            unary(x, out, move |v: Complex64| {
                Complex64::new(replace(v.re, n, p, m), replace(v.im, n, p, m))
            })
        }
        DType::Float16 => replace_all::<half::f16>(x, nan, posinf, neginf, out),
        DType::BFloat16 => replace_all::<half::bf16>(x, nan, posinf, neginf, out),
        DType::Float32 => replace_all::<f32>(x, nan, posinf, neginf, out),
        DType::Float64 => replace_all::<f64>(x, nan, posinf, neginf, out),
        other => Err(Error::runtime(
            "nan_to_num",
            format!("internal error: dtype {other}"),
        )),
    }
}
