"""ferrox.nn.losses against numpy formulas, with every reduction."""

import math

import numpy as np
import pytest

import ferrox.core as fx
import ferrox.nn as nn
from conftest import assert_close

L = nn.losses


def log_softmax(x, axis=-1):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


@pytest.fixture
def data(rng):
    a = rng.normal(size=(4, 5)).astype(np.float32)
    b = rng.normal(size=(4, 5)).astype(np.float32)
    return a, b


def reduce(x, how):
    return {"none": x, "mean": x.mean(), "sum": x.sum()}[how]


@pytest.mark.parametrize("how", ["none", "mean", "sum"])
def test_cross_entropy_with_indices_probabilities_and_smoothing(rng, how):
    logits = rng.normal(size=(4, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 2])
    lsm = log_softmax(logits)
    want = -lsm[np.arange(4), labels]
    assert_close(L.cross_entropy(fx.array(logits), fx.array(labels), reduction=how),
                 reduce(want, how), rtol=1e-5, atol=1e-5)
    probs = np.eye(3, dtype=np.float32)[labels] * 0.8 + 0.2 / 3
    assert_close(L.cross_entropy(fx.array(logits), fx.array(probs), reduction=how),
                 reduce(-(probs * lsm).sum(-1), how), rtol=1e-5, atol=1e-5)
    smooth = 0.3
    target = np.eye(3)[labels] * (1 - smooth) + smooth / 3
    assert_close(L.cross_entropy(fx.array(logits), fx.array(labels), label_smoothing=smooth,
                                 reduction=how), reduce(-(target * lsm).sum(-1), how),
                 rtol=1e-5, atol=1e-5)


def test_cross_entropy_weights_axis_and_errors(rng):
    logits = rng.normal(size=(3, 2)).astype(np.float32)   # classes on axis 0
    labels = np.array([2, 0])
    weights = np.array([1.0, 3.0], np.float32)
    want = -log_softmax(logits, 0)[labels, np.arange(2)] * weights
    assert_close(L.cross_entropy(fx.array(logits), fx.array(labels), weights=fx.array(weights),
                                 axis=0), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="targets shape"):
        L.cross_entropy(fx.zeros((2, 3)), fx.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        L.cross_entropy(fx.zeros((2, 3)), fx.array([0, 1]), label_smoothing=1.0)
    with pytest.raises(ValueError, match="invalid reduction 'avg'"):
        L.cross_entropy(fx.zeros((2, 3)), fx.array([0, 1]), reduction="avg")


def test_binary_cross_entropy(rng):
    logits = rng.normal(size=(6,)).astype(np.float32)
    targets = (rng.random(6) > 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-logits))
    want = -(targets * np.log(p) + (1 - targets) * np.log(1 - p))
    assert_close(L.binary_cross_entropy(fx.array(logits), fx.array(targets)), want.mean(),
                 rtol=1e-5)
    assert_close(L.binary_cross_entropy(fx.array(p), fx.array(targets), with_logits=False,
                                        reduction="none"), want, rtol=1e-4, atol=1e-6)
    # Log-probabilities are clipped at -100, so certainty gives a finite loss.
    assert L.binary_cross_entropy(fx.array([0.0]), fx.array([1.0]), with_logits=False).item() == 100
    with pytest.raises(ValueError, match="does not match targets shape"):
        L.binary_cross_entropy(fx.zeros((2,)), fx.zeros((3,)))


@pytest.mark.parametrize("how", ["none", "mean", "sum"])
def test_regression_losses(data, how):
    a, b = data
    d = a - b
    cases = {
        "l1_loss": (L.l1_loss(fx.array(a), fx.array(b), how), np.abs(d)),
        "mse_loss": (L.mse_loss(fx.array(a), fx.array(b), how), d ** 2),
        "smooth_l1_loss": (L.smooth_l1_loss(fx.array(a), fx.array(b), beta=0.5, reduction=how),
                           np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25)),
        "huber_loss": (L.huber_loss(fx.array(a), fx.array(b), delta=0.7, reduction=how),
                       np.where(np.abs(d) <= 0.7, 0.5 * d ** 2, 0.7 * (np.abs(d) - 0.35))),
        "log_cosh_loss": (L.log_cosh_loss(fx.array(a), fx.array(b), how), np.log(np.cosh(d))),
    }
    for name, (got, want) in cases.items():
        assert_close(got, reduce(want, how), rtol=1e-4, atol=1e-5)


def test_probabilistic_losses(data, rng):
    a, b = data
    labels = np.array([1, 0, 4, 2])
    assert_close(L.nll_loss(fx.array(log_softmax(a)), fx.array(labels)),
                 -log_softmax(a)[np.arange(4), labels], rtol=1e-5)
    var = np.abs(b) + 0.1
    want = 0.5 * (np.log(var) + (a - b) ** 2 / var) + 0.5 * math.log(2 * math.pi)
    assert_close(L.gaussian_nll_loss(fx.array(a), fx.array(b), fx.array(var), full=True),
                 want.mean(), rtol=1e-5)
    lp, lq = log_softmax(a), log_softmax(b)
    assert_close(L.kl_div_loss(fx.array(lp), fx.array(lq)), (np.exp(lq) * (lq - lp)).sum(-1),
                 rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="does not match vars shape"):
        L.gaussian_nll_loss(fx.zeros((2,)), fx.zeros((2,)), fx.zeros((3,)))


def test_margin_and_similarity_losses(data, rng):
    a, b = data
    c = rng.normal(size=a.shape).astype(np.float32)
    dist = lambda x, y: ((np.abs(x - y) ** 2).sum(-1) + 1e-6) ** 0.5  # noqa: E731
    assert_close(L.triplet_loss(fx.array(a), fx.array(b), fx.array(c), margin=0.5),
                 np.maximum(dist(a, b) - dist(a, c) + 0.5, 0), rtol=1e-4, atol=1e-5)
    signs = np.sign(b)
    assert_close(L.hinge_loss(fx.array(a), fx.array(signs)), np.maximum(1 - a * signs, 0))
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert_close(L.cosine_similarity_loss(fx.array(a), fx.array(b)), cos, rtol=1e-5)
    t = np.sign(c[0])
    assert_close(L.margin_ranking_loss(fx.array(a[0]), fx.array(b[0]), fx.array(t), margin=0.2,
                                       reduction="sum"),
                 np.maximum(0, -t * (a[0] - b[0]) + 0.2).sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="shapes do not match"):
        L.margin_ranking_loss(fx.zeros((2,)), fx.zeros((2,)), fx.zeros((3,)))
