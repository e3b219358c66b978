"""ferrox.core.fast against numpy references."""
import importlib
import threading

import numpy as np
import pytest

import ferrox.core as fx

TIMEOUT = 60


def check(got, want, rtol=1e-4, atol=1e-5):
    got = np.array(got.astype(fx.float32) if got.dtype != fx.float32 else got)
    np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def test_submodule_imports():
    assert importlib.import_module("ferrox.core.fast") is fx.fast
    from ferrox.core.fast import scaled_dot_product_attention  # noqa: F401


def np_attention(q, k, v, scale, mask=None, sinks=None):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        tq, tk = q.shape[2], k.shape[2]
        mask = np.arange(tk - tq, tk)[:, None] >= np.arange(tk)[None]
    if mask is not None:
        mask = np.asarray(mask)
        s = np.where(mask, s, np.finfo(np.float32).min) if mask.dtype == bool else s + mask
    if sinks is not None:
        col = np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None, None], s.shape[:3] + (1,))
        s = np.concatenate([col, s], -1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


@pytest.mark.parametrize("shape", [(1, 4, 4, 5, 5, 8), (2, 8, 2, 1, 300, 16), (1, 2, 1, 130, 200, 24)])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
@pytest.mark.parametrize("sinks", [False, True])
def test_attention_matches_numpy(rng, shape, mask, sinks):
    b, nq, nkv, tq, tk, d = shape
    q = rng.standard_normal((b, nq, tq, d)).astype(np.float32)
    k = rng.standard_normal((b, nkv, tk, d)).astype(np.float32)
    v = rng.standard_normal((b, nkv, tk, d)).astype(np.float32)
    m = {"bool": rng.uniform(size=(tq, tk)) > 0.3, "additive": rng.standard_normal((b, 1, tq, tk)).astype(np.float32)}.get(mask, mask)
    s = rng.standard_normal(nq).astype(np.float32) if sinks else None
    scale = d ** -0.5
    got = fx.fast.scaled_dot_product_attention(
        fx.array(q), fx.array(k), fx.array(v), scale=scale,
        mask=fx.array(m) if isinstance(m, np.ndarray) else m,
        sinks=None if s is None else fx.array(s))
    check(got, np_attention(q, k, v, scale, m, s))
    # Half precision: the softmax still accumulates in float32.
    if mask == "additive" or sinks:
        return
    h = [fx.array(a).astype(fx.float16) for a in (q, k, v)]
    got = fx.fast.scaled_dot_product_attention(*h, scale=scale, mask=fx.array(m) if isinstance(m, np.ndarray) else m)
    assert got.dtype == fx.float16
    check(got, np_attention(q, k, v, scale, m), rtol=3e-2, atol=3e-2)


def test_attention_gradient_matches_numpy_differences(rng):
    q = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    k = rng.standard_normal((1, 1, 5, 4)).astype(np.float32)
    v = rng.standard_normal((1, 1, 5, 4)).astype(np.float32)
    scale = 0.5

    def loss(q, k, v):
        return fx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal").sum()

    gq, gk, gv = fx.grad(loss, argnums=(0, 1, 2))(fx.array(q), fx.array(k), fx.array(v))
    for i, (x, g) in enumerate(zip((q, k, v), (gq, gk, gv))):
        eps = 1e-3
        num = np.zeros_like(x, dtype=np.float64)
        for idx in np.ndindex(x.shape):
            args = [q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)]
            plus, minus = args[i].copy(), args[i].copy()
            plus[idx] += eps
            minus[idx] -= eps
            ap, am = list(args), list(args)
            ap[i], am[i] = plus, minus
            num[idx] = (np_attention(*ap, scale, "causal").sum() - np_attention(*am, scale, "causal").sum()) / (2 * eps)
        check(g, num, rtol=1e-3, atol=1e-3)


def test_attention_bad_input():
    q = fx.zeros((1, 4, 3, 8))
    k = fx.zeros((1, 3, 5, 8))
    with pytest.raises(ValueError, match="multiple"):
        fx.fast.scaled_dot_product_attention(q, k, k, scale=1.0)
    with pytest.raises(ValueError, match="rank 4"):
        fx.fast.scaled_dot_product_attention(fx.zeros((4, 3, 8)), k, k, scale=1.0)
    with pytest.raises(ValueError, match="causal"):
        fx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="upper")
    with pytest.raises(ValueError, match="broadcast"):
        fx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask=fx.zeros((2, 3)))


