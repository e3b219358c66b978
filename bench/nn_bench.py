#!/usr/bin/env python3
"""A compiled training step (forward + backward + AdamW update) of two
models, ferrox.nn against mlx.nn, PyTorch (eager and torch.compile) and JAX,
in one process, same run.

    python3 bench/nn_bench.py                 # both models, every framework
    python3 bench/nn_bench.py --repeat 20 --runs 5 --only mlp

Models (float32, CPU):
  mlp          x (256, 784) -> Linear(784, 1024) -> relu -> Linear(1024, 10),
               cross-entropy against integer labels
  transformer  a 4-layer pre-norm transformer encoder, dims 256, 4 heads,
               MLP 1024, relu, no dropout, final LayerNorm, on (8, 128, 256);
               loss mean(out^2)

Every framework runs the same model and the same AdamW (lr 1e-3, weight
decay 0.01), each in its usual fast form: ferrox and mlx
`compile(step, inputs=state, outputs=state)`, torch eager and
`torch.compile(model)` with the foreach AdamW, JAX `jax.jit` of the whole step
(parameters and optimizer state in and out, written by hand: flax/optax are
not needed). One step is timed from the inputs to the updated parameters and
the loss being materialised. A run times --repeat steps of every framework
in turn, after three warm-up steps; --runs runs alternate the frameworks, so
a slow phase of a noisy machine hits them alike. Each row prints the
median over the runs of the per-run median step, the spread of the runs
around it, and every run's time.

Ratios are "speed-up of ferrox": competitor time / ferrox time (above 1:
ferrox is faster). Missing libraries are skipped.
"""
import argparse
import math
import os
import statistics
import sys
import time
from functools import partial

# numpy only makes the data here, but its OpenBLAS starts a thread per core
# at import whose idle spinning took 4-5% of the CPU during the compared
# steps (perf, 2 cores); none of the compared frameworks uses it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402


def median_ms(step, repeat, warmup=3):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# Problem sizes ---------------------------------------------------------------

MLP = dict(batch=256, inputs=784, hidden=1024, classes=10)
ENC = dict(batch=8, seq=128, dims=256, heads=4, mlp=1024, layers=4)
LR, WD = 1e-3, 0.01


def data(kind, rng):
    if kind == "mlp":
        x = rng.standard_normal((MLP["batch"], MLP["inputs"])).astype(np.float32)
        y = rng.integers(0, MLP["classes"], MLP["batch"]).astype(np.int32)
        return x, y
    x = rng.standard_normal((ENC["batch"], ENC["seq"], ENC["dims"])).astype(np.float32)
    return x, None


# ferrox and mlx: the same code on either package -------------------------------

def mlx_like_step(core, nn, optim, kind, x_np, y_np):
    """A compiled step for ferrox or mlx (their APIs agree)."""
    if kind == "mlp":
        model = nn.Sequential(
            nn.Linear(MLP["inputs"], MLP["hidden"]), nn.ReLU(),
            nn.Linear(MLP["hidden"], MLP["classes"]))

        def loss_fn(x, y):
            return nn.losses.cross_entropy(model(x), y, reduction="mean")
    else:
        model = nn.TransformerEncoder(
            ENC["layers"], ENC["dims"], ENC["heads"], mlp_dims=ENC["mlp"],
            norm_first=True)

        def loss_fn(x, y):
            return core.mean(core.square(model(x, None)))

    core.eval(model.parameters())
    opt = optim.AdamW(learning_rate=LR, weight_decay=WD)
    opt.init(model.trainable_parameters())
    loss_and_grad = nn.value_and_grad(model, loss_fn)
    state = [model.state, opt.state]

    @partial(core.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = loss_and_grad(x, y)
        opt.update(model, grads)
        return loss

    x = core.array(x_np)
    y = core.array(y_np) if y_np is not None else core.array(0)

    def run():
        loss = step(x, y)
        core.eval(loss, state)
        return loss

    return run


# torch ---------------------------------------------------------------------

def torch_step(torch, kind, x_np, y_np, compiled):
    nn = torch.nn
    if kind == "mlp":
        model = nn.Sequential(
            nn.Linear(MLP["inputs"], MLP["hidden"]), nn.ReLU(),
            nn.Linear(MLP["hidden"], MLP["classes"]))
        y = torch.from_numpy(y_np.astype(np.int64))

        def loss_of(out):
            return nn.functional.cross_entropy(out, y)
    else:
        layer = nn.TransformerEncoderLayer(
            ENC["dims"], ENC["heads"], ENC["mlp"], dropout=0.0,
            batch_first=True, norm_first=True)
        model = nn.TransformerEncoder(
            layer, ENC["layers"], norm=nn.LayerNorm(ENC["dims"]),
            enable_nested_tensor=False)

        def loss_of(out):
            return (out * out).mean()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD, foreach=True)
    forward = torch.compile(model) if compiled else model
    x = torch.from_numpy(x_np)

    def run():
        opt.zero_grad(set_to_none=True)
        loss = loss_of(forward(x))
        loss.backward()
        opt.step()
        return loss.item()

    return run


# jax -------------------------------------------------------------------------

