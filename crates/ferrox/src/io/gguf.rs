//! llama.cpp's `.gguf` (versions 2 and 3): a header (magic `GGUF`, version,
//! tensor and key-value counts), typed key-value metadata, tensor
//! descriptions (name, dimensions innermost first, ggml type, offset), then
//! the aligned tensor data.
//!
//! Hand-written: no Rust crate for gguf is dominant or small, and the
//! format is a flat sequence of little-endian fields, so a reader that
//! checks each length against the bytes that remain is short. Every count
//! read from the file (strings, arrays, tensors, dimensions) is bounded by
//! the bytes left before anything is allocated, nesting of arrays is
//! limited to [`MAX_DEPTH`], tensor ranges must lie in the file and not
//! overlap.
//!
//! Tensor types, and what they load as:
//!
//! | ggml type | id | loads as |
//! |---|---|---|
//! | F32, F16, BF16, F64 | 0, 1, 30, 28 | float32, float16, bfloat16, float64 (views of the file) |
//! | I8, I16, I32, I64 | 24, 25, 26, 27 | int8, int16, int32, int64 (views) |
//! | Q4_0, Q4_1, Q8_0 | 2, 3, 8 | MLX's packed affine triplet (below) |
//! | Q5_0, Q5_1, Q8_1 | 6, 7, 9 | float32, dequantised when evaluated |
//! | Q2_K, Q4_K, Q5_K, Q6_K, Q8_K | 10, 12, 13, 14, 15 | float32, dequantised when evaluated |
//! | Q3_K, IQ* and others | | an `Unsupported` error naming the type |
//!
//! As in MLX, a Q4_0, Q4_1 or Q8_0 tensor `NAME.weight` loads as three
//! arrays that [`dequantize`](crate::ops::quantized::dequantize) and
//! [`quantized_matmul`](crate::ops::quantized::quantized_matmul) take with
//! `group_size=32` (the block) and 4 or 8 bits: `NAME.weight` (uint32
//! codes, packed as `quantize` packs them), `NAME.scales` and
//! `NAME.biases` (float16, one per block: Q4_0 `d, -8d`; Q4_1 `d, m`; Q8_0
//! `d, -128d`, its signed codes shifted by 128). A name without the
//! `.weight` suffix gets `.scales` and `.biases` appended whole (MLX cuts
//! seven characters off whatever the name is). The other quantized types
//! load dequantised
//! (MLX has no packed form for them either). Saving writes the eight plain types
//! above; other dtypes (bool, unsigned, complex64) are dtype errors, as
//! gguf has no tensor type for them.
//!
//! Metadata keeps every value type exactly ([`GgufValue`]); strings that are
//! not UTF-8 load with replacement characters.

use super::Arrays;
use super::atomic::put;
use super::source::{Encoding, Order, Source, Tensor};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::array::Array;
use half::f16;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 4] = b"GGUF";
/// The alignment of tensor data unless `general.alignment` says otherwise.
const DEFAULT_ALIGNMENT: usize = 32;
const ALIGNMENT_KEY: &str = "general.alignment";
/// Deepest nesting of metadata arrays accepted (gguf files use one level).
pub const MAX_DEPTH: usize = 8;
/// Most dimensions of a tensor (ggml has 4; gguflib, MLX's writer, 8).
const MAX_DIMS: usize = 8;

