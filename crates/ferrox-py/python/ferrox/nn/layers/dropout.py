"""Dropout layers: zero random entries (or whole channels) in training.

In training mode each kept value is scaled by ``1 / (1 - p)`` so the
expected output equals the input; in evaluation mode the layers are the
identity. Inputs are channels-last (``N, ..., C``).
"""

from __future__ import annotations

from typing import Tuple

import ferrox.core as mx

from ..module import Module


class _DropoutBase(Module):
    """Shared parts: the probability check and the masking. ``_spatial``
    is how many axes before the channel axis share one mask value (0 for
    elementwise dropout); ``_ndims`` the input ranks accepted."""

    _spatial = 0
    _ndims: Tuple[int, ...] = ()

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"{type(self).__name__}: p (the probability of dropping) must be "
                             f"in [0, 1), got {p}")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x: mx.array) -> mx.array:
        if self._ndims and x.ndim not in self._ndims:
            raise ValueError(f"{type(self).__name__}: expected an input with "
                             f"{' or '.join(map(str, self._ndims))} dimensions, got {x.ndim}")
        if self._p_1 == 1 or not self.training:
            return x
        mask_shape = list(x.shape)
        for axis in range(2, 2 + self._spatial):
            mask_shape[-axis] = 1
        keep = mx.random.bernoulli(self._p_1, mask_shape)
        return (keep * x) * (1 / self._p_1)


class Dropout(_DropoutBase):
    """Zeroes each entry with probability ``p`` during training.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Dropout(0.5).eval()(mx.ones((2,))).tolist()
        [1.0, 1.0]
    """


class Dropout2d(_DropoutBase):
    """Zeroes whole channels (one mask value per ``N, C``) of ``NHWC`` or
    ``HWC`` inputs with probability ``p`` during training."""

    _spatial = 2
    _ndims = (3, 4)


class Dropout3d(_DropoutBase):
    """Zeroes whole channels of ``NDHWC`` or ``DHWC`` inputs with
    probability ``p`` during training."""

    _spatial = 3
    _ndims = (4, 5)
