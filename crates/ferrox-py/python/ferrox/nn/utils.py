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
from ferrox.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten

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
    """Averages ``gradients`` (a tree of arrays, the same structure on every
    process) over the processes of ``group`` (the job's group when ``None``):
    each leaf becomes ``all_sum(leaf) / size``.

    Small arrays are packed together: leaves of one dtype are flattened and
    concatenated into buffers of about ``all_reduce_size`` bytes, each summed
    with one ``all_sum`` (fewer, larger messages) and split back; with
    ``all_reduce_size <= 0`` or mixed dtypes every leaf is summed on its
    own. In a group of one, ``gradients`` is returned as it is.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> g = {"w": mx.ones((2,))}
        >>> nn.average_gradients(g) is g
        True
    """
    group = group if group is not None else mx.distributed.init()
    size = group.size()
    if size == 1:
        return gradients

    def average(x: Any) -> Any:
        return mx.distributed.all_sum(x, group=group, stream=communication_stream) / size

    leaves = tree_flatten(gradients)
    if not leaves:
        return gradients
    dtypes = {leaf.dtype for _, leaf in leaves}
    if all_reduce_size <= 0 or len(dtypes) > 1:
        return tree_map(average, gradients)

    itemsize = leaves[0][1].itemsize
    # Consecutive leaves go into one buffer until it reaches the size.
    buckets: list = [[]]
    filled = 0
    for i, (_, leaf) in enumerate(leaves):
        buckets[-1].append(i)
        filled += leaf.size * itemsize
        if filled >= all_reduce_size:
            buckets.append([])
            filled = 0
    averaged: list = []
    for bucket in buckets:
        if not bucket:
            continue
        flat = mx.concatenate([leaves[i][1].reshape(-1) for i in bucket])
        total = average(flat)
        offsets = []
        at = 0
        for i in bucket[:-1]:
            at += leaves[i][1].size
            offsets.append(at)
        parts = mx.split(total, offsets) if offsets else [total]
        for i, part in zip(bucket, parts):
            name, leaf = leaves[i]
            averaged.append((name, part.reshape(leaf.shape)))
    return tree_unflatten(averaged)


def clip_grad_norm_sharded(gradients: Any, max_norm: float,
                           group: Optional[Any] = None) -> Tuple[Any, Any]:
    """Clips gradients that are split over the processes of ``group`` (each
    holds a shard, as with tensor-parallel layers) to a global norm of at
    most ``max_norm``: the squared norms of the shards are summed over the
    group, and every shard is scaled by ``min(max_norm / (norm + 1e-6), 1)``.
    Returns ``(clipped shards, global norm)``.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> g, norm = nn.utils.clip_grad_norm_sharded({"w": mx.full((4,), 3.0)}, 1.0)
        >>> round(norm.item(), 4), round(g["w"][0].item(), 4)
        (6.0, 0.5)
    """
    squared = tree_reduce(lambda acc, g: acc + (g * g).sum(), gradients, 0.0)
    if not isinstance(squared, mx.array):
        squared = mx.array(squared)
    norm = mx.sqrt(mx.distributed.all_sum(squared, group=group))
    scale = mx.minimum(max_norm / (norm + 1e-6), 1.0)
    return tree_map(lambda g: g * scale, gradients), norm
