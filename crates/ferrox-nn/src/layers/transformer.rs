//! The transformer of "Attention is all you need" in MLX's form:
//! [`TransformerEncoderLayer`], [`TransformerDecoderLayer`], their stacks
//! [`TransformerEncoder`] and [`TransformerDecoder`], and [`Transformer`].

use super::activations::relu;
use super::attention::MultiHeadAttention;
use super::dropout::Dropout;
use super::linear::Linear;
use super::norm::LayerNorm;
use crate::error::{Result, check_positive};
use crate::module::Forward;
use ferrox::Array;
use ferrox::fast::AttentionMask;

/// An activation function of the feed-forward block.
pub type Activation = fn(&Array) -> Result<Array>;

/// The settings shared by every transformer layer.
///
/// ```
/// let c = ferrox_nn::layers::TransformerConfig::new(16, 4);
/// assert_eq!((c.mlp_dims, c.norm_first), (64, true));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TransformerConfig {
    /// Model features.
    pub dims: usize,
    /// Attention heads.
    pub num_heads: usize,
    /// Hidden features of the feed-forward block (default `4 * dims`).
    pub mlp_dims: usize,
    /// Dropout probability (default 0).
    pub dropout: f64,
    /// The feed-forward activation (default ReLU).
    pub activation: Activation,
    /// Normalise before each block (default) or after it.
    pub norm_first: bool,
}

impl TransformerConfig {
    /// MLX's defaults for `dims` and `num_heads`.
    pub fn new(dims: usize, num_heads: usize) -> TransformerConfig {
        TransformerConfig {
            dims,
            num_heads,
            mlp_dims: 4 * dims,
            dropout: 0.0,
            activation: relu,
            norm_first: true,
        }
    }
}

fn ln(dims: usize) -> Result<LayerNorm> {
    LayerNorm::new(dims, 1e-5, true, true)
}

/// The feed-forward block `linear2(dropout(activation(linear1(x))))`.
fn mlp(
    c: &TransformerConfig,
    linear1: &Linear,
    linear2: &Linear,
    dropout: &Dropout,
    x: &Array,
) -> Result<Array> {
    linear2.forward(&dropout.forward(&(c.activation)(&linear1.forward(x)?)?)?)
}

/// Self-attention and a feed-forward block, each with a residual.
///
/// ```
/// use ferrox_nn::layers::{TransformerConfig, TransformerEncoderLayer};
/// let l = TransformerEncoderLayer::new(TransformerConfig::new(8, 2))?;
/// let x = ferrox::ones(&[1, 3, 8], ferrox::DType::Float32)?;
/// assert_eq!(l.forward(&x, ferrox::fast::AttentionMask::None)?.shape(), &[1, 3, 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub attention: MultiHeadAttention,
    /// Norm of the attention block.
    pub ln1: LayerNorm,
    /// Norm of the feed-forward block.
    pub ln2: LayerNorm,
    /// First feed-forward projection.
    pub linear1: Linear,
    /// Second feed-forward projection.
    pub linear2: Linear,
    /// Dropout after attention.
    pub dropout1: Dropout,
    /// Dropout in the feed-forward block.
    pub dropout2: Dropout,
    /// The settings.
    pub config: TransformerConfig,
}

impl TransformerEncoderLayer {
    /// A layer with random weights.
    pub fn new(c: TransformerConfig) -> Result<TransformerEncoderLayer> {
        check_positive("TransformerEncoderLayer", "mlp_dims", c.mlp_dims)?;
        Ok(TransformerEncoderLayer {
            attention: MultiHeadAttention::new(c.dims, c.num_heads, false)?,
            ln1: ln(c.dims)?,
            ln2: ln(c.dims)?,
            linear1: Linear::new(c.dims, c.mlp_dims, true)?,
            linear2: Linear::new(c.mlp_dims, c.dims, true)?,
            dropout1: Dropout::new(c.dropout)?,
            dropout2: Dropout::new(c.dropout)?,
            config: c,
        })
    }

