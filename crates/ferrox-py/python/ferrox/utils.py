"""Helpers for Python trees: nested lists, tuples and dicts with leaves.

A *tree* is any nesting of ``list``, ``tuple`` (named tuples included) and
``dict``; everything else is a leaf. Dict subclasses (``ferrox.nn.Module``)
are walked like dicts. Flat keys join the path with dots: ``"layers.0.weight"``.
The functions here read like ``mlx.utils``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

__all__ = [
    "tree_flatten",
    "tree_map",
    "tree_map_with_path",
    "tree_merge",
    "tree_reduce",
    "tree_unflatten",
]

LeafPredicate = Optional[Callable[[Any], bool]]


def _rebuild_sequence(template: Union[list, tuple], items: Iterable[Any]) -> Any:
    """A list/tuple of the same type as ``template`` holding ``items``.

    Named tuples take their fields positionally, other sequence types take
    one iterable.
    """
    kind = type(template)
    if hasattr(template, "_fields"):
        return kind(*items)
    return kind(items)


def _join(path: Optional[str], key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: LeafPredicate = None) -> Any:
    """Returns a tree of the same structure with ``fn`` applied to each leaf.

    ``rest`` are trees with (at least) the structure of ``tree``; their
    leaves at the same positions are passed to ``fn`` as extra arguments.
    ``is_leaf(node)`` returning true stops the descent at ``node``. Dicts
    (and dict subclasses) come back as plain dicts.

    Example:
        >>> from ferrox.utils import tree_map
        >>> tree_map(lambda x: x * 10, {"a": [1, 2], "b": 3})
        {'a': [10, 20], 'b': 30}
    """
    return tree_map_with_path(lambda _, *leaves: fn(*leaves), tree, *rest,
                              is_leaf=is_leaf)


def tree_map_with_path(fn: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: LeafPredicate = None,
                       path: Optional[str] = None) -> Any:
    """Like :func:`tree_map` but ``fn`` gets the leaf's dotted path first.

    ``path`` is a prefix for the paths (the root's path; ``None`` for none).

    Example:
        >>> from ferrox.utils import tree_map_with_path
        >>> tree_map_with_path(lambda p, x: p, {"w": [0, 0]})
        {'w': ['w.0', 'w.1']}
    """
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)
    if isinstance(tree, (list, tuple)):
        return _rebuild_sequence(tree, (
            tree_map_with_path(fn, child, *(r[i] for r in rest),
                               is_leaf=is_leaf, path=_join(path, i))
            for i, child in enumerate(tree)))
    if isinstance(tree, dict):
        return {
            k: tree_map_with_path(fn, child, *(r[k] for r in rest),
                                  is_leaf=is_leaf, path=_join(path, k))
            for k, child in tree.items()
        }
    return fn(path, tree, *rest)


def tree_flatten(tree: Any, prefix: str = "", is_leaf: LeafPredicate = None,
                 destination: Optional[Union[List[Tuple[str, Any]], Dict[str, Any]]] = None,
                 ) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """Lists the leaves of ``tree`` as ``(dotted_path, leaf)`` pairs.

    ``prefix`` is prepended to every path; its first character is dropped
    (so ``prefix=".model"`` gives ``"model.…"``). The pairs are appended to
    ``destination`` when it is a list, or stored in it when it is a dict
    (returned either way). Empty containers contribute nothing.

    Example:
        >>> from ferrox.utils import tree_flatten
        >>> tree_flatten({"a": [1, {"b": 2}]})
        [('a.0', 1), ('a.1.b', 2)]
        >>> tree_flatten([[5]], destination={})
        {'0.0': 5}
    """
    if destination is None:
        destination = []
    if isinstance(destination, list):
        add = destination.append
    elif isinstance(destination, dict):
        add = lambda item: destination.__setitem__(*item)  # noqa: E731
    else:
        raise ValueError("tree_flatten: destination must be a list, a dict or None, "
                         f"not {type(destination).__name__}")

    def walk(node: Any, path: str) -> None:
        if is_leaf is not None and is_leaf(node):
            add((path[1:], node))
        elif isinstance(node, (list, tuple)):
            for i, child in enumerate(node):
                walk(child, f"{path}.{i}")
        elif isinstance(node, dict):
            for k, child in node.items():
                walk(child, f"{path}.{k}")
        else:
            add((path[1:], node))

    walk(tree, prefix)
    return destination


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """Rebuilds the nested tree from ``(dotted_path, leaf)`` pairs.

    The inverse of :func:`tree_flatten`. A level whose keys are all integers
    (non-negative and spelled canonically: ``"01"`` is not ``1``) becomes a list, with
    ``{}`` filling indices that are missing; any other level becomes a dict.
    A single pair with the empty path is the leaf itself.

    Example:
        >>> from ferrox.utils import tree_unflatten
        >>> tree_unflatten([("a.0", 1), ("a.1.b", 2)])
        {'a': [1, {'b': 2}]}
    """
    items = list(tree.items() if isinstance(tree, dict) else tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    groups: Dict[str, List[Tuple[str, Any]]] = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        groups[head].append((tail, value))
    as_ints = {}
    for head in groups:
        if head.isdigit() and str(int(head)) == head:
            as_ints[int(head)] = head
    if groups and len(as_ints) == len(groups):
        out: List[Any] = []
        for index in sorted(as_ints):
            out.extend({} for _ in range(index - len(out)))
            out.append(tree_unflatten(groups[as_ints[index]]))
        return out
    return {head: tree_unflatten(children) for head, children in groups.items()}


def tree_reduce(fn: Callable[[Any, Any], Any], tree: Any, initializer: Any = None,
                is_leaf: LeafPredicate = None) -> Any:
    """Folds the leaves of ``tree`` left to right with ``fn(acc, leaf)``.

    Without ``initializer`` the first leaf is the starting value.

    Example:
        >>> from ferrox.utils import tree_reduce
        >>> tree_reduce(lambda acc, x: acc + x, {"a": [1, 2], "b": 3}, 0)
        6
    """
    acc = initializer
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        acc = leaf if acc is None else fn(acc, leaf)
    return acc


def _is_empty_container(node: Any) -> bool:
    return isinstance(node, (dict, list, tuple)) and len(node) == 0


def tree_merge(tree_a: Any, tree_b: Any,
               merge_fn: Optional[Callable[[Any, Any], Any]] = None) -> Any:
    """Deep union of two trees, a recursive ``dict.update``.

    Where only one tree has a value it is taken; empty containers count as
    absent. Where both have a leaf, ``merge_fn(a, b)`` decides, and without
    one that is a ``ValueError``. Lists merge position by position.

    Example:
        >>> from ferrox.utils import tree_merge
        >>> tree_merge({"a": [1, {}]}, {"a": [{}, 2]})
        {'a': [1, 2]}
    """
    if _is_empty_container(tree_a) and _is_empty_container(tree_b):
        if type(tree_a) is not type(tree_b):
            raise ValueError(f"tree_merge: cannot merge an empty {type(tree_a).__name__} "
                             f"with an empty {type(tree_b).__name__}")
        return type(tree_a)()
    a = None if _is_empty_container(tree_a) else tree_a
    b = None if _is_empty_container(tree_b) else tree_b
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return _rebuild_sequence(a, (tree_merge(x, y, merge_fn)
                                     for x, y in itertools.zip_longest(a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        keys = list(a) + [k for k in b if k not in a]
        return {k: tree_merge(a.get(k), b.get(k), merge_fn) for k in keys}
    if merge_fn is None:
        raise ValueError("tree_merge: both trees have a value at the same place "
                         "and no merge_fn was given")
    return merge_fn(a, b)
