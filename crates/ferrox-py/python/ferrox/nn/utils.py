"""Transforms over a module's parameters: ``value_and_grad``, ``checkpoint``
and ``average_gradients``.

Both transforms work the same way: the module's trainable parameters are
passed to ``ferrox.core``'s transform as an explicit argument, and the
inner function writes them (the transform's tracers) into the module with
``update`` before calling the user's function. So the user's function reads
the module as usual and the gradients come back as a tree like
``model.trainable_parameters()``.

``value_and_grad`` hands the user's own arguments to the function through
a closure rather than through ``ferrox.core.value_and_grad``: that
transform rebuilds dict subclasses in its arguments as plain dicts, which
would turn a ``Module`` argument (``loss_fn(model, x)``, the usual MLX
idiom) into a dict. Only the parameters are differentiated, so nothing is
lost. ``checkpoint`` must pass its arguments through (their gradients
flow through it), so its arguments should be arrays, not modules.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple

import ferrox.core as mx

from .module import Module


def value_and_grad(model: Module, fn: Callable[..., Any]) -> Callable[..., Tuple[Any, dict]]:
    """Wraps ``fn`` to return ``(fn(*args), gradients)``, the gradients of
    its (first, scalar) output with respect to ``model``'s trainable
    parameters, as a tree like ``model.trainable_parameters()``.

    ``fn`` may return ``loss`` or ``(loss, aux, ...)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> model = nn.Linear(2, 1)
        >>> loss_and_grad = nn.value_and_grad(model, lambda x: model(x).sum())
        >>> loss, grads = loss_and_grad(mx.ones((3, 2)))
        >>> sorted(grads), grads["weight"].shape
        (['bias', 'weight'], (1, 2))
    """
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Tuple[Any, dict]:
        def of_parameters(parameters: dict) -> Any:
            model.update(parameters)
            return fn(*args, **kwargs)

        return mx.value_and_grad(of_parameters)(model.trainable_parameters())

    return wrapped


def checkpoint(module: Module, fn: Optional[Callable[..., Any]] = None) -> Callable[..., Any]:
    """Wraps ``fn`` (default: calling ``module``) so that its intermediate
    values are recomputed in the backward pass instead of being kept,
    trading compute for memory. Gradients reach ``module``'s trainable
    parameters as usual.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> layer = nn.Linear(2, 2)
        >>> nn.utils.checkpoint(layer)(mx.ones((1, 2))).shape
        (1, 2)
    """
    body = module if fn is None else fn

    def of_parameters(parameters: dict, *args: Any, **kwargs: Any) -> Any:
        module.update(parameters)
        return body(*args, **kwargs)

    transformed = mx.checkpoint(of_parameters)

    @functools.wraps(body)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return transformed(module.trainable_parameters(), *args, **kwargs)

    return wrapped


def average_gradients(gradients: Any, group: Optional[Any] = None,
                      all_reduce_size: int = 32 * 1024 ** 2,
                      communication_stream: Optional[Any] = None) -> Any:
    """Averages ``gradients`` over the processes of a distributed group.

    ferrox runs in one process (it has no ``distributed`` module), so the
    average over a group of one is ``gradients`` itself; a ``group`` with
    ``size() > 1`` raises ``NotImplementedError``. The other arguments are
    accepted for compatibility.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> g = {"w": mx.ones((2,))}
        >>> nn.average_gradients(g) is g
        True
    """
    size = 1 if group is None else group.size()
    if size != 1:
        raise NotImplementedError(
            f"average_gradients: a group of {size} processes needs distributed "
            "communication, which ferrox does not have")
    return gradients
