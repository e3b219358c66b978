//! A BERT encoder (post-norm transformer, learned absolute positions,
//! erf GELU) as a ferrox-nn [`Module`] whose parameter names are the
//! Hugging Face checkpoint's (`encoder.layer.0.attention.self.query.weight`),
//! so a `model.safetensors` loads by name with no renaming table.
//!
//! Only the encoder is here: [`Bert::forward`] gives the last hidden
//! states, [`Bert::pooled`] their mean over the unmasked tokens,
//! L2-normalised (what sentence-transformers calls mean pooling followed
//! by `Normalize`). The checkpoint's `pooler` and `embeddings.position_ids`
//! are not used; [`UNUSED_WEIGHTS`] names them for loaders to skip.

use crate::error::{Error, Result};
use ferrox::fast::{self, AttentionMask};
use ferrox::{Array, DType};
use ferrox_nn::layers::{Embedding, LayerNorm, Linear, gelu};
use ferrox_nn::module::{Path, Visit, Visitor, VisitorMut};
use ferrox_nn::{Forward, Module, Param};
use serde::Deserialize;

/// Weights a BERT checkpoint may hold that this encoder does not use:
/// the position-id buffer (positions are always `0..T`) and the
/// `[CLS]` pooler (sentence embeddings here are mean-pooled).
pub const UNUSED_WEIGHTS: [&str; 3] = [
    "embeddings.position_ids",
    "pooler.dense.weight",
    "pooler.dense.bias",
];

/// The shape of a BERT encoder, as the fields of a Hugging Face
/// `config.json` (other fields of that file are ignored).
///
/// ```
/// use ferrox_cli::embed::BertConfig;
/// let c: BertConfig = serde_json::from_str(
///     r#"{"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
///         "num_attention_heads": 12, "intermediate_size": 1536,
///         "max_position_embeddings": 512}"#,
/// ).unwrap();
/// c.validate()?;
/// assert_eq!(c.head_dims(), 32);
/// assert_eq!(c.layer_norm_eps, 1e-12);
/// # Ok::<(), ferrox_cli::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct BertConfig {
    /// Rows of the word-piece embedding table.
    pub vocab_size: usize,
    /// Features per token.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (`hidden_size` is a multiple of it).
    pub num_attention_heads: usize,
    /// Features of the feed-forward block.
    pub intermediate_size: usize,
    /// Rows of the position table: the longest input.
    pub max_position_embeddings: usize,
    /// Rows of the token-type table (only row 0 is used).
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    /// The layer norms' epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f32,
    /// The feed-forward activation; only `"gelu"` (the erf form) is
    /// supported.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// How positions are encoded; only `"absolute"` is supported.
    #[serde(default = "default_positions")]
    pub position_embedding_type: String,
}

fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f32 {
    1e-12
}
fn default_act() -> String {
    "gelu".into()
}
fn default_positions() -> String {
    "absolute".into()
}

impl BertConfig {
    /// The shape of all-MiniLM-L6-v2: 6 layers, 384 features, 12 heads.
    ///
    /// ```
    /// assert_eq!(ferrox_cli::embed::BertConfig::minilm_l6().hidden_size, 384);
    /// ```
    pub fn minilm_l6() -> BertConfig {
        BertConfig {
            vocab_size: 30522,
            hidden_size: 384,
            num_hidden_layers: 6,
            num_attention_heads: 12,
            intermediate_size: 1536,
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            hidden_act: default_act(),
            position_embedding_type: default_positions(),
        }
    }

    /// A small shape for tests: 2 layers, 16 features, 2 heads.
    ///
    /// ```
    /// ferrox_cli::embed::BertConfig::tiny(50).validate()?;
    /// # Ok::<(), ferrox_cli::Error>(())
    /// ```
    pub fn tiny(vocab_size: usize) -> BertConfig {
        BertConfig {
            vocab_size,
            hidden_size: 16,
            num_hidden_layers: 2,
            num_attention_heads: 2,
            intermediate_size: 32,
            max_position_embeddings: 64,
            ..BertConfig::minilm_l6()
        }
    }

