//! numpy's `.npy` format: a magic string, a version, a header that is a
//! Python dict literal (`{'descr': '<f4', 'fortran_order': False, 'shape':
//! (2, 3), }`), then the raw elements.
//!
//! Hand-written on purpose: the header is a dozen lines of grammar, and the
//! crates that read npy (`npyz`, `ndarray-npy`) read the data into their own
//! vectors, while ferrox wants the header only, so that the data stays a
//! view of the mapped file. The parser accepts what numpy writes (versions
//! 1.0, 2.0 and 3.0, any key order, `<`, `>`, `|` and `=` byte orders) and
//! rejects everything else with an error naming the bad part.
//!
//! dtypes: numpy's `b1 u1 u2 u4 u8 i1 i2 i4 i8 f2 f4 f8 c8`, and `V2` for
//! bfloat16 (numpy has no bfloat16; MLX writes `<V2` too, numpy reads it
//! back as 2-byte void records). Other descriptors (`c16`, objects, strings,
//! structured records) are dtype errors.

use super::atomic::put;
use super::source::{Encoding, Order, Source, Tensor};
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::array::Array;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";
/// numpy pads the header so that the data starts at a multiple of this.
const HEADER_ALIGN: usize = 64;
/// numpy refuses headers longer than this by default; so does ferrox (it
/// bounds the work the header parser does on a hostile file).
const MAX_HEADER: usize = 1 << 20;

/// Loads an `.npy` file.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.npy");
/// ferrox::io::save(&path, &ferrox::ones(&[3], ferrox::DType::Int64)?)?;
/// assert_eq!(ferrox::io::npy::load(&path)?.to_vec::<i64>()?, vec![1, 1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Array> {
    load_source(&Source::open(path.as_ref(), "npy")?)
}

/// The header's three fields.
#[derive(Debug, PartialEq)]
struct Header {
    dtype: DType,
    swapped: bool,
    fortran: bool,
    shape: Vec<usize>,
}

pub(crate) fn load_source(src: &Source) -> Result<Array> {
    let bytes = src.bytes();
    let (header, data_start) = read_header(bytes).map_err(|m| src.bad(m))?;
    let t = Tensor {
        shape: header.shape,
        dtype: header.dtype,
        offset: data_start,
        encoding: if header.swapped {
            Encoding::Swapped
        } else {
            Encoding::Native
        },
        order: if header.fortran {
            Order::ColumnMajor
        } else {
            Order::RowMajor
        },
    };
    let need = src.tensor_bytes(&t, "data")?;
    let have = bytes.len() - data_start;
    if have < need {
        // MLX reads npy data when the array is evaluated, so a short file
        // loads and fails at eval (a RuntimeError in Python).
        return Ok(src.failing(
            t.shape,
            t.dtype,
            format!("truncated: the header promises {need} data bytes, the file has {have}"),
        ));
    }
    src.array(t, "data")
}

/// Parses magic, version and header; returns them and the data's offset.
fn read_header(bytes: &[u8]) -> Result<(Header, usize), String> {
    if bytes.len() < MAGIC.len() + 2 || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not an npy file (bad magic string)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len_bytes, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => return Err(format!("unsupported npy version {major}.{minor}")),
    };
    let start = 8 + len_bytes;
    let len_field = bytes
        .get(8..start)
        .ok_or("truncated before the header length")?;
    let header_len = len_field
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | b as usize);
    if header_len > MAX_HEADER {
        return Err(format!(
            "header length {header_len} exceeds {MAX_HEADER} bytes"
        ));
    }
    let end = start + header_len;
    let text = bytes.get(start..end).ok_or_else(|| {
        format!(
            "truncated header: {header_len} bytes promised, {} present",
            bytes.len().saturating_sub(start)
        )
    })?;
    let text = if utf8 {
        std::str::from_utf8(text).map_err(|_| "header is not UTF-8".to_string())?
    } else {
        if !text.is_ascii() {
            return Err("header is not ASCII".into());
        }
        std::str::from_utf8(text).map_err(|_| "header is not ASCII".to_string())?
    };
    Ok((parse_header(text)?, end))
}

/// A value of the header dict.
#[derive(Debug)]
enum Lit {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// Parses `{'descr': ..., 'fortran_order': ..., 'shape': (...), }`.
fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = match p.literal()? {
            Lit::Str(k) => k,
            other => return Err(format!("header key {other:?} is not a string")),
        };
        p.ws();
        p.expect(b':')?;
        p.ws();
        let value = p.literal()?;
        match (key.as_str(), value) {
            ("descr", Lit::Str(d)) => descr = Some(d),
            ("fortran_order", Lit::Bool(b)) => fortran = Some(b),
            ("shape", Lit::Tuple(s)) => shape = Some(s),
            (k @ ("descr" | "fortran_order" | "shape"), v) => {
                return Err(format!("header field {k:?} has a bad value {v:?}"));
            }
            (k, _) => return Err(format!("unknown header field {k:?}")),
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b'}')?;
            break;
        }
    }
    let descr = descr.ok_or("header has no 'descr'")?;
    let (dtype, swapped) = parse_descr(&descr)?;
    Ok(Header {
        dtype,
        swapped,
        fortran: fortran.ok_or("header has no 'fortran_order'")?,
        shape: shape.ok_or("header has no 'shape'")?,
    })
}

