"""Interpreter exit with threads inside ferrox calls (contract items 8 and 10).

Each scenario runs in a fresh interpreter FERROX_EXIT_RUNS times (default 50)
and must exit 0 with nothing on stdout or stderr. During finalization
CPython 3.11-3.13 ends a daemon thread that takes the GIL back with
pthread_exit, a forced unwind; the binding must never let it unwind Rust
frames (see crates/ferrox-py/src/gil.rs). Each run has a timeout, so a hang
at exit fails too.
"""

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

RUNS = int(os.environ.get("FERROX_EXIT_RUNS", "50"))
# Runs in flight at once: the scenarios mostly sleep or spin in daemon
# threads, so a few more than the cores keeps the suite short.
PARALLEL = int(os.environ.get("FERROX_EXIT_PARALLEL", "4"))
RUN_TIMEOUT = 60

SCENARIOS = {
    # A daemon thread busy in eval: a matmul large enough to release the
    # GIL, and a small one that keeps it.
    "eval_loop": """
        a = fx.ones((256, 256))
        b = fx.ones((8, 8))
        def big():
            while True:
                fx.eval(fx.matmul(a, a) + 1)
        def small():
            while True:
                fx.eval(fx.matmul(b, b) + 1)
                fx.matmul(b, b).sum().item()
        for f in (big, small):
            threading.Thread(target=f, daemon=True).start()
        time.sleep(0.3)
    """,
    # One daemon thread inside a compiled function's first trace (the traced
    # function sleeps, giving the GIL up and taking it back), three waiting
    # on that trace.
    "inside_trace": """
        def slow(x):
            for _ in range(100):
                time.sleep(0.01)
            return x * 2
        f = fx.compile(slow)
        x = fx.ones((4,))
        for _ in range(4):
            threading.Thread(target=lambda: fx.eval(f(x)), daemon=True).start()
        time.sleep(0.2)
    """,
    # Daemon threads that wait on another thread's trace when main exits:
    # they start only once the trace is running.
    "waiting_on_trace": """
        tracing = threading.Event()
        def slow(x):
            tracing.set()
            time.sleep(5)
            return x + 1
        f = fx.compile(slow)
        x = fx.ones((4,))
        threading.Thread(target=lambda: f(x), daemon=True).start()
        tracing.wait(10)
        for _ in range(3):
            threading.Thread(target=lambda: fx.eval(f(x)), daemon=True).start()
        time.sleep(0.1)
    """,
    # Daemon threads blocked in synchronize and in reading an async_eval
    # result when main exits.
    "synchronize": """
        a = fx.ones((512, 512))
        def sync():
            while True:
                y = a
                for _ in range(8):
                    y = fx.matmul(y, a) * 1e-3
                fx.async_eval(y)
                fx.synchronize()
        def read():
            while True:
                y = fx.exp(fx.matmul(a, a) * 1e-6)
                fx.async_eval(y)
                y.sum().item()
        for f in (sync, read):
            threading.Thread(target=f, daemon=True).start()
        time.sleep(0.3)
    """,
    # sys.exit from the main thread while 8 workers are mid-eval.
    "sys_exit": """
        a = fx.ones((128, 128))
        started = threading.Barrier(9)
        def work():
            started.wait()
            while True:
                fx.eval(fx.tanh(fx.matmul(a, a)) + 1)
        for _ in range(8):
            threading.Thread(target=work, daemon=True).start()
        started.wait()
        time.sleep(0.1)
        sys.exit(0)
    """,
    # A traced function raising on workers as the main thread exits; each
    # worker retries, so traces keep failing while the interpreter ends.
    "raise_in_trace": """
        def bad(x):
            time.sleep(0.01)
            raise ValueError("boom")
        f = fx.compile(bad)
        x = fx.ones((4,))
        def work():
            while True:
                try:
                    f(x)
                except ValueError:
                    pass
        for _ in range(4):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.2)
    """,
}

PRELUDE = "import sys, threading, time\nimport ferrox.core as fx\n"


def run_once(code):
    try:
        p = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            timeout=RUN_TIMEOUT,
            text=True,
        )
    except subprocess.TimeoutExpired:
        return "hung (timeout)"
    if p.returncode != 0 or p.stdout or p.stderr:
        return f"exit {p.returncode}, stdout {p.stdout[:200]!r}, stderr {p.stderr[:400]!r}"
    return None


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_exit_is_clean(name):
    code = PRELUDE + textwrap.dedent(SCENARIOS[name])
    with ThreadPoolExecutor(PARALLEL) as pool:
        failures = [f for f in pool.map(run_once, [code] * RUNS) if f]
    assert not failures, f"{len(failures)}/{RUNS} runs failed; first: {failures[0]}"
