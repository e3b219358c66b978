"""``clip_grad_norm``: rescaling a gradient tree to a maximum global norm."""

from __future__ import annotations

from typing import Any, Tuple

import ferrox.core as mx
from ferrox.utils import tree_map, tree_reduce


def clip_grad_norm(grads: Any, max_norm: float) -> Tuple[Any, mx.array]:
    """Scales ``grads`` so that their global L2 norm (over all leaves) is at
    most ``max_norm``; returns ``(clipped_grads, norm_before_clipping)``.

    Example:
        >>> import ferrox.core as mx, ferrox.optimizers as optim
        >>> clipped, norm = optim.clip_grad_norm({"w": mx.array([3.0, 4.0])}, 1.0)
        >>> norm.item(), [round(v, 4) for v in clipped["w"].tolist()]
        (5.0, [0.6, 0.8])
    """
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm}")
    total = mx.sqrt(tree_reduce(lambda acc, g: acc + g.square().sum(), grads, 0.0))
    factor = mx.minimum(max_norm / (total + 1e-6), 1.0)
    return tree_map(lambda g: g * factor, grads), total
