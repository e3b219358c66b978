"""A package named ``mlx`` that forwards to ``ferrox``.

Only for running MLX's own Python tests against ferrox (see
scripts/mlx-tests.sh and docs/mlx-compat.md). It forwards and nothing else:
``mlx.core`` *is* ``ferrox.core`` (the same module object), and likewise for
every submodule ferrox has (``mlx.core.random`` is ``ferrox.core.random``, and
so on). A name or module ferrox lacks stays missing here, so the tests report
the gap; fill gaps in ferrox, never in this file.
"""

import importlib
import sys

# Top-level modules of the mlx package that the tests import. Each is
# forwarded if ferrox has a module of the same name, and left missing if not.
_TOP = ("core", "nn", "optimizers", "utils")


def _alias(name):
    try:
        module = importlib.import_module("ferrox." + name)
    except ImportError:
        return
    sys.modules[__name__ + "." + name] = module
    globals()[name] = module
    # Submodules ferrox registers (ferrox.core.random, ferrox.core.linalg, ...).
    prefix = "ferrox." + name + "."
    for full, sub in list(sys.modules.items()):
        if full.startswith(prefix) and sub is not None:
            sys.modules[__name__ + "." + full[len("ferrox."):]] = sub


for _name in _TOP:
    _alias(_name)
del _name
