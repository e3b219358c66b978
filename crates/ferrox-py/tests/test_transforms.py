"""grad, value_and_grad, vjp, jvp, vmap and compile over trees."""

import gc

import numpy as np
import pytest

import ferrox.core as fx
from conftest import assert_close


def test_grad_simple_and_argnums():
    f = lambda x, y: (x * x * y).sum()
    x, y = fx.array([1.0, 2.0]), fx.array([3.0, 4.0])
    assert fx.grad(f)(x, y).tolist() == [6, 16]
    gx, gy = fx.grad(f, argnums=(0, 1))(x, y)
    assert gx.tolist() == [6, 16]
    assert gy.tolist() == [1, 4]
    assert fx.grad(f, argnums=1)(x, y).tolist() == [1, 4]


def test_grad_over_trees():
    def loss(params, x):
        # (matmul has no vjp rule in the core yet: products and sums instead)
        w = params["layers"][0]["w"]
        h = fx.tanh((x[:, :, None] * w).sum(axis=1) + params["layers"][0]["b"])
        return (h * params["out"]).sum()

    rng = np.random.default_rng(0)
    params = {
        "layers": [{"w": fx.array(rng.standard_normal((3, 4)).astype(np.float32)),
                    "b": fx.zeros((4,))}],
        "out": fx.array(rng.standard_normal((4,)).astype(np.float32)),
    }
    x = fx.array(rng.standard_normal((5, 3)).astype(np.float32))
    g = fx.grad(loss)(params, x)
    assert set(g) == {"layers", "out"}
    assert isinstance(g["layers"], list)
    assert g["layers"][0]["w"].shape == (3, 4)
    assert g["layers"][0]["b"].shape == (4,)
    assert g["out"].shape == (4,)
    # numerical check of one entry
    w = np.array(params["layers"][0]["w"])
    eps = 1e-2

    def at(wv):
        p = {"layers": [{"w": fx.array(wv), "b": params["layers"][0]["b"]}], "out": params["out"]}
        return loss(p, x).item()

    wp, wm = w.copy(), w.copy()
    wp[1, 2] += eps
    wm[1, 2] -= eps
    num = (at(wp) - at(wm)) / (2 * eps)
    assert np.array(g["layers"][0]["w"])[1, 2] == pytest.approx(num, rel=2e-2, abs=1e-3)


def test_value_and_grad_with_aux_and_kwargs():
    def f(x, scale=1.0):
        loss = (x * x).sum() * scale
        return loss, {"double": x * 2}

    (loss, aux), g = fx.value_and_grad(f)(fx.array([1.0, 2.0]), scale=3.0)
    assert loss.item() == 15.0
    assert aux["double"].tolist() == [2, 4]
    assert g.tolist() == [6, 12]


def test_grad_of_grad():
    f = lambda x: (x * x * x).sum()
    assert fx.grad(fx.grad(f))(fx.array(2.0)).item() == pytest.approx(12.0)


def test_grad_errors():
    with pytest.raises(ValueError):
        fx.grad(lambda x: x * 2)(fx.array([1.0, 2.0]))  # not a scalar
    with pytest.raises(ValueError):
        fx.grad(lambda x: x.sum(), argnums=3)(fx.array([1.0]))
    with pytest.raises(ValueError):
        fx.grad(lambda x: x)(2.0)  # nothing to differentiate
    with pytest.raises(TypeError):
        fx.grad(3)

    def raises(x):
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        fx.grad(raises)(fx.array(1.0))


def test_vjp_and_jvp():
    f = lambda x, y: [x * y, fx.sin(x)]
    x, y = fx.array([1.0, 2.0]), fx.array([3.0, 4.0])
    outs, vjps = fx.vjp(f, [x, y], [fx.ones((2,)), fx.zeros((2,))])
    assert outs[0].tolist() == [3, 8]
    assert vjps[0].tolist() == [3, 4]
    assert vjps[1].tolist() == [1, 2]
    outs, jvps = fx.jvp(lambda x: fx.exp(x), [x], [fx.ones((2,))])
    assert_close(jvps[0], np.exp([1.0, 2.0]))
    with pytest.raises(ValueError):
        fx.vjp(f, [x, y], [fx.ones((2,))])
    with pytest.raises(TypeError):
        fx.jvp(f, x, [x])


