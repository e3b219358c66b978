//! The Threefry-2x32 block function (20 rounds), from Salmon et al.,
//! "Parallel random numbers: as easy as 1, 2, 3" (SC '11).
//!
//! A block maps a 64-bit key and a 64-bit counter to 64 pseudo-random
//! bits. It is a bijection of the counter for a fixed key, so distinct
//! counters under one key never give the same block. The random bits
//! kernel ([`bits`]) fills outputs with key streams of these blocks.

use super::elementwise::out_storage;
use crate::error::Result;
use crate::graph::layout::Data;
use crate::graph::primitive::{Operand, OutSpec};
use rayon::prelude::*;

/// Rotation amounts of the eight rounds that repeat.
const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];

/// The key-schedule parity constant of Threefish/Threefry.
const PARITY: u32 = 0x1bd1_1bda;

/// Encrypts the counter `ctr` under `key` with 20 rounds of Threefry-2x32.
///
/// ```
/// use ferrox::random::threefry2x32;
/// // A known-answer vector of the Random123 reference implementation.
/// assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
/// ```
#[inline(always)]
pub fn threefry2x32(key: [u32; 2], ctr: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], PARITY ^ key[0] ^ key[1]];
    let mut x0 = ctr[0].wrapping_add(ks[0]);
    let mut x1 = ctr[1].wrapping_add(ks[1]);
    // Five groups of four rounds, each followed by a key injection.
    for group in 0..5u32 {
        let r = (group as usize % 2) * 4;
        for &rot in &ROTATIONS[r..r + 4] {
            x0 = x0.wrapping_add(x1);
            x1 = x1.rotate_left(rot) ^ x0;
        }
        let i = group as usize + 1;
        x0 = x0.wrapping_add(ks[i % 3]);
        x1 = x1.wrapping_add(ks[(i + 1) % 3]).wrapping_add(i as u32);
    }
    [x0, x1]
}

/// Block `index` of the key stream of `key`: the counter is `index` as a
/// little-endian pair of words (low word first).
#[inline(always)]
pub fn block(key: [u32; 2], index: u64) -> [u32; 2] {
    threefry2x32(key, [index as u32, (index >> 32) as u32])
}

/// Blocks computed side by side, so the rounds vectorise across blocks.
const LANES: usize = 8;

/// Blocks `first .. first + LANES` of the key stream, as the first and the
/// second words of each block.
#[inline(always)]
fn blocks(key: [u32; 2], first: u64) -> ([u32; LANES], [u32; LANES]) {
    let ks = [key[0], key[1], PARITY ^ key[0] ^ key[1]];
    let mut x0 = [0u32; LANES];
    let mut x1 = [0u32; LANES];
    for l in 0..LANES {
        let j = first + l as u64;
        x0[l] = (j as u32).wrapping_add(ks[0]);
        x1[l] = ((j >> 32) as u32).wrapping_add(ks[1]);
    }
    for group in 0..5 {
        let r = (group % 2) * 4;
        for &rot in &ROTATIONS[r..r + 4] {
            for l in 0..LANES {
                x0[l] = x0[l].wrapping_add(x1[l]);
                x1[l] = x1[l].rotate_left(rot) ^ x0[l];
            }
        }
        let i = group + 1;
        let (a, b) = (ks[i % 3], ks[(i + 1) % 3].wrapping_add(i as u32));
        for l in 0..LANES {
            x0[l] = x0[l].wrapping_add(a);
            x1[l] = x1[l].wrapping_add(b);
        }
    }
    (x0, x1)
}

