//! Keys and raw random bits: `key`, `split`, `bits` and the [`RandomBits`]
//! primitive.

use crate::backend::cpu::threefry;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::array::Array;
use crate::graph::layout::Data;
use crate::graph::layout::checked_numel;
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::ops::grad_helpers;

/// The unsigned dtype holding `width` bytes (1, 2, 4 or 8).
fn bits_dtype(op: &str, width: usize) -> Result<DType> {
    match width {
        1 => Ok(DType::UInt8),
        2 => Ok(DType::UInt16),
        4 => Ok(DType::UInt32),
        8 => Ok(DType::UInt64),
        _ => Err(Error::value(
            op,
            format!("width {width} is not one of 1, 2, 4 or 8 bytes"),
        )),
    }
}

/// Checks that `key` is a uint32 array whose last axis has length 2; with
/// `single`, that it is exactly one key (shape `[2]`).
pub(crate) fn check_key(op: &str, key: &Array, single: bool) -> Result<()> {
    if key.dtype() != DType::UInt32 {
        return Err(Error::dtype(
            op,
            format!("a key must have dtype uint32, got {}", key.dtype()),
        ));
    }
    let ok = if single {
        key.shape() == [2]
    } else {
        key.shape().last() == Some(&2)
    };
    if !ok {
        let want = if single { "[2]" } else { "[..., 2]" };
        return Err(Error::shape(
            op,
            format!("a key must have shape {want}, got {:?}", key.shape()),
        ));
    }
    Ok(())
}

/// `key`, checked to be one key, or a fresh key split off the calling
/// thread's default key (a key input of the tape inside a compile trace).
pub(crate) fn key_or_default(op: &str, key: Option<&Array>) -> Result<Array> {
    match key {
        Some(k) => {
            check_key(op, k, true)?;
            Ok(k.clone())
        }
        None => crate::transforms::default_key::default_key(),
    }
}

/// The key made from `seed`: a uint32 array of shape `[2]` holding the high
/// and the low 32 bits of the seed.
///
/// ```
/// let k = ferrox::random::key(0x1_0000_0002)?;
/// assert_eq!(k.to_vec::<u32>()?, vec![1, 2]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn key(seed: u64) -> Result<Array> {
    Array::from_slice(&crate::transforms::default_key::seed_words(seed), &[2])
}

/// `num` new keys (shape `[num, 2]`) derived from `key`: the `[num, 2]`
/// uint32 [`bits`] of `key`, so the same keys as MLX's `split(key, num)`.
///
/// ```
/// use ferrox::random::{key, split};
/// let ks = split(&key(0)?, 3)?;
/// assert_eq!(ks.shape(), &[3, 2]);
/// let v = ks.to_vec::<u32>()?;
/// // mlx.core.random.split(mlx.core.random.key(0), 3)
/// assert_eq!(v, [2_467_461_003, 428_148_500, 3_186_719_485, 3_840_466_878, 2_562_233_961, 1_946_702_221]);
/// assert!(split(&ferrox::zeros(&[2], ferrox::DType::Float32)?, 2).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn split(key: &Array, num: usize) -> Result<Array> {
    check_key("split", key, true)?;
    bits_of("split", &[num, 2], 4, key)
}

/// Random bits: an unsigned integer array (uint8, uint16, uint32 or uint64
/// for `width` 1, 2, 4 or 8 bytes) filled with Threefry-2x32 blocks of
/// `key` (or of a key split off the thread's default key when `None`),
/// laid out as MLX lays them out, so the bits equal MLX's `bits` for the
/// same key (MLX has no width 8; its layout extends to it).
///
/// The `size * width` bytes are `w = ceil(size * width / 4)` little-endian
/// 32-bit words (the last one cut short), read in row-major order as
/// little-endian elements. With `c = w - w / 2`, the block at counter
/// `[i, i + c]` gives words `i` and `i + c` for each `i < w / 2`; an odd
/// `w` takes its middle word `w / 2` from the block at `[w / 2, 0]`.
///
/// `key` may be a batch of keys of shape `[..., 2]`: the output then has
/// shape `key.shape[..-1] ++ shape`, each key filling its own `shape`
/// (this is how `vmap` over keys works).
///
/// ```
/// use ferrox::random::{bits, key, threefry2x32};
/// let b = bits(&[2], 4, Some(&key(0)?))?;
/// assert_eq!(b.to_vec::<u32>()?, threefry2x32([0, 0], [0, 1]).to_vec());
/// let two = ferrox::random::split(&key(1)?, 2)?;
/// assert_eq!(bits(&[5], 1, Some(&two))?.shape(), &[2, 5]);
/// assert!(bits(&[2], 3, None).is_err());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn bits(shape: &[usize], width: usize, key: Option<&Array>) -> Result<Array> {
    // Check the arguments before a default key is used up.
    bits_dtype("bits", width)?;
    checked_numel("bits", shape)?;
    let key = match key {
        Some(k) => k.clone(),
        None => key_or_default("bits", None)?,
    };
    check_key("bits", &key, false)?;
    bits_of("bits", shape, width, &key)
}