def test_vmap_axes_and_trees():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([1.0, 2.0], dtype=np.float32)
    f = fx.vmap(lambda x, y: (x * y).sum(), in_axes=(0, None))
    assert_close(f(fx.array(a), fx.array(b)), (a * b).sum(axis=1))
    g = fx.vmap(lambda x: x * 2, in_axes=1, out_axes=1)
    assert_close(g(fx.array(a)), a * 2)
    h = fx.vmap(lambda d: {"s": d["x"] + d["y"], "p": [d["x"] * d["y"]]})
    out = h({"x": fx.array(a), "y": fx.array(a)})
    assert_close(out["s"], 2 * a)
    assert_close(out["p"][0], a * a)
    mv = fx.vmap(lambda m, v: (m * v).sum(axis=1), in_axes=(None, 0))
    m = np.arange(4, dtype=np.float32).reshape(2, 2)
    assert_close(mv(fx.array(m), fx.array(a)), a @ m.T)
    with pytest.raises(ValueError):
        fx.vmap(lambda x, y: x + y)(fx.ones((3,)), fx.ones((4,)))


def test_missing_transform_rules_raise_not_implemented():
    # Reinterpreting bits has no derivative.
    with pytest.raises(NotImplementedError, match="view"):
        fx.grad(lambda a: fx.view(a, fx.int32).astype(fx.float32).sum())(fx.ones((2,)))


def test_grad_through_matmul():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    ga, gb = fx.grad(lambda x, y: (x @ y).sum(), argnums=(0, 1))(fx.array(a), fx.array(b))
    assert_close(ga, np.ones((2, 4), np.float32) @ b.T)
    assert_close(gb, a.T @ np.ones((2, 4), np.float32))


def test_vmap_of_grad():
    per_example = fx.vmap(fx.grad(lambda w, x: (w * x).sum()), in_axes=(None, 0))
    xs = fx.array([[1.0, 2.0], [3.0, 4.0]])
    assert per_example(fx.ones((2,)), xs).tolist() == [[1, 2], [3, 4]]


def test_compile_matches_eager_and_traces_once():
    def f(x, y):
        return fx.exp(x * 2 + y) - 1

    cf = fx.compile(f)
    x, y = fx.array([0.0, 0.5]), fx.array([1.0, -1.0])
    assert_close(cf(x, y), f(x, y))
    assert_close(cf(x, y), f(x, y))
    assert cf.traces == 1
    cf(fx.ones((3,)), fx.ones((3,)))  # new shape: new trace
    assert cf.traces == 2


def test_compile_trees_and_scalar_constants_are_typed():
    calls = []

    def f(params, x, mode, k):
        calls.append(mode)
        y = params["w"] * x + params["b"]
        return {"y": y * k, "both": (y, x)}

    cf = fx.compile(f)
    p = {"w": fx.array([2.0]), "b": fx.array([1.0])}
    out = cf(p, fx.array([3.0]), "train", 2)
    assert out["y"].tolist() == [14]
    assert out["both"][0].tolist() == [7]
    assert isinstance(out["both"], tuple)
    cf(p, fx.array([3.0]), "train", 2)
    assert cf.traces == 1
    assert cf(p, fx.array([3.0]), "train", 3)["y"].tolist() == [21]
    assert cf.traces == 2
    # 2 and 2.0 are different constants
    assert cf(p, fx.array([3.0]), "train", 2.0)["y"].tolist() == [14]
    assert cf.traces == 3
    cf(p, fx.array([3.0]), "eval", 2)
    assert cf.traces == 4
    assert calls == ["train", "train", "train", "eval"]