/// Writes the key stream of `key` from block `first_block` on into `out`
/// as little-endian bytes (the last block may be cut short).
pub fn fill_bytes(key: [u32; 2], first_block: u64, out: &mut [u8]) {
    super::parallel::simd(|| {
        let mut chunks = out.chunks_exact_mut(8 * LANES);
        let mut j = first_block;
        for c in &mut chunks {
            let (a, b) = blocks(key, j);
            for l in 0..LANES {
                c[8 * l..8 * l + 4].copy_from_slice(&a[l].to_le_bytes());
                c[8 * l + 4..8 * l + 8].copy_from_slice(&b[l].to_le_bytes());
            }
            j += LANES as u64;
        }
        for (i, chunk) in chunks.into_remainder().chunks_mut(8).enumerate() {
            let [a, b] = block(key, j + i as u64);
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(&a.to_le_bytes());
            bytes[4..].copy_from_slice(&b.to_le_bytes());
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    });
}

/// Blocks per parallel task when one key fills a large output.
const PAR_BLOCKS: usize = super::parallel::MIN_PAR_ELEMS / 4;

/// The random bits kernel: for each key of `k` (`[..., 2]` uint32) in
/// order, `per_key` bytes of its stream, `width` bytes per output element.
/// Few long streams split each stream into runs of blocks, many short ones
/// run one task per run of keys: either way the bytes are those of
/// [`fill_bytes`] from block 0 of each key.
pub fn bits(k: &Operand<'_>, per_key: usize, width: usize, out: OutSpec<'_>) -> Result<Data> {
    let words = k.data.to_vec::<u32>(k.shape);
    let keys: Vec<[u32; 2]> = words.chunks_exact(2).map(|w| [w[0], w[1]]).collect();
    let mut st = out_storage(out)?;
    let per = per_key;
    let dst = st.as_mut_slice::<u8>();
    if per == 0 || keys.is_empty() || dst.len() != per * keys.len() {
        return Ok(Data::contiguous(st, out.shape));
    }
    let big = super::parallel::worth_splitting(dst.len() / width.max(1));
    if big && per >= PAR_BLOCKS * 8 * 2 {
        // Few keys, long streams: split each stream into runs of blocks.
        for (key, chunk) in keys.iter().zip(dst.chunks_mut(per)) {
            chunk
                .par_chunks_mut(PAR_BLOCKS * 8)
                .enumerate()
                .for_each(|(i, c)| fill_bytes(*key, (i * PAR_BLOCKS) as u64, c));
        }
    } else if big {
        // Many keys, short streams: one task per run of keys.
        dst.par_chunks_mut(per)
            .zip(keys.par_iter())
            .with_min_len((PAR_BLOCKS * 8).div_ceil(per))
            .for_each(|(c, key)| fill_bytes(*key, 0, c));
    } else {
        for (key, chunk) in keys.iter().zip(dst.chunks_mut(per)) {
            fill_bytes(*key, 0, chunk);
        }
    }
    Ok(Data::contiguous(st, out.shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random123_known_answers() {
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(
            threefry2x32([u32::MAX, u32::MAX], [u32::MAX, u32::MAX]),
            [0x1cb9_96fc, 0xbb00_2be7]
        );
        assert_eq!(
            threefry2x32([0x1319_8a2e, 0x0370_7344], [0x243f_6a88, 0x85a3_08d3]),
            [0xc492_3a9c, 0x483d_f7a0]
        );
    }

    #[test]
    fn fill_bytes_is_the_block_sequence_cut_anywhere() {
        let key = [7, 9];
        let mut whole = vec![0u8; 40];
        fill_bytes(key, 0, &mut whole);
        for j in 0..5 {
            let [a, b] = block(key, j as u64);
            assert_eq!(&whole[8 * j..8 * j + 4], &a.to_le_bytes());
            assert_eq!(&whole[8 * j + 4..8 * j + 8], &b.to_le_bytes());
        }
        let mut tail = vec![0u8; 13];
        fill_bytes(key, 2, &mut tail);
        assert_eq!(&tail[..], &whole[16..29]);
        // Whole runs of lanes and a cut tail agree with one block at a time.
        let mut long = vec![0u8; 8 * LANES * 3 + 21];
        fill_bytes(key, 5, &mut long);
        for (j, c) in long.chunks(8).enumerate() {
            let [a, b] = block(key, 5 + j as u64);
            let mut bytes = a.to_le_bytes().to_vec();
            bytes.extend_from_slice(&b.to_le_bytes());
            assert_eq!(c, &bytes[..c.len()], "block {j}");
        }
    }
}
