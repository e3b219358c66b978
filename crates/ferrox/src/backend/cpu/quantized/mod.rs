//! CPU kernels of quantization: packing weights into `bits`-wide codes
//! with one scale (and, for the affine mode, one bias) per group of
//! `group_size` consecutive elements of a row, unpacking them, and the
//! matrix product with a packed matrix.
//!
//! Layout (MLX's): each row of a packed matrix is a little-endian bit
//! stream of `uint32` words; element `i` of the row occupies bits
//! `[i * bits, (i + 1) * bits)`. For 1, 2, 4 and 8 bits this is "8 / 4 / 2 /
//! 1 elements per byte, lowest bits first"; for 3, 5 and 6 bits the codes
//! straddle bytes and words the same way. Every group starts on a word
//! boundary (`group_size * bits` is a multiple of 32).
//!
//! Modes (`QuantMode`): `affine` (`w = scale * q + bias`, scales and biases
//! in the weight's float dtype), and the floating point modes with a shared
//! 8-bit scale per group and no bias: `mxfp4` (e2m1 codes, e8m0 scales,
//! groups of 32), `mxfp8` (e4m3 codes, e8m0 scales, groups of 32), `nvfp4`
//! (e2m1 codes, e4m3 scales, groups of 16).
//!
//! `qmm` never dequantizes the whole matrix: for a few rows of `x` (decode)
//! each task unpacks one group at a time into an L1 buffer and takes dot
//! products (`s * (x . q) + b * sum(x)`), threaded over output columns; for
//! many rows (prefill) each task dequantizes a block of columns into an f32
//! tile and multiplies it with the gemm kernel of `backend::cpu::matmul`.

mod qmv;

use crate::backend::cpu::elementwise::out_storage;
use crate::backend::cpu::matmul::{Epilogue, MatMut, MatRef, gemm_product};
use crate::backend::cpu::parallel::worth_splitting;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::layout::{Data, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec};
use crate::graph::storage::Pod;
use crate::graph::walk::walk;
use half::{bf16, f16};
use pulp::{Simd, WithSimd};
use rayon::prelude::*;
use std::borrow::Cow;

// ---------------------------------------------------------------------------
// Modes and element types
// ---------------------------------------------------------------------------

/// A quantization mode (MLX's `mode=` strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum QuantMode {
    /// `w = scale * q + bias` with `bits`-bit unsigned codes.
    Affine,
    /// e2m1 codes, e8m0 scales, groups of 32.
    Mxfp4,
    /// e4m3 codes, e8m0 scales, groups of 32.
    Mxfp8,
    /// e2m1 codes, e4m3 scales, groups of 16.
    Nvfp4,
}

impl QuantMode {
    /// The mode's name as MLX spells it.
    pub fn name(self) -> &'static str {
        match self {
            QuantMode::Affine => "affine",
            QuantMode::Mxfp4 => "mxfp4",
            QuantMode::Mxfp8 => "mxfp8",
            QuantMode::Nvfp4 => "nvfp4",
        }
    }
    /// The mode's default `(group_size, bits)`.
    pub fn defaults(self) -> (usize, usize) {
        match self {
            QuantMode::Affine => (64, 4),
            QuantMode::Mxfp4 => (32, 4),
            QuantMode::Mxfp8 => (32, 8),
            QuantMode::Nvfp4 => (16, 4),
        }
    }
    /// Whether the mode stores a bias per group.
    pub fn has_biases(self) -> bool {
        self == QuantMode::Affine
    }
}

/// The float element types quantization works on.
pub(crate) trait QFloat: Pod + Copy + Send + Sync + 'static {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    /// A slice of scales or biases of this type.
    fn vals(v: &[Self]) -> Vals<'_>;
}
impl QFloat for f32 {
    fn vals(v: &[Self]) -> Vals<'_> {
        Vals::F32(v)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}
impl QFloat for f16 {
    fn vals(v: &[Self]) -> Vals<'_> {
        Vals::F16(v)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}
impl QFloat for bf16 {
    fn vals(v: &[Self]) -> Vals<'_> {
        Vals::BF16(v)
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}

/// Rounds `v` to `T` and back (one operation of MLX done in `T`).
#[inline(always)]
fn r<T: QFloat>(v: f32) -> f32 {
    T::from_f32(v).to_f32()
}

macro_rules! with_qfloat {
    ($op:expr, $dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            DType::Float32 => {
                type $t = f32;
                $body
            }
            DType::Float16 => {
                type $t = f16;
                $body
            }
            DType::BFloat16 => {
                type $t = bf16;
                $body
            }
            other => Err(Error::dtype(
                $op,
                format!("only float32, float16 and bfloat16 are supported, got {other}"),
            )),
        }
    };
}

fn internal(op: &str, msg: impl std::fmt::Display) -> Error {
    Error::runtime(op, format!("internal: {msg}"))
}

/// The values of `x` in row-major order (borrowed when contiguous).
fn contiguous<'a, T: Pod>(x: &Operand<'a>) -> Cow<'a, [T]> {
    match x.data.as_contiguous::<T>(x.shape) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(x.data.to_vec::<T>(x.shape)),
    }
}

