//! The bytes behind arrays: [`Storage`] (an aligned, pooled allocation)
//! and [`Pod`], the element types that may be read from it.
//!
//! Allocation and free go through the buffer cache and its counters in
//! `graph::pool`; the public memory functions are in
//! `runtime::memory`.

use super::pool::{self, RawBuf};

/// Alignment of every buffer: a cache line, enough for any SIMD load.
pub const ALIGN: usize = 64;

/// The bytes behind one or more arrays (views share a `Storage`).
///
/// Mutation is possible only through `&mut Storage`, i.e. while a kernel owns
/// the freshly allocated output and before it is published; afterwards the
/// storage sits behind an `Arc` and is read-only.
pub struct Storage {
    buf: Option<RawBuf>,
    len: usize,
}

// SAFETY: Storage is a RawBuf plus a length. Shared references only allow
// reads (`as_slice`), mutation requires `&mut`, so the usual borrow rules
// make concurrent access data-race free. The bytes are plain data.
unsafe impl Sync for Storage {}

/// Plain-old-data element types that may be viewed from raw bytes.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value, and
/// the alignment must not exceed [`ALIGN`].
pub unsafe trait Pod: Copy + Send + Sync + 'static {}
macro_rules! pod {($($t:ty),*) => {$(
    // SAFETY: integers, floats and pairs of floats accept every bit pattern.
    unsafe impl Pod for $t {}
)*}}
pod!(
    u8,
    u16,
    u32,
    u64,
    i8,
    i16,
    i32,
    i64,
    f32,
    f64,
    half::f16,
    half::bf16,
    crate::dtype::Complex64
);
// SAFETY: bool is NOT valid for every bit pattern. Storage upholds it anyway:
// buffers for Bool arrays are zeroed on allocation (`Storage::new(.., zeroed)`)
// and every kernel writing Bool writes only `true`/`false`; `view` into Bool
// normalises instead of reinterpreting.
unsafe impl Pod for bool {}

impl Storage {
    /// Allocates `len` bytes. Recycled blocks hold stale (but initialised)
    /// bytes unless `zeroed` is set.
    pub fn new(len: usize, zeroed: bool) -> crate::error::Result<Storage> {
        let buf = pool::take(len, zeroed)?;
        Ok(Storage {
            buf: Some(buf),
            len,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True for a zero-byte storage.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents as `T`s (the trailing partial element, if any, is dropped).
    pub fn as_slice<T: Pod>(&self) -> &[T] {
        let Some(buf) = &self.buf else { return &[] };
        // SAFETY: buf holds >= len initialised bytes, aligned to ALIGN >=
        // align_of::<T>(); T is Pod so any initialised bytes are a valid T
        // (bool: see the Pod impl); `&self` guarantees no concurrent writer.
        unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const T, self.len / size_of::<T>()) }
    }

    /// The contents as mutable `T`s.
    pub fn as_mut_slice<T: Pod>(&mut self) -> &mut [T] {
        let Some(buf) = &mut self.buf else {
            return &mut [];
        };
        // SAFETY: as in `as_slice`; `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(buf.as_ptr() as *mut T, self.len / size_of::<T>()) }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            pool::give(buf);
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes)", self.len)
    }
}
