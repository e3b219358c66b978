//! Layers: each file one family, each layer a [`Module`](crate::Module)
//! whose parameter names match MLX's (`weight`, `bias`, `layers.0`, ...),
//! so weights saved by one load in the other.

mod activations;
mod attention;
mod containers;
mod conv;
mod dropout;
mod embedding;
mod linear;
mod norm;
mod pool;
mod positional;
mod quantized;
mod recurrent;
mod transformer;
mod upsample;

pub use activations::*;
pub use attention::{AttentionDims, MultiHeadAttention};
pub use containers::Sequential;
pub use conv::{
    Conv, Conv1d, Conv2d, Conv3d, ConvOptions, ConvTranspose, ConvTranspose1d, ConvTranspose2d,
    ConvTranspose3d,
};
pub use dropout::{Dropout, Dropout2d, Dropout3d};
pub use embedding::Embedding;
pub use linear::{Bilinear, Identity, Linear};
pub use norm::{BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RmsNorm};
pub use pool::{AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d, Pool, PoolKind};
pub use positional::{Alibi, Rope, SinusoidalPositionalEncoding};
pub use quantized::{QuantPredicate, QuantSpec, QuantizedEmbedding, QuantizedLinear, quantize};
pub use recurrent::{Gru, Lstm, Rnn};
pub use transformer::{
    Activation, Transformer, TransformerConfig, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
};
pub use upsample::{Upsample, UpsampleMode};
