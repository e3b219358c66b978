"""Learning-rate schedules: functions of the step (an int or an array)
returning the rate, for an optimizer's ``learning_rate``."""

from __future__ import annotations

import math
from typing import Callable, List

import ferrox.core as mx

Schedule = Callable[[mx.array], mx.array]


def exponential_decay(init: float, decay_rate: float) -> Schedule:
    """``init * decay_rate ** step``.

    Example:
        >>> import ferrox.optimizers as optim
        >>> round(optim.exponential_decay(1.0, 0.5)(2), 4)
        0.25
    """
    def schedule(step):
        return init * decay_rate ** step

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Schedule:
    """``init * decay_rate ** (step // step_size)``: decays every
    ``step_size`` steps.

    Example:
        >>> import ferrox.optimizers as optim
        >>> round(optim.step_decay(1.0, 0.5, 10)(25), 4)
        0.25
    """
    if step_size < 1:
        raise ValueError(f"step_decay: step_size must be > 0, got {step_size}")

    def schedule(step):
        return init * decay_rate ** (step // step_size)

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Schedule:
    """Half a cosine from ``init`` down to ``end`` over ``decay_steps``
    steps, then ``end``.

    Example:
        >>> import ferrox.optimizers as optim
        >>> round(optim.cosine_decay(1.0, 10)(5).item(), 4)
        0.5
    """
    if decay_steps < 1:
        raise ValueError(f"cosine_decay: decay_steps must be > 0, got {decay_steps}")

    def schedule(step):
        progress = mx.minimum(step, decay_steps)
        return end + 0.5 * (1.0 + mx.cos(math.pi / decay_steps * progress)) * (init - end)

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Schedule:
    """Straight line from ``init`` to ``end`` over ``steps`` steps, then
    ``end`` (a warm-up, typically).

    Example:
        >>> import ferrox.optimizers as optim
        >>> optim.linear_schedule(0.0, 1.0, 10)(5).item()
        0.5
    """
    if steps < 1:
        raise ValueError(f"linear_schedule: steps must be > 0, got {steps}")

    def schedule(step):
        return mx.minimum(step, steps) * ((end - init) / steps) + init

    return schedule


def join_schedules(schedules: List[Schedule], boundaries: List[int]) -> Schedule:
    """Runs ``schedules[i + 1]`` from step ``boundaries[i]`` on, with the
    step counted from that boundary.

    Example:
        >>> import ferrox.optimizers as optim
        >>> s = optim.join_schedules([lambda t: 1.0, lambda t: 2.0], [3])
        >>> s(2).item(), s(3).item()
        (1.0, 2.0)
    """
    if not schedules:
        raise ValueError("join_schedules: needs at least one schedule")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}")

    def schedule(step):
        rate = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            rate = mx.where(step < boundary, rate, later(step - boundary))
        return rate

    return schedule
