//! The bytes behind arrays: [`Storage`] (an aligned, pooled allocation)
//! and [`Pod`], the element types that may be read from it.
//!
//! Allocation and free go through the buffer cache and its counters in
//! `graph::pool`; the public memory functions are in
//! `runtime::memory`. A storage may instead hold a private file mapping
//! (`Storage::from_mapping`, used by `io` to load files without copying):
//! its pages belong to the page cache, so they are not counted as active
//! memory and never enter the buffer cache. A storage may also read bytes
//! owned outside ferrox in place (`Storage::from_external`, behind
//! `Array::from_external`): a caller's buffer, released when the last array
//! reading it is dropped.

use super::pool::{self, RawBuf};

/// Where a storage's bytes live.
enum Backing {
    /// A block from the buffer pool (counted as active memory).
    Pooled(RawBuf),
    /// A private, copy-on-write mapping of a file: reads come from the page
    /// cache on first touch, writes (only ever through `&mut Storage`)
    /// would copy the page and never reach the file.
    Mapped(memmap2::MmapMut),
    /// Bytes owned by a value from outside ferrox, read in place; `ptr`
    /// is the start of `owner.as_ref()`, taken once when the owner was
    /// boxed. Never written: `as_mut_slice` first swaps in a pooled copy.
    External {
        owner: Box<dyn AsRef<[u8]> + Send + Sync>,
        ptr: *const u8,
    },
    /// Bytes lent by the fused engine for one kernel call: an output's
    /// chunk, so that the kernel writes its result in place instead of
    /// into a buffer that is then copied there. Not owned: dropping the
    /// storage releases nothing. See [`Storage::lent`] for the lifetime
    /// rule.
    Lent(*mut u8),
}

impl Backing {
    fn as_ptr(&self) -> *mut u8 {
        match self {
            Backing::Pooled(b) => b.as_ptr(),
            Backing::Mapped(m) => m.as_ptr() as *mut u8,
            // Only ever read through this pointer (see `as_mut_slice`).
            Backing::External { ptr, .. } => ptr.cast_mut(),
            Backing::Lent(ptr) => *ptr,
        }
    }
}

/// Alignment of every buffer: a cache line, enough for any SIMD load.
pub const ALIGN: usize = 64;

/// The alignment an external buffer needs to be read in place: that of
/// the widest [`Pod`] element (`u64`, `f64`), since a storage may be
/// viewed as any element type. Kernels never assume more (views start at
/// any element offset).
pub const EXTERNAL_ALIGN: usize = 8;
const _: () = assert!(
    align_of::<u64>() <= EXTERNAL_ALIGN
        && align_of::<f64>() <= EXTERNAL_ALIGN
        && align_of::<crate::dtype::Complex64>() <= EXTERNAL_ALIGN
        && EXTERNAL_ALIGN <= ALIGN
);

/// The bytes behind one or more arrays (views share a `Storage`).
///
/// Mutation is possible only through `&mut Storage`, i.e. while a kernel owns
/// the freshly allocated output and before it is published; afterwards the
/// storage sits behind an `Arc` and is read-only.
pub struct Storage {
    buf: Option<Backing>,
    len: usize,
}