def test_compile_output_structure_may_depend_on_shape():
    cf = fx.compile(lambda x: [x[i] * 2 for i in range(x.shape[0])])
    assert [o.item() for o in cf(fx.array([1.0, 2.0]))] == [2, 4]
    assert [o.item() for o in cf(fx.array([1.0, 2.0, 3.0]))] == [2, 4, 6]
    assert [o.item() for o in cf(fx.array([5.0, 6.0]))] == [10, 12]
    assert cf.traces == 2


def test_compile_shapeless():
    cf = fx.compile(lambda x: x * 2 + 1, shapeless=True)
    assert cf(fx.ones((2,))).tolist() == [3, 3]
    assert cf(fx.ones((5,))).shape == (5,)
    assert cf.traces == 1


def test_compile_decorator_kwargs_and_errors():
    @fx.compile
    def f(x, *, scale=1.0):
        return x * scale

    assert f(fx.ones((2,)), scale=3.0).tolist() == [3, 3]

    @fx.compile
    def bad(x):
        raise RuntimeError("from python")

    with pytest.raises(RuntimeError, match="from python"):
        bad(fx.ones((2,)))
    # A non-array output is kept as the trace returned it (as in MLX).
    assert fx.compile(lambda x: 3)(fx.ones((2,))) == 3
    with pytest.raises(ValueError, match="unsupported argument type"):
        fx.compile(lambda x: x)(object())


def test_compile_inside_transforms_and_transforms_inside_compile():
    cf = fx.compile(lambda x: (x * x).sum())
    assert fx.grad(cf)(fx.array([1.0, 3.0])).tolist() == [2, 6]
    cg = fx.compile(fx.grad(lambda x: (x * x).sum()))
    assert cg(fx.array([1.0, 3.0])).tolist() == [2, 6]
    assert cg(fx.array([2.0, 3.0])).tolist() == [4, 6]
    assert cg.traces == 1


def test_disable_compile():
    cf = fx.compile(lambda x: x + 1)
    fx.disable_compile()
    try:
        assert cf(fx.ones((2,))).tolist() == [2, 2]
        assert cf.traces == 0
    finally:
        fx.enable_compile()
    cf(fx.ones((2,)))
    assert cf.traces == 1


def test_dropping_a_compiled_function_erases_its_traces():
    gc.collect()
    before = fx.compile_cache_len()
    cf = fx.compile(lambda x: x * 3)
    for n in range(1, 4):
        cf(fx.ones((n,)))
    assert fx.compile_cache_len() == before + 3
    del cf
    gc.collect()
    assert fx.compile_cache_len() == before


def test_a_self_referencing_compiled_function_is_collected():
    gc.collect()
    before = fx.compile_cache_len()

    def make():
        holder = {}

        def f(x):
            holder["me"]  # the closure refers to the compiled object: a cycle
            return x + 1

        holder["me"] = fx.compile(f)
        return holder["me"]

    cf = make()
    cf(fx.ones((2,)))
    assert fx.compile_cache_len() == before + 1
    del cf
    gc.collect()
    assert fx.compile_cache_len() == before


def test_eval_and_async_eval_trees():
    a = fx.ones((3,)) * 2
    b = {"k": [fx.ones((2,)) + 1]}
    fx.eval(a, b)
    fx.async_eval([a, b["k"][0]])
    fx.synchronize()
    assert a.tolist() == [2, 2, 2]


def test_vmap_traces_the_function_once_per_call():
    calls = []

    def f(x, y):
        calls.append(1)
        return x * y, x + y

    xs = fx.arange(6, dtype=fx.float32).reshape(3, 2)
    a, b = fx.vmap(f)(xs, xs)
    assert len(calls) == 1
    np.testing.assert_allclose(np.array(a), np.array(xs) ** 2)
    np.testing.assert_allclose(np.array(b), 2 * np.array(xs))
    # An out_axes tree needs the output structure first: one more call.
    calls.clear()
    a, b = fx.vmap(f, out_axes=(0, 1))(xs, xs)
    assert len(calls) == 2 and b.shape == (2, 3)