    /// Applies the layer to `x` (`[B, T, dims]`).
    pub fn forward(&self, x: &Array, mask: AttentionMask<'_>) -> Result<Array> {
        let c = &self.config;
        let ff = |y: &Array| mlp(c, &self.linear1, &self.linear2, &self.dropout2, y);
        if c.norm_first {
            let y = self.ln1.forward(x)?;
            let x = (x + self
                .dropout1
                .forward(&self.attention.forward(&y, &y, &y, mask)?)?)?;
            &x + ff(&self.ln2.forward(&x)?)?
        } else {
            let y = self
                .dropout1
                .forward(&self.attention.forward(x, x, x, mask)?)?;
            let x = self.ln1.forward(&(x + y)?)?;
            self.ln2.forward(&(&x + ff(&x)?)?)
        }
    }
}
crate::impl_module!(TransformerEncoderLayer {
    attention,
    ln1,
    ln2,
    linear1,
    linear2,
    dropout1,
    dropout2
});

/// Encoder layers and a final norm.
///
/// ```
/// use ferrox_nn::{Module, layers::{TransformerConfig, TransformerEncoder}};
/// let e = TransformerEncoder::new(2, TransformerConfig::new(8, 2))?;
/// assert!(e.parameters().get("layers.1.attention.query_proj.weight").is_some());
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TransformerEncoder {
    /// The layers.
    pub layers: Vec<TransformerEncoderLayer>,
    /// The final norm.
    pub ln: LayerNorm,
}

impl TransformerEncoder {
    /// `num_layers` layers of `c`.
    pub fn new(num_layers: usize, c: TransformerConfig) -> Result<TransformerEncoder> {
        Ok(TransformerEncoder {
            layers: (0..num_layers)
                .map(|_| TransformerEncoderLayer::new(c))
                .collect::<Result<_>>()?,
            ln: ln(c.dims)?,
        })
    }

    /// Applies every layer, then the norm.
    pub fn forward(&self, x: &Array, mask: AttentionMask<'_>) -> Result<Array> {
        let x = self
            .layers
            .iter()
            .try_fold(x.clone(), |x, l| l.forward(&x, mask))?;
        self.ln.forward(&x)
    }
}
crate::impl_module!(TransformerEncoder { layers, ln });

/// Self-attention, cross-attention to a memory, and a feed-forward
/// block, each with a residual.
///
/// ```
/// use ferrox_nn::layers::{TransformerConfig, TransformerDecoderLayer};
/// use ferrox::fast::AttentionMask;
/// let l = TransformerDecoderLayer::new(TransformerConfig::new(8, 2))?;
/// let x = ferrox::ones(&[1, 3, 8], ferrox::DType::Float32)?;
/// let mem = ferrox::ones(&[1, 4, 8], ferrox::DType::Float32)?;
/// assert_eq!(l.forward(&x, &mem, AttentionMask::Causal, AttentionMask::None)?.shape(), &[1, 3, 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TransformerDecoderLayer {
    /// Self-attention.
    pub self_attention: MultiHeadAttention,
    /// Attention to the memory.
    pub cross_attention: MultiHeadAttention,
    /// Norm of the self-attention block.
    pub ln1: LayerNorm,
    /// Norm of the cross-attention block.
    pub ln2: LayerNorm,
    /// Norm of the feed-forward block.
    pub ln3: LayerNorm,
    /// First feed-forward projection.
    pub linear1: Linear,
    /// Second feed-forward projection.
    pub linear2: Linear,
    /// Dropout after self-attention.
    pub dropout1: Dropout,
    /// Dropout after cross-attention.
    pub dropout2: Dropout,
    /// Dropout in the feed-forward block.
    pub dropout3: Dropout,
    /// The settings.
    pub config: TransformerConfig,
}

impl TransformerDecoderLayer {
    /// A layer with random weights.
    pub fn new(c: TransformerConfig) -> Result<TransformerDecoderLayer> {
        check_positive("TransformerDecoderLayer", "mlp_dims", c.mlp_dims)?;
        Ok(TransformerDecoderLayer {
            self_attention: MultiHeadAttention::new(c.dims, c.num_heads, false)?,
            cross_attention: MultiHeadAttention::new(c.dims, c.num_heads, false)?,
            ln1: ln(c.dims)?,
            ln2: ln(c.dims)?,
            ln3: ln(c.dims)?,
            linear1: Linear::new(c.dims, c.mlp_dims, true)?,
            linear2: Linear::new(c.mlp_dims, c.dims, true)?,
            dropout1: Dropout::new(c.dropout)?,
            dropout2: Dropout::new(c.dropout)?,
            dropout3: Dropout::new(c.dropout)?,
            config: c,
        })
    }

