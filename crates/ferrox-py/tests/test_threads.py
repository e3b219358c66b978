"""Threaded scenarios: one compile cache shared by Python threads, the GIL
released while evaluating and while waiting on another thread's trace.

Every wait has a timeout, so a deadlock fails the test instead of hanging."""

import gc
import threading
import time

import numpy as np

import ferrox.core as fx
from conftest import TIMEOUT, run_threads


def test_sixteen_threads_first_call_traces_once():
    for round_ in range(5):
        traced = []

        def f(x):
            traced.append(threading.get_ident())
            time.sleep(0.02)  # a slow trace: the others arrive and must wait
            return fx.exp(x * 2) + round_

        cf = fx.compile(f)
        x = fx.array(np.linspace(0, 1, 8).astype(np.float32))
        want = np.exp(np.linspace(0, 1, 8) * 2) + round_
        barrier = threading.Barrier(16, timeout=TIMEOUT)
        results = [None] * 16

        def call(i):
            barrier.wait()
            results[i] = np.array(cf(x))

        run_threads(16, call)
        assert cf.traces == 1
        assert len(traced) == 1
        for r in results:
            np.testing.assert_allclose(r, want, rtol=1e-5)


def test_compiled_function_dropped_on_one_thread_while_others_call_it():
    gc.collect()
    before = fx.compile_cache_len()
    holder = [fx.compile(lambda x: x * 2 + 1)]
    x = fx.ones((4,))
    started = threading.Barrier(9, timeout=TIMEOUT)
    calls = [0] * 8

    def worker(i):
        started.wait()
        while True:
            try:
                f = holder[0]
            except IndexError:
                return
            assert f(x).tolist() == [3, 3, 3, 3]
            calls[i] += 1
            del f

    def dropper():
        started.wait()
        time.sleep(0.05)
        holder.clear()  # the last owner is whichever thread drops last
        gc.collect()

    def body(i):
        if i == 8:
            dropper()
        else:
            worker(i)

    run_threads(9, body)
    assert sum(calls) > 0
    gc.collect()
    assert fx.compile_cache_len() == before


def test_new_callable_at_a_freed_address_never_replays_an_old_trace():
    x = fx.array([1.0, 2.0])
    seen_ids = set()
    reused = False
    for i in range(200):
        fun = eval(f"lambda x: x + {i}")  # a new function object each time
        reused |= id(fun) in seen_ids
        seen_ids.add(id(fun))
        cf = fx.compile(fun)
        assert cf(x).tolist() == [1.0 + i, 2.0 + i]
        assert cf.traces == 1
        del cf, fun
    assert reused, "CPython reused no address; the test proved nothing"


def test_threads_share_compiled_function_across_signatures():
    cf = fx.compile(lambda x, k: x * k)

    def call(i):
        for j in range(20):
            n = 1 + (i + j) % 4
            out = cf(fx.ones((n,)), float(j % 3))
            assert out.tolist() == [float(j % 3)] * n

    run_threads(8, call)
    assert cf.traces == 12  # 4 shapes x 3 constants, each traced once