/// The type of a metadata value, with gguf's numbering.
#[allow(missing_docs)] // each variant is named after what it denotes
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl GgufType {
    fn from_id(id: u32) -> Option<GgufType> {
        use GgufType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }
    /// The fewest bytes a value of this type takes (bounds array counts).
    fn min_bytes(self) -> usize {
        use GgufType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

/// A metadata value of a gguf file.
///
/// ```
/// use ferrox::io::{GgufType, GgufValue};
/// let v = GgufValue::Array(GgufType::String, vec![GgufValue::String("a".into())]);
/// assert_eq!(v.value_type(), GgufType::Array);
/// ```
#[allow(missing_docs)] // each variant is named after what it holds
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    /// Values all of the given element type (kept for empty arrays too).
    Array(GgufType, Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    /// The value's type.
    pub fn value_type(&self) -> GgufType {
        use GgufValue as V;
        match self {
            V::U8(_) => GgufType::U8,
            V::I8(_) => GgufType::I8,
            V::U16(_) => GgufType::U16,
            V::I16(_) => GgufType::I16,
            V::U32(_) => GgufType::U32,
            V::I32(_) => GgufType::I32,
            V::F32(_) => GgufType::F32,
            V::Bool(_) => GgufType::Bool,
            V::String(_) => GgufType::String,
            V::Array(..) => GgufType::Array,
            V::U64(_) => GgufType::U64,
            V::I64(_) => GgufType::I64,
            V::F64(_) => GgufType::F64,
        }
    }
}

/// A quantized ggml block format (dequantised to float32 on evaluation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)] // ggml's names
pub(crate) enum Quant {
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
}

/// What a ggml tensor type id is.
enum TensorKind {
    Plain(DType),
    Quantized(Quant),
}

fn tensor_kind(id: u32) -> std::result::Result<TensorKind, String> {
    use TensorKind::*;
    Ok(match id {
        0 => Plain(DType::Float32),
        1 => Plain(DType::Float16),
        2 => Quantized(Quant::Q4_0),
        3 => Quantized(Quant::Q4_1),
        6 => Quantized(Quant::Q5_0),
        7 => Quantized(Quant::Q5_1),
        8 => Quantized(Quant::Q8_0),
        9 => Quantized(Quant::Q8_1),
        10 => Quantized(Quant::Q2_K),
        12 => Quantized(Quant::Q4_K),
        13 => Quantized(Quant::Q5_K),
        14 => Quantized(Quant::Q6_K),
        15 => Quantized(Quant::Q8_K),
        24 => Plain(DType::Int8),
        25 => Plain(DType::Int16),
        26 => Plain(DType::Int32),
        27 => Plain(DType::Int64),
        28 => Plain(DType::Float64),
        30 => Plain(DType::BFloat16),
        11 => return Err("ggml type 11 (Q3_K) is not supported".into()),
        16..=23 | 29 => return Err(format!("ggml type {id} (an IQ type) is not supported")),
        _ => return Err(format!("unknown ggml type {id}")),
    })
}

fn tensor_type_id(d: DType) -> Option<u32> {
    Some(match d {
        DType::Float32 => 0,
        DType::Float16 => 1,
        DType::Int8 => 24,
        DType::Int16 => 25,
        DType::Int32 => 26,
        DType::Int64 => 27,
        DType::Float64 => 28,
        DType::BFloat16 => 30,
        _ => return None,
    })
}

fn half(b: &[u8], i: usize) -> f32 {
    f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Q4_K and Q5_K pack eight 6-bit (scale, min) pairs into 12 bytes.
fn scale_min_k4(j: usize, q: &[u8]) -> (f32, f32) {
    if j < 4 {
        ((q[j] & 63) as f32, (q[j + 4] & 63) as f32)
    } else {
        let sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        let m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
        (sc as f32, m as f32)
    }
}

impl Quant {
    /// (elements, bytes) of one block.
    fn block(self) -> (usize, usize) {
        match self {
            Quant::Q4_0 => (32, 18),
            Quant::Q4_1 => (32, 20),
            Quant::Q5_0 => (32, 22),
            Quant::Q5_1 => (32, 24),
            Quant::Q8_0 => (32, 34),
            Quant::Q8_1 => (32, 36),
            Quant::Q2_K => (256, 84),
            Quant::Q4_K => (256, 144),
            Quant::Q5_K => (256, 176),
            Quant::Q6_K => (256, 210),
            Quant::Q8_K => (256, 292),
        }
    }

    /// The bits of the affine codes a type loads as (MLX's packed triplet),
    /// or `None` when it loads dequantised.
    fn packs_as_affine(self) -> Option<usize> {
        match self {
            Quant::Q4_0 | Quant::Q4_1 => Some(4),
            Quant::Q8_0 => Some(8),
            _ => None,
        }
    }

    /// Bytes of `numel` elements; `None` unless whole blocks.
    pub(crate) fn byte_len(self, numel: usize) -> Option<usize> {
        let (n, b) = self.block();
        (numel % n == 0).then(|| (numel / n).checked_mul(b))?
    }

    /// Dequantises whole blocks of `src` into `out` (`out.len()` elements).
    pub(crate) fn dequantize(self, src: &[u8], out: &mut [f32]) -> Result<()> {
        let (n, b) = self.block();
        if out.len() % n != 0 || src.len() != out.len() / n * b {
            return Err(Error::runtime(
                "load_gguf",
                format!("{self:?}: {} bytes for {} elements", src.len(), out.len()),
            ));
        }
        for (x, y) in src.chunks_exact(b).zip(out.chunks_exact_mut(n)) {
            self.block_into(x, y);
        }
        Ok(())
    }

    /// One block: `x` has exactly the block's bytes, `y` its elements.
    fn block_into(self, x: &[u8], y: &mut [f32]) {
        match self {
            Quant::Q4_0 | Quant::Q4_1 => {
                let d = half(x, 0);
                let (m, qs, bias) = match self {
                    Quant::Q4_0 => (0.0, &x[2..18], -8.0),
                    _ => (half(x, 2), &x[4..20], 0.0),
                };
                for (j, &q) in qs.iter().enumerate() {
                    y[j] = ((q & 0xF) as f32 + bias) * d + m;
                    y[j + 16] = ((q >> 4) as f32 + bias) * d + m;
                }
            }
            Quant::Q5_0 | Quant::Q5_1 => {
                let d = half(x, 0);
                let (m, rest, bias) = match self {
                    Quant::Q5_0 => (0.0, &x[2..], -16.0),
                    _ => (half(x, 2), &x[4..], 0.0),
                };
                let qh = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
                let qs = &rest[4..20];
                for (j, &q) in qs.iter().enumerate() {
                    let h0 = ((qh >> j) & 1) << 4;
                    let h1 = ((qh >> (j + 16)) & 1) << 4;
                    y[j] = (((q & 0xF) as u32 | h0) as f32 + bias) * d + m;
                    y[j + 16] = (((q >> 4) as u32 | h1) as f32 + bias) * d + m;
                }
            }
            Quant::Q8_0 | Quant::Q8_1 => {
                let d = half(x, 0);
                let qs = if self == Quant::Q8_0 {
                    &x[2..]
                } else {
                    &x[4..]
                };
                for (v, &q) in y.iter_mut().zip(qs) {
                    *v = (q as i8) as f32 * d;
                }
            }
            Quant::Q8_K => {
                let d = f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
                for (v, &q) in y.iter_mut().zip(&x[4..260]) {
                    *v = (q as i8) as f32 * d;
                }
            }
            Quant::Q2_K => {
                let (scales, qs) = (&x[..16], &x[16..80]);
                let (d, dmin) = (half(x, 80), half(x, 82));
                let mut k = 0;
                for half_block in 0..2 {
                    let q = &qs[half_block * 32..half_block * 32 + 32];
                    for shift in [0, 2, 4, 6] {
                        for part in 0..2 {
                            let sc = scales[half_block * 8 + shift + part];
                            let (dl, ml) = (d * (sc & 0xF) as f32, dmin * (sc >> 4) as f32);
                            for &b in &q[part * 16..part * 16 + 16] {
                                y[k] = dl * ((b >> shift) & 3) as f32 - ml;
                                k += 1;
                            }
                        }
                    }
                }
            }
            Quant::Q4_K | Quant::Q5_K => {
                let (d, dmin) = (half(x, 0), half(x, 2));
                let scales = &x[4..16];
                let (qh, ql) = match self {
                    Quant::Q5_K => (Some(&x[16..48]), &x[48..176]),
                    _ => (None, &x[16..144]),
                };
                for g in 0..4 {
                    let q = &ql[g * 32..g * 32 + 32];
                    let (s1, m1) = scale_min_k4(2 * g, scales);
                    let (s2, m2) = scale_min_k4(2 * g + 1, scales);
                    for (l, &b) in q.iter().enumerate() {
                        // Q5_K's fifth bits: bit 2g of qh[l] for the low
                        // nibbles of group g, bit 2g + 1 for the high ones.
                        let (hi_lo, hi_hi) = match qh {
                            Some(h) => (
                                ((h[l] >> (2 * g)) & 1) << 4,
                                ((h[l] >> (2 * g + 1)) & 1) << 4,
                            ),
                            None => (0, 0),
                        };
                        y[g * 64 + l] = d * s1 * ((b & 0xF) | hi_lo) as f32 - dmin * m1;
                        y[g * 64 + 32 + l] = d * s2 * ((b >> 4) | hi_hi) as f32 - dmin * m2;
                    }
                }
            }
            Quant::Q6_K => {
                let (ql, qh, sc) = (&x[..128], &x[128..192], &x[192..208]);
                let d = half(x, 208);
                for h in 0..2 {
                    let (ql, qh, sc) = (&ql[h * 64..], &qh[h * 32..], &sc[h * 8..]);
                    let y = &mut y[h * 128..];
                    // Six-bit values: a nibble of ql plus two bits of qh,
                    // centred on 32; four groups of 32 share each qh byte.
                    let q = |low: u8, bits: u8| (low as i32 | ((bits as i32 & 3) << 4)) - 32;
                    for (l, &h) in qh[..32].iter().enumerate() {
                        let is = l / 16;
                        let q1 = q(ql[l] & 0xF, h);
                        let q2 = q(ql[l + 32] & 0xF, h >> 2);
                        let q3 = q(ql[l] >> 4, h >> 4);
                        let q4 = q(ql[l + 32] >> 4, h >> 6);
                        y[l] = d * (sc[is] as i8) as f32 * q1 as f32;
                        y[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
                        y[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
                        y[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
                    }
                }
            }
        }
    }
}

/// A cursor over the file that checks every read against the end.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

type Parse<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.i
    }
    fn take(&mut self, n: usize, what: &str) -> Parse<&'a [u8]> {
        let s = self
            .i
            .checked_add(n)
            .and_then(|end| self.b.get(self.i..end))
            .ok_or_else(|| format!("truncated at byte {} reading {what}", self.i))?;
        self.i += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self, what: &str) -> Parse<[u8; N]> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u32(&mut self, what: &str) -> Parse<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: &str) -> Parse<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    /// A count of items of at least `min` bytes each, bounded by the bytes left.
    fn count(&mut self, min: usize, what: &str) -> Parse<usize> {
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n.checked_mul(min).is_some_and(|b| b <= self.left()) => Ok(n),
            _ => Err(format!(
                "{what} {n} is more than the {} bytes left can hold",
                self.left()
            )),
        }
    }
    fn string(&mut self, what: &str) -> Parse<String> {
        let n = self.count(1, what)?;
        Ok(String::from_utf8_lossy(self.take(n, what)?).into_owned())
    }
    fn value(&mut self, t: GgufType, depth: usize) -> Parse<GgufValue> {
        use GgufValue as V;
        Ok(match t {
            GgufType::U8 => V::U8(self.array::<1>("u8")?[0]),
            GgufType::I8 => V::I8(self.array::<1>("i8")?[0] as i8),
            GgufType::U16 => V::U16(u16::from_le_bytes(self.array("u16")?)),
            GgufType::I16 => V::I16(i16::from_le_bytes(self.array("i16")?)),
            GgufType::U32 => V::U32(self.u32("u32")?),
            GgufType::I32 => V::I32(i32::from_le_bytes(self.array("i32")?)),
            GgufType::F32 => V::F32(f32::from_le_bytes(self.array("f32")?)),
            GgufType::U64 => V::U64(self.u64("u64")?),
            GgufType::I64 => V::I64(i64::from_le_bytes(self.array("i64")?)),
            GgufType::F64 => V::F64(f64::from_le_bytes(self.array("f64")?)),
            GgufType::Bool => match self.array::<1>("bool")?[0] {
                0 => V::Bool(false),
                1 => V::Bool(true),
                b => return Err(format!("bool value {b} at byte {}", self.i - 1)),
            },
            GgufType::String => V::String(self.string("string length")?),
            GgufType::Array => {
                if depth >= MAX_DEPTH {
                    return Err(format!("arrays nested deeper than {MAX_DEPTH}"));
                }
                let id = self.u32("array element type")?;
                let elem = GgufType::from_id(id)
                    .ok_or_else(|| format!("unknown array element type {id}"))?;
                let n = self.count(elem.min_bytes(), "array length")?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(elem, depth + 1)?);
                }
                V::Array(elem, items)
            }
        })
    }
}

