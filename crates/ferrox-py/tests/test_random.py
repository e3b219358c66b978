"""ferrox.core.random: mlx.core.random's API, bounds, dtypes, keys,
reproducibility, threads and compile."""

import importlib
import inspect
import threading

import numpy as np
import pytest

import ferrox.core as fx
from conftest import TIMEOUT, run_threads


def test_the_submodule_imports_every_way():
    from ferrox.core import random as r1

    r2 = importlib.import_module("ferrox.core.random")
    assert r1 is fx.random and r2 is fx.random
    assert fx.random.__name__ == "ferrox.core.random"
    for name in [
        "key", "split", "seed", "bits", "uniform", "normal", "randint",
        "bernoulli", "truncated_normal", "gumbel", "categorical", "permutation",
        "multivariate_normal",
    ]:
        assert callable(getattr(fx.random, name)), name


def test_signatures_have_mlx_names_and_order():
    want = {
        "key": ["seed"],
        "seed": ["seed"],
        "split": ["key", "num", "stream"],
        "bits": ["shape", "width", "key", "stream"],
        "uniform": ["low", "high", "shape", "dtype", "key", "stream"],
        "normal": ["shape", "dtype", "loc", "scale", "key", "stream"],
        "randint": ["low", "high", "shape", "dtype", "key", "stream"],
        "bernoulli": ["p", "shape", "key", "stream"],
        "truncated_normal": ["lower", "upper", "shape", "dtype", "key", "stream"],
        "gumbel": ["shape", "dtype", "key", "stream"],
        "categorical": ["logits", "axis", "shape", "num_samples", "key", "stream"],
        "permutation": ["x", "axis", "key", "stream"],
        "multivariate_normal": ["mean", "cov", "shape", "dtype", "key", "stream"],
    }
    for name, params in want.items():
        sig = inspect.signature(getattr(fx.random, name))
        assert list(sig.parameters) == params, name
    # Positional use in mlx's order.
    k = fx.random.key(0)
    a = fx.random.uniform(-1, 1, [4], fx.float16, k)
    assert a.shape == (4,) and a.dtype == fx.float16
    assert fx.random.normal([3], fx.float32, 1.0, 2.0, k).shape == (3,)


def test_keys_and_split():
    k = fx.random.key(0)
    assert k.dtype == fx.uint32 and k.shape == (2,)
    assert fx.random.key(2**32 + 5).tolist() == [1, 5]
    ks = fx.random.split(k)
    assert ks.shape == (2, 2) and ks.dtype == fx.uint32
    assert fx.random.split(k, num=5).shape == (5, 2)
    # mlx.core.random.split and mlx::core::random::bits for key(0): the
    # stream matches MLX's.
    assert ks.tolist() == [[4146024105, 967050713], [2718843009, 1272950319]]
    assert fx.random.bits([2], key=k).tolist() == [928981903, 3453687069]
    assert fx.random.bits([3], key=k).tolist() == [4146024105, 1351547692, 2718843009]
    assert fx.random.split(k, 3).tolist() == [
        [2467461003, 428148500],
        [3186719485, 3840466878],
        [2562233961, 1946702221],
    ]


def test_bits_widths_and_dtypes():
    k = fx.random.key(1)
    for width, dt in [(1, fx.uint8), (2, fx.uint16), (4, fx.uint32), (8, fx.uint64)]:
        b = fx.random.bits((3, 4), width=width, key=k)
        assert b.dtype == dt and b.shape == (3, 4)
    assert fx.random.bits(key=k).shape == ()
    with pytest.raises(ValueError, match="width"):
        fx.random.bits([2], width=3, key=k)


