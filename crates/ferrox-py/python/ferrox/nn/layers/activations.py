"""Activation functions and their module forms.

The elementwise functions are compiled shapeless (``ferrox.core.compile``
with ``shapeless=True``): one trace serves every input shape, and their
Python scalar arguments (slopes, thresholds) are constants of the trace, so
each distinct value traces once. ``glu`` and ``tanh`` are left plain: the
first splits by shape, the second is a single op.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import ferrox.core as mx

from ..module import Module

_compiled = functools.partial(mx.compile, shapeless=True)


@_compiled
def sigmoid(x: mx.array) -> mx.array:
    """Logistic sigmoid ``1 / (1 + exp(-x))``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.sigmoid(mx.array([0.0])).tolist()
        [0.5]
    """
    return mx.sigmoid(x)


@_compiled
def relu(x: mx.array) -> mx.array:
    """Rectified linear unit ``max(x, 0)``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.relu(mx.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return mx.maximum(x, 0)


@_compiled
def relu2(x: mx.array) -> mx.array:
    """Squared ReLU ``max(x, 0) ** 2``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.relu2(mx.array([-1.0, 3.0])).tolist()
        [0.0, 9.0]
    """
    return mx.square(mx.maximum(x, 0))


@_compiled
def relu6(x: mx.array) -> mx.array:
    """ReLU capped at six: ``min(max(x, 0), 6)``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.relu6(mx.array([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """
    return mx.minimum(mx.maximum(x, 0), 6.0)


@_compiled
def leaky_relu(x: mx.array, negative_slope: float = 0.01) -> mx.array:
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.leaky_relu(mx.array([-1.0, 1.0]), 0.5).tolist()
        [-0.5, 1.0]
    """
    return mx.maximum(negative_slope * x, x)


@_compiled
def log_softmax(x: mx.array, axis: int = -1) -> mx.array:
    """``x - logsumexp(x)`` along ``axis``: log-probabilities.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> round(nn.log_softmax(mx.array([1.0, 1.0])).tolist()[0], 4)
        -0.6931
    """
    # Shifting by the (constant) maximum keeps large equal logits exact.
    shifted = x - mx.stop_gradient(mx.max(x, axis=axis, keepdims=True))
    return shifted - mx.logsumexp(shifted, axis=axis, keepdims=True)


@_compiled
def elu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """Exponential linear unit: ``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.elu(mx.array([0.0, 2.0])).tolist()
        [0.0, 2.0]
    """
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


@_compiled
def softmax(x: mx.array, axis: int = -1) -> mx.array:
    """``exp(x) / sum(exp(x))`` along ``axis``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.softmax(mx.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    return mx.softmax(x, axis=axis)


@_compiled
def softplus(x: mx.array) -> mx.array:
    """``log(1 + exp(x))``, computed without overflow.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> round(nn.softplus(mx.array([0.0])).item(), 4)
        0.6931
    """
    return mx.logaddexp(x, 0)


@_compiled
def softsign(x: mx.array) -> mx.array:
    """``x / (1 + |x|)``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.softsign(mx.array([1.0, -3.0])).tolist()
        [0.5, -0.75]
    """
    return mx.divide(x, 1 + mx.abs(x))


@_compiled
def softshrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """Moves ``x`` towards zero by ``lambd``; values within ``lambd`` of
    zero become zero.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.softshrink(mx.array([2.0, 0.25, -2.0])).tolist()
        [1.5, 0.0, -1.5]
    """
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


@_compiled
def celu(x: mx.array, alpha: float = 1.0) -> mx.array:
    """Continuously differentiable ELU:
    ``max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.celu(mx.array([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


@_compiled
def silu(x: mx.array) -> mx.array:
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.silu(mx.array([0.0])).tolist()
        [0.0]
    """
    return x * mx.sigmoid(x)


@_compiled
def log_sigmoid(x: mx.array) -> mx.array:
    """``log(sigmoid(x)) = -softplus(-x)``, elementwise.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> round(nn.log_sigmoid(mx.array([0.0])).item(), 4)
        -0.6931
    """
    return -mx.logaddexp(-x, 0)


@_compiled
def gelu(x: mx.array) -> mx.array:
    """Gaussian error linear unit ``x * Phi(x)`` (``Phi`` the standard
    normal CDF), exact through ``erf``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.gelu(mx.array([0.0])).tolist()
        [0.0]
    """
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


@_compiled
def gelu_approx(x: mx.array) -> mx.array:
    """GELU through the tanh formula
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``; within 5e-4 of
    :func:`gelu` on [-6, 6].

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.gelu_approx(mx.array([0.0])).tolist()
        [0.0]
    """
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


@_compiled
def gelu_fast_approx(x: mx.array) -> mx.array:
    """GELU through a sigmoid, ``x * sigmoid(1.702 x)``; within about
    0.02 of :func:`gelu` on [-6, 6].

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.gelu_fast_approx(mx.array([0.0])).tolist()
        [0.0]
    """
    return x * mx.sigmoid(1.702 * x)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    """Gated linear unit: splits ``axis`` into halves ``a, b`` and returns
    ``a * sigmoid(b)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.glu(mx.array([2.0, 0.0])).tolist()
        [1.0]
    """
    if x.shape[axis] % 2 != 0:
        raise ValueError(f"glu: axis {axis} has odd size {x.shape[axis]}; it must split in two")
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


@_compiled
def step(x: mx.array, threshold: float = 0.0) -> mx.array:
    """Binary step: 1 where ``x >= threshold``, else 0 (integer result).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.step(mx.array([-1.0, 0.0, 1.0])).tolist()
        [0, 1, 1]
    """
    return mx.where(x >= threshold, 1, 0)


@_compiled
def selu(x: mx.array) -> mx.array:
    """Scaled ELU: ``1.0507 * elu(x, 1.67326)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> round(nn.selu(mx.array([1.0])).item(), 4)
        1.0507
    """
    return 1.0507 * mx.where(x > 0, x, 1.67326 * (mx.exp(x) - 1))


@_compiled
def prelu(x: mx.array, alpha: mx.array) -> mx.array:
    """Parametric ReLU: ``max(x, 0) + alpha * min(x, 0)`` with an array
    ``alpha``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.prelu(mx.array([-2.0, 2.0]), mx.array([0.5])).tolist()
        [-1.0, 2.0]
    """
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


@_compiled
def mish(x: mx.array) -> mx.array:
    """Mish: ``x * tanh(softplus(x))``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.mish(mx.array([0.0])).tolist()
        [0.0]
    """
    return x * mx.tanh(mx.logaddexp(x, 0))


@_compiled
def hardswish(x: mx.array) -> mx.array:
    """Hard swish: ``x * min(max(x + 3, 0), 6) / 6``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.hardswish(mx.array([-3.0, 3.0])).tolist()
        [-0.0, 3.0]
    """
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


@_compiled
def hard_tanh(x: mx.array, min_val: float = -1.0, max_val: float = 1.0) -> mx.array:
    """Clips ``x`` to ``[min_val, max_val]``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.hard_tanh(mx.array([-2.0, 0.5, 2.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    return mx.minimum(mx.maximum(x, min_val), max_val)


@_compiled
def hard_shrink(x: mx.array, lambd: float = 0.5) -> mx.array:
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.hard_shrink(mx.array([1.0, 0.25])).tolist()
        [1.0, 0.0]
    """
    return mx.where(mx.abs(x) > lambd, x, 0)


@_compiled
def softmin(x: mx.array, axis: int = -1) -> mx.array:
    """``softmax(-x)`` along ``axis``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.softmin(mx.array([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    return mx.softmax(-x, axis=axis)


def tanh(x: mx.array) -> mx.array:
    """Hyperbolic tangent, elementwise (``ferrox.core.tanh``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.tanh(mx.array([0.0])).tolist()
        [0.0]
    """
    return mx.tanh(x)


# ---- module forms -----------------------------------------------------------


def _module_of(fn: Callable[[mx.array], mx.array]) -> Callable[[type], type]:
    """Class decorator: the (parameterless) module's call is ``fn(x)``."""
    def decorate(cls: type) -> type:
        cls.__call__ = lambda self, x: fn(x)
        return cls

    return decorate


@_module_of(sigmoid)
class Sigmoid(Module):
    """The logistic sigmoid as a module (:func:`sigmoid`)."""


@_module_of(mish)
class Mish(Module):
    """Mish, ``x * tanh(softplus(x))``, as a module (:func:`mish`)."""


@_module_of(relu)
class ReLU(Module):
    """``max(x, 0)`` as a module (:func:`relu`)."""


@_module_of(relu2)
class ReLU2(Module):
    """Squared ReLU as a module (:func:`relu2`)."""


@_module_of(relu6)
class ReLU6(Module):
    """ReLU capped at 6 as a module (:func:`relu6`)."""


@_module_of(softmax)
class Softmax(Module):
    """Softmax over the last axis as a module (:func:`softmax`)."""


@_module_of(softplus)
class Softplus(Module):
    """``log(1 + exp(x))`` as a module (:func:`softplus`)."""


@_module_of(softsign)
class Softsign(Module):
    """``x / (1 + |x|)`` as a module (:func:`softsign`)."""


@_module_of(silu)
class SiLU(Module):
    """``x * sigmoid(x)`` as a module (:func:`silu`)."""


@_module_of(log_softmax)
class LogSoftmax(Module):
    """Log-softmax over the last axis as a module (:func:`log_softmax`)."""


@_module_of(log_sigmoid)
class LogSigmoid(Module):
    """``log(sigmoid(x))`` as a module (:func:`log_sigmoid`)."""


@_module_of(tanh)
class Tanh(Module):
    """Hyperbolic tangent as a module (:func:`tanh`)."""


@_module_of(hardswish)
class Hardswish(Module):
    """Hard swish as a module (:func:`hardswish`)."""


@_module_of(selu)
class SELU(Module):
    """Scaled ELU as a module (:func:`selu`)."""


@_module_of(hard_tanh)
class HardTanh(Module):
    """Clipping to [-1, 1] as a module (:func:`hard_tanh`)."""


@_module_of(softmin)
class Softmin(Module):
    """Softmin over the last axis as a module (:func:`softmin`)."""


class GLU(Module):
    """Module form of :func:`glu`, splitting along ``axis``."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = axis

    def __call__(self, x: mx.array) -> Any:
        return glu(x, self.axis)


class LeakyReLU(Module):
    """Module form of :func:`leaky_relu` with a fixed ``negative_slope``."""

    def __init__(self, negative_slope: float = 1e-2) -> None:
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x: mx.array) -> mx.array:
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    """Module form of :func:`elu` with a fixed ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return elu(x, self._alpha)


class CELU(Module):
    """Module form of :func:`celu` with a fixed ``alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self._alpha = alpha

    def __call__(self, x: mx.array) -> mx.array:
        return celu(x, self._alpha)


class Softshrink(Module):
    """Module form of :func:`softshrink` with a fixed ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return softshrink(x, self.lambd)


class HardShrink(Module):
    """Module form of :func:`hard_shrink` with a fixed ``lambd``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def __call__(self, x: mx.array) -> mx.array:
        return hard_shrink(x, self.lambd)


class Step(Module):
    """Module form of :func:`step` with a fixed ``threshold``."""

    def __init__(self, threshold: float = 0.0) -> None:
        super().__init__()
        self.threshold = threshold

    def __call__(self, x: mx.array) -> mx.array:
        return step(x, self.threshold)


class PReLU(Module):
    """Parametric ReLU (:func:`prelu`) with a learned slope: ``weight`` of
    ``num_parameters`` entries, all starting at ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25) -> None:
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: mx.array) -> mx.array:
        return prelu(x, self.weight)


_GELU_FORMS = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx,
               "fast": gelu_fast_approx}


class GELU(Module):
    """GELU as a module. ``approx`` picks the formula: ``"none"`` (exact,
    :func:`gelu`), ``"precise"`` or its alias ``"tanh"``
    (:func:`gelu_approx`), or ``"fast"`` (:func:`gelu_fast_approx`)."""

    def __init__(self, approx: str = "none") -> None:
        super().__init__()
        if approx not in _GELU_FORMS:
            raise ValueError(f"GELU: approx must be one of {list(_GELU_FORMS)}, got {approx!r}")
        self._approx = approx

    def __call__(self, x: mx.array) -> mx.array:
        return _GELU_FORMS[self._approx](x)
