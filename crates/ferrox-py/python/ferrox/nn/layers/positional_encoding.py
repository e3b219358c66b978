"""Position information for attention: ``RoPE``, ``SinusoidalPositionalEncoding``
and ``ALiBi``."""

from __future__ import annotations

import math
from typing import List, Optional

import ferrox.core as mx

from ..module import Module


class RoPE(Module):
    """Rotary positional encoding (``ferrox.core.fast.rope``) of the first
    ``dims`` features of the last axis, positions along the second-to-last.

    Args:
        dims: how many features to rotate.
        traditional: rotate consecutive pairs ``(0, 1), (2, 3), ...``
            instead of the two halves.
        base: base of the geometric sequence of frequencies.
        scale: multiplies the positions.
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000,
                 scale: float = 1.0) -> None:
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x: mx.array, offset: int = 0) -> mx.array:
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base,
                            scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    """Sine/cosine features of (possibly fractional) positions.

    The ``dims // 2`` frequencies run geometrically from ``max_freq`` down
    to ``min_freq``; the output's last axis holds the sines then the
    cosines (cosines first with ``cos_first``), times ``scale`` (default
    ``sqrt(2 / dims)``, which gives unit-norm rows). ``full_turns``
    multiplies the frequencies by ``2 pi``.
    """

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1,
                 scale: Optional[float] = None, cos_first: bool = False,
                 full_turns: bool = False) -> None:
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(f"SinusoidalPositionalEncoding: dims must be positive and even, "
                             f"got {dims}")
        half = dims // 2
        # Fractions 1 -> 0 across the frequencies (a single one sits at 1).
        fractions = mx.array([1.0]) if half == 1 else 1 - mx.arange(0, half) / (half - 1)
        log_min, log_max = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(fractions * (log_max - log_min) + log_min)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = (2 / dims) ** 0.5 if scale is None else scale
        self.cos_first = cos_first

    def __call__(self, x: mx.array) -> mx.array:
        angles = x[..., None] * self._sigmas
        parts = [mx.cos(angles), mx.sin(angles)]
        if not self.cos_first:
            parts.reverse()
        y = mx.concatenate(parts, axis=-1)
        return y * self.scale if self.scale != 1 else y


def _alibi_slopes(num_heads: int) -> List[float]:
    """The ALiBi head slopes: for a power of two ``n``, the geometric
    sequence starting at ``2 ** (-8 / n)``; otherwise the sequence of the
    power of two below, completed with every other slope of the power above."""
    if math.log2(num_heads).is_integer():
        first = 2 ** (-(2 ** -(math.log2(num_heads) - 3)))
        return [first ** (i + 1) for i in range(num_heads)]
    below = 2 ** math.floor(math.log2(num_heads))
    return _alibi_slopes(below) + _alibi_slopes(2 * below)[0::2][: num_heads - below]


class ALiBi(Module):
    """Attention with linear biases: adds ``-slope_h * |i - j|`` to the
    attention scores ``(B, heads, queries, keys)``, one slope per head."""

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype: mx.Dtype) -> mx.array:
        """The per-head slopes, shaped ``(num_heads, 1, 1)``."""
        return mx.array(_alibi_slopes(num_heads), dtype=dtype).reshape(num_heads, 1, 1)

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int, num_heads: int,
                            offset: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """The bias ``(1, num_heads, q_sequence_length - offset, k_sequence_length)``
        for query positions ``offset..q_sequence_length-1``."""
        queries = mx.arange(offset, q_sequence_length)
        keys = mx.arange(0, k_sequence_length)
        distance = -mx.abs(queries[:, None] - keys[None, :])[None, None]
        return (distance * ALiBi.create_alibi_slope(num_heads, dtype)).astype(dtype)

    def __call__(self, attention_scores: mx.array, offset: int = 0,
                 mask: Optional[mx.array] = None) -> mx.array:
        bias = ALiBi.create_alibi_matrix(
            q_sequence_length=attention_scores.shape[-2] + offset,
            k_sequence_length=attention_scores.shape[-1],
            num_heads=attention_scores.shape[1], offset=offset,
            dtype=attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