    /// Features per attention head.
    pub fn head_dims(&self) -> usize {
        self.hidden_size / self.num_attention_heads.max(1)
    }

    /// Checks that the shape is one this encoder can run.
    ///
    /// ```
    /// let mut c = ferrox_cli::embed::BertConfig::minilm_l6();
    /// c.num_attention_heads = 5;
    /// assert!(c.validate().unwrap_err().to_string().contains("hidden_size 384"));
    /// ```
    pub fn validate(&self) -> Result<()> {
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(Error::Config(format!("bert: {name} must be positive")));
        }
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err(Error::Config(format!(
                "bert: hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            )));
        }
        if self.hidden_act != "gelu" {
            return Err(Error::Config(format!(
                "bert: hidden_act {:?} is not supported (only \"gelu\", the erf form)",
                self.hidden_act
            )));
        }
        if self.position_embedding_type != "absolute" {
            return Err(Error::Config(format!(
                "bert: position_embedding_type {:?} is not supported (only \"absolute\")",
                self.position_embedding_type
            )));
        }
        if !(self.layer_norm_eps.is_finite() && self.layer_norm_eps >= 0.0) {
            return Err(Error::Config(format!(
                "bert: layer_norm_eps {} must be finite and non-negative",
                self.layer_norm_eps
            )));
        }
        Ok(())
    }
}

/// Implements [`Visit`] and [`Module`] for a struct whose saved names are
/// not Rust field names (`self`, `LayerNorm`): each field is listed with
/// the name it has in the checkpoint.
macro_rules! saved_as {
    ($ty:ty { $($name:literal => $field:ident),* $(,)? }) => {
        impl Visit for $ty {
            fn visit(&self, path: &mut Path, v: &mut dyn Visitor) {
                $(path.scoped($name, |path| Visit::visit(&self.$field, path, v));)*
            }
            fn visit_mut(&mut self, path: &mut Path, v: &mut dyn VisitorMut) -> ferrox::Result<()> {
                v.module(path.as_str(), self)?;
                $(path.scoped($name, |path| Visit::visit_mut(&mut self.$field, path, v))?;)*
                Ok(())
            }
        }
        impl Module for $ty {}
    };
}

/// How the parameters of a new encoder start: random (tests) or zeros
/// (a skeleton whose every array a checkpoint replaces; zeros are lazy,
/// so a skeleton allocates nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Init {
    /// Normal embeddings, uniform linear layers (ferrox-nn's defaults).
    Random,
    /// Zeros everywhere, layer norms at weight 1 and bias 0.
    Zeros,
}

fn table(init: Init, rows: usize, dims: usize) -> Result<Embedding> {
    Ok(match init {
        Init::Random => Embedding::new(rows, dims)?,
        Init::Zeros => Embedding {
            weight: Param::new(ferrox::zeros(&[rows, dims], DType::Float32)?),
            scales: None,
            biases: None,
            quant: None,
        },
    })
}

fn linear(init: Init, input: usize, output: usize) -> Result<Linear> {
    Ok(match init {
        Init::Random => Linear::new(input, output, true)?,
        Init::Zeros => Linear::from_weights(
            ferrox::zeros(&[output, input], DType::Float32)?,
            Some(ferrox::zeros(&[output], DType::Float32)?),
        )?,
    })
}

fn norm(c: &BertConfig) -> Result<LayerNorm> {
    Ok(LayerNorm::new(c.hidden_size, c.layer_norm_eps, true, true)?)
}

/// Word, position and token-type embeddings, summed and normalised.
#[derive(Clone, Debug)]
pub struct Embeddings {
    /// `[vocab_size, hidden]`.
    pub word_embeddings: Embedding,
    /// `[max_position_embeddings, hidden]`.
    pub position_embeddings: Embedding,
    /// `[type_vocab_size, hidden]`; every token is of type 0.
    pub token_type_embeddings: Embedding,
    /// Saved as `LayerNorm`.
    pub layer_norm: LayerNorm,
}
saved_as!(Embeddings {
    "word_embeddings" => word_embeddings,
    "position_embeddings" => position_embeddings,
    "token_type_embeddings" => token_type_embeddings,
    "LayerNorm" => layer_norm,
});

