#!/usr/bin/env python3
"""The linalg decompositions on 512 x 512 matrices: ferrox (faer kernels)
beside numpy (LAPACK) and MLX (CPU, LAPACK), in one run, as ratios.

    python3 bench/linalg_decomp.py                 # builds and runs the Rust side
    python3 bench/linalg_decomp.py --n 256 --reps 5
    python3 bench/linalg_decomp.py --ferrox-bin target/release/examples/decomp_bench
    python3 bench/linalg_decomp.py --ferrox-json timings.jsonl   # reuse a run

The ferrox side is `cargo run --release -p ferrox --example decomp_bench`
(an optimised build: faer's generic algorithms are compiled in ferrox's
crate, so a debug build measures unoptimised code). numpy and MLX time the
same ops on the same kind of input (uniform in [-1, 1); symmetric for
eigh/eigvalsh; SPD for cholesky), median of --reps runs after a warm-up.
"ratio" is ferrox time / reference time: below 1 means ferrox is faster.
Thread counts are each library's defaults (numpy's BLAS and faer/rayon use
every core; set OMP_NUM_THREADS / RAYON_NUM_THREADS to compare on one).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def median_ms(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def inputs(n, dtype):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, size=(n, n))
    sym = a + a.T
    spd = a @ a.T + n * np.eye(n)
    return [x.astype(dtype) for x in (a, sym, spd)]


NUMPY = {
    "qr": (0, lambda a: np.linalg.qr(a)),
    "svd": (0, lambda a: np.linalg.svd(a)),
    "svdvals": (0, lambda a: np.linalg.svd(a, compute_uv=False)),
    "eigh": (1, lambda a: np.linalg.eigh(a)),
    "eigvalsh": (1, lambda a: np.linalg.eigvalsh(a)),
    "eig": (0, lambda a: np.linalg.eig(a)),
    "eigvals": (0, lambda a: np.linalg.eigvals(a)),
    "lu_factor": (0, None),  # numpy has no LU; scipy's if installed
    "det": (0, lambda a: np.linalg.det(a)),
    "pinv": (0, lambda a: np.linalg.pinv(a)),
    "inv": (0, lambda a: np.linalg.inv(a)),
    "cholesky": (2, lambda a: np.linalg.cholesky(a)),
}


def numpy_times(n, reps):
    try:
        import scipy.linalg as sl
        NUMPY["lu_factor"] = (0, lambda a: sl.lu_factor(a, check_finite=False))
    except ImportError:
        pass
    out = {}
    for dtype in ["float32", "float64"]:
        xs = inputs(n, dtype)
        for op, (which, fn) in NUMPY.items():
            if fn is not None:
                out[(op, dtype)] = median_ms(lambda: fn(xs[which]), reps)
    return out


def mlx_times(n, reps):
    try:
        import mlx.core as mx
    except ImportError:
        return {}
    L = mx.linalg
    ops = {
        "qr": (0, lambda a: L.qr(a, stream=mx.cpu)),
        "svd": (0, lambda a: L.svd(a, stream=mx.cpu)),
        "svdvals": (0, lambda a: [L.svd(a, compute_uv=False, stream=mx.cpu)]),
        "eigh": (1, lambda a: L.eigh(a, stream=mx.cpu)),
        "eigvalsh": (1, lambda a: [L.eigvalsh(a, stream=mx.cpu)]),
        "eig": (0, lambda a: L.eig(a, stream=mx.cpu)),
        "eigvals": (0, lambda a: [L.eigvals(a, stream=mx.cpu)]),
        "lu_factor": (0, lambda a: L.lu_factor(a, stream=mx.cpu)),
        "det": (0, lambda a: [L.det(a, stream=mx.cpu)]),
        "pinv": (0, lambda a: [L.pinv(a, stream=mx.cpu)]),
        "inv": (0, lambda a: [L.inv(a, stream=mx.cpu)]),
        "cholesky": (2, lambda a: [L.cholesky(a, stream=mx.cpu)]),
    }
    out = {}
    for dtype in ["float32", "float64"]:
        xs = [mx.array(x) for x in inputs(n, dtype)]
        mx.eval(xs)
        for op, (which, fn) in ops.items():
            try:
                out[(op, dtype)] = median_ms(lambda: mx.eval(*fn(xs[which])), reps)
            except Exception as e:  # noqa: BLE001 - reported as missing
                print(f"mlx {op} {dtype}: {type(e).__name__}: {e}", file=sys.stderr)
    return out


def ferrox_times(n, reps, json_path, binary):
    if json_path:
        lines = open(json_path).read().splitlines()
    elif binary:
        lines = subprocess.run([binary, str(n), str(reps)], check=True,
                               capture_output=True, text=True).stdout.splitlines()
    else:
        env = dict(os.environ)
        env.setdefault("CARGO_BUILD_JOBS", "1")
        cmd = ["cargo", "run", "--quiet", "--release", "-p", "ferrox",
               "--example", "decomp_bench", "--", str(n), str(reps)]
        lines = subprocess.run(cmd, cwd=ROOT, env=env, check=True,
                               capture_output=True, text=True).stdout.splitlines()
    out = {}
    for line in lines:
        if line.startswith("{"):
            r = json.loads(line)
            out[(r["op"], r["dtype"])] = r["ms"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--ferrox-json", help="ferrox timings from an earlier decomp_bench run")
    p.add_argument("--ferrox-bin", help="a built decomp_bench to run instead of cargo run")
    args = p.parse_args()
    fx = ferrox_times(args.n, args.reps, args.ferrox_json, args.ferrox_bin)
    npt = numpy_times(args.n, args.reps)
    mxt = mlx_times(args.n, args.reps)
    print(f"{args.n} x {args.n}, median of {args.reps} runs, ms "
          f"(ratio = ferrox / reference; < 1: ferrox faster); cores: {os.cpu_count()}")
    print(f"{'op':<10} {'dtype':<8} {'ferrox':>9} {'numpy':>9} {'ratio':>6} {'mlx':>9} {'ratio':>6}")
    for (op, dtype), ms in fx.items():
        a, b = npt.get((op, dtype)), mxt.get((op, dtype))
        ra = f"{ms / a:6.2f}" if a else "     -"
        rb = f"{ms / b:6.2f}" if b else "     -"
        fa = f"{a:9.2f}" if a else "        -"
        fb = f"{b:9.2f}" if b else "        -"
        print(f"{op:<10} {dtype:<8} {ms:9.2f} {fa} {ra} {fb} {rb}")


if __name__ == "__main__":
    main()
