"""Quantized layers: ``QuantizedLinear``, ``QuantizedEmbedding``, ``QQLinear``
and ``quantize`` (which swaps layers of a model for their quantized forms).

Weights are packed by ``ferrox.core.quantize`` (MLX's packing): ``weight``
holds the codes in uint32 words, ``scales`` (and, in ``affine`` mode,
``biases``) one value per group of ``group_size`` weights. Quantized
layers are frozen at construction: their packed weights are not
trainable, though e.g. ``scales`` can be unfrozen.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple, Union

import ferrox.core as mx

from ..module import Module
from ferrox.utils import tree_map_with_path

# mode -> (group_size, bits) used when the caller gives None.
_MODE_DEFAULTS: Dict[str, Tuple[int, int]] = {
    "affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8),
}


def _defaults_for_mode(mode: str, group_size: Optional[int],
                       bits: Optional[int]) -> Tuple[int, int]:
    if mode not in _MODE_DEFAULTS:
        raise ValueError(f"quantization mode must be one of {', '.join(_MODE_DEFAULTS)}; "
                         f"got {mode!r}")
    default_group, default_bits = _MODE_DEFAULTS[mode]
    return group_size or default_group, bits or default_bits


def _set_mode(layer: Module, mode: str, group_size: Optional[int],
              bits: Optional[int]) -> None:
    """Stores the layer's quantization settings, defaults filled in."""
    layer.group_size, layer.bits = _defaults_for_mode(mode, group_size, bits)
    layer.mode = mode


def _quantize_into(layer: Module, weight: mx.array) -> None:
    """Sets ``layer.weight``/``scales``/``biases`` to ``weight`` quantized
    with the layer's settings (``biases`` is ``None`` outside ``affine``)."""
    packed = mx.quantize(weight, layer.group_size, layer.bits, mode=layer.mode)
    layer.weight, layer.scales = packed[0], packed[1]
    layer.biases = packed[2] if len(packed) > 2 else None


def quantize(model: Module, group_size: Optional[int] = None, bits: Optional[int] = None, *,
             mode: str = "affine", quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None,
             ) -> None:
    """Replaces, in place, the leaf modules of ``model`` that
    ``class_predicate(path, module)`` selects (default: those with a
    ``to_quantized`` method) by ``module.to_quantized(...)``.

    The predicate may return ``True`` (use ``group_size``, ``bits``,
    ``mode`` and ``quantize_input`` given here) or a dict of keyword
    arguments for that module's ``to_quantized``.

    Example:
        >>> import ferrox.nn as nn
        >>> model = nn.Sequential(nn.Linear(64, 64))
        >>> nn.quantize(model)
        >>> type(model.layers[0]).__name__
        'QuantizedLinear'
    """
    select = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def replace(path: str, module: Module) -> Module:
        choice = select(path, module)
        if not choice:
            return module
        if not hasattr(module, "to_quantized"):
            raise ValueError(f"quantize: cannot quantize {path} of type {type(module).__name__}")
        if isinstance(choice, bool):
            kwargs: Dict[str, Any] = {"group_size": group_size, "bits": bits, "mode": mode}
            if quantize_input:
                kwargs["quantize_input"] = True
        elif isinstance(choice, dict):
            kwargs = {k: v for k, v in choice.items()
                      if not (k == "quantize_input" and not v)}
        else:
            raise ValueError("quantize: class_predicate answered with a "
                             f"{type(choice).__name__}; it should give True/False or a dict "
                             "of to_quantized keyword arguments")
        return module.to_quantized(**kwargs)

    leaves = tree_map_with_path(replace, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


class QuantizedEmbedding(Module):
    """An :class:`Embedding` whose table is quantized; looked-up rows are
    dequantized on the fly. Usually made with :meth:`from_embedding`."""

    def __init__(self, num_embeddings: int, dims: int, group_size: Optional[int] = None,
                 bits: Optional[int] = None, mode: str = "affine") -> None:
        super().__init__()
        _set_mode(self, mode, group_size, bits)
        _quantize_into(self, mx.random.normal(shape=(num_embeddings, dims),
                                              scale=math.sqrt(1 / dims)))
        self.num_embeddings = num_embeddings
        self.dims = dims
        self.freeze()

    def __call__(self, x: mx.array) -> mx.array:
        biases = self.get("biases")
        return mx.dequantize(self["weight"][x], scales=self["scales"][x],
                             biases=None if biases is None else biases[x],
                             group_size=self.group_size, bits=self.bits, mode=self.mode)

    def as_linear(self, x: mx.array) -> mx.array:
        """Scores of ``x`` against every embedding, ``x @ table.T``, with a
        quantized matmul."""
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self.get("biases"), transpose=True,
                                   group_size=self.group_size, bits=self.bits, mode=self.mode)

    def _extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: Optional[int] = None,
                       bits: Optional[int] = None, mode: str = "affine") -> "QuantizedEmbedding":
        """The quantized form of an existing :class:`Embedding`."""
        num_embeddings, dims = embedding_layer.weight.shape
        layer = cls(num_embeddings, dims, group_size, bits, mode=mode)
        _quantize_into(layer, embedding_layer.weight)
        return layer