// ---------------------------------------------------------------------------
// Small floats: e2m1, e4m3, e8m0
// ---------------------------------------------------------------------------

/// The e2m1 values of codes 0..16.
pub(crate) const FP4_LUT: [f32; 16] = [
    0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0,
];

/// The value of an e4m3 ("fn") code.
fn e4m3_value(c: u8) -> f32 {
    let (e, m) = (((c >> 3) & 0xf) as i32, (c & 7) as f32);
    let mag = if c & 0x7f == 0x7f {
        f32::NAN
    } else if e == 0 {
        m * 2f32.powi(-9)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    };
    if c & 0x80 != 0 { -mag } else { mag }
}

/// The e4m3 code of `x`: nearest, ties to even, saturating at 448; NaN is
/// `0x7f` with its sign.
fn e4m3_code(x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    if x.is_nan() {
        return 0x7f | sign;
    }
    let a = x.abs().min(448.0);
    // The codes 0..=126 are increasing in value: binary search for the
    // first code not below `a`.
    let (mut lo, mut hi) = (0u8, 126u8);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if e4m3_value(mid) < a {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let up = lo;
    let code = if up == 0 {
        0
    } else {
        let down = up - 1;
        let (dv, uv) = (a - e4m3_value(down), e4m3_value(up) - a);
        if dv < uv || (dv == uv && down % 2 == 0) {
            down
        } else {
            up
        }
    };
    code | sign
}

/// The value of an e8m0 scale code as MLX's kernels read it (a bfloat16
/// with only exponent bits; code 0 is read as the bfloat16 `0x0040`).
fn e8m0_value(s: u8) -> f32 {
    let bits = if s == 0 { 0x40u16 } else { (s as u16) << 7 };
    bf16::from_bits(bits).to_f32()
}

/// The decoded scale of a group for a floating point mode.
fn fp_scale(mode: QuantMode, s: u8) -> f32 {
    if mode == QuantMode::Nvfp4 {
        e4m3_value(s)
    } else {
        e8m0_value(s)
    }
}

/// The table of code values of a floating point mode.
fn code_table(mode: QuantMode) -> [f32; 256] {
    std::array::from_fn(|i| match mode {
        QuantMode::Mxfp8 => e4m3_value(i as u8),
        _ => FP4_LUT[i & 15],
    })
}

// ---------------------------------------------------------------------------
// Bit packing
// ---------------------------------------------------------------------------

/// Code `i` of a word-aligned bit stream of `bits`-bit codes.
#[inline(always)]
fn code_at(words: &[u32], i: usize, bits: usize) -> u32 {
    let p = i * bits;
    let (wi, sh) = (p / 32, p % 32);
    let mut v = (words[wi] as u64) >> sh;
    if sh + bits > 32 {
        v |= (words[wi + 1] as u64) << (32 - sh);
    }
    (v as u32) & ((1u32 << bits) - 1)
}

#[inline(always)]
fn unpack_pow2<const B: usize>(words: &[u32], out: &mut [f32]) {
    let mask = (1u32 << B) - 1;
    for (chunk, &w) in out.chunks_exact_mut(32 / B).zip(words) {
        for (k, o) in chunk.iter_mut().enumerate() {
            // Codes are below 2^8: the signed conversion is exact (and one
            // instruction, where the unsigned one is several).
            *o = ((w >> (k * B)) & mask) as i32 as f32;
        }
    }
}

/// The codes of one group (`words` is the group's words) as f32 into `out`.
#[inline(always)]
fn unpack_group(words: &[u32], bits: usize, out: &mut [f32]) {
    match bits {
        1 => unpack_pow2::<1>(words, out),
        2 => unpack_pow2::<2>(words, out),
        4 => unpack_pow2::<4>(words, out),
        8 => unpack_pow2::<8>(words, out),
        _ => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = code_at(words, i, bits) as i32 as f32;
            }
        }
    }
}

/// Packs `codes` (each below `2^bits`) into `out` (`codes.len() * bits / 32`
/// words).
fn pack_group(codes: &[u32], bits: usize, out: &mut [u32]) {
    out.fill(0);
    for (i, &c) in codes.iter().enumerate() {
        let p = i * bits;
        let (wi, sh) = (p / 32, p % 32);
        out[wi] |= c << sh;
        if sh + bits > 32 {
            out[wi + 1] |= c >> (32 - sh);
        }
    }
}

// ---------------------------------------------------------------------------
// quantize
// ---------------------------------------------------------------------------

/// Groups per parallel task, at least.
const MIN_GROUPS_PER_TASK: usize = 256;

