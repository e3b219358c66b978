"""ferrox.nn.Module mechanics, weights on disk, value_and_grad, a compiled
training step, and inference from several threads at once."""

import os
import threading
from functools import partial

import numpy as np
import pytest

import ferrox.core as fx
import ferrox.nn as nn
import ferrox.optimizers as optim
from ferrox.utils import tree_flatten
from conftest import TIMEOUT, assert_close, run_threads


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 2)
        self.norm = nn.LayerNorm(2)
        self.extras = {"scale": fx.ones((2,))}
        self._cache = fx.zeros((2,))  # private: in the dict, not a parameter
        self.stack = [nn.Linear(2, 2, bias=False), nn.ReLU(), fx.tanh]
        self.count = 3  # a plain attribute, not a parameter

    def __call__(self, x):
        y = self.norm(self.proj(x)) * self.extras["scale"]
        for layer in self.stack:
            y = layer(y)
        return y


def names(tree):
    return sorted(k for k, _ in tree_flatten(tree))


def test_attributes_route_arrays_to_the_dict_and_others_to_the_object():
    m = nn.Module()
    m.value = None
    assert m.value is None and "value" not in m
    m.value = fx.array(1.0)
    assert "value" in m and m.value.item() == 1.0
    m.value = 5
    assert "value" not in m and m.value == 5
    m.w = fx.ones((2,))
    del m.w
    assert not hasattr(m, "w")
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing


def test_parameters_children_and_leaves():
    m = Block()
    assert names(m.parameters()) == [
        "extras.scale", "norm.bias", "norm.weight", "proj.bias", "proj.weight", "stack.0.weight"]
    children = m.children()
    assert set(children) == {"proj", "norm", "stack", "extras"}
    assert children["extras"] == {"scale": {}}  # containers are kept, arrays blanked
    assert children["stack"][0] is m.stack[0] and children["stack"][2] == {}
    leaves = tree_flatten(m.leaf_modules(), is_leaf=nn.Module.is_module)
    assert [k for k, _ in leaves] == ["proj", "norm", "stack.0", "stack.1"]
    assert [k for k, _ in m.named_modules()][0] == ""
    assert len(m.modules()) == 5
    assert m.state is m and "_cache" in m.state


def test_freeze_and_unfreeze():
    m = Block()
    m.freeze()
    assert m.trainable_parameters() == {"extras": {"scale": {}}, "norm": {}, "proj": {},
                                        "stack": [{}, {}, {}]}
    m.unfreeze(keys="bias")
    assert names(m.trainable_parameters()) == ["norm.bias", "proj.bias"]
    m.unfreeze()
    m.freeze(recurse=False)
    assert "extras.scale" not in names(m.trainable_parameters())
    assert "proj.weight" in names(m.trainable_parameters())
    with pytest.raises(KeyError, match="nope"):
        m.freeze(keys="nope", strict=True)
    # A key present in some submodule is accepted recursively.
    m.freeze(keys="bias", strict=True)
    assert not any(k.endswith("bias") for k in names(m.trainable_parameters()))


def test_batchnorm_running_stats_stay_frozen():
    bn = nn.BatchNorm(3)
    bn.unfreeze()
    assert names(bn.trainable_parameters()) == ["bias", "weight"]
    assert "running_mean" in bn.parameters()


def test_update_and_update_modules_check_their_input():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    new = fx.zeros((2, 2))
    m.update({"layers": [{"weight": new}]})
    assert m.layers[0].weight is new
    with pytest.raises(ValueError, match='no parameter named "layers.0.nope"'):
        m.update({"layers": [{"nope": new}]})
    with pytest.raises(ValueError, match="expected an array for layers.0.weight"):
        m.update({"layers": [{"weight": "text"}]})
    with pytest.raises(ValueError, match="out of bounds"):
        m.update({"layers": [{}, {}, {}]})
    m.update({"layers": [{}, {}, {"weight": new}]}, strict=False)

    m.update_modules({"layers": [{}, nn.Linear(2, 5)]})
    assert m.layers[1].weight.shape == (5, 2)
    with pytest.raises(ValueError, match="no sub-module"):
        m.update_modules({"head": nn.Linear(2, 2)})
    with pytest.raises(ValueError, match="for layers.0, got int"):
        m.update_modules({"layers": [0]})
    holder = nn.Module()
    holder.w = fx.ones((1,))
    with pytest.raises(ValueError, match="cannot put a str at w"):
        holder.update_modules({"w": "text"})


