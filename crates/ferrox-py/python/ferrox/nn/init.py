"""Parameter initialisers, read like ``mlx.nn.init``.

Each function returns an *initializer*: a function of an array ``a`` that
returns a new array of ``a``'s shape (``a``'s values are ignored), e.g.
``model.weight = init.he_normal()(model.weight)``. For the Glorot/He
families, ``fan_in`` is ``a.shape[-1]`` and ``fan_out`` is ``a.shape[0]``,
both times the product of the axes in between (a convolution's kernel).
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Tuple

import ferrox.core as mx

Initializer = Callable[..., mx.array]
FanMode = Literal["fan_in", "fan_out"]


def constant(value: float, dtype: mx.Dtype = mx.float32) -> Initializer:
    """Fills with ``value``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.constant(0.5)(mx.zeros((2,))).tolist()
        [0.5, 0.5]
    """
    def initializer(a: mx.array) -> mx.array:
        return mx.full(a.shape, value, dtype=dtype)

    return initializer


def normal(mean: float = 0.0, std: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """Samples a normal distribution with ``mean`` and standard deviation ``std``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.normal()(mx.zeros((2, 3))).shape
        (2, 3)
    """
    def initializer(a: mx.array) -> mx.array:
        return mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)

    return initializer


def uniform(low: float = 0.0, high: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """Samples uniformly from ``[low, high)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> bool((nn.init.uniform(2, 3)(mx.zeros((4,))) >= 2).all())
        True
    """
    def initializer(a: mx.array) -> mx.array:
        return mx.random.uniform(low, high, a.shape, dtype=dtype)

    return initializer


def identity(dtype: mx.Dtype = mx.float32) -> Initializer:
    """The identity matrix (for square 2-d arrays only).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.identity()(mx.zeros((2, 2))).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"init.identity: expected a square matrix, got shape {a.shape}")
        return mx.eye(n=a.shape[0], dtype=dtype)

    return initializer


def _fans(a: mx.array, name: str) -> Tuple[int, int]:
    if a.ndim < 2:
        raise ValueError(f"init.{name}: needs an array with at least 2 dimensions, got "
                         f"{a.ndim}")
    receptive = math.prod(a.shape[1:-1])
    return a.shape[-1] * receptive, a.shape[0] * receptive


def _fan(a: mx.array, mode: str, name: str) -> int:
    fan_in, fan_out = _fans(a, name)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"init.{name}: invalid mode {mode!r}; valid modes are fan_in, fan_out")


def glorot_normal(dtype: mx.Dtype = mx.float32) -> Initializer:
    """Glorot (Xavier) normal: standard deviation
    ``gain * sqrt(2 / (fan_in + fan_out))``. The initializer takes ``gain``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.glorot_normal()(mx.zeros((3, 4)), gain=2.0).shape
        (3, 4)
    """
    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a, "glorot_normal")
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def glorot_uniform(dtype: mx.Dtype = mx.float32) -> Initializer:
    """Glorot (Xavier) uniform on ``±gain * sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.glorot_uniform()(mx.zeros((3, 4))).shape
        (3, 4)
    """
    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _fans(a, "glorot_uniform")
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def he_normal(dtype: mx.Dtype = mx.float32) -> Initializer:
    """He (Kaiming) normal: standard deviation ``gain / sqrt(fan)``, ``fan``
    chosen by the initializer's ``mode`` (``"fan_in"`` or ``"fan_out"``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.he_normal()(mx.zeros((3, 4)), mode="fan_out").shape
        (3, 4)
    """
    def initializer(a: mx.array, mode: FanMode = "fan_in", gain: float = 1.0) -> mx.array:
        std = gain / math.sqrt(_fan(a, mode, "he_normal"))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def he_uniform(dtype: mx.Dtype = mx.float32) -> Initializer:
    """He (Kaiming) uniform on ``±gain * sqrt(3 / fan)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.init.he_uniform()(mx.zeros((3, 4))).shape
        (3, 4)
    """
    def initializer(a: mx.array, mode: FanMode = "fan_in", gain: float = 1.0) -> mx.array:
        limit = gain * math.sqrt(3.0 / _fan(a, mode, "he_uniform"))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0,
           dtype: mx.Dtype = mx.float32) -> Initializer:
    """A normal 2-d array with ``ceil(sparsity * columns)`` entries of each
    row set to zero, at random columns.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> (nn.init.sparse(0.5)(mx.zeros((2, 4))) == 0).sum(axis=1).tolist()
        [2, 2]
    """
    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError(f"init.sparse: needs a 2-d array, got {a.ndim} dimensions")
        rows, cols = a.shape
        zeros_per_row = int(math.ceil(sparsity * cols))
        values = mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
        # A random permutation per row; its first entries pick the columns
        # to clear. rank[r, c] < zeros_per_row marks exactly that many per row.
        rank = mx.argsort(mx.argsort(mx.random.uniform(shape=a.shape), axis=1), axis=1)
        return mx.where(rank < zeros_per_row, mx.zeros_like(values), values)

    return initializer


def orthogonal(gain: float = 1.0, dtype: mx.Dtype = mx.float32) -> Initializer:
    """A (semi-)orthogonal 2-d array times ``gain``: the Q factor of a
    random normal square matrix (signs fixed by R's diagonal), cut to shape.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> q = nn.init.orthogonal()(mx.zeros((3, 3)))
        >>> bool(mx.allclose(q @ q.T, mx.eye(3), atol=1e-5))
        True
    """
    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError(f"init.orthogonal: needs a 2D array, got a {a.ndim}D array")
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = mx.linalg.qr(mx.random.normal(shape=(n, n)), stream=mx.cpu)
        q = q * mx.sign(mx.diag(r))
        return (q[:rows, :cols] * gain).astype(dtype)

    return initializer