/// Quantizes `w` (float, last dimension divisible by `group_size`) into the
/// outputs `[w_q, scales, biases]` (affine) or `[w_q, scales]`.
pub fn quantize(
    w: &Operand<'_>,
    global_scale: Option<&Operand<'_>>,
    mode: QuantMode,
    group_size: usize,
    bits: usize,
    outs: &[OutSpec<'_>],
) -> Result<Vec<Data>> {
    let op = "quantize";
    let n: usize = w.shape.iter().product();
    if group_size == 0 || n % group_size != 0 || (group_size * bits) % 32 != 0 {
        return Err(internal(op, "bad group size"));
    }
    let groups = n / group_size;
    let wpg = group_size * bits / 32;
    let mut storages = outs
        .iter()
        .map(|o| out_storage(*o))
        .collect::<Result<Vec<_>>>()?;
    let gscale = match global_scale {
        Some(g) => Some(
            contiguous::<f32>(g)
                .first()
                .copied()
                .ok_or_else(|| Error::value(op, "global_scale is empty"))?,
        ),
        None => None,
    };
    with_qfloat!(op, w.dtype, T => {
        let wv = contiguous::<T>(w);
        match (mode, storages.as_mut_slice()) {
            (QuantMode::Affine, [q, s, b]) => {
                let (q, s, b) = (q.as_mut_slice::<u32>(), s.as_mut_slice::<T>(), b.as_mut_slice::<T>());
                if q.len() != groups * wpg || s.len() != groups || b.len() != groups {
                    return Err(internal(op, "output sizes"));
                }
                q.par_chunks_mut(wpg)
                    .zip(s.par_iter_mut().zip(b.par_iter_mut()))
                    .enumerate()
                    .with_min_len(MIN_GROUPS_PER_TASK)
                    .for_each(|(g, (qg, (sg, bg)))| {
                        let (sc, bi) = affine_group::<T>(
                            &wv[g * group_size..(g + 1) * group_size], bits, qg);
                        *sg = T::from_f32(sc);
                        *bg = T::from_f32(bi);
                    });
            }
            (QuantMode::Affine, _) => return Err(internal(op, "affine has three outputs")),
            (_, [q, s]) => {
                let (q, s) = (q.as_mut_slice::<u32>(), s.as_mut_slice::<u8>());
                if q.len() != groups * wpg || s.len() != groups {
                    return Err(internal(op, "output sizes"));
                }
                q.par_chunks_mut(wpg)
                    .zip(s.par_iter_mut())
                    .enumerate()
                    .with_min_len(MIN_GROUPS_PER_TASK)
                    .for_each(|(g, (qg, sg))| {
                        *sg = fp_group::<T>(
                            &wv[g * group_size..(g + 1) * group_size], mode, gscale, qg);
                    });
            }
            _ => return Err(internal(op, "floating point modes have two outputs")),
        }
        Ok::<(), Error>(())
    })?;
    Ok(storages
        .into_iter()
        .zip(outs)
        .map(|(s, o)| Data::contiguous(s, o.shape))
        .collect())
}

/// MLX's affine quantization of one group into `out`; returns the scale and
/// bias (in f32, before rounding to the weight's dtype).
fn affine_group<T: QFloat>(w: &[T], bits: usize, out: &mut [u32]) -> (f32, f32) {
    let n_bins = ((1u32 << bits) - 1) as f32;
    let eps = 1e-7f32;
    let (mut w_min, mut w_max) = (f32::INFINITY, f32::NEG_INFINITY);
    for &v in w {
        let v = v.to_f32();
        // std::max / std::min: the first argument unless the second wins.
        if w_max < v {
            w_max = v;
        }
        if v < w_min {
            w_min = v;
        }
    }
    let spread = (w_max - w_min) / n_bins;
    let mut scale = if spread < eps { eps } else { spread };
    let mut bias = 0.0f32;
    if bits == 1 {
        // One bit: the codes are the group's minimum and maximum.
        bias = w_min;
    } else {
        // The edge of larger magnitude is represented exactly: the scale's
        // sign points from it into the group and the zero point is snapped
        // to a whole code.
        let mask = w_min.abs() > w_max.abs();
        if !mask {
            scale = -scale;
        }
        let edge = if mask { w_min } else { w_max };
        let q0 = (edge / scale).round_ties_even();
        if q0 != 0.0 {
            scale = edge / q0;
            bias = edge;
        }
    }
    let mut codes = [0u32; 128];
    for (c, &v) in codes.iter_mut().zip(w) {
        let q = ((v.to_f32() - bias) / scale).round_ties_even();
        // Clamp as max(q, 0) then min(q, n_bins), NaN becoming 0.
        let q = if q > 0.0 { q } else { 0.0 };
        let q = if q < n_bins { q } else { n_bins };
        *c = q as u32;
    }
    pack_group(&codes[..w.len()], bits, out);
    (scale, bias)
}

/// Index of the e2m1 value nearest to `v` (the first on ties), as MLX's
/// `argmin(|v - lut|)` with the differences rounded by `round`.
fn nearest_fp4(v: f32, round: impl Fn(f32) -> f32) -> u32 {
    let mut best = 0u32;
    let mut best_d = f32::INFINITY;
    for (i, &l) in FP4_LUT.iter().enumerate() {
        let d = round(round(v - l).abs());
        if d < best_d || (i == 0 && d.is_nan()) {
            best_d = d;
            best = i as u32;
        }
    }
    best
}

/// MLX's floating point quantization of one group (its op-by-op CPU
/// path, with each intermediate rounded to the dtype MLX computes it in);
/// returns the scale code.
fn fp_group<T: QFloat>(w: &[T], mode: QuantMode, gscale: Option<f32>, out: &mut [u32]) -> u8 {
    let maxval = if mode == QuantMode::Mxfp8 { 448.0 } else { 6.0 };
    let mut amax = 0.0f32;
    for &v in w {
        let a = v.to_f32().abs();
        if a > amax || a.is_nan() {
            amax = a;
        }
    }
    let scale_t = r::<T>(amax / maxval);
    let mut codes = [0u32; 32];
    let code;
    if mode == QuantMode::Nvfp4 {
        let encode = match gscale {
            Some(g) => 2688.0f32 / g,
            None => 1.0,
        };
        code = e4m3_code(scale_t * encode);
        let s = r::<T>(e4m3_value(code));
        for (c, &v) in codes.iter_mut().zip(w) {
            // (w / s) in T, times the f32 encoding scale: an f32.
            let q = r::<T>(v.to_f32() / s) * encode;
            *c = nearest_fp4(q, |d| d);
        }
    } else {
        let l = r::<T>(scale_t.log2()).ceil();
        let e = if scale_t == 0.0 {
            0i32
        } else if l.is_finite() {
            l as i32
        } else {
            // An infinite or NaN group: the x86 conversion's integer.
            i32::MIN
        };
        let p = r::<T>(2f32.powi(e));
        // int32 to uint8 wraps, as MLX's cast.
        code = e.wrapping_add(127) as u8;
        for (c, &v) in codes.iter_mut().zip(w) {
            let q = r::<T>(v.to_f32() / p);
            *c = if mode == QuantMode::Mxfp8 {
                e4m3_code(q) as u32
            } else {
                nearest_fp4(q, r::<T>)
            };
        }
    }
    let bits = if mode == QuantMode::Mxfp8 { 8 } else { 4 };
    pack_group(&codes[..w.len()], bits, out);
    code
}

// ---------------------------------------------------------------------------
// dequantize
// ---------------------------------------------------------------------------

/// `w` (packed codes) with its `scales` (and `biases`) as floats of the
/// output's dtype: `scale * q + bias` computed in the scales' dtype
/// (affine; scales and biases share it), or `value(q) * scale` (floating
/// point modes; `global_scale` for nvfp4).
#[allow(clippy::too_many_arguments)]
pub fn dequantize(
    w: &Operand<'_>,
    scales: &Operand<'_>,
    biases: Option<&Operand<'_>>,
    global_scale: Option<&Operand<'_>>,
    mode: QuantMode,
    group_size: usize,
    bits: usize,
    out: OutSpec<'_>,
) -> Result<Data> {
    let op = "dequantize";
    let wv = contiguous::<u32>(w);
    let n: usize = out.shape.iter().product();
    let groups = n / group_size.max(1);
    let wpg = group_size * bits / 32;
    if group_size == 0 || wv.len() != groups * wpg {
        return Err(internal(op, "packed size"));
    }
    let mut storage = out_storage(out)?;
    with_qfloat!(op, out.dtype, T => {
        let dst = storage.as_mut_slice::<T>();
        if mode == QuantMode::Affine {
            let b = biases.ok_or_else(|| internal(op, "affine without biases"))?;
            let (sv, bv) = (contiguous::<T>(scales), contiguous::<T>(b));
            if sv.len() != groups || bv.len() != groups {
                return Err(internal(op, "scale count"));
            }
            dst.par_chunks_mut(group_size)
                .enumerate()
                .with_min_len(MIN_GROUPS_PER_TASK)
                .for_each(|(g, d)| {
                    let mut buf = [0f32; 128];
                    let q = &mut buf[..group_size];
                    unpack_group(&wv[g * wpg..(g + 1) * wpg], bits, q);
                    let (s, b) = (sv[g].to_f32(), bv[g].to_f32());
                    for (o, &c) in d.iter_mut().zip(q.iter()) {
                        *o = T::from_f32(r::<T>(c * s) + b);
                    }
                });
        } else {
            let sv = contiguous::<u8>(scales);
            if sv.len() != groups {
                return Err(internal(op, "scale count"));
            }
            let inv = match global_scale {
                Some(g) => Some(contiguous::<f32>(g).first().copied().ok_or_else(|| {
                    Error::value(op, "global_scale is empty")
                })? / 2688.0),
                None => None,
            };
            let table = code_table(mode);
            dst.par_chunks_mut(group_size)
                .enumerate()
                .with_min_len(MIN_GROUPS_PER_TASK)
                .for_each(|(g, d)| {
                    let ws = &wv[g * wpg..(g + 1) * wpg];
                    let s = if mode == QuantMode::Nvfp4 {
                        let s = r::<T>(e4m3_value(sv[g]));
                        match inv {
                            Some(i) => s * i,
                            None => s,
                        }
                    } else {
                        r::<T>(2f32.powi(sv[g] as i32 - 127))
                    };
                    for (i, o) in d.iter_mut().enumerate() {
                        let v = r::<T>(table[code_at(ws, i, bits) as usize]);
                        *o = T::from_f32(v * s);
                    }
                });
        }
        Ok::<(), Error>(())
    })?;
    Ok(Data::contiguous(storage, out.shape))
}

// ---------------------------------------------------------------------------
// quantized_matmul
// ---------------------------------------------------------------------------

/// Scales or biases as stored (affine: the weight's float dtype), read as
/// f32 where used, so a call converts nothing up front.
#[derive(Clone, Copy)]
pub(crate) enum Vals<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    BF16(&'a [bf16]),
}

impl Vals<'_> {
    #[inline(always)]
    fn get(&self, i: usize) -> f32 {
        match self {
            Vals::F32(v) => v[i],
            Vals::F16(v) => v[i].to_f32(),
            Vals::BF16(v) => v[i].to_f32(),
        }
    }
    fn len(&self) -> usize {
        match self {
            Vals::F32(v) => v.len(),
            Vals::F16(v) => v.len(),
            Vals::BF16(v) => v.len(),
        }
    }
    /// Elements `start..start + out.len()` into `out`.
    #[inline(always)]
    fn copy_into(&self, start: usize, out: &mut [f32]) {
        let r = start..start + out.len();
        match self {
            Vals::F32(v) => out.copy_from_slice(&v[r]),
            Vals::F16(v) => out.iter_mut().zip(&v[r]).for_each(|(o, x)| *o = x.to_f32()),
            Vals::BF16(v) => out.iter_mut().zip(&v[r]).for_each(|(o, x)| *o = x.to_f32()),
        }
    }
}