def test_apply_set_dtype_and_training_mode():
    m = Block()
    m.set_dtype(fx.float16)
    assert {v.dtype for _, v in tree_flatten(m.parameters())} == {fx.float16}
    m.apply(lambda a: a * 0)
    assert all(float(np.abs(np.array(v)).max()) == 0 for _, v in tree_flatten(m.parameters()))
    m.eval()
    assert not any(mod.training for mod in m.modules())
    assert m.train() is m and all(mod.training for mod in m.modules())


@pytest.mark.parametrize("ext", [".npz", ".safetensors"])
def test_save_and_load_weights_round_trip(tmp_path, ext):
    src = Block()
    path = str(tmp_path / f"w{ext}")
    src.save_weights(path)
    dst = Block()
    dst.load_weights(path)
    for (k, a), (_, b) in zip(tree_flatten(src.parameters()), tree_flatten(dst.parameters())):
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=k)


def test_load_weights_reports_missing_extra_and_misshaped(tmp_path):
    m = nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"1 missing parameters:\nbias"):
        m.load_weights([("weight", fx.ones((3, 2)))])
    with pytest.raises(ValueError, match=r"1 parameters not in the model:\nextra"):
        m.load_weights([("weight", fx.ones((3, 2))), ("bias", fx.ones((3,))),
                        ("extra", fx.ones((1,)))])
    with pytest.raises(ValueError, match=r"expected shape \(3,\) for bias, got \(2,\)"):
        m.load_weights([("weight", fx.ones((3, 2))), ("bias", fx.ones((2,)))])
    with pytest.raises(ValueError, match="expected an array for bias"):
        m.load_weights([("weight", fx.ones((3, 2))), ("bias", 1.0)])
    m.load_weights([("weight", fx.ones((3, 2))), ("layers.4.w", fx.ones((1,)))], strict=False)
    np.testing.assert_array_equal(np.array(m.weight), np.ones((3, 2)))
    with pytest.raises(ValueError, match="unsupported file extension"):
        m.save_weights(str(tmp_path / "w.bin"))


def test_value_and_grad_matches_finite_differences(rng):
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = fx.array(rng.normal(size=(5, 3)).astype(np.float32))

    def loss_fn(m, inputs):
        return m(inputs).square().mean()

    loss, grads = nn.value_and_grad(model, loss_fn)(model, x)
    assert names(grads) == names(model.trainable_parameters())
    w = np.array(model.layers[0].weight, dtype=np.float64)
    eps = 1e-3
    for i, j in [(0, 0), (2, 1), (3, 2)]:
        def at(delta):
            changed = w.copy()
            changed[i, j] += delta
            model.layers[0].weight = fx.array(changed.astype(np.float32))
            return loss_fn(model, x).item()
        numeric = (at(eps) - at(-eps)) / (2 * eps)
        model.layers[0].weight = fx.array(w.astype(np.float32))
        assert abs(numeric - np.array(grads["layers"][0]["weight"])[i, j]) < 2e-3


def test_value_and_grad_skips_frozen_parameters():
    model = nn.Linear(2, 2)
    model.freeze(keys="bias")
    _, grads = nn.value_and_grad(model, lambda x: model(x).sum())(fx.ones((1, 2)))
    assert list(grads) == ["weight"]
    np.testing.assert_array_equal(np.array(grads["weight"]), np.ones((2, 2)))


def test_checkpoint_gives_the_same_gradients(rng):
    layer = nn.Linear(3, 3)
    x = fx.array(rng.normal(size=(2, 3)).astype(np.float32))
    plain = fx.grad(lambda v: layer(v).square().sum())(x)
    saved = fx.grad(lambda v: nn.utils.checkpoint(layer)(v).square().sum())(x)
    assert_close(plain, saved)


