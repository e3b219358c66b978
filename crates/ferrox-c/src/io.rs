//! Files: safetensors (arrays and string metadata), npy (one array) and
//! gguf (arrays). Saves evaluate the arrays and replace the file
//! atomically; loads map large files instead of reading them, and a
//! corrupt file is an error, never a crash or a huge allocation; a missing
//! one is `FERROX_ERROR_NOT_FOUND`.

use std::collections::BTreeMap;
use std::ffi::c_char;

use ferrox::io::{Format, Loaded};

use crate::array::{ferrox_array, raw_str};
use crate::error::{ferrox_error, ferrox_status, guard, CError, CResult};
use crate::handle::{arg, check_slot, opt_arg, put, Slot};
use crate::map::{ferrox_map_string_to_array, ferrox_map_string_to_string};

/// The arrays of a file loaded as `format`.
fn load_named(op: &str, path: &str, format: Format) -> CResult<ferrox::io::Arrays> {
    match ferrox::io::load(path, Some(format))? {
        Loaded::Arrays { arrays, .. } => Ok(arrays),
        Loaded::Array(_) => Err(CError::invalid(
            op,
            format!("{path}: holds one unnamed array"),
        )),
    }
}

/// Writes the arrays of `map` and, if `metadata` is not NULL, its strings
/// to the safetensors file at `path` (UTF-8).
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_save_safetensors(
    path: *const c_char,
    map: Option<&ferrox_map_string_to_array>,
    metadata: Option<&ferrox_map_string_to_string>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_save_safetensors";
    guard(OP, err, || {
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let arrays = arg(map, OP, "map")?.to_map();
        let meta = opt_arg(metadata, OP, "metadata")?.map(|m| m.to_map());
        ferrox::io::save_safetensors(path, &arrays, meta.as_ref())?;
        Ok(())
    })
}

/// Loads the safetensors file at `path`: its arrays into a new map at
/// `*res`, and, if `res_metadata` is not NULL, its metadata strings into a
/// new map there.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_load_safetensors(
    res: Slot<'_, ferrox_map_string_to_array>,
    res_metadata: Slot<'_, ferrox_map_string_to_string>,
    path: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_load_safetensors";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let (arrays, metadata) = ferrox::io::safetensors::load(path)?;
        put(res, ferrox_map_string_to_array::new(arrays));
        if res_metadata.is_some() {
            put(res_metadata, ferrox_map_string_to_string::new(metadata));
        }
        Ok(())
    })
}

/// Writes `a` to the npy file at `path`.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_save(
    path: *const c_char,
    a: Option<&ferrox_array>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_save";
    guard(OP, err, || {
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        ferrox::io::save(path, &arg(a, OP, "a")?.array)?;
        Ok(())
    })
}

/// Loads the npy file at `path` into a new array at `*res`. A truncated
/// file fails here or, for a mapped one, when the array is evaluated.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_load(
    res: Slot<'_, ferrox_array>,
    path: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_load";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let a = match ferrox::io::load(path, Some(Format::Npy))? {
            Loaded::Array(a) => a,
            Loaded::Arrays { .. } => {
                return Err(CError::invalid(OP, format!("{path}: not an npy file")));
            }
        };
        put(res, ferrox_array::new(a));
        Ok(())
    })
}

/// Writes the arrays of `map` to the gguf file (version 3) at `path`,
/// with no metadata (gguf's typed metadata is not in the C API yet).
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_save_gguf(
    path: *const c_char,
    map: Option<&ferrox_map_string_to_array>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_save_gguf";
    guard(OP, err, || {
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let arrays = arg(map, OP, "map")?.to_map();
        ferrox::io::save_gguf(path, &arrays, &BTreeMap::new())?;
        Ok(())
    })
}

/// Loads the arrays of the gguf file at `path` into a new map at `*res`
/// (quantized tensors dequantized as ferrox's loader does; the metadata is
/// not returned).
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_load_gguf(
    res: Slot<'_, ferrox_map_string_to_array>,
    path: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_load_gguf";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let arrays = load_named(OP, path, Format::Gguf)?;
        put(res, ferrox_map_string_to_array::new(arrays));
        Ok(())
    })
}