def test_attention_in_a_gradient_on_another_thread(rng):
    # A gradient running on one thread does not change what plain calls on
    # another compute (MLX's process-wide training flag would).
    q = fx.array(rng.standard_normal((1, 2, 16, 8)).astype(np.float32))
    want = np.array(fx.fast.scaled_dot_product_attention(q, q, q, scale=0.3, mask="causal"))
    start = threading.Barrier(2, timeout=TIMEOUT)
    errors = []

    def grads():
        try:
            start.wait()
            g = fx.grad(lambda x: fx.fast.scaled_dot_product_attention(x, x, x, scale=0.3, mask="causal").sum())
            for _ in range(30):
                fx.eval(g(q))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=grads)
    t.start()
    start.wait()
    for _ in range(30):
        got = fx.fast.scaled_dot_product_attention(q, q, q, scale=0.3, mask="causal")
        np.testing.assert_array_equal(np.array(got), want)
    t.join(TIMEOUT)
    assert not t.is_alive(), "the gradient thread did not finish"
    assert not errors, errors


def np_rms(x, w, eps):
    x = np.asarray(x, np.float64)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y if w is None else y * w


def np_layer(x, w, b, eps):
    x = np.asarray(x, np.float64)
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


@pytest.mark.parametrize("shape", [(3, 7), (2, 4, 1024)])
def test_norms_match_numpy(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)
    check(fx.fast.rms_norm(fx.array(x), fx.array(w), 1e-5), np_rms(x, w, 1e-5))
    check(fx.fast.rms_norm(fx.array(x), None, 1e-5), np_rms(x, None, 1e-5))
    check(fx.fast.layer_norm(fx.array(x), fx.array(w), fx.array(b), 1e-5), np_layer(x, w, b, 1e-5))
    check(fx.fast.layer_norm(fx.array(x), None, None, 1e-5), np_layer(x, None, None, 1e-5))
    got = fx.fast.rms_norm(fx.array(x).astype(fx.bfloat16), fx.array(w).astype(fx.bfloat16), 1e-5)
    assert got.dtype == fx.bfloat16
    check(got, np_rms(x, w, 1e-5), rtol=3e-2, atol=3e-2)
    with pytest.raises(ValueError, match="weight"):
        fx.fast.rms_norm(fx.array(x), fx.zeros(3), 1e-5)


def np_rope(x, dims, traditional, base, scale, offset):
    x = np.asarray(x, np.float64)
    t = x.shape[-2]
    half = dims // 2
    pos = (np.arange(t) + offset) * scale
    theta = pos[:, None] * base ** (-np.arange(half) / half)
    c, s = np.cos(theta), np.sin(theta)
    y = x.copy()
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        y[..., 0:dims:2] = x1 * c - x2 * s
        y[..., 1:dims:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:dims]
        y[..., :half] = x1 * c - x2 * s
        y[..., half:dims] = x1 * s + x2 * c
    return y


@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("dims", [8, 16])
def test_rope_matches_numpy(rng, traditional, dims):
    x = rng.standard_normal((2, 3, 5, 16)).astype(np.float32)
    got = fx.fast.rope(fx.array(x), dims, traditional=traditional, base=10000.0, scale=0.5, offset=3)
    check(got, np_rope(x, dims, traditional, 10000.0, 0.5, 3))
    offsets = fx.array([3, 9])
    got = fx.fast.rope(fx.array(x), dims, traditional=traditional, base=10000.0, scale=0.5, offset=offsets)
    want = np.stack([np_rope(x[i], dims, traditional, 10000.0, 0.5, o) for i, o in enumerate((3, 9))])
    check(got, want)
    with pytest.raises(ValueError, match="even"):
        fx.fast.rope(fx.array(x), 3, traditional=traditional, base=10000.0, scale=1.0, offset=0)


def test_cross_entropy(rng):
    logits = rng.standard_normal((4, 9)).astype(np.float32)
    t = np.array([0, 8, 3, 3])
    got = fx.fast.cross_entropy(fx.array(logits), fx.array(t))
    lse = np.log(np.exp(logits.astype(np.float64)).sum(-1))
    check(got, lse - logits[np.arange(4), t])
    assert got.dtype == fx.float32
