"""``Module`` under the path MLX keeps it (``mlx.nn.layers.base``), for code
that imports it from there; it lives in ``ferrox.nn.module``."""

from ..module import Module

__all__ = ["Module"]
