"""Module functions against numpy."""

import numpy as np
import pytest

import ferrox.core as fx
from conftest import assert_close


def test_dtypes_are_module_attributes():
    sizes = {
        "bool_": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
        "int8": 1, "int16": 2, "int32": 4, "int64": 8,
        "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8,
    }
    for name, size in sizes.items():
        d = getattr(fx, name)
        assert d.size == size
        assert d == getattr(fx, name)
        assert hash(d) == hash(getattr(fx, name))
    assert fx.float32 != fx.float16


def test_creation():
    assert fx.zeros((2, 3)).tolist() == [[0] * 3] * 2
    assert fx.zeros(3, dtype=fx.int32).dtype == fx.int32
    assert fx.ones((2,)).dtype == fx.float32
    assert fx.full((2, 2), 3).dtype == fx.int32
    assert fx.full((2, 2), 3.5).tolist() == [[3.5, 3.5]] * 2
    assert fx.full((2, 3), fx.array([1, 2, 3])).tolist() == [[1, 2, 3]] * 2
    assert fx.arange(5).tolist() == list(range(5))
    assert fx.arange(5).dtype == fx.int32
    assert fx.arange(1, 2, 0.25).tolist() == [1, 1.25, 1.5, 1.75]
    assert fx.arange(0, 10, 3, dtype=fx.float32).dtype == fx.float32
    assert_close(fx.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert_close(fx.eye(3, 4, k=1), np.eye(3, 4, k=1))
    assert_close(fx.identity(3), np.identity(3))
    assert_close(fx.tri(3, 3, k=-1), np.tri(3, 3, k=-1))
    x = fx.array([[1, 2]], dtype=fx.int16)
    assert fx.zeros_like(x).dtype == fx.int16
    assert fx.ones_like(x).tolist() == [[1, 1]]
    assert fx.full_like(x, 4).tolist() == [[4, 4]]


UNARY = {
    "abs": np.abs, "negative": np.negative, "sign": np.sign, "square": np.square,
    "sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arcsin": np.arcsin, "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "arcsinh": np.arcsinh, "arctanh": np.arctanh,
    "floor": np.floor, "ceil": np.ceil, "reciprocal": np.reciprocal,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops(name, rng):
    x = rng.uniform(0.05, 0.95, size=(3, 4)).astype(np.float32)
    assert_close(getattr(fx, name)(fx.array(x)), UNARY[name](x), rtol=1e-4, atol=1e-5)


def test_more_unary_ops():
    x = np.array([1.0, np.nan, np.inf, -np.inf], dtype=np.float32)
    assert np.array(fx.isnan(fx.array(x))).tolist() == np.isnan(x).tolist()
    assert np.array(fx.isinf(fx.array(x))).tolist() == np.isinf(x).tolist()
    assert np.array(fx.isfinite(fx.array(x))).tolist() == np.isfinite(x).tolist()
    assert fx.arccosh(fx.array([2.0])).item() == pytest.approx(np.arccosh(2.0), rel=1e-5)
    assert fx.erf(fx.array(0.5)).item() == pytest.approx(0.5204998778, rel=1e-5)
    assert fx.erfinv(fx.erf(fx.array(0.5))).item() == pytest.approx(0.5, rel=1e-4)
    assert fx.round(fx.array([1.26, 2.5]), 1).tolist() == pytest.approx([1.3, 2.5])
    assert fx.logical_not(fx.array([True, False])).tolist() == [False, True]
    assert fx.bitwise_invert(fx.array([0], dtype=fx.int8)).tolist() == [-1]
    c = fx.array([1 + 2j, 3 - 1j])
    assert fx.real(c).tolist() == [1, 3]
    assert fx.imag(c).tolist() == [2, -1]
    assert np.array(fx.conjugate(c)).tolist() == [1 - 2j, 3 + 1j]
    assert c.real.tolist() == [1, 3]


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "arctan2": np.arctan2,
    "logaddexp": np.logaddexp, "equal": np.equal, "not_equal": np.not_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
    "less_equal": np.less_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_broadcast(name, rng):
    x = rng.uniform(0.5, 2, size=(2, 3)).astype(np.float32)
    y = rng.uniform(0.5, 2, size=(3,)).astype(np.float32)
    assert_close(getattr(fx, name)(fx.array(x), fx.array(y)), BINARY[name](x, y), rtol=1e-4)


def test_divmod_matches_numpy_and_differentiates(rng):
    x = rng.uniform(-5, 5, size=(2, 3)).astype(np.float32)
    y = rng.uniform(0.5, 2, size=(3,)).astype(np.float32)
    q, r = fx.divmod(fx.array(x), fx.array(y))
    nq, nr = np.divmod(x, y)
    assert_close(q, nq, rtol=1e-5)
    assert_close(r, nr, rtol=1e-5, atol=1e-5)
    qi, ri = fx.divmod(fx.array([7, -7], dtype=fx.int32), 2)
    assert (qi.tolist(), ri.tolist(), qi.dtype) == ([3, -4], [1, 1], fx.int32)
    # Only the remainder carries a derivative: d r / d y = -floor(x / y).
    g = fx.grad(lambda b: fx.divmod(fx.array(x), b)[1].sum())(fx.array(y))
    assert_close(g, -nq.sum(axis=0), rtol=1e-5)
    with pytest.raises(ValueError, match="divmod"):
        fx.divmod(fx.array([1.0, 2.0]), fx.array([1.0, 2.0, 3.0]))


def test_logical_and_bitwise_ops():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    assert fx.logical_and(fx.array(a), fx.array(b)).tolist() == (a & b).tolist()
    assert fx.logical_or(fx.array(a), fx.array(b)).tolist() == (a | b).tolist()
    x, y = np.array([5, 12], np.uint8), np.array([3, 10], np.uint8)
    for name, f in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor), ("left_shift", np.left_shift),
                    ("right_shift", np.right_shift)]:
        np.testing.assert_array_equal(np.array(getattr(fx, name)(fx.array(x), fx.array(y)) ), f(x, y))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "bfloat16", "float64"])
