//! Exported functions: write a closure's traces to a file (`.fxfn`, a
//! safetensors file holding the program and its constants) and import it
//! back, here or in another process or language (Python's
//! `ferrox.core.export_function` reads and writes the same files).
//!
//! An imported function is immutable and shared: any thread may call one,
//! concurrently, and every call replays the tapes built once at import. An
//! exporter is a mutable builder: calls that add traces to one exporter
//! are serialised by its lock.

use std::ffi::{c_char, CString};

use ferrox::io::function::{self, FunctionExporter, ImportedFunction, Kwargs};
use ferrox::sync::{lock, Mutex};

use crate::array::{ferrox_vector_array, opt_str, raw_str};
use crate::closure::ferrox_closure;
use crate::error::{cstring_lossy, ferrox_error, ferrox_status, guard, CResult};
use crate::handle::{arg, check_slot, free_handle, impl_handle, opt_arg, put, Handle, Slot};
use crate::map::ferrox_map_string_to_array;
use crate::stream::{ferrox_stream, stream_of};

/// NULL is no metadata (`""`).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn metadata_of<'a>(p: *const c_char, op: &str) -> CResult<&'a str> {
    // SAFETY: forwarded from the caller.
    Ok(unsafe { opt_str(p, op, "metadata") }?.unwrap_or(""))
}

/// The closure's body as an exportable function (positional arguments; a
/// C closure takes no keywords).
fn exportable(
    f: &ferrox_closure,
) -> impl Fn(&[ferrox::Array], &Kwargs) -> ferrox::Result<Vec<ferrox::Array>> + Send + Sync + 'static
{
    let body = f.body.clone();
    move |xs: &[ferrox::Array], _: &Kwargs| body(xs)
}

/// Traces `f` once on inputs like `args` and writes it to `path` (replaced
/// atomically). With `shapeless` the trace serves every input shape of the
/// same ranks; `metadata` (NULL: none) is stored as it is.
///
/// # Safety
/// `path` is a NUL-terminated string; `metadata` NULL or one.
#[no_mangle]
pub unsafe extern "C" fn ferrox_export_function(
    path: *const c_char,
    f: Option<&ferrox_closure>,
    args: Option<&ferrox_vector_array>,
    shapeless: bool,
    metadata: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_export_function";
    guard(OP, err, || {
        // SAFETY: the caller passes NUL-terminated strings (or NULL metadata).
        let (path, metadata) = unsafe { (raw_str(path, OP, "path")?, metadata_of(metadata, OP)?) };
        let fun = exportable(arg(f, OP, "f")?);
        let xs = arg(args, OP, "args")?.items();
        function::export_function(path, fun, &xs, &Kwargs::new(), shapeless, metadata)?;
        Ok(())
    })
}

/// An exporter: each [`ferrox_function_exporter_apply`] adds one trace (a
/// new input signature) to its file and rewrites it. Free it with
/// [`ferrox_function_exporter_free`].
pub struct ferrox_function_exporter {
    magic: u64,
    exporter: Mutex<FunctionExporter>,
}
impl_handle!(ferrox_function_exporter, 0xfe77_0000_0000_e4f0);

/// A new exporter of `f` to `path` (nothing is written until the first
/// apply).
///
/// # Safety
/// `path` is a NUL-terminated string; `metadata` NULL or one.
#[no_mangle]
pub unsafe extern "C" fn ferrox_function_exporter_new(
    res: Slot<'_, ferrox_function_exporter>,
    path: *const c_char,
    f: Option<&ferrox_closure>,
    shapeless: bool,
    metadata: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_function_exporter_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes NUL-terminated strings (or NULL metadata).
        let (path, metadata) = unsafe { (raw_str(path, OP, "path")?, metadata_of(metadata, OP)?) };
        let fun = exportable(arg(f, OP, "f")?);
        let exporter = function::exporter(path, fun, shapeless, metadata);
        put(
            res,
            ferrox_function_exporter {
                magic: <ferrox_function_exporter as Handle>::MAGIC,
                exporter: Mutex::new(exporter),
            },
        );
        Ok(())
    })
}

