#!/usr/bin/env python3
"""Python threads calling one compiled function: total throughput by thread
count, ferrox.core beside JAX jit and mx.compile in the same run, as ratios.

    python3 bench/python_threads.py            # needs a release build of ferrox.core:
    #   cd crates/ferrox-py && maturin develop --release   (in the venv that runs this)
    python3 bench/python_threads.py --quick

Cases: a cached compiled exp(x * 2 + 1) on 16, 1024 and 1M float32 elements,
and a 512x512 matmul, each call followed by an evaluation, from 1, 2, 4 and
8 threads (total calls/s, median of --repeat runs); single-thread dispatch
of the 16-element call in microseconds; and an op whose allocation goes over
the memory limit (ferrox only), alone and beside another evaluating thread.

On a machine where one large call already keeps every core busy (ferrox's
kernels run on a rayon pool of one thread per core), more Python threads
cannot add throughput; RAYON_NUM_THREADS=1 shows what the binding itself
allows (large calls release the GIL, so N threads overlap).
"""
import argparse
import statistics
import sys
import threading
import time


def calls_per_s(call, threads, secs):
    """Total calls per second of `call` from `threads` threads started
    together; None if a thread raised (MLX raises on threads without a
    stream)."""
    counts = [0.0] * threads
    failed = []
    ready = threading.Barrier(threads + 1)

    def run(i):
        try:
            call()
            ready.wait()
            t = time.perf_counter()
            n = 0
            while time.perf_counter() - t < secs:
                call()
                n += 1
            counts[i] = n / (time.perf_counter() - t)
        except threading.BrokenBarrierError:
            pass
        except Exception as e:  # noqa: BLE001 - reported as a failed case
            failed.append(f"{type(e).__name__}: {e}")
            ready.abort()

    ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for t in ts:
        t.start()
    try:
        ready.wait(timeout=60)
    except threading.BrokenBarrierError:
        pass
    for t in ts:
        t.join(timeout=60 + secs)
    return None if failed else sum(counts)


def data(n, square=False):
    """Materialized float32 inputs (a broadcast `ones` would take the
    strided paths), the same values for every implementation."""
    import numpy as np
    rng = np.random.default_rng(0)
    shape = (n, n) if square else (n,)
    return (rng.standard_normal(shape) * (0.03 if square else 0.5)).astype(np.float32)


def implementations():
    impls = {}
    try:
        import ferrox.core as fx
        f = fx.compile(lambda x: fx.exp(x * 2 + 1))
        mm = fx.compile(lambda a: a @ a)
        impls["ferrox"] = dict(
            make=lambda n: fx.array(data(n)),
            square=lambda n: fx.array(data(n, True)),
            call=lambda x: fx.eval(f(x)),
            matmul=lambda a: fx.eval(mm(a)),
        )
    except ImportError:
        print("(ferrox.core not installed)", file=sys.stderr)
    try:
        import jax
        import jax.numpy as jnp
        g = jax.jit(lambda x: jnp.exp(x * 2 + 1))
        gm = jax.jit(lambda a: a @ a)
        impls["jax"] = dict(
            make=lambda n: jnp.asarray(data(n)),
            square=lambda n: jnp.asarray(data(n, True)),
            call=lambda x: g(x).block_until_ready(),
            matmul=lambda a: gm(a).block_until_ready(),
        )
    except ImportError:
        print("(jax not installed)", file=sys.stderr)
    try:
        import mlx.core as mx
        h = mx.compile(lambda x: mx.exp(x * 2 + 1))
        hm = mx.compile(lambda a: a @ a)
        impls["mlx"] = dict(
            make=lambda n: mx.array(data(n)),
            square=lambda n: mx.array(data(n, True)),
            call=lambda x: mx.eval(h(x)),
            matmul=lambda a: mx.eval(hm(a)),
        )
    except ImportError:
        print("(mlx not installed)", file=sys.stderr)
    return impls


