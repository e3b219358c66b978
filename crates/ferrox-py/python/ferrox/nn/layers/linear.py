"""Affine layers: ``Identity``, ``Linear`` and ``Bilinear``.

Weights are stored output-major (``Linear.weight`` is
``(output_dims, input_dims)``), as MLX and PyTorch store them, and start
uniform in ``±1/sqrt(fan_in)``.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import ferrox.core as mx

from ..module import Module
from .quantized import QQLinear, QuantizedLinear


def _uniform_init(fan_in: int, shape: tuple) -> mx.array:
    bound = math.sqrt(1.0 / fan_in)
    return mx.random.uniform(low=-bound, high=bound, shape=shape)


class Identity(Module):
    """Returns its input unchanged; takes (and ignores) any arguments so it
    can stand in for another layer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    """``y = x @ weight.T + bias`` over the last axis of ``x``.

    Args:
        input_dims: size of the last axis of the input.
        output_dims: size of the last axis of the output.
        bias: whether to add a learned ``bias``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Linear(4, 2)(mx.zeros((3, 4))).shape
        (3, 2)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = _uniform_init(input_dims, (output_dims, input_dims))
        if bias:
            self.bias = _uniform_init(input_dims, (output_dims,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(self, group_size: Optional[int] = None, bits: Optional[int] = None,
                     mode: str = "affine", quantize_input: bool = False) -> Module:
        """This layer with a quantized weight: a :class:`QuantizedLinear`,
        or with ``quantize_input`` (modes ``nvfp4``/``mxfp8`` only) a
        :class:`QQLinear` that quantizes its input too."""
        if quantize_input:
            if mode not in ("nvfp4", "mxfp8"):
                raise ValueError("Linear.to_quantized: quantize_input needs mode 'nvfp4' or "
                                 f"'mxfp8', got {mode!r}")
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    """``y[..., o] = x1 @ weight[o] @ x2 + bias[o]`` for two inputs.

    ``weight`` has shape ``(output_dims, input2_dims, input1_dims)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Bilinear(2, 3, 4)(mx.ones((5, 2)), mx.ones((5, 3))).shape
        (5, 4)
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int,
                 bias: bool = True) -> None:
        super().__init__()
        self.weight = _uniform_init(input1_dims, (output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = _uniform_init(input1_dims, (output_dims,))

    def _extra_repr(self) -> str:
        out_dims, in2, in1 = self.weight.shape
        return (f"input1_dims={in1}, input2_dims={in2}, output_dims={out_dims}, "
                f"bias={'bias' in self}")

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        out_dims, in2, in1 = self.weight.shape
        batch_shape = x1.shape[:-1]
        # First contract x1 with the weight as one matmul: (N, out * in2),
        # then contract x2 per output with a batched (1, in2) @ (in2, out).
        partial = x1.reshape(-1, in1) @ self.weight.reshape(out_dims * in2, in1).T
        partial = partial.reshape(-1, out_dims, in2).swapaxes(-2, -1)
        y = (x2.reshape(-1, 1, in2) @ partial).squeeze(1)
        y = y.reshape(*batch_shape, out_dims)
        if "bias" in self:
            y = y + self.bias
        return y