impl Embeddings {
    fn forward(&self, ids: &Array) -> Result<Array> {
        let t = ids.shape()[1];
        let words = self.word_embeddings.forward(ids)?;
        let kind = ferrox::take(
            &self.token_type_embeddings.weight,
            &Array::scalar(0i32),
            Some(0),
        )?;
        let positions = ferrox::arange(0.0, t as f64, 1.0, DType::Int32)?;
        let positions = self.position_embeddings.forward(&positions)?;
        // The checkpoint's order of sums: words + type, then + positions.
        Ok(self.layer_norm.forward(&((words + kind)? + positions)?)?)
    }
}

/// A projection followed by a residual sum and a layer norm.
#[derive(Clone, Debug)]
pub struct Output {
    /// The projection.
    pub dense: Linear,
    /// Saved as `LayerNorm`.
    pub layer_norm: LayerNorm,
}
saved_as!(Output { "dense" => dense, "LayerNorm" => layer_norm });

impl Output {
    fn forward(&self, x: &Array, residual: &Array) -> Result<Array> {
        Ok(self
            .layer_norm
            .forward(&(self.dense.forward(x)? + residual)?)?)
    }
}

/// The query, key and value projections.
#[derive(Clone, Debug)]
pub struct SelfAttention {
    /// Query projection.
    pub query: Linear,
    /// Key projection.
    pub key: Linear,
    /// Value projection.
    pub value: Linear,
}
ferrox_nn::impl_module!(SelfAttention { query, key, value });

/// Multi-head self-attention and its output block.
#[derive(Clone, Debug)]
pub struct Attention {
    /// Saved as `self`.
    pub self_attention: SelfAttention,
    /// Output projection, residual and norm.
    pub output: Output,
}
saved_as!(Attention { "self" => self_attention, "output" => output });

/// The feed-forward block's first projection.
#[derive(Clone, Debug)]
pub struct Intermediate {
    /// `hidden -> intermediate`.
    pub dense: Linear,
}
ferrox_nn::impl_module!(Intermediate { dense });

/// One encoder layer: attention, then the feed-forward block, each
/// followed by a residual sum and a layer norm.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The attention block.
    pub attention: Attention,
    /// The feed-forward block's first projection.
    pub intermediate: Intermediate,
    /// The feed-forward block's second projection, residual and norm.
    pub output: Output,
}
ferrox_nn::impl_module!(Layer {
    attention,
    intermediate,
    output
});

impl Layer {
    /// `x` is `[B, T, hidden]`, `visible` a boolean `[B, 1, 1, T]`.
    fn forward(&self, c: &BertConfig, x: &Array, visible: &Array) -> Result<Array> {
        let (b, t) = (x.shape()[0] as isize, x.shape()[1] as isize);
        let (heads, hd) = (c.num_attention_heads as isize, c.head_dims() as isize);
        let split = |l: &Linear| -> Result<Array> {
            Ok(l.forward(x)?
                .reshape(&[b, t, heads, hd])?
                .transpose(Some(&[0, 2, 1, 3]))?)
        };
        let a = &self.attention.self_attention;
        let (q, k, v) = (split(&a.query)?, split(&a.key)?, split(&a.value)?);
        let scale = 1.0 / (c.head_dims() as f32).sqrt();
        let o = fast::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            scale,
            AttentionMask::Array(visible),
            None,
        )?
        .transpose(Some(&[0, 2, 1, 3]))?
        .reshape(&[b, t, c.hidden_size as isize])?;
        let h = self.attention.output.forward(&o, x)?;
        let ff = gelu(&self.intermediate.dense.forward(&h)?)?;
        self.output.forward(&ff, &h)
    }
}

/// The stack of layers.
#[derive(Clone, Debug)]
pub struct Encoder {
    /// The layers, saved as `layer.0`, `layer.1`, ...
    pub layer: Vec<Layer>,
}
ferrox_nn::impl_module!(Encoder { layer });

