"""Loss functions, read like ``mlx.nn.losses``.

Every loss takes ``reduction``: ``"none"`` (the per-element or per-sample
losses), ``"mean"`` or ``"sum"``; the defaults follow MLX's (``mean`` for
the regression losses and ``binary_cross_entropy``, ``none`` otherwise).
Shape mismatches raise ``ValueError`` naming the loss and the shapes.
"""

from __future__ import annotations

import math
from typing import Literal, Optional

import ferrox.core as mx

Reduction = Literal["none", "mean", "sum"]
_REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss: mx.array, reduction: str, name: str) -> mx.array:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: invalid reduction {reduction!r}; must be one of "
                         f"{_REDUCTIONS}")
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    return loss


def _same_shape(a: mx.array, b: mx.array, name: str, what_a: str, what_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name}: {what_a} shape {a.shape} does not match {what_b} shape "
                         f"{b.shape}")


def _weighted(loss: mx.array, weights: Optional[mx.array], name: str) -> mx.array:
    if weights is None:
        return loss
    if weights.shape != loss.shape:
        raise ValueError(f"{name}: weights shape {weights.shape} is not the shape of the "
                         f"loss {loss.shape}")
    return loss * weights


def cross_entropy(logits: mx.array, targets: mx.array, weights: Optional[mx.array] = None,
                  axis: int = -1, label_smoothing: float = 0.0,
                  reduction: Reduction = "none") -> mx.array:
    """Cross entropy of ``logits`` (unnormalised, classes along ``axis``)
    against ``targets``: class indices (one dimension fewer) or
    probabilities (same shape).

    ``label_smoothing`` in ``[0, 1)`` mixes the target with the uniform
    distribution; ``weights`` multiplies the per-sample losses.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> loss = nn.losses.cross_entropy(mx.array([[0.0, 0.0]]), mx.array([1]))
        >>> round(loss.item(), 4)
        0.6931
    """
    name = "cross_entropy"
    if not 0 <= label_smoothing < 1:
        raise ValueError(f"{name}: label_smoothing must be in [0, 1), got {label_smoothing}")
    as_probs = targets.ndim == logits.ndim
    expected = list(logits.shape)
    if not as_probs:
        expected.pop(axis)
    if tuple(targets.shape) != tuple(expected):
        raise ValueError(f"{name}: targets shape {targets.shape} does not match logits shape "
                         f"{logits.shape}")
    # Shifting by the (constant) maximum changes nothing mathematically and
    # keeps the exponentials finite.
    logits = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
    if as_probs:
        score = mx.sum(logits * targets, axis=axis)
    else:
        score = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis).squeeze(axis)
    log_normaliser = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        loss = (log_normaliser - (1 - label_smoothing) * score
                - label_smoothing * logits.mean(axis=axis))
    else:
        loss = log_normaliser - score
    return _reduce(_weighted(loss, weights, name), reduction, name)


def binary_cross_entropy(inputs: mx.array, targets: mx.array,
                         weights: Optional[mx.array] = None, with_logits: bool = True,
                         reduction: Reduction = "mean") -> mx.array:
    """Binary cross entropy of ``inputs`` (logits, or probabilities with
    ``with_logits=False``; log-probabilities are clipped at -100) against
    ``targets`` in ``[0, 1]``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> round(nn.losses.binary_cross_entropy(mx.array([0.0]), mx.array([1.0])).item(), 4)
        0.6931
    """
    name = "binary_cross_entropy"
    _same_shape(inputs, targets, name, "inputs", "targets")
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.clip(mx.log(inputs), -100, None)
        log_not_p = mx.clip(mx.log(1 - inputs), -100, None)
        loss = -(targets * log_p + (1 - targets) * log_not_p)
    return _reduce(_weighted(loss, weights, name), reduction, name)


def l1_loss(predictions: mx.array, targets: mx.array,
            reduction: Reduction = "mean") -> mx.array:
    """Absolute error ``|predictions - targets|``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.l1_loss(mx.array([1.0, 2.0]), mx.array([0.0, 0.0])).item()
        1.5
    """
    _same_shape(predictions, targets, "l1_loss", "predictions", "targets")
    return _reduce(mx.abs(predictions - targets), reduction, "l1_loss")


def mse_loss(predictions: mx.array, targets: mx.array,
             reduction: Reduction = "mean") -> mx.array:
    """Squared error ``(predictions - targets) ** 2``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.mse_loss(mx.array([1.0, 2.0]), mx.array([0.0, 0.0])).item()
        2.5
    """
    _same_shape(predictions, targets, "mse_loss", "predictions", "targets")
    return _reduce(mx.square(predictions - targets), reduction, "mse_loss")


def nll_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
             reduction: Reduction = "none") -> mx.array:
    """Negative log-likelihood: minus the log-probability (``inputs``,
    classes along ``axis``) of each target class.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.nll_loss(mx.array([[-1.0, -2.0]]), mx.array([1])).tolist()
        [2.0]
    """
    picked = mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis).squeeze(axis)
    return _reduce(-picked, reduction, "nll_loss")