def dispatch_us(call, x, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(2000):
            call(x)
        times.append((time.perf_counter() - t) / 2000 * 1e6)
    return statistics.median(times)


def memory_limit_ms(reps):
    """ferrox: an op whose 4 MiB result goes over the memory limit, alone
    and while another thread evaluates (the only case that may wait)."""
    import ferrox.core as fx
    x = fx.ones((1 << 20,))
    fx.eval(x)
    held = fx.ones((1 << 20,)) + 0
    fx.eval(held)

    def op():
        fx.eval(x * 2)

    def timed():
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            op()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)

    under = timed()
    old = fx.set_memory_limit(fx.get_active_memory() + (1 << 21))
    try:
        alone = timed()
        stop = threading.Event()

        def busy():
            y = fx.ones((256, 256))
            while not stop.is_set():
                fx.eval(y @ y)

        t = threading.Thread(target=busy, daemon=True)
        t.start()
        time.sleep(0.05)
        beside = timed()
        stop.set()
        t.join(10)
    finally:
        fx.set_memory_limit(old)
    return under, alone, beside


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=None)
    p.add_argument("--only", default=None, help="comma-separated: ferrox,jax,mlx")
    args = p.parse_args()
    repeat = args.repeat or (1 if args.quick else 3)
    secs = 0.5 if args.quick else 1.0
    impls = implementations()
    if args.only:
        impls = {k: v for k, v in impls.items() if k in args.only.split(",")}
    threads = (1, 2, 4, 8)
    cases = [("exp(2x+1) 16", "call", 16), ("exp(2x+1) 1024", "call", 1024),
             ("exp(2x+1) 1M", "call", 1 << 20), ("matmul 512", "matmul", 512)]
    results = {}
    for name, impl in impls.items():
        for case, kind, n in cases:
            x = impl["square"](n) if kind == "matmul" else impl["make"](n)
            fn = impl[kind]
            # Thread counts interleave within each repetition, so a drift of
            # the machine's speed between repetitions hits them alike.
            runs = {t: [] for t in threads}
            for _ in range(repeat):
                for t in threads:
                    r = calls_per_s(lambda: fn(x), t, secs)
                    if r is not None:
                        runs[t].append(r)
            for t in threads:
                results[(name, case, t)] = statistics.median(runs[t]) if runs[t] else None
    names = list(impls)
    print(f"total calls/s (median of {repeat}); ratio = ferrox / peer; scaling = n threads / 1 thread")
    header = f"{'case':16} {'threads':>7}" + "".join(f" {n:>10}" for n in names)
    header += "".join(f" {'vs ' + n:>8}" for n in names if n != "ferrox") + f" {'scaling':>8}"
    print(header)
    print("-" * len(header))
    for case, _, _ in cases:
        for t in threads:
            row = f"{case:16} {t:7}"
            for n in names:
                r = results.get((n, case, t))
                row += f" {r:10.0f}" if r else f" {'fails':>10}"
            fx_r = results.get(("ferrox", case, t))
            for n in names:
                if n == "ferrox":
                    continue
                r = results.get((n, case, t))
                row += f" {fx_r / r:8.2f}" if fx_r and r else f" {'-':>8}"
            one = results.get(("ferrox", case, 1))
            row += f" {fx_r / one:8.2f}" if fx_r and one else f" {'-':>8}"
            print(row)
    print("single-thread dispatch, cached compiled call + eval, 16 elements (us/call):")
    for name, impl in impls.items():
        x = impl["make"](16)
        print(f"  {name:8} {dispatch_us(impl['call'], x, 3 if args.quick else 7):8.2f}")
    if "ferrox" in impls:
        under, alone, beside = memory_limit_ms(5 if args.quick else 15)
        print("ferrox op with a 4 MiB result (ms): under the limit "
              f"{under:.3f}; over it, alone {alone:.3f}; over it, beside an evaluating thread "
              f"{beside:.3f} (waits are bounded at 20 ms)")


if __name__ == "__main__":
    main()