/// Builds the [`RandomBits`] node for a checked key batch.
pub(crate) fn bits_of(op: &str, shape: &[usize], width: usize, key: &Array) -> Result<Array> {
    let dtype = bits_dtype(op, width)?;
    let mut out = key.shape()[..key.ndim() - 1].to_vec();
    out.extend_from_slice(shape);
    checked_numel(op, &out)?;
    Ok(Array::from_op(
        out,
        dtype,
        RandomBits {
            shape: shape.to_vec(),
            width,
        },
        vec![key.clone()],
    ))
}

/// Fills each key's `shape` with its bits (MLX's layout, see [`bits`]). The input is
/// a batch of keys (uint32, `[..., 2]`); the output is
/// `batch ++ shape` of the unsigned type `width` bytes wide.
///
/// ```
/// use ferrox::random::{RandomBits, bits, key};
/// let b = bits(&[3], 2, Some(&key(0)?))?;
/// let op = b.primitive().unwrap().as_any().downcast_ref::<RandomBits>().unwrap();
/// assert_eq!((op.shape.as_slice(), op.width), (&[3usize][..], 2));
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RandomBits {
    /// The shape each key fills.
    pub shape: Vec<usize>,
    /// Bytes per element: 1, 2, 4 or 8.
    pub width: usize,
}

impl crate::graph::export::Exportable for RandomBits {
    const KIND: &'static str = "random_bits";
    fn rebuild(
        &self,
        inputs: &[crate::graph::array::Array],
    ) -> crate::error::Result<crate::graph::array::Array> {
        let [key] = crate::graph::export::args(inputs, "random_bits")?;
        bits_of("bits", &self.shape, self.width, key)
    }
}

