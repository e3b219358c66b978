"""Recurrent layers: ``RNN``, ``GRU`` and ``LSTM``.

Inputs are ``(N, L, input_size)`` or unbatched ``(L, input_size)``; the
outputs hold the hidden state of every step, ``(..., L, hidden_size)``.
The input projection of all steps is one matmul up front; the loop then
only adds the hidden-state projection. A missing initial state is zero
(the first step skips the terms that would multiply it).
All weights start uniform in ``±1/sqrt(hidden_size)``.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Tuple

import ferrox.core as mx

from ..module import Module
from .activations import tanh


def _uniform(hidden_size: int, *shape: int) -> mx.array:
    bound = 1.0 / math.sqrt(hidden_size)
    return mx.random.uniform(low=-bound, high=bound, shape=shape)


def _project(x: mx.array, weight: mx.array, bias: Optional[mx.array]) -> mx.array:
    return x @ weight.T if bias is None else mx.addmm(bias, x, weight.T)


class RNN(Module):
    """Elman recurrent layer: ``h_t = f(W_xh x_t + W_hh h_{t-1} + b)``.

    Args:
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        bias: whether to learn ``b``.
        nonlinearity: the callable ``f`` (default ``tanh``).
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: Optional[Callable[[mx.array], mx.array]] = None) -> None:
        super().__init__()
        self.nonlinearity = nonlinearity or tanh
        if not callable(self.nonlinearity):
            raise ValueError(f"RNN: nonlinearity must be callable, got {nonlinearity!r}")
        self.hidden_size = hidden_size
        self.Wxh = _uniform(hidden_size, hidden_size, input_size)
        self.Whh = _uniform(hidden_size, hidden_size, hidden_size)
        self.bias = _uniform(hidden_size, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
                f"nonlinearity={self.nonlinearity}, bias={self.bias is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        x = _project(x, self.Wxh, self.bias)
        states = []
        for t in range(x.shape[-2]):
            step = x[..., t, :]
            if hidden is not None:
                step = mx.addmm(step, hidden, self.Whh.T)
            hidden = self.nonlinearity(step)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    """Gated recurrent unit. With gates ``r`` (reset), ``z`` (update)::

        r, z = sigmoid(W_x[rz] x_t + b[rz] + W_h[rz] h_{t-1})
        n = tanh(W_x[n] x_t + b[n] + r * (W_h[n] h_{t-1} + b_hn))
        h_t = (1 - z) * n + z * h_{t-1}

    ``Wx`` is ``(3 * hidden, input)``, ``Wh`` is ``(3 * hidden, hidden)``,
    ``b`` is ``(3 * hidden,)`` and ``bhn`` is ``(hidden,)``, ordered r, z, n.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.Wx = _uniform(hidden_size, 3 * hidden_size, input_size)
        self.Wh = _uniform(hidden_size, 3 * hidden_size, hidden_size)
        self.b = _uniform(hidden_size, 3 * hidden_size) if bias else None
        self.bhn = _uniform(hidden_size, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.b is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None) -> mx.array:
        size = self.hidden_size
        x = _project(x, self.Wx, self.b)
        x_rz, x_n = x[..., :-size], x[..., -size:]
        states = []
        for t in range(x.shape[-2]):
            rz = x_rz[..., t, :]
            # h_n is W_h[n] h + b_hn; with no previous state only b_hn remains.
            h_n = self.bhn
            if hidden is not None:
                h = hidden @ self.Wh.T
                rz = rz + h[..., :-size]
                h_n = h[..., -size:] if self.bhn is None else h[..., -size:] + self.bhn
            r, z = mx.split(mx.sigmoid(rz), 2, axis=-1)
            n = x_n[..., t, :]
            if h_n is not None:
                n = n + r * h_n
            n = mx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    """Long short-term memory layer; returns ``(hidden states, cell states)``.

    Gates ``i, f, g, o`` (input, forget, cell, output) come from
    ``W_x x_t + W_h h_{t-1} + b``; ``c_t = f * c_{t-1} + i * g`` and
    ``h_t = o * tanh(c_t)``. ``Wx`` is ``(4 * hidden, input)``, ``Wh`` is
    ``(4 * hidden, hidden)``, ``bias`` is ``(4 * hidden,)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.Wx = _uniform(hidden_size, 4 * hidden_size, input_size)
        self.Wh = _uniform(hidden_size, 4 * hidden_size, hidden_size)
        self.bias = _uniform(hidden_size, 4 * hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.bias is not None}")

    def __call__(self, x: mx.array, hidden: Optional[mx.array] = None,
                 cell: Optional[mx.array] = None) -> Tuple[mx.array, mx.array]:
        x = _project(x, self.Wx, self.bias)
        hiddens, cells = [], []
        for t in range(x.shape[-2]):
            gates = x[..., t, :]
            if hidden is not None:
                gates = mx.addmm(gates, hidden, self.Wh.T)
            i, f, g, o = mx.split(gates, 4, axis=-1)
            i, f, g, o = mx.sigmoid(i), mx.sigmoid(f), mx.tanh(g), mx.sigmoid(o)
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * mx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)
