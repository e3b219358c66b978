"""ferrox.core.fft against numpy.fft."""
import importlib

import numpy as np
import pytest

import ferrox.core as fx


def check(got, want, dtype=np.complex64):
    got = np.array(got)
    assert got.dtype == dtype
    assert got.shape == want.shape
    scale = 1.0 + np.max(np.abs(want), initial=0.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-6 * scale)


def signal(rng, shape, complex_=True):
    x = rng.uniform(-1, 1, size=shape)
    if complex_:
        x = x + 1j * rng.uniform(-1, 1, size=shape)
        return x.astype(np.complex64)
    return x.astype(np.float32)


def test_submodule_imports():
    mod = importlib.import_module("ferrox.core.fft")
    assert mod is fx.fft
    from ferrox.core.fft import rfftn  # noqa: F401
    import ferrox.core.fft as f

    assert f.fft is fx.fft.fft


@pytest.mark.parametrize("op", ["fft", "ifft"])
@pytest.mark.parametrize("n", [None, 1, 5, 8, 13, 20])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_complex_1d(rng, op, n, axis):
    x = signal(rng, (6, 7))
    got = getattr(fx.fft, op)(fx.array(x), n=n, axis=axis)
    check(got, getattr(np.fft, op)(x.astype(np.complex128), n=n, axis=axis))


@pytest.mark.parametrize("op", ["fft", "ifft", "rfft"])
def test_real_and_integer_inputs(rng, op):
    x = rng.integers(-4, 5, size=(11,)).astype(np.int32)
    check(getattr(fx.fft, op)(fx.array(x)), getattr(np.fft, op)(x.astype(np.float64)))
    y = rng.uniform(-1, 1, size=(4, 5))  # float64: computed in single precision
    check(getattr(fx.fft, op)(y, axis=0), getattr(np.fft, op)(y, axis=0))


@pytest.mark.parametrize("n", [None, 1, 2, 7, 8, 15, 16])
def test_rfft_irfft(rng, n):
    x = signal(rng, (3, 10), complex_=False)
    check(fx.fft.rfft(fx.array(x), n), np.fft.rfft(x.astype(np.float64), n))
    h = signal(rng, (3, 6))
    check(fx.fft.irfft(fx.array(h), n), np.fft.irfft(h.astype(np.complex128), n), np.float32)
    check(
        fx.fft.irfft(fx.array(h), n, axis=0),
        np.fft.irfft(h.astype(np.complex128), n, axis=0),
        np.float32,
    )


@pytest.mark.parametrize("op", ["fft2", "ifft2", "fftn", "ifftn"])
@pytest.mark.parametrize(
    "s,axes", [(None, None), (None, (0, 2)), ((3, 7), (2, 0)), ((2, 6), None), (None, (-1,))]
)
def test_complex_nd(rng, op, s, axes):
    x = signal(rng, (3, 4, 5))
    kw = {} if axes is None else {"axes": axes}
    np_kw = dict(kw)
    if s is not None and axes is None and op.endswith("n"):
        np_kw["axes"] = tuple(range(x.ndim - len(s), x.ndim))
    got = getattr(fx.fft, op)(fx.array(x), s=s, **kw)
    check(got, getattr(np.fft, op)(x.astype(np.complex128), s=s, **np_kw))


@pytest.mark.parametrize("op", ["rfft2", "rfftn"])
@pytest.mark.parametrize("s,axes", [(None, None), (None, (2, 0)), ((5, 3), (0, 2)), ((4, 9), None)])
def test_real_nd(rng, op, s, axes):
    x = signal(rng, (3, 4, 6), complex_=False)
    kw = {} if axes is None else {"axes": axes}
    np_kw = dict(kw)
    if s is not None and axes is None and op.endswith("n"):
        np_kw["axes"] = tuple(range(x.ndim - len(s), x.ndim))
    check(getattr(fx.fft, op)(x, s=s, **kw), getattr(np.fft, op)(x.astype(np.float64), s=s, **np_kw))
    h = signal(rng, (3, 4, 4))
    iop = "i" + op
    check(
        getattr(fx.fft, iop)(h, s=s, **kw),
        getattr(np.fft, iop)(h.astype(np.complex128), s=s, **np_kw),
        np.float32,
    )


