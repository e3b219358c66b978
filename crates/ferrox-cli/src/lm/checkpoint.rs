//! Checkpoints: one `.safetensors` file holding the model's weights
//! (`model.<name>`), the optimizer's state (`optimizer.<name>`) and, as
//! metadata, the model config (`config`, JSON) and the training step, so
//! the file alone rebuilds the model. Saving goes through a temporary file
//! and a rename (ferrox::io), so a crash never leaves half a checkpoint.

use super::config::LmConfig;
use super::model::Lm;
use crate::error::{Error, Result};
use ferrox_nn::Module;
use ferrox_nn::optim::Optimizer;
use ferrox_nn::params::Params;
use std::collections::BTreeMap;
use std::path::Path;

const FORMAT: &str = "ferrox-lm-1";
const MODEL: &str = "model.";
const OPTIMIZER: &str = "optimizer.";

/// A loaded checkpoint.
pub struct Checkpoint {
    /// The model, with its weights.
    pub model: Lm,
    /// The optimizer's state tree (empty if none was saved).
    pub optimizer_state: Params,
    /// The training step it was saved at.
    pub step: u64,
}

fn bad(path: &Path, message: impl Into<String>) -> Error {
    Error::Checkpoint {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Writes `model`, the state of `optimizer` (if any) and `step` to `path`.
pub fn save(path: &Path, model: &Lm, optimizer: Option<&dyn Optimizer>, step: u64) -> Result<()> {
    let mut arrays = ferrox::io::Arrays::new();
    for (name, a) in model.named_parameters() {
        arrays.insert(format!("{MODEL}{name}"), a);
    }
    if let Some(opt) = optimizer {
        for (name, a) in opt.state().named() {
            arrays.insert(format!("{OPTIMIZER}{name}"), a);
        }
    }
    let metadata = BTreeMap::from([
        ("format".to_string(), FORMAT.to_string()),
        ("config".to_string(), model.config.to_json()),
        ("step".to_string(), step.to_string()),
    ]);
    ferrox::io::save_safetensors(path, &arrays, Some(&metadata))
        .map_err(|e| bad(path, format!("saving: {e}")))
}

/// Reads a checkpoint written by [`save`]: every weight of the model must
/// be there with its shape, and nothing else under `model.`.
pub fn load(path: &Path) -> Result<Checkpoint> {
    let (arrays, metadata) =
        ferrox::io::safetensors::load(path).map_err(|e| bad(path, e.to_string()))?;
    match metadata.get("format").map(String::as_str) {
        Some(FORMAT) => {}
        other => {
            return Err(bad(
                path,
                format!(
                    "not a ferrox language-model checkpoint (format {other:?}, expected {FORMAT:?})"
                ),
            ));
        }
    }
    let config_text = metadata
        .get("config")
        .ok_or_else(|| bad(path, "no config in the metadata"))?;
    let config = LmConfig::from_json(config_text).map_err(|e| bad(path, e.to_string()))?;
    let step = match metadata.get("step") {
        Some(s) => s
            .parse()
            .map_err(|_| bad(path, format!("step {s:?} is not a number")))?,
        None => 0,
    };
    let mut weights = BTreeMap::new();
    let mut state = Vec::new();
    for (name, a) in arrays {
        if let Some(n) = name.strip_prefix(MODEL) {
            weights.insert(n.to_string(), a);
        } else if let Some(n) = name.strip_prefix(OPTIMIZER) {
            state.push((n.to_string(), a));
        } else {
            return Err(bad(path, format!("unexpected tensor {name:?}")));
        }
    }
    let mut model = Lm::new(config)?;
    model
        .load_named(&weights, true)
        .map_err(|e| bad(path, e.to_string()))?;
    let optimizer_state = Params::from_named(state).map_err(|e| bad(path, e.to_string()))?;
    Ok(Checkpoint {
        model,
        optimizer_state,
        step,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::train::{TrainConfig, optimizer};
    use ferrox::Array;

    #[test]
    fn a_checkpoint_round_trips_weights_state_and_logits() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = dir.path().join("lm.safetensors");
        ferrox::random::seed(5);
        let model = Lm::new(LmConfig::tiny())?;
        let mut opt = optimizer(&TrainConfig::default())?;
        opt.init(&model.trainable_parameters())?;
        save(&path, &model, Some(&opt), 7)?;
        let back = load(&path)?;
        assert_eq!(back.step, 7);
        assert_eq!(back.model.config, model.config);
        assert_eq!(
            back.optimizer_state.named().len(),
            opt.state().named().len()
        );
        let x = Array::from_slice(&[3i32, 1, 4, 1, 5], &[1, 5])?;
        assert_eq!(
            model.forward(&x)?.to_vec::<f32>()?,
            back.model.forward(&x)?.to_vec::<f32>()?
        );
        Ok(())
    }

    #[test]
    fn missing_or_mis_shaped_weights_are_named() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io("tempdir", e))?;
        let path = dir.path().join("lm.safetensors");
        ferrox::random::seed(5);
        let model = Lm::new(LmConfig::tiny())?;
        save(&path, &model, None, 0)?;
        let (mut arrays, metadata) = ferrox::io::safetensors::load(&path)?;
        arrays.remove("model.blocks.0.wq.weight");
        let broken = dir.path().join("missing.safetensors");
        ferrox::io::save_safetensors(&broken, &arrays, Some(&metadata))?;
        let e = load(&broken)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("blocks.0.wq.weight"), "{e}");
        arrays.insert(
            "model.blocks.0.wq.weight".into(),
            ferrox::zeros(&[3, 3], ferrox::DType::Float32)?,
        );
        ferrox::io::save_safetensors(&broken, &arrays, Some(&metadata))?;
        let e = load(&broken)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("[3, 3]"), "{e}");
        std::fs::write(&broken, b"not a checkpoint").map_err(|e| Error::io("write", e))?;
        assert!(load(&broken).is_err());
        Ok(())
    }
}