def test_dtype_promotion_and_results(dtype):
    a = fx.array([1, 2, 3], dtype=getattr(fx, dtype))
    r = a + a
    assert r.dtype == getattr(fx, dtype)
    assert np.array(r).tolist() == [2, 4, 6]


def test_promotion_table_samples():
    assert (fx.array([1], dtype=fx.int8) + fx.array([1], dtype=fx.uint8)).dtype == fx.int16
    assert (fx.array([1], dtype=fx.int32) + fx.array([1.0], dtype=fx.float16)).dtype == fx.float16
    assert (fx.array([1.0], dtype=fx.float16) + fx.array([1.0], dtype=fx.bfloat16)).dtype == fx.float32


def test_where_clip_nan_to_num():
    c = fx.array([True, False, True])
    assert fx.where(c, fx.array([1, 2, 3]), 0).tolist() == [1, 0, 3]
    assert fx.clip(fx.array([-2, 0, 5]), -1, 3).tolist() == [-1, 0, 3]
    assert fx.clip(fx.array([-2.0, 5.0]), None, 1.0).tolist() == [-2, 1]
    x = fx.array([np.nan, np.inf, -np.inf, 1.0])
    assert fx.nan_to_num(x, posinf=9.0, neginf=-9.0).tolist() == [0, 9, -9, 1]