def test_compile_with_implicit_state_reads_and_updates_it():
    state = [fx.array(1.0)]

    def step(x):
        state[0] = state[0] * 2 + x
        return state[0] + 1

    f = fx.compile(step, inputs=state, outputs=state)
    assert f(fx.array(0.0)).item() == 3.0 and state[0].item() == 2.0
    assert f(fx.array(1.0)).item() == 6.0 and state[0].item() == 5.0
    assert f.traces == 1
    # A dict of parameters updated in place by a compiled step.
    params = {"w": fx.array([1.0, 2.0])}

    def sgd(g):
        params["w"] = params["w"] - 0.5 * g
        return params["w"].sum()

    s = fx.compile(sgd, inputs=params, outputs=params)
    s(fx.array([2.0, 2.0]))
    assert s(fx.array([2.0, 2.0])).item() == -1.0
    assert params["w"].tolist() == [-1.0, 0.0] and s.traces == 1


def test_compile_with_a_random_key_as_state_draws_new_numbers():
    key = [fx.random.key(0)]

    def draw():
        k, sub = fx.random.split(key[0])
        key[0] = k
        return fx.random.uniform(shape=(4,), key=sub)

    f = fx.compile(draw, inputs=key, outputs=key)
    a, b = f().tolist(), f().tolist()
    assert a != b and f.traces == 1
    assert fx.compile(lambda x: x, inputs=None)(fx.array(2.0)).item() == 2.0


def test_checkpoint_recomputes_in_the_backward_pass():
    calls = []

    def layer(x, w):
        calls.append(1)
        return fx.tanh(x * w)

    ck = fx.checkpoint(layer)
    x, w = fx.array([0.5, -1.0]), fx.array(2.0)
    assert ck(x, w).tolist() == layer(x, w).tolist()
    calls.clear()
    g = fx.grad(lambda w: ck(x, w).sum())(w)
    want = fx.grad(lambda w: layer(x, w).sum())(w)
    assert abs(g.item() - want.item()) < 1e-6
    assert len(calls) == 3, "forward, recompute in backward, and the reference"
    with pytest.raises(TypeError):
        fx.checkpoint(3)


def test_custom_function_rules_replace_the_derived_ones():
    @fx.custom_function
    def f(x, y):
        return fx.exp(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return 2 * cotangent, 3 * cotangent  # deliberately not the true gradient

    x, y = fx.array([0.0, 1.0]), fx.array([2.0, 2.0])
    assert np.allclose(np.array(f(x, y)), np.exp([0.0, 1.0]) * 2)
    gx, gy = fx.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y)
    assert gx.tolist() == [2.0, 2.0] and gy.tolist() == [3.0, 3.0]

    @f.jvp
    def f_jvp(primals, tangents):
        return 10 * tangents[0]

    _, t = fx.jvp(lambda x: f(x, y), (x,), (fx.ones_like(x),))
    assert t[0].tolist() == [10.0, 10.0]

    calls = []

    @f.vmap
    def f_vmap(inputs, axes):
        calls.append(axes)
        x, y = inputs
        return fx.exp(x) * y, 0

    xs = fx.ones((3, 2))
    out = fx.vmap(f, in_axes=(0, None))(xs, y)
    assert out.shape == (3, 2) and calls == [(0, None)]
    # Without rules, everything is derived from the function.
    g = fx.custom_function(lambda x: fx.sin(x))
    assert abs(fx.grad(lambda x: g(x))(fx.array(0.3)).item() - np.cos(0.3)) < 1e-6


def test_custom_function_rule_errors_are_value_errors():
    @fx.custom_function
    def f(x):
        return x * 2

    @f.vjp
    def bad(primals, cotangent, output):
        return cotangent, cotangent  # two cotangents for one primal

    with pytest.raises(ValueError):
        fx.grad(lambda x: f(x).sum())(fx.array([1.0]))
    with pytest.raises(TypeError):
        f.jvp(3)


