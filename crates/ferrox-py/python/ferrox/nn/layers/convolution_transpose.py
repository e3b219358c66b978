"""Transposed convolutions (the gradient of a convolution with respect to
its input) over channels-last inputs: ``ConvTranspose1d/2d/3d``.

Weights are ``(out_channels, *kernel_size, in_channels)`` and start uniform
in ``±1/sqrt(in_channels * prod(kernel_size))``; the bias starts at zero.
"""

from __future__ import annotations

from typing import Tuple

import ferrox.core as mx

from ..module import Module
from .convolution import IntOrTuple, _conv_weight, _geometry, _ntuple


class _ConvTransposeNd(Module):
    """Shared parts of the three layers; ``_rank`` spatial axes."""

    _rank = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 output_padding: IntOrTuple = 0, bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        kernel = _ntuple(kernel_size, self._rank, name, "kernel_size")
        self.weight = _conv_weight(in_channels, out_channels, kernel, 1, name)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = _geometry(padding, self._rank, name, "padding")
        self.stride = _geometry(stride, self._rank, name, "stride")
        self.dilation = dilation
        self.output_padding = _geometry(output_padding, self._rank, name, "output_padding")

    def _extra_repr(self) -> str:
        kernel: Tuple[int, ...] = self.weight.shape[1:-1]
        shown = kernel[0] if self._rank == 1 else kernel
        return (f"{self.weight.shape[-1]}, {self.weight.shape[0]}, kernel_size={shown}, "
                f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                f"output_padding={self.output_padding}, bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        op = (mx.conv_transpose1d, mx.conv_transpose2d, mx.conv_transpose3d)[self._rank - 1]
        y = op(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        return y + self.bias if "bias" in self else y


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution of an ``(N, L, C_in)`` input.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.ConvTranspose1d(2, 4, kernel_size=3)(mx.ones((1, 8, 2))).shape
        (1, 10, 4)
    """

    _rank = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution of an ``(N, H, W, C_in)`` input."""

    _rank = 2


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution of an ``(N, D, H, W, C_in)`` input."""

    _rank = 3