REDUCTIONS = ["sum", "prod", "mean", "max", "min", "all", "any"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims, rng):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
    want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
    got = getattr(fx, name)(fx.array(x), axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want)
    assert_close(got, want, rtol=1e-4)
    got_m = getattr(fx.array(x), name)(axis=axis, keepdims=keepdims)
    assert_close(got_m, want, rtol=1e-4)


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(ddof, rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    assert_close(fx.var(fx.array(x), axis=0, ddof=ddof), x.var(axis=0, ddof=ddof), rtol=1e-4)
    assert_close(fx.std(fx.array(x), ddof=ddof), x.std(ddof=ddof), rtol=1e-4)
    assert_close(fx.array(x).std(axis=1), x.std(axis=1), rtol=1e-4)


def test_arg_reductions_and_logsumexp(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    a = fx.array(x)
    assert fx.argmax(a).item() == np.argmax(x)
    assert fx.argmin(a, axis=1).tolist() == np.argmin(x, axis=1).tolist()
    assert a.argmax(axis=0, keepdims=True).shape == (1, 5)
    lse = np.log(np.exp(x).sum(axis=1))
    assert_close(fx.logsumexp(a, axis=1), lse, rtol=1e-5)
    sm = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
    assert_close(fx.softmax(a, axis=-1), sm, rtol=1e-5)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_scans(name, rng):
    x = rng.uniform(0.5, 1.5, size=(3, 4)).astype(np.float32)
    ref = {
        "cumsum": np.cumsum,
        "cumprod": np.cumprod,
        "cummax": np.maximum.accumulate,
        "cummin": np.minimum.accumulate,
    }[name]
    assert_close(getattr(fx, name)(fx.array(x), axis=1), ref(x, axis=1), rtol=1e-5)
    assert_close(getattr(fx, name)(fx.array(x)), ref(x.reshape(-1), axis=0), rtol=1e-4)
    rev = getattr(fx, name)(fx.array(x), axis=0, reverse=True)
    assert_close(rev, ref(x[::-1], axis=0)[::-1], rtol=1e-5)
    excl = fx.cumsum(fx.array([1, 2, 3]), inclusive=False)
    assert excl.tolist() == [0, 1, 3]


def test_shape_ops():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = fx.array(x)
    assert fx.reshape(a, (4, -1)).shape == (4, 6)
    assert a.reshape(6, 4).shape == (6, 4)
    assert fx.flatten(a).shape == (24,)
    assert fx.flatten(a, 1).shape == (2, 12)
    assert fx.unflatten(fx.flatten(a), 0, (2, 12)).shape == (2, 12)
    assert fx.squeeze(fx.zeros((1, 3, 1))).shape == (3,)
    assert fx.squeeze(fx.zeros((1, 3, 1)), axis=0).shape == (3, 1)
    assert fx.expand_dims(a, (0, -1)).shape == (1, 2, 3, 4, 1)
    assert_close(fx.transpose(a, (2, 0, 1)), x.transpose(2, 0, 1))
    assert_close(a.transpose(1, 0, 2), x.transpose(1, 0, 2))
    assert_close(fx.swapaxes(a, 0, 2), x.swapaxes(0, 2))
    assert_close(fx.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1))
    assert fx.broadcast_to(fx.array([1, 2]), (3, 2)).tolist() == [[1, 2]] * 3
    b1, b2 = fx.broadcast_arrays(fx.zeros((3, 1)), fx.zeros((4,)))
    assert b1.shape == b2.shape == (3, 4)


def test_join_and_split():
    x = np.arange(12).reshape(3, 4).astype(np.int32)
    a = fx.array(x)
    assert_close(fx.concatenate([a, a], axis=1), np.concatenate([x, x], axis=1))
    assert fx.concatenate([a, a], axis=None).shape == (24,)
    assert_close(fx.stack([a, a], axis=1), np.stack([x, x], axis=1))
    parts = fx.split(a, 2, axis=1)
    assert [p.shape for p in parts] == [(3, 2), (3, 2)]
    parts = fx.split(a, [1, 3], axis=1)
    assert [p.tolist() for p in parts] == [p.tolist() for p in np.split(x, [1, 3], axis=1)]
    assert_close(fx.tile(a, (2, 1)), np.tile(x, (2, 1)))
    assert_close(fx.repeat(a, 2, axis=0), np.repeat(x, 2, axis=0))
    assert_close(fx.repeat(a, 2), np.repeat(x, 2))
    assert_close(fx.pad(a, 1), np.pad(x, 1))
    assert_close(fx.pad(a, ((0, 1), (2, 0)), constant_values=9), np.pad(x, ((0, 1), (2, 0)), constant_values=9))
    assert_close(fx.pad(a, (1, 2), mode="edge"), np.pad(x, (1, 2), mode="edge"))
    assert_close(fx.roll(a, 1), np.roll(x, 1))
    assert_close(fx.roll(a, (1, -1), axis=(0, 1)), np.roll(x, (1, -1), axis=(0, 1)))


def test_take_and_triangles():
    x = np.arange(20).reshape(4, 5).astype(np.float32)
    a = fx.array(x)
    assert_close(fx.take(a, fx.array([3, 0]), axis=1), np.take(x, [3, 0], axis=1))
    assert_close(fx.take(a, [1, 7]), np.take(x, [1, 7]))
    idx = np.array([[0, 4], [1, 2], [3, 3], [0, 0]])
    assert_close(fx.take_along_axis(a, fx.array(idx), axis=1), np.take_along_axis(x, idx, axis=1))
    put = fx.put_along_axis(a, fx.array(idx), fx.array(-1.0), axis=1)
    x2 = x.copy()
    np.put_along_axis(x2, idx, -1.0, axis=1)
    assert_close(put, x2)
    assert_close(fx.diagonal(a, 1), np.diagonal(x, 1))
    assert_close(fx.diag(fx.array([1, 2])), np.diag([1, 2]))
    assert_close(fx.diag(a, -1), np.diag(x, -1))
    assert_close(fx.tril(a), np.tril(x))
    assert_close(fx.triu(a, 1), np.triu(x, 1))


def test_meshgrid():
    xs, ys = fx.meshgrid(fx.arange(3), fx.arange(2))
    nx, ny = np.meshgrid(np.arange(3), np.arange(2))
    assert_close(xs, nx)
    assert_close(ys, ny)
    xs, ys = fx.meshgrid(fx.arange(3), fx.arange(2), indexing="ij")
    assert xs.shape == (3, 2)


def test_sorting(rng):
    x = rng.standard_normal((3, 6)).astype(np.float32)
    a = fx.array(x)
    assert_close(fx.sort(a), np.sort(x))
    assert_close(fx.sort(a, axis=0), np.sort(x, axis=0))
    assert_close(fx.sort(a, axis=None), np.sort(x, axis=None))
    assert np.array(fx.argsort(a)).tolist() == np.argsort(x, kind="stable").tolist()
    p = np.array(fx.partition(a, 2))
    assert (p[:, :2].max(axis=1) <= p[:, 2]).all()
    assert_close(np.sort(p, axis=1), np.sort(x, axis=1))
    ap = np.array(fx.argpartition(a, 2))
    assert_close(np.take_along_axis(x, ap, 1)[:, 2], np.sort(x, axis=1)[:, 2])
    top = np.array(fx.topk(a, 2))
    assert_close(np.sort(top, axis=1), np.sort(x, axis=1)[:, -2:])


def test_linear_algebra(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    tol = dict(rtol=1e-4, atol=1e-4)
    assert_close(fx.matmul(fx.array(x), fx.array(y)), x @ y, **tol)
    assert_close(fx.addmm(fx.array(c), fx.array(x), fx.array(y), alpha=2.0, beta=0.5), 2 * (x @ y) + 0.5 * c, **tol)
    v = rng.standard_normal((4,)).astype(np.float32)
    assert_close(fx.inner(fx.array(x), fx.array(v)), np.inner(x, v), **tol)
    assert_close(fx.outer(fx.array(v), fx.array(c)), np.outer(v, c), **tol)
    assert_close(fx.tensordot(fx.array(x), fx.array(y), axes=1), np.tensordot(x, y, axes=1), **tol)
    assert_close(
        fx.tensordot(fx.array(x), fx.array(x), axes=([1, 2], [1, 2])),
        np.tensordot(x, x, axes=([1, 2], [1, 2])),
        **tol,
    )
    assert_close(fx.einsum("bij,jk->bik", fx.array(x), fx.array(y)), np.einsum("bij,jk->bik", x, y), **tol)
    k1, k2 = np.arange(4).reshape(2, 2), np.ones((2, 3))
    assert_close(fx.kron(fx.array(k1), fx.array(k2)), np.kron(k1, k2))


def _conv2d_ref(x, w, stride, pad):
    n, h, wd, ci = x.shape
    co, kh, kw, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ho = (h + 2 * pad - kh) // stride + 1
    wo = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, ho, wo, co), np.float32)
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,ohwc->no", patch, w)
    return out