/// Loads a `.gguf` file: its tensors (quantized ones dequantised to
/// float32, lazily) and its metadata.
///
/// ```
/// use ferrox::io::GgufValue;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("t.gguf");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("t".into(), ferrox::ones(&[4, 2], ferrox::DType::Int32)?);
/// let meta = std::collections::BTreeMap::from([("n".to_string(), GgufValue::U64(7))]);
/// ferrox::io::save_gguf(&path, &arrays, &meta)?;
/// let (loaded, metadata) = ferrox::io::gguf::load(&path)?;
/// assert_eq!(loaded["t"].shape(), &[4, 2]);
/// assert_eq!(metadata["n"], GgufValue::U64(7));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<(Arrays, BTreeMap<String, GgufValue>)> {
    load_source(&Source::open(path.as_ref(), "gguf")?)
}

/// One tensor description. An unsupported type is reported only once
/// the rest of the file parsed, so that a broken file says what is broken.
struct Info {
    name: String,
    shape: Vec<usize>,
    kind: std::result::Result<TensorKind, String>,
    offset: usize,
}

pub(crate) fn load_source(src: &Source) -> Result<(Arrays, BTreeMap<String, GgufValue>)> {
    let (meta, infos, data_start) = parse(src.bytes()).map_err(|m| src.bad(m))?;
    let unsupported = |m: String| Error::unsupported(&src.op, format!("{}: {m}", src.name));
    // Ranges must lie in the file and not overlap.
    let mut spans = Vec::with_capacity(infos.len());
    let mut arrays = Arrays::new();
    for info in infos {
        let kind = info.kind.map_err(unsupported)?;
        let (dtype, encoding) = match kind {
            TensorKind::Plain(d) => (d, Encoding::Native),
            TensorKind::Quantized(q) if q.packs_as_affine().is_some() => {
                let (start, end) = packed_triplet(
                    src,
                    &info.name,
                    &info.shape,
                    data_start,
                    info.offset,
                    q,
                    &mut arrays,
                )?;
                if end > start {
                    spans.push((start, end, info.name.clone()));
                }
                continue;
            }
            TensorKind::Quantized(q) => {
                let (block, _) = q.block();
                if info.shape.last().is_some_and(|&d| d % block != 0) {
                    return Err(src.bad(format!(
                        "tensor {:?}: innermost dimension {:?} is not a multiple of {q:?}'s block of {block}",
                        info.name,
                        info.shape.last()
                    )));
                }
                (DType::Float32, Encoding::Quantized(q))
            }
        };
        let offset = data_start.checked_add(info.offset).ok_or_else(|| {
            src.bad(format!(
                "tensor {:?}: offset {} overflows",
                info.name, info.offset
            ))
        })?;
        let t = Tensor {
            shape: info.shape,
            dtype,
            offset,
            encoding,
            order: Order::RowMajor,
        };
        let label = format!("tensor {:?}", info.name);
        let nbytes = src.tensor_bytes(&t, &label)?;
        let array = src.array(t, &label)?;
        if nbytes > 0 {
            // In the file (src.array checked), so offset + nbytes does not overflow.
            spans.push((offset, offset + nbytes, info.name.clone()));
        }
        if arrays.insert(info.name.clone(), array).is_some() {
            return Err(src.bad(format!("tensor {:?} appears twice", info.name)));
        }
    }
    spans.sort();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(src.bad(format!("tensors {:?} and {:?} overlap", w[0].2, w[1].2)));
    }
    Ok((arrays, meta))
}

