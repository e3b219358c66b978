"""The optimizers under the path MLX keeps them (``mlx.optimizers.optimizers``),
for code that imports them from there; they live in ``base``,
``algorithms`` and ``clipping``."""

from .algorithms import (  # noqa: F401
    SGD, AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, Muon, RMSprop,
)
from .base import MultiOptimizer, Optimizer  # noqa: F401
from .clipping import clip_grad_norm  # noqa: F401
