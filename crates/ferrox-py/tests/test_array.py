"""ferrox.core.array against numpy: construction, properties, conversion,
operators, indexing."""

import copy

import numpy as np
import pytest

import ferrox.core as fx
from conftest import assert_close


# ----------------------------------------------------------- construction


def test_scalars_and_lists_take_mlx_dtypes():
    assert fx.array(1).dtype == fx.int32
    assert fx.array(1.5).dtype == fx.float32
    assert fx.array(True).dtype == fx.bool_
    assert fx.array(1 + 2j).dtype == fx.complex64
    assert fx.array([1, 2, 3]).dtype == fx.int32
    assert fx.array([1, 2.5]).dtype == fx.float32
    assert fx.array([[True], [False]]).dtype == fx.bool_
    assert fx.array([2**40]).dtype == fx.int64
    assert fx.array([]).shape == (0,)
    assert fx.array([[1, 2], [3, 4]]).shape == (2, 2)
    assert fx.array((1, 2)).tolist() == [1, 2]


def test_dtype_keyword():
    a = fx.array([1, 2], dtype=fx.float16)
    assert a.dtype == fx.float16
    assert fx.array(3, dtype=fx.uint8).dtype == fx.uint8
    assert fx.array([1.5], dtype=fx.float64).dtype == fx.float64
    assert fx.array([1, 2], dtype="int64").dtype == fx.int64


@pytest.mark.parametrize(
    "np_dtype,fx_dtype",
    [
        (np.bool_, fx.bool_),
        (np.uint8, fx.uint8),
        (np.uint16, fx.uint16),
        (np.uint32, fx.uint32),
        (np.uint64, fx.uint64),
        (np.int8, fx.int8),
        (np.int16, fx.int16),
        (np.int32, fx.int32),
        (np.int64, fx.int64),
        (np.float16, fx.float16),
        (np.float32, fx.float32),
        (np.complex64, fx.complex64),
    ],
)
def test_numpy_roundtrip_keeps_dtype(np_dtype, fx_dtype):
    x = (np.arange(12) % 3).reshape(3, 4).astype(np_dtype)
    a = fx.array(x)
    assert a.dtype == fx_dtype
    assert a.shape == (3, 4)
    back = np.array(a)
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back, x)


def test_numpy_float64_becomes_float32_unless_asked():
    x = np.linspace(0, 1, 5)
    assert fx.array(x).dtype == fx.float32
    a = fx.array(x, dtype=fx.float64)
    assert a.dtype == fx.float64
    np.testing.assert_array_equal(np.array(a), x)


def test_non_contiguous_numpy_input():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::-3]
    assert_close(fx.array(x), x)


def test_bfloat16_converts_to_float32_for_numpy():
    a = fx.array([1.0, 2.5], dtype=fx.bfloat16)
    n = np.array(a)
    assert n.dtype == np.float32
    np.testing.assert_array_equal(n, [1.0, 2.5])


def test_list_of_arrays_stacks():
    a = fx.array([fx.array([1, 2]), fx.array([3, 4])])
    assert a.shape == (2, 2)
    assert a.tolist() == [[1, 2], [3, 4]]


def test_bad_inputs_raise():
    with pytest.raises((ValueError, TypeError)):
        fx.array([[1, 2], [3]])
    with pytest.raises(TypeError):
        fx.array(object())
    with pytest.raises(TypeError):
        fx.array([1], dtype="nope")


# -------------------------------------------------------------- properties


def test_properties():
    a = fx.zeros((2, 3, 4), dtype=fx.float16)
    assert a.shape == (2, 3, 4)
    assert a.ndim == 3
    assert a.size == 24
    assert a.itemsize == 2
    assert a.nbytes == 48
    assert a.dtype == fx.float16
    assert a.T.shape == (4, 3, 2)
    assert len(a) == 2


