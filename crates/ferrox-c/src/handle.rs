//! Handles: how a Rust value becomes an opaque C pointer and back.
//!
//! Every handle is a `Box` of a struct whose first job is a `magic` word
//! naming its type. The C signatures use `Option<&T>` for an input handle
//! (NULL is `None`, so a NULL argument is an error, not a crash),
//! `Option<Box<T>>` for a handle whose ownership moves (`_free`), and
//! [`Slot`] (`T**`) for a result. Ownership and aliasing then follow from
//! the types: an entry point never frees an input it borrowed, and a result
//! replaces, after it is computed, whatever handle the slot held (so
//! `ferrox_add(&x, x, y, ...)` works, as in mlx-c).
//!
//! The magic check catches a freed handle whose memory still reads as
//! freed, and anything that is not a handle of this library but still
//! points at readable memory; it cannot catch every dangling pointer (that
//! is the caller's side of the contract, docs/embedding.md).

use crate::error::{ferrox_status, CError, CResult, FERROX_ERROR_INVALID_HANDLE, FERROX_OK};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A result slot: a nullable pointer to a handle pointer (`T**` in C).
pub type Slot<'a, T> = Option<&'a mut Option<Box<T>>>;

/// A handle type: it knows its name and its magic word.
pub(crate) trait Handle: Sized {
    /// The C type name, for messages.
    const NAME: &'static str;
    /// The word a live handle of this type starts with.
    const MAGIC: u64;
    /// The handle's magic word as stored.
    fn magic(&self) -> u64;
    /// Marks the handle dead (called on drop).
    fn kill(&mut self);
    /// True for a live handle of this type.
    fn is_live(&self) -> bool {
        self.magic() == Self::MAGIC
    }
}

/// Implements [`Handle`] for a struct with a `magic: u64` field, and a
/// `Drop` that marks it dead so that a use after free is likely caught.
macro_rules! impl_handle {
    ($t:ident, $magic:expr) => {
        impl $crate::handle::Handle for $t {
            const NAME: &'static str = stringify!($t);
            const MAGIC: u64 = $magic;
            fn magic(&self) -> u64 {
                self.magic
            }
            fn kill(&mut self) {
                // SAFETY: `self.magic` is a valid, aligned u64 of a live
                // value; the volatile store keeps the compiler from
                // dropping a write to memory that is about to be freed.
                unsafe { std::ptr::write_volatile(&mut self.magic, 0xdead_dead_dead_dead) }
            }
        }
        impl Drop for $t {
            fn drop(&mut self) {
                <$t as $crate::handle::Handle>::kill(self);
            }
        }
    };
}
pub(crate) use impl_handle;

/// The live handle behind an input argument, or an error naming the op and
/// the argument.
pub(crate) fn arg<'a, T: Handle>(h: Option<&'a T>, op: &str, name: &str) -> CResult<&'a T> {
    match h {
        None => Err(CError::null(op, name)),
        Some(h) if h.is_live() => Ok(h),
        Some(_) => Err(CError::new(
            FERROX_ERROR_INVALID_HANDLE,
            format!(
                "{op}: argument `{name}` is not a live {} (freed, or not made by ferrox)",
                T::NAME
            ),
        )),
    }
}

/// An optional input handle: NULL is `None`; anything else must be a live
/// handle of the type, as for [`arg`].
pub(crate) fn opt_arg<'a, T: Handle>(
    h: Option<&'a T>,
    op: &str,
    name: &str,
) -> CResult<Option<&'a T>> {
    h.map(|h| arg(Some(h), op, name)).transpose()
}

/// Checks a result slot before any work is done: not NULL, and holding
/// NULL or a live handle of the type (which the result will replace).
pub(crate) fn check_slot<T: Handle>(slot: &Slot<'_, T>, op: &str, name: &str) -> CResult<()> {
    match slot {
        None => Err(CError::null(op, name)),
        Some(s) => match s.as_deref() {
            Some(old) if !old.is_live() => Err(CError::new(
                FERROX_ERROR_INVALID_HANDLE,
                format!(
                    "{op}: `*{name}` must be NULL or a live {} that the result replaces",
                    T::NAME
                ),
            )),
            _ => Ok(()),
        },
    }
}

/// Writes a result into a slot already checked by [`check_slot`]: the old
/// handle, if any, is freed after the new one is in place.
pub(crate) fn put<T: Handle>(slot: Slot<'_, T>, value: T) {
    if let Some(s) = slot {
        let old = s.replace(Box::new(value));
        drop(old);
    }
}

/// The body of every `_free`: NULL is a no-op; a handle that is not live
/// is reported and left alone (freeing memory we did not allocate would be
/// worse than leaking it).
pub(crate) fn free_handle<T: Handle>(op: &'static str, h: Option<Box<T>>) -> ferrox_status {
    match h {
        None => FERROX_OK,
        Some(b) if !b.is_live() => {
            std::mem::forget(b);
            FERROX_ERROR_INVALID_HANDLE
        }
        Some(b) => match catch_unwind(AssertUnwindSafe(move || drop(b))) {
            Ok(()) => FERROX_OK,
            Err(_) => {
                let _ = op;
                crate::error::FERROX_ERROR_PANIC
            }
        },
    }
}