/// A packed matrix: `rows` rows of `wpr` words, each row `gpr` groups.
struct QMat<'a> {
    words: &'a [u32],
    wpr: usize,
    scales: Vals<'a>,
    biases: Option<Vals<'a>>,
    gpr: usize,
    gs: usize,
    bits: usize,
    table: Option<&'a [f32; 256]>,
}

impl QMat<'_> {
    /// The (unscaled) values of group `g` of row `row` into `out`.
    #[inline(always)]
    fn values(&self, row: usize, g: usize, out: &mut [f32]) {
        let wpg = self.wpr / self.gpr;
        let start = row * self.wpr + g * wpg;
        unpack_group(&self.words[start..start + wpg], self.bits, out);
        if let Some(t) = self.table {
            for v in out.iter_mut() {
                *v = t[*v as usize];
            }
        }
    }
    /// The scales and biases (zeros without) of row `row` (`gpr` each).
    #[inline(always)]
    fn row_scales(&self, row: usize, s: &mut [f32], b: &mut [f32]) {
        self.scales.copy_into(row * self.gpr, s);
        match &self.biases {
            Some(v) => v.copy_into(row * self.gpr, b),
            None => b.fill(0.0),
        }
    }
    #[inline(always)]
    fn scale_bias(&self, row: usize, g: usize) -> (f32, f32) {
        let i = row * self.gpr + g;
        (self.scales.get(i), self.biases.map_or(0.0, |b| b.get(i)))
    }
    /// Elements `[g0 * gs, g1 * gs)` of row `row` dequantized into `out`.
    #[inline(always)]
    fn dequant(&self, row: usize, g0: usize, g1: usize, out: &mut [f32]) {
        for (g, o) in (g0..g1).zip(out.chunks_exact_mut(self.gs)) {
            self.values(row, g, o);
            let (s, b) = self.scale_bias(row, g);
            for v in o.iter_mut() {
                *v = *v * s + b;
            }
        }
    }
}

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] = x[i].mul_add(y[i], acc[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Rows of `x` from which a product dequantizes tiles and uses gemm.
pub(crate) const TILE_ROWS: usize = 16;
/// Output columns per task of the direct (few rows) kernel.
const DIRECT_COLS: usize = 64;

// The loops below run through `WithSimd` structs with `#[inline(always)]`
// bodies, not closures passed to `parallel::simd`: a closure's body was
// compiled as a function of its own, outside pulp's target-feature entry
// point, so nothing in it was vectorised for AVX2 and every `mul_add`
// became a call to `fmaf` (see `qmv.rs` for the measurement).

/// `out[m, n] = sum_k x[m, k] * W[n, k]` (transposed, `W` stored as
/// `[N, K]`) or `sum_k x[m, k] * W[k, n]` (`W` stored as `[K, N]`), for
/// a contiguous f32 `x` (`[M, K]`) and output (`[M, N]`).
fn qmm_f32(
    x: &[f32],
    q: &QMat<'_>,
    m: usize,
    k: usize,
    n: usize,
    transpose: bool,
    out: &mut [f32],
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        out.fill(0.0);
        return Ok(());
    }
    let work = m.saturating_mul(n).saturating_mul(k);
    let parallel = worth_splitting(work);
    if m >= TILE_ROWS {
        return qmm_tiled(x, q, m, k, n, transpose, out, parallel);
    }
    if transpose && qmv::supports(q) {
        return qmv::qmv(x, q, m, k, n, out, parallel);
    }
    let gs = q.gs;
    if transpose {
        // Group sums of x, for the bias term.
        let xs: Vec<f32> = x.chunks_exact(gs).map(|c| c.iter().sum()).collect();
        let mut out_t = vec![0f32; n * m];
        let task = |t: usize, chunk: &mut [f32]| {
            simd_kernel(DirectT {
                x,
                xs: &xs,
                q,
                m,
                k,
                row0: t * DIRECT_COLS,
                out: chunk,
            })
        };
        if parallel {
            out_t
                .par_chunks_mut(DIRECT_COLS * m)
                .enumerate()
                .for_each(|(t, c)| task(t, c));
        } else {
            out_t
                .chunks_mut(DIRECT_COLS * m)
                .enumerate()
                .for_each(|(t, c)| task(t, c));
        }
        for (j, col) in out_t.chunks_exact(m).enumerate() {
            for (i, &v) in col.iter().enumerate() {
                out[i * n + j] = v;
            }
        }
    } else {
        // W is [K, N] with groups along N: a task owns a block of columns.
        let gpb = DIRECT_COLS.div_ceil(gs).max(1);
        let cols = gpb * gs;
        let blocks = n.div_ceil(cols);
        let mut local = vec![0f32; blocks * m * cols];
        let task = |blk: usize, acc: &mut [f32]| {
            simd_kernel(DirectN {
                x,
                q,
                m,
                k,
                g0: blk * gpb,
                g1: (blk * gpb + gpb).min(q.gpr),
                cols,
                acc,
            })
        };
        if parallel {
            local
                .par_chunks_mut(m * cols)
                .enumerate()
                .for_each(|(b, c)| task(b, c));
        } else {
            local
                .chunks_mut(m * cols)
                .enumerate()
                .for_each(|(b, c)| task(b, c));
        }
        for (blk, c) in local.chunks_exact(m * cols).enumerate() {
            let c0 = blk * cols;
            let w = cols.min(n - c0);
            for i in 0..m {
                out[i * n + c0..i * n + c0 + w].copy_from_slice(&c[i * cols..i * cols + w]);
            }
        }
    }
    Ok(())
}

/// Runs `kernel` compiled for the best available instruction set.
#[inline(always)]
fn simd_kernel<K: WithSimd>(kernel: K) -> K::Output {
    pulp::Arch::new().dispatch(kernel)
}

/// Rows `row0..` of a transposed `W` against the `m` rows of `x`, a group
/// at a time (the modes and widths `qmv` does not take); `out` is
/// `[rows, m]`.
struct DirectT<'a> {
    x: &'a [f32],
    xs: &'a [f32],
    q: &'a QMat<'a>,
    m: usize,
    k: usize,
    row0: usize,
    out: &'a mut [f32],
}

