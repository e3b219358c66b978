"""ferrox: lazy arrays with MLX's programming model.

``import ferrox.core as fx`` reads like ``import mlx.core as mx``;
``ferrox.nn``, ``ferrox.optimizers`` and ``ferrox.utils`` read like
``mlx.nn``, ``mlx.optimizers`` and ``mlx.utils``.

Only ``core`` is imported with the package; the other three are imported
on first use (``import ferrox.nn`` or the attribute ``ferrox.nn``), so
``import ferrox.core`` stays cheap.
"""

import importlib
from typing import Any

from . import core

__all__ = ["core", "nn", "optimizers", "utils"]

_LAZY = ("nn", "optimizers", "utils")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