def jax_step(jax, kind, x_np, y_np):
    jnp = jax.numpy
    key = jax.random.PRNGKey(0)

    def linear(key, n_in, n_out, bias=True):
        k1, k2 = jax.random.split(key)
        bound = 1 / math.sqrt(n_in)
        p = {"w": jax.random.uniform(k1, (n_in, n_out), jnp.float32, -bound, bound)}
        if bias:
            p["b"] = jax.random.uniform(k2, (n_out,), jnp.float32, -bound, bound)
        return p

    def apply_linear(p, x):
        y = x @ p["w"]
        return y + p["b"] if "b" in p else y

    def layer_norm(p, x, eps=1e-5):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]

    def norm_params(d):
        return {"g": jnp.ones((d,), jnp.float32), "b": jnp.zeros((d,), jnp.float32)}

    if kind == "mlp":
        k1, k2 = jax.random.split(key)
        params = {"l1": linear(k1, MLP["inputs"], MLP["hidden"]),
                  "l2": linear(k2, MLP["hidden"], MLP["classes"])}

        def loss_fn(p, x, y):
            logits = apply_linear(p["l2"], jax.nn.relu(apply_linear(p["l1"], x)))
            logp = jax.nn.log_softmax(logits)
            return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()
    else:
        d, h, f = ENC["dims"], ENC["heads"], ENC["mlp"]
        keys = jax.random.split(key, ENC["layers"])

        def layer_params(k):
            ks = jax.random.split(k, 6)
            return {"q": linear(ks[0], d, d, False), "k": linear(ks[1], d, d, False),
                    "v": linear(ks[2], d, d, False), "o": linear(ks[3], d, d, False),
                    "ln1": norm_params(d), "ln2": norm_params(d),
                    "f1": linear(ks[4], d, f), "f2": linear(ks[5], f, d)}

        params = {"layers": [layer_params(k) for k in keys], "ln": norm_params(d)}

        def attention(p, x):
            b, t, _ = x.shape

            def heads(z):
                return z.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)
            q, k, v = (heads(apply_linear(p[n], x)) for n in "qkv")
            s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(d // h)
            o = jax.nn.softmax(s, axis=-1) @ v
            return apply_linear(p["o"], o.transpose(0, 2, 1, 3).reshape(b, t, d))

        def loss_fn(p, x, y):
            for lp in p["layers"]:
                x = x + attention(lp, layer_norm(lp["ln1"], x))
                y_ = layer_norm(lp["ln2"], x)
                x = x + apply_linear(lp["f2"], jax.nn.relu(apply_linear(lp["f1"], y_)))
            out = layer_norm(p["ln"], x)
            return (out * out).mean()

    b1, b2, eps = 0.9, 0.999, 1e-8
    # Two trees of fresh buffers: the step donates both.
    opt_state = (jax.tree_util.tree_map(jnp.zeros_like, params),
                 jax.tree_util.tree_map(jnp.zeros_like, params),
                 jnp.array(0, jnp.int32))

    @partial(jax.jit, donate_argnums=(0, 1))
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        m, v, t = opt_state
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1 = 1 - b1 ** t.astype(jnp.float32)
        c2 = 1 - b2 ** t.astype(jnp.float32)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p * (1 - LR * WD) - LR * (m / c1) / (jnp.sqrt(v / c2) + eps),
            params, m, v)
        return params, (m, v, t), loss

    x = jnp.asarray(x_np)
    y = jnp.asarray(y_np) if y_np is not None else jnp.array(0)
    holder = {"p": params, "s": opt_state}

    def run():
        holder["p"], holder["s"], loss = step(holder["p"], holder["s"], x, y)
        return loss.block_until_ready()

    return run


# driver ----------------------------------------------------------------------

def frameworks():
    out = []
    try:
        import ferrox.core as fx
        import ferrox.nn as fnn
        import ferrox.optimizers as fopt
        out.append(("ferrox", lambda k, x, y: mlx_like_step(fx, fnn, fopt, k, x, y)))
    except ImportError:
        print("ferrox not importable: nothing to compare", file=sys.stderr)
        sys.exit(1)
    try:
        import mlx.core as mx
        import mlx.nn as mnn
        import mlx.optimizers as mopt
        out.append(("mlx", lambda k, x, y: mlx_like_step(mx, mnn, mopt, k, x, y)))
    except ImportError:
        pass
    try:
        import torch
        out.append(("torch eager", lambda k, x, y: torch_step(torch, k, x, y, False)))
        out.append(("torch.compile", lambda k, x, y: torch_step(torch, k, x, y, True)))
    except ImportError:
        pass
    try:
        import jax
        jax.config.update("jax_platform_name", "cpu")
        out.append(("jax.jit", lambda k, x, y: jax_step(jax, k, x, y)))
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=["mlp", "transformer"])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    kinds = [args.only] if args.only else ["mlp", "transformer"]
    for kind in kinds:
        x, y = data(kind, rng)
        steps = {}
        for name, make in frameworks():
            try:
                steps[name] = make(kind, x, y)
            except Exception as e:  # a competitor that does not build here
                print(f"  {kind}: {name} failed: {type(e).__name__}: {e}".splitlines()[0])
        runs = {name: [] for name in steps}
        for _ in range(args.runs):
            for name, step in steps.items():
                try:
                    runs[name].append(median_ms(step, args.repeat))
                except Exception as e:
                    print(f"  {kind}: {name} failed: {type(e).__name__}: {e}".splitlines()[0])
        times = {name: statistics.median(t) for name, t in runs.items() if t}
        base = times.get("ferrox")
        print(f"\n{kind}: one training step (median of {args.repeat} steps, "
              f"median of {args.runs} runs), ms; speed-up of ferrox = their time / ferrox time")
        for name, ms in times.items():
            ratio = "" if name == "ferrox" or base is None else f"{ms / base:6.2f}x"
            spread = max(abs(t - ms) for t in runs[name]) / ms * 100
            each = " ".join(f"{t:.2f}" for t in runs[name])
            print(f"  {name:14s} {ms:9.2f} ms  {ratio:7s} spread ±{spread:4.1f}%  runs: {each}")


if __name__ == "__main__":
    main()
