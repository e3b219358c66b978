"""Max and average pooling over the spatial axes of channels-last inputs
(``N, L, C`` / ``N, H, W, C`` / ``N, D, H, W, C``).

A box window is separable for both reductions (the max over a box is the
max of per-axis maxima, and likewise for the mean), so pooling reduces
one spatial axis at a time: the ``k`` strided slices ``x[i :: stride]``
(``i < k``) are combined elementwise. That needs only slicing, no
``as_strided`` windows, and the gradient stays the one of the elementwise
ops. Padding adds ``-inf`` (max) or ``0`` (average; padded positions count
in the mean) on both sides of each axis.
"""

from __future__ import annotations

import functools
from typing import Callable, List, Optional, Sequence, Union

import ferrox.core as mx

from ..module import Module

IntOrTuple = Union[int, Sequence[int]]


def _per_axis(value: IntOrTuple, rank: int, layer: str, name: str) -> List[int]:
    message = f"{layer}: {name} takes an int or {rank} ints (one per spatial axis)"
    if isinstance(value, (list, tuple)):
        if len(value) != rank:
            raise ValueError(f"{message}, got {tuple(value)}")
        return list(value)
    if not isinstance(value, int):
        raise ValueError(f"{message}, got {value!r}")
    return [value] * rank


def _pool_axis(x: mx.array, axis: int, window: int, stride: int,
               combine: Callable[[mx.array, mx.array], mx.array]) -> mx.array:
    """Combines the ``window`` taps of every window along ``axis``."""
    size = x.shape[axis]
    if size < window:
        raise ValueError(f"pooling: a window of {window} does not fit an axis of size {size}")
    count = (size - window) // stride + 1
    span = stride * (count - 1) + 1
    index = [slice(None)] * x.ndim

    def tap(i: int) -> mx.array:
        index[axis] = slice(i, i + span, stride)
        return x[tuple(index)]

    return functools.reduce(combine, (tap(i) for i in range(1, window)), tap(0))


class _Pool(Module):
    """Pooling over ``rank`` spatial axes with a ``combine`` of two taps
    and a ``finish`` of the combined result (the division for averages)."""

    _rank = 0
    _padding_value = 0.0

    def __init__(self, kernel_size: IntOrTuple, stride: Optional[IntOrTuple] = None,
                 padding: IntOrTuple = 0) -> None:
        super().__init__()
        name = type(self).__name__
        self._kernel_size = _per_axis(kernel_size, self._rank, name, "kernel_size")
        self._stride = (list(self._kernel_size) if stride is None
                        else _per_axis(stride, self._rank, name, "stride"))
        self._padding = _per_axis(padding, self._rank, name, "padding")
        for what, values in (("kernel_size", self._kernel_size), ("stride", self._stride)):
            if any(v <= 0 for v in values):
                raise ValueError(f"{name}: every {what} must be at least 1, got {tuple(values)}")
        if any(p < 0 for p in self._padding):
            raise ValueError(f"{name}: padding cannot be negative, got {tuple(self._padding)}")

    def _extra_repr(self) -> str:
        return (f"kernel_size={tuple(self._kernel_size)}, stride={tuple(self._stride)}, "
                f"padding={tuple(self._padding)}")

    @staticmethod
    def _combine(a: mx.array, b: mx.array) -> mx.array:
        raise NotImplementedError

    def _finish(self, x: mx.array) -> mx.array:
        return x

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim != self._rank + 2:
            raise ValueError(f"{type(self).__name__}: expected an input with "
                             f"{self._rank + 2} dimensions (N, spatial..., C), got {x.ndim}")
        if any(self._padding):
            widths = [(0, 0)] + [(p, p) for p in self._padding] + [(0, 0)]
            x = mx.pad(x, widths, constant_values=self._padding_value)
        for i, (k, s) in enumerate(zip(self._kernel_size, self._stride)):
            x = _pool_axis(x, 1 + i, k, s, self._combine)
        return self._finish(x)


class _MaxPool(_Pool):
    _padding_value = -float("inf")
    _combine = staticmethod(mx.maximum)


class _AvgPool(_Pool):
    _combine = staticmethod(mx.add)

    def _finish(self, x: mx.array) -> mx.array:
        count = 1
        for k in self._kernel_size:
            count *= k
        return x / count


class MaxPool1d(_MaxPool):
    """Maximum over windows of ``kernel_size`` along ``L`` of ``(N, L, C)``.
    ``stride`` defaults to ``kernel_size``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.MaxPool1d(2)(mx.array([1.0, 3.0, 2.0, 0.0]).reshape(1, 4, 1)).reshape(-1).tolist()
        [3.0, 2.0]
    """

    _rank = 1


class MaxPool2d(_MaxPool):
    """Maximum over ``kernel_size`` windows of ``(N, H, W, C)``."""

    _rank = 2


class MaxPool3d(_MaxPool):
    """Maximum over ``kernel_size`` windows of ``(N, D, H, W, C)``."""

    _rank = 3


class AvgPool1d(_AvgPool):
    """Mean over windows of ``kernel_size`` along ``L`` of ``(N, L, C)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.AvgPool1d(2)(mx.array([1.0, 3.0, 2.0, 0.0]).reshape(1, 4, 1)).reshape(-1).tolist()
        [2.0, 1.0]
    """

    _rank = 1


class AvgPool2d(_AvgPool):
    """Mean over ``kernel_size`` windows of ``(N, H, W, C)``."""

    _rank = 2


class AvgPool3d(_AvgPool):
    """Mean over ``kernel_size`` windows of ``(N, D, H, W, C)``."""

    _rank = 3
