"""Normalization layers. Inputs are channels-last: features on the last axis.

``LayerNorm`` and ``RMSNorm`` call the fused ``ferrox.core.fast`` kernels;
the others normalise with mean/var reductions. Every ``eps`` is added to
the variance before the square root.
"""

from __future__ import annotations

from typing import Tuple

import ferrox.core as mx

from ..module import Module


def _affine(module: Module, x: mx.array) -> mx.array:
    """``weight * x + bias`` when the module is affine, else ``x``."""
    return module.weight * x + module.bias if "weight" in module else x


def _standardize(x: mx.array, axes: Tuple[int, ...], eps: float) -> mx.array:
    mean = mx.mean(x, axis=axes, keepdims=True)
    var = mx.var(x, axis=axes, keepdims=True)
    return (x - mean) * mx.rsqrt(var + eps)


class InstanceNorm(Module):
    """Normalises each sample and channel over the spatial axes (all but
    the first and last) of an ``(N, ..., C)`` input.

    Args:
        dims: number of channels ``C``.
        eps: added to the variance.
        affine: learn a per-channel ``weight`` and ``bias``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False) -> None:
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 3:
            raise ValueError("InstanceNorm: expected an input with at least 3 dimensions "
                             f"(N, ..., C), got {x.ndim}")
        return _affine(self, _standardize(x, tuple(range(1, x.ndim - 1)), self.eps))


class LayerNorm(Module):
    """Normalises over the last axis: ``(x - mean) / sqrt(var + eps)``,
    then an optional learned ``weight`` (``affine``) and ``bias``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> y = nn.LayerNorm(4)(mx.array([[1.0, 2.0, 3.0, 4.0]]))
        >>> round(y.sum().item(), 5)
        0.0
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True,
                 bias: bool = True) -> None:
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.layer_norm(x, self.get("weight"), self.get("bias"), self.eps)


class RMSNorm(Module):
    """Scales the last axis to unit root mean square, then by a learned
    ``weight``: ``weight * x / sqrt(mean(x^2) + eps)``."""

    def __init__(self, dims: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x: mx.array) -> mx.array:
        return mx.fast.rms_norm(x, self["weight"], self.eps)


class GroupNorm(Module):
    """Splits the ``dims`` channels into ``num_groups`` groups and
    normalises each group of each sample over its channels and the spatial
    axes.

    Groups are interleaved by default (channel ``c`` is in group
    ``c % num_groups``); ``pytorch_compatible=True`` uses contiguous groups
    (channel ``c`` in group ``c // (dims // num_groups)``) as PyTorch does.
    """

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-5, affine: bool = True,
                 pytorch_compatible: bool = False) -> None:
        super().__init__()
        if num_groups <= 0:
            raise ValueError(f"GroupNorm: num_groups must be positive, got {num_groups}")
        if dims <= 0:
            raise ValueError(f"GroupNorm: dims must be positive, got {dims}")
        if dims % num_groups != 0:
            raise ValueError(f"GroupNorm: dims={dims} is not divisible by "
                             f"num_groups={num_groups}")
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, "
                f"affine={'weight' in self}, pytorch_compatible={self.pytorch_compatible}")

    def __call__(self, x: mx.array) -> mx.array:
        batch, *rest, dims = x.shape
        groups = self.num_groups
        if self.pytorch_compatible:
            per_group = dims // groups
            g = x.reshape(batch, -1, groups, per_group)
            g = _standardize(g, (1, 3), self.eps)
        else:
            g = x.reshape(batch, -1, groups)
            g = _standardize(g, (1,), self.eps)
        return _affine(self, g.reshape(batch, *rest, dims))


class BatchNorm(Module):
    """Normalises each feature (last axis) over the batch and spatial axes
    of a 2-, 3- or 4-dimensional input.

    In training mode it uses the batch statistics and, with
    ``track_running_stats``, updates ``running_mean``/``running_var``
    (unbiased variance) by ``momentum``; in evaluation mode it uses the
    running statistics. The running statistics are parameters (saved and
    loaded) but always frozen.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self._freeze_running_stats()

    def _freeze_running_stats(self) -> None:
        if self.track_running_stats:
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs) -> "BatchNorm":
        """Like :meth:`Module.unfreeze`, except that the running statistics
        stay frozen."""
        super().unfreeze(*args, **kwargs)
        self._freeze_running_stats()
        return self

    def _extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={'weight' in self}, track_running_stats={self.track_running_stats}")

    def __call__(self, x: mx.array) -> mx.array:
        if not 2 <= x.ndim <= 4:
            raise ValueError(f"BatchNorm: expected an input with 2, 3 or 4 dimensions, "
                             f"got {x.ndim}")
        axes = tuple(range(x.ndim - 1))
        if self.training:
            count = 1
            for n in x.shape[:-1]:
                count *= n
            if count == 1:
                raise ValueError("BatchNorm: training needs more than one value per "
                                 f"feature, got an input of shape {x.shape}")
        mean = mx.mean(x, axis=axes)
        var = mx.var(x, axis=axes)
        if self.training and self.track_running_stats:
            mu = self.momentum
            unbiased = mx.var(x, axis=axes, ddof=1)
            self.running_mean = (1 - mu) * self.running_mean + mu * mean
            self.running_var = (1 - mu) * self.running_var + mu * unbiased
        elif self.track_running_stats:
            mean, var = self.running_mean, self.running_var
        return _affine(self, (x - mean) * mx.rsqrt(var + self.eps))
