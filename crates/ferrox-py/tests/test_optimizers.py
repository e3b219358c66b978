"""ferrox.optimizers: the first steps of every optimizer against a numpy
re-implementation of its update rule; state, schedules, clipping."""

import math

import numpy as np
import pytest

import ferrox.core as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from ferrox.utils import tree_flatten, tree_map, tree_unflatten
from conftest import assert_close

STEPS = 3


def numpy_sgd(lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    def step(p, g, s, t):
        g = g + weight_decay * p
        if momentum <= 0:
            return p - lr * g
        v = momentum * s.get("v", 0) + (1 - dampening) * g
        s["v"] = v
        return p - lr * (g + momentum * v if nesterov else v)
    return step


def numpy_rmsprop(lr, alpha=0.99, eps=1e-8):
    def step(p, g, s, t):
        s["v"] = alpha * s.get("v", 0) + (1 - alpha) * g * g
        return p - lr * g / (np.sqrt(s["v"]) + eps)
    return step


def numpy_adagrad(lr, eps=1e-8):
    def step(p, g, s, t):
        s["v"] = s.get("v", 0) + g * g
        return p - lr * g / (np.sqrt(s["v"]) + eps)
    return step


def numpy_adadelta(lr, rho=0.9, eps=1e-6):
    def step(p, g, s, t):
        s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
        d = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = rho * s.get("u", 0) + (1 - rho) * d * d
        return p - lr * d
    return step


def numpy_adam(lr, b1=0.9, b2=0.999, eps=1e-8, bias_correction=False, weight_decay=0.0):
    def step(p, g, s, t):
        p = p * (1 - lr * weight_decay)
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        m, v = s["m"], s["v"]
        if bias_correction:
            m, v = m / (1 - b1 ** t), v / (1 - b2 ** t)
        return p - lr * m / (np.sqrt(v) + eps)
    return step


def numpy_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def step(p, g, s, t):
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = np.maximum(b2 * s.get("v", 0), np.abs(g))
        return p - lr * s["m"] / (s["v"] + eps)
    return step


def numpy_lion(lr, b1=0.9, b2=0.99, weight_decay=0.0):
    def step(p, g, s, t):
        m = s.get("m", 0)
        c = b1 * m + (1 - b1) * g
        s["m"] = b2 * m + (1 - b2) * g
        return p * (1 - lr * weight_decay) - lr * np.sign(c)
    return step


def numpy_adafactor(eps=(1e-30, 1e-3), clip=1.0, decay=-0.8):
    """Default Adafactor: relative step, parameter scaling, no first moment."""
    def step(p, g, s, t):
        rms = lambda x: np.sqrt(np.mean(x * x))  # noqa: E731
        lr = max(eps[1], rms(p)) * min(1e-2, 1 / math.sqrt(t))
        beta2 = 1 - t ** decay
        g2 = g * g + eps[0]
        if g.ndim >= 2:
            s["r"] = beta2 * s.get("r", 0) + (1 - beta2) * g2.mean(-1)
            s["c"] = beta2 * s.get("c", 0) + (1 - beta2) * g2.mean(-2)
            r = s["r"] / s["r"].mean(-1, keepdims=True)
            u = g / np.sqrt(r[..., :, None] * s["c"][..., None, :])
        else:
            s["v"] = beta2 * s.get("v", 0) + (1 - beta2) * g2
            u = g / np.sqrt(s["v"])
        u = u / max(1.0, rms(u) / clip)
        return p - lr * u
    return step


def numpy_muon(lr, momentum=0.95, weight_decay=0.01, nesterov=True, steps=5):
    def orthogonalize(x):
        a, b, c = 3.4445, -4.7750, 2.0315
        tall = x.shape[0] > x.shape[1]
        x = x.T if tall else x
        x = x / (np.linalg.norm(x) + 1e-7)
        for _ in range(steps):
            gram = x @ x.T
            x = a * x + (b * gram + c * gram @ gram) @ x
        return x.T if tall else x

    def step(p, g, s, t):
        g = g + weight_decay * p
        s["v"] = momentum * s.get("v", 0) + (1 - momentum) * g
        u = g * (1 - momentum) + s["v"] * momentum if nesterov else s["v"]
        scale = lr
        if u.ndim >= 2:
            u = orthogonalize(u)
            scale = lr * max(1, u.shape[0] / u.shape[1]) ** 0.5
        return p - scale * u
    return step


CASES = {
    "SGD": (lambda: optim.SGD(0.1), numpy_sgd(0.1)),
    "SGD-momentum": (lambda: optim.SGD(0.1, momentum=0.9, weight_decay=0.01, dampening=0.2),
                     numpy_sgd(0.1, 0.9, 0.01, 0.2)),
    "SGD-nesterov": (lambda: optim.SGD(0.1, momentum=0.8, nesterov=True),
                     numpy_sgd(0.1, 0.8, nesterov=True)),
    "RMSprop": (lambda: optim.RMSprop(0.01, alpha=0.9), numpy_rmsprop(0.01, 0.9)),
    "Adagrad": (lambda: optim.Adagrad(0.1), numpy_adagrad(0.1)),
    "AdaDelta": (lambda: optim.AdaDelta(1.0, rho=0.8), numpy_adadelta(1.0, 0.8)),
    "Adam": (lambda: optim.Adam(0.01, betas=[0.8, 0.9]), numpy_adam(0.01, 0.8, 0.9)),
    "Adam-bias-correction": (lambda: optim.Adam(0.01, bias_correction=True),
                             numpy_adam(0.01, bias_correction=True)),
    "AdamW": (lambda: optim.AdamW(0.01, weight_decay=0.1), numpy_adam(0.01, weight_decay=0.1)),
    "Adamax": (lambda: optim.Adamax(0.01), numpy_adamax(0.01)),
    "Lion": (lambda: optim.Lion(0.01, weight_decay=0.1), numpy_lion(0.01, weight_decay=0.1)),
    "Adafactor": (lambda: optim.Adafactor(), numpy_adafactor()),
    "Muon": (lambda: optim.Muon(0.02), numpy_muon(0.02)),
    "Muon-plain": (lambda: optim.Muon(0.02, nesterov=False, weight_decay=0.0),
                   numpy_muon(0.02, nesterov=False, weight_decay=0.0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_steps_match_numpy(rng, name):
    make, reference = CASES[name]
    params = {"w": rng.normal(size=(4, 3)), "b": [rng.normal(size=(3,))]}
    grads = [tree_map(lambda p: rng.normal(size=p.shape), params) for _ in range(STEPS)]
    opt = make()
    got = tree_map(lambda p: fx.array(p.astype(np.float32)), params)
    want = dict(params, b=list(params["b"]))
    slots = {"w": {}, "b": {}}
    for t, g in enumerate(grads, start=1):
        got = opt.apply_gradients(tree_map(lambda x: fx.array(x.astype(np.float32)), g), got)
        want = {"w": reference(want["w"], g["w"], slots["w"], t),
                "b": [reference(want["b"][0], g["b"][0], slots["b"], t)]}
    assert opt.step.item() == STEPS
    assert_close(got["w"], want["w"], rtol=2e-4, atol=2e-5)
    assert_close(got["b"][0], want["b"][0], rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_low_precision_parameters_keep_their_dtype(name):
    opt = CASES[name][0]()
    half = fx.float16
    out = opt.apply_gradients({"w": fx.ones((4, 4), half)}, {"w": fx.zeros((4, 4), half)})
    assert out["w"].dtype == fx.float16


def test_state_is_created_on_first_use_and_kept_when_reloaded():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    opt = optim.Adam(1e-3)
    opt.init(model.trainable_parameters())
    flat = dict(tree_flatten(opt.state))
    assert {"step", "learning_rate", "layers.0.weight.m", "layers.2.bias.v"} <= set(flat)
    np.testing.assert_array_equal(np.array(flat["layers.0.weight.m"]), np.zeros((2, 2)))
    # A state saved flat comes back without the empty slots; init refills them.
    fresh = optim.Adam(1e-3)
    fresh.state = tree_unflatten(list(flat.items()))
    fresh.update(model, model.trainable_parameters())
    assert fresh.step.item() == 1
    assert len(fresh.state["layers"]) == 3
    opt.state["note"] = "anything"
    assert opt.state["note"] == "anything"


def test_learning_rate_can_be_set_and_scheduled():
    opt = optim.SGD(optim.exponential_decay(1.0, 0.5))
    params = {"w": fx.zeros((1,))}
    rates = []
    for _ in range(3):
        params = opt.apply_gradients({"w": fx.ones((1,))}, params)
        rates.append(opt.learning_rate.item())
    assert rates == [1.0, 0.5, 0.25]
    assert_close(params["w"], [-1.75])
    opt = optim.SGD(0.1)
    opt.learning_rate = 0.5
    assert opt.learning_rate.item() == 0.5


def test_schedules():
    assert optim.step_decay(1.0, 0.5, 2)(5) == 0.25
    assert math.isclose(optim.exponential_decay(2.0, 0.9)(3), 2.0 * 0.9 ** 3)
    cos = optim.cosine_decay(1.0, 4, end=0.2)
    assert_close([cos(t).item() for t in (0, 2, 4, 9)], [1.0, 0.6, 0.2, 0.2], atol=1e-6)
    warm = optim.linear_schedule(0.0, 1.0, 4)
    assert_close([warm(t).item() for t in (0, 2, 4, 6)], [0.0, 0.5, 1.0, 1.0])
    joined = optim.join_schedules([warm, lambda t: 10.0 + t], [4])
    assert [joined(t).item() for t in (3, 4, 6)] == [0.75, 10.0, 12.0]
    with pytest.raises(ValueError, match="2 schedules need 1 boundaries, got 2"):
        optim.join_schedules([warm, warm], [1, 2])
    with pytest.raises(ValueError, match="step_size must be > 0"):
        optim.step_decay(1.0, 0.5, 0)


def test_clip_grad_norm():
    grads = {"a": fx.array([3.0, 0.0]), "b": [fx.array([[4.0]])]}
    clipped, norm = optim.clip_grad_norm(grads, 1.0)
    assert norm.item() == 5.0
    assert_close(clipped["a"], [0.6, 0.0], atol=1e-6)
    same, _ = optim.clip_grad_norm(grads, 10.0)
    assert_close(same["b"][0], [[4.0]])
    with pytest.raises(ValueError, match="max_norm must be >= 0"):
        optim.clip_grad_norm(grads, -1)


def test_multi_optimizer_routes_by_filter(rng):
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    opt = optim.MultiOptimizer([optim.SGD(0.1), optim.SGD(0.0)], [lambda k, g: g.ndim == 2])
    before = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    grads = tree_map(fx.ones_like, model.trainable_parameters())
    opt.update(model, grads)
    after = dict(tree_flatten(model.parameters()))
    assert_close(after["layers.0.weight"], before["layers.0.weight"] - 0.1)
    assert_close(after["layers.2.bias"], before["layers.2.bias"])   # learning rate 0
    assert [s["step"].item() for s in opt.state["states"]] == [1, 1]
    opt.learning_rate = 0.01
    assert opt.learning_rate.item() == pytest.approx(0.01)
    with pytest.raises(ValueError, match="2 optimizers need 1 filters, got 0"):
        optim.MultiOptimizer([optim.SGD(0.1), optim.SGD(0.1)])


def test_invalid_hyper_parameters():
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(0.1, nesterov=True)
    for cls in (optim.RMSprop, optim.Adagrad, optim.AdaDelta):
        with pytest.raises(ValueError, match="eps should be >0"):
            cls(0.1, eps=0.0)