/// `'<f4'` → (float32, not swapped) on a little-endian host.
fn parse_descr(d: &str) -> Result<(DType, bool), String> {
    let (order, code) = match d.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => d.split_at(1),
        _ => ("=", d),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "u1" => DType::UInt8,
        "u2" => DType::UInt16,
        "u4" => DType::UInt32,
        "u8" => DType::UInt64,
        "i1" => DType::Int8,
        "i2" => DType::Int16,
        "i4" => DType::Int32,
        "i8" => DType::Int64,
        "f2" => DType::Float16,
        "f4" => DType::Float32,
        "f8" => DType::Float64,
        "c8" => DType::Complex64,
        "V2" => DType::BFloat16,
        _ => return Err(format!("unsupported dtype descriptor {d:?}")),
    };
    let big_host = cfg!(target_endian = "big");
    let swapped = dtype.size() > 1
        && match order {
            "<" => big_host,
            ">" => !big_host,
            _ => false,
        };
    Ok((dtype, swapped))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!(
                "bad header: expected {:?} at byte {}",
                c as char, self.i
            ))
        }
    }
    fn literal(&mut self) -> Result<Lit, String> {
        match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.s.get(self.i).is_some_and(|&c| c != q) {
                    self.i += 1;
                }
                let body = self.s.get(start..self.i).ok_or("unterminated string")?;
                self.expect(q)?;
                Ok(Lit::Str(String::from_utf8_lossy(body).into_owned()))
            }
            Some(b'(') => {
                self.i += 1;
                let mut dims = vec![];
                loop {
                    self.ws();
                    if self.eat(b')') {
                        break;
                    }
                    dims.push(self.int()?);
                    self.ws();
                    if !self.eat(b',') {
                        self.ws();
                        self.expect(b')')?;
                        break;
                    }
                }
                Ok(Lit::Tuple(dims))
            }
            _ if self.s[self.i..].starts_with(b"True") => {
                self.i += 4;
                Ok(Lit::Bool(true))
            }
            _ if self.s[self.i..].starts_with(b"False") => {
                self.i += 5;
                Ok(Lit::Bool(false))
            }
            _ => Err(format!("bad header: unexpected value at byte {}", self.i)),
        }
    }
    fn int(&mut self) -> Result<usize, String> {
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        // `L` suffixes come from Python 2's numpy.
        let digits = &self.s[start..self.i];
        self.eat(b'L');
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse::<usize>().ok())
            .ok_or_else(|| format!("bad header: bad dimension at byte {start}"))
    }
}

/// The descriptor ferrox writes for `dtype` (little-endian).
fn descr_of(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::UInt8 => "|u1",
        DType::UInt16 => "<u2",
        DType::UInt32 => "<u4",
        DType::UInt64 => "<u8",
        DType::Int8 => "|i1",
        DType::Int16 => "<i2",
        DType::Int32 => "<i4",
        DType::Int64 => "<i8",
        DType::Float16 => "<f2",
        DType::BFloat16 => "<V2",
        DType::Float32 => "<f4",
        DType::Float64 => "<f8",
        DType::Complex64 => "<c8",
    }
}

/// The header bytes (magic, version, length, dict, padding) for an array.
fn header_bytes(dtype: DType, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {dims}, }}",
        descr_of(dtype)
    );
    // The dict, newline included, padded so the data starts 64-aligned
    // after a prefix of magic, version and length. Version 1.0 has a 2-byte
    // length; longer headers (absurdly many dimensions) need 2.0.
    let padded =
        |prefix: usize| (prefix + dict.len() + 1).div_ceil(HEADER_ALIGN) * HEADER_ALIGN - prefix;
    let v1 = padded(MAGIC.len() + 4) <= u16::MAX as usize;
    let prefix = MAGIC.len() + 2 + if v1 { 2 } else { 4 };
    let total = prefix + padded(prefix);
    dict.extend(std::iter::repeat_n(' ', total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut out = MAGIC.to_vec();
    let len = dict.len();
    if v1 {
        out.extend([1, 0]);
        out.extend((len as u16).to_le_bytes());
    } else {
        out.extend([2, 0]);
        out.extend((len as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out
}

/// Writes `array` as an `.npy` file to `w` (row-major, little-endian).
///
/// ```
/// let mut bytes = vec![];
/// ferrox::io::npy::write(&mut bytes, &ferrox::zeros(&[2, 2], ferrox::DType::Float32)?)?;
/// assert_eq!(&bytes[..6], b"\x93NUMPY");
/// assert_eq!(bytes.len(), 128 + 16);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn write(w: &mut impl Write, array: &Array) -> Result<()> {
    let op = "save";
    let data = super::contiguous_bytes(array)?;
    put(w, op, &header_bytes(array.dtype(), array.shape()))?;
    put(w, op, data.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_numpy_writes_parse() {
        let h =
            parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").unwrap();
        assert_eq!(h.shape, vec![2, 3]);
        assert_eq!(h.dtype, DType::Float32);
        let h = parse_header("{'shape': (), 'fortran_order': True, 'descr': '>i8'}").unwrap();
        assert!(h.fortran && h.swapped && h.shape.is_empty());
        let h = parse_header("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }").unwrap();
        assert_eq!(h.shape, vec![5]);
    }

    #[test]
    fn bad_headers_are_errors() {
        for bad in [
            "",
            "{",
            "{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
        ] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn header_is_padded_to_64() {
        for shape in [vec![], vec![1], vec![3, 4, 5]] {
            let h = header_bytes(DType::Float32, &shape);
            assert_eq!(h.len() % 64, 0);
            let (parsed, start) = read_header(&h).unwrap();
            assert_eq!(start, h.len());
            assert_eq!(parsed.shape, shape);
        }
    }
}