    /// Applies the layer to `x` (`[B, T, dims]`) with `memory` (`[B, S, dims]`).
    pub fn forward(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: AttentionMask<'_>,
        memory_mask: AttentionMask<'_>,
    ) -> Result<Array> {
        let c = &self.config;
        let ff = |y: &Array| mlp(c, &self.linear1, &self.linear2, &self.dropout3, y);
        if c.norm_first {
            let y = self.ln1.forward(x)?;
            let x = (x + self
                .dropout1
                .forward(&self.self_attention.forward(&y, &y, &y, x_mask)?)?)?;
            let y = self.ln2.forward(&x)?;
            let x = (&x
                + self.dropout2.forward(&self.cross_attention.forward(
                    &y,
                    memory,
                    memory,
                    memory_mask,
                )?)?)?;
            &x + ff(&self.ln3.forward(&x)?)?
        } else {
            let y = self
                .dropout1
                .forward(&self.self_attention.forward(x, x, x, x_mask)?)?;
            let x = self.ln1.forward(&(x + y)?)?;
            let y = self.dropout2.forward(&self.cross_attention.forward(
                &x,
                memory,
                memory,
                memory_mask,
            )?)?;
            let x = self.ln2.forward(&(&x + y)?)?;
            self.ln3.forward(&(&x + ff(&x)?)?)
        }
    }
}
crate::impl_module!(TransformerDecoderLayer {
    self_attention,
    cross_attention,
    ln1,
    ln2,
    ln3,
    linear1,
    linear2,
    dropout1,
    dropout2,
    dropout3,
});

/// Decoder layers and a final norm.
///
/// ```
/// use ferrox_nn::layers::{TransformerConfig, TransformerDecoder};
/// assert_eq!(TransformerDecoder::new(3, TransformerConfig::new(8, 2))?.layers.len(), 3);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TransformerDecoder {
    /// The layers.
    pub layers: Vec<TransformerDecoderLayer>,
    /// The final norm.
    pub ln: LayerNorm,
}

impl TransformerDecoder {
    /// `num_layers` layers of `c`.
    pub fn new(num_layers: usize, c: TransformerConfig) -> Result<TransformerDecoder> {
        Ok(TransformerDecoder {
            layers: (0..num_layers)
                .map(|_| TransformerDecoderLayer::new(c))
                .collect::<Result<_>>()?,
            ln: ln(c.dims)?,
        })
    }

    /// Applies every layer, then the norm.
    pub fn forward(
        &self,
        x: &Array,
        memory: &Array,
        x_mask: AttentionMask<'_>,
        memory_mask: AttentionMask<'_>,
    ) -> Result<Array> {
        let x = self
            .layers
            .iter()
            .try_fold(x.clone(), |x, l| l.forward(&x, memory, x_mask, memory_mask))?;
        self.ln.forward(&x)
    }
}
crate::impl_module!(TransformerDecoder { layers, ln });

/// An encoder and a decoder.
///
/// ```
/// use ferrox_nn::layers::{Transformer, TransformerConfig};
/// use ferrox::fast::AttentionMask;
/// let t = Transformer::new(1, 1, TransformerConfig::new(8, 2))?;
/// let src = ferrox::ones(&[1, 4, 8], ferrox::DType::Float32)?;
/// let tgt = ferrox::ones(&[1, 3, 8], ferrox::DType::Float32)?;
/// let y = t.forward(&src, &tgt, AttentionMask::None, AttentionMask::Causal, AttentionMask::None)?;
/// assert_eq!(y.shape(), &[1, 3, 8]);
/// # Ok::<(), ferrox::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Transformer {
    /// The encoder.
    pub encoder: TransformerEncoder,
    /// The decoder.
    pub decoder: TransformerDecoder,
}

impl Transformer {
    /// `num_encoder_layers` and `num_decoder_layers` layers of `c`.
    pub fn new(
        num_encoder_layers: usize,
        num_decoder_layers: usize,
        c: TransformerConfig,
    ) -> Result<Transformer> {
        Ok(Transformer {
            encoder: TransformerEncoder::new(num_encoder_layers, c)?,
            decoder: TransformerDecoder::new(num_decoder_layers, c)?,
        })
    }

    /// Encodes `src`, then decodes `tgt` against it.
    pub fn forward(
        &self,
        src: &Array,
        tgt: &Array,
        src_mask: AttentionMask<'_>,
        tgt_mask: AttentionMask<'_>,
        memory_mask: AttentionMask<'_>,
    ) -> Result<Array> {
        let memory = self.encoder.forward(src, src_mask)?;
        self.decoder.forward(tgt, &memory, tgt_mask, memory_mask)
    }
}
crate::impl_module!(Transformer { encoder, decoder });
