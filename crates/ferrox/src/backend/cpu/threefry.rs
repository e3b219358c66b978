//! The Threefry-2x32 block function (20 rounds), from Salmon et al.,
//! "Parallel random numbers: as easy as 1, 2, 3" (SC '11).
//!
//! A block maps a 64-bit key and a 64-bit counter to 64 pseudo-random
//! bits. It is a bijection of the counter for a fixed key, so distinct
//! counters under one key never give the same block. The random bits
//! kernel ([`bits`]) lays these blocks out as MLX does ([`key_bytes`]).

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

/// Threefry of `key` at the counter `index`, read as a little-endian pair
/// of words (low word first). Used for ferrox's own per-thread entropy,
/// not for the random bits of a key (see [`key_bytes`]).
#[inline(always)]
pub fn block(key: [u32; 2], index: u64) -> [u32; 2] {
    threefry2x32(key, [index as u32, (index >> 32) as u32])
}

/// Blocks computed side by side, so the rounds vectorise across blocks.
const LANES: usize = 8;

/// Threefry of `key` at the `LANES` counters `[first + l, first + l + skip]`
/// (wrapping), as the first and the second words of each block.
#[inline(always)]
fn blocks(key: [u32; 2], first: u32, skip: u32) -> ([u32; LANES], [u32; LANES]) {
    let ks = [key[0], key[1], PARITY ^ key[0] ^ key[1]];
    let mut x0 = [0u32; LANES];
    let mut x1 = [0u32; LANES];
    for l in 0..LANES {
        let j = first.wrapping_add(l as u32);
        x0[l] = j.wrapping_add(ks[0]);
        x1[l] = j.wrapping_add(skip).wrapping_add(ks[1]);
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

/// Writes the little-endian bytes of `w` into `dst`, cut to its length.
#[inline(always)]
fn put(dst: &mut [u8], w: u32) {
    let n = dst.len();
    dst.copy_from_slice(&w.to_le_bytes()[..n]);
}

/// The pairs of words `first ..` of one key's output: word `first + j` of
/// the first half goes to `lo[4j..]` and its partner, word
/// `first + j + skip`, to `hi[4j..]`. `lo` holds whole words; `hi` as many
/// bytes as are left of the output (its last word may be cut short).
fn pairs(key: [u32; 2], first: u32, skip: u32, lo: &mut [u8], hi: &mut [u8]) {
    let n = lo.len() / 4;
    let mut j = 0;
    while j + LANES <= n && 4 * (j + LANES) <= hi.len() {
        let (a, b) = blocks(key, first.wrapping_add(j as u32), skip);
        for l in 0..LANES {
            let o = 4 * (j + l);
            lo[o..o + 4].copy_from_slice(&a[l].to_le_bytes());
            hi[o..o + 4].copy_from_slice(&b[l].to_le_bytes());
        }
        j += LANES;
    }
    for j in j..n {
        let c = first.wrapping_add(j as u32);
        let [a, b] = threefry2x32(key, [c, c.wrapping_add(skip)]);
        lo[4 * j..4 * j + 4].copy_from_slice(&a.to_le_bytes());
        let end = hi.len().min(4 * j + 4);
        put(&mut hi[4 * j..end], b);
    }
}

/// Blocks per parallel task when one key fills a large output.
const PAR_BLOCKS: usize = super::parallel::MIN_PAR_ELEMS / 4;

/// Fills `out` with the random bytes of `key`, laid out as MLX lays them
/// out, so a key gives MLX's numbers.
///
/// The output is `w = ceil(len / 4)` 32-bit little-endian words, cut to
/// `len` bytes. With `h = w / 2` and `c = w - h`, block `i < h` is
/// Threefry at the counter `[i, i + c]`: its first word is word `i`, its
/// second word is word `i + c`. When `w` is odd the middle word `h` is the
/// first word of the block at `[h, 0]`.
///
/// ```
/// use ferrox::backend::cpu::threefry::{key_bytes, threefry2x32};
/// let mut out = [0u8; 12]; // three words
/// key_bytes([0, 42], &mut out, false);
/// let pair = threefry2x32([0, 42], [0, 2]);
/// assert_eq!(out[0..4], pair[0].to_le_bytes());
/// assert_eq!(out[8..12], pair[1].to_le_bytes());
/// assert_eq!(out[4..8], threefry2x32([0, 42], [1, 0])[0].to_le_bytes());
/// ```
pub fn key_bytes(key: [u32; 2], out: &mut [u8], parallel: bool) {
    let words = out.len().div_ceil(4);
    let (h, c) = (words / 2, words - words / 2);
    let (lo, rest) = out.split_at_mut(4 * h);
    let mid_len = (4 * (c - h)).min(rest.len());
    let (mid, hi) = rest.split_at_mut(mid_len);
    if !mid.is_empty() {
        put(mid, threefry2x32(key, [h as u32, 0])[0]);
    }
    super::parallel::simd(|| {
        if parallel && h >= 2 * PAR_BLOCKS {
            lo.par_chunks_mut(4 * PAR_BLOCKS)
                .zip(hi.par_chunks_mut(4 * PAR_BLOCKS))
                .enumerate()
                .for_each(|(i, (l, hh))| {
                    super::parallel::simd(|| {
                        pairs(key, (i * PAR_BLOCKS) as u32, c as u32, l, hh);
                    });
                });
        } else {
            pairs(key, 0, c as u32, lo, hi);
        }
    });
}

/// The two keys `split(key, 2)` makes, computed on the host: the rows of
/// the `[2, 2]` words of `key`'s output.
pub fn split2(key: [u32; 2]) -> ([u32; 2], [u32; 2]) {
    let a = threefry2x32(key, [0, 2]);
    let b = threefry2x32(key, [1, 3]);
    ([a[0], b[0]], [a[1], b[1]])
}

/// The random bits kernel: for each key of `k` (`[..., 2]` uint32) in
/// order, `per_key` bytes laid out by [`key_bytes`], `width` bytes per
/// output element. Few long outputs split each key's output into runs of
/// blocks, many short ones run one task per run of keys.
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
        // Few keys, long outputs: split each key's output into runs.
        for (key, chunk) in keys.iter().zip(dst.chunks_mut(per)) {
            key_bytes(*key, chunk, true);
        }
    } else if big {
        // Many keys, short outputs: one task per run of keys.
        dst.par_chunks_mut(per)
            .zip(keys.par_iter())
            .with_min_len((PAR_BLOCKS * 8).div_ceil(per))
            .for_each(|(c, key)| key_bytes(*key, c, false));
    } else {
        for (key, chunk) in keys.iter().zip(dst.chunks_mut(per)) {
            key_bytes(*key, chunk, false);
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

    /// Word `i` of a key's output of `words` words, one block at a time.
    fn word(key: [u32; 2], words: usize, i: usize) -> u32 {
        let (h, c) = (words / 2, words - words / 2);
        if i < h {
            threefry2x32(key, [i as u32, (i + c) as u32])[0]
        } else if i >= c {
            threefry2x32(key, [(i - c) as u32, i as u32])[1]
        } else {
            threefry2x32(key, [h as u32, 0])[0]
        }
    }

    #[test]
    fn key_bytes_match_the_word_layout_for_every_length() {
        let key = [7, 9];
        for len in (0..80).chain([8 * LANES * 5 + 3, 4 * PAR_BLOCKS * 5 + 6]) {
            let words = len.div_ceil(4);
            let want: Vec<u8> = (0..words)
                .flat_map(|i| word(key, words, i).to_le_bytes())
                .take(len)
                .collect();
            for parallel in [false, true] {
                let mut out = vec![0u8; len];
                key_bytes(key, &mut out, parallel);
                assert_eq!(out, want, "{len} bytes, parallel {parallel}");
            }
        }
    }

    #[test]
    fn split2_is_the_two_by_two_output() {
        let mut out = [0u8; 16];
        key_bytes([0, 42], &mut out, false);
        let w: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(split2([0, 42]), ([w[0], w[1]], [w[2], w[3]]));
        // MLX's split(key(42)).
        assert_eq!(
            split2([0, 42]),
            ([2_465_931_498, 3_679_230_171], [255_383_827, 267_815_257])
        );
    }
}
