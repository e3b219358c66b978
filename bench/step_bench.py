#!/usr/bin/env python3
"""The three performance targets side by side, in one run, as ratios:

  mlp     a 784-512-10 perceptron (ReLU), batch 256: one compiled
          value_and_grad + SGD step, cross-entropy through logsumexp and
          take_along_axis with integer labels
  fused   tanh(0.5 x) * x + exp(-x * x) on 16M float32, compiled
  matmul  2048 x 2048 float32 @ 2048 x 2048
  products  each matrix product of the perceptron step alone (forward, and
          backward with transposed operands as views)

against JAX (jit), PyTorch, MLX and numpy, whichever are installed.

    python bench/step_bench.py                # 5 runs of every row
    python bench/step_bench.py --runs 3 --only mlp --only products

Each run measures every implementation once, in turn, so slow phases of a
noisy machine hit them alike; a row prints each run's milliseconds, the
median, the spread of the runs around their median, and the ratio
peer_time / ferrox_time of the medians (> 1: ferrox is faster). Needs a
release build of ferrox.core (`maturin develop --release` in
crates/ferrox-py).
"""
import argparse
import statistics
import sys
import time

import numpy as np

BATCH, DIN, HIDDEN, CLASSES = 256, 784, 512, 10
FUSED_N = 1 << 24
MATMUL_N = 2048
# The perceptron step's products, (name, m, k, n, a transposed, b transposed):
# the forward ones and the backward ones, whose transposed operands are
# views of the forward arrays.
STEP_PRODUCTS = [
    ("x@w1", 256, 784, 512, False, False),
    ("h@w2", 256, 512, 10, False, False),
    ("g@w2T", 256, 10, 512, False, True),
    ("hT@g", 512, 256, 10, True, False),
    ("xT@dh", 784, 256, 512, True, False),
]


def product_operands(m, k, n, ta, tb):
    """numpy operands of one step product, transposed views where marked."""
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    return (a.T if ta else a), (b.T if tb else b)


def product_cases(to_lib, matmul):
    """One case per step product: `matmul` of the operands `to_lib` makes
    (transposing inside the library, so the operands are its own views)."""
    cases = {}
    for name, m, k, n, ta, tb in STEP_PRODUCTS:
        a, b = product_operands(m, k, n, ta, tb)
        la, lb = to_lib(np.ascontiguousarray(a.T) if ta else a), to_lib(np.ascontiguousarray(b.T) if tb else b)
        la, lb = (la.T if ta else la), (lb.T if tb else lb)
        cases[f"mm {name}"] = ((lambda la=la, lb=lb: matmul(la, lb)), 1)
    return cases


