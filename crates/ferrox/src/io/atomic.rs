//! Saving without ever leaving a partial file under the final name.
//!
//! The bytes go to a temporary file in the target's directory (same file
//! system, so the rename cannot degrade into a copy), are flushed and synced
//! to the disk, and only then is the temporary renamed over the target: the
//! rename is atomic, so a reader sees the old file or the whole new one. A
//! failure (or a panic) anywhere before the rename deletes the temporary.
//! Syncing costs time on large files (see bench/io_bench.py) but without it
//! a power loss right after the rename can leave an empty file under the
//! final name on common file systems.

use crate::error::{Error, ErrorKind, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Buffer between the format writers and the file: large enough that a
/// tensor's bytes go to the kernel in few system calls.
const BUF: usize = 1 << 20;

/// Runs `write` on a buffered temporary file beside `path`, then syncs it and
/// renames it to `path`. `op` names the operation in errors.
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.bin");
/// ferrox::io::write_atomic(&path, "example", |w| {
///     w.write_all(b"hello").map_err(|e| ferrox::Error::new(ferrox::ErrorKind::Io, "example", e.to_string()))
/// })?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// // A failing writer leaves the old file alone.
/// let failed = ferrox::io::write_atomic(&path, "example", |_| {
///     Err(ferrox::Error::new(ferrox::ErrorKind::Value, "example", "no"))
/// });
/// assert!(failed.is_err());
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn write_atomic(
    path: &Path,
    op: &str,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let stem = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{stem}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        // Like File::create: 0o666 before the umask (tempfile's default is
        // 0o600, which would make saved files private).
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let temp = builder
        .tempfile_in(dir)
        .map_err(|e| Error::io(op, path, &e))?;
    let file = temp
        .as_file()
        .try_clone()
        .map_err(|e| Error::io(op, path, &e))?;
    let mut w = BufWriter::with_capacity(BUF, file);
    write(&mut w)?;
    let file = w.into_inner().map_err(|e| Error::io(op, path, e.error()))?;
    file.sync_all().map_err(|e| Error::io(op, path, &e))?;
    temp.persist(path)
        .map_err(|e| Error::io(op, path, &e.error))?;
    Ok(())
}

/// An error of the writer itself (a full disk, a closed pipe) during `op`.
pub(crate) fn write_error(op: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, op, format!("write failed: {e}"))
}

/// `write_all` with the error mapped for `op`.
pub(crate) fn put(w: &mut impl Write, op: &str, bytes: &[u8]) -> Result<()> {
    w.write_all(bytes).map_err(|e| write_error(op, e))
}
