//! Loading and saving arrays: `.npy`, `.npz`, `.safetensors` and `.gguf`
//! (MLX's `load`, `save`, `savez`, `save_safetensors`, `save_gguf`).
//!
//! Each format has its own file; this one dispatches on the format
//! ([`Format`], from the extension unless given) and holds the shared
//! vocabulary: what a load returns ([`Loaded`], [`Metadata`]).
//!
//! How bytes become arrays (`source.rs`): a file is mapped (private,
//! copy-on-write) when it is large and read into one buffer when it is
//! small or comes from memory; every tensor whose bytes can be used as they
//! are is then a view of that one storage (no copy, no resident memory until
//! read). A tensor that needs work (bool normalisation, byte swapping, an
//! unaligned offset, gguf dequantisation) is a lazy node that does it when
//! evaluated. Saving writes a temporary file beside the target and renames
//! it over the target (`atomic.rs`), so a crash never leaves a truncated
//! file under the final name, and arrays mapped from the old file stay
//! valid (the old inode lives on).
//!
//! Bad files are [`Error`]s of kind [`ErrorKind::Value`](crate::ErrorKind)
//! naming the file, the format and the bad value; operating-system failures
//! are [`ErrorKind::Io`](crate::ErrorKind) /
//! [`ErrorKind::NotFound`](crate::ErrorKind). No length or count read from
//! a file is trusted before it is checked against the bytes that are there.
//!
//! ```
//! use ferrox::io::{self, Loaded};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("x.npy");
//! let x = ferrox::arange(0.0, 6.0, 1.0, ferrox::DType::Float32)?.reshape(&[2, 3])?;
//! io::save(&path, &x)?;
//! let Loaded::Array(y) = io::load(&path, None)? else { unreachable!() };
//! assert!(ferrox::array_equal(&x, &y, false)?.item::<bool>()?);
//! # Ok::<(), ferrox::Error>(())
//! ```

mod atomic;
pub mod function;
pub mod gguf;
pub mod npy;
pub mod npz;
pub mod safetensors;
mod source;

use crate::error::{Error, Result};
use crate::graph::array::Array;
use std::collections::BTreeMap;
use std::path::Path;

pub use crate::ops::fp8::from_fp8;
pub use atomic::write_atomic;
pub use function::{
    FunctionExporter, ImportedFunction, Kwargs, export_function, exporter, import_function,
};
pub use gguf::{GgufType, GgufValue};

/// Named arrays, as `savez`, `save_safetensors` and `save_gguf` take them and
/// the dictionary formats load them (sorted by name).
pub type Arrays = BTreeMap<String, Array>;

/// A file format [`load`] understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// numpy's single-array `.npy`.
    Npy,
    /// numpy's zip of `.npy` files.
    Npz,
    /// Hugging Face's `.safetensors`.
    Safetensors,
    /// llama.cpp's `.gguf` (version 2 or 3).
    Gguf,
}

impl Format {
    /// The format named `name` (`"npy"`, `"npz"`, `"safetensors"`, `"gguf"`).
    ///
    /// ```
    /// use ferrox::io::Format;
    /// assert_eq!(Format::from_name("gguf")?, Format::Gguf);
    /// assert!(Format::from_name("pt").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_name(name: &str) -> Result<Format> {
        match name {
            "npy" => Ok(Format::Npy),
            "npz" => Ok(Format::Npz),
            "safetensors" => Ok(Format::Safetensors),
            "gguf" => Ok(Format::Gguf),
            _ => Err(Error::value(
                "load",
                format!("unknown file format {name:?} (npy, npz, safetensors, gguf)"),
            )),
        }
    }

    /// The format of `path`, from its extension.
    ///
    /// ```
    /// use ferrox::io::Format;
    /// assert_eq!(Format::from_path("model.safetensors")?, Format::Safetensors);
    /// assert!(Format::from_path("model").is_err());
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Format> {
        let path = path.as_ref();
        let ext = path.extension().and_then(|e| e.to_str()).ok_or_else(|| {
            Error::value(
                "load",
                format!(
                    "{}: could not infer the file format from the extension",
                    path.display()
                ),
            )
        })?;
        Format::from_name(ext)
    }

    /// The format's name, which is also its extension.
    pub fn name(self) -> &'static str {
        match self {
            Format::Npy => "npy",
            Format::Npz => "npz",
            Format::Safetensors => "safetensors",
            Format::Gguf => "gguf",
        }
    }
}

