"""``Module``: the base class of every layer and model.

A module *is* a dict: its entries are its parameters (arrays) and its
children (modules, or lists/dicts/tuples of them), reachable as attributes.
Anything else assigned as an attribute (ints, callables, ``None``) is an
ordinary Python attribute and takes no part in parameters, updates or
state. Invariants kept by ``__setattr__``: a name lives either in the dict
or in ``__dict__``, never both.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import ferrox.core as mx
from ferrox.utils import tree_flatten, tree_unflatten

# (owner module, key or dotted path inside it, value) -> keep it?
Filter = Callable[["Module", str, Any], bool]

_CONTAINERS = (dict, list, tuple)


def _as_key_list(keys: Union[str, List[str]]) -> List[str]:
    return keys if isinstance(keys, list) else [keys]


class Module(dict):
    """Base class of layers and models: a dict of parameters and children.

    Subclasses set arrays and submodules as attributes in ``__init__``
    (after ``super().__init__()``) and define ``__call__``. Parameters are
    trainable unless frozen with :meth:`freeze`; keys starting with ``_``
    are never parameters.

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> class Affine(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.scale = mx.ones((2,))
        ...     def __call__(self, x):
        ...         return self.scale * x
        >>> list(Affine().parameters())
        ['scale']
    """

    __call__: Callable[..., Any]

    def __init__(self) -> None:
        """Sets up the bookkeeping; subclasses must call it first."""
        # Both live in __dict__ (a set and a bool are not tree nodes).
        self._no_grad: set = set()
        self._training: bool = True

    # ---- attribute access -------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only reached when ordinary lookup failed: dict entries come here.
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (mx.array,) + _CONTAINERS):
            if name in self.__dict__:
                del self.__dict__[name]
            self[name] = value
        else:
            self.pop(name, None)
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self:
            del self[name]
        else:
            object.__delattr__(self, name)

    # ---- mode and state ---------------------------------------------------

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (see :meth:`train`)."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module itself: every entry, parameters and children.

        Unlike :meth:`parameters` this is the live dict, so it can be passed
        as ``inputs=``/``outputs=`` state to ``ferrox.core.compile``.
        """
        return self

    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``mode=True``) or evaluation mode on every
        module in the tree; returns ``self``."""
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self) -> "Module":
        """Sets evaluation mode (``train(False)``); returns ``self``."""
        return self.train(False)

    # ---- repr ---------------------------------------------------------------

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        lines = [f"{type(self).__name__}({self._extra_repr()}"]
        for path, child in children:
            lines.append(textwrap.indent(f"({path}): {child!r}", "  "))
        return "\n".join(lines) + ("\n)" if children else ")")

    # ---- filters ------------------------------------------------------------

    @staticmethod
    def is_module(value: Any) -> bool:
        """True if ``value`` is a :class:`Module`."""
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        """Filter keeping the containers that may hold child modules."""
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """Filter keeping arrays and containers, except ``_private`` keys."""
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """Filter keeping the parameters that are not frozen."""
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(self, filter_fn: Filter, map_fn: Optional[Callable[[Any], Any]] = None,
                       is_leaf_fn: Optional[Filter] = None) -> Dict[str, Any]:
        """The module's entries that ``filter_fn`` keeps, recursively.

        ``filter_fn(owner, key, value)`` decides each entry; ``key`` is the
        dotted path inside ``owner`` for values nested in its lists/dicts.
        A rejected entry inside a list or dict becomes ``{}`` (so list
        positions are kept); a rejected top-level entry is left out.
        ``is_leaf_fn`` (default: not a module, dict or list) stops the
        descent and ``map_fn`` transforms each leaf.
        """
        mapper = map_fn or (lambda v: v)
        leaf = is_leaf_fn or (lambda m, k, v: not isinstance(v, (Module, dict, list)))

        def visit(owner: Module, key: str, value: Any) -> Any:
            if leaf(owner, key, value):
                return mapper(value)
            if isinstance(value, Module):
                return {k: visit(value, k, v) for k, v in value.items()
                        if filter_fn(value, k, v)}
            if isinstance(value, dict):
                items = ((k, f"{key}.{k}", v) for k, v in value.items())
                return {k: visit(owner, path, v) if filter_fn(owner, path, v) else {}
                        for k, path, v in items}
            if isinstance(value, list):
                return [visit(owner, f"{key}.{i}", v) if filter_fn(owner, f"{key}.{i}", v) else {}
                        for i, v in enumerate(value)]
            raise RuntimeError(f"Module.filter_and_map: unexpected leaf {type(value).__name__} "
                               f"at {key!r}")

        return {k: visit(self, k, v) for k, v in self.items() if filter_fn(self, k, v)}

    def parameters(self) -> Dict[str, Any]:
        """All arrays of the module tree as nested dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> Dict[str, Any]:
        """The arrays of the module tree that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> Dict[str, Any]:
        """The direct submodules (inside their lists/dicts)."""
        return self.filter_and_map(self.valid_child_filter,
                                   is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self) -> Dict[str, Any]:
        """The submodules that have no submodules themselves."""
        def is_leaf_module(m: Module, k: str, v: Any) -> bool:
            return isinstance(v, Module) and not tree_flatten(v.children())

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    # ---- traversal ------------------------------------------------------------

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``apply_fn(dotted_path, module)`` on this module (path
        ``""``) and every submodule; returns ``self``."""
        pending: List[Tuple[str, Module]] = [("", self)]
        while pending:
            path, module = pending.pop()
            apply_fn(path, module)
            prefix = f".{path}" if path else ""
            pending.extend(tree_flatten(module.children(), prefix=prefix,
                                        is_leaf=self.is_module))
        return self

    def modules(self) -> List["Module"]:
        """This module and all its submodules."""
        found: List[Module] = []
        self.apply_to_modules(lambda _, m: found.append(m))
        return found

    def named_modules(self) -> List[Tuple[str, "Module"]]:
        """``(dotted_path, module)`` for this module and all submodules."""
        found: List[Tuple[str, Module]] = []
        self.apply_to_modules(lambda path, m: found.append((path, m)))
        return found

    # ---- updates ------------------------------------------------------------

    def update(self, parameters: Dict[str, Any], strict: bool = True) -> "Module":
        """Replaces the arrays named in ``parameters`` (a possibly partial
        tree like :meth:`parameters`); returns ``self``.

        With ``strict`` an unknown name, an out-of-range list index or a
        non-array where the module has an array raises ``ValueError``;
        without it those entries are skipped.
        """
        def replace(dst: Any, src: Any, where: str) -> None:
            # An empty container stands for "nothing here" (what parameters()
            # puts at non-parameter positions), whatever dst holds.
            if isinstance(src, (dict, list)) and not src:
                return
            if isinstance(src, dict):
                if not isinstance(dst, dict):
                    if strict:
                        raise ValueError(f"Module.update: {where or 'the module'} is a "
                                         f"{type(dst).__name__}, got a dict for it")
                    return
                for k, new in src.items():
                    if k not in dst:
                        if strict:
                            raise ValueError(f'Module.update: the module has no parameter '
                                             f'named "{_path(where, k)}"')
                        continue
                    store(dst, k, new, _path(where, k))
            elif isinstance(src, list):
                if not isinstance(dst, list):
                    if strict:
                        raise ValueError(f"Module.update: {where} is a {type(dst).__name__}, "
                                         "got a list for it")
                    return
                for i, new in enumerate(src):
                    if i >= len(dst):
                        if strict:
                            raise ValueError(f"Module.update: list index {i} is out of bounds "
                                             f"for {where} of length {len(dst)}")
                        continue
                    store(dst, i, new, _path(where, i))
            elif strict:
                raise ValueError(f"Module.update: expected a dict or list for "
                                 f"{where or 'the module'}, got {type(src).__name__}")

        def store(dst: Any, k: Any, new: Any, where: str) -> None:
            if isinstance(dst[k], mx.array):
                if strict and not isinstance(new, mx.array):
                    raise ValueError(f"Module.update: expected an array for {where}, "
                                     f"got {type(new).__name__}")
                dst[k] = new
            else:
                replace(dst[k], new, where)

        replace(self, parameters, "")
        return self

    def update_modules(self, modules: Dict[str, Any], strict: bool = True) -> "Module":
        """Replaces the submodules named in ``modules`` (a possibly partial
        tree like :meth:`children`; ``{}`` leaves a place unchanged);
        returns ``self``. With ``strict`` unknown names, out-of-range list
        indices and non-modules raise ``ValueError``."""
        def replace(dst: Any, src: Any, where: str) -> None:
            if isinstance(src, dict):
                entries = list(src.items())
                present = lambda k: k in dst  # noqa: E731
            elif isinstance(src, list):
                entries = list(enumerate(src))
                present = lambda i: i < len(dst)  # noqa: E731
            else:
                if strict:
                    raise ValueError(f"Module.update_modules: expected a dict or list for "
                                     f"{where or 'the module'}, got {type(src).__name__}")
                return
            for k, new in entries:
                if not present(k):
                    if strict:
                        raise ValueError(f'Module.update_modules: the module has no '
                                         f'sub-module at "{_path(where, k)}"')
                    continue
                current = dst[k]
                if isinstance(current, Module) and isinstance(new, Module):
                    dst[k] = new
                elif isinstance(current, (dict, list)):
                    replace(current, new, _path(where, k))
                elif strict and new != {}:
                    raise ValueError(f"Module.update_modules: cannot put a "
                                     f"{type(new).__name__} at {_path(where, k)}")

        replace(self, modules, "")
        return self

    def apply(self, map_fn: Callable[[mx.array], mx.array],
              filter_fn: Optional[Filter] = None) -> "Module":
        """Maps the parameters (those ``filter_fn`` keeps; by default all)
        with ``map_fn`` and stores the results; returns ``self``."""
        self.update(self.filter_and_map(filter_fn or Module.valid_parameter_filter, map_fn))
        return self

    def set_dtype(self, dtype: mx.Dtype,
                  predicate: Optional[Callable[[mx.Dtype], bool]] =
                  lambda d: mx.issubdtype(d, mx.floating)) -> None:
        """Casts the parameters whose dtype ``predicate`` accepts (by
        default the floating ones; ``None`` means all) to ``dtype``."""
        accept = predicate or (lambda _: True)
        self.apply(lambda x: x.astype(dtype) if accept(x.dtype) else x)

    # ---- freezing -----------------------------------------------------------

    def _check_keys_present(self, keys: List[str], modules: List["Module"]) -> None:
        for k in keys:
            if not any(k in m for m in modules):
                raise KeyError(f"{type(self).__name__}: no member named {k!r}")

    def _own_parameter_keys(self) -> List[str]:
        """Dotted paths of the arrays this module holds itself (not those
        of its submodules)."""
        own = self.filter_and_map(
            lambda m, k, v: not isinstance(v, Module) and m.valid_parameter_filter(m, k, v))
        return [k for k, _ in tree_flatten(own)]

    def _set_frozen(self, freeze: bool, recurse: bool,
                    keys: Optional[Union[str, List[str]]], strict: bool) -> "Module":
        targets = self.modules() if recurse else [self]
        if keys is not None and strict:
            # A recursive freeze accepts a key present in any one module.
            self._check_keys_present(_as_key_list(keys), targets)
        for m in targets:
            if freeze:
                m._no_grad.update(m._own_parameter_keys() if keys is None else _as_key_list(keys))
            elif keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(_as_key_list(keys))
        return self

    def freeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
               strict: bool = False) -> "Module":
        """Marks parameters as frozen: :meth:`trainable_parameters` (and so
        ``value_and_grad`` and optimizers) leave them out.

        ``keys`` limits it to these names (e.g. ``"bias"``); ``recurse``
        includes the submodules; ``strict`` raises ``KeyError`` for a key no
        module has. Idempotent; returns ``self``.
        """
        return self._set_frozen(True, recurse, keys, strict)

    def unfreeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
                 strict: bool = False) -> "Module":
        """Undoes :meth:`freeze` for ``keys`` (default: everything); same
        arguments. Idempotent; returns ``self``."""
        return self._set_frozen(False, recurse, keys, strict)

    # ---- weights on disk ------------------------------------------------------

    def load_weights(self, file_or_weights: Union[str, List[Tuple[str, mx.array]]],
                     strict: bool = True) -> "Module":
        """Loads parameters from a ``.npz``/``.safetensors`` file or a list of
        ``(dotted_name, array)`` pairs; returns ``self``.

        With ``strict`` (the default) the names must be exactly the
        module's parameters, each an array of the parameter's shape, or a
        ``ValueError`` lists what is missing, extra or mis-shaped. Without
        it only matching names are loaded and nothing is checked.
        """
        if isinstance(file_or_weights, str):
            weights = list(mx.load(file_or_weights).items())
        else:
            weights = list(file_or_weights)
        if strict:
            self._check_weights(weights)
        if weights:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def _check_weights(self, weights: List[Tuple[str, Any]]) -> None:
        given = dict(weights)
        current = tree_flatten(self.parameters(), destination={})
        name = type(self).__name__
        extra = sorted(given.keys() - current.keys())
        if extra:
            raise ValueError(f"{name}.load_weights: {len(extra)} parameters not in the "
                             f"model:\n" + ",\n".join(extra))
        missing = sorted(current.keys() - given.keys())
        if missing:
            raise ValueError(f"{name}.load_weights: {len(missing)} missing parameters:\n"
                             + ",\n".join(missing))
        for k, have in current.items():
            new = given[k]
            if not isinstance(new, mx.array):
                raise ValueError(f"{name}.load_weights: expected an array for {k}, "
                                 f"got {type(new).__name__}")
            if new.shape != have.shape:
                raise ValueError(f"{name}.load_weights: expected shape {have.shape} for {k}, "
                                 f"got {new.shape}")

    def save_weights(self, file: str) -> None:
        """Writes the parameters to ``file``: ``.npz`` (``savez``) or
        ``.safetensors``, chosen by the extension (else ``ValueError``)."""
        flat = tree_flatten(self.parameters(), destination={})
        if file.endswith(".npz"):
            mx.savez(file, **flat)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, flat)
        else:
            raise ValueError(f"{type(self).__name__}.save_weights: unsupported file extension "
                             f"in {file!r}; use '.npz' or '.safetensors'")


def _path(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)