def test_uniform_bounds_dtypes_and_shapes():
    k = fx.random.key(2)
    u = np.array(fx.random.uniform(shape=[10000], key=k))
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.02
    for dt, lo, hi in [
        (fx.float16, 1000, 1001),
        (fx.bfloat16, -2, 3),
        (fx.float32, 1.0, 2.0),
        (fx.float64, -1e-3, 1e-3),
    ]:
        x = fx.random.uniform(lo, hi, (5000,), dtype=dt, key=k)
        assert x.dtype == dt
        v = np.array(x.astype(fx.float64))
        # As in MLX, a sample is drawn in float32 and then rounded to the
        # dtype, so float16/bfloat16 may round up to `hi` itself.
        below_hi = v.max() <= hi if dt in (fx.float16, fx.bfloat16) else v.max() < hi
        assert v.min() >= lo and below_hi, (dt, v.min(), v.max())
    lo = fx.array([0.0, 10.0])
    x = np.array(fx.random.uniform(lo, lo + 1, (100, 2), key=k))
    assert ((x >= [0, 10]) & (x < [1, 11])).all()
    # Array bounds alone set the shape.
    assert fx.random.uniform(fx.zeros(3), 1, key=k).shape == (3,)
    assert fx.random.uniform(key=k).shape == ()


def test_normal_statistics_and_dtypes():
    k = fx.random.key(3)
    z = np.array(fx.random.normal([200000], key=k))
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    y = np.array(fx.random.normal([200000], loc=3.0, scale=0.5, key=k))
    assert abs(y.mean() - 3) < 0.01 and abs(y.std() - 0.5) < 0.01
    for dt in [fx.float16, fx.bfloat16, fx.float32, fx.float64]:
        assert fx.random.normal((2, 3), dtype=dt, key=k).dtype == dt


def test_randint_range_dtypes_and_coverage():
    k = fx.random.key(4)
    r = np.array(fx.random.randint(-3, 7, [20000], key=k))
    assert r.dtype == np.int32
    assert set(np.unique(r).tolist()) == set(range(-3, 7))
    u8 = fx.random.randint(0, 256, [5000], dtype=fx.uint8, key=k)
    assert u8.dtype == fx.uint8 and len(np.unique(np.array(u8))) == 256
    big = np.array(fx.random.randint(0, 2**40, [1000], dtype=fx.int64, key=k))
    assert big.min() >= 0 and big.max() < 2**40 and big.max() > 2**32
    lo, hi = fx.array([0, 100]), fx.array([2, 103])
    v = np.array(fx.random.randint(lo, hi, (500, 2), key=k))
    assert ((v >= [0, 100]) & (v < [2, 103])).all()


def test_bernoulli_truncated_normal_gumbel():
    k = fx.random.key(5)
    b = np.array(fx.random.bernoulli(0.25, [100000], key=k))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.25) < 0.01
    assert fx.random.bernoulli(key=k).shape == ()
    p = fx.array([0.0, 1.0])
    assert fx.random.bernoulli(p, key=k).tolist() == [False, True]
    t = np.array(fx.random.truncated_normal(-0.5, 1.5, [20000], key=k))
    assert t.min() >= -0.5 and t.max() <= 1.5
    assert fx.random.truncated_normal(fx.zeros(4), 1.0, key=k).shape == (4,)
    g = np.array(fx.random.gumbel([100000], key=k))
    assert np.isfinite(g).all() and abs(g.mean() - 0.5772) < 0.02


def test_categorical_matches_softmax():
    k = fx.random.key(6)
    logits = np.array([0.5, 1.5, -0.5, 0.0], dtype=np.float32)
    s = np.array(fx.random.categorical(fx.array(logits), num_samples=50000, key=k))
    assert s.shape == (50000,) and s.dtype == np.uint32
    freq = np.bincount(s, minlength=4) / s.size
    p = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(freq, p, atol=0.015)
    l2 = fx.array([[0.0, -np.inf], [-np.inf, 0.0]])
    assert fx.random.categorical(l2, key=k).tolist() == [0, 1]
    assert fx.random.categorical(l2, axis=0, shape=[3, 2], key=k).shape == (3, 2)
    with pytest.raises(ValueError):
        fx.random.categorical(l2, shape=[2], num_samples=2, key=k)