/// The BERT encoder: embeddings, post-norm layers, erf GELU.
///
/// ```
/// use ferrox::Array;
/// use ferrox_cli::embed::{Bert, BertConfig, Init};
/// use ferrox_nn::Module;
/// let m = Bert::new(BertConfig::tiny(50), Init::Random)?;
/// let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names[0], "embeddings.word_embeddings.weight");
/// assert!(names.contains(&"encoder.layer.1.attention.self.query.bias".to_string()));
/// let ids = Array::from_slice(&[2i32, 7, 3, 0], &[1, 4])?;
/// let mask = Array::from_slice(&[1.0f32, 1.0, 1.0, 0.0], &[1, 4])?;
/// assert_eq!(m.forward(&ids, &mask)?.shape(), &[1, 4, 16]);
/// assert_eq!(m.pooled(&ids, &mask)?.shape(), &[1, 16]);
/// # Ok::<(), ferrox_cli::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Bert {
    /// The model's shape.
    pub config: BertConfig,
    /// The input embeddings.
    pub embeddings: Embeddings,
    /// The layers.
    pub encoder: Encoder,
}
ferrox_nn::impl_module!(Bert {
    embeddings,
    encoder
});

impl Bert {
    /// An encoder of shape `config` with parameters as `init` says.
    pub fn new(config: BertConfig, init: Init) -> Result<Bert> {
        config.validate()?;
        let c = &config;
        let h = c.hidden_size;
        let embeddings = Embeddings {
            word_embeddings: table(init, c.vocab_size, h)?,
            position_embeddings: table(init, c.max_position_embeddings, h)?,
            token_type_embeddings: table(init, c.type_vocab_size, h)?,
            layer_norm: norm(c)?,
        };
        let layer = (0..c.num_hidden_layers)
            .map(|_| {
                Ok(Layer {
                    attention: Attention {
                        self_attention: SelfAttention {
                            query: linear(init, h, h)?,
                            key: linear(init, h, h)?,
                            value: linear(init, h, h)?,
                        },
                        output: Output {
                            dense: linear(init, h, h)?,
                            layer_norm: norm(c)?,
                        },
                    },
                    intermediate: Intermediate {
                        dense: linear(init, h, c.intermediate_size)?,
                    },
                    output: Output {
                        dense: linear(init, c.intermediate_size, h)?,
                        layer_norm: norm(c)?,
                    },
                })
            })
            .collect::<Result<_>>()?;
        Ok(Bert {
            embeddings,
            encoder: Encoder { layer },
            config,
        })
    }

    /// Checks `ids` (`[B, T]` integers) and `mask` (`[B, T]`, 1 for a
    /// token and 0 for padding) against the model.
    fn check_inputs(&self, ids: &Array, mask: &Array) -> Result<()> {
        let bad = |m: String| Err(Error::Embeddings(format!("bert: {m}")));
        if ids.ndim() != 2 || !ids.dtype().is_integer() {
            return bad(format!(
                "ids must be [batch, tokens] integers, got {} of shape {:?}",
                ids.dtype(),
                ids.shape()
            ));
        }
        if mask.shape() != ids.shape() {
            return bad(format!(
                "mask shape {:?} differs from ids shape {:?}",
                mask.shape(),
                ids.shape()
            ));
        }
        let t = ids.shape()[1];
        if t == 0 || t > self.config.max_position_embeddings {
            return bad(format!(
                "{t} tokens: must be 1 to {}",
                self.config.max_position_embeddings
            ));
        }
        Ok(())
    }

    /// The last hidden states (`[B, T, hidden]`, float32) of `ids`
    /// (`[B, T]` integers below `vocab_size`); `mask` (`[B, T]`, nonzero
    /// for a token, 0 for padding) hides padded keys from every query.
    pub fn forward(&self, ids: &Array, mask: &Array) -> Result<Array> {
        self.check_inputs(ids, mask)?;
        let (b, t) = (ids.shape()[0] as isize, ids.shape()[1] as isize);
        let visible = ferrox::not_equal(mask, &Array::from(0.0))?.reshape(&[b, 1, 1, t])?;
        let mut x = self.embeddings.forward(ids)?;
        for layer in &self.encoder.layer {
            x = layer.forward(&self.config, &x, &visible)?;
        }
        Ok(x)
    }