@pytest.mark.parametrize("op", ["fft2", "ifft2", "rfft2"])
def test_2d_axes_none_means_every_axis(rng, op):
    x = signal(rng, (2, 3, 4), complex_=not op.startswith("r"))
    want = getattr(np.fft, op)(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), axes=None)
    check(getattr(fx.fft, op)(x, axes=None), want)


def test_non_contiguous_input(rng):
    x = signal(rng, (5, 8))
    xt = fx.array(x).T
    check(fx.fft.fft(xt, axis=0), np.fft.fft(x.T.astype(np.complex128), axis=0))
    check(fx.fft.fft2(xt[::-1]), np.fft.fft2(x.T[::-1].astype(np.complex128)))


def test_round_trip_and_large_prime(rng):
    x = signal(rng, (2, 1009))
    y = fx.fft.ifft(fx.fft.fft(x))
    np.testing.assert_allclose(np.array(y), x, atol=2e-6)
    check(fx.fft.fft(x), np.fft.fft(x.astype(np.complex128)))


def test_large_input_runs_in_parallel(rng):
    x = signal(rng, (64, 2048))
    check(fx.fft.fft(x, axis=0), np.fft.fft(x.astype(np.complex128), axis=0))
    check(fx.fft.rfft(x.real, axis=-1), np.fft.rfft(x.real.astype(np.float64), axis=-1))


def test_stream_keyword(rng):
    x = signal(rng, (8,))
    check(fx.fft.fft(x, stream=fx.cpu), np.fft.fft(x.astype(np.complex128)))


def test_grad_through_fft():
    x = fx.array([0.5, -1.0, 2.0, 0.25, 1.5])

    def loss(x):
        y = fx.fft.fft(x)
        return fx.sum(fx.abs(y) ** 2)

    # Parseval: sum |fft(x)|^2 = n * sum x^2.
    np.testing.assert_allclose(np.array(fx.grad(loss)(x)), 10 * np.array(x), rtol=1e-5)


def test_vmap_over_fft(rng):
    x = signal(rng, (4, 6))
    got = fx.vmap(lambda r: fx.fft.fft(r), in_axes=1)(fx.array(x))
    check(got, np.fft.fft(x.T.astype(np.complex128)))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: fx.fft.fft(x, axis=2),
        lambda x: fx.fft.fft(x, n=0),
        lambda x: fx.fft.fft(x, n=-3),
        lambda x: fx.fft.fftn(x, axes=(0, 0)),
        lambda x: fx.fft.fftn(x, s=(2, 3), axes=(0,)),
        lambda x: fx.fft.fft2(x, s=(2, -1)),
        lambda x: fx.fft.rfftn(x, s=(1, 2, 3)),
        lambda x: fx.fft.irfft(fx.ones((1,), fx.complex64)),
    ],
)
def test_bad_input_raises_value_error(call):
    x = fx.ones((3, 4))
    with pytest.raises(ValueError, match="fft"):
        call(x)


def test_rfft_of_complex_is_a_type_error():
    with pytest.raises(TypeError, match="rfft"):
        fx.fft.rfft(fx.ones((4,), fx.complex64))


def test_compile_and_shapeless_replay(rng):
    x = fx.array(signal(rng, (3, 8)))
    f = fx.compile(lambda a: fx.fft.irfft(fx.fft.rfft(fx.real(a)), n=8))
    np.testing.assert_allclose(np.array(f(x)), np.array(x).real, atol=1e-5)
    g = fx.compile(lambda a: fx.fft.fft(a, axis=0), shapeless=True)
    check(g(x), np.fft.fft(np.array(x).astype(np.complex128), axis=0))
    y = signal(rng, (3, 5))  # same transform length, other batch shape
    check(g(fx.array(y)), np.fft.fft(y.astype(np.complex128), axis=0))
