//! Hugging Face's `.safetensors`: an 8-byte little-endian header length, a
//! JSON header (dtype, shape and byte range of each tensor, optional
//! `__metadata__` strings), then the tensors' bytes, row-major.
//!
//! The header is parsed and validated by the `safetensors` crate (byte
//! ranges contiguous, in bounds, matching shape × dtype, no overflow, the
//! header at most 100 MB); ferrox then makes each tensor a view of the
//! file's storage, which for a large file is a mapping: loading a 1 GiB file
//! reads only its header. Writing also goes through the crate's header type
//! (`Metadata`), so the JSON is the crate's; the tensors are ordered by
//! element size, largest first, which keeps every tensor aligned to its
//! element size (the data starts 8-aligned).
//!
//! dtypes: every ferrox dtype (`BOOL U8 U16 U32 U64 I8 I16 I32 I64 F16 BF16
//! F32 F64 C64`). The 8-bit float types (`F8_E4M3`, `F8_E5M2`, `F8_E8M0`
//! and the FNUZ variants) load as uint8 holding the raw bytes, as MLX does;
//! sub-byte types (`F4`, `F6_*`) are dtype errors.

use super::Arrays;
use super::atomic::put;
use super::source::{Encoding, Order, Source, Tensor};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use ::safetensors::tensor::{Metadata as Header, TensorInfo};
use ::safetensors::{Dtype, SafeTensors};

/// Loads a `.safetensors` file: its tensors and its `__metadata__`.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("w.safetensors");
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("w".into(), ferrox::ones(&[2, 2], ferrox::DType::BFloat16)?);
/// ferrox::io::save_safetensors(&path, &arrays, None)?;
/// let (loaded, metadata) = ferrox::io::safetensors::load(&path)?;
/// assert_eq!(loaded["w"].shape(), &[2, 2]);
/// assert!(metadata.is_empty());
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<(Arrays, BTreeMap<String, String>)> {
    load_source(&Source::open(path.as_ref(), "safetensors")?)
}

fn dtype_of(src: &Source, name: &str, d: Dtype) -> Result<DType> {
    Ok(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::UInt8,
        Dtype::U16 => DType::UInt16,
        Dtype::U32 => DType::UInt32,
        Dtype::U64 => DType::UInt64,
        Dtype::I8 => DType::Int8,
        Dtype::I16 => DType::Int16,
        Dtype::I32 => DType::Int32,
        Dtype::I64 => DType::Int64,
        Dtype::F16 => DType::Float16,
        Dtype::BF16 => DType::BFloat16,
        Dtype::F32 => DType::Float32,
        Dtype::F64 => DType::Float64,
        Dtype::C64 => DType::Complex64,
        Dtype::F8_E4M3
        | Dtype::F8_E5M2
        | Dtype::F8_E8M0
        | Dtype::F8_E4M3FNUZ
        | Dtype::F8_E5M2FNUZ => DType::UInt8,
        other => {
            return Err(Error::dtype(
                &src.op,
                format!(
                    "{}: tensor {name:?} has unsupported dtype {other:?}",
                    src.name
                ),
            ));
        }
    })
}

pub(crate) fn load_source(src: &Source) -> Result<(Arrays, BTreeMap<String, String>)> {
    let bytes = src.bytes();
    let (n, header) =
        SafeTensors::read_metadata(bytes).map_err(|e| src.bad(format!("bad header: {e}")))?;
    // read_metadata checked that 8 + n + the data length is the file length.
    let data_start = 8 + n;
    let mut arrays = Arrays::new();
    for (name, info) in header.tensors() {
        let dtype = dtype_of(src, &name, info.dtype)?;
        let t = Tensor {
            shape: info.shape.clone(),
            dtype,
            offset: data_start + info.data_offsets.0,
            encoding: Encoding::Native,
            order: Order::RowMajor,
        };
        let label = format!("tensor {name:?}");
        arrays.insert(name, src.array(t, &label)?);
    }
    let metadata = header
        .metadata()
        .as_ref()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    Ok((arrays, metadata))
}

fn st_dtype(d: DType) -> Dtype {
    match d {
        DType::Bool => Dtype::BOOL,
        DType::UInt8 => Dtype::U8,
        DType::UInt16 => Dtype::U16,
        DType::UInt32 => Dtype::U32,
        DType::UInt64 => Dtype::U64,
        DType::Int8 => Dtype::I8,
        DType::Int16 => Dtype::I16,
        DType::Int32 => Dtype::I32,
        DType::Int64 => Dtype::I64,
        DType::Float16 => Dtype::F16,
        DType::BFloat16 => Dtype::BF16,
        DType::Float32 => Dtype::F32,
        DType::Float64 => Dtype::F64,
        DType::Complex64 => Dtype::C64,
    }
}

/// Writes `arrays` and optional `metadata` as a `.safetensors` file to `w`.
///
/// ```
/// let mut arrays = ferrox::io::Arrays::new();
/// arrays.insert("b".into(), ferrox::ones(&[3], ferrox::DType::Int8)?);
/// let mut bytes = vec![];
/// ferrox::io::safetensors::write(&mut bytes, &arrays, None)?;
/// let loaded = ferrox::io::load_bytes(&bytes, ferrox::io::Format::Safetensors, "<memory>")?;
/// assert_eq!(loaded.into_arrays()["b"].to_vec::<i8>()?, vec![1, 1, 1]);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn write(
    w: &mut impl Write,
    arrays: &Arrays,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    let op = "save_safetensors";
    let mut items = arrays
        .iter()
        .map(|(name, a)| Ok((name, a, super::contiguous_bytes(a)?)))
        .collect::<Result<Vec<_>>>()?;
    items.sort_by(|(na, a, _), (nb, b, _)| b.itemsize().cmp(&a.itemsize()).then(na.cmp(nb)));
    let mut offset = 0usize;
    let mut infos = Vec::with_capacity(items.len());
    for (name, a, bytes) in &items {
        let end = offset + bytes.bytes().len();
        infos.push((
            name.to_string(),
            TensorInfo {
                dtype: st_dtype(a.dtype()),
                shape: a.shape().to_vec(),
                data_offsets: (offset, end),
            },
        ));
        offset = end;
    }
    let extra: Option<HashMap<String, String>> =
        metadata.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let header = Header::new(extra, infos)
        .map_err(|e| Error::new(ErrorKind::Value, op, format!("bad header: {e}")))?;
    let mut json = serde_json::to_string(&header)
        .map_err(|e| Error::new(ErrorKind::Value, op, format!("header: {e}")))?
        .into_bytes();
    // The data starts 8-aligned: pad the JSON with spaces, as the format allows.
    json.resize(json.len().div_ceil(8) * 8, b' ');
    put(w, op, &(json.len() as u64).to_le_bytes())?;
    put(w, op, &json)?;
    for (_, _, bytes) in &items {
        put(w, op, bytes.bytes())?;
    }
    Ok(())
}
