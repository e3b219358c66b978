#!/usr/bin/env python3
"""Side-by-side benchmarks: ferrox (Rust examples, release build) against
numpy, JAX and MLX (whichever are installed), in one run, as ratios.

    python3 bench/run.py            # everything
    python3 bench/run.py --quick    # fewer repetitions

Each case reports the median wall time of several repetitions. A ratio
> 1 means ferrox is faster (competitor_time / ferrox_time).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_threads import calls_per_s  # noqa: E402  (more threads: python_threads.py)


def median_ms(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def ferrox_results(quick):
    """Runs the Rust benchmark examples; each prints JSON lines."""
    results = {}
    for example in ("bench_ops", "bench_runtime", "bench_mlp"):
        cmd = ["cargo", "run", "--release", "-q", "-p", "ferrox", "--example", example]
        if quick:
            cmd += ["--", "--quick"]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                results[r["bench"]] = r
    return results


def numpy_cases(reps):
    import numpy as np
    rng = np.random.default_rng(0)
    x16 = rng.standard_normal(1 << 24, dtype=np.float32)
    out = {}
    for n in (1024, 2048):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out[f"matmul_f32_{n}"] = median_ms(lambda: a @ b, reps)
    out["x*2+1_16M_f32"] = median_ms(lambda: x16 * 2 + 1, reps)
    out["tanh_exp_16M_f32"] = median_ms(lambda: np.tanh(0.5 * x16) * x16 + np.exp(-x16 * x16), reps)
    out["sum_16M_f32"] = median_ms(lambda: x16.sum(), reps)
    d16 = rng.uniform(1, 5, 1 << 24).astype(np.float32)
    out["divmod_16M_f32"] = median_ms(lambda: np.divmod(x16, d16), reps)
    out["floor_divide+remainder_16M_f32"] = median_ms(lambda: (x16 // d16, x16 % d16), reps)

    def tanh_grad():
        y = np.tanh(x16)
        return y, 1 - y * y

    out["tanh_grad_16M_f32"] = median_ms(tanh_grad, reps)
    s = rng.standard_normal((4096, 4096), dtype=np.float32)

    def softmax():
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - m)
        return e / e.sum(axis=-1, keepdims=True)

    out["softmax_4096x4096_f32"] = median_ms(softmax, reps)
    r = rng.standard_normal(1 << 20, dtype=np.float32)
    z = r.astype(np.complex64)
    out["fft_1M_c64"] = median_ms(lambda: np.fft.fft(z), reps)
    out["rfft_1M_f32"] = median_ms(lambda: np.fft.rfft(r), reps)
    z2 = z.reshape(1024, 1024)
    out["fft2_1024x1024_c64"] = median_ms(lambda: np.fft.fft2(z2), reps)
    small = np.ones(16, dtype=np.float32)
    out["eval_3op_16_f32"] = median_ms(lambda: [np.exp(small * 2 + 1) for _ in range(1000)], reps) / 1000
    return out


def jax_cases(reps):
    import jax
    import jax.numpy as jnp
    key = jax.random.PRNGKey(0)
    x16 = jax.random.normal(key, (1 << 24,), dtype=jnp.float32)
    out = {}
    for n in (1024, 2048):
        a = jax.random.normal(key, (n, n), dtype=jnp.float32)
        out[f"matmul_f32_{n}"] = median_ms(lambda: (a @ a).block_until_ready(), reps)
    f1 = jax.jit(lambda x: x * 2 + 1)
    f2 = jax.jit(lambda x: jnp.tanh(0.5 * x) * x + jnp.exp(-x * x))
    out["x*2+1_16M_f32"] = median_ms(lambda: f1(x16).block_until_ready(), reps)
    out["tanh_exp_16M_f32"] = median_ms(lambda: f2(x16).block_until_ready(), reps)
    f4 = jax.jit(lambda x: (lambda y: (y, 1 - y * y))(jnp.tanh(x)))
    out["tanh_grad_16M_f32"] = median_ms(lambda: jax.block_until_ready(f4(x16)), reps)
    out["sum_16M_f32"] = median_ms(lambda: x16.sum().block_until_ready(), reps)
    d16 = jax.random.uniform(key, (1 << 24,), dtype=jnp.float32, minval=1, maxval=5)
    f5 = jax.jit(jnp.divmod)
    out["divmod_16M_f32"] = median_ms(lambda: jax.block_until_ready(f5(x16, d16)), reps)
    s = jax.random.normal(key, (4096, 4096), dtype=jnp.float32)
    out["softmax_4096x4096_f32"] = median_ms(lambda: jax.nn.softmax(s, axis=-1).block_until_ready(), reps)
    small = jnp.ones(16, dtype=jnp.float32)
    f3 = jax.jit(lambda x: jnp.exp(x * 2 + 1))
    out["eval_3op_16_f32"] = median_ms(lambda: [f3(small).block_until_ready() for _ in range(1000)], reps) / 1000
    # Everything above is already jitted: the compiled cases are the same.
    out["x*2+1_16M_f32_compiled"] = out["x*2+1_16M_f32"]
    out["tanh_exp_16M_f32_compiled"] = out["tanh_exp_16M_f32"]
    out["tanh_grad_16M_f32_compiled"] = out["tanh_grad_16M_f32"]
    out["compiled_3op_16_f32"] = out["eval_3op_16_f32"]
    out["mlp_784_512_10_step"] = jax_mlp_ms(reps)
    return out


def mlp_data(np):
    rng = np.random.default_rng(0)
    w1 = (rng.uniform(-1, 1, (784, 512)) / np.sqrt(784)).astype(np.float32)
    w2 = (rng.uniform(-1, 1, (512, 10)) / np.sqrt(512)).astype(np.float32)
    x = rng.uniform(-1, 1, (256, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(256) % 10]
    return [w1, np.zeros(512, np.float32), w2, np.zeros(10, np.float32)], x, y


def jax_mlp_ms(reps):
    import jax
    import jax.numpy as jnp
    import numpy as np
    params, x, y = mlp_data(np)
    params = [jnp.asarray(p) for p in params]
    x, y = jnp.asarray(x), jnp.asarray(y)

    def loss(p, x, y):
        h = jnp.maximum(x @ p[0] + p[1], 0)
        logits = h @ p[2] + p[3]
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.sum(logits * y, axis=-1))

    @jax.jit
    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return l, [a - 0.01 * b for a, b in zip(p, g)]

    state = {"p": params}

    def run():
        for _ in range(20):
            l, state["p"] = step(state["p"], x, y)
        l.block_until_ready()

    return median_ms(run, reps) / 20


def torch_cases(reps):
    import numpy as np
    import torch
    out = {}
    rng = np.random.default_rng(0)
    for n in (1024, 2048):
        a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32))
        out[f"matmul_f32_{n}"] = median_ms(lambda: a @ a, reps)
    x16 = torch.from_numpy(rng.standard_normal(1 << 24, dtype=np.float32))
    out["x*2+1_16M_f32"] = median_ms(lambda: x16 * 2 + 1, reps)
    out["tanh_exp_16M_f32"] = median_ms(lambda: torch.tanh(0.5 * x16) * x16 + torch.exp(-x16 * x16), reps)

    def tanh_grad(x):
        y = torch.tanh(x)
        return y, 1 - y * y

    out["tanh_grad_16M_f32"] = median_ms(lambda: tanh_grad(x16), reps)
    # torch.compile (inductor, C++ codegen at the first call: tens of
    # seconds each); skipped where it cannot build.
    try:
        f1 = torch.compile(lambda x: x * 2 + 1)
        f2 = torch.compile(lambda x: torch.tanh(0.5 * x) * x + torch.exp(-x * x))
        f4 = torch.compile(tanh_grad)
        out["x*2+1_16M_f32_compiled"] = median_ms(lambda: f1(x16), reps)
        out["tanh_exp_16M_f32_compiled"] = median_ms(lambda: f2(x16), reps)
        out["tanh_grad_16M_f32_compiled"] = median_ms(lambda: f4(x16), reps)
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"(torch.compile unavailable: {e}; skipped)", file=sys.stderr)
    out["sum_16M_f32"] = median_ms(lambda: x16.sum(), reps)
    s = torch.from_numpy(rng.standard_normal((4096, 4096), dtype=np.float32))
    out["softmax_4096x4096_f32"] = median_ms(lambda: torch.softmax(s, dim=-1), reps)
    params, x, y = mlp_data(np)
    params = [torch.from_numpy(p).requires_grad_() for p in params]
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def run():
        for _ in range(20):
            h = torch.relu(x @ params[0] + params[1])
            logits = h @ params[2] + params[3]
            loss = (torch.logsumexp(logits, dim=-1) - (logits * y).sum(-1)).mean()
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p -= 0.01 * g

    out["mlp_784_512_10_step"] = median_ms(run, reps) / 20
    return out


def python_cases(reps):
    """Compiled 3-op calls from Python: ferrox.core beside JAX jit,
    torch (eager) and mx.compile. Needs the ferrox wheel
    installed (`maturin build --release` in crates/ferrox-py, pip install)."""
    out = {}
    impls = {}
    try:
        import ferrox.core as fx
        f = fx.compile(lambda x: fx.exp(x * 2 + 1))
        impls["ferrox"] = (lambda n: fx.ones((n,)), lambda x: fx.eval(f(x)))
    except ImportError:
        print("(ferrox.core not installed; Python binding cases skipped)", file=sys.stderr)
    try:
        import jax
        import jax.numpy as jnp
        g = jax.jit(lambda x: jnp.exp(x * 2 + 1))
        impls["jax"] = (lambda n: jnp.ones(n, dtype=jnp.float32), lambda x: g(x).block_until_ready())
    except ImportError:
        pass
    try:
        import mlx.core as mx
        h = mx.compile(lambda x: mx.exp(x * 2 + 1))
        impls["mlx"] = (lambda n: mx.ones((n,)), lambda x: mx.eval(h(x)))
    except ImportError:
        pass
    for name, (make, call) in impls.items():
        x16, x1k = make(16), make(1024)
        us = median_ms(lambda: [call(x16) for _ in range(1000)], reps)  # ms per 1000 = us per call
        two = calls_per_s(lambda: call(x1k), 2, 1.0)
        out[name] = {"py_compiled_3op_16_us": round(us, 2),
                     "py_2threads_3op_1024_calls_per_s": "fails" if two is None else round(two)}
    return out


def mlx_cases(reps):
    import mlx.core as mx
    x16 = mx.random.normal((1 << 24,))
    out = {}
    for n in (1024, 2048):
        a = mx.random.normal((n, n))
        out[f"matmul_f32_{n}"] = median_ms(lambda: mx.eval(a @ a), reps)
    out["x*2+1_16M_f32"] = median_ms(lambda: mx.eval(x16 * 2 + 1), reps)
    out["tanh_exp_16M_f32"] = median_ms(lambda: mx.eval(mx.tanh(0.5 * x16) * x16 + mx.exp(-x16 * x16)), reps)
    out["sum_16M_f32"] = median_ms(lambda: mx.eval(x16.sum()), reps)
    d16 = mx.random.uniform(1, 5, (1 << 24,))
    out["divmod_16M_f32"] = median_ms(lambda: mx.eval(*mx.divmod(x16, d16)), reps)
    out["floor_divide+remainder_16M_f32"] = median_ms(lambda: mx.eval(x16 // d16, x16 % d16), reps)

    def tanh_grad(x):
        y = mx.tanh(x)
        return y, 1 - y * y

    out["tanh_grad_16M_f32"] = median_ms(lambda: mx.eval(*tanh_grad(x16)), reps)
    f5 = mx.compile(tanh_grad)
    out["tanh_grad_16M_f32_compiled"] = median_ms(lambda: mx.eval(*f5(x16)), reps)
    s = mx.random.normal((4096, 4096))
    out["softmax_4096x4096_f32"] = median_ms(lambda: mx.eval(mx.softmax(s, axis=-1)), reps)
    small = mx.ones(16)
    out["eval_3op_16_f32"] = median_ms(lambda: [mx.eval(mx.exp(small * 2 + 1)) for _ in range(1000)], reps) / 1000
    f1 = mx.compile(lambda x: x * 2 + 1)
    f2 = mx.compile(lambda x: mx.tanh(0.5 * x) * x + mx.exp(-x * x))
    f3 = mx.compile(lambda x: mx.exp(x * 2 + 1))
    out["x*2+1_16M_f32_compiled"] = median_ms(lambda: mx.eval(f1(x16)), reps)
    out["tanh_exp_16M_f32_compiled"] = median_ms(lambda: mx.eval(f2(x16)), reps)
    out["compiled_3op_16_f32"] = median_ms(lambda: [mx.eval(f3(small)) for _ in range(1000)], reps) / 1000
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    reps = 3 if args.quick else 9
    fx = ferrox_results(args.quick)
    competitors = {}
    for name, fn in (("numpy", numpy_cases), ("jax", jax_cases), ("torch", torch_cases), ("mlx", mlx_cases)):
        try:
            competitors[name] = fn(reps)
        except ImportError:
            print(f"({name} not installed; skipped)", file=sys.stderr)
    cases = [k for k in fx if "ms" in fx[k] or "us_per_call" in fx[k]]
    header = f"{'case':28} {'ferrox':>10}" + "".join(f" {n:>10} {'ratio':>7}" for n in competitors)
    print(header)
    print("-" * len(header))
    for case in cases:
        r = fx[case]
        ms = r["ms"] if "ms" in r else r["us_per_call"] / 1e3
        row = f"{case:28} {ms:10.4f}"
        for n, c in competitors.items():
            if case in c:
                row += f" {c[case]:10.4f} {c[case] / ms:7.2f}"
            else:
                row += f" {'-':>10} {'-':>7}"
        print(row)
    for k, r in fx.items():
        if k not in cases:
            print(json.dumps(r))
    print("times in ms; ratio = competitor / ferrox (> 1: ferrox faster)")
    print("Python bindings (compiled exp(x*2+1)):")
    for name, r in python_cases(reps).items():
        print(f"  {name:8} {r['py_compiled_3op_16_us']:8.2f} us/call (16 elements), "
              f"{r['py_2threads_3op_1024_calls_per_s']:>9} calls/s from 2 threads (1024 elements)")


if __name__ == "__main__":
    main()