def test_python_keeps_running_while_another_thread_evaluates_a_large_matmul():
    rng = np.random.default_rng(0)
    n = 1500
    a = fx.array(rng.standard_normal((n, n)).astype(np.float32))
    b = fx.array(rng.standard_normal((n, n)).astype(np.float32))
    fx.eval(a, b)
    started, done = threading.Event(), threading.Event()
    spins_during = [0]

    def evaluate():
        y = a @ b
        for _ in range(3):
            y = y @ b * (1.0 / n)
        started.set()
        fx.eval(y)
        done.set()

    t = threading.Thread(target=evaluate, daemon=True)
    t.start()
    assert started.wait(timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while not done.is_set() and time.monotonic() < deadline:
        spins_during[0] += 1
    t.join(timeout=TIMEOUT)
    assert not t.is_alive()
    assert done.is_set()
    # With the GIL held through evaluation this thread could not have run.
    assert spins_during[0] > 1000, spins_during[0]


def test_grad_on_many_threads_is_isolated():
    f = fx.grad(lambda x: (x * x * x).sum())
    results = [None] * 8

    def call(i):
        x = fx.array([float(i), 1.0])
        for _ in range(10):
            results[i] = f(x).tolist()

    run_threads(8, call)
    for i, r in enumerate(results):
        assert r == [3.0 * i * i, 3.0]


def test_arrays_built_on_one_thread_evaluate_on_others():
    y = fx.exp(fx.zeros((1000,))) * 3
    out = [None] * 8

    def read(i):
        out[i] = y.sum().item()

    run_threads(8, read)
    assert out == [3000.0] * 8


def test_every_waiter_gets_the_exception_the_trace_raised():
    class Boom(ValueError):
        pass

    tracing = threading.Event()
    release = threading.Event()

    def f(x):
        tracing.set()
        release.wait(TIMEOUT)
        raise Boom("boom in the trace")

    cf = fx.compile(f)
    x = fx.ones((4,))
    caught = [None] * 4

    def call(i):
        if i > 0:
            tracing.wait(TIMEOUT)
            time.sleep(0.05)  # inside the trace's wait, not a second trace
        try:
            cf(x)
        except BaseException as e:  # noqa: BLE001 - compared below
            caught[i] = e

    def releaser():
        tracing.wait(TIMEOUT)
        time.sleep(0.2)
        release.set()

    t = threading.Thread(target=releaser, daemon=True)
    t.start()
    run_threads(4, call)
    t.join(TIMEOUT)
    assert cf.traces == 1  # three threads waited on the one trace
    for e in caught:
        assert type(e) is Boom, repr(e)
        assert str(e) == "boom in the trace"
    # A failed trace leaves no entry: the next call traces again.
    release.set()
    with __import__("pytest").raises(Boom):
        cf(x)


def test_small_work_keeps_the_gil_but_never_waits_on_a_trace_with_it():
    # Thread A traces slowly and needs the GIL to finish; thread B calls the
    # same signature meanwhile. B's call is small work, but a trace is in
    # progress, so B must wait with the GIL released: else A could never
    # finish (the watchdog reports the deadlock) and thread C, which runs
    # Python code while B waits, would not run.
    tracing = threading.Event()
    b_calls = threading.Event()
    done = threading.Event()

    def f(x):
        tracing.set()
        b_calls.wait(TIMEOUT)
        time.sleep(0.2)  # B is in its call now
        total = 0
        for _ in range(200_000):  # Python work: needs the GIL
            total += 1
        return x + total

    cf = fx.compile(f)
    x = fx.ones((16,))
    out = {}
    ticks = [0]

    def body(i):
        if i == 0:
            out["a"] = cf(x).tolist()
        elif i == 1:
            tracing.wait(TIMEOUT)
            b_calls.set()
            out["b"] = cf(x).tolist()
            done.set()
        else:
            b_calls.wait(TIMEOUT)
            while not done.wait(0.001):
                ticks[0] += 1

    run_threads(3, body)
    want = [200_001.0] * 16
    assert out["a"] == want and out["b"] == want
    assert cf.traces == 1
    assert ticks[0] > 10


def test_many_threads_of_small_cached_calls_agree_with_one():
    # Small cached calls keep the GIL; results stay right from any thread.
    cf = fx.compile(lambda x, y: fx.exp(x * 2 + y))
    x = fx.array(np.linspace(0, 1, 1024).astype(np.float32))
    want = np.exp(np.linspace(0, 1, 1024).astype(np.float32) * 2 + 1)
    barrier = threading.Barrier(8, timeout=TIMEOUT)
    results = [None] * 8

    def call(i):
        barrier.wait()
        for _ in range(200):
            results[i] = np.array(cf(x, 1.0))

    run_threads(8, call)
    for r in results:
        np.testing.assert_allclose(r, want, rtol=1e-6)
    assert cf.traces == 1
