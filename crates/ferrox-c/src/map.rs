//! Maps by name, in name order: `ferrox_map_string_to_array` (the arrays a
//! safetensors or gguf file holds) and `ferrox_map_string_to_string` (a
//! safetensors file's metadata), as mlx-c's maps. Both are internally
//! synchronised, so any thread may use one; both hand out keys (and the
//! string map its values) as C strings they own.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};

use ferrox::sync::{lock, Mutex};
use ferrox::Array;

use crate::array::{ferrox_array, raw_str};
use crate::error::{cstring_lossy, ferrox_error, ferrox_status, guard, CError, FERROX_ERROR_VALUE};
use crate::handle::{arg, check_slot, free_handle, impl_handle, put, Slot};

/// The entries of a map: each key with its C string, and the value.
///
/// Invariant: a key's C string is made once, when the key is first set, and
/// lives until the map is freed, so a pointer from `key_ptr` stays valid
/// however the map changes later.
struct Entries<V>(Mutex<BTreeMap<String, (CString, V)>>);

impl<V: Clone> Entries<V> {
    fn new(map: BTreeMap<String, V>) -> Entries<V> {
        let entries = map
            .into_iter()
            .map(|(k, v)| (k.clone(), (cstring_lossy(k), v)))
            .collect();
        Entries(Mutex::new(entries))
    }
    fn to_map(&self) -> BTreeMap<String, V> {
        lock(&self.0)
            .iter()
            .map(|(k, (_, v))| (k.clone(), v.clone()))
            .collect()
    }
    fn insert(&self, key: &str, value: V) {
        let mut entries = lock(&self.0);
        match entries.get_mut(key) {
            Some(entry) => entry.1 = value,
            None => {
                entries.insert(key.to_string(), (cstring_lossy(key.to_string()), value));
            }
        }
    }
    fn get<T>(&self, key: &str, read: impl FnOnce(&V) -> T) -> Option<T> {
        lock(&self.0).get(key).map(|e| read(&e.1))
    }
    fn len(&self) -> usize {
        lock(&self.0).len()
    }
    fn key_ptr(&self, index: usize) -> *const c_char {
        lock(&self.0)
            .values()
            .nth(index)
            .map_or(std::ptr::null(), |e| e.0.as_ptr())
    }
}

fn missing(op: &str, key: &str) -> CError {
    CError::new(FERROX_ERROR_VALUE, format!("{op}: no entry named {key:?}"))
}

/// Arrays by name, in name order (mlx-c's `mlx_map_string_to_array`).
/// Internally synchronised. Free it with [`ferrox_map_string_to_array_free`].
pub struct ferrox_map_string_to_array {
    magic: u64,
    entries: Entries<Array>,
}
impl_handle!(ferrox_map_string_to_array, 0xfe77_0000_0000_3a93);

impl ferrox_map_string_to_array {
    pub(crate) fn new(map: BTreeMap<String, Array>) -> ferrox_map_string_to_array {
        ferrox_map_string_to_array {
            magic: <Self as crate::handle::Handle>::MAGIC,
            entries: Entries::new(map),
        }
    }
    pub(crate) fn to_map(&self) -> BTreeMap<String, Array> {
        self.entries.to_map()
    }
}

/// Strings by name, in name order (mlx-c's `mlx_map_string_to_string`): a
/// safetensors file's metadata. Internally synchronised. Free it with
/// [`ferrox_map_string_to_string_free`].
pub struct ferrox_map_string_to_string {
    magic: u64,
    /// Values as C strings, so `_get` can lend them; a value lives until
    /// its key is set again or the map is freed.
    entries: Entries<CString>,
}
impl_handle!(ferrox_map_string_to_string, 0xfe77_0000_0000_3a94);

impl ferrox_map_string_to_string {
    pub(crate) fn new(map: BTreeMap<String, String>) -> ferrox_map_string_to_string {
        let map = map
            .into_iter()
            .map(|(k, v)| (k, cstring_lossy(v)))
            .collect();
        ferrox_map_string_to_string {
            magic: <Self as crate::handle::Handle>::MAGIC,
            entries: Entries::new(map),
        }
    }
    pub(crate) fn to_map(&self) -> BTreeMap<String, String> {
        self.entries
            .to_map()
            .into_iter()
            .map(|(k, v)| (k, v.to_string_lossy().into_owned()))
            .collect()
    }
}

/// A new, empty map of arrays.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_array_new(
    res: Slot<'_, ferrox_map_string_to_array>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_array_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        put(res, ferrox_map_string_to_array::new(BTreeMap::new()));
        Ok(())
    })
}

