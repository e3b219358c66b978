"""``Upsample``: resizing of the spatial axes of channels-last inputs by
nearest, (multi)linear or (multi)cubic interpolation.

Every mode here is separable, so the input is resampled one spatial axis
at a time: for each output position along the axis, a short list of
(source index, weight) taps is computed in Python (the sizes are static),
and the axis is rebuilt as ``sum_t take(x, index_t) * weight_t``. The
weights are float32, so integer inputs give float32 outputs.

Source positions follow the usual conventions: with ``align_corners`` the
first and last samples of input and output coincide; without it the
output sample centres are spread evenly over the input's extent.
Antialiasing (for downsampling) widens the kernel by the inverse scale and
renormalises the weights.
"""

from __future__ import annotations

import math
from typing import Callable, List, Literal, Tuple, Union

import ferrox.core as mx

from ..module import Module

Taps = List[Tuple[List[int], List[float]]]   # per tap: indices and weights, one per output

Mode = Literal["nearest", "linear", "cubic"]


def _positions(n: int, scale: float, align_corners: bool) -> List[float]:
    """The (fractional) source coordinate of every output sample."""
    m = int(scale * n)
    if align_corners:
        ratio = (n - 1) / max(m - 1, 1)
        return [i * ratio for i in range(m)]
    step = 1 / scale
    start = ((m - 1) * step - n + 1) / 2
    return [i * step - start for i in range(m)]


def _clip(i: float, n: int) -> int:
    return int(min(max(i, 0), n - 1))


def _nearest_taps(n: int, scale: float) -> Taps:
    m = int(scale * n)
    if m > n:
        index = [_clip(round((i + 0.5) * (n / m) - 0.5), n) for i in range(m)]
    else:
        index = [_clip(math.floor(i * (n / m)), n) for i in range(m)]
    return [(index, [1.0] * m)]


def _linear_taps(n: int, scale: float, align_corners: bool) -> Taps:
    pos = [min(max(p, 0.0), n - 1.0) for p in _positions(n, scale, align_corners)]
    left = [math.floor(p) for p in pos]
    right = [math.ceil(p) for p in pos]
    frac = [p - l for p, l in zip(pos, left)]
    return [(left, [1 - f for f in frac]), (right, frac)]


def _cubic_near(x: float, a: float) -> float:
    """Keys' cubic kernel for ``|x| <= 1``."""
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1


def _cubic_far(x: float, a: float) -> float:
    """Keys' cubic kernel for ``1 < |x| <= 2``."""
    return (((x - 5) * x + 8) * x - 4) * a


def _cubic_taps(n: int, scale: float, align_corners: bool) -> Taps:
    a = -0.75
    pos = _positions(n, scale, align_corners)
    taps: Taps = []
    for offset, kernel in ((0, _cubic_near), (1, _cubic_near), (-1, _cubic_far),
                           (2, _cubic_far)):
        grid = [math.floor(p) + offset for p in pos]
        taps.append(([_clip(g, n) for g in grid],
                     [kernel(abs(p - g), a) for p, g in zip(pos, grid)]))
    return taps


def _triangle(x: float) -> float:
    return max(1.0 - x, 0.0)


def _cubic_aa(x: float) -> float:
    a = -0.5
    return _cubic_near(x, a) if x <= 1.0 else (_cubic_far(x, a) if x <= 2.0 else 0.0)


def _antialiased_taps(n: int, scale: float, align_corners: bool,
                      kernel: Callable[[float], float], radius: float) -> Taps:
    widen = 1.0 / scale if scale < 1 else 1.0
    reach = math.ceil(radius * widen) + 1
    pos = _positions(n, scale, align_corners)
    raw = []
    for k in range(-reach + 1, reach):
        grid = [math.floor(p) + k for p in pos]
        weight = [kernel(abs(p - g) / widen) if 0 <= g < n else 0.0
                  for p, g in zip(pos, grid)]
        raw.append((grid, weight))
    totals = [sum(w[i] for _, w in raw) for i in range(len(pos))]
    totals = [t if t > 0 else 1.0 for t in totals]
    return [([_clip(g, n) for g in grid], [w / t for w, t in zip(weight, totals)])
            for grid, weight in raw]


def _resample_axis(x: mx.array, axis: int, taps: Taps) -> mx.array:
    out = None
    for index, weight in taps:
        sample = mx.take(x, mx.array(index, dtype=mx.int32), axis=axis)
        if len(taps) > 1:
            shape = [1] * x.ndim
            shape[axis] = len(weight)
            sample = sample * mx.array(weight, dtype=mx.float32).reshape(shape)
        out = sample if out is None else out + sample
    return out