impl Primitive for RandomBits {
    fn name(&self) -> &'static str {
        "random_bits"
    }
    fn eval_cpu(&self, inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let k = &inputs[0];
        if k.dtype != DType::UInt32 || k.shape.last() != Some(&2) {
            return Err(Error::runtime(
                "random_bits",
                "the key input is not [..., 2] uint32",
            ));
        }
        let per = self.shape.iter().product::<usize>() * self.width;
        threefry::bits(k, per, self.width, out)
    }
    /// Bits do not vary smoothly with the key: every cotangent is zero.
    fn vjp(&self, p: &[Array], _g: &Array, _o: &Array, argnums: &[usize]) -> Result<Vec<Array>> {
        grad_helpers::zero_cotangents(p, argnums)
    }
    fn jvp(&self, _p: &[Array], _t: &[Option<Array>], output: &Array) -> Result<Array> {
        crate::ops::creation::zeros_like(output)
    }
    /// A batch of keys draws independently per key: the batch axis moves
    /// to the front of the keys and stays in front of the output.
    fn vmap(&self, inputs: &[Array], axes: &[Option<usize>]) -> Result<(Array, Option<usize>)> {
        let key = &inputs[0];
        match axes[0] {
            None => Ok((bits_of("random_bits", &self.shape, self.width, key)?, None)),
            Some(ax) => {
                let key = grad_helpers::batch_front(key, Some(ax))?;
                check_key("random_bits", &key, false)?;
                Ok((
                    bits_of("random_bits", &self.shape, self.width, &key)?,
                    Some(0),
                ))
            }
        }
    }
    fn output_shape(&self, input_shapes: &[&[usize]]) -> Option<Result<Vec<usize>>> {
        let k = input_shapes.first()?;
        if k.last() != Some(&2) {
            return Some(Err(Error::shape(
                "random_bits",
                format!("a key must have shape [..., 2], got {k:?}"),
            )));
        }
        let mut out = k[..k.len() - 1].to_vec();
        out.extend_from_slice(&self.shape);
        Some(Ok(out))
    }
    crate::primitive_common!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::threefry::{key_bytes, threefry2x32};

    /// One key's output bytes, computed on the host.
    fn host_bytes(key: [u32; 2], len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        key_bytes(key, &mut v, false);
        v
    }

    #[test]
    fn widths_read_the_words_little_endian() -> Result<()> {
        let k = key(42)?;
        // Four words: blocks at [0, 2] and [1, 3].
        let w = bits(&[4], 4, Some(&k))?.to_vec::<u32>()?;
        let (a, b) = (threefry2x32([0, 42], [0, 2]), threefry2x32([0, 42], [1, 3]));
        assert_eq!(w, [a[0], b[0], a[1], b[1]]);
        let bytes = bits(&[16], 1, Some(&k))?.to_vec::<u8>()?;
        assert_eq!(&bytes[..4], &w[0].to_le_bytes());
        let wide = bits(&[2], 8, Some(&k))?.to_vec::<u64>()?;
        assert_eq!(wide[0], u64::from(w[0]) | (u64::from(w[1]) << 32));
        // Three u16s are two words: blocks at [0, 1] cut to six bytes.
        let half = bits(&[3], 2, Some(&k))?.to_vec::<u16>()?;
        let c = threefry2x32([0, 42], [0, 1]);
        assert_eq!(half, [c[0] as u16, (c[0] >> 16) as u16, c[1] as u16]);
        // An odd word count: the middle word is the block at [h, 0].
        let odd = bits(&[3], 4, Some(&k))?.to_vec::<u32>()?;
        let (p, m) = (threefry2x32([0, 42], [0, 2]), threefry2x32([0, 42], [1, 0]));
        assert_eq!(odd, [p[0], m[0], p[1]]);
        assert_eq!(
            bits(&[], 4, Some(&k))?.item::<u32>()?,
            threefry2x32([0, 42], [0, 0])[0]
        );
        assert_eq!(bits(&[0, 3], 1, Some(&k))?.shape(), &[0, 3]);
        Ok(())
    }

    #[test]
    fn large_outputs_equal_the_host_layout() -> Result<()> {
        let k = key(3)?;
        let n = (1 << 18) + 1;
        let big = bits(&[n], 4, Some(&k))?.to_vec::<u32>()?;
        let seq: Vec<u32> = host_bytes([0, 3], n * 4)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(big, seq);
        let b8 = bits(&[n], 1, Some(&k))?.to_vec::<u8>()?;
        assert_eq!(b8, host_bytes([0, 3], n));
        // Many short outputs in parallel equal one key at a time.
        let keys = split(&k, 20_000)?;
        let many = bits(&[3], 4, Some(&keys))?.to_vec::<u32>()?;
        let kv = keys.to_vec::<u32>()?;
        for i in [0, 1, 9_999, 19_999] {
            let one = Array::from_slice(&kv[2 * i..2 * i + 2], &[2])?;
            assert_eq!(
                bits(&[3], 4, Some(&one))?.to_vec::<u32>()?,
                many[3 * i..3 * i + 3]
            );
        }
        Ok(())
    }

    #[test]
    fn bad_keys_and_widths_are_errors() -> Result<()> {
        let f = crate::ops::creation::zeros(&[2], DType::Float32)?;
        assert_eq!(
            split(&f, 2).unwrap_err().kind(),
            crate::error::ErrorKind::Dtype
        );
        let k3 = crate::ops::creation::zeros(&[3], DType::UInt32)?;
        assert_eq!(
            bits(&[1], 4, Some(&k3)).unwrap_err().kind(),
            crate::error::ErrorKind::Shape
        );
        let msg = bits(&[1], 5, None).unwrap_err().to_string();
        assert!(msg.contains("bits") && msg.contains('5'), "{msg}");
        Ok(())
    }
}
