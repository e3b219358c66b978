//! safetensors files: save a map of named arrays, load one back.

use std::ffi::c_char;

use crate::array::{ferrox_map_string_to_array, raw_str};
use crate::error::{ferrox_error, ferrox_status, guard};
use crate::handle::{arg, check_slot, put};

/// Writes the arrays of `map` to the safetensors file at `path` (UTF-8),
/// evaluating them first. The file is replaced atomically.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_save_safetensors(
    path: *const c_char,
    map: Option<&ferrox_map_string_to_array>,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_save_safetensors";
    guard(OP, err, || {
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let arrays = arg(map, OP, "map")?.to_map();
        ferrox::io::save_safetensors(path, &arrays, None)?;
        Ok(())
    })
}

/// Loads the safetensors file at `path` into a new map. A corrupt file is
/// an error, never a crash or a huge allocation; a missing one is
/// `FERROX_ERROR_NOT_FOUND`.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_load_safetensors(
    res: Option<&mut Option<Box<ferrox_map_string_to_array>>>,
    path: *const c_char,
    err: Option<&mut Option<Box<ferrox_error>>>,
) -> ferrox_status {
    const OP: &str = "ferrox_load_safetensors";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let (arrays, _metadata) = ferrox::io::safetensors::load(path)?;
        put(res, ferrox_map_string_to_array::new(arrays));
        Ok(())
    })
}
