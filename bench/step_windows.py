#!/usr/bin/env python3
"""The perceptron step of step_bench.py, ferrox and JAX in alternating
short windows, to tell a noisy machine from a noisy implementation.

    python bench/step_windows.py                 # 40 s of 0.5 s windows
    python bench/step_windows.py --seconds 60 --window 0.25

Each window times one implementation's step for `--window` seconds and
keeps the median step; the two alternate for `--seconds`. The rows are
each implementation's window medians in time order and their ratio
jax / ferrox. When slow windows line up across both rows, the machine
slowed down (a busy host), not one implementation; the ratio row is then
the comparison that stays fair. Needs a release build of ferrox.core and
JAX installed.
"""
import argparse
import statistics
import time

import step_bench


def window_ms(fn, per, seconds):
    """The median milliseconds per step of `fn` (which runs `per` steps)
    over `seconds`."""
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3 / per)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--window", type=float, default=0.5)
    args = ap.parse_args()
    import ferrox.core as fx

    steps = {"ferrox": step_bench.mx_like_cases(fx)["mlp"], "jax": step_bench.jax_cases()["mlp"]}
    for fn, _ in steps.values():
        fn()
        fn()
    rows = {name: [] for name in steps}
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        for name, (fn, per) in steps.items():
            rows[name].append(window_ms(fn, per, args.window))
    ratios = [j / f for f, j in zip(rows["ferrox"], rows["jax"])]
    for name, row in (*rows.items(), ("ratio", ratios)):
        print(f"{name:7s} median {statistics.median(row):6.3f}  " + " ".join(f"{x:.2f}" for x in row))


if __name__ == "__main__":
    main()