/// Loads a Q4_0, Q4_1 or Q8_0 tensor as MLX's `(weight, scales, biases)`
/// (see the module docs) into `arrays`; returns the tensor's byte range.
fn packed_triplet(
    src: &Source,
    name: &str,
    shape: &[usize],
    data_start: usize,
    offset: usize,
    q: Quant,
    arrays: &mut Arrays,
) -> Result<(usize, usize)> {
    let label = format!("tensor {:?}", name);
    let Some(bits) = q.packs_as_affine() else {
        return Err(Error::runtime(&src.op, "internal: not a packed type"));
    };
    let (block, block_bytes) = q.block();
    let cols = shape.last().copied().unwrap_or(1);
    if cols % block != 0 {
        return Err(src.bad(format!(
            "{label}: innermost dimension {cols} is not a multiple of {q:?}'s block of {block}"
        )));
    }
    let numel = crate::graph::layout::checked_numel(&src.op, shape)
        .map_err(|_| src.bad(format!("{label}: shape {:?} is too large", shape)))?;
    let blocks = numel / block;
    let start = data_start
        .checked_add(offset)
        .ok_or_else(|| src.bad(format!("{label}: offset {} overflows", offset)))?;
    let end = blocks
        .checked_mul(block_bytes)
        .and_then(|n| start.checked_add(n))
        .filter(|&e| e <= src.bytes().len())
        .ok_or_else(|| src.bad(format!("{label}: the data runs past the end of the file")))?;
    let bytes = &src.bytes()[start..end];
    let mut words = vec![0u32; blocks * block * bits / 32];
    let mut scales = Vec::with_capacity(blocks);
    let mut biases = Vec::with_capacity(blocks);
    for (x, w) in bytes
        .chunks_exact(block_bytes)
        .zip(words.chunks_exact_mut(block * bits / 32))
    {
        let d = f16::from_le_bytes([x[0], x[1]]);
        scales.push(d);
        let code = |i: usize| -> u32 {
            match q {
                // ggml: byte j holds element j (low nibble) and j + 16.
                Quant::Q4_0 | Quant::Q4_1 => {
                    let b = x[if q == Quant::Q4_0 { 2 } else { 4 } + i % 16];
                    (if i < 16 { b & 15 } else { b >> 4 }) as u32
                }
                // Signed codes, shifted into 0..256.
                _ => (x[2 + i] ^ 0x80) as u32,
            }
        };
        for i in 0..block {
            w[i * bits / 32] |= code(i) << ((i * bits) % 32);
        }
        biases.push(match q {
            Quant::Q4_0 => f16::from_f32(-8.0 * d.to_f32()),
            Quant::Q4_1 => f16::from_le_bytes([x[2], x[3]]),
            _ => f16::from_f32(-128.0 * d.to_f32()),
        });
    }
    let mut wshape = shape.to_vec();
    let mut sshape = shape.to_vec();
    if let (Some(w), Some(s)) = (wshape.last_mut(), sshape.last_mut()) {
        *w = cols * bits / 32;
        *s = cols / block;
    }
    let prefix = name.strip_suffix(".weight").unwrap_or(name);
    let entries = [
        (name.to_string(), Array::from_slice(&words, &wshape)?),
        (
            format!("{prefix}.scales"),
            Array::from_slice(&scales, &sshape)?,
        ),
        (
            format!("{prefix}.biases"),
            Array::from_slice(&biases, &sshape)?,
        ),
    ];
    for (name, a) in entries {
        if arrays.insert(name.clone(), a).is_some() {
            return Err(src.bad(format!(
                "tensor {name:?} appears twice (a quantized tensor's scales or biases share a name with another tensor)"
            )));
        }
    }
    Ok((start, end))
}