class QuantizedLinear(Module):
    """A :class:`Linear` whose weight is quantized:
    ``quantized_matmul(x, weight.T) + bias``. Usually made with
    :meth:`from_linear` or :func:`quantize`."""

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: Optional[int] = None, bits: Optional[int] = None,
                 mode: str = "affine") -> None:
        super().__init__()
        _set_mode(self, mode, group_size, bits)
        bound = math.sqrt(1 / input_dims)
        _quantize_into(self, mx.random.uniform(low=-bound, high=bound,
                                               shape=(output_dims, input_dims)))
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, packed = self.weight.shape
        return (f"input_dims={packed * 32 // self.bits}, output_dims={out_dims}, "
                f"bias={'bias' in self}, group_size={self.group_size}, bits={self.bits}, "
                f"mode={self.mode}")

    def __call__(self, x: mx.array) -> mx.array:
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: Optional[int] = None,
                    bits: Optional[int] = None, mode: str = "affine") -> "QuantizedLinear":
        """The quantized form of an existing :class:`Linear` (its bias, if
        any, is kept in full precision)."""
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        _quantize_into(layer, linear_layer.weight)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


def _round_trip(x: mx.array, group_size: int, bits: int, mode: str) -> mx.array:
    """``x`` quantized and dequantized again: the values a quantized
    operand stands for."""
    packed = mx.quantize(x, group_size, bits, mode=mode)
    return mx.dequantize(*packed[:2], biases=packed[2] if len(packed) > 2 else None,
                         group_size=group_size, bits=bits, mode=mode, dtype=x.dtype)


class QQLinear(Module):
    """A linear layer (no bias) that quantizes both its weight and its input
    (modes ``nvfp4``/``mxfp8``).

    In training mode the weight stays in full precision and is quantized
    on the fly; :meth:`eval` quantizes it once (``weight`` becomes packed
    codes with ``scales``) and :meth:`train` restores it. ferrox.core has no
    fused ``qqmm``, so the product is computed as the matmul of the
    dequantized operands, which is the same value up to rounding order.
    """

    def __init__(self, input_dims: int, output_dims: int, group_size: Optional[int] = None,
                 bits: Optional[int] = None, mode: str = "nvfp4") -> None:
        super().__init__()
        _set_mode(self, mode, group_size, bits)
        bound = math.sqrt(1 / input_dims)
        self.weight = mx.random.uniform(low=-bound, high=bound, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == mx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def quantize(self) -> None:
        """Packs the weight (idempotent)."""
        if not self._quantized:
            self.weight, self.scales = mx.quantize(self.weight, self.group_size, self.bits,
                                                   mode=self.mode)[:2]
            self._quantized = True

    def dequantize(self) -> None:
        """Unpacks the weight back to full precision (idempotent)."""
        if self._quantized:
            self.weight = mx.dequantize(self.weight, scales=self.scales,
                                        group_size=self.group_size, bits=self.bits,
                                        mode=self.mode)
            del self.scales
            self._quantized = False

    def _set_training_mode(self, mode: bool) -> None:
        super()._set_training_mode(mode)
        if mode:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x: mx.array) -> mx.array:
        settings = (self.group_size, self.bits, self.mode)
        if self._quantized:
            w = mx.dequantize(self["weight"], scales=self["scales"], group_size=self.group_size,
                              bits=self.bits, mode=self.mode, dtype=x.dtype)
        else:
            w = _round_trip(self["weight"], *settings)
        return _round_trip(x, *settings) @ w.T

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: Optional[int] = None,
                    bits: Optional[int] = None, mode: str = "nvfp4") -> "QQLinear":
        """A QQLinear with the weight of ``linear_layer`` (which must have
        no bias), in the same training mode."""
        output_dims, input_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("QQLinear.from_linear: layers with a bias are not "
                                      "supported")
        layer = cls(input_dims, output_dims, group_size, bits, mode=mode)
        layer.weight = linear_layer.weight
        layer.train(linear_layer.training)
        return layer
