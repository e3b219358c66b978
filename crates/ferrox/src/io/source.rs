//! A file's bytes as one storage, and arrays made from ranges of it.
//!
//! Invariant: `Source::bytes` is one [`Storage`] holding the whole file,
//! its base aligned to [`ALIGN`](crate::graph::storage::ALIGN). A tensor
//! whose bytes are usable as they are (native byte order, not bool, offset a
//! multiple of the element size) becomes a view of that storage: an
//! evaluated leaf sharing it, no copy. Anything else becomes a lazy
//! [`Decode`] node that copies and converts when evaluated; it keeps the
//! whole source alive until it is dropped.

use super::gguf::Quant;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::graph::array::Array;
use crate::graph::layout::{Data, checked_numel, row_major_strides};
use crate::graph::primitive::{Operand, OutSpec, Primitive};
use crate::graph::storage::Storage;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// Files at least this large are mapped; smaller ones are read (a mapping
/// costs system calls and a page fault per page, more than reading a small
/// file, and read files count as memory like every other buffer).
pub(crate) const MAP_MIN: usize = 1 << 20;

/// How a tensor's bytes encode its elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Encoding {
    /// The host's (little-endian) layout of the dtype.
    Native,
    /// Big-endian (npy's `>`): each scalar component's bytes reversed.
    Swapped,
    /// gguf blocks, dequantised to float32.
    Quantized(Quant),
}

/// The order of the elements in the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Order {
    RowMajor,
    /// npy's `fortran_order`.
    ColumnMajor,
}

/// Where one tensor is in a [`Source`].
pub(crate) struct Tensor {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Byte offset from the start of the file.
    pub offset: usize,
    pub encoding: Encoding,
    pub order: Order,
}

/// The bytes of one file.
pub(crate) struct Source {
    bytes: Arc<Storage>,
    /// The file's name (or `<memory>`), for messages.
    pub name: String,
    /// The op errors name: `load_npy`, `load_safetensors`, ...
    pub op: String,
}

impl Source {
    /// Opens `path`: mapped when large, read when small.
    pub(crate) fn open(path: &Path, format: &str) -> Result<Source> {
        let op = format!("load_{format}");
        let file = File::open(path).map_err(|e| Error::io(&op, path, &e))?;
        let meta = file.metadata().map_err(|e| Error::io(&op, path, &e))?;
        if meta.is_dir() {
            return Err(Error::new(
                ErrorKind::Io,
                op,
                format!("{}: is a directory", path.display()),
            ));
        }
        let len = usize::try_from(meta.len()).map_err(|_| {
            Error::value(
                &op,
                format!("{}: file too large to address", path.display()),
            )
        })?;
        let storage = if len >= MAP_MIN {
            // SAFETY: memmap2 requires that the file is not changed while
            // mapped. The mapping is private (copy-on-write) and read-only
            // in practice (Storage hands out `&mut` only before it is
            // shared, and io never writes), so ferrox never writes the file
            // through it. Another process truncating or rewriting the file
            // in place while it is mapped would change or fault the mapped
            // pages; that is the documented contract of every mapped loader
            // (numpy's mmap_mode, safetensors, MLX), and ferrox's own saves
            // never do it: they rename a new file over the old one, so the
            // old inode, and the mapping, stay intact.
            let map = unsafe { memmap2::MmapOptions::new().map_copy(&file) }
                .map_err(|e| Error::io(&op, path, &e))?;
            Storage::from_mapping(map).ok_or_else(|| {
                Error::runtime(&op, format!("{}: mapping is not aligned", path.display()))
            })?
        } else {
            let mut s = Storage::new(len, false)?;
            (&file)
                .read_exact(s.as_mut_slice::<u8>())
                .map_err(|e| Error::io(&op, path, &e))?;
            s
        };
        Ok(Source {
            bytes: Arc::new(storage),
            name: path.display().to_string(),
            op,
        })
    }

    /// A copy of `bytes` in an aligned buffer.
    pub(crate) fn from_bytes(bytes: &[u8], name: &str, format: &str) -> Result<Source> {
        let mut s = Storage::new(bytes.len(), false)?;
        s.as_mut_slice::<u8>().copy_from_slice(bytes);
        Ok(Self::from_storage(s, name, format))
    }

    /// A source over a filled storage (an npz member).
    pub(crate) fn from_storage(storage: Storage, name: &str, format: &str) -> Source {
        Source {
            bytes: Arc::new(storage),
            name: name.to_string(),
            op: format!("load_{format}"),
        }
    }