type Parsed = (BTreeMap<String, GgufValue>, Vec<Info>, usize);

/// Header, metadata and tensor descriptions; the data's offset.
fn parse(b: &[u8]) -> Parse<Parsed> {
    let mut r = Reader { b, i: 0 };
    if r.take(4, "magic").ok() != Some(MAGIC.as_slice()) {
        return Err("not a gguf file (bad magic)".into());
    }
    let version = r.u32("version")?;
    if !(2..=3).contains(&version) {
        return Err(format!("unsupported gguf version {version} (2 and 3 are)"));
    }
    // Each tensor description takes at least 8 + 4 + 4 + 8 bytes, each
    // key-value pair at least 8 + 4 + 1.
    let n_tensors = r.count(24, "tensor count")?;
    let n_kv = r.count(13, "metadata count")?;
    let mut meta = BTreeMap::new();
    for _ in 0..n_kv {
        let key = r.string("key length")?;
        let id = r.u32("value type")?;
        let t =
            GgufType::from_id(id).ok_or_else(|| format!("key {key:?}: unknown value type {id}"))?;
        let v = r.value(t, 0).map_err(|m| format!("key {key:?}: {m}"))?;
        if meta.insert(key.clone(), v).is_some() {
            return Err(format!("key {key:?} appears twice"));
        }
    }
    let alignment = match meta.get(ALIGNMENT_KEY) {
        None => DEFAULT_ALIGNMENT,
        Some(GgufValue::U32(a)) if a.is_power_of_two() => *a as usize,
        Some(v) => return Err(format!("{ALIGNMENT_KEY} is {v:?}, not a power of two u32")),
    };
    let mut infos = Vec::with_capacity(n_tensors);
    for _ in 0..n_tensors {
        let name = r.string("tensor name length")?;
        let n_dims = r.u32("dimension count")? as usize;
        if n_dims > MAX_DIMS {
            return Err(format!(
                "tensor {name:?} has {n_dims} dimensions (at most {MAX_DIMS})"
            ));
        }
        let mut shape = Vec::with_capacity(n_dims);
        for _ in 0..n_dims {
            let d = r.u64("dimension")?;
            shape.push(
                usize::try_from(d)
                    .map_err(|_| format!("tensor {name:?}: dimension {d} too large"))?,
            );
        }
        // ggml lists the innermost dimension first.
        shape.reverse();
        let kind = tensor_kind(r.u32("tensor type")?);
        let offset = r.u64("tensor offset")?;
        let offset = usize::try_from(offset)
            .map_err(|_| format!("tensor {name:?}: offset {offset} too large"))?;
        infos.push(Info {
            name,
            shape,
            kind,
            offset,
        });
    }
    let data_start = r.i.div_ceil(alignment) * alignment;
    Ok((meta, infos, data_start))
}