def test_convolutions(rng):
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    got = fx.conv2d(fx.array(x), fx.array(w), stride=2, padding=1)
    assert_close(got, _conv2d_ref(x, w, 2, 1), rtol=1e-4, atol=1e-4)
    x1 = rng.standard_normal((1, 8, 2)).astype(np.float32)
    w1 = rng.standard_normal((3, 3, 2)).astype(np.float32)
    ref1 = _conv2d_ref(x1[:, :, None, :], w1[:, :, None, :], 1, 0)[:, :, 0, :]
    assert_close(fx.conv1d(fx.array(x1), fx.array(w1)), ref1, rtol=1e-4, atol=1e-4)


def test_closeness():
    a = fx.array([1.0, 2.0, np.nan])
    b = fx.array([1.0 + 1e-7, 2.1, np.nan])
    assert fx.isclose(a, b).tolist() == [True, False, False]
    assert fx.isclose(a, b, equal_nan=True).tolist() == [True, False, True]
    assert fx.allclose(a[:1], b[:1]).item()
    assert not fx.allclose(a, b).item()
    assert fx.array_equal(fx.array([1, 2]), fx.array([1.0, 2.0])).item()
    assert not fx.array_equal(a, a).item()
    assert fx.array_equal(a, a, equal_nan=True).item()


