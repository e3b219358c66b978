"""``Sequential``: modules (or plain callables) applied one after another."""

from __future__ import annotations

from typing import Any, Callable

from ..module import Module


class Sequential(Module):
    """Calls its ``layers`` in order, each on the previous one's output.

    The layers may be modules or any callables (``ferrox.core.sigmoid``);
    only modules contribute parameters. They are kept in the list
    ``self.layers`` (so parameter paths read ``layers.0.weight``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
        >>> model(mx.ones((2, 3))).shape
        (2, 1)
    """

    def __init__(self, *modules: Callable[..., Any]) -> None:
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x
