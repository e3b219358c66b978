//! The shape of a language model, stored in a checkpoint's metadata so a
//! file alone says how to rebuild its model.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The hyperparameters of an [`Lm`](super::Lm).
///
/// ```
/// let c = ferrox_cli::lm::LmConfig::demo();
/// assert_eq!(c.dims % c.heads, 0);
/// let back = ferrox_cli::lm::LmConfig::from_json(&c.to_json()).unwrap();
/// assert_eq!(back, c);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LmConfig {
    /// Tokens in the vocabulary (256 bytes for the byte tokenizer).
    pub vocab: usize,
    /// Model width.
    pub dims: usize,
    /// Decoder blocks.
    pub layers: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (grouped-query attention when fewer than `heads`).
    pub kv_heads: usize,
    /// Hidden width of the SwiGLU feed-forward block.
    pub mlp_dims: usize,
    /// The longest sequence (prompt and generated tokens) the model sees.
    pub context: usize,
    /// RoPE's base.
    pub rope_base: f32,
    /// RMSNorm's epsilon.
    pub norm_eps: f32,
}

impl LmConfig {
    /// The demo's model: 3.0 million parameters.
    pub fn demo() -> LmConfig {
        LmConfig {
            vocab: 256,
            dims: 256,
            layers: 4,
            heads: 8,
            kv_heads: 4,
            mlp_dims: 704,
            context: 128,
            rope_base: 10_000.0,
            norm_eps: 1e-5,
        }
    }

    /// A model small enough for tests.
    pub fn tiny() -> LmConfig {
        LmConfig {
            vocab: 256,
            dims: 32,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            mlp_dims: 64,
            context: 64,
            rope_base: 10_000.0,
            norm_eps: 1e-5,
        }
    }

    /// Features per head.
    pub fn head_dims(&self) -> usize {
        self.dims / self.heads
    }

    /// Checks the sizes fit together.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("vocab", self.vocab),
            ("dims", self.dims),
            ("layers", self.layers),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("mlp_dims", self.mlp_dims),
            ("context", self.context),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(Error::Config(format!("{name} must be positive")));
        }
        if self.dims % self.heads != 0 || self.head_dims() % 2 != 0 {
            return Err(Error::Config(format!(
                "dims {} must be an even multiple of heads {} (RoPE rotates pairs)",
                self.dims, self.heads
            )));
        }
        if self.heads % self.kv_heads != 0 {
            return Err(Error::Config(format!(
                "heads {} must be a multiple of kv_heads {}",
                self.heads, self.kv_heads
            )));
        }
        Ok(())
    }

    /// The config as JSON (a checkpoint's `config` metadata).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads [`LmConfig::to_json`]'s text and validates it.
    pub fn from_json(text: &str) -> Result<LmConfig> {
        let c: LmConfig = serde_json::from_str(text)
            .map_err(|e| Error::Config(format!("the model config is not valid: {e}")))?;
        c.validate()?;
        Ok(c)
    }
}