/// The metadata a file carried besides its arrays.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Metadata {
    /// npy and npz have none.
    #[default]
    None,
    /// safetensors' `__metadata__`: strings to strings.
    Safetensors(BTreeMap<String, String>),
    /// gguf's key-value section, every value type kept exactly.
    Gguf(BTreeMap<String, GgufValue>),
}

/// What [`load`] returns: one array (npy) or named arrays and metadata.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// The array of an `.npy` file.
    Array(Array),
    /// The arrays of an `.npz`, `.safetensors` or `.gguf` file.
    Arrays {
        /// The arrays by name.
        arrays: Arrays,
        /// The file's metadata ([`Metadata::None`] for npz).
        metadata: Metadata,
    },
}

impl Loaded {
    /// The arrays by name (an npy file's array is named `""`).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("w.safetensors");
    /// let mut arrays = ferrox::io::Arrays::new();
    /// arrays.insert("w".into(), ferrox::ones(&[2], ferrox::DType::Float16)?);
    /// ferrox::io::save_safetensors(&path, &arrays, None)?;
    /// let loaded = ferrox::io::load(&path, None)?.into_arrays();
    /// assert_eq!(loaded["w"].dtype(), ferrox::DType::Float16);
    /// # Ok::<(), ferrox::Error>(())
    /// ```
    pub fn into_arrays(self) -> Arrays {
        match self {
            Loaded::Array(a) => Arrays::from([(String::new(), a)]),
            Loaded::Arrays { arrays, .. } => arrays,
        }
    }
}

/// Loads `path` in `format` (from the extension when `None`).
///
/// An npy file gives [`Loaded::Array`]; the other formats give
/// [`Loaded::Arrays`] with their metadata. Large files are mapped, not read:
/// the arrays are views of the mapping and cost no memory until read.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.npz");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("a".into(), ferrox::zeros(&[3], ferrox::DType::Int32)?);
/// ferrox::io::savez(&path, &arrays, false)?;
/// let loaded = ferrox::io::load(&path, None)?.into_arrays();
/// assert_eq!(loaded["a"].shape(), &[3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>, format: Option<Format>) -> Result<Loaded> {
    let path = path.as_ref();
    let format = match format {
        Some(f) => f,
        None => Format::from_path(path)?,
    };
    let src = source::Source::open(path, format.name())?;
    load_source(&src, format)
}

/// Loads a file's bytes held in memory (a Python file object's contents,
/// a download); `name` names it in error messages. The bytes are copied
/// once into an aligned buffer the arrays then view.
///
/// ```
/// let x = ferrox::ones(&[2, 2], ferrox::DType::BFloat16)?;
/// let mut bytes = vec![];
/// ferrox::io::npy::write(&mut bytes, &x)?;
/// let y = ferrox::io::load_bytes(&bytes, ferrox::io::Format::Npy, "<memory>")?;
/// assert_eq!(y.into_arrays()[""].dtype(), ferrox::DType::BFloat16);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load_bytes(bytes: &[u8], format: Format, name: &str) -> Result<Loaded> {
    let src = source::Source::from_bytes(bytes, name, format.name())?;
    load_source(&src, format)
}

fn load_source(src: &source::Source, format: Format) -> Result<Loaded> {
    Ok(match format {
        Format::Npy => Loaded::Array(npy::load_source(src)?),
        Format::Npz => Loaded::Arrays {
            arrays: npz::load_source(src)?,
            metadata: Metadata::None,
        },
        Format::Safetensors => {
            let (arrays, meta) = safetensors::load_source(src)?;
            Loaded::Arrays {
                arrays,
                metadata: Metadata::Safetensors(meta),
            }
        }
        Format::Gguf => {
            let (arrays, meta) = gguf::load_source(src)?;
            Loaded::Arrays {
                arrays,
                metadata: Metadata::Gguf(meta),
            }
        }
    })
}

