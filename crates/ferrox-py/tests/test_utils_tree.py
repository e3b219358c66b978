"""ferrox.utils: the tree helpers (flatten/unflatten, map, reduce, merge)."""

from typing import NamedTuple

import numpy as np
import pytest

import ferrox.core as fx
from ferrox.utils import (
    tree_flatten, tree_map, tree_map_with_path, tree_merge, tree_reduce, tree_unflatten,
)


class Pair(NamedTuple):
    first: object
    second: object


def test_flatten_paths_and_destinations():
    tree = {"a": [1, {"b": 2}], "c": (3,), "empty": {}}
    assert tree_flatten(tree) == [("a.0", 1), ("a.1.b", 2), ("c.0", 3)]
    assert tree_flatten(tree, destination={}) == {"a.0": 1, "a.1.b": 2, "c.0": 3}
    assert tree_flatten([[5]], prefix=".top") == [("top.0.0", 5)]
    assert tree_flatten(7) == [("", 7)]
    with pytest.raises(ValueError, match="destination"):
        tree_flatten(tree, destination=())


def test_unflatten_inverts_flatten_and_fills_list_gaps():
    tree = {"layers": [{"w": 1}, {"w": 2, "b": 3}], "head": {"x": 4}}
    assert tree_unflatten(tree_flatten(tree)) == tree
    assert tree_unflatten({"l.2": "c", "l.0": "a"}) == {"l": ["a", {}, "c"]}
    assert tree_unflatten([("", 9)]) == 9
    # Non-canonical integer keys are names, not positions.
    assert tree_unflatten([("01", "a"), ("1", "b")]) == {"01": "a", "1": "b"}


def test_is_leaf_stops_the_descent():
    tree = {"a": [1, 2], "b": [3]}
    flat = tree_flatten(tree, is_leaf=lambda n: isinstance(n, list) and len(n) == 1)
    assert flat == [("a.0", 1), ("a.1", 2), ("b", [3])]


def test_map_keeps_sequence_types_and_zips_rest():
    tree = {"t": (1, 2), "p": Pair(3, 4), "l": [5]}
    doubled = tree_map(lambda x, y: x + y, tree, tree)
    assert doubled == {"t": (2, 4), "p": Pair(6, 8), "l": [10]}
    assert isinstance(doubled["p"], Pair)
    paths = []
    tree_map_with_path(lambda p, x: paths.append(p), tree)
    assert paths == ["t.0", "t.1", "p.0", "p.1", "l.0"]
    assert tree_map_with_path(lambda p, x: p, [0], path="root") == ["root.0"]


def test_map_over_arrays():
    tree = {"w": fx.array([1.0, 2.0]), "b": [fx.array(3.0)]}
    out = tree_map(lambda a: a * 2, tree)
    np.testing.assert_array_equal(np.array(out["w"]), [2.0, 4.0])
    assert out["b"][0].item() == 6.0


def test_reduce_with_and_without_initializer():
    tree = {"a": [1, 2, 3], "b": {"c": 4}}
    assert tree_reduce(lambda acc, x: acc + x, tree, 0) == 10
    assert tree_reduce(lambda acc, x: acc * x, tree) == 24
    assert tree_reduce(lambda acc, x: acc + x, {}, 5) == 5
    total = tree_reduce(lambda acc, a: acc + a.sum(), {"x": fx.ones((3,))}, 0.0)
    assert total.item() == 3.0


def test_merge_fills_gaps_and_needs_merge_fn_for_clashes():
    assert tree_merge({"a": 0}, {"b": 1}) == {"a": 0, "b": 1}
    assert tree_merge({"l": [1, {}]}, {"l": [{}, 2]}) == {"l": [1, 2]}
    assert tree_merge({"l": [1]}, {"l": [None, 2]}) == {"l": [1, 2]}
    assert tree_merge({}, {}) == {}
    assert tree_merge(Pair(1, 2), Pair(10, 20), lambda a, b: a + b) == Pair(11, 22)
    with pytest.raises(ValueError, match="merge_fn"):
        tree_merge({"a": 0}, {"a": 1})
    with pytest.raises(ValueError, match="empty dict"):
        tree_merge({}, [])