def best_ms(fn, seconds):
    """The median of `fn`'s times over about `seconds` (at least 5 calls),
    after two warm-up calls."""
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def mlp_data():
    rng = np.random.default_rng(0)
    w1 = (rng.uniform(-1, 1, (DIN, HIDDEN)) / np.sqrt(DIN)).astype(np.float32)
    w2 = (rng.uniform(-1, 1, (HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32)
    x = rng.uniform(-1, 1, (BATCH, DIN)).astype(np.float32)
    labels = (np.arange(BATCH) % CLASSES).astype(np.int32)
    params = [w1, np.zeros(HIDDEN, np.float32), w2, np.zeros(CLASSES, np.float32)]
    return params, x, labels


# ---------------------------------------------------------------------------
# ferrox.core and mlx.core share one program: the same names, the same calls.
# ---------------------------------------------------------------------------

def mx_like_cases(mx):
    params, x, labels = mlp_data()
    params = [mx.array(p) for p in params]
    x, labels = mx.array(x), mx.array(labels)

    def loss(p, x, y):
        h = mx.maximum(x @ p[0] + p[1], 0)
        logits = h @ p[2] + p[3]
        picked = mx.take_along_axis(logits, y[:, None], axis=-1).squeeze(-1)
        return mx.mean(mx.logsumexp(logits, axis=-1) - picked)

    value_and_grad = mx.value_and_grad(loss)

    @mx.compile
    def step(p, x, y):
        value, grads = value_and_grad(p, x, y)
        return value, [a - 0.01 * g for a, g in zip(p, grads)]

    state = {"p": params}

    def mlp():
        for _ in range(20):
            value, state["p"] = step(state["p"], x, labels)
            mx.eval(value, state["p"])

    xf = mx.random.normal((FUSED_N,))
    fused_fn = mx.compile(lambda v: mx.tanh(0.5 * v) * v + mx.exp(-v * v))
    a = mx.random.normal((MATMUL_N, MATMUL_N))
    b = mx.random.normal((MATMUL_N, MATMUL_N))
    mx.eval(xf, a, b)
    return {
        "mlp": (mlp, 20),
        "fused": (lambda: mx.eval(fused_fn(xf)), 1),
        "matmul": (lambda: mx.eval(a @ b), 1),
        **product_cases(mx.array, lambda a, b: mx.eval(a @ b)),
    }


def jax_cases():
    import jax
    import jax.numpy as jnp

    params, x, labels = mlp_data()
    params = [jnp.asarray(p) for p in params]
    x, labels = jnp.asarray(x), jnp.asarray(labels)

    def loss(p, x, y):
        h = jnp.maximum(x @ p[0] + p[1], 0)
        logits = h @ p[2] + p[3]
        picked = jnp.take_along_axis(logits, y[:, None], axis=-1).squeeze(-1)
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)

    @jax.jit
    def step(p, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return value, [a - 0.01 * g for a, g in zip(p, grads)]

    state = {"p": params}

    def mlp():
        for _ in range(20):
            value, state["p"] = step(state["p"], x, labels)
        jax.block_until_ready((value, state["p"]))

    key = jax.random.PRNGKey(0)
    xf = jax.random.normal(key, (FUSED_N,), dtype=jnp.float32)
    fused_fn = jax.jit(lambda v: jnp.tanh(0.5 * v) * v + jnp.exp(-v * v))
    a = jax.random.normal(key, (MATMUL_N, MATMUL_N), dtype=jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (MATMUL_N, MATMUL_N), dtype=jnp.float32)
    matmul = jax.jit(lambda a, b: a @ b)
    return {
        "mlp": (mlp, 20),
        "fused": (lambda: fused_fn(xf).block_until_ready(), 1),
        "matmul": (lambda: matmul(a, b).block_until_ready(), 1),
        **product_cases(jnp.asarray, lambda a, b: matmul(a, b).block_until_ready()),
    }


def torch_cases():
    import torch

    params, x, labels = mlp_data()
    params = [torch.from_numpy(p).requires_grad_() for p in params]
    x, labels = torch.from_numpy(x), torch.from_numpy(labels).long()

    def mlp():
        for _ in range(20):
            h = torch.relu(x @ params[0] + params[1])
            logits = h @ params[2] + params[3]
            picked = logits.gather(1, labels[:, None]).squeeze(1)
            value = (torch.logsumexp(logits, dim=-1) - picked).mean()
            grads = torch.autograd.grad(value, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= 0.01 * g

    rng = np.random.default_rng(0)
    xf = torch.from_numpy(rng.standard_normal(FUSED_N, dtype=np.float32))
    a = torch.from_numpy(rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32))
    b = torch.from_numpy(rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32))
    return {
        "mlp": (mlp, 20),
        # Eager: torch.compile needs a C compiler toolchain per shape and is
        # not what a torch user runs for one expression.
        "fused": (lambda: torch.tanh(0.5 * xf) * xf + torch.exp(-xf * xf), 1),
        "matmul": (lambda: a @ b, 1),
        **product_cases(torch.from_numpy, lambda a, b: a @ b),
    }


def numpy_cases():
    rng = np.random.default_rng(0)
    xf = rng.standard_normal(FUSED_N, dtype=np.float32)
    a = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    b = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    return {
        "fused": (lambda: np.tanh(0.5 * xf) * xf + np.exp(-xf * xf), 1),
        "matmul": (lambda: a @ b, 1),
        **product_cases(lambda x: x, lambda a, b: a @ b),
    }


def implementations():
    """(name, cases) for every installed implementation, ferrox first."""
    import ferrox.core as fx

    found = [("ferrox", mx_like_cases(fx))]
    for name, make in (
        ("jax", jax_cases),
        ("torch", torch_cases),
        ("mlx", lambda: mx_like_cases(__import__("mlx.core", fromlist=["core"]))),
        ("numpy", numpy_cases),
    ):
        try:
            found.append((name, make()))
        except ImportError as e:
            print(f"({name} not installed: {e}; skipped)", file=sys.stderr)
    return found


ROWS = {
    "mlp": "MLP 784-512-10 step, batch 256 (ms/step)",
    "fused": "compiled tanh(0.5x)*x + exp(-x*x), 16M f32 (ms)",
    "matmul": "matmul 2048^2 f32 (ms)",
    **{f"mm {name}": f"the step's product {name}: {m}x{k} @ {k}x{n} f32 (ms)" for name, m, k, n, _, _ in STEP_PRODUCTS},
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.5, help="per measurement")
    ap.add_argument("--only", choices=["mlp", "fused", "matmul", "products"], action="append")
    args = ap.parse_args()
    chosen = args.only or ["mlp", "fused", "matmul", "products"]
    rows = [r for r in ROWS if r in chosen or (r.startswith("mm ") and "products" in chosen)]
    impls = implementations()
    times = {(row, name): [] for row in rows for name, _ in impls}
    for _ in range(args.runs):
        for row in rows:
            for name, cases in impls:
                if row in cases:
                    fn, per = cases[row]
                    times[(row, name)].append(best_ms(fn, args.seconds) / per)
    for row in rows:
        print(f"\n{ROWS[row]}")
        ours = statistics.median(times[(row, "ferrox")])
        for name, _ in impls:
            runs = times[(row, name)]
            if not runs:
                continue
            med = statistics.median(runs)
            spread = max(abs(t - med) for t in runs) / med * 100
            ratio = "" if name == "ferrox" else f"  ratio {med / ours:5.2f}x"
            shown = " ".join(f"{t:7.2f}" for t in runs)
            print(f"  {name:7s} median {med:8.3f}  spread ±{spread:4.1f}%{ratio}   runs: {shown}")


if __name__ == "__main__":
    main()
