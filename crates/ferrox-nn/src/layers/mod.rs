//! Layers: each file one family, each layer a [`Module`](crate::Module)
//! whose parameter names match MLX's (`weight`, `bias`, `layers.0`, ...),
//! so weights saved by one load in the other.

mod activations;
mod attention;
mod containers;
mod dropout;
mod embedding;
mod linear;
mod norm;
mod positional;
mod recurrent;
mod transformer;

pub use activations::*;
pub use attention::{AttentionDims, MultiHeadAttention};
pub use containers::Sequential;
pub use dropout::{Dropout, Dropout2d, Dropout3d};
pub use embedding::Embedding;
pub use linear::{Bilinear, Identity, Linear};
pub use norm::{BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RmsNorm};
pub use positional::{Alibi, Rope, SinusoidalPositionalEncoding};
pub use recurrent::{Gru, Lstm, Rnn};
pub use transformer::{
    Activation, Transformer, TransformerConfig, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
};
