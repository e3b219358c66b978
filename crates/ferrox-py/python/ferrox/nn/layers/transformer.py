"""Attention and the transformer stacks: ``MultiHeadAttention``,
``TransformerEncoder(Layer)``, ``TransformerDecoder(Layer)``, ``Transformer``.

Attention runs through ``ferrox.core.fast.scaled_dot_product_attention``.
Layers are pre-norm by default (``norm_first=True``: normalise, transform,
add the residual); ``norm_first=False`` gives the original post-norm
order. Masks are additive (or boolean, as the attention kernel accepts).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import ferrox.core as mx

from ..module import Module
from ..utils import checkpoint as _checkpoint
from .activations import relu
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

Activation = Callable[[Any], Any]


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention with input and output
    projections.

    Args:
        dims: model dimensions (of the projected queries and keys); must be
            divisible by ``num_heads``.
        num_heads: number of heads.
        query_input_dims, key_input_dims, value_input_dims: input sizes
            (default ``dims``; values default to the key size).
        value_dims: size of the projected values (default ``dims``).
        value_output_dims: output size (default ``dims``).
        bias: whether the projections have biases.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> attn = nn.MultiHeadAttention(8, 2)
        >>> x = mx.zeros((1, 3, 8))
        >>> attn(x, x, x).shape
        (1, 3, 8)
    """

    def __init__(self, dims: int, num_heads: int, query_input_dims: Optional[int] = None,
                 key_input_dims: Optional[int] = None, value_input_dims: Optional[int] = None,
                 value_dims: Optional[int] = None, value_output_dims: Optional[int] = None,
                 bias: bool = False) -> None:
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(f"MultiHeadAttention: dims={dims} is not divisible by "
                             f"num_heads={num_heads}")
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def _split_heads(self, x: mx.array) -> mx.array:
        """``(B, L, H * D)`` to ``(B, H, L, D)``."""
        return mx.unflatten(x, -1, (self.num_heads, -1)).transpose(0, 2, 1, 3)

    def __call__(self, queries: mx.array, keys: mx.array, values: mx.array,
                 mask: Optional[mx.array] = None) -> mx.array:
        q = self._split_heads(self.query_proj(queries))
        k = self._split_heads(self.key_proj(keys))
        v = self._split_heads(self.value_proj(values))
        scale = math.sqrt(1 / q.shape[-1])
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=mask)
        return self.out_proj(out.transpose(0, 2, 1, 3).flatten(-2, -1))

    @staticmethod
    def create_additive_causal_mask(N: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """An ``(N, N)`` additive mask: 0 where a query may attend (keys at
        or before it), the most negative finite value of ``dtype`` after."""
        positions = mx.arange(N)
        future = positions[:, None] < positions[None]
        return future.astype(dtype) * mx.finfo(dtype).min


def _feed_forward_block(layer: Module, x: mx.array, dropout: Module) -> mx.array:
    """``linear2(dropout(activation(linear1(x))))``."""
    return layer.linear2(dropout(layer.activation(layer.linear1(x))))


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (``mlp_dims`` hidden units,
    default ``4 * dims``), each with a residual connection and a LayerNorm."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Activation = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def __call__(self, x: mx.array, mask: Optional[mx.array]) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + _feed_forward_block(self, self.ln2(x), self.dropout2)
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + _feed_forward_block(self, x, self.dropout2))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then a feed-forward
    block, each with a residual connection and a LayerNorm."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Activation = relu,
                 norm_first: bool = True) -> None:
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Optional[mx.array],
                 memory_mask: Optional[mx.array]) -> mx.array:
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + _feed_forward_block(self, self.ln3(x), self.dropout3)
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + _feed_forward_block(self, x, self.dropout3))


class TransformerEncoder(Module):
    """``num_layers`` encoder layers and a final LayerNorm. With
    ``checkpoint`` each layer's activations are recomputed in the backward
    pass instead of kept."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Activation = relu, norm_first: bool = True,
                 checkpoint: bool = False) -> None:
        super().__init__()
        self.layers = [TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, mask: Optional[mx.array]) -> mx.array:
        for layer in self.layers:
            x = (_checkpoint(layer) if self.checkpoint else layer)(x, mask)
        return self.ln(x)


class TransformerDecoder(Module):
    """``num_layers`` decoder layers and a final LayerNorm (``checkpoint``
    as in :class:`TransformerEncoder`)."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Activation = relu, norm_first: bool = True,
                 checkpoint: bool = False) -> None:
        super().__init__()
        self.layers = [TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation,
                                               norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x: mx.array, memory: mx.array, x_mask: Optional[mx.array],
                 memory_mask: Optional[mx.array]) -> mx.array:
        for layer in self.layers:
            x = (_checkpoint(layer) if self.checkpoint else layer)(x, memory, x_mask,
                                                                  memory_mask)
        return self.ln(x)


class Transformer(Module):
    """An encoder-decoder transformer: ``decoder(tgt, encoder(src))``.

    ``custom_encoder``/``custom_decoder`` replace the default stacks (any
    module with the same call signature).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> model = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1,
        ...                        num_decoder_layers=1)
        >>> model(mx.zeros((1, 4, 8)), mx.zeros((1, 3, 8)), None, None, None).shape
        (1, 3, 8)
    """

    def __init__(self, dims: int = 512, num_heads: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Activation = relu,
                 custom_encoder: Optional[Any] = None, custom_decoder: Optional[Any] = None,
                 norm_first: bool = True, checkpoint: bool = False) -> None:
        super().__init__()
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
            checkpoint)

    def __call__(self, src: mx.array, tgt: mx.array, src_mask: Optional[mx.array],
                 tgt_mask: Optional[mx.array], memory_mask: Optional[mx.array]) -> mx.array:
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