def _regression_problem(rng):
    x = rng.normal(size=(16, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    return fx.array(x), fx.array(y)


def test_compiled_training_step_traces_once_and_learns(rng):
    x, y = _regression_problem(rng)
    model = nn.Linear(3, 1)
    opt = optim.Adam(learning_rate=0.1)
    opt.init(model.trainable_parameters())
    state = [model.state, opt.state]
    traces = []

    def loss_fn(m, inputs, targets):
        return nn.losses.mse_loss(m(inputs), targets)

    @partial(fx.compile, inputs=state, outputs=state)
    def step(inputs, targets):
        traces.append(1)
        loss, grads = nn.value_and_grad(model, loss_fn)(model, inputs, targets)
        opt.update(model, grads)
        return loss

    losses = [step(x, y).item() for _ in range(30)]
    assert len(traces) == 1
    assert opt.step.item() == 30
    assert losses[-1] < 0.1 * losses[0]


def test_compiled_step_with_state_created_in_the_first_trace(rng):
    """Without ``opt.init`` the moments appear during the first trace; the
    second call sees a larger state and retraces once, then the compiled
    step gives the same parameters as the plain one."""
    x, y = _regression_problem(rng)

    def train(compiled):
        fx.random.seed(3)
        model = nn.Linear(3, 1)
        opt = optim.SGD(learning_rate=0.05, momentum=0.9)
        traces = []

        def step(inputs, targets):
            traces.append(1)
            loss, grads = nn.value_and_grad(
                model, lambda: nn.losses.mse_loss(model(inputs), targets))()
            opt.update(model, grads)
            return loss

        if compiled:
            state = [model.state, opt.state]
            step = fx.compile(step, inputs=state, outputs=state)
        for _ in range(5):
            step(x, y)
        return model, len(traces)

    plain, _ = train(False)
    compiled, traces = train(True)
    assert traces <= 2
    assert_close(compiled.weight, plain.weight, rtol=1e-5, atol=1e-6)
    assert_close(compiled.bias, plain.bias, rtol=1e-5, atol=1e-6)


def test_threads_share_one_model_for_inference(rng):
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 2))
    model.eval()
    inputs = [fx.array(rng.normal(size=(3, 4)).astype(np.float32)) for _ in range(8)]
    expected = [np.array(model(x)) for x in inputs]
    barrier = threading.Barrier(len(inputs), timeout=TIMEOUT)
    results = [None] * len(inputs)

    def work(i):
        barrier.wait()
        for _ in range(5):
            results[i] = np.array(model(inputs[i]))

    run_threads(len(inputs), work)
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_importing_core_alone_does_not_import_nn():
    import subprocess
    import sys
    code = "import sys, ferrox.core; print(any(m.startswith('ferrox.nn') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=TIMEOUT)
    assert out.stdout.strip() == "False", out.stderr
    import ferrox
    assert ferrox.nn is nn and ferrox.optimizers is optim


def test_grad_with_a_module_argument():
    model = nn.Linear(2, 1)
    weight = model.weight
    seen = []

    def loss(m):
        seen.append(type(m))
        # The tracers live in a copy: the caller's module keeps its arrays
        # while the function runs (other threads may be using it).
        assert m is not model and model.weight is weight
        return m(fx.ones((1, 2))).sum()

    grads = fx.grad(loss)(model)
    # The traced function sees a Linear (its methods work); the gradient is
    # a plain dict of arrays, and the caller's module is left untouched.
    assert seen == [nn.Linear]
    assert type(grads) is dict
    np.testing.assert_array_equal(np.array(grads["weight"]), np.ones((1, 2)))
    assert model.weight is weight


def test_compiled_step_returning_nothing():
    model = nn.Linear(2, 1)
    opt = optim.SGD(0.1)
    opt.init(model.trainable_parameters())
    state = [model.state, opt.state]
    traces = []

    @partial(fx.compile, inputs=state, outputs=state)
    def step(x):
        traces.append(1)
        _, grads = nn.value_and_grad(model, lambda: model(x).sum())()
        opt.update(model, grads)

    before = np.array(model.bias)
    assert step(fx.ones((1, 2))) is None
    assert step(fx.ones((1, 2))) is None
    assert len(traces) == 1
    assert opt.step.item() == 2
    # d(sum)/d(bias) is 1, so two SGD steps of 0.1 move the bias by -0.2.
    np.testing.assert_allclose(np.array(model.bias), before - 0.2, rtol=1e-6)


def test_compiled_function_returns_constants_with_arrays():
    f = fx.compile(lambda x: (x * 2, None, 3, "done"))
    out = f(fx.array([1.0]))
    assert out[1:] == (None, 3, "done")
    np.testing.assert_array_equal(np.array(out[0]), [2.0])
    # Other objects would be frozen at trace time: refused.
    with pytest.raises(TypeError, match="compile"):
        fx.compile(lambda x: (x, object()))(fx.array([1.0]))
