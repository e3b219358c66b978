"""all_sum of 64 MiB of float32 across 2 local processes: ferrox against
MPI_Allreduce called from C (bench/distributed/allreduce.c, built with
mpicc) and, where it runs, MLX's MPI backend, all in the same run.

    python bench/distributed_bench.py [--mib 64] [--iters 10] [--np 2]

Needs mpicc/mpirun and ferrox built with MPI (maturin develop --features
mpi) in this interpreter. Prints each median time and the ratios
(ferrox / C: lower is better; the issue's bar is 1.5x; mlx / ferrox: at
least 1.0 means ferrox is as fast or faster).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(lib, n, iters):
    if lib == "ferrox":
        import ferrox.core as mx
    else:
        import mlx.core as mx
    group = mx.distributed.init(strict=True, backend="mpi")
    x = mx.ones((n,), dtype=mx.float32)
    mx.eval(x)
    for _ in range(2):
        mx.eval(mx.distributed.all_sum(x, group=group))
    times = []
    for _ in range(iters):
        mx.eval(mx.distributed.all_sum(mx.zeros((1,)), group=group))  # a barrier
        start = time.perf_counter()
        y = mx.distributed.all_sum(x, group=group)
        mx.eval(y)
        times.append(time.perf_counter() - start)
    if group.rank() == 0:
        print(f"{statistics.median(times):.6f}")


def mpirun(np_, argv, env=None):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np_)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    out = subprocess.run(cmd + argv, capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--worker", choices=["ferrox", "mlx"])
    p.add_argument("--mlx-python", default=None, help="an interpreter with mlx (with MPI)")
    a = p.parse_args()
    n = a.mib * (1 << 20) // 4
    if a.worker:
        worker(a.worker, n, a.iters)
        return
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "allreduce")
        subprocess.run(["mpicc", "-O2", "-o", exe, os.path.join(HERE, "distributed", "allreduce.c")],
                       check=True)
        c = mpirun(a.np, [exe, str(n), str(a.iters)], env)
    me = os.path.abspath(__file__)
    fx = mpirun(a.np, [sys.executable, me, "--worker", "ferrox", "--mib", str(a.mib),
                       "--iters", str(a.iters)], env)
    print(f"all_sum {a.mib} MiB float32, {a.np} processes (median of {a.iters})")
    print(f"  MPI_Allreduce from C : {c * 1e3:8.2f} ms")
    print(f"  ferrox all_sum       : {fx * 1e3:8.2f} ms   ferrox / C = {fx / c:.2f}x")
    mlx_python = a.mlx_python
    if mlx_python is None:
        try:
            import mlx.core  # noqa: F401
            mlx_python = sys.executable
        except ImportError:
            pass
    if mlx_python:
        try:
            m = mpirun(a.np, [mlx_python, me, "--worker", "mlx", "--mib", str(a.mib),
                              "--iters", str(a.iters)], env)
            print(f"  mlx all_sum (MPI)    : {m * 1e3:8.2f} ms   mlx / ferrox = {m / fx:.2f}x")
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            print(f"  mlx all_sum (MPI)    : did not run ({str(e).strip().splitlines()[-1][:120]})")
    else:
        print("  mlx all_sum (MPI)    : mlx is not installed here")


if __name__ == "__main__":
    main()