def gaussian_nll_loss(inputs: mx.array, targets: mx.array, vars: mx.array, full: bool = False,
                      eps: float = 1e-6, reduction: Reduction = "mean") -> mx.array:
    """Negative log-likelihood of ``targets`` under normals with means
    ``inputs`` and variances ``vars`` (clamped below at ``eps``); ``full``
    adds the constant ``log(2 pi) / 2``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.gaussian_nll_loss(mx.array([0.0]), mx.array([0.0]), mx.array([1.0])).item()
        0.0
    """
    name = "gaussian_nll_loss"
    _same_shape(inputs, targets, name, "inputs", "targets")
    _same_shape(inputs, vars, name, "inputs", "vars")
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, name)


def kl_div_loss(inputs: mx.array, targets: mx.array, axis: int = -1,
                reduction: Reduction = "none") -> mx.array:
    """Kullback-Leibler divergence ``KL(targets || inputs)`` of two
    distributions given as log-probabilities along ``axis``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> p = mx.log(mx.array([[0.5, 0.5]]))
        >>> nn.losses.kl_div_loss(p, p).tolist()
        [0.0]
    """
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis)
    return _reduce(loss, reduction, "kl_div_loss")


def smooth_l1_loss(predictions: mx.array, targets: mx.array, beta: float = 1.0,
                   reduction: Reduction = "mean") -> mx.array:
    """Quadratic ``0.5 d^2 / beta`` for errors ``d < beta``, linear
    ``d - 0.5 beta`` beyond.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.smooth_l1_loss(mx.array([0.5, 3.0]), mx.zeros((2,)), reduction="none").tolist()
        [0.125, 2.5]
    """
    _same_shape(predictions, targets, "smooth_l1_loss", "predictions", "targets")
    d = mx.abs(predictions - targets)
    loss = mx.where(d < beta, 0.5 * mx.square(d) / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def triplet_loss(anchors: mx.array, positives: mx.array, negatives: mx.array, axis: int = -1,
                 p: int = 2, margin: float = 1.0, eps: float = 1e-6,
                 reduction: Reduction = "none") -> mx.array:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm
    distance along ``axis`` (``eps`` inside the root keeps it smooth).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> a = mx.zeros((1, 2))
        >>> nn.losses.triplet_loss(a, a, a + 10).tolist()
        [0.0]
    """
    def distance(a: mx.array, b: mx.array) -> mx.array:
        return mx.power(mx.power(mx.abs(a - b), p).sum(axis) + eps, 1.0 / p)

    loss = mx.maximum(distance(anchors, positives) - distance(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction, "triplet_loss")


def hinge_loss(inputs: mx.array, targets: mx.array, reduction: Reduction = "none") -> mx.array:
    """``max(1 - inputs * targets, 0)`` for targets in ``{-1, 1}``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.hinge_loss(mx.array([0.5, 2.0]), mx.array([1.0, 1.0])).tolist()
        [0.5, 0.0]
    """
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction, "hinge_loss")


def huber_loss(inputs: mx.array, targets: mx.array, delta: float = 1.0,
               reduction: Reduction = "none") -> mx.array:
    """Quadratic ``0.5 e^2`` for errors up to ``delta``, linear beyond
    (slope ``delta``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.huber_loss(mx.array([0.5, 3.0]), mx.zeros((2,))).tolist()
        [0.125, 2.5]
    """
    abs_error = mx.abs(inputs - targets)
    quadratic = mx.minimum(abs_error, delta)
    loss = 0.5 * quadratic ** 2 + delta * (abs_error - quadratic)
    return _reduce(loss, reduction, "huber_loss")


def log_cosh_loss(inputs: mx.array, targets: mx.array,
                  reduction: Reduction = "none") -> mx.array:
    """``log(cosh(inputs - targets))``, computed without overflow as
    ``logaddexp(e, -e) - log 2``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.log_cosh_loss(mx.array([0.0]), mx.array([0.0])).tolist()
        [0.0]
    """
    e = inputs - targets
    return _reduce(mx.logaddexp(e, -e) - math.log(2), reduction, "log_cosh_loss")


def cosine_similarity_loss(x1: mx.array, x2: mx.array, axis: int = 1, eps: float = 1e-8,
                           reduction: Reduction = "none") -> mx.array:
    """Cosine similarity of ``x1`` and ``x2`` along ``axis`` (the product
    of norms is clamped below at ``eps``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.cosine_similarity_loss(mx.array([[1.0, 0.0]]), mx.array([[2.0, 0.0]])).tolist()
        [1.0]
    """
    norms = mx.linalg.norm(x1, axis=axis) * mx.linalg.norm(x2, axis=axis)
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(norms, eps)
    return _reduce(loss, reduction, "cosine_similarity_loss")


def margin_ranking_loss(inputs1: mx.array, inputs2: mx.array, targets: mx.array,
                        margin: float = 0.0, reduction: Reduction = "none") -> mx.array:
    """``max(0, -targets * (inputs1 - inputs2) + margin)``: targets ``1``
    ask for ``inputs1`` to rank higher, ``-1`` for ``inputs2``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.losses.margin_ranking_loss(mx.array([1.0]), mx.array([2.0]), mx.array([1.0])).tolist()
        [1.0]
    """
    if not inputs1.shape == inputs2.shape == targets.shape:
        raise ValueError("margin_ranking_loss: the shapes do not match: "
                         f"inputs1.shape={inputs1.shape}, inputs2.shape={inputs2.shape}, "
                         f"targets.shape={targets.shape}")
    loss = mx.maximum(0, -targets * (inputs1 - inputs2) + margin)
    return _reduce(loss, reduction, "margin_ranking_loss")
