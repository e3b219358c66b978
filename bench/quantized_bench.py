#!/usr/bin/env python3
"""4-bit quantized_matmul against the float32 matmul of the same shape,
ferrox and MLX (CPU) side by side, in one run, as ratios.

    python3 bench/quantized_bench.py                       # libraries importable here
    python3 bench/quantized_bench.py --mlx-python /path/to/python-with-mlx
    python3 bench/quantized_bench.py --reps 20 --k 4096 --n 4096

Cases: decode x (1, K) and prefill x (512, K) times W^T with W (N, K)
(default 4096 x 4096), W quantized with group size 64 and 4 bits. For
each library the script times, in the same process, `x @ W.T` in float32
and `quantized_matmul(x, W_q, scales, biases)` (median of --reps after a
warm-up, each call evaluated) and reports "speedup" = f32 time / quantized
time: above 1 the quantized product is faster than the float one.
ferrox needs a release build of the Python module
(`cd crates/ferrox-py && maturin develop --release`); a debug build
measures unoptimised code.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [("decode", 1), ("prefill", 512)]


def median_ms(fn, reps):
    fn()
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def run_side(lib, k, n, reps, bits, group_size):
    import numpy as np

    if lib == "ferrox":
        import ferrox.core as mx
    else:
        import mlx.core as mx
        mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    w = mx.array(rng.standard_normal((n, k)).astype(np.float32))
    wq, s, b = mx.quantize(w, group_size=group_size, bits=bits)
    wt = mx.transpose(w)
    mx.eval(w, wq, s, b, wt)
    out = []
    for name, m in CASES:
        x = mx.array(rng.standard_normal((m, k)).astype(np.float32))
        mx.eval(x)
        f32 = median_ms(lambda: mx.eval(mx.matmul(x, wt)), reps)
        q = median_ms(
            lambda: mx.eval(mx.quantized_matmul(x, wq, s, b, True, group_size, bits)), reps
        )
        out.append(dict(lib=lib, case=name, m=m, k=k, n=n, f32_ms=f32, q_ms=q, speedup=f32 / q))
    return out


def importable(py, module):
    try:
        r = subprocess.run([py, "-c", f"import {module}"], capture_output=True)
    except OSError:
        return False
    return r.returncode == 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--bits", type=int, default=4)
    p.add_argument("--group-size", type=int, default=64)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--only", choices=["ferrox", "mlx"], help="run one library only")
    p.add_argument("--ferrox-python", default=sys.executable)
    p.add_argument("--mlx-python", default=sys.executable)
    p.add_argument("--side", choices=["ferrox", "mlx"], help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.side:
        print(json.dumps(run_side(a.side, a.k, a.n, a.reps, a.bits, a.group_size)))
        return
    rows = []
    for lib, py, module in [
        ("ferrox", a.ferrox_python, "ferrox.core"),
        ("mlx", a.mlx_python, "mlx.core"),
    ]:
        if a.only and lib != a.only:
            continue
        if not importable(py, module):
            print(f"({module} not importable by {py})", file=sys.stderr)
            continue
        cmd = [py, os.path.abspath(__file__), "--side", lib, "--k", str(a.k), "--n", str(a.n),
               "--reps", str(a.reps), "--bits", str(a.bits), "--group-size", str(a.group_size)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{lib} failed:\n{r.stderr}", file=sys.stderr)
            continue
        rows += json.loads(r.stdout.strip().splitlines()[-1])
    print(f"{a.bits}-bit quantized_matmul (group {a.group_size}) vs float32 matmul, "
          f"x (M, {a.k}) @ W^T, W ({a.n}, {a.k}); speedup = f32 / quantized")
    print(f"{'lib':8} {'case':8} {'M':>4} {'f32 ms':>9} {'quant ms':>9} {'speedup':>8}")
    for r in rows:
        print(f"{r['lib']:8} {r['case']:8} {r['m']:>4} {r['f32_ms']:9.3f} {r['q_ms']:9.3f} "
              f"{r['speedup']:8.2f}")


if __name__ == "__main__":
    main()