/// Sets `map[key] = a` (replacing an earlier array of that name).
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_map_string_to_array_insert(
    map: Option<&ferrox_map_string_to_array>,
    key: *const c_char,
    a: Option<&ferrox_array>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_array_insert";
    guard(OP, err, || {
        let m = arg(map, OP, "map")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let key = unsafe { raw_str(key, OP, "key") }?;
        m.entries.insert(key, arg(a, OP, "a")?.array.clone());
        Ok(())
    })
}

/// A new handle to `map[key]`; a missing key is a `FERROX_ERROR_VALUE`
/// naming it.
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_map_string_to_array_get(
    res: Slot<'_, ferrox_array>,
    map: Option<&ferrox_map_string_to_array>,
    key: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_array_get";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let m = arg(map, OP, "map")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let key = unsafe { raw_str(key, OP, "key") }?;
        let a = m
            .entries
            .get(key, Array::clone)
            .ok_or_else(|| missing(OP, key))?;
        put(res, ferrox_array::new(a));
        Ok(())
    })
}

/// The number of entries of `map`; 0 if `map` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_array_size(
    map: Option<&ferrox_map_string_to_array>,
) -> usize {
    arg(map, "", "").map_or(0, |m| m.entries.len())
}

/// The `index`-th key of `map` in name order: a NUL-terminated string
/// owned by `map`, valid until `map` is freed. NULL if `index` is out of
/// range or `map` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_array_key(
    map: Option<&ferrox_map_string_to_array>,
    index: usize,
) -> *const c_char {
    arg(map, "", "").map_or(std::ptr::null(), |m| m.entries.key_ptr(index))
}

/// Frees a map (not the caller's array handles). NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_array_free(
    map: Option<Box<ferrox_map_string_to_array>>,
) -> ferrox_status {
    free_handle("ferrox_map_string_to_array_free", map)
}

/// A new, empty map of strings.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_string_new(
    res: Slot<'_, ferrox_map_string_to_string>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_string_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        put(res, ferrox_map_string_to_string::new(BTreeMap::new()));
        Ok(())
    })
}

/// Sets `map[key] = value` (a copy; replacing an earlier value of that
/// name, whose pointer from [`ferrox_map_string_to_string_get`] then
/// dangles).
///
/// # Safety
/// `key` and `value` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ferrox_map_string_to_string_insert(
    map: Option<&ferrox_map_string_to_string>,
    key: *const c_char,
    value: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_string_insert";
    guard(OP, err, || {
        let m = arg(map, OP, "map")?;
        // SAFETY: the caller passes NUL-terminated strings.
        let (key, value) = unsafe { (raw_str(key, OP, "key")?, raw_str(value, OP, "value")?) };
        m.entries.insert(key, cstring_lossy(value.to_string()));
        Ok(())
    })
}

/// Writes to `*out` `map[key]`: a NUL-terminated string owned by `map`,
/// valid until `key` is set again or `map` is freed. A missing key is a
/// `FERROX_ERROR_VALUE` naming it.
///
/// # Safety
/// `key` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_map_string_to_string_get(
    out: Option<&mut *const c_char>,
    map: Option<&ferrox_map_string_to_string>,
    key: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_map_string_to_string_get";
    guard(OP, err, || {
        let out = out.ok_or_else(|| CError::null(OP, "out"))?;
        let m = arg(map, OP, "map")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let key = unsafe { raw_str(key, OP, "key") }?;
        // The pointer stays valid after the lock is released: a CString's
        // bytes are on the heap and the map keeps them until the key is set
        // again.
        *out = m
            .entries
            .get(key, |v| v.as_ptr())
            .ok_or_else(|| missing(OP, key))?;
        Ok(())
    })
}

/// The number of entries of `map`; 0 if `map` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_string_size(
    map: Option<&ferrox_map_string_to_string>,
) -> usize {
    arg(map, "", "").map_or(0, |m| m.entries.len())
}

/// The `index`-th key of `map` in name order: a NUL-terminated string
/// owned by `map`, valid until `map` is freed. NULL if `index` is out of
/// range or `map` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_string_key(
    map: Option<&ferrox_map_string_to_string>,
    index: usize,
) -> *const c_char {
    arg(map, "", "").map_or(std::ptr::null(), |m| m.entries.key_ptr(index))
}

/// Frees a map of strings. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_map_string_to_string_free(
    map: Option<Box<ferrox_map_string_to_string>>,
) -> ferrox_status {
    free_handle("ferrox_map_string_to_string_free", map)
}