    /// The whole file.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes.as_slice::<u8>()
    }

    /// A bad-file error: `load_FORMAT: NAME: message`.
    pub(crate) fn bad(&self, message: impl std::fmt::Display) -> Error {
        Error::value(&self.op, format!("{}: {message}", self.name))
    }

    /// Bytes a tensor takes in the file.
    pub(crate) fn tensor_bytes(&self, t: &Tensor, label: &str) -> Result<usize> {
        let numel = checked_numel(&self.op, &t.shape).map_err(|_| {
            self.bad(format!(
                "{label}: shape {:?} has too many elements",
                t.shape
            ))
        })?;
        let n = match t.encoding {
            Encoding::Quantized(q) => q.byte_len(numel),
            _ => numel.checked_mul(t.dtype.size()),
        };
        n.ok_or_else(|| self.bad(format!("{label}: shape {:?} is too large", t.shape)))
    }

    /// The bytes `[offset, offset + len)`, or an error naming `label`.
    pub(crate) fn range(&self, offset: usize, len: usize, label: &str) -> Result<&[u8]> {
        let all = self.bytes();
        offset
            .checked_add(len)
            .and_then(|end| all.get(offset..end))
            .ok_or_else(|| {
                self.bad(format!(
                    "{label}: data [{offset}, {offset} + {len}) lies past the end of the file ({} bytes)",
                    all.len()
                ))
            })
    }

    /// The array `t` describes. Fails if its bytes are not all in the file.
    pub(crate) fn array(&self, t: Tensor, label: &str) -> Result<Array> {
        let nbytes = self.tensor_bytes(&t, label)?;
        self.range(t.offset, nbytes, label)?;
        let strides = match t.order {
            Order::RowMajor => row_major_strides(&t.shape),
            Order::ColumnMajor => column_major_strides(&t.shape),
        };
        if nbytes == 0 {
            let data = Data::alloc(&t.shape, t.dtype)?;
            return Ok(Array::from_data(data, t.shape, t.dtype));
        }
        let size = t.dtype.size();
        if t.encoding == Encoding::Native && t.dtype != DType::Bool && t.offset % size == 0 {
            let data = Data {
                storage: self.bytes.clone(),
                strides,
                offset: t.offset / size,
            };
            return Ok(Array::from_data(data, t.shape, t.dtype));
        }
        let decode = Decode {
            source: self.bytes.clone(),
            offset: t.offset,
            nbytes,
            encoding: t.encoding,
            strides,
        };
        Ok(Array::from_primitive(
            t.shape,
            t.dtype,
            Arc::new(decode),
            vec![],
        ))
    }

    /// An array whose evaluation fails with `message` (MLX reads npy data
    /// lazily, so a truncated npy file fails at `eval`, not at `load`).
    pub(crate) fn failing(&self, shape: Vec<usize>, dtype: DType, message: String) -> Array {
        let error = Error::runtime(&self.op, format!("{}: {message}", self.name));
        Array::from_primitive(shape, dtype, Arc::new(Unreadable { error }), vec![])
    }
}

fn column_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1isize;
    for &d in shape {
        strides.push(acc);
        acc = acc.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// Copies (and converts) one tensor's bytes out of a source when evaluated.
struct Decode {
    source: Arc<Storage>,
    offset: usize,
    nbytes: usize,
    encoding: Encoding,
    /// The output's strides (column-major for a Fortran-order npy).
    strides: Vec<isize>,
}

impl std::fmt::Debug for Decode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Decode({:?}, {} bytes at {})",
            self.encoding, self.nbytes, self.offset
        )
    }
}

impl Primitive for Decode {
    fn name(&self) -> &'static str {
        "load"
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], out: OutSpec<'_>) -> Result<Data> {
        let bytes = self
            .offset
            .checked_add(self.nbytes)
            .and_then(|end| self.source.as_slice::<u8>().get(self.offset..end))
            .ok_or_else(|| Error::runtime("load", "tensor range outside its file"))?;
        let numel = checked_numel("load", out.shape)?;
        let mut storage = Storage::new(numel * out.dtype.size(), out.dtype == DType::Bool)?;
        match self.encoding {
            Encoding::Native if out.dtype == DType::Bool => {
                // Any non-zero byte is true; writing 0/1 as u8 keeps the
                // storage a valid bool buffer (see `Pod for bool`).
                let dst = storage.as_mut_slice::<u8>();
                for (d, &b) in dst.iter_mut().zip(bytes) {
                    *d = u8::from(b != 0);
                }
            }
            Encoding::Native => storage.as_mut_slice::<u8>().copy_from_slice(bytes),
            Encoding::Swapped => {
                let dst = storage.as_mut_slice::<u8>();
                dst.copy_from_slice(bytes);
                // Complex64 is two float32s, each swapped on its own.
                let unit = match out.dtype {
                    DType::Complex64 => 4,
                    d => d.size(),
                };
                for c in dst.chunks_exact_mut(unit) {
                    c.reverse();
                }
            }
            Encoding::Quantized(q) => q.dequantize(bytes, storage.as_mut_slice::<f32>())?,
        }
        Ok(Data {
            storage: Arc::new(storage),
            strides: self.strides.clone(),
            offset: 0,
        })
    }
}

/// A node that fails when evaluated (a tensor whose bytes are missing).
#[derive(Debug)]
struct Unreadable {
    error: Error,
}

impl Primitive for Unreadable {
    fn name(&self) -> &'static str {
        "load_unreadable"
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn eval_cpu(&self, _inputs: &[Operand<'_>], _out: OutSpec<'_>) -> Result<Data> {
        Err(self.error.clone())
    }
}