impl WithSimd for DirectT<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let DirectT {
            x,
            xs,
            q,
            m,
            k,
            row0,
            out,
        } = self;
        let gs = q.gs;
        let groups = q.gpr;
        let mut buf = [0f32; 128];
        let vals = &mut buf[..gs];
        for (j, o) in out.chunks_exact_mut(m).enumerate() {
            let row = row0 + j;
            for g in 0..groups {
                q.values(row, g, vals);
                let (s, b) = q.scale_bias(row, g);
                for (i, oi) in o.iter_mut().enumerate() {
                    let xg = &x[i * k + g * gs..i * k + (g + 1) * gs];
                    *oi += s * dot(xg, vals) + b * xs[i * groups + g];
                }
            }
        }
    }
}

/// Groups `g0..g1` of every row of a `[K, N]` `W` against the `m` rows of
/// `x`: `acc` (`[m, cols]`) accumulates one row of `W` at a time.
struct DirectN<'a> {
    x: &'a [f32],
    q: &'a QMat<'a>,
    m: usize,
    k: usize,
    g0: usize,
    g1: usize,
    cols: usize,
    acc: &'a mut [f32],
}

impl WithSimd for DirectN<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let DirectN {
            x,
            q,
            m,
            k,
            g0,
            g1,
            cols,
            acc,
        } = self;
        let w = (g1 - g0) * q.gs;
        let mut row = vec![0f32; w];
        for kk in 0..k {
            q.dequant(kk, g0, g1, &mut row);
            for i in 0..m {
                let xv = x[i * k + kk];
                for (a, &v) in acc[i * cols..i * cols + w].iter_mut().zip(&row) {
                    *a = xv.mul_add(v, *a);
                }
            }
        }
    }
}