/// Traces the exporter's function on inputs like `args` and adds the trace
/// to its file. A signature already exported is a `FERROX_ERROR_VALUE`.
#[no_mangle]
pub extern "C" fn ferrox_function_exporter_apply(
    exporter: Option<&ferrox_function_exporter>,
    args: Option<&ferrox_vector_array>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_function_exporter_apply";
    guard(OP, err, || {
        let ex = arg(exporter, OP, "exporter")?;
        let xs = arg(args, OP, "args")?.items();
        lock(&ex.exporter).call(&xs, &Kwargs::new())?;
        Ok(())
    })
}

/// Frees an exporter (its file is complete after every apply). NULL is a
/// no-op.
#[no_mangle]
pub extern "C" fn ferrox_function_exporter_free(
    exporter: Option<Box<ferrox_function_exporter>>,
) -> ferrox_status {
    free_handle("ferrox_function_exporter_free", exporter)
}

/// A function imported from a file. Free it with
/// [`ferrox_imported_function_free`].
pub struct ferrox_imported_function {
    magic: u64,
    function: ImportedFunction,
    metadata: CString,
}
impl_handle!(ferrox_imported_function, 0xfe77_0000_0000_1f0e);

/// Imports the function exported to `path`. A file that is not an
/// exported function, or of an unknown version, is an error naming it.
///
/// # Safety
/// `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ferrox_imported_function_new(
    res: Slot<'_, ferrox_imported_function>,
    path: *const c_char,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_imported_function_new";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        // SAFETY: the caller passes a NUL-terminated string.
        let path = unsafe { raw_str(path, OP, "path") }?;
        let function = function::import_function(path)?;
        let metadata = cstring_lossy(function.metadata().to_string());
        put(
            res,
            ferrox_imported_function {
                magic: <ferrox_imported_function as Handle>::MAGIC,
                function,
                metadata,
            },
        );
        Ok(())
    })
}

/// Calls the imported function on `args` and the keyword arguments of
/// `kwargs` (NULL: none), on stream `s` (NULL: the default), writing its
/// outputs to a new vector. Inputs that match no exported trace are an
/// error listing what the file holds.
#[no_mangle]
pub extern "C" fn ferrox_imported_function_apply(
    res: Slot<'_, ferrox_vector_array>,
    f: Option<&ferrox_imported_function>,
    args: Option<&ferrox_vector_array>,
    kwargs: Option<&ferrox_map_string_to_array>,
    s: Option<&ferrox_stream>,
    err: Slot<'_, ferrox_error>,
) -> ferrox_status {
    const OP: &str = "ferrox_imported_function_apply";
    guard(OP, err, || {
        check_slot(&res, OP, "res")?;
        let f = &arg(f, OP, "f")?.function;
        let xs = arg(args, OP, "args")?.items();
        let kw = opt_arg(kwargs, OP, "kwargs")?.map_or_else(Kwargs::new, |m| m.to_map());
        let out = ferrox::with_stream(stream_of(s, OP)?, || f.call(&xs, &kw))?;
        put(res, ferrox_vector_array::new(out));
        Ok(())
    })
}

/// The metadata stored with an imported function: a NUL-terminated string
/// owned by `f`, valid until `f` is freed; NULL if `f` is NULL or not live.
#[no_mangle]
pub extern "C" fn ferrox_imported_function_metadata(
    f: Option<&ferrox_imported_function>,
) -> *const c_char {
    arg(f, "", "").map_or(std::ptr::null(), |f| f.metadata.as_ptr())
}

/// Frees an imported function. NULL is a no-op.
#[no_mangle]
pub extern "C" fn ferrox_imported_function_free(
    f: Option<Box<ferrox_imported_function>>,
) -> ferrox_status {
    free_handle("ferrox_imported_function_free", f)
}
