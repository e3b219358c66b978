"""Optimizers and learning-rate schedules for ferrox, read like
``mlx.optimizers``.

Example:
    >>> import ferrox.core as mx, ferrox.nn as nn, ferrox.optimizers as optim
    >>> model = nn.Linear(2, 1)
    >>> opt = optim.Adam(learning_rate=1e-2)
    >>> loss_and_grad = nn.value_and_grad(model, lambda x: model(x).square().sum())
    >>> loss, grads = loss_and_grad(mx.ones((4, 2)))
    >>> opt.update(model, grads)
    >>> opt.step.item()
    1
"""

from . import optimizers, schedulers
from .algorithms import (
    SGD, AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, Muon, RMSprop,
)
from .base import MultiOptimizer, Optimizer
from .clipping import clip_grad_norm
from .schedulers import (
    cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay,
)

__all__ = [
    "AdaDelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Lion", "Muon",
    "MultiOptimizer", "Optimizer", "RMSprop", "optimizers", "SGD", "clip_grad_norm", "cosine_decay",
    "exponential_decay", "join_schedules", "linear_schedule", "schedulers", "step_decay",
]