def test_multivariate_normal():
    k = fx.random.key(10)
    mean = np.array([1.0, -1.0], dtype=np.float32)
    cov = np.array([[1.0, 0.4], [0.4, 0.5]], dtype=np.float32)
    x = np.array(fx.random.multivariate_normal(fx.array(mean), fx.array(cov), [100000], key=k))
    assert x.shape == (100000, 2) and x.dtype == np.float32
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.02)
    batched = fx.random.multivariate_normal(fx.zeros((3, 2)), fx.array(cov), key=k)
    assert batched.shape == (3, 2)
    with pytest.raises(ValueError, match="cov"):
        fx.random.multivariate_normal(fx.zeros(2), fx.zeros((3, 3)), key=k)
    with pytest.raises(ValueError, match="semi-definite"):
        bad = fx.array([[1.0, 2.0], [2.0, 1.0]])
        fx.eval(fx.random.multivariate_normal(fx.zeros(2), bad, key=k))


def test_permutation_of_int_and_array():
    k = fx.random.key(7)
    p = np.array(fx.random.permutation(100, key=k))
    assert sorted(p.tolist()) == list(range(100))
    x = fx.arange(12).reshape(3, 4)
    y = np.array(fx.random.permutation(x, axis=1, key=k))
    assert (np.sort(y, axis=1) == np.array(x)).all()
    assert (y[1] == y[0] + 4).all()
    assert sorted(np.array(fx.random.permutation(x, key=k))[:, 0].tolist()) == [0, 4, 8]


def test_same_key_same_numbers_different_keys_differ():
    k1, k2 = fx.random.split(fx.random.key(8))
    a = fx.random.uniform(shape=[16], key=k1).tolist()
    assert a == fx.random.uniform(shape=[16], key=k1).tolist()
    assert a != fx.random.uniform(shape=[16], key=k2).tolist()


def test_seeded_draws_are_mlx_draws():
    # mlx: mx.random.seed(42); mx.random.normal((4,)), then uniform.
    fx.random.seed(42)
    z = fx.random.normal((4,)).tolist()
    want = [-0.5675500631332397, 0.8856308460235596, -0.9320604205131531, 1.4641165733337402]
    assert z == pytest.approx(want, rel=0, abs=0)
    assert fx.random.uniform(shape=[2], key=fx.random.key(0)).tolist() == [
        0.21629545092582703,
        0.8041241765022278,
    ]


def test_seed_makes_default_draws_reproducible():
    fx.random.seed(123)
    a = fx.random.normal([8]).tolist()
    b = fx.random.normal([8]).tolist()
    assert a != b
    fx.random.seed(123)
    assert fx.random.normal([8]).tolist() == a


def test_bad_keys_and_arguments_raise():
    k = fx.random.key(0)
    with pytest.raises(TypeError, match="uint32"):
        fx.random.uniform(shape=[2], key=fx.array([0, 0]))
    with pytest.raises(ValueError, match=r"\[3\]"):
        fx.random.normal([2], key=fx.zeros(3, dtype=fx.uint32))
    with pytest.raises(ValueError, match="shape"):
        fx.random.split(fx.zeros((2, 2), dtype=fx.uint32))
    with pytest.raises(ValueError, match="negative"):
        fx.random.split(k, -1)
    with pytest.raises(ValueError, match="uniform"):
        fx.random.uniform(2, 1, key=k)
    with pytest.raises(TypeError, match="float"):
        fx.random.uniform(shape=[2], dtype=fx.int32, key=k)
    with pytest.raises(TypeError, match="integer"):
        fx.random.randint(0, 5, dtype=fx.float32, key=k)
    with pytest.raises(ValueError, match="randint"):
        fx.random.randint(0, 300, dtype=fx.uint8, key=k)
    with pytest.raises(ValueError, match="bernoulli"):
        fx.random.bernoulli(1.5, key=k)
    with pytest.raises(ValueError, match="axis"):
        fx.random.categorical(fx.zeros(3), axis=2, key=k)
    with pytest.raises(ValueError):
        fx.random.permutation(fx.zeros(3), axis=1, key=k)
    with pytest.raises(ValueError):
        fx.random.key(-1)
    with pytest.raises(ValueError):
        fx.random.key(2**64)
    with pytest.raises(TypeError):
        fx.random.seed(1.5)
    with pytest.raises(TypeError):
        fx.random.key("1")
    assert fx.random.key(np.int64(3)).tolist() == [0, 3]


