//! Saving and loading a module's parameters as `.safetensors`, one tensor
//! per dotted name (`layers.0.weight`), the layout MLX's `save_weights`
//! writes, so files move between the two.

use crate::error::Result;
use crate::module::Module;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes every parameter of `model` (buffers and frozen ones too) to
/// `path`, with optional string metadata.
///
/// ```
/// use ferrox_nn::{Module, layers::Linear, io};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("linear.safetensors");
/// let a = Linear::new(3, 2, true)?;
/// io::save_safetensors(&a, &path, None)?;
/// let mut b = Linear::new(3, 2, true)?;
/// io::load_safetensors(&mut b, &path, true)?;
/// assert_eq!(a.weight.to_vec::<f32>()?, b.weight.to_vec::<f32>()?);
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn save_safetensors<M: Module + ?Sized>(
    model: &M,
    path: impl AsRef<Path>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    let arrays: ferrox::io::Arrays = model.named_parameters().into_iter().collect();
    ferrox::io::save_safetensors(path, &arrays, metadata)
}

/// Loads the weights in `path` into `model` by dotted name, with the
/// checks of [`Module::load_named`]: shapes always, and with `strict`
/// also weights the model lacks and parameters the file lacks. Nothing
/// changes on an error. Returns the file's metadata.
///
/// ```
/// use ferrox_nn::{layers::Linear, io};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("l.safetensors");
/// io::save_safetensors(&Linear::new(3, 2, true)?, &path, None)?;
/// let e = io::load_safetensors(&mut Linear::new(3, 2, false)?, &path, true).unwrap_err();
/// assert!(e.to_string().contains("1 weights not in the model: bias"), "{e}");
/// io::load_safetensors(&mut Linear::new(3, 2, false)?, &path, false)?; // bias ignored
/// let e = io::load_safetensors(&mut Linear::new(4, 2, true)?, &path, false).unwrap_err();
/// assert!(e.to_string().contains("weight: expected shape [2, 4], got [2, 3]"), "{e}");
/// # Ok::<(), ferrox::Error>(())
/// ```
pub fn load_safetensors<M: Module + ?Sized>(
    model: &mut M,
    path: impl AsRef<Path>,
    strict: bool,
) -> Result<BTreeMap<String, String>> {
    let (arrays, metadata) = ferrox::io::safetensors::load(path)?;
    model.load_named(&arrays, strict)?;
    Ok(metadata)
}
