//! Where the fused engine writes one chunk of one output: a slice of a
//! fresh output buffer, or the same chunk of a donated input's buffer
//! (see `Primitive::eval_cpu_donating`), which the chunk's steps read
//! before the output overwrites it.
//!
//! A donated chunk is reached through two storages lent over the same
//! bytes, one read as the input's chunk and one written as the output's,
//! and never used at once: a slice of the written one exists only while
//! it is being written (by the copy at the end of the chunk, or by the
//! output's step when no later step reads the input), when no slice of the
//! read one is alive. Every chunk's bytes are disjoint from every other
//! chunk's, so tasks on other cores never touch them.

use crate::graph::layout::{Data, row_major_strides};
use crate::graph::storage::{EXTERNAL_ALIGN, Storage};
use std::sync::Arc;

/// One chunk of one output's destination.
pub(crate) enum ChunkDst<'a> {
    /// A slice of a freshly allocated output buffer.
    Fresh(&'a mut [u8]),
    /// A chunk of a donated input's buffer.
    Donated(DonatedChunk),
}

/// The bytes of one chunk of a donated input, which the output it was
/// donated to overwrites.
pub(crate) struct DonatedChunk {
    /// The donated input.
    pub(crate) input: usize,
    /// The bytes, to read as the input's chunk.
    read: Arc<Storage>,
    /// The same bytes, to write as the output's chunk.
    write: Storage,
    /// Whether the output's step may compute straight into the bytes: no
    /// step from it on reads the input.
    lend: bool,
}

impl DonatedChunk {
    /// The chunk of `len` bytes at `start`, of input `input`.
    ///
    /// # Safety
    ///
    /// `start` is aligned to [`EXTERNAL_ALIGN`] and valid for reads and
    /// writes of `len` initialised bytes while the chunk lives; no one but
    /// this chunk's user reads or writes them meanwhile (the buffer was
    /// donated, and chunks do not overlap); the user follows the module's
    /// rule (one of the two storages at a time) and drops every `Data`
    /// made from [`input_view`](Self::input_view) with the chunk.
    pub(crate) unsafe fn new(input: usize, start: *mut u8, len: usize, lend: bool) -> Self {
        debug_assert_eq!(start as usize % EXTERNAL_ALIGN, 0);
        // SAFETY: the caller's contract is `Storage::lent`'s for both
        // storages, shared between them by the one-at-a-time rule.
        let (read, write) = unsafe { (Storage::lent(start, len), Storage::lent(start, len)) };
        DonatedChunk {
            input,
            read: Arc::new(read),
            write,
            lend,
        }
    }

    /// The input's elements in this chunk, contiguous, as `shape`.
    pub(crate) fn input_view(&self, shape: &[usize]) -> Data {
        Data {
            storage: self.read.clone(),
            strides: row_major_strides(shape),
            offset: 0,
        }
    }
}

impl ChunkDst<'_> {
    /// The first byte of the chunk.
    pub(crate) fn start(&self) -> *const u8 {
        match self {
            ChunkDst::Fresh(bytes) => bytes.as_ptr(),
            ChunkDst::Donated(chunk) => chunk.write.as_slice::<u8>().as_ptr(),
        }
    }

    /// The chunk's bytes, for the output's step to compute into, unless a
    /// later read of a donated input forbids it.
    pub(crate) fn lendable(&mut self) -> Option<&mut [u8]> {
        match self {
            ChunkDst::Fresh(bytes) => Some(bytes),
            ChunkDst::Donated(chunk) if chunk.lend => Some(chunk.write.as_mut_slice()),
            ChunkDst::Donated(_) => None,
        }
    }

    /// The chunk's bytes, to copy the output's result into once every step
    /// has run.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            ChunkDst::Fresh(bytes) => bytes,
            ChunkDst::Donated(chunk) => chunk.write.as_mut_slice(),
        }
    }

    /// The donated input this chunk overwrites, if any.
    pub(crate) fn donor(&self) -> Option<&DonatedChunk> {
        match self {
            ChunkDst::Fresh(_) => None,
            ChunkDst::Donated(chunk) => Some(chunk),
        }
    }
}