fn put_str(w: &mut impl Write, op: &str, s: &str) -> Result<()> {
    put(w, op, &(s.len() as u64).to_le_bytes())?;
    put(w, op, s.as_bytes())
}

fn put_value(w: &mut impl Write, op: &str, key: &str, v: &GgufValue) -> Result<()> {
    use GgufValue as V;
    match v {
        V::U8(x) => put(w, op, &[*x]),
        V::I8(x) => put(w, op, &x.to_le_bytes()),
        V::U16(x) => put(w, op, &x.to_le_bytes()),
        V::I16(x) => put(w, op, &x.to_le_bytes()),
        V::U32(x) => put(w, op, &x.to_le_bytes()),
        V::I32(x) => put(w, op, &x.to_le_bytes()),
        V::F32(x) => put(w, op, &x.to_le_bytes()),
        V::Bool(x) => put(w, op, &[u8::from(*x)]),
        V::String(x) => put_str(w, op, x),
        V::U64(x) => put(w, op, &x.to_le_bytes()),
        V::I64(x) => put(w, op, &x.to_le_bytes()),
        V::F64(x) => put(w, op, &x.to_le_bytes()),
        V::Array(t, items) => {
            if let Some(bad) = items.iter().find(|i| i.value_type() != *t) {
                return Err(Error::value(
                    op,
                    format!(
                        "metadata {key:?}: an array of {t:?} holds a {:?}",
                        bad.value_type()
                    ),
                ));
            }
            put(w, op, &(*t as u32).to_le_bytes())?;
            put(w, op, &(items.len() as u64).to_le_bytes())?;
            items.iter().try_for_each(|i| put_value(w, op, key, i))
        }
    }
}