def test_grad_with_one_argnum_in_a_sequence_returns_the_bare_gradient():
    # As MLX: argnums=(0,) or [0] gives an array, not a 1-tuple.
    f = lambda x, y: (x * y).sum()  # noqa: E731
    for argnums in ((0,), [0]):
        g = fx.grad(f, argnums=argnums)(fx.array(2.0), fx.array(3.0))
        assert isinstance(g, fx.array) and g.item() == 3.0
        _, g = fx.value_and_grad(f, argnums=argnums)(fx.array(2.0), fx.array(3.0))
        assert isinstance(g, fx.array)
    assert len(fx.grad(f, argnums=(0, 1))(fx.array(2.0), fx.array(3.0))) == 2


def test_named_tuples_and_tuple_subclasses_keep_their_types():
    from typing import NamedTuple

    class State(NamedTuple):
        a: fx.array
        b: fx.array

    class Vector(tuple):
        pass

    def step(s):
        return State(s.a + 10, s.b * 10)

    x = State(fx.array([1.0, 2.0]), fx.array([3.0, 4.0]))
    for f in (step, fx.compile(step)):
        out = f(x)
        assert isinstance(out, State) and out.a.tolist() == [11.0, 12.0]
    g = fx.grad(lambda s: step(s).a.sum() + step(s).b.sum())(x)
    assert isinstance(g, State) and g.b.tolist() == [10.0, 10.0]
    v = fx.compile(lambda t: Vector([t[0] + 1, t[1] * 2]))(Vector([fx.array(1.0), fx.array(2.0)]))
    assert isinstance(v, Vector) and [e.item() for e in v] == [2.0, 4.0]
    batched = fx.vmap(step)(State(fx.ones((3, 2)), fx.ones((3, 2))))
    assert isinstance(batched, State) and batched.b.shape == (3, 2)


def test_custom_rules_of_a_one_argument_function_get_the_argument_itself():
    @fx.custom_function
    def f(x):
        return fx.exp(x)

    @f.jvp
    def f_jvp(x, dx):
        return fx.ones_like(x) * 7 * dx

    @f.vjp
    def f_vjp(x, cotangent, output):
        return fx.ones_like(x) * 42 * cotangent

    @f.vmap
    def f_vmap(x, axis):
        return fx.ones_like(x) * 3, axis

    assert fx.grad(f)(fx.array(1.0)).item() == 42.0
    (_,), (t,) = fx.jvp(f, [fx.array(1.0)], [fx.array(1.0)])
    assert t.item() == 7.0
    assert fx.vmap(f)(fx.ones(4)).tolist() == [3.0] * 4


def test_grad_argument_checks_raise_value_errors():
    with pytest.raises(ValueError):
        fx.grad(lambda x: x.sum(keepdims=True))(fx.ones((2, 2)))
    with pytest.raises(ValueError):
        fx.grad(lambda x: x, argnums=-1)
    with pytest.raises(ValueError):
        fx.value_and_grad(lambda x: x, argnums=())
    with pytest.raises(ValueError):
        fx.value_and_grad(lambda p: p["x"] * p["y"])({"x": 0.5, "y": fx.array(2.0)})
    f = fx.grad(lambda x, y: x * y, argnums=[0], argnames=["y"])
    with pytest.raises(ValueError):
        f(x=fx.array(1.0), y=fx.array(2.0))


def test_a_compiled_function_keeps_the_wrapped_docstring_and_signature():
    import inspect

    def inner(x, y: str = "a"):
        """A useful function."""
        return x

    c = fx.compile(inner)
    assert c.__doc__ == inner.__doc__ and c.__name__ == "inner"
    assert inspect.signature(c) == inspect.signature(inner)
    assert "compiled Python function" in inspect.getdoc(fx.CompiledFunction)