def test_item_tolist_and_python_conversions():
    assert fx.array(3).item() == 3
    assert isinstance(fx.array(3).item(), int)
    assert fx.array(2.5).item() == 2.5
    assert fx.array(True).item() is True
    assert fx.array([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert float(fx.array(1.5)) == 1.5
    assert int(fx.array(7)) == 7
    assert [1, 2, 3][fx.array(1)] == 2
    with pytest.raises(ValueError):
        fx.array([1, 2]).item()


def test_repr_like_mlx():
    assert repr(fx.array([1, 2])) == "array([1, 2], dtype=int32)"
    assert repr(fx.array(True)) == "array(True, dtype=bool)"
    assert "dtype=float32" in repr(fx.ones((2, 2)))
    assert repr(fx.float32) == "ferrox.core.float32"


def test_astype():
    a = fx.array([1.7, -2.2])
    assert a.astype(fx.int32).tolist() == [1, -2]
    assert a.astype(fx.bool_).dtype == fx.bool_


def test_bool_len_iter():
    assert bool(fx.array([1]))
    assert not bool(fx.array(0.0))
    with pytest.raises(ValueError):
        bool(fx.array([1, 2]))
    with pytest.raises(TypeError):
        len(fx.array(1))
    rows = list(fx.array([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        iter(fx.array(1))


def test_copy_and_hash():
    a = fx.array([1, 2])
    b = copy.copy(a)
    b[0] = 5
    assert a.tolist() == [1, 2]
    assert b.tolist() == [5, 2]
    assert copy.deepcopy(a).tolist() == [1, 2]
    assert len({a, b}) == 2


# --------------------------------------------------------------- operators

BINARY = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("truediv", lambda a, b: a / b),
    ("floordiv", lambda a, b: a // b),
    ("mod", lambda a, b: a % b),
    ("pow", lambda a, b: a ** b),
    ("eq", lambda a, b: a == b),
    ("ne", lambda a, b: a != b),
    ("lt", lambda a, b: a < b),
    ("le", lambda a, b: a <= b),
    ("gt", lambda a, b: a > b),
    ("ge", lambda a, b: a >= b),
]


@pytest.mark.parametrize("name,op", BINARY)
def test_binary_operators_broadcast_like_numpy(name, op, rng):
    x = rng.uniform(0.5, 3, size=(3, 1, 4)).astype(np.float32)
    y = rng.uniform(0.5, 3, size=(2, 1)).astype(np.float32)
    assert_close(op(fx.array(x), fx.array(y)), op(x, y), rtol=1e-4)
    # reflected: python scalar on the left
    assert_close(op(2.0, fx.array(x)), op(np.float32(2.0), x), rtol=1e-4)
    assert_close(op(fx.array(x), 2), op(x, np.float32(2)), rtol=1e-4)


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a & b,
        lambda a, b: a | b,
        lambda a, b: a ^ b,
        lambda a, b: a << b,
        lambda a, b: a >> b,
    ],
)
def test_bitwise_operators(op):
    x = np.array([[1, 6, 12], [7, 0, 3]], dtype=np.int32)
    y = np.array([3, 1, 2], dtype=np.int32)
    np.testing.assert_array_equal(np.array(op(fx.array(x), fx.array(y))), op(x, y))


def test_bool_and_or_invert_are_logical():
    a = fx.array([True, False, True])
    b = fx.array([True, True, False])
    assert (a & b).tolist() == [True, False, False]
    assert (a | b).tolist() == [True, True, True]
    assert (~a).tolist() == [False, True, False]
    assert (~fx.array([0, 1], dtype=fx.uint8)).tolist() == [255, 254]


def test_unary_operators():
    a = fx.array([-1.5, 2.0])
    assert (-a).tolist() == [1.5, -2.0]
    assert (+a).tolist() == [-1.5, 2.0]
    assert abs(a).tolist() == [1.5, 2.0]


def test_matmul_operator(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    assert_close(fx.array(x) @ fx.array(y), x @ y, rtol=1e-4, atol=1e-5)
    assert_close(x @ fx.array(y), x @ y, rtol=1e-4, atol=1e-5)


def test_inplace_operators_rebind_and_keep_dtype():
    a = fx.array([1, 2, 3])
    b = a
    a += 1
    assert a.tolist() == [2, 3, 4]
    assert b is a
    a *= 2
    a -= 1
    a //= 2
    assert a.tolist() == [1, 2, 3]
    h = fx.ones((2,), dtype=fx.float16)
    h += 1.5
    assert h.dtype == fx.float16
    m = fx.eye(2)
    m @= fx.full((2, 2), 2.0)
    assert m.tolist() == [[2, 2], [2, 2]]


def test_python_scalars_are_weak():
    h = fx.ones((3,), dtype=fx.float16)
    assert (h * 2.0).dtype == fx.float16
    assert (2.0 * h).dtype == fx.float16
    assert (fx.ones(2, dtype=fx.uint8) + 1).dtype == fx.uint8
    assert (fx.ones(2, dtype=fx.int32) + 1.5).dtype == fx.float32
    assert (fx.ones(2, dtype=fx.bfloat16) - 1).dtype == fx.bfloat16
    # arrays are not weak
    assert (h * fx.array(2.0)).dtype == fx.float32


def test_comparison_with_unrelated_object():
    a = fx.array([1, 2])
    assert (a == None) is False  # noqa: E711
    assert (a != "x") is True


# ---------------------------------------------------------------- indexing

INDICES = [
    1,
    -1,
    slice(None),
    slice(1, 3),
    slice(None, None, -1),
    slice(None, None, 2),
    slice(-3, None, -2),
    (1, 2),
    (slice(None), 1),
    (Ellipsis, 1),
    (1, Ellipsis),
    (None, 1),
    (slice(None), None, slice(1, 3)),
    (Ellipsis, None),
    ([0, 2],),
    ([2, 0, 2],),
    (slice(None), [1, 0]),
    (1, [0, 3]),
    ([0, 1], [1, 2]),
    ([[0, 1], [2, 0]],),
    (slice(None), [0, 1], slice(None)),
    ([0, 1], slice(None), [1, 2]),
    (None, [1, 0], Ellipsis),
    (np.array([1, -1]),),
    np.int64(2),
    (np.int32(1), slice(None), np.int64(-1)),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_like_numpy(index):
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    got = fx.array(x)[index]
    want = x[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got), want)


def test_getitem_with_ferrox_index_array():
    x = np.arange(10, dtype=np.float32)
    i = fx.array([3, 1, 4])
    np.testing.assert_array_equal(np.array(fx.array(x)[i]), x[[3, 1, 4]])


def test_getitem_errors():
    a = fx.zeros((3, 4))
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a[..., ...]
    with pytest.raises(IndexError):
        a["x"]
    with pytest.raises(TypeError):
        a[fx.array([0.5])]
    with pytest.raises(ValueError):
        a[::0]


SET_INDICES = [
    1,
    -1,
    slice(1, 3),
    slice(None, None, -2),
    (slice(None), 2),
    (Ellipsis, 0),
    (1, slice(1, 4)),
    ([0, 2],),
    (slice(None), [0, 3]),
    ([0, 2], [1, 3]),
]


@pytest.mark.parametrize("index", SET_INDICES, ids=repr)
def test_setitem_like_numpy(index):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    a = fx.array(x)
    a[index] = -1.0
    x[index] = -1.0
    np.testing.assert_array_equal(np.array(a), x)
    # broadcast array values
    x2 = np.arange(20, dtype=np.float32).reshape(4, 5)
    a2 = fx.array(x2)
    v = np.full(x2[index].shape[-1:] if x2[index].ndim else (), 7, np.float32)
    a2[index] = fx.array(v)
    x2[index] = v
    np.testing.assert_array_equal(np.array(a2), x2)


def test_setitem_casts_to_the_array_dtype():
    a = fx.zeros((3,), dtype=fx.int32)
    a[1] = 2.7
    assert a.dtype == fx.int32
    assert a.tolist() == [0, 2, 0]


def test_setitem_with_a_boolean_mask_like_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    for mask in [x > 0, (x > 0)[:, 0], np.zeros((4, 5), bool)]:
        a, want = fx.array(x), x.copy()
        n = int(mask.sum()) * (5 if mask.ndim == 1 else 1)
        values = np.arange(n, dtype=np.float32).reshape((-1, 5) if mask.ndim == 1 else (-1,))
        a[fx.array(mask)] = fx.array(values)
        want[mask] = values
        np.testing.assert_array_equal(np.array(a), want)
        b = fx.array(x)
        b[mask] = 3.0  # numpy masks and scalars too
        want = x.copy()
        want[mask] = 3.0
        np.testing.assert_array_equal(np.array(b), want)
    with pytest.raises(ValueError):
        fx.array(x)[fx.array([True, False])] = 1.0
    too_few = fx.zeros((3,))
    too_few[fx.array([True, True, True])] = fx.array([1.0, 2.0])
    with pytest.raises(IndexError):
        fx.eval(too_few)


def test_boolean_mask_assignment_has_gradients_and_vmaps():
    mask = fx.array([True, False, True, False])

    def masked_set(src):
        dst = fx.zeros(4)
        dst[mask] = src
        return dst

    _, (t,) = fx.jvp(masked_set, [fx.ones(2)], [fx.ones(2)])
    assert t.tolist() == [1.0, 0.0, 1.0, 0.0]
    g = fx.grad(lambda s: (masked_set(s) * fx.arange(4.0)).sum())(fx.ones(2))
    assert g.tolist() == [0.0, 2.0]

    def scatter(x, m, src):
        x[m] = src
        return x

    a = fx.array([[10, 20, 30, 40], [50, 60, 70, 80]])
    m = fx.array([[False, True, True, True], [True, False, True, True]])
    src = fx.array([[1, 2, 3], [4, 5, 6]])
    out = fx.vmap(scatter, in_axes=(0, 0, 0))(a, m, src)
    assert out.tolist() == [[10, 1, 2, 3], [4, 60, 5, 6]]


def test_at_updates_apply_every_repeat():
    a = fx.zeros((4,))
    idx = fx.array([1, 1, 3])
    assert a.at[idx].add(1.0).tolist() == [0, 2, 0, 1]
    assert a.tolist() == [0, 0, 0, 0]
    b = fx.ones((2, 3))
    assert b.at[0, [0, 2]].multiply(5).tolist() == [[5, 1, 5], [1, 1, 1]]
    assert b.at[1].set(0).tolist() == [[1, 1, 1], [0, 0, 0]]
    assert fx.array([1, 5, 2]).at[[0, 1]].maximum(3).tolist() == [3, 5, 2]


def test_numpy_views_are_zero_copy_and_read_only():
    x = fx.arange(12, dtype=fx.float32).reshape(3, 4)
    n = np.asarray(x)
    assert n.dtype == np.float32 and n.shape == (3, 4)
    assert not n.flags.writeable
    assert np.shares_memory(n, np.asarray(x)), "two exports, one storage"
    m = memoryview(x)
    assert m.readonly and m.format == "f" and m.shape == (3, 4)
    with pytest.raises(ValueError):
        n[0, 0] = 1.0
    x += 1  # rebinds x; the exported view keeps the bytes it points to
    assert n[0, 0] == 0.0 and np.asarray(x)[0, 0] == 1.0


def test_strided_views_export_with_their_strides():
    x = fx.arange(6, dtype=fx.int32).reshape(2, 3)
    t = np.asarray(x.T)
    assert t.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert t.strides == (4, 12)
    b = np.asarray(fx.broadcast_to(fx.array([1.0, 2.0]), (3, 2)))
    assert b.strides == (0, 4) and b.tolist() == [[1.0, 2.0]] * 3
    r = np.asarray(fx.arange(4, dtype=fx.float32)[::-1])
    assert r.tolist() == [3.0, 2.0, 1.0, 0.0]


def test_numpy_copies_when_asked_or_needed():
    h = fx.array([1.5, 2.5], dtype=fx.bfloat16)
    assert np.asarray(h).dtype == np.float32
    assert np.asarray(h).tolist() == [1.5, 2.5]
    with pytest.raises(ValueError):
        h.__array__(copy=False)
    with pytest.raises(BufferError):
        memoryview(h)
    y = fx.array([1, 2], dtype=fx.float32)
    assert np.array(y).flags.writeable
    assert np.asarray(y, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        y.__array__(dtype=np.float64, copy=False)
    for dt, want in [(fx.bool_, np.bool_), (fx.float16, np.float16), (fx.complex64, np.complex64)]:
        assert np.asarray(fx.zeros((2,), dtype=dt)).dtype == want


def test_numpy_views_outlive_the_array_and_cover_edge_shapes():
    import gc

    x = fx.arange(1000, dtype=fx.float32)
    n = np.asarray(x)
    del x
    gc.collect()
    assert n[999] == 999.0  # the view keeps the storage alive
    s = np.asarray(fx.array(3.5))
    assert s.shape == () and s == 3.5
    assert np.asarray(fx.zeros((0, 3))).shape == (0, 3)
    assert np.asarray(fx.zeros((2, 0)).T).shape == (0, 2)
    assert memoryview(fx.array([True, False])).tolist() == [True, False]
    assert np.asarray(fx.broadcast_to(fx.array(1.0), (2, 3))).strides == (0, 0)
