"""ferrox.core.linalg against numpy.linalg."""
import importlib

import numpy as np
import pytest

import ferrox.core as fx


def check(got, want, rtol=2e-5, atol=2e-5):
    got = np.array(got)
    want = np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_submodule_imports():
    assert importlib.import_module("ferrox.core.linalg") is fx.linalg
    from ferrox.core.linalg import norm  # noqa: F401


inf = float("inf")


@pytest.mark.parametrize("ord", [None, 2, inf, -inf, 0, 1, -1, 3, 0.5, -2.5])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norms(rng, ord, axis, keepdims):
    x = rng.uniform(-2, 2, size=(3, 5)).astype(np.float32)
    x[0, 1] = 0.0
    if axis is None:
        x = x[0]
    got = fx.linalg.norm(fx.array(x), ord=ord, axis=axis, keepdims=keepdims)
    check(got, np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims))
    assert np.array(got).dtype == np.float32


@pytest.mark.parametrize("ord", [None, "fro", inf, -inf, 1, -1])
@pytest.mark.parametrize("axis", [None, (1, 2), (2, 0), (-1, -2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(rng, ord, axis, keepdims):
    x = rng.uniform(-2, 2, size=(2, 3, 4))
    if axis is None:
        x = x[0]
    got = fx.linalg.norm(x, ord, axis, keepdims)
    check(got, np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))


def test_default_norm_of_any_rank_and_dtypes(rng):
    x = rng.uniform(-2, 2, size=(2, 3, 4)).astype(np.float32)
    check(fx.linalg.norm(x), np.linalg.norm(x))
    z = (x + 1j * x[::-1]).astype(np.complex64)
    check(fx.linalg.norm(z), np.linalg.norm(z.astype(np.complex128)), rtol=1e-5)
    check(fx.linalg.norm(z, 1, axis=-1), np.linalg.norm(z.astype(np.complex128), 1, axis=-1))
    i = np.arange(-4, 5, dtype=np.int32)
    got = fx.linalg.norm(fx.array(i))
    assert np.array(got).dtype == np.float32
    check(got, np.linalg.norm(i))
    d = rng.uniform(-2, 2, size=(5,))
    assert np.array(fx.linalg.norm(fx.array(d, fx.float64))).dtype == np.float64


def test_norm_of_transposed(rng):
    x = rng.uniform(-2, 2, size=(3, 5)).astype(np.float32)
    check(fx.linalg.norm(fx.array(x).T, 1), np.linalg.norm(x.T, 1))
    check(fx.linalg.norm(fx.array(x).T, inf, axis=0), np.linalg.norm(x.T, inf, axis=0))


def test_norm_gradient():
    x = fx.array([3.0, -4.0])
    check(fx.grad(lambda v: fx.linalg.norm(v))(x), [0.6, -0.8])


@pytest.mark.parametrize(
    "call,exc",
    [
        (lambda x: fx.linalg.norm(x, ord=1), ValueError),  # 3-D without axis
        (lambda x: fx.linalg.norm(x, axis=(0, 1, 2)), ValueError),
        (lambda x: fx.linalg.norm(x, axis=(0, 0)), ValueError),
        (lambda x: fx.linalg.norm(x, axis=3), ValueError),
        (lambda x: fx.linalg.norm(x, ord="fro", axis=0), ValueError),
        (lambda x: fx.linalg.norm(x, ord=3, axis=(0, 1)), ValueError),
        (lambda x: fx.linalg.norm(x, ord="max", axis=(0, 1)), ValueError),
        (lambda x: fx.linalg.norm(x, ord=[1], axis=0), TypeError),
        (lambda x: fx.linalg.norm(x, ord=2, axis=(0, 1)), NotImplementedError),
        (lambda x: fx.linalg.norm(x, ord="nuc", axis=(0, 1)), NotImplementedError),
    ],
)
def test_norm_errors(call, exc):
    with pytest.raises(exc, match="norm"):
        call(fx.ones((2, 3, 4)))


def test_cross(rng):
    a = rng.uniform(-1, 1, size=(4, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(4, 3)).astype(np.float32)
    check(fx.linalg.cross(a, b), np.cross(a, b))
    check(fx.linalg.cross(a, b[0]), np.cross(a, b[0]))
    check(fx.linalg.cross(a.T, b.T, axis=0), np.cross(a.T, b.T, axis=0))
    check(fx.linalg.cross(a[:, :2], b), np.cross(a[:, :2], b))
    with pytest.raises(ValueError, match="cross"):
        fx.linalg.cross(fx.ones((4,)), fx.ones((3,)))


def well_conditioned(rng, shape, dtype=np.float32):
    n = shape[-1]
    return (rng.uniform(-1, 1, size=shape) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inv(rng, shape, dtype):
    a = well_conditioned(rng, shape, dtype)
    fa = fx.array(a, getattr(fx, np.dtype(dtype).name))
    got = fx.linalg.inv(fa)
    assert np.array(got).dtype == dtype
    check(got, np.linalg.inv(a.astype(np.float64)), rtol=1e-5, atol=1e-6)
    check(fx.linalg.inv(fa.swapaxes(-1, -2)), np.linalg.inv(a.swapaxes(-1, -2)), rtol=1e-5, atol=1e-6)


def test_solve(rng):
    a = well_conditioned(rng, (2, 4, 4))
    b = rng.uniform(-1, 1, size=(4,)).astype(np.float32)
    check(fx.linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-5, atol=1e-6)
    b2 = rng.uniform(-1, 1, size=(2, 4, 3)).astype(np.float32)
    check(fx.linalg.solve(a, b2), np.linalg.solve(a, b2), rtol=1e-5, atol=1e-6)


def test_inv_gradient(rng):
    a = well_conditioned(rng, (3, 3), np.float64)

    def f(m):
        return fx.sum(fx.linalg.inv(m))

    y = np.linalg.inv(a)
    want = -(y.T @ np.ones((3, 3)) @ y.T)
    check(fx.grad(f)(fx.array(a, fx.float64)), want, rtol=1e-8, atol=1e-10)


def test_inv_and_solve_errors():
    with pytest.raises(ValueError, match="inv"):
        fx.linalg.inv(fx.ones((2, 3)))
    with pytest.raises(ValueError, match="singular"):
        fx.eval(fx.linalg.inv(fx.ones((2, 2))))
    with pytest.raises(ValueError, match="solve"):
        fx.linalg.solve(fx.eye(3), fx.ones((2,)))
    with pytest.raises(TypeError, match="inv"):
        fx.linalg.inv(fx.ones((2, 2), fx.complex64))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(rng, upper):
    x = rng.uniform(-1, 1, size=(2, 4, 4))
    a = (x @ x.swapaxes(-1, -2) + 4 * np.eye(4)).astype(np.float32)
    check(fx.linalg.cholesky(a, upper=upper), np.linalg.cholesky(a, upper=upper), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="positive definite"):
        fx.eval(fx.linalg.cholesky(-fx.eye(3), upper))


@pytest.mark.parametrize("upper", [False, True])
def test_triangular(rng, upper):
    a = well_conditioned(rng, (3, 3))
    t = np.triu(a) if upper else np.tril(a)
    check(fx.linalg.tri_inv(a, upper=upper), np.linalg.inv(t), rtol=1e-5, atol=1e-6)
    b = rng.uniform(-1, 1, size=(3, 2)).astype(np.float32)
    check(fx.linalg.solve_triangular(a, b, upper=upper), np.linalg.solve(t, b), rtol=1e-5, atol=1e-6)


def test_cholesky_gradient_of_log_det(rng):
    # log det A = 2 sum log diag(L); its gradient is inv(A) for symmetric A.
    x = rng.uniform(-1, 1, size=(3, 3))
    a = x @ x.T + 3 * np.eye(3)

    def f(m):
        low = fx.linalg.cholesky(m)
        return 2 * fx.sum(fx.log(fx.diagonal(low)))

    g = np.array(fx.grad(f)(fx.array(a, fx.float64)))
    # Only the lower triangle is read: the off-diagonal gradient lands there twice.
    want = np.linalg.inv(a)
    want = np.tril(2 * want) - np.diag(np.diag(want))
    check(g, want, rtol=1e-8, atol=1e-10)