    /// Sentence embeddings (`[B, hidden]`, float32, unit length): the mean
    /// of the hidden states over the tokens that `mask` keeps, divided by
    /// its L2 norm.
    pub fn pooled(&self, ids: &Array, mask: &Array) -> Result<Array> {
        let h = self.forward(ids, mask)?;
        let m = mask.astype(DType::Float32)?.expand_dims(&[-1])?;
        let total = (h * &m)?.sum(Some(&[1]), false)?;
        let count = ferrox::maximum(&m.sum(Some(&[1]), false)?, &Array::from(1e-9f32))?;
        let mean = (total / count)?;
        let norm = ferrox::sqrt(&ferrox::square(&mean)?.sum(Some(&[-1]), true)?)?;
        Ok((&mean / ferrox::maximum(&norm, &Array::from(1e-12f32))?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Result<Bert> {
        ferrox::random::seed(11);
        Bert::new(BertConfig::tiny(40), Init::Random)
    }

    #[test]
    fn parameter_names_are_the_checkpoint_names() -> Result<()> {
        let m = tiny()?;
        let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
        for want in [
            "embeddings.word_embeddings.weight",
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
            "embeddings.LayerNorm.weight",
            "embeddings.LayerNorm.bias",
            "encoder.layer.0.attention.self.query.weight",
            "encoder.layer.0.attention.self.key.bias",
            "encoder.layer.0.attention.self.value.weight",
            "encoder.layer.0.attention.output.dense.weight",
            "encoder.layer.0.attention.output.LayerNorm.bias",
            "encoder.layer.1.intermediate.dense.weight",
            "encoder.layer.1.output.dense.bias",
            "encoder.layer.1.output.LayerNorm.weight",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        // 5 embedding tensors, 16 per layer.
        assert_eq!(names.len(), 5 + 16 * 2);
        Ok(())
    }

    #[test]
    fn padding_does_not_change_the_embedding() -> Result<()> {
        let m = tiny()?;
        let ids = [5i32, 9, 17, 3];
        let short = m.pooled(
            &Array::from_slice(&ids, &[1, 4])?,
            &ferrox::ones(&[1, 4], DType::Float32)?,
        )?;
        let mut padded = ids.to_vec();
        padded.resize(8, 0);
        let mut mask = vec![1.0f32; 4];
        mask.resize(8, 0.0);
        let long = m.pooled(
            &Array::from_slice(&padded, &[1, 8])?,
            &Array::from_slice(&mask, &[1, 8])?,
        )?;
        let (a, b) = (short.to_vec::<f32>()?, long.to_vec::<f32>()?);
        assert!(
            a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-5),
            "{a:?} {b:?}"
        );
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        Ok(())
    }

    #[test]
    fn bad_inputs_are_errors() -> Result<()> {
        let m = tiny()?;
        let ids = Array::from_slice(&[1i32, 2], &[1, 2])?;
        let e = m
            .forward(&ids, &ferrox::ones(&[1, 3], DType::Float32)?)
            .unwrap_err();
        assert!(e.to_string().contains("mask shape [1, 3]"), "{e}");
        let long = ferrox::zeros(&[1, 65], DType::Int32)?;
        let e = m
            .forward(&long, &ferrox::ones(&[1, 65], DType::Float32)?)
            .unwrap_err();
        assert!(e.to_string().contains("65 tokens"), "{e}");
        let e = Bert::new(
            BertConfig {
                hidden_act: "relu".into(),
                ..BertConfig::tiny(4)
            },
            Init::Zeros,
        )
        .unwrap_err();
        assert!(e.to_string().contains("relu"), "{e}");
        Ok(())
    }
}
