//! numpy's `.npz` format: a zip archive of `NAME.npy` members, stored or
//! deflated. The zip container is the `zip` crate's; each member is read
//! into a buffer of its own (checked against its CRC by the crate) and
//! parsed by [`super::npy`], so its arrays view that buffer.
//!
//! A member's declared size is not trusted: it must be at most what its
//! compressed bytes can expand to (deflate's ratio is at most 1032:1), so a
//! forged size cannot make the loader allocate more than the file justifies.

use super::Arrays;
use super::source::Source;
use crate::error::{Error, Result};
use crate::graph::storage::Storage;
use std::io::{Cursor, Read, Seek, Write};
use std::path::Path;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

/// The most a deflate stream expands (RFC 1951: 258 bytes from 2 bits).
const MAX_RATIO: u64 = 1032;

/// Loads an `.npz` file: its members by name, without the `.npy` suffix.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("z.npz");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("a".into(), ferrox::ones(&[2], ferrox::DType::UInt16)?);
/// ferrox::io::savez(&path, &arrays, false)?;
/// assert_eq!(ferrox::io::npz::load(&path)?["a"].to_vec::<u16>()?, vec![1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Arrays> {
    load_source(&Source::open(path.as_ref(), "npz")?)
}

pub(crate) fn load_source(src: &Source) -> Result<Arrays> {
    let bytes = src.bytes();
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| src.bad(format!("not a valid zip archive: {e}")))?;
    let mut out = Arrays::new();
    for i in 0..archive.len() {
        let mut member = archive
            .by_index(i)
            .map_err(|e| src.bad(format!("zip member {i}: {e}")))?;
        if member.is_dir() {
            continue;
        }
        let name = member.name().to_string();
        let size = member.size();
        let limit = match member.compression() {
            CompressionMethod::Stored => member.compressed_size(),
            _ => member.compressed_size().saturating_mul(MAX_RATIO),
        };
        if size > limit {
            return Err(src.bad(format!(
                "member {name:?} claims {size} bytes from {} compressed bytes",
                member.compressed_size()
            )));
        }
        let size = usize::try_from(size)
            .map_err(|_| src.bad(format!("member {name:?} is too large ({size} bytes)")))?;
        let mut storage = Storage::new(size, false)?;
        member
            .read_exact(storage.as_mut_slice::<u8>())
            .map_err(|e| src.bad(format!("member {name:?}: {e}")))?;
        let mut probe = [0u8; 1];
        // Reading to the end also makes the crate check the CRC.
        match member.read(&mut probe) {
            Ok(0) => {}
            Ok(_) => return Err(src.bad(format!("member {name:?} is longer than declared"))),
            Err(e) => return Err(src.bad(format!("member {name:?}: {e}"))),
        }
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let member_src = Source::from_storage(storage, &format!("{}[{name}]", src.name), "npz");
        let array = super::npy::load_source(&member_src)?;
        if out.insert(key, array).is_some() {
            return Err(src.bad(format!("member {name:?} appears twice")));
        }
    }
    Ok(out)
}

/// Writes `arrays` as an `.npz` archive to `w` (`NAME.npy` per array),
/// deflated when `compressed`.
///
/// ```
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("x".into(), ferrox::zeros(&[8], ferrox::DType::Float64)?);
/// let mut bytes = std::io::Cursor::new(vec![]);
/// ferrox::io::npz::write(&mut bytes, &arrays, true)?;
/// let loaded = ferrox::io::load_bytes(bytes.get_ref(), ferrox::io::Format::Npz, "<memory>")?;
/// assert_eq!(loaded.into_arrays()["x"].shape(), &[8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn write<W: Write + Seek>(w: &mut W, arrays: &Arrays, compressed: bool) -> Result<()> {
    let op = if compressed {
        "savez_compressed"
    } else {
        "savez"
    };
    let zerr =
        |e: zip::result::ZipError| Error::new(crate::error::ErrorKind::Io, op, e.to_string());
    let mut zip = zip::ZipWriter::new(w);
    let method = if compressed {
        CompressionMethod::Deflated
    } else {
        CompressionMethod::Stored
    };
    for (name, array) in arrays {
        // zip64 records for members of 4 GiB or more (minus header room).
        let large = array.nbytes() >= (u32::MAX as usize) - (1 << 16);
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .large_file(large);
        zip.start_file(format!("{name}.npy"), options)
            .map_err(zerr)?;
        super::npy::write(&mut zip, array)?;
    }
    zip.finish().map_err(zerr)?;
    Ok(())
}
