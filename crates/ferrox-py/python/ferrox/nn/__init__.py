"""Neural-network building blocks for ferrox, read like ``mlx.nn``.

``ferrox.nn.Module`` (a dict of parameters and submodules), the layers in
``ferrox.nn.layers``, the losses in ``ferrox.nn.losses``, the initialisers
in ``ferrox.nn.init``, and ``value_and_grad``/``checkpoint`` over a model's
parameters (``ferrox.nn.utils``).

Example:
    >>> import ferrox.core as mx, ferrox.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> model(mx.zeros((2, 4))).shape
    (2, 1)
"""

from . import init, losses, utils
from .layers import *  # noqa: F401,F403  (also brings the layer submodules)
from .module import Module
from .utils import average_gradients, checkpoint, value_and_grad
