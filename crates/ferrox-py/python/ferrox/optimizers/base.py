"""``Optimizer``: the state tree and update protocol every optimizer
shares, and ``MultiOptimizer`` (different optimizers for different
parameters).

The state is one dict: ``"step"`` (a uint64 array, the number of updates
done), the hyper-parameters that are arrays (``"learning_rate"``, and any
other scheduled one), and, under each parameter's own path, a dict of that
parameter's slots (``{"m": ..., "v": ...}`` for Adam). The dict is
mutated in place, never replaced, so ``optimizer.state`` can be given to
``ferrox.core.compile`` as ``inputs=``/``outputs=`` state. Slots are
created the first time a parameter is seen (``init``, called on the first
update if not before).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Union

import ferrox.core as mx
from ferrox.utils import tree_flatten, tree_map, tree_merge, tree_unflatten

Schedule = Callable[[mx.array], mx.array]
ScalarOrSchedule = Union[float, mx.array, Schedule]


def _empty_slots_like(parameters: Any) -> Any:
    """The state subtree for parameters seen for the first time: the same
    nesting with an empty slot dict at each array."""
    return tree_map(lambda _: {}, parameters)


def _merge_structure(parameters: Any, state: Any) -> Any:
    """``state`` extended so that every parameter has a slot dict; existing
    slots are kept. Dicts are extended in place; lists and tuples are
    rebuilt (their length may grow)."""
    if isinstance(parameters, (list, tuple)):
        items = list(state) if isinstance(state, (list, tuple)) else []
        for i, p in enumerate(parameters):
            if i < len(items):
                items[i] = _merge_structure(p, items[i])
            else:
                items.append(_empty_slots_like(p))
        return type(parameters)(items)
    if isinstance(parameters, dict):
        for k, p in parameters.items():
            state[k] = _merge_structure(p, state[k]) if k in state else _empty_slots_like(p)
        return state
    return state


class Optimizer:
    """Base class: subclasses define ``init_single`` (create a parameter's
    slots) and ``apply_single`` (one parameter's update).

    Hyper-parameters given as a schedule (a function of the step) are
    re-evaluated at every update, before the step counter advances.

    Example:
        >>> import ferrox.core as mx, ferrox.optimizers as optim
        >>> opt = optim.SGD(learning_rate=0.5)
        >>> opt.apply_gradients({"w": mx.ones((2,))}, {"w": mx.zeros((2,))})["w"].tolist()
        [-0.5, -0.5]
    """

    def __init__(self, schedulers: Optional[Dict[str, Schedule]] = None) -> None:
        self._initialized = False
        self._state: Dict[str, Any] = {"step": mx.array(0, mx.uint64)}
        self._schedulers: Dict[str, Schedule] = dict(schedulers or {})

    # ---- the protocol subclasses implement --------------------------------

    def init_single(self, parameter: mx.array, state: dict) -> None:
        """Fills ``state`` (empty) with the slots for ``parameter``."""
        raise NotImplementedError

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict) -> mx.array:
        """Returns the updated ``parameter``; may replace entries of ``state``."""
        raise NotImplementedError

    # ---- driving it ---------------------------------------------------------

    def init(self, parameters: dict) -> None:
        """Creates the slots of every parameter in ``parameters`` that has
        none yet (keeping existing ones, e.g. after loading ``state``)."""
        _merge_structure(parameters, self._state)

        def fill(parameter: mx.array, slots: dict) -> None:
            if not slots:
                self.init_single(parameter, slots)

        tree_map(fill, parameters, self._state)
        self._initialized = True

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """The parameters after one update with ``gradients`` (a tree with
        the structure of, or a part of, ``parameters``); advances ``step``."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = schedule(self.step)
        self.state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self.state)

    def update(self, model: Any, gradients: dict) -> None:
        """Applies one update to ``model`` (a ``Module`` or a dict of
        parameters) in place."""
        model.update(self.apply_gradients(gradients, model))

    # ---- state and hyper-parameters ---------------------------------------

    @property
    def state(self) -> Dict[str, Any]:
        """The live state dict (see the module docstring). Assigning a new
        dict (e.g. a loaded one) keeps its slots and re-initialises missing
        ones at the next update."""
        return self._state

    @state.setter
    def state(self, state: Dict[str, Any]) -> None:
        self._initialized = False
        self._state = state

    @property
    def step(self) -> mx.array:
        """The number of updates done (a uint64 array)."""
        return self.state["step"]

    @property
    def learning_rate(self) -> mx.array:
        """The current learning rate (an array)."""
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, value: ScalarOrSchedule) -> None:
        """Stores hyper-parameter ``name`` in the state; a callable is a
        schedule, evaluated now and at every update."""
        if callable(value):
            self._schedulers[name] = value
            self.state[name] = value(self.step)
        else:
            self.state[name] = mx.array(value)


class MultiOptimizer(Optimizer):
    """Routes each parameter to the first optimizer whose filter accepts
    it; the last optimizer takes everything left.

    Args:
        optimizers: the optimizers, ``len(filters) + 1`` of them.
        filters: ``filter(dotted_name, gradient) -> bool`` for all
            optimizers but the last.

    Example:
        >>> import ferrox.optimizers as optim
        >>> opt = optim.MultiOptimizer([optim.Adam(1e-3), optim.SGD(0.1)],
        ...                            [lambda name, g: g.ndim > 1])
        >>> len(opt.state["states"])
        2
    """

    def __init__(self, optimizers: List[Optimizer],
                 filters: Optional[List[Callable[[str, mx.array], bool]]] = None) -> None:
        super().__init__()
        self._state = {}
        filters = list(filters or [])
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"MultiOptimizer: {len(optimizers)} optimizers need "
                             f"{len(optimizers) - 1} filters, got {len(filters)}")
        self.optimizers = optimizers
        self.filters = filters + [lambda *args, **kwargs: True]

    def _split(self, tree: dict) -> List[dict]:
        """``tree`` cut into one part per optimizer."""
        if len(self.optimizers) == 1:
            return [tree]
        parts: List[list] = [[] for _ in self.optimizers]
        for name, g in tree_flatten(tree):
            owner = next(i for i, accept in enumerate(self.filters) if accept(name, g))
            parts[owner].append((name, g))
        return [tree_unflatten(p) if p else {} for p in parts]

    def init(self, parameters: dict) -> None:
        """Initialises each optimizer on its part of ``parameters``."""
        for o, part in zip(self.optimizers, self._split(parameters)):
            o.init(part)

    def apply_gradients(self, gradients: dict, parameters: dict) -> dict:
        """Each optimizer updates its part; the results are merged."""
        merged: dict = {}
        for o, part in zip(self.optimizers, self._split(gradients)):
            merged = tree_merge(merged, o.apply_gradients(part, parameters))
        return merged

    @property
    def state(self) -> Dict[str, Any]:
        """``{"states": [state of each optimizer]}`` (the live dicts)."""
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state: Dict[str, Any]) -> None:
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError(f"MultiOptimizer: expected a state with 'states' holding "
                             f"{len(self.optimizers)} states")
        for o, s in zip(self.optimizers, state["states"]):
            o.state = s

    @property
    def learning_rate(self) -> mx.array:
        """The first optimizer's learning rate; setting it sets all."""
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]) -> None:
        for o in self.optimizers:
            o.learning_rate = learning_rate
