"""ferrox: lazy arrays with MLX's programming model.

``import ferrox.core as fx`` reads like ``import mlx.core as mx``.
"""

from . import core

__all__ = ["core"]
