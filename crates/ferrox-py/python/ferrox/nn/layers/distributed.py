"""Tensor-parallel layers: linear layers whose weights are split over the
processes of a distributed group (``mlx.nn.layers.distributed``'s names).

Two layouts pair up into a parallel block with one communication:

* **all-to-sharded** (:class:`AllToShardedLinear`): every process holds
  the full input and a block of the output features (rows of the weight);
  the output is this process's block.
* **sharded-to-all** (:class:`ShardedToAllLinear`): every process holds a
  block of the input features (columns of the weight) and the partial
  products are summed with ``all_sum``; the output is whole everywhere.

The gradient convention is MLX's: ``all_sum``'s derivative is the identity,
so an all-to-sharded layer sums its input's cotangent over the group
(:func:`sum_gradients`) to give every process the full gradient.
:func:`shard_linear` builds these from existing layers and
:func:`shard_inplace` splits any module's parameters by a rule.
:func:`fully_shard` splits every parameter instead and gathers them for
each call (fully sharded data parallelism).
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Optional, Tuple, Union

import ferrox.core as mx

from ..module import Module
from .linear import Linear
from .quantized import QuantizedLinear

Sharding = Union[str, Callable[[str, mx.array], Any]]


def sum_gradients(group: Optional[Any] = None) -> Callable[[mx.array], mx.array]:
    """The identity, whose gradient is summed over ``group``: the input of
    an all-to-sharded layer, where each process's cotangent covers only its
    block of features.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> f = nn.layers.distributed.sum_gradients()
        >>> mx.grad(lambda x: f(x).sum())(mx.ones((2,))).tolist()
        [1.0, 1.0]
    """
    group = group if group is not None else mx.distributed.init()
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def identity(x):
        return x

    @identity.vjp
    def identity_vjp(primals, cotangent, output):
        return (mx.distributed.all_sum(cotangent, group=group),)

    return identity


def _block(x: mx.array, axis: int, segments: int, group: Any) -> mx.array:
    """This process's block of ``x`` along ``axis``: ``x`` is cut into
    ``segments`` equal parts (e.g. the fused q/k/v of an attention
    projection) and each part into ``size`` blocks; the rank's block of each
    part, concatenated."""
    n, r = group.size(), group.rank()
    axis = axis % x.ndim
    length = x.shape[axis]
    if length % (segments * n) != 0:
        raise ValueError(
            f"shard: axis {axis} of length {length} does not split into "
            f"{segments} segment(s) of {n} equal blocks")
    step = length // (segments * n)
    parts = []
    for s in range(segments):
        start = (s * n + r) * step
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, start + step)
        parts.append(x[tuple(index)])
    return parts[0] if segments == 1 else mx.concatenate(parts, axis=axis)


def _rule(sharding: Sharding) -> Callable[[str, mx.array], Any]:
    if callable(sharding):
        return sharding
    if sharding == "all-to-sharded":
        return lambda path, w: 0
    if sharding == "sharded-to-all":
        return lambda path, w: -1 if not path.endswith("bias") else None
    raise ValueError(
        f"shard: sharding must be 'all-to-sharded', 'sharded-to-all' or a function, "
        f"got {sharding!r}")


def _flatten(tree: Any, prefix: str = "") -> list:
    if isinstance(tree, dict):
        out = []
        for k, v in tree.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(tree, (list, tuple)):
        out = []
        for i, v in enumerate(tree):
            out += _flatten(v, f"{prefix}.{i}" if prefix else str(i))
        return out
    return [(prefix, tree)]


def shard_inplace(module: Module, sharding: Sharding, *, segments: int = 1,
                  group: Optional[Any] = None) -> None:
    """Replaces ``module``'s parameters by this process's blocks of them.

    ``sharding`` is ``'all-to-sharded'`` (every parameter split along its
    first axis), ``'sharded-to-all'`` (weights along their last axis, biases
    kept whole) or a function ``(path, parameter) -> axis`` returning the
    axis to split, ``None`` to keep the parameter whole, or
    ``(axis, segments)``. The module's own forward must add the
    communication (``all_sum``) that its new layout needs.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> lin = nn.Linear(4, 2)
        >>> nn.layers.distributed.shard_inplace(lin, "all-to-sharded")
        >>> lin.weight.shape  # a group of one keeps everything
        (2, 4)
    """
    group = group if group is not None else mx.distributed.init()
    rule = _rule(sharding)
    updates = []
    for path, w in _flatten(module.parameters()):
        if not isinstance(w, mx.array):
            continue
        spec = rule(path, w)
        if spec is None:
            continue
        axis, parts = spec if isinstance(spec, tuple) else (spec, segments)
        updates.append((path, _block(w, axis, parts, group)))
    if updates:
        from ferrox.utils import tree_unflatten
        module.update(tree_unflatten(updates))


class AllToShardedLinear(Module):
    """A :class:`Linear` holding a block of the output features: takes the
    full input, returns this process's block of the output.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.AllToShardedLinear(4, 6)(mx.ones((2, 4))).shape
        (2, 6)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional[Any] = None) -> None:
        super().__init__()
        self.group = group if group is not None else mx.distributed.init()
        n = self.group.size()
        if output_dims % n != 0:
            raise ValueError(f"AllToShardedLinear: output_dims {output_dims} is not "
                             f"divisible by the group size {n}")
        full = Linear(input_dims, output_dims, bias)
        self.weight = _block(full.weight, 0, 1, self.group)
        if bias:
            self.bias = _block(full.bias, 0, 1, self.group)
        self._sum_gradients = sum_gradients(self.group)

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (f"input_dims={in_dims}, output_dims={out_dims * self.group.size()}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        x = self._sum_gradients(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: int = 1,
                    group: Optional[Any] = None) -> "AllToShardedLinear":
        """The all-to-sharded form of an existing :class:`Linear`."""
        group = group if group is not None else mx.distributed.init()
        out_dims, in_dims = linear_layer.weight.shape
        layer = cls(in_dims, out_dims, "bias" in linear_layer, group)
        layer.weight = _block(linear_layer.weight, 0, segments, group)
        if "bias" in linear_layer:
            layer.bias = _block(linear_layer.bias, 0, segments, group)
        return layer