def test_stop_gradient_and_view():
    x = fx.array([1.0, 2.0])
    assert fx.stop_gradient(x).tolist() == [1, 2]
    assert fx.view(fx.array([1.0], dtype=fx.float32), fx.int32).item() == 1065353216
    assert fx.astype(x, fx.int8).dtype == fx.int8


def test_stream_keyword_accepted():
    s = fx.new_stream(fx.cpu)
    assert fx.add(1, 2, stream=s).item() == 3
    assert fx.sum(fx.ones(3), axis=0, stream=fx.cpu).item() == 3
    assert fx.zeros((2,), stream=fx.default_device()).shape == (2,)


# ------------------------------------------------------------------ errors


def test_errors_map_to_python_exceptions():
    with pytest.raises(ValueError, match="matmul"):
        fx.matmul(fx.ones((2, 3)), fx.ones((2, 3)))
    with pytest.raises(ValueError):
        fx.add(fx.ones((2, 3)), fx.ones((4,)))
    with pytest.raises(ValueError):
        fx.reshape(fx.ones((6,)), (4, 2))
    with pytest.raises(ValueError):
        fx.sum(fx.ones((2,)), axis=3)
    with pytest.raises(TypeError):
        fx.bitwise_and(fx.ones((2,)), fx.ones((2,)))
    with pytest.raises(ValueError):
        fx.arange(0, 1, 0)
    with pytest.raises(ValueError):
        fx.zeros((-1, 2))
    with pytest.raises(ValueError):
        fx.split(fx.ones((5,)), 2)
    with pytest.raises(ValueError):
        fx.concatenate([])
    with pytest.raises(ValueError):
        fx.topk(fx.ones((3,)), 5)
    with pytest.raises(TypeError):
        fx.zeros((2,), dtype=3.5)
    with pytest.raises(TypeError):
        fx.add(fx.ones(2), "a")


def test_out_of_range_take_fails_without_crashing():
    a = fx.take(fx.arange(3), fx.array([7]))
    with pytest.raises(Exception):
        fx.eval(a)
    # the process is fine and later work succeeds
    assert fx.arange(3).sum().item() == 3


def test_python_ints_beyond_int32_keep_their_value_with_float_arrays():
    assert (fx.ones((2,)) + 3_000_000_000).tolist() == [3e9, 3e9]
    assert fx.compile(lambda x: x * 3_000_000_000)(fx.ones((1,))).tolist() == [3e9]