def test_stream_keyword_is_accepted():
    s = fx.default_stream(fx.default_device())
    k = fx.random.key(0)
    a = fx.random.uniform(shape=[3], key=k, stream=s)
    assert a.tolist() == fx.random.uniform(shape=[3], key=k).tolist()


def test_compiled_function_taking_a_key():
    def f(key, x):
        k1, k2 = fx.random.split(key)
        return x + fx.random.normal(x.shape, key=k1) * fx.random.uniform(shape=x.shape, key=k2)

    cf = fx.compile(f)
    x = fx.ones((32,))
    for s in [0, 1, 2]:
        k = fx.random.key(s)
        assert np.array_equal(np.array(cf(k, x)), np.array(f(k, x)))
    assert np.array(cf(fx.random.key(0), x)).tolist() != np.array(cf(fx.random.key(1), x)).tolist()


def test_compiled_draws_without_a_key_are_fresh_and_follow_seed():
    def f(x):
        return x * fx.random.uniform(shape=x.shape) + fx.random.normal(x.shape)

    for cf in (fx.compile(f), fx.compile(f, inputs=fx.random.state, outputs=fx.random.state)):
        x = fx.ones((16,))
        assert cf(x).tolist() != cf(x).tolist()
        fx.random.seed(7)
        compiled = cf(x).tolist()
        after = fx.random.state[0].tolist()
        fx.random.seed(7)
        assert compiled == f(x).tolist()
        assert after == fx.random.state[0].tolist()


def test_random_state_is_the_threads_default_key():
    state = fx.random.state
    assert len(state) == 1
    fx.random.seed(5)
    assert state[0].tolist() == fx.random.key(5).tolist()
    assert [k.tolist() for k in state] == [fx.random.key(5).tolist()]
    with pytest.raises(IndexError):
        state[1]
    seen = []

    def other(_):
        fx.random.seed(6)
        seen.append((fx.random.state is state, fx.random.state[0].tolist()))

    run_threads(1, other)
    assert seen == [(True, fx.random.key(6).tolist())]
    assert state[0].tolist() == fx.random.key(5).tolist()


def test_compiled_draws_on_threads_use_each_threads_key():
    cf = fx.compile(lambda: fx.random.uniform(shape=(4,)))
    out = {}

    def work(i):
        fx.random.seed(40 + i % 2)
        out[i] = cf().tolist()

    run_threads(4, work)
    assert out[0] == out[2] and out[1] == out[3] and out[0] != out[1]
    fx.random.seed(40)
    assert out[0] == fx.random.uniform(shape=(4,)).tolist()


def test_vmap_over_keys_equals_a_loop():
    keys = fx.random.split(fx.random.key(9), 4)
    batched = fx.vmap(lambda k: fx.random.uniform(shape=[5], key=k))(keys)
    looped = [fx.random.uniform(shape=[5], key=keys[i]).tolist() for i in range(4)]
    assert batched.tolist() == looped


def draw_on_two_threads(seed):
    barrier = threading.Barrier(2, timeout=TIMEOUT)
    out = [None, None]

    def draw(i):
        barrier.wait()
        if seed is not None:
            fx.random.seed(seed)
        out[i] = fx.random.uniform(shape=[8]).tolist() + fx.random.normal([8]).tolist()

    run_threads(2, draw)
    return out


def test_two_fresh_threads_draw_different_numbers():
    for _ in range(5):
        a, b = draw_on_two_threads(None)
        assert a != b


def test_seed_in_a_thread_is_reproducible():
    for _ in range(3):
        a, b = draw_on_two_threads(7)
        assert a == b
    fx.random.seed(7)
    here = fx.random.uniform(shape=[8]).tolist() + fx.random.normal([8]).tolist()
    assert here == a
