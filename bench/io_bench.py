#!/usr/bin/env python3
"""File loading and saving: ferrox.core against the `safetensors` package
(numpy backend) and mlx, and saving against plain file IO.

    python3 bench/io_bench.py              # 256 MiB file
    python3 bench/io_bench.py --mib 1024   # the 1 GiB case of issue 15

Load case: a safetensors file of --tensors float32 tensors is loaded and one
tensor is read (summed). Each library runs in a fresh subprocess, so the
resident-memory numbers (RSS growth over the process's own baseline) are
its own. The file was just written, so its pages are in the page cache
(warm): the numbers measure the library, not the disk.

Save case: the same bytes written by ferrox.core.save_safetensors (a
temporary file, fsync, rename) against plain `open/write` without and with
fsync. Missing libraries are skipped.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(lib, path, name):
    """Runs in a subprocess: load, read one tensor; prints JSON."""
    import numpy as np  # noqa: F401  (every backend imports it anyway)
    # Imports first: neither their time nor their memory is the load's.
    if lib == "ferrox":
        import ferrox.core as fx
    elif lib == "mlx":
        import mlx.core as mx
    else:
        from safetensors import safe_open
        from safetensors.numpy import load_file
    base = rss_mib()
    t0 = time.perf_counter()
    if lib == "ferrox":
        d = fx.load(path)
        t1 = time.perf_counter()
        s = fx.sum(d[name]).item()
    elif lib == "safetensors":
        f = safe_open(path, framework="np")
        t1 = time.perf_counter()
        s = float(f.get_tensor(name).sum())
    elif lib == "safetensors-load_file":
        d = load_file(path)
        t1 = time.perf_counter()
        s = float(d[name].sum())
    elif lib == "mlx":
        d = mx.load(path)
        t1 = time.perf_counter()
        s = mx.sum(d[name]).item()
    else:
        raise SystemExit(f"unknown lib {lib}")
    t2 = time.perf_counter()
    print(json.dumps({"load_ms": (t1 - t0) * 1e3, "read_ms": (t2 - t1) * 1e3,
                      "rss_mib": rss_mib() - base, "sum": s}))


def run_worker(python, lib, path, name):
    out = subprocess.run([python, __file__, "--worker", lib, path, name],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def has(python, module):
    return subprocess.run([python, "-c", f"import {module}"],
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256, help="file size in MiB")
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mlx-python", default=None,
                    help="an interpreter with mlx, if this one has none")
    ap.add_argument("--dir", default=None, help="where the files go")
    ap.add_argument("--worker", nargs=3, metavar=("LIB", "PATH", "NAME"))
    args = ap.parse_args()
    if args.worker:
        return worker(*args.worker)

    import numpy as np
    py = sys.executable
    per = args.mib * (1 << 20) // args.tensors // 4
    rng = np.random.default_rng(0)
    tensors = {f"t{i}": rng.standard_normal(per, dtype=np.float32)
               for i in range(args.tensors)}
    name = f"t{args.tensors // 2}"
    tmp = tempfile.mkdtemp(dir=args.dir)
    path = os.path.join(tmp, "bench.safetensors")
    print(f"# {args.mib} MiB in {args.tensors} float32 tensors, reading {name}; "
          f"median of {args.reps}, warm page cache")

    # ---- save
    import ferrox.core as fx
    fx_arrays = {k: fx.array(v) for k, v in tensors.items()}
    fx.eval(list(fx_arrays.values()))
    raw = b"".join(v.tobytes() for v in tensors.values())

    def plain(sync):
        with open(path + ".plain", "wb") as f:
            f.write(raw)
            if sync:
                f.flush()
                os.fsync(f.fileno())

    cases = [("plain write", lambda: plain(False)),
             ("plain write + fsync", lambda: plain(True)),
             ("ferrox save_safetensors", lambda: fx.save_safetensors(path, fx_arrays))]
    if has(py, "safetensors"):
        from safetensors.numpy import save_file
        cases.append(("safetensors save_file",
                      lambda: save_file(tensors, path + ".st")))
    print(f"\n{'save':<28}{'ms':>10}{'GiB/s':>8}")
    for label, fn in cases:
        times = []
        for _ in range(args.reps):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        ms = statistics.median(times)
        print(f"{label:<28}{ms:>10.1f}{args.mib / 1024 / (ms / 1e3):>8.2f}")
    for extra in (".plain", ".st"):
        if os.path.exists(path + extra):
            os.remove(path + extra)
    fx.save_safetensors(path, fx_arrays)
    del fx_arrays, raw

    # ---- load
    libs = [("ferrox", py)]
    if has(py, "safetensors"):
        libs += [("safetensors", py), ("safetensors-load_file", py)]
    mlx_py = py if has(py, "mlx.core") else args.mlx_python
    if mlx_py and has(mlx_py, "mlx.core"):
        libs.append(("mlx", mlx_py))
    print(f"\n{'load + read one tensor':<24}{'load ms':>10}{'read ms':>10}{'RSS MiB':>10}")
    want = float(tensors[name].sum())
    for lib, interp in libs:
        runs = []
        for _ in range(args.reps):
            r, err = run_worker(interp, lib, path, name)
            if r is None:
                print(f"{lib:<24} failed: {err}")
                break
            if abs(r["sum"] - want) > 1e-2 * (1 + abs(want)):
                print(f"{lib:<24} WRONG SUM {r['sum']} != {want}")
            runs.append(r)
        if runs:
            med = {k: statistics.median(x[k] for x in runs) for k in ("load_ms", "read_ms", "rss_mib")}
            print(f"{lib:<24}{med['load_ms']:>10.2f}{med['read_ms']:>10.2f}{med['rss_mib']:>10.1f}")
    os.remove(path)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
