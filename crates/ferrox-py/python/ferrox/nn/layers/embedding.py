"""``Embedding``: a lookup table of vectors indexed by integer ids."""

from __future__ import annotations

import math
from typing import Optional

import ferrox.core as mx

from ..module import Module
from .quantized import QuantizedEmbedding


class Embedding(Module):
    """Maps integer ids to rows of ``weight`` (``num_embeddings x dims``,
    initialised normal with standard deviation ``1/sqrt(dims)``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Embedding(10, 4)(mx.array([1, 2, 3])).shape
        (3, 4)
    """

    def __init__(self, num_embeddings: int, dims: int) -> None:
        super().__init__()
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x: mx.array) -> mx.array:
        return self.weight[x]

    def as_linear(self, x: mx.array) -> mx.array:
        """Uses the table as a linear map, ``x @ weight.T`` (scores of ``x``
        against every embedding, as a tied output layer does)."""
        return x @ self.weight.T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """This table as a :class:`QuantizedEmbedding` (``quantize_input``
        is not supported for embeddings and raises ``ValueError``)."""
        if quantize_input:
            raise ValueError("Embedding.to_quantized: quantize_input is not supported")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
