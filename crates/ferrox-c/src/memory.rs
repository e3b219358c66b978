//! Memory: the counters and limits of ferrox's buffer cache (mlx-c's
//! `mlx_get_active_memory` and friends). They are process-wide, like the
//! cache, and safe to call from any thread. Getters write through `out`.

use crate::error::{ferrox_error, ferrox_status, guard, CError};
use crate::handle::Slot;

/// The body of a getter: a NULL `out` is an error, else write the value.
fn read(
    op: &'static str,
    out: Option<&mut usize>,
    err: Slot<'_, ferrox_error>,
    value: fn() -> usize,
) -> ferrox_status {
    guard(op, err, || {
        *out.ok_or_else(|| CError::null(op, "out"))? = value();
        Ok(())
    })
}

/// Bytes of array buffers in use (not counting the cache, mapped files or
/// lent buffers).
#[no_mangle]
pub extern "C" fn ferrox_get_active_memory(
    out: Option<&mut usize>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    read(
        "ferrox_get_active_memory",
        out,
        err,
        ferrox::get_active_memory,
    )
}

/// The high-water mark of active memory since the start or the last
/// [`ferrox_reset_peak_memory`].
#[no_mangle]
pub extern "C" fn ferrox_get_peak_memory(
    out: Option<&mut usize>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    read("ferrox_get_peak_memory", out, err, ferrox::get_peak_memory)
}

/// Bytes held in the buffer cache for reuse.
#[no_mangle]
pub extern "C" fn ferrox_get_cache_memory(
    out: Option<&mut usize>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    read(
        "ferrox_get_cache_memory",
        out,
        err,
        ferrox::get_cache_memory,
    )
}

/// The memory limit in bytes (allocations past it first free the cache).
#[no_mangle]
pub extern "C" fn ferrox_get_memory_limit(
    out: Option<&mut usize>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    read(
        "ferrox_get_memory_limit",
        out,
        err,
        ferrox::get_memory_limit,
    )
}

/// Resets the peak: [`ferrox_get_peak_memory`] then reports the high-water
/// mark of later allocations.
#[no_mangle]
pub extern "C" fn ferrox_reset_peak_memory(err: Slot<'_, ferrox_error>) -> ferrox_status {
    guard("ferrox_reset_peak_memory", err, || {
        ferrox::reset_peak_memory();
        Ok(())
    })
}

/// Frees every buffer in the cache.
#[no_mangle]
pub extern "C" fn ferrox_clear_cache(err: Slot<'_, ferrox_error>) -> ferrox_status {
    guard("ferrox_clear_cache", err, || {
        ferrox::clear_cache();
        Ok(())
    })
}

/// Sets the memory limit to `limit` bytes; writes the previous limit to
/// `*out` when `out` is not NULL.
#[no_mangle]
pub extern "C" fn ferrox_set_memory_limit(
    out: Option<&mut usize>,
    limit: usize,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    guard("ferrox_set_memory_limit", err, || {
        let old = ferrox::set_memory_limit(limit);
        if let Some(out) = out {
            *out = old;
        }
        Ok(())
    })
}

/// Sets the most bytes the cache keeps (0: no cache); writes the previous
/// limit to `*out` when `out` is not NULL.
#[no_mangle]
pub extern "C" fn ferrox_set_cache_limit(
    out: Option<&mut usize>,
    limit: usize,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    guard("ferrox_set_cache_limit", err, || {
        let old = ferrox::set_cache_limit(limit);
        if let Some(out) = out {
            *out = old;
        }
        Ok(())
    })
}