fn padding(w: &mut impl Write, op: &str, at: usize, alignment: usize) -> Result<usize> {
    let pad = at.div_ceil(alignment) * alignment - at;
    put(w, op, &vec![0u8; pad])?;
    Ok(at + pad)
}

/// Writes `arrays` and `metadata` as a gguf (version 3) file to `w`. The
/// tensor data is aligned to `general.alignment` if the metadata has it
/// (a power-of-two u32), else 32.
///
/// ```
/// use ferrox::io::GgufValue;
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("w".into(), ferrox::ones(&[2, 3], ferrox::DType::Float32)?);
/// let meta = std::collections::BTreeMap::from([("general.architecture".to_string(), GgufValue::String("tiny".into()))]);
/// let mut bytes = vec![];
/// ferrox::io::gguf::write(&mut bytes, &arrays, &meta)?;
/// assert_eq!(&bytes[..4], b"GGUF");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn write(
    w: &mut impl Write,
    arrays: &Arrays,
    metadata: &BTreeMap<String, GgufValue>,
) -> Result<()> {
    let op = "save_gguf";
    let alignment = match metadata.get(ALIGNMENT_KEY) {
        None => DEFAULT_ALIGNMENT,
        Some(GgufValue::U32(a)) if a.is_power_of_two() => *a as usize,
        Some(v) => {
            return Err(Error::value(
                op,
                format!("{ALIGNMENT_KEY} must be a power-of-two U32, got {v:?}"),
            ));
        }
    };
    let mut tensors = Vec::with_capacity(arrays.len());
    for (name, a) in arrays {
        let id = tensor_type_id(a.dtype()).ok_or_else(|| {
            Error::new(
                ErrorKind::Dtype,
                op,
                format!(
                    "array {name:?} has dtype {}, which gguf cannot store (float32, float16, \
                     bfloat16, float64, int8, int16, int32, int64)",
                    a.dtype()
                ),
            )
        })?;
        if a.ndim() > MAX_DIMS {
            return Err(Error::value(
                op,
                format!(
                    "array {name:?} has {} dimensions (at most {MAX_DIMS})",
                    a.ndim()
                ),
            ));
        }
        tensors.push((name, a, id, super::contiguous_bytes(a)?));
    }
    // The header is built in memory (it is small) so that its length, and
    // so the padding before the data, is known.
    let mut head: Vec<u8> = Vec::new();
    put(&mut head, op, MAGIC)?;
    put(&mut head, op, &3u32.to_le_bytes())?;
    put(&mut head, op, &(tensors.len() as u64).to_le_bytes())?;
    put(&mut head, op, &(metadata.len() as u64).to_le_bytes())?;
    for (key, v) in metadata {
        put_str(&mut head, op, key)?;
        put(&mut head, op, &(v.value_type() as u32).to_le_bytes())?;
        put_value(&mut head, op, key, v)?;
    }
    let mut offset = 0usize;
    for (name, a, id, bytes) in &tensors {
        put_str(&mut head, op, name)?;
        put(&mut head, op, &(a.ndim() as u32).to_le_bytes())?;
        for &d in a.shape().iter().rev() {
            put(&mut head, op, &(d as u64).to_le_bytes())?;
        }
        put(&mut head, op, &id.to_le_bytes())?;
        put(&mut head, op, &(offset as u64).to_le_bytes())?;
        offset = (offset + bytes.bytes().len()).div_ceil(alignment) * alignment;
    }
    put(w, op, &head)?;
    let mut at = padding(w, op, head.len(), alignment)?;
    let data_start = at;
    for (_, _, _, bytes) in &tensors {
        put(w, op, bytes.bytes())?;
        at = padding(w, op, at + bytes.bytes().len(), alignment)?;
    }
    debug_assert_eq!(at - data_start, offset);
    Ok(())
}