class ShardedToAllLinear(Module):
    """A :class:`Linear` holding a block of the input features: takes this
    process's block of the input, returns the whole output (the partial
    products summed over the group).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.ShardedToAllLinear(4, 6)(mx.ones((2, 4))).shape
        (2, 6)
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group: Optional[Any] = None) -> None:
        super().__init__()
        self.group = group if group is not None else mx.distributed.init()
        n = self.group.size()
        if input_dims % n != 0:
            raise ValueError(f"ShardedToAllLinear: input_dims {input_dims} is not "
                             f"divisible by the group size {n}")
        full = Linear(input_dims, output_dims, bias)
        self.weight = _block(full.weight, -1, 1, self.group)
        if bias:
            self.bias = full.bias

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (f"input_dims={in_dims * self.group.size()}, output_dims={out_dims}, "
                f"bias={'bias' in self}")

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: int = 1,
                    group: Optional[Any] = None) -> "ShardedToAllLinear":
        """The sharded-to-all form of an existing :class:`Linear`."""
        group = group if group is not None else mx.distributed.init()
        out_dims, in_dims = linear_layer.weight.shape
        layer = cls(in_dims, out_dims, "bias" in linear_layer, group)
        layer.weight = _block(linear_layer.weight, -1, segments, group)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


def _quantized_block(layer: QuantizedLinear, axis: int, segments: int, group: Any,
                     with_bias: bool) -> QuantizedLinear:
    """A copy of a quantized linear layer holding its block along ``axis``
    (0: output rows; -1: input columns, cut in whole quantization groups)."""
    out = QuantizedLinear.__new__(QuantizedLinear)
    Module.__init__(out)
    for attr in ("group_size", "bits", "mode"):
        setattr(out, attr, getattr(layer, attr))
    for name in ("weight", "scales", "biases"):
        value = layer.get(name)
        if value is not None:
            out[name] = _block(value, axis, segments, group)
    if with_bias and "bias" in layer:
        out.bias = _block(layer.bias, 0, segments, group) if axis == 0 else layer.bias
    out.freeze()
    return out


class QuantizedAllToShardedLinear(Module):
    """:class:`AllToShardedLinear` with a quantized weight (made with
    :meth:`from_quantized_linear`).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> q = nn.Linear(64, 8).to_quantized()
        >>> nn.QuantizedAllToShardedLinear.from_quantized_linear(q)(mx.ones((1, 64))).shape
        (1, 8)
    """

    def __init__(self, inner: QuantizedLinear, group: Any) -> None:
        super().__init__()
        self.group = group
        self.group_size, self.bits, self.mode = inner.group_size, inner.bits, inner.mode
        for name in ("weight", "scales", "biases", "bias"):
            value = inner.get(name)
            if value is not None:
                self[name] = value
        self._sum_gradients = sum_gradients(group)
        self.freeze()

    def __call__(self, x: mx.array) -> mx.array:
        x = self._sum_gradients(x)
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *, segments: int = 1,
                              group: Optional[Any] = None) -> "QuantizedAllToShardedLinear":
        """The all-to-sharded form of an existing :class:`QuantizedLinear`."""
        group = group if group is not None else mx.distributed.init()
        inner = _quantized_block(quantized_linear_layer, 0, segments, group, True)
        return cls(inner, group)


class QuantizedShardedToAllLinear(Module):
    """:class:`ShardedToAllLinear` with a quantized weight (made with
    :meth:`from_quantized_linear`).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> q = nn.Linear(64, 8).to_quantized()
        >>> nn.QuantizedShardedToAllLinear.from_quantized_linear(q)(mx.ones((1, 64))).shape
        (1, 8)
    """

    def __init__(self, inner: QuantizedLinear, group: Any) -> None:
        super().__init__()
        self.group = group
        self.group_size, self.bits, self.mode = inner.group_size, inner.bits, inner.mode
        for name in ("weight", "scales", "biases", "bias"):
            value = inner.get(name)
            if value is not None:
                self[name] = value
        self.freeze()

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        y = mx.distributed.all_sum(y, group=self.group)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_quantized_linear(cls, quantized_linear_layer: Module, *, segments: int = 1,
                              group: Optional[Any] = None) -> "QuantizedShardedToAllLinear":
        """The sharded-to-all form of an existing :class:`QuantizedLinear`."""
        group = group if group is not None else mx.distributed.init()
        inner = _quantized_block(quantized_linear_layer, -1, segments, group, True)
        return cls(inner, group)


def shard_linear(module: Module, sharding: str, *, segments: int = 1,
                 group: Optional[Any] = None) -> Module:
    """The tensor-parallel form of a :class:`Linear` or
    :class:`QuantizedLinear`: ``sharding`` is ``'all-to-sharded'`` or
    ``'sharded-to-all'`` (see the module's docs).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> s = nn.layers.distributed.shard_linear(nn.Linear(4, 2), "sharded-to-all")
        >>> type(s).__name__
        'ShardedToAllLinear'
    """
    table = {
        ("all-to-sharded", False): AllToShardedLinear.from_linear,
        ("sharded-to-all", False): ShardedToAllLinear.from_linear,
        ("all-to-sharded", True): QuantizedAllToShardedLinear.from_quantized_linear,
        ("sharded-to-all", True): QuantizedShardedToAllLinear.from_quantized_linear,
    }
    key: Tuple[str, bool] = (sharding, isinstance(module, QuantizedLinear))
    if key not in table:
        raise ValueError(f"shard_linear: sharding must be 'all-to-sharded' or "
                         f"'sharded-to-all', got {sharding!r}")
    if not isinstance(module, (Linear, QuantizedLinear)):
        raise ValueError(f"shard_linear: expected a Linear or QuantizedLinear, got "
                         f"{type(module).__name__}")
    return table[key](module, segments=segments, group=group)


def _shardable(owner: Module, key: str, value: Any) -> bool:
    # A module already sharded keeps its own shards and its own gather.
    return not isinstance(value, FullyShardedModule) and \
        Module.valid_parameter_filter(owner, key, value)


def _structural_copy(tree: Any) -> Any:
    """A copy of the module tree's containers (modules, dicts, lists) that
    shares its arrays: updating the copy leaves the original untouched."""
    if isinstance(tree, Module):
        twin = copy.copy(tree)
        for k, v in tree.items():
            dict.__setitem__(twin, k, _structural_copy(v))
        return twin
    if isinstance(tree, dict):
        return {k: _structural_copy(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_structural_copy(v) for v in tree]
    return tree


def _gatherer(group: Any, full_shapes: list, compute_dtype: Optional[Any]):
    """The function from this process's shards to the full parameters (one
    ``all_gather`` of all of them), whose derivative reduce-scatters the
    cotangents and averages them over the group: each process receives the
    mean gradient of its own shard, as data-parallel training wants."""
    n = group.size()
    sizes = [math.prod(s) // n for s in full_shapes]
    cuts = list(itertools.accumulate(sizes))[:-1]

    def cast(x, dtype):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @mx.custom_function
    def gather(shards):
        row = mx.concatenate([cast(s.reshape(1, -1), compute_dtype) for s in shards], axis=1)
        rows = mx.distributed.all_gather(row, group=group)  # (n, total)
        # Column block i of the rows, rank after rank, is parameter i.
        return [b.reshape(shape) for b, shape in zip(mx.split(rows, cuts, axis=1), full_shapes)]

    @gather.vjp
    def gather_vjp(shards, cotangents, _outputs):
        rows = mx.concatenate([c.reshape(n, -1) for c in cotangents], axis=1)
        mine = mx.distributed.sum_scatter(rows, group=group) / n  # (1, total)
        return [cast(b.reshape(s.shape), s.dtype)
                for b, s in zip(mx.split(mine, cuts, axis=1), shards)]

    return gather


class FullyShardedModule(Module):
    """A module whose parameters are split over a group along their first
    axis (``mlx.nn.layers.distributed``'s name): each process stores and
    updates only its shard of every parameter.

    A call gathers the full parameters with one ``all_gather`` and runs the
    wrapped module on them; in the backward pass the gradients are
    reduce-scattered, so each process gets the gradient of its shard
    averaged over the group. The wrapped module itself is never modified
    by a call (the forward runs on a copy of its containers holding the
    gathered arrays), so several threads may call one sharded model at
    once. Every parameter's first axis must divide by the group's size.

    Args:
        module (Module): the module to shard (its parameters are replaced
            by this process's shards).
        group (Group, optional): the group to shard over (default: the
            global group).
        compute_dtype (Dtype, optional): the dtype the gathered parameters
            are cast to for the forward pass.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> m = nn.layers.distributed.FullyShardedModule(nn.Linear(4, 2))
        >>> m(mx.ones((1, 4))).shape  # a group of one holds everything
        (1, 2)
    """

    def __init__(self, module: Module, group: Optional[Any] = None,
                 compute_dtype: Optional[Any] = None):
        super().__init__()
        group = group if group is not None else mx.distributed.init()
        n = group.size()
        from ferrox.utils import tree_flatten, tree_unflatten
        flat = tree_flatten(module.filter_and_map(_shardable))
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(f"fully_shard: parameter '{path}' is a scalar and cannot be sharded")
            if a.shape[0] % n != 0:
                raise ValueError(
                    f"fully_shard: parameter '{path}' of shape {a.shape} does not split over "
                    f"{n} processes (axis 0 must divide by {n})")
        object.__setattr__(self, "_paths", [p for p, _ in flat])
        full_shapes = [tuple(a.shape) for _, a in flat]
        if flat:
            module.update(tree_unflatten([(p, _block(a, 0, 1, group)) for p, a in flat]))
        self.module = module
        object.__setattr__(self, "_gather", _gatherer(group, full_shapes, compute_dtype))

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _with_full_parameters(self) -> Module:
        from ferrox.utils import tree_flatten, tree_unflatten
        shards = [a for _, a in tree_flatten(self.module.filter_and_map(_shardable))]
        full = self._gather(shards) if shards else []
        twin = _structural_copy(self.module)
        if full:
            twin.update(tree_unflatten(list(zip(self._paths, full))))
        return twin

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._with_full_parameters()(*args, **kwargs)

    def as_linear(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's ``as_linear`` (a tied embedding's output
        projection) on the gathered parameters."""
        return self._with_full_parameters().as_linear(*args, **kwargs)


def fully_shard(module: Module, *, group: Optional[Any] = None,
                compute_dtype: Optional[Any] = None) -> Module:
    """``module`` wrapped in a :class:`FullyShardedModule` over ``group``;
    ``module`` itself when the group has one process, when it is already
    sharded, or when it has no parameters.

    Example:
        >>> import ferrox.nn as nn
        >>> lin = nn.Linear(4, 2)
        >>> nn.layers.distributed.fully_shard(lin) is lin  # a group of one
        True
    """
    group = group if group is not None else mx.distributed.init()
    if group.size() == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
