"""The optimizers: SGD, RMSprop, Adagrad, AdaDelta, Adam, AdamW, Adamax,
Lion, Adafactor and Muon.

Each update is written for one parameter ``p`` with gradient ``g``; ``lr``
is the learning rate cast to ``g``'s dtype, so float16/bfloat16 parameters
keep their dtype. Moment slots are zero at the first step.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import ferrox.core as mx

from .base import Optimizer, ScalarOrSchedule


class _WithLearningRate(Optimizer):
    """An optimizer whose ``learning_rate`` is a number or a schedule."""

    def __init__(self, learning_rate: ScalarOrSchedule) -> None:
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)

    def _lr(self, g: mx.array) -> mx.array:
        return self.learning_rate.astype(g.dtype)


def _zeros_slots(state: dict, parameter: mx.array, *names: str) -> None:
    for name in names:
        state[name] = mx.zeros_like(parameter)


class SGD(_WithLearningRate):
    """Stochastic gradient descent, optionally with momentum::

        g = g + weight_decay * p
        v = momentum * v + (1 - dampening) * g
        p = p - lr * (g + momentum * v if nesterov else v)

    Without momentum it is ``p - lr * g``.

    Example:
        >>> import ferrox.core as mx, ferrox.optimizers as optim
        >>> opt = optim.SGD(0.5, momentum=0.9)
        >>> opt.apply_gradients({"w": mx.ones((1,))}, {"w": mx.zeros((1,))})["w"].tolist()
        [-0.5]
    """

    def __init__(self, learning_rate: ScalarOrSchedule, momentum: float = 0.0,
                 weight_decay: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and zero dampening, "
                             f"got momentum={momentum}, dampening={dampening}")
        super().__init__(learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the velocity ``v``."""
        _zeros_slots(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One SGD step for one parameter."""
        g = gradient
        if self.weight_decay != 0:
            g = g + self.weight_decay * parameter
        if self.momentum <= 0:
            return parameter - self._lr(g) * g
        scale = 1 - self.dampening if self.dampening > 0 else 1
        v = self.momentum * state["v"] + scale * g
        state["v"] = v
        step = g + self.momentum * v if self.nesterov else v
        return parameter - self._lr(g) * step


class RMSprop(_WithLearningRate):
    """RMSprop: ``v = alpha * v + (1 - alpha) * g^2``,
    ``p = p - lr * g / (sqrt(v) + eps)``."""

    def __init__(self, learning_rate: ScalarOrSchedule, alpha: float = 0.99,
                 eps: float = 1e-8) -> None:
        super().__init__(learning_rate)
        if alpha < 0.0:
            raise ValueError(f"RMSprop: alpha must be >= 0, got {alpha}")
        if eps <= 0.0:
            raise ValueError(f"RMSprop: eps should be >0, got {eps}")
        self.alpha = alpha
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the running mean of squared gradients ``v``."""
        _zeros_slots(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One RMSprop step for one parameter."""
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(_WithLearningRate):
    """Adagrad: ``v = v + g^2``, ``p = p - lr * g / (sqrt(v) + eps)``."""

    def __init__(self, learning_rate: ScalarOrSchedule, eps: float = 1e-8) -> None:
        super().__init__(learning_rate)
        if eps <= 0.0:
            raise ValueError(f"Adagrad: eps should be >0, got {eps}")
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the sum of squared gradients ``v``."""
        _zeros_slots(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Adagrad step for one parameter."""
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(_WithLearningRate):
    """AdaDelta::

        v = rho * v + (1 - rho) * g^2
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d^2
        p = p - lr * d
    """

    def __init__(self, learning_rate: ScalarOrSchedule, rho: float = 0.9,
                 eps: float = 1e-6) -> None:
        super().__init__(learning_rate)
        if rho < 0.0:
            raise ValueError(f"AdaDelta: rho must be >= 0, got {rho}")
        if eps <= 0.0:
            raise ValueError(f"AdaDelta: eps should be >0, got {eps}")
        self.rho = rho
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the running means ``v`` (gradients) and ``u`` (updates)."""
        _zeros_slots(state, parameter, "v", "u")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One AdaDelta step for one parameter."""
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        state["v"] = v
        state["u"] = rho * state["u"] + (1 - rho) * mx.square(d)
        return parameter - self._lr(gradient) * d


class Adam(_WithLearningRate):
    """Adam::

        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g^2
        p = p - lr * m / (sqrt(v) + eps)

    With ``bias_correction`` ``m`` and ``v`` are divided by ``1 - b^t``
    (``t`` the step) as in the paper; MLX's default leaves them uncorrected.

    Example:
        >>> import ferrox.core as mx, ferrox.optimizers as optim
        >>> opt = optim.Adam(0.1)
        >>> opt.apply_gradients({"w": mx.ones((1,))}, {"w": mx.zeros((1,))})["w"].shape
        (1,)
    """

    def __init__(self, learning_rate: ScalarOrSchedule, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8, bias_correction: bool = False) -> None:
        super().__init__(learning_rate)
        self.betas = list(betas)
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the first and second moments ``m`` and ``v``."""
        _zeros_slots(state, parameter, "m", "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Adam step for one parameter."""
        b1, b2 = self.betas
        lr = self._lr(gradient)
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"], state["v"] = m, v
        if not self.bias_correction:
            return parameter - lr * m / (mx.sqrt(v) + self.eps)
        t = self.step
        step_size = (lr / (1 - b1 ** t)).astype(gradient.dtype)
        v_scale = mx.rsqrt(1 - b2 ** t).astype(gradient.dtype)
        return parameter - step_size * m / (mx.sqrt(v) * v_scale + self.eps)


class AdamW(Adam):
    """Adam with decoupled weight decay: the parameter is first shrunk by
    ``p * (1 - lr * weight_decay)``, then the Adam step applies."""

    def __init__(self, learning_rate: ScalarOrSchedule, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01,
                 bias_correction: bool = False) -> None:
        super().__init__(learning_rate=learning_rate, betas=betas, eps=eps,
                         bias_correction=bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One AdamW step for one parameter."""
        decayed = parameter * (1 - self._lr(gradient) * self.weight_decay)
        return super().apply_single(gradient, decayed, state)


class Adamax(Adam):
    """Adamax, Adam with the infinity norm::

        m = b1 * m + (1 - b1) * g
        v = max(b2 * v, |g|)
        p = p - lr * m / (v + eps)
    """

    def __init__(self, learning_rate: ScalarOrSchedule, betas: Sequence[float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        super().__init__(learning_rate, betas, eps)
        if eps < 0.0:
            raise ValueError(f"Adamax: eps must be >= 0, got {eps}")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Adamax step for one parameter."""
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"], state["v"] = m, v
        return parameter - self._lr(gradient) * m / (v + self.eps)


class Lion(_WithLearningRate):
    """Lion: the update is the sign of an interpolation of momentum and
    gradient::

        c = b1 * m + (1 - b1) * g
        m = b2 * m + (1 - b2) * g
        p = p * (1 - lr * weight_decay) - lr * sign(c)
    """

    def __init__(self, learning_rate: ScalarOrSchedule, betas: Sequence[float] = (0.9, 0.99),
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate)
        self.betas = list(betas)
        self.weight_decay = weight_decay

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the momentum ``m``."""
        _zeros_slots(state, parameter, "m")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Lion step for one parameter."""
        b1, b2 = self.betas
        lr = self._lr(gradient)
        m = state["m"]
        direction = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(direction)


def _rms(x: mx.array) -> mx.array:
    return mx.sqrt(mx.mean(mx.square(x)))


class Adafactor(Optimizer):
    """Adafactor: Adam-like steps with a factored second moment (a row and
    a column average for parameters of 2 or more dimensions) and a
    relative step size.

    Args:
        learning_rate: used only with ``relative_step=False``.
        eps: ``(added to g^2, lower bound of the parameter scale)``.
        clip_threshold: updates are scaled down to an RMS of at most this.
        decay_rate: the second-moment decay is ``1 - t ** decay_rate``.
        beta_1: if given, a first moment of the updates is kept.
        weight_decay: decoupled decay, scaled by the step size.
        scale_parameter: scale the step by the parameter's RMS.
        relative_step: step size ``min(0.01, 1/sqrt(t))`` (or with
            ``warmup_init``, ``min(1e-6 t, 1/sqrt(t))``) instead of
            ``learning_rate``.
    """

    def __init__(self, learning_rate: Union[ScalarOrSchedule, None] = None,
                 eps: Tuple[float, float] = (1e-30, 1e-3), clip_threshold: float = 1.0,
                 decay_rate: float = -0.8, beta_1: Optional[float] = None,
                 weight_decay: float = 0.0, scale_parameter: bool = True,
                 relative_step: bool = True, warmup_init: bool = False) -> None:
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the factored (or full) second moment, and ``exp_avg``
        when ``beta_1`` is set."""
        if parameter.ndim >= 2:
            shape, dtype = parameter.shape, parameter.dtype
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _step_size(self, parameter_rms: mx.array) -> mx.array:
        t = self.step
        if self.relative_step:
            floor = 1e-6 * t if self.warmup_init else 1e-2
            size = mx.minimum(floor, mx.rsqrt(t))
        else:
            size = self.learning_rate
        size = size.astype(parameter_rms.dtype)
        if self.scale_parameter:
            return mx.maximum(self.eps[1], parameter_rms) * size
        return size

    @staticmethod
    def _approximate_exp_moving_avg(row: mx.array, col: mx.array) -> mx.array:
        """The factored estimate of ``1/sqrt(E[g^2])`` from its row and
        column averages: the outer product of ``rsqrt(row / mean(row))``
        and ``rsqrt(col)`` (batched over leading axes)."""
        row_factor = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
        return mx.expand_dims(row_factor, -1) * mx.expand_dims(mx.rsqrt(col), -2)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Adafactor step for one parameter."""
        parameter_rms = _rms(parameter)
        step_size = self._step_size(parameter_rms)
        beta_2 = 1.0 - (self.step ** self.decay_rate).astype(parameter_rms.dtype)
        squared = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(squared, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(squared, axis=-2)
            state["exp_avg_sq_row"], state["exp_avg_sq_col"] = row, col
            update = self._approximate_exp_moving_avg(row, col) * gradient
        else:
            full = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * squared
            state["exp_avg_sq"] = full
            update = mx.rsqrt(full) * gradient
        update = update / mx.maximum(1.0, _rms(update) / self.clip_threshold)
        update = step_size * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * step_size)
        return parameter - update


# Coefficients of the quintic Newton-Schulz iteration toward the
# orthogonal polar factor (from the Muon reference implementation).
_NEWTON_SCHULZ = (3.4445, -4.7750, 2.0315)


def _orthogonalize(x: mx.array, steps: int) -> mx.array:
    """Approximately the nearest semi-orthogonal matrix to the 2-d ``x``."""
    a, b, c = _NEWTON_SCHULZ
    wide = x.shape[-2] <= x.shape[-1]
    if not wide:
        x = x.T
    x = x / (mx.linalg.norm(x, keepdims=True) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        poly = mx.addmm(b * gram, gram, gram, alpha=c, beta=1.0)
        x = mx.addmm(a * x, poly, x, alpha=1.0, beta=1.0)
    return x if wide else x.T


class Muon(_WithLearningRate):
    """Muon: SGD momentum whose update, for parameters of 2 or more
    dimensions (flattened to 2-d), is orthogonalised by ``ns_steps``
    Newton-Schulz iterations and scaled by ``sqrt(max(1, rows / cols))``;
    other parameters take the plain momentum step.
    """

    def __init__(self, learning_rate: ScalarOrSchedule, momentum: float = 0.95,
                 weight_decay: float = 0.01, nesterov: bool = True, ns_steps: int = 5) -> None:
        super().__init__(learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Creates the momentum ``v``."""
        _zeros_slots(state, parameter, "v")

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """One Muon step for one parameter."""
        g = gradient
        if self.weight_decay != 0:
            g = g + self.weight_decay * parameter
        mu = self.momentum
        v = mu * state["v"] + (1 - mu) * g
        state["v"] = v
        update = g * (1 - mu) + v * mu if self.nesterov else v
        lr = self._lr(g)
        if update.ndim >= 2:
            shape = update.shape
            flat = update.reshape(shape[0], -1) if update.ndim > 2 else update
            flat = _orthogonalize(flat, self.ns_steps)
            update = flat.reshape(shape)
            lr = lr * max(1, update.shape[-2] / update.shape[-1]) ** 0.5
        return parameter - lr * update