/// Dequantizes one tile of `W` for the tiled product: rows `c0..c0 + w`
/// (transposed, into `[w, K]`) or columns `c0..c0 + w` (into `[K, w]`).
struct DequantTile<'a> {
    q: &'a QMat<'a>,
    transpose: bool,
    k: usize,
    c0: usize,
    w: usize,
    tile: &'a mut [f32],
}

impl WithSimd for DequantTile<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let DequantTile {
            q,
            transpose,
            k,
            c0,
            w,
            tile,
        } = self;
        if transpose {
            for (j, t) in tile.chunks_exact_mut(k).enumerate() {
                q.dequant(c0 + j, 0, q.gpr, t);
            }
        } else {
            let (g0, g1) = (c0 / q.gs, (c0 + w) / q.gs);
            for (kk, t) in tile.chunks_exact_mut(w).enumerate() {
                q.dequant(kk, g0, g1, t);
            }
        }
    }
}

/// Output columns per dequantized tile of the tiled kernel.
const TILE_COLS: usize = 256;

/// The tiled product: each task dequantizes `TILE_COLS` columns of `W`
/// into an f32 tile and multiplies `x` with it through gemm.
#[allow(clippy::too_many_arguments)]
fn qmm_tiled(
    x: &[f32],
    q: &QMat<'_>,
    m: usize,
    k: usize,
    n: usize,
    transpose: bool,
    out: &mut [f32],
    parallel: bool,
) -> Result<()> {
    let gs = q.gs;
    // Non-transposed tiles are whole groups wide.
    let cols = if transpose {
        TILE_COLS
    } else {
        TILE_COLS.div_ceil(gs) * gs
    };
    let blocks = n.div_ceil(cols);
    let lhs = MatRef::row_major(x, m, k)?;
    let one = |blk: usize, inner_parallel: bool| -> Result<Vec<f32>> {
        let c0 = blk * cols;
        let w = cols.min(n - c0);
        let mut tile = vec![0f32; w * k];
        simd_kernel(DequantTile {
            q,
            transpose,
            k,
            c0,
            w,
            tile: &mut tile,
        });
        let rhs = if transpose {
            MatRef::new(&tile, 0, (k, w), (1, k))?
        } else {
            MatRef::row_major(&tile, k, w)?
        };
        let mut res = vec![0f32; m * w];
        gemm_product(
            MatMut::new(&mut res, m, w, w)?,
            lhs,
            rhs,
            Epilogue::Store,
            inner_parallel,
        )?;
        Ok(res)
    };
    let results: Vec<Vec<f32>> = if parallel && blocks > 1 {
        (0..blocks)
            .into_par_iter()
            .map(|b| one(b, false))
            .collect::<Result<_>>()?
    } else {
        (0..blocks)
            .map(|b| one(b, parallel))
            .collect::<Result<_>>()?
    };
    for (blk, res) in results.iter().enumerate() {
        let c0 = blk * cols;
        let w = cols.min(n - c0);
        for i in 0..m {
            out[i * n + c0..i * n + c0 + w].copy_from_slice(&res[i * w..(i + 1) * w]);
        }
    }
    Ok(())
}