/// An evaluated array's elements as row-major bytes (a view of its buffer
/// when it is already contiguous, else of a contiguous copy).
pub(crate) struct RowBytes {
    data: crate::graph::layout::Data,
    start: usize,
    len: usize,
}

impl RowBytes {
    pub(crate) fn bytes(&self) -> &[u8] {
        self.data
            .storage
            .as_slice::<u8>()
            .get(self.start..self.start + self.len)
            .unwrap_or(&[])
    }
}

pub(crate) fn contiguous_bytes(a: &Array) -> Result<RowBytes> {
    let mut data = a.data()?;
    if !data.is_contiguous(a.shape()) {
        data = crate::ops::views::contiguous(a)?.data()?;
    }
    let size = a.dtype().size();
    let len = a.size() * size;
    let start = data.offset * size;
    if len > 0 && (!data.is_contiguous(a.shape()) || data.storage.len() < start.saturating_add(len))
    {
        return Err(Error::runtime(
            "save",
            format!("array of shape {:?} did not become contiguous", a.shape()),
        ));
    }
    Ok(RowBytes { data, start, len })
}

/// Saves `array` to `path` as `.npy` (the path is used as given; MLX's
/// Python `save` appends `.npy`, ferrox.core does too).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("c.npy");
/// ferrox::io::save(&path, &ferrox::ones(&[2], ferrox::DType::Complex64)?)?;
/// assert!(path.exists());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn save(path: impl AsRef<Path>, array: &Array) -> Result<()> {
    write_atomic(path.as_ref(), "save", |w| npy::write(w, array))
}

/// Saves named arrays to `path` as `.npz` (a zip of `NAME.npy` files),
/// deflated when `compressed`.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("z.npz");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("x".into(), ferrox::ones(&[4], ferrox::DType::Bool)?);
/// ferrox::io::savez(&path, &arrays, true)?;
/// assert_eq!(ferrox::io::load(&path, None)?.into_arrays()["x"].dtype(), ferrox::DType::Bool);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn savez(path: impl AsRef<Path>, arrays: &Arrays, compressed: bool) -> Result<()> {
    let op = if compressed {
        "savez_compressed"
    } else {
        "savez"
    };
    write_atomic(path.as_ref(), op, |w| npz::write(w, arrays, compressed))
}

/// Saves named arrays and optional string metadata to `path` as
/// `.safetensors`.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("m.safetensors");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("w".into(), ferrox::ones(&[2, 2], ferrox::DType::Float32)?);
/// let meta = std::collections::BTreeMap::from([("format".to_string(), "mlx".to_string())]);
/// ferrox::io::save_safetensors(&path, &arrays, Some(&meta))?;
/// let ferrox::io::Loaded::Arrays { metadata, .. } = ferrox::io::load(&path, None)? else { unreachable!() };
/// assert_eq!(metadata, ferrox::io::Metadata::Safetensors(meta));
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn save_safetensors(
    path: impl AsRef<Path>,
    arrays: &Arrays,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    write_atomic(path.as_ref(), "save_safetensors", |w| {
        safetensors::write(w, arrays, metadata)
    })
}

/// Saves named arrays and key-value metadata to `path` as `.gguf`
/// (version 3).
///
/// ```
/// use ferrox::io::GgufValue;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("m.gguf");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("w".into(), ferrox::ones(&[2, 3], ferrox::DType::Float16)?);
/// let meta = std::collections::BTreeMap::from([("general.name".to_string(), GgufValue::String("tiny".into()))]);
/// ferrox::io::save_gguf(&path, &arrays, &meta)?;
/// let loaded = ferrox::io::load(&path, None)?.into_arrays();
/// assert_eq!(loaded["w"].shape(), &[2, 3]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn save_gguf(
    path: impl AsRef<Path>,
    arrays: &Arrays,
    metadata: &BTreeMap<String, GgufValue>,
) -> Result<()> {
    write_atomic(path.as_ref(), "save_gguf", |w| {
        gguf::write(w, arrays, metadata)
    })
}