def _taps_for(mode: str, n: int, scale: float, align_corners: bool, antialias: bool) -> Taps:
    if mode == "nearest":
        return _nearest_taps(n, scale)
    if antialias:
        kernel, radius = (_triangle, 1.0) if mode == "linear" else (_cubic_aa, 2.0)
        return _antialiased_taps(n, scale, align_corners, kernel, radius)
    return (_linear_taps if mode == "linear" else _cubic_taps)(n, scale, align_corners)


def _check_antialias(align_corners: bool, antialias: bool) -> None:
    if antialias and align_corners:
        raise ValueError("Upsample: antialias needs align_corners=False (the two cannot be "
                         "combined)")


def _upsample(x: mx.array, scale_factor: Tuple[float, ...], mode: str,
              align_corners: bool = False, antialias: bool = False) -> mx.array:
    _check_antialias(align_corners, antialias)
    spatial = x.shape[1:-1]
    if len(spatial) != len(scale_factor):
        raise ValueError(f"Upsample: {len(scale_factor)} scales for {len(spatial)} spatial "
                         "dimensions; give one per spatial dimension")
    for i, (n, s) in enumerate(zip(spatial, scale_factor)):
        x = _resample_axis(x, 1 + i, _taps_for(mode, n, s, align_corners, antialias))
    return x


def upsample_nearest(x: mx.array, scale_factor: Tuple[float, ...]) -> mx.array:
    """Nearest-neighbour resize of ``(N, spatial..., C)`` by one scale per
    spatial axis."""
    return _upsample(x, tuple(scale_factor), "nearest")


def upsample_linear(x: mx.array, scale_factor: Tuple[float, ...], align_corners: bool = False,
                    antialias: bool = False) -> mx.array:
    """(Multi)linear resize of ``(N, spatial..., C)``; see :class:`Upsample`."""
    return _upsample(x, tuple(scale_factor), "linear", align_corners, antialias)


def upsample_cubic(x: mx.array, scale_factor: Tuple[float, ...], align_corners: bool = False,
                   antialias: bool = False) -> mx.array:
    """(Multi)cubic resize of ``(N, spatial..., C)``; see :class:`Upsample`."""
    return _upsample(x, tuple(scale_factor), "cubic", align_corners, antialias)


class Upsample(Module):
    """Resizes the spatial axes of an ``(N, spatial..., C)`` input.

    Args:
        scale_factor: one scale for all spatial axes or one per axis; the
            output size is ``int(scale * size)``.
        mode: ``"nearest"``, ``"linear"`` (bilinear/trilinear in 2-d/3-d)
            or ``"cubic"``.
        align_corners: map the corner samples onto each other (linear
            and cubic only).
        antialias: low-pass when downsampling (linear and cubic only,
            without ``align_corners``).

    Example:
        >>> import ferrox.core as mx, ferrox.nn as nn
        >>> nn.Upsample(scale_factor=2)(mx.ones((1, 2, 3, 1))).shape
        (1, 4, 6, 1)
    """

    def __init__(self, scale_factor: Union[float, Tuple[float, ...]], mode: Mode = "nearest",
                 align_corners: bool = False, antialias: bool = False) -> None:
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"Upsample: mode must be 'nearest', 'linear' or 'cubic', got {mode!r}")
        if antialias and mode == "nearest":
            raise ValueError("Upsample: antialias applies to the linear and cubic modes, not "
                             "to 'nearest'")
        _check_antialias(align_corners, antialias)
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor: Union[float, Tuple[float, ...]] = tuple(map(float, scale_factor))
        else:
            self.scale_factor = float(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        text = (f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
                f"align_corners={self.align_corners}")
        return text + (", antialias=True" if self.antialias else "")

    def __call__(self, x: mx.array) -> mx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError("Upsample: expected (N, spatial..., C) with at least one spatial "
                             f"axis, got an input with {x.ndim} dimensions")
        scale = self.scale_factor
        if isinstance(scale, tuple):
            if len(scale) != dims:
                raise ValueError(f"Upsample: scale_factor={scale} has {len(scale)} scales for "
                                 f"an input with {dims} spatial axes")
        else:
            scale = (scale,) * dims
        return _upsample(x, scale, self.mode, self.align_corners, self.antialias)