// SAFETY: Storage is a RawBuf (or a private mapping, or an external owner
// that is `Send + Sync` itself) plus a length. Shared references only allow
// reads (`as_slice`), mutation requires `&mut`, so the usual borrow rules
// make concurrent access data-race free. The bytes are plain data.
unsafe impl Sync for Storage {}
// SAFETY: the raw pointer in `Backing::External` points into the boxed
// owner, which is `Send` and moves with the storage; `Backing::Lent` bytes
// stay valid and unshared for the storage's whole life (the contract of
// `Storage::lent`), whichever thread holds it; the other backings are
// owned allocations and mappings, which any thread may read and free.
unsafe impl Send for Storage {}

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
            buf: Some(Backing::Pooled(buf)),
            len,
        })
    }

    /// Wraps a private mapping of a file as a storage of `map.len()` bytes,
    /// without copying (`io` maps large files this way). The mapping must
    /// start at offset 0 of its file (so its base is page aligned); `None`
    /// if it is not aligned to [`ALIGN`]. An empty mapping gives an empty
    /// storage.
    ///
    /// The mapping's pages are not counted by the memory functions
    /// (`get_active_memory`, limits): they are file pages the kernel may
    /// drop and re-read, like MLX's and numpy's mapped loads. Crate-private,
    /// so that `memmap2` stays out of the public API.
    pub(crate) fn from_mapping(map: memmap2::MmapMut) -> Option<Storage> {
        let len = map.len();
        if len == 0 {
            return Some(Storage { buf: None, len: 0 });
        }
        if (map.as_ptr() as usize) % ALIGN != 0 {
            return None;
        }
        Some(Storage {
            buf: Some(Backing::Mapped(map)),
            len,
        })
    }

    /// Wraps the bytes of `owner` as a storage, without copying, if they
    /// start at a multiple of [`EXTERNAL_ALIGN`]; gives the owner back if
    /// not. The owner is dropped (releasing the bytes) when the storage is.
    ///
    /// The bytes are those `owner.as_ref()` returns once, here, after the
    /// owner is boxed (so an owner holding its bytes inline cannot move
    /// them away). ferrox never calls `as_ref` again and never writes them.
    pub(crate) fn from_external<B>(owner: B) -> std::result::Result<Storage, B>
    where
        B: AsRef<[u8]> + Send + Sync + 'static,
    {
        // Boxed first: an owner whose bytes live inside it (an array, not a
        // pointer to a heap buffer) must not move after `as_ref`.
        let owner = Box::new(owner);
        let bytes = (*owner).as_ref();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        if len == 0 {
            return Ok(Storage { buf: None, len: 0 });
        }
        if (ptr as usize) % EXTERNAL_ALIGN != 0 {
            return Err(*owner);
        }
        // Unsizing the box moves no bytes: `ptr` stays valid.
        let owner: Box<dyn AsRef<[u8]> + Send + Sync> = owner;
        Ok(Storage {
            buf: Some(Backing::External { owner, ptr }),
            len,
        })
    }

    /// A storage over `len` bytes at `ptr` that it does not own: the
    /// destination of an in-place kernel call (see
    /// `backend::cpu::destination`).
    ///
    /// # Safety
    ///
    /// `ptr` is aligned to [`EXTERNAL_ALIGN`] and valid for reads and
    /// writes of `len` bytes, all initialised, for as long as the storage
    /// lives; nothing else reads or writes them meanwhile. The storage
    /// (and every `Data` sharing it) is dropped before the lender uses the
    /// bytes again.
    pub(crate) unsafe fn lent(ptr: *mut u8, len: usize) -> Storage {
        Storage {
            buf: (len > 0).then_some(Backing::Lent(ptr)),
            len,
        }
    }

    /// True when this storage is the bytes lent at `ptr` (the in-place
    /// result a lender looks for).
    pub(crate) fn is_lent_at(&self, ptr: *const u8) -> bool {
        matches!(self.buf, Some(Backing::Lent(p)) if p.cast_const() == ptr)
    }

    /// The start of a pooled block, with the allocation's write
    /// permission; `None` for mapped, external and lent bytes (never
    /// written in place). Only for a donated buffer (see
    /// `Primitive::eval_cpu_donating`): writing through it is sound only
    /// while no one else can reach this storage and no slice of the bytes
    /// written is alive.
    pub(crate) fn pooled_ptr(&self) -> Option<*mut u8> {
        match &self.buf {
            Some(Backing::Pooled(b)) => Some(b.as_ptr()),
            _ => None,
        }
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
        // SAFETY: buf holds >= len initialised bytes, aligned to at least
        // EXTERNAL_ALIGN >= align_of::<T>() (a pooled block by construction,
        // a mapping checked in `from_mapping`, an external buffer checked in
        // `from_external`, lent bytes by the contract of `lent`; mapped
        // bytes are the file's, initialised); T is
        // Pod so any initialised bytes are a valid T (bool: see the Pod
        // impl; `io` never maps Bool data, it copies and normalises it);
        // `&self` guarantees no concurrent writer.
        unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const T, self.len / size_of::<T>()) }
    }

    /// The contents as mutable `T`s. An external storage is first replaced
    /// by a pooled copy (its owner released): ferrox never writes a buffer
    /// it does not own. Today no published storage is ever written, so that
    /// copy is a guard, not a path any kernel takes.
    pub fn as_mut_slice<T: Pod>(&mut self) -> &mut [T] {
        if matches!(self.buf, Some(Backing::External { .. })) {
            self.own_external();
        }
        let Some(buf) = &mut self.buf else {
            return &mut [];
        };
        // SAFETY: as in `as_slice`; `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(buf.as_ptr() as *mut T, self.len / size_of::<T>()) }
    }
}

impl Storage {
    /// Swaps an external backing for a pooled copy of its bytes. Should the
    /// pool refuse the allocation, this fails like any Rust allocation
    /// (`handle_alloc_error`): the only caller returns a slice, not a Result.
    fn own_external(&mut self) {
        let len = self.len;
        let copy = pool::take(len, false).unwrap_or_else(|_| {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(len.max(1), ALIGN)
                    .unwrap_or(std::alloc::Layout::new::<u8>()),
            )
        });
        if let Some(Backing::External { ptr, .. }) = &self.buf {
            // SAFETY: `ptr` addresses the owner's `len` initialised bytes
            // (checked in `from_external`), `copy` holds at least `len`
            // writable bytes, and the two cannot overlap (one is a fresh
            // pool block).
            unsafe { std::ptr::copy_nonoverlapping(*ptr, copy.as_ptr(), len) };
        }
        // Dropping the old backing releases the owner.
        self.buf = Some(Backing::Pooled(copy));
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        match self.buf.take() {
            Some(Backing::Pooled(buf)) => pool::give(buf),
            // Unmapping cannot fail in a way we could act on; memmap2 ignores it.
            Some(Backing::Mapped(map)) => drop(map),
            // The owner's own Drop releases its bytes (the C API's calls
            // the caller's release function, on whichever thread this is).
            Some(Backing::External { owner, .. }) => drop(owner),
            // The lender owns the bytes.
            Some(Backing::Lent(_)) | None => {}
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes)", self.len)
    }
}