/// An operand as one row-major matrix per batch entry of `batch` (the
/// operand's batch dimensions broadcast to it): the data (borrowed when the
/// matrices are row-contiguous) and each entry's offset.
fn stack<'a, T: Pod>(x: &Operand<'a>, batch: &[usize]) -> Result<(Cow<'a, [T]>, Vec<usize>)> {
    let nd = x.shape.len();
    if nd < 2 {
        return Err(internal(
            "quantized_matmul",
            "an operand has fewer than 2 dimensions",
        ));
    }
    let (rows, cols) = (x.shape[nd - 2], x.shape[nd - 1]);
    let st = &x.data.strides;
    let rowwise = (rows <= 1 || st[nd - 2] == cols as isize) && (cols <= 1 || st[nd - 1] == 1);
    let (data, strides, offset): (Cow<'a, [T]>, Vec<isize>, usize) = if rowwise {
        (Cow::Borrowed(x.data.raw::<T>()), st.clone(), x.data.offset)
    } else {
        (
            Cow::Owned(x.data.to_vec::<T>(x.shape)),
            row_major_strides(x.shape),
            0,
        )
    };
    let own = &x.shape[..nd - 2];
    if own.len() > batch.len() {
        return Err(internal("quantized_matmul", "operand batch rank"));
    }
    if rows * cols == 0 {
        // Each matrix is empty: every batch element reads the empty slice
        // at 0. (An empty array's strides may still step past its data.)
        return Ok((data, vec![0; batch.iter().product()]));
    }
    let pad = batch.len() - own.len();
    let bstrides: Vec<[isize; 1]> = (0..batch.len())
        .map(|d| {
            if d < pad || own[d - pad] == 1 {
                [0]
            } else {
                [strides[d - pad]]
            }
        })
        .collect();
    let mut offsets = Vec::with_capacity(batch.iter().product());
    let mut bad = false;
    walk(
        batch,
        &bstrides,
        [offset as isize],
        |[o]| match usize::try_from(o) {
            Ok(o) => offsets.push(o),
            Err(_) => bad = true,
        },
    );
    if bad {
        return Err(internal("quantized_matmul", "negative offset"));
    }
    Ok((data, offsets))
}

