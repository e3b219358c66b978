//! `Display`/`Debug` for arrays in MLX's style: `array([1, 2.5], dtype=float32)`.

use super::Array;
use crate::dtype::DType;
use crate::with_dtype;
use std::fmt;

// A process-wide setting, like MLX's: the number of decimals plus one, 0
// for the default `%g` style. Plain std atomics: a static cannot hold a
// loom type, and this value guards no other memory.
static PRECISION: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sets how many decimals printed floats get (`None`: the default, six
/// significant digits with trailing zeros trimmed, as MLX). Process-wide:
/// every thread prints with the same setting (so this example does not
/// run among the other, concurrent doc tests).
///
/// ```no_run
/// let a = ferrox::Array::from_slice(&[1.123456789f32], &[1])?;
/// ferrox::array::set_print_precision(Some(2));
/// assert_eq!(format!("{a}"), "array([1.12], dtype=float32)");
/// ferrox::array::set_print_precision(None);
/// assert_eq!(format!("{a}"), "array([1.12346], dtype=float32)");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn set_print_precision(decimals: Option<usize>) {
    let v = decimals.map_or(0, |d| d.saturating_add(1));
    PRECISION.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// The decimals printed floats get (`None`: the default style).
///
/// ```
/// assert_eq!(ferrox::array::print_precision(), None);
/// ```
pub fn print_precision() -> Option<usize> {
    match PRECISION.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        v => Some(v - 1),
    }
}

/// `%g` with 6 significant digits, as MLX (C++ ostream) prints floats, or
/// fixed notation with the decimals of [`set_print_precision`].
fn format_float(v: f64) -> String {
    if let Some(p) = print_precision() {
        if v.is_finite() {
            return format!("{v:.p$}");
        }
    }
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        let s = format!("{:.5e}", v);
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = trim_zeros(mant);
        let e: i32 = e.parse().unwrap_or(0);
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, v))
    }
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// The elements of an array, converted once; formatted one at a time, so a
/// summarised print formats only what it shows.
enum Elements {
    Bool(Vec<bool>),
    Complex(Vec<crate::dtype::Complex64>),
    Float(Vec<f64>),
    Other(Vec<String>),
}

impl Elements {
    fn of(a: &Array) -> crate::error::Result<Self> {
        Ok(match a.dtype() {
            DType::Bool => Self::Bool(a.to_vec::<bool>()?),
            DType::Complex64 => Self::Complex(a.to_vec::<crate::dtype::Complex64>()?),
            d if d.is_float() => with_dtype!(d, T => {
                Self::Float(a.to_vec::<T>()?.iter().map(|&x| crate::dtype::Element::to_f64(x)).collect())
            }),
            d => with_dtype!(d, T => {
                Self::Other(a.to_vec::<T>()?.iter().map(|x| format!("{x:?}")).collect())
            }),
        })
    }

    fn format(&self, i: usize) -> String {
        match self {
            Self::Bool(v) => if v[i] { "True" } else { "False" }.into(),
            Self::Complex(v) => {
                let c = v[i];
                let sign = if c.im < 0.0 || (c.im == 0.0 && c.im.is_sign_negative()) {
                    '-'
                } else {
                    '+'
                };
                format!(
                    "{}{}{}j",
                    format_float(c.re as f64),
                    sign,
                    format_float(c.im.abs() as f64)
                )
            }
            Self::Float(v) => format_float(v[i]),
            Self::Other(v) => v[i].clone(),
        }
    }
}

/// An axis longer than this prints its first and last `EDGE_ITEMS` entries
/// around `...`, at every size (MLX's rule).
const SUMMARY_LEN: usize = 6;
const EDGE_ITEMS: usize = 3;

/// Writes the row-major block of `shape` starting at flat element `start`.
fn write_nested(out: &mut String, items: &Elements, start: usize, shape: &[usize], depth: usize) {
    let Some((&n, inner)) = shape.split_first() else {
        out.push_str(&items.format(start));
        return;
    };
    let chunk: usize = inner.iter().product();
    let separator = |out: &mut String| {
        out.push(',');
        if inner.is_empty() {
            out.push(' ');
        } else {
            // One line break between blocks of every depth (MLX's layout;
            // numpy adds a blank line per extra dimension).
            out.push('\n');
            out.push_str(&" ".repeat(7 + depth));
        }
    };
    out.push('[');
    let summarised = n > SUMMARY_LEN;
    for i in 0..n {
        if summarised && i == EDGE_ITEMS {
            separator(out);
            out.push_str("...");
        }
        if summarised && (EDGE_ITEMS..n - EDGE_ITEMS).contains(&i) {
            continue;
        }
        if i > 0 {
            separator(out);
        }
        write_nested(out, items, start + i * chunk, inner, depth + 1);
    }
    out.push(']');
}

impl fmt::Display for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Elements::of(self) {
            Ok(items) => {
                let mut body = String::new();
                write_nested(&mut body, &items, 0, self.shape(), 0);
                write!(f, "array({body}, dtype={})", self.dtype())
            }
            Err(e) => write!(
                f,
                "array(<unavailable: {e}>, shape={:?}, dtype={})",
                self.shape(),
                self.dtype()
            ),
        }
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::format_float;
    use crate::array::Array;

    #[test]
    fn long_axes_print_their_edges_like_mlx() {
        let six = Array::from_slice(&[1i32; 6], &[6]).unwrap();
        assert_eq!(format!("{six}"), "array([1, 1, 1, 1, 1, 1], dtype=int32)");
        let seven = Array::from_slice(&[0i32, 1, 2, 3, 4, 5, 6], &[7]).unwrap();
        assert_eq!(
            format!("{seven}"),
            "array([0, 1, 2, ..., 4, 5, 6], dtype=int32)"
        );
        let rows = Array::from_slice(&[1i32, 2].repeat(7), &[7, 2]).unwrap();
        let row = "[1, 2]";
        let expected = format!(
            "array([{row},\n       {row},\n       {row},\n       ...,\n       {row},\n       {row},\n       {row}], dtype=int32)"
        );
        assert_eq!(format!("{rows}"), expected);
        let cube = Array::from_slice(&[1i32, 2].repeat(4), &[2, 2, 2]).unwrap();
        assert_eq!(
            format!("{cube}"),
            "array([[[1, 2],\n        [1, 2]],\n       [[1, 2],\n        [1, 2]]], dtype=int32)"
        );
        let empty = Array::from_slice::<f32>(&[], &[0]).unwrap();
        assert_eq!(format!("{empty}"), "array([], dtype=float32)");
    }

    #[test]
    fn floats_print_like_mlx() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(2.5), "2.5");
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(1234567.0), "1.23457e+06");
        assert_eq!(format_float(1e-7), "1e-07");
        assert_eq!(format_float(-0.333333333), "-0.333333");
    }
}
