"""Convolutions over channels-last inputs: ``Conv1d`` (``N, L, C``),
``Conv2d`` (``N, H, W, C``) and ``Conv3d`` (``N, D, H, W, C``).

Weights are ``(out_channels, *kernel_size, in_channels // groups)`` and
start uniform in ``±1/sqrt(in_channels * prod(kernel_size))``; the bias
starts at zero.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple, Union

import ferrox.core as mx

from ..module import Module

IntOrTuple = Union[int, Sequence[int]]


def _ntuple(value: IntOrTuple, n: int, layer: str, name: str) -> Tuple[int, ...]:
    """``value`` as an ``n``-tuple (an int is repeated)."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{layer}: {name} must be an int or {n} ints, got {value}")
    return value


def _geometry(value: IntOrTuple, rank: int, layer: str, name: str) -> IntOrTuple:
    """A stride/padding as the layer keeps it: 1-d layers keep it as given,
    the others as a ``rank``-tuple."""
    return value if rank == 1 else _ntuple(value, rank, layer, name)


def _conv_weight(in_channels: int, out_channels: int, kernel: Tuple[int, ...],
                 groups: int, layer: str) -> mx.array:
    """``(out_channels, *kernel, in_channels // groups)``, uniform in
    ``±1/sqrt(in_channels * prod(kernel))``."""
    if in_channels % groups != 0:
        raise ValueError(f"{layer}: in_channels={in_channels} is not divisible by "
                         f"groups={groups}")
    bound = math.sqrt(1 / (in_channels * math.prod(kernel)))
    return mx.random.uniform(low=-bound, high=bound,
                             shape=(out_channels, *kernel, in_channels // groups))


class _ConvNd(Module):
    """Shared parts of the three convolutions; subclasses set ``_rank``,
    the number of spatial axes."""

    _rank = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        kernel = _ntuple(kernel_size, self._rank, name, "kernel_size")
        self.weight = _conv_weight(in_channels, out_channels, kernel, groups, name)
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = _geometry(padding, self._rank, name, "padding")
        self.stride = _geometry(stride, self._rank, name, "stride")
        self.dilation = dilation
        self.groups = groups

    def _extra_repr(self) -> str:
        kernel = self.weight.shape[1:-1]
        kernel = kernel[0] if self._rank == 1 else kernel
        return (f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, "
                f"kernel_size={kernel}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, groups={self.groups}, bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        op = (mx.conv1d, mx.conv2d, mx.conv3d)[self._rank - 1]
        y = op(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        return y + self.bias if "bias" in self else y


class Conv1d(_ConvNd):
    """1-d convolution of an ``(N, L, C_in)`` input to ``(N, L_out, C_out)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Conv1d(2, 4, kernel_size=3)(mx.ones((1, 10, 2))).shape
        (1, 8, 4)
    """

    _rank = 1


class Conv2d(_ConvNd):
    """2-d convolution of an ``(N, H, W, C_in)`` input; ``kernel_size``,
    ``stride``, ``padding`` and ``dilation`` are ints or pairs."""

    _rank = 2


class Conv3d(_ConvNd):
    """3-d convolution of an ``(N, D, H, W, C_in)`` input; ``kernel_size``,
    ``stride``, ``padding`` and ``dilation`` are ints or triples."""

    _rank = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple,
                 stride: IntOrTuple = 1, padding: IntOrTuple = 0, dilation: IntOrTuple = 1,
                 bias: bool = True) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups=1, bias=bias)
