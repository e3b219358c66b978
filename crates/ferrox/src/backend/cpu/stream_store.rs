//! Cache-bypassing (non-temporal) stores for outputs larger than the
//! last-level cache.
//!
//! A plain store to a line that is not cached first reads the line (read
//! for ownership), so writing an output that cannot stay in cache moves
//! three bytes over the memory bus per output byte of a unary op (read the
//! input, read then write the output). Non-temporal stores skip the read.
//! Kernels compute a block into an L1-resident buffer and stream it out:
//! for memory-bound elementwise ops on large arrays that is about a third
//! less traffic. Smaller outputs keep plain stores, so a consumer that runs
//! next finds them in cache.

use crate::graph::storage::Pod;

/// Outputs at least this large are streamed: the size of the L3 cache of
/// the machines ferrox is tuned on (32 MiB); beyond it the output cannot
/// stay cached anyway.
pub const STREAM_MIN_BYTES: usize = 32 << 20;

/// Bytes computed per block before they are streamed out (fits in L1).
const BLOCK_BYTES: usize = 4096;

#[repr(C, align(64))]
struct Block([u8; BLOCK_BYTES]);

/// True if an output of `bytes` should be streamed.
#[inline]
pub fn worth_streaming(bytes: usize) -> bool {
    cfg!(target_arch = "x86_64") && bytes >= STREAM_MIN_BYTES
}

/// Fills `dst` block by block: `fill(start, block)` computes elements
/// `start..start + block.len()` into a cache-resident block, which is then
/// written to `dst` with non-temporal stores.
///
/// ```
/// use ferrox::backend::cpu::stream_store::fill_streaming;
/// let mut out = vec![0.0f32; 10_000];
/// fill_streaming(&mut out, |start, block| {
///     for (k, o) in block.iter_mut().enumerate() {
///         *o = (start + k) as f32;
///     }
/// });
/// assert!(out.iter().enumerate().all(|(i, &v)| v == i as f32));
/// ```
#[inline(always)]
pub fn fill_streaming<O: Pod>(dst: &mut [O], mut fill: impl FnMut(usize, &mut [O])) {
    let size = std::mem::size_of::<O>().max(1);
    let per = BLOCK_BYTES / size;
    let mut block = Block([0; BLOCK_BYTES]);
    // SAFETY: the block is 64-byte aligned (at least the alignment of any
    // Pod element type), holds `per * size <= BLOCK_BYTES` initialised
    // bytes, and every bit pattern is a valid `O` (the Pod contract). The
    // slice borrows `block` mutably and exclusively.
    let tmp: &mut [O] =
        unsafe { std::slice::from_raw_parts_mut(block.0.as_mut_ptr().cast::<O>(), per) };
    let mut start = 0;
    for chunk in dst.chunks_mut(per) {
        let n = chunk.len();
        fill(start, &mut tmp[..n]);
        stream_copy(chunk, &tmp[..n]);
        start += n;
    }
    store_fence();
}

/// Copies `src` into `dst` (equal lengths) with non-temporal stores where
/// the platform has them. Call [`store_fence`] before the data is handed
/// to another thread.
///
/// ```
/// use ferrox::backend::cpu::stream_store::{stream_copy, store_fence};
/// let src: Vec<u8> = (0..100).collect();
/// let mut dst = vec![0u8; 100];
/// stream_copy(&mut dst[3..], &src[3..]);
/// store_fence();
/// assert_eq!(&dst[3..], &src[3..]);
/// ```
#[inline(always)]
pub fn stream_copy<O: Pod>(dst: &mut [O], src: &[O]) {
    let len = dst.len().min(src.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let bytes = len * std::mem::size_of::<O>();
        let d = dst.as_mut_ptr().cast::<u8>();
        let s = src.as_ptr().cast::<u8>();
        let head = d.align_offset(16).min(bytes);
        // SAFETY: `d` and `s` are valid for `bytes` bytes (both slices
        // hold at least `len` elements) and do not overlap (`dst` is
        // borrowed mutably). The streamed stores write 16 bytes at
        // 16-byte-aligned addresses `d + i` with `i + 16 <= bytes`; the
        // loads are unaligned. SSE2 is part of the x86_64 baseline.
        unsafe {
            std::ptr::copy_nonoverlapping(s, d, head);
            let mut i = head;
            while i + 16 <= bytes {
                let v = _mm_loadu_si128(s.add(i).cast::<__m128i>());
                _mm_stream_si128(d.add(i).cast::<__m128i>(), v);
                i += 16;
            }
            std::ptr::copy_nonoverlapping(s.add(i), d.add(i), bytes - i);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst[..len].copy_from_slice(&src[..len]);
}

/// Orders earlier non-temporal stores before later stores (they are weakly
/// ordered on x86); a no-op elsewhere.
#[inline(always)]
pub fn store_fence() {
    // SAFETY: `sfence` has no operands; SSE is part of the x86_64 baseline.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_fills_every_element_at_any_alignment_and_length() {
        for len in [0usize, 1, 15, 16, 17, 1023, 1024, 1025, 5000] {
            for skip in 0..4 {
                let mut out = vec![0u32; len + skip];
                fill_streaming(&mut out[skip..], |start, block| {
                    for (k, o) in block.iter_mut().enumerate() {
                        *o = (start + k) as u32 * 3;
                    }
                });
                assert!(out[..skip].iter().all(|&v| v == 0));
                assert!(
                    out[skip..]
                        .iter()
                        .enumerate()
                        .all(|(i, &v)| v == i as u32 * 3)
                );
            }
        }
    }
}
