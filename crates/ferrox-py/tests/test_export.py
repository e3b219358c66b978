"""export_function / import_function / exporter: a file written in one
process runs in another, imported functions run from threads sharing one
import, and bad input raises the right exceptions. Every wait has a
watchdog (subprocess and thread timeouts)."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ferrox.core as fx

TIMEOUT = 120


def _model(x, w, b):
    h = fx.maximum(fx.matmul(x, w) + b, 0.0)
    return fx.softmax(h, axis=-1), fx.sum(h * h, axis=0)


def test_export_in_one_process_import_in_another(tmp_path):
    path = str(tmp_path / "model.mlxfn")
    rng = np.random.default_rng(0)
    w = fx.array(rng.standard_normal((8, 4)).astype(np.float32))
    b = fx.array(rng.standard_normal((4,)).astype(np.float32))
    x = rng.standard_normal((3, 8)).astype(np.float32)

    def f(x):
        return _model(x, w, b)

    fx.export_function(path, f, fx.array(x), metadata='{"layers": 1}')
    want = [np.array(o) for o in f(fx.array(x))]
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(
        f"""
        import numpy as np, ferrox.core as fx
        f, meta = fx.import_function({path!r}, return_metadata=True)
        assert meta == '{{"layers": 1}}', meta
        out = f(fx.array(np.load({str(tmp_path / "x.npy")!r})))
        assert isinstance(out, tuple) and len(out) == 2
        for i, o in enumerate(out):
            np.save({str(tmp_path)!r} + f"/out{{i}}.npy", np.array(o))
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert r.returncode == 0, r.stderr
    for i, w_ in enumerate(want):
        np.testing.assert_allclose(np.load(tmp_path / f"out{i}.npy"), w_, rtol=1e-6)


def test_threads_share_one_import(tmp_path):
    path = str(tmp_path / "f.mlxfn")
    fx.export_function(path, lambda x: fx.tanh(fx.matmul(x, x)), fx.ones((16, 16)))
    f = fx.import_function(path)
    x = fx.array(np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32))
    want = np.array(f(x)[0])
    barrier = threading.Barrier(8, timeout=TIMEOUT)
    results, errors = [], []

    def work():
        try:
            barrier.wait()
            for _ in range(20):
                results.append(np.array(f(x)[0]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a thread calling the imported function hung"
    assert not errors, errors
    assert len(results) == 160
    for r in results:
        np.testing.assert_array_equal(r, want)


def test_exporter_traces_shapeless_and_keywords(tmp_path):
    path = str(tmp_path / "sum.mlxfn")

    def f(*xs, z=None):
        s = sum(xs)
        return s if z is None else s * z

    with fx.exporter(path, f, shapeless=True) as ex:
        ex(fx.array([1.0]))
        ex(fx.array([1.0]), fx.array([2.0]))
        ex(fx.array([1.0]), z=fx.array([3.0]))
    with pytest.raises(RuntimeError):
        ex(fx.array([1.0]), fx.array([1.0]), fx.array([1.0]))
    g = fx.import_function(path)
    assert g.traces == 3
    assert g(fx.array([1.0, 2.0]))[0].tolist() == [1.0, 2.0]
    assert g(fx.array([1.0, 2.0]), fx.array([1.0, 1.0]))[0].tolist() == [2.0, 3.0]
    assert g(fx.array([2.0]), z=fx.array([3.0]))[0].tolist() == [6.0]
    assert g((fx.array([2.0]),), {"z": fx.array([3.0])})[0].tolist() == [6.0]
    with pytest.raises(ValueError):
        g(fx.array([[1.0]]))  # no trace of rank 2
    with pytest.raises(ValueError):
        g(fx.array([1.0]), y=fx.array([1.0]))


def test_bad_input_and_files(tmp_path):
    path = str(tmp_path / "f.mlxfn")
    with pytest.raises(ValueError):
        fx.export_function(path, lambda x: x, "hi")
    with pytest.raises(ValueError):
        fx.export_function(path, lambda: (fx.zeros((2,)), 1))
    with pytest.raises(TypeError):
        fx.export_function(path, lambda x: x, fx.ones((1,)), metadata={"a": 1})
    with pytest.raises(NotImplementedError, match="export of svd is not supported"):
        fx.export_function(path, lambda x: fx.linalg.svd(x, compute_uv=False), fx.ones((2, 2)))
    bad = tmp_path / "bad.mlxfn"
    bad.write_bytes(b"\x00" * 20)
    with pytest.raises(ValueError):
        fx.import_function(str(bad))
    with pytest.raises(FileNotFoundError):
        fx.import_function(str(tmp_path / "missing.mlxfn"))


def test_callback_form():
    seen = []
    fx.export_function(
        lambda d: seen.append(d), lambda x, y: fx.abs(x - y).astype(fx.int32),
        fx.array(1.0), y=fx.array(2.0),
    )
    kinds = [d["type"] for d in seen]
    assert kinds[0] == "inputs" and kinds[-1] == "outputs"
    prims = [d["name"] for d in seen if d["type"] == "primitive"]
    assert prims == ["Subtract", "Abs", "AsType"]
    assert [d for d in seen if d["type"] == "primitive"][-1]["arguments"] == [fx.int32]