/// `x @ W^T` (`transpose`) or `x @ W` for the packed `W` = (`w`, `scales`,
/// `biases`): `x` is `[..., M, K]` (float), `w` `[..., rows, words]`
/// (uint32), `scales`/`biases` `[..., rows, groups]` (the x dtype for
/// affine, uint8 codes otherwise); batch dimensions broadcast to the
/// output's. Accumulates in f32.
#[allow(clippy::too_many_arguments)]
pub fn qmm(
    x: &Operand<'_>,
    w: &Operand<'_>,
    scales: &Operand<'_>,
    biases: Option<&Operand<'_>>,
    mode: QuantMode,
    group_size: usize,
    bits: usize,
    transpose: bool,
    out: OutSpec<'_>,
) -> Result<Data> {
    let op = "quantized_matmul";
    let od = out.shape.len();
    let xd = x.shape.len();
    if od < 2 || xd < 2 || w.shape.len() < 2 || group_size == 0 || group_size > 128 {
        return Err(internal(op, "operand ranks"));
    }
    let (m, k, n) = (x.shape[xd - 2], x.shape[xd - 1], out.shape[od - 1]);
    let batch = &out.shape[..od - 2];
    let nb: usize = batch.iter().product();
    let (wd, wo) = stack::<u32>(w, batch)?;
    let wr = w.shape[w.shape.len() - 2];
    let wpr = w.shape[w.shape.len() - 1];
    let gpr = scales.shape[scales.shape.len() - 1];
    let (rows_expected, vals_per_row) = if transpose { (n, k) } else { (k, n) };
    if wr != rows_expected || wpr * 32 != vals_per_row * bits || gpr * group_size != vals_per_row {
        return Err(internal(op, "packed matrix shape"));
    }
    let table = if mode == QuantMode::Affine {
        None
    } else {
        Some(code_table(mode))
    };
    let mut storage = out_storage(out)?;
    with_qfloat!(op, out.dtype, T => {
        let xs = contiguous::<T>(x);
        let xf: Vec<f32> = xs.iter().map(|v| v.to_f32()).collect();
        // Affine scales and biases are read in their own dtype (no copy);
        // the 8-bit scales of the other modes are decoded once.
        let (st, sf, so) = if mode == QuantMode::Affine {
            let (d, o) = stack::<T>(scales, batch)?;
            (Some(d), Vec::new(), o)
        } else {
            let (d, o) = stack::<u8>(scales, batch)?;
            (None, d.iter().map(|&c| fp_scale(mode, c)).collect::<Vec<f32>>(), o)
        };
        let bstack = match biases {
            Some(b) if mode == QuantMode::Affine => Some(stack::<T>(b, batch)?),
            _ => None,
        };
        let x_batch = x.shape[..xd - 2].iter().product::<usize>();
        if x_batch != nb {
            return Err(internal(op, "x batch"));
        }
        let dst = storage.as_mut_slice::<T>();
        let mut res = vec![0f32; m * n];
        for bi in 0..nb {
            let q = QMat {
                words: &wd[wo[bi]..wo[bi] + wr * wpr],
                wpr,
                scales: match &st {
                    Some(d) => T::vals(&d[so[bi]..so[bi] + wr * gpr]),
                    None => Vals::F32(&sf[so[bi]..so[bi] + wr * gpr]),
                },
                biases: bstack.as_ref().map(|(d, o)| T::vals(&d[o[bi]..o[bi] + wr * gpr])),
                gpr,
                gs: group_size,
                bits,
                table: table.as_ref(),
            };
            qmm_f32(&xf[bi * m * k..(bi + 1) * m * k], &q, m, k, n, transpose, &mut res)?;
            for (d, &v) in dst[bi * m * n..(bi + 1) * m * n].iter_mut().zip(&res) {
                *d = T::from_f32(v);
            }
        }
        Ok::<(), Error>(())
    })?;
    Ok(Data::contiguous(storage, out.shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_and_unpack_are_inverse_for_every_width() {
        for bits in [1usize, 2, 3, 4, 5, 6, 8] {
            let codes: Vec<u32> = (0..64u32).map(|i| (i * 7 + 3) % (1 << bits)).collect();
            let mut words = vec![0u32; 64 * bits / 32];
            pack_group(&codes, bits, &mut words);
            let mut back = vec![0f32; 64];
            unpack_group(&words, bits, &mut back);
            let back: Vec<u32> = back.iter().map(|&v| v as u32).collect();
            assert_eq!(back, codes, "bits {bits}");
        }
    }

    #[test]
    fn e4m3_round_trips_every_code() {
        for c in 0u8..=255 {
            if c & 0x7f == 0x7f {
                continue;
            }
            assert_eq!(e4m3_code(e4m3_value(c)), c, "code {c}");
        }
        assert_eq!(e4m3_code(1000.0), 126);
        assert_eq!(e4m3_code(-1000.0), 254);
    }
}
