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


def arr(a):
    """``a`` as a ferrox array of the same dtype (float64 stays float64)."""
    return fx.array(a, fx.float64) if a.dtype == np.float64 else fx.array(a)


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("axis", [(1, 2), (2, 0), (-1, -2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_singular_value_norms(rng, ord, axis, keepdims):
    x = rng.uniform(-2, 2, size=(2, 3, 4)).astype(np.float32)
    got = fx.linalg.norm(fx.array(x), ord=ord, axis=axis, keepdims=keepdims)
    want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims)
    check(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qr_svd_reconstruct(rng, shape, dtype):
    a = rng.uniform(-1, 1, size=shape).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    q, r = fx.linalg.qr(arr(a))
    assert np.array(q).dtype == dtype
    check(np.array(q) @ np.array(r), a, rtol=tol, atol=tol)
    assert np.allclose(np.tril(np.array(r), -1), 0)
    u, s, vt = fx.linalg.svd(arr(a))
    k = min(shape[-2:])
    check(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=tol, atol=tol)
    us = np.array(u)[..., :, :k] * np.array(s)[..., None, :]
    check(us @ np.array(vt)[..., :k, :], a, rtol=tol, atol=tol)
    check(fx.linalg.svd(arr(a), compute_uv=False), s, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(rng, dtype, uplo):
    x = rng.uniform(-1, 1, size=(2, 5, 5)).astype(dtype)
    if dtype == np.complex64:
        x = x + 1j * rng.uniform(-1, 1, size=(2, 5, 5)).astype(np.float32)
    a = (x + np.conj(x.swapaxes(-1, -2))) / 2
    w, v = fx.linalg.eigh(arr(a), UPLO=uplo)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    check(w, np.linalg.eigh(a.astype(np.complex128 if dtype == np.complex64 else np.float64))[0], rtol=tol, atol=tol)
    v = np.array(v)
    check(a @ v, v * np.array(w)[..., None, :], rtol=10 * tol, atol=10 * tol)
    check(fx.linalg.eigvalsh(arr(a), UPLO=uplo), w, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="UPLO"):
        fx.linalg.eigh(arr(a), UPLO="X")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_eig(rng, dtype):
    a = rng.uniform(-1, 1, size=(3, 4, 4)).astype(dtype)
    w, v = fx.linalg.eig(arr(a))
    assert np.array(w).dtype == np.complex64 and np.array(v).dtype == np.complex64
    w, v = np.array(w), np.array(v)
    check(a @ v, v * w[..., None, :], rtol=1e-4, atol=1e-4)
    check(np.linalg.norm(v, axis=-2), np.ones((3, 4)), rtol=1e-5, atol=1e-5)
    check(fx.linalg.eigvals(arr(a)), w, rtol=1e-5, atol=1e-5)
    key = lambda z: np.sort_complex(np.round(z, 4))  # noqa: E731
    check(key(w), key(np.linalg.eigvals(a.astype(np.complex128))), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_lu(rng, shape):
    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
    p, l, u = fx.linalg.lu(arr(a))
    assert np.array(p).dtype == np.uint32
    lp = np.take_along_axis(np.array(l), np.array(p)[..., None].astype(np.int64), axis=-2)
    check(lp @ np.array(u), a, rtol=1e-5, atol=1e-5)
    lu, piv = fx.linalg.lu_factor(arr(a))
    lu, piv = np.array(lu), np.array(piv)
    m, n = shape[-2:]
    for idx in np.ndindex(*shape[:-2]):
        perm = list(range(m))
        for i, q in enumerate(piv[idx]):
            perm[i], perm[q] = perm[q], perm[i]
        k = min(m, n)
        low = np.tril(lu[idx], -1)[:, :k] + np.eye(m, k)
        check(low @ np.triu(lu[idx])[:k], a[idx][perm], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_slogdet(rng, n, dtype):
    a = rng.uniform(-1, 1, size=(2, n, n)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    check(fx.linalg.det(arr(a)), np.linalg.det(a.astype(np.float64)), rtol=tol, atol=tol)
    s, l = fx.linalg.slogdet(arr(a))
    ws, wl = np.linalg.slogdet(a.astype(np.float64))
    check(s, ws)
    check(l, wl, rtol=tol, atol=tol)
    assert np.array(s).dtype == dtype


def test_det_gradient_small_matrices(rng):
    # Up to 3 x 3 the determinant is a cofactor formula: d det / dA = det * inv(A)^T.
    a = rng.uniform(-1, 1, size=(3, 3)) + 2 * np.eye(3)
    g = np.array(fx.grad(fx.linalg.det)(fx.array(a, fx.float64)))
    check(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10, atol=1e-10)


def test_pinv_and_cholesky_inv(rng):
    a = rng.uniform(-1, 1, size=(2, 5, 3)).astype(np.float32)
    check(fx.linalg.pinv(arr(a)), np.linalg.pinv(a.astype(np.float64)), rtol=1e-4, atol=1e-4)
    x = rng.uniform(-1, 1, size=(4, 4))
    spd = (x @ x.T + 4 * np.eye(4)).astype(np.float32)
    for upper in [False, True]:
        c = fx.linalg.cholesky(arr(spd), upper=upper)
        check(fx.linalg.cholesky_inv(c, upper=upper), np.linalg.inv(spd), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: fx.linalg.qr(fx.array([1.0, 2.0])),
        lambda: fx.linalg.qr(fx.array([[1, 2], [3, 4]])),
        lambda: fx.linalg.svd(fx.ones((2, 2), fx.float16)),
        lambda: fx.linalg.eigh(fx.ones((2, 3))),
        lambda: fx.linalg.eig(fx.ones((3,))),
        lambda: fx.linalg.lu(fx.array([[1, 2], [3, 4]])),
        lambda: fx.linalg.lu_factor(fx.ones((2, 2), fx.complex64)),
        lambda: fx.linalg.pinv(fx.ones((2, 2), fx.int32)),
        lambda: fx.linalg.det(fx.ones((2, 3))),
        lambda: fx.linalg.det(fx.ones((2, 2), fx.complex64)),
        lambda: fx.linalg.slogdet(fx.ones((3,))),
        lambda: fx.linalg.cholesky_inv(fx.ones((2, 2), fx.int32)),
    ],
)
def test_decomposition_errors(call):
    with pytest.raises(ValueError):
        call()


def test_decompositions_have_no_gradient():
    a = fx.array([[2.0, 1.0], [1.0, 3.0]])
    for f in [
        lambda x: fx.sum(fx.linalg.svd(x, compute_uv=False)),
        lambda x: fx.sum(fx.linalg.eigh(x)[0]),
        lambda x: fx.sum(fx.linalg.qr(x)[1]),
        lambda x: fx.sum(fx.linalg.lu(x)[2]),
    ]:
        with pytest.raises(NotImplementedError, match="no vjp rule"):
            fx.grad(f)(a)
