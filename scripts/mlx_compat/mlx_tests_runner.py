"""Runs MLX's own Python tests against ferrox (through the `mlx` shim next to
this file) and, with --reference, against a real MLX install; prints pass
counts per file and the most common failure causes. See docs/mlx-compat.md.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))

CORE_FILES = [
    "test_array", "test_ops", "test_compile", "test_autograd", "test_vmap",
    "test_reduce", "test_random", "test_eval", "test_blas", "test_threads",
    "test_fft", "test_linalg", "test_constants", "test_einsum", "test_conv",
    "test_bf16", "test_double", "test_tree", "test_device", "test_graph",
    "test_memory",
]
# Files outside the core set, run only with --all (they need mlx.nn,
# mlx.optimizers, mlx.core.fast, quantization, file I/O or distributed).
OTHER_FILES = [
    "test_nn", "test_optimizers", "test_losses", "test_init", "test_fast",
    "test_fast_sdpa", "test_quantized", "test_load", "test_export_import",
    "test_conv_transpose", "test_upsample", "test_zero_copy",
]
DEFAULT_REF = "v0.32.1"


def get_tests(args, workdir):
    """Copies MLX's python/tests into workdir/tests; returns (path, origin)."""
    dest = os.path.join(workdir, "tests")
    if args.tests:
        src = args.tests
        if os.path.isdir(os.path.join(src, "python", "tests")):
            src = os.path.join(src, "python", "tests")
        if not os.path.isfile(os.path.join(src, "mlx_tests.py")):
            sys.exit(f"mlx-tests: {args.tests} holds no mlx_tests.py "
                     "(give an MLX checkout or its python/tests folder)")
        shutil.copytree(src, dest)
        return dest, f"folder {os.path.abspath(src)}"
    if args.git_dir:
        git = ["git", "--git-dir", args.git_dir]
        commit = subprocess.run(git + ["rev-parse", args.ref + "^{commit}"],
                                check=True, capture_output=True, text=True).stdout.strip()
        archive = subprocess.run(git + ["archive", commit, "python/tests"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", workdir], input=archive, check=True)
        shutil.move(os.path.join(workdir, "python", "tests"), dest)
        return dest, f"git {args.git_dir} at {args.ref} ({commit[:12]})"
    return None, None


def run_one(python, module, tests_dir, shim, logdir, label, per_test, per_file):
    """Runs one test module, resuming past a test that hangs or crashes."""
    env = dict(os.environ)
    env.pop("DEVICE", None)
    path = ([os.path.join(HERE, "shim")] if shim else []) + [tests_dir]
    # Keep the caller's PYTHONPATH after ours: it may point at the ferrox
    # package to test (a source tree that shadows an installed one).
    inherited = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(path + ([inherited] if inherited else []))
    events_path = os.path.join(logdir, f"{label}-{module}.jsonl")
    log_path = os.path.join(logdir, f"{label}-{module}.log")
    skip_path = os.path.join(logdir, f"{label}-{module}.skip.json")
    ended = {}      # id -> (outcome, traceback)
    notes = []
    collected = None
    import_error = None
    fixture_skips = []
    start_file = time.time()
    skip = []
    while True:
        with open(skip_path, "w") as f:
            json.dump(skip, f)
        cmd = [python, os.path.join(HERE, "run_file.py"), module, events_path, skip_path]
        with open(log_path, "a") as log:
            proc = subprocess.Popen(cmd, cwd=tests_dir, env=env, stdout=log,
                                    stderr=subprocess.STDOUT)
        offset = 0
        current = None      # (id, start time) of the test now running
        killed = None
        done = False
        while True:
            rc = proc.poll()
            if os.path.exists(events_path):
                with open(events_path) as f:
                    f.seek(offset)
                    chunk = f.read()
                lines = chunk.split("\n")
                offset += len(chunk) - len(lines[-1])
                for line in lines[:-1]:
                    ev = json.loads(line)
                    kind = ev["event"]
                    if kind == "collected" and collected is None:
                        collected = ev["ids"]
                    elif kind == "import_error":
                        import_error = ev["tb"]
                    elif kind == "start":
                        current = (ev["id"], ev["t"])
                    elif kind == "end":
                        ended[ev["id"]] = (ev["outcome"], ev["tb"])
                        current = None
                    elif kind == "fixture_error":
                        notes.append(("fixture_error", ev["id"], ev["tb"]))
                    elif kind == "fixture_skip":
                        fixture_skips.append(ev["id"])
                    elif kind == "done":
                        done = True
            if rc is not None:
                break
            now = time.time()
            if current and now - current[1] > per_test:
                killed = f"timeout: no result after {per_test:.0f} s"
            elif now - start_file > per_file:
                killed = f"file timeout after {per_file:.0f} s"
            if killed:
                proc.kill()
                proc.wait()
                break
            time.sleep(0.2)
        if import_error or done or collected is None:
            if not done and not import_error and collected is None:
                import_error = f"process exited with status {proc.returncode} before collecting tests"
            break
        # The process died (crash) or was killed (hang) in the middle of a test.
        if current:
            why = killed or f"crash: process exited with status {proc.returncode}"
            ended[current[0]] = ("error", why + "\n")
            notes.append(("abort", current[0], why))
        if killed and killed.startswith("file timeout"):
            break
        skip = list(ended)
        if current is None and not killed:
            break
    # Collected tests that never ended: class fixture failed, skipped, or
    # the file ran out of time.
    if collected:
        for tid in collected:
            if tid in ended:
                continue
            cls = tid.rsplit(".", 1)[0]
            if any(cls.split(".")[-1] in s for s in fixture_skips):
                ended[tid] = ("skip", "class skipped")
            else:
                reason = next((n[2] for n in notes if n[0] == "fixture_error"
                               and cls.split(".")[-1] in n[1]), None)
                ended[tid] = ("error", reason or "not run (file stopped before it)\n")
    counts = collections.Counter(o for o, _ in ended.values())
    return {
        "module": module,
        "import_error": import_error,
        "run": len(ended),
        "pass": counts["pass"],
        "failure": counts["failure"],
        "error": counts["error"],
        "skip": counts["skip"],
        "tests": {k: {"outcome": o, "tb": tb} for k, (o, tb) in ended.items()},
        "notes": notes,
        "seconds": round(time.time() - start_file, 1),
    }


# ---- failure causes -------------------------------------------------------

_MISSING_MOD = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_MISSING_ATTR = re.compile(r"'([\w.]+)' object has no attribute '(\w+)'")
_MISSING_TYPE_ATTR = re.compile(r"type object '([\w.]+)' has no attribute '(\w+)'")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_CANNOT_IMPORT = re.compile(r"cannot import name '(\w+)' from '([\w.]+)'")


def _last_exception_line(tb):
    lines = [l for l in tb.strip().splitlines() if l and not l.startswith(" ")]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt|Warning)\b", line) or \
                re.match(r"^[\w.]+: ", line):
            return line
    return lines[-1] if lines else ""


def _normalise(msg):
    msg = re.sub(r"0x[0-9a-f]+", "0x…", msg)
    msg = re.sub(r"\d+(\.\d+)?", "N", msg)
    return msg[:140]


def _caller(tb):
    """The innermost frame in the test file: "test_ops.py:123 test_foo"."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\w+)', tb)
    for path, line, func in reversed(frames):
        if os.path.basename(path).startswith("test_"):
            return f"{os.path.basename(path)}:{line}"
    return ""


def classify(tb):
    """Maps a traceback to (group, key)."""
    if tb is None:
        return ("other", "")
    if tb.startswith("timeout") or tb.startswith("crash") or tb.startswith("file timeout"):
        return ("hang or crash", tb.split(":")[0])
    if tb.startswith("not run"):
        return ("not run", tb.strip())
    line = _last_exception_line(tb)
    exc = line.split(":", 1)[0]
    msg = line.split(":", 1)[1].strip() if ":" in line else ""
    if exc.endswith("AttributeError"):
        for rx, fmt in ((_MISSING_MOD, "mx.{1}"), (_MISSING_TYPE_ATTR, "{0}.{1}"),
                        (_MISSING_ATTR, "{0}.{1}")):
            m = rx.search(msg)
            if m:
                owner = m.group(1).replace("ferrox.core.", "mx.").replace("ferrox.core", "mx")
                owner = owner.replace("mlx.core.", "mx.")
                name = fmt.format(owner, m.group(2))
                if fmt == "mx.{1}" and m.group(1) not in ("ferrox.core", "mlx.core"):
                    name = f"{owner}.{m.group(2)}"
                return ("missing name", name)
    if exc.endswith("ModuleNotFoundError") or exc.endswith("ImportError"):
        m = _NO_MODULE.search(msg) or _CANNOT_IMPORT.search(msg)
        if m:
            return ("missing name", m.group(1) if m.re is _NO_MODULE else f"{m.group(2)}.{m.group(1)}")
    if exc.endswith("TypeError"):
        return ("TypeError (signature/argument types)", _normalise(msg))
    if exc.endswith("AssertionError") or tb.startswith("unexpected success"):
        return ("assertion failure (wrong result)", _caller(tb))
    return (f"other exception", f"{exc}: {_normalise(msg)}")


def causes(results, ref_results=None):
    """{group: Counter(key -> failing tests)} over the failed/errored tests.

    A file that does not import counts as many tests as the reference run
    collected in it (1 without --reference), under both its own group and the
    cause's group (so "missing name" ranks names by the tests they block).
    """
    out = collections.defaultdict(collections.Counter)
    per_file = collections.defaultdict(collections.Counter)
    ref = {r["module"]: r for r in ref_results or []}
    for r in results:
        if r["import_error"]:
            g, k = classify(r["import_error"])
            weight = max(1, ref.get(r["module"], {}).get("run", 1))
            out["file does not import"][f"{r['module']} ({weight} tests): {k}"] += weight
            out[g][k + " (at import)"] += weight
            per_file[g][r["module"]] += weight
            continue
        for tid, t in r["tests"].items():
            if t["outcome"] in ("failure", "error"):
                g, k = classify(t["tb"])
                out[g][k] += 1
                per_file[g][r["module"]] += 1
    return out, per_file


# ---- output ---------------------------------------------------------------

def table(rows, ref_rows):
    head = ["file", "run", "pass", "fail", "error", "skip"]
    if ref_rows is not None:
        head += ["| mlx run", "pass", "fail", "error", "skip"]
    lines = ["| " + " | ".join(h.lstrip("| ") for h in head) + " |",
             "|" + "|".join("---" if i == 0 else "--:" for i in range(len(head))) + "|"]
    tot = collections.Counter()
    rtot = collections.Counter()

    def cells(r, t):
        if r["import_error"]:
            t["files not importable"] += 1
            return ["import error", "", "", "", ""]
        for k in ("run", "pass", "failure", "error", "skip"):
            t[k] += r[k]
        return [str(r[k]) for k in ("run", "pass", "failure", "error", "skip")]

    for i, r in enumerate(rows):
        c = [r["module"]] + cells(r, tot)
        if ref_rows is not None:
            c += cells(ref_rows[i], rtot)
        lines.append("| " + " | ".join(c) + " |")
    c = ["**total**"] + [f"**{tot[k]}**" for k in ("run", "pass", "failure", "error", "skip")]
    if ref_rows is not None:
        c += [f"**{rtot[k]}**" for k in ("run", "pass", "failure", "error", "skip")]
    lines.append("| " + " | ".join(c) + " |")
    return "\n".join(lines), tot, rtot


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("files", nargs="*", help="test modules (default: the core set)")
    p.add_argument("--all", action="store_true", help="also the non-core files")
    p.add_argument("--tests", default=os.environ.get("MLX_TESTS_DIR"),
                   help="MLX checkout or its python/tests folder (env MLX_TESTS_DIR)")
    p.add_argument("--git-dir", default=os.environ.get("MLX_GIT_DIR"),
                   help="MLX git directory to take python/tests from (env MLX_GIT_DIR)")
    p.add_argument("--ref", default=os.environ.get("MLX_REF", DEFAULT_REF),
                   help=f"ref in --git-dir (env MLX_REF, default {DEFAULT_REF})")
    p.add_argument("--python", default=os.environ.get("PYTHON", "python3"),
                   help="interpreter with ferrox installed (env PYTHON)")
    p.add_argument("--reference", nargs="?", const=os.environ.get("MLX_PYTHON", "python3"),
                   metavar="PYTHON", help="also run the real MLX, with this "
                   "interpreter (default env MLX_PYTHON, else python3)")
    p.add_argument("--per-test-timeout", type=float, default=120)
    p.add_argument("--per-file-timeout", type=float, default=1200)
    p.add_argument("-j", "--jobs", type=int, default=1, help="files run at once")
    p.add_argument("--min-pass", type=int, help="exit 1 if ferrox passes fewer tests")
    p.add_argument("--top", type=int, default=15, help="causes shown per group")
    p.add_argument("--json", help="write all results (with tracebacks) here")
    p.add_argument("--keep", help="keep the tests and logs in this folder")
    p.add_argument("--from-json", metavar="FILE",
                   help="run nothing; report the results --json wrote to FILE")
    args = p.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        print(f"mlx-tests: results in {args.from_json}, tests from {saved['origin']}")
        return report(args, saved["ferrox"], saved["mlx"])

    files = args.files or (CORE_FILES + (OTHER_FILES if args.all else []))
    files = [f[:-3] if f.endswith(".py") else f for f in files]
    workdir = args.keep or tempfile.mkdtemp(prefix="mlx-tests-")
    if args.keep:
        os.makedirs(workdir, exist_ok=True)
        shutil.rmtree(os.path.join(workdir, "tests"), ignore_errors=True)
    tests_dir, origin = get_tests(args, workdir)
    if tests_dir is None:
        print("mlx-tests: skipped: no MLX tests given. Set MLX_TESTS_DIR to an MLX "
              "checkout (git clone https://github.com/ml-explore/mlx) or MLX_GIT_DIR "
              "to its git directory (with MLX_REF); see docs/mlx-compat.md.")
        return 0
    logdir = os.path.join(workdir, "logs")
    os.makedirs(logdir, exist_ok=True)
    present = [f for f in files if os.path.exists(os.path.join(tests_dir, f + ".py"))]
    for f in files:
        if f not in present:
            print(f"mlx-tests: {f}.py is not in these tests; left out")
    print(f"mlx-tests: tests from {origin}")
    print(f"mlx-tests: ferrox with {args.python}; logs in {logdir}")

    jobs = [(args.python, True, "ferrox")]
    if args.reference:
        print(f"mlx-tests: MLX with {args.reference}")
        jobs.append((args.reference, False, "mlx"))

    def work(item):
        (python, shim, label), module = item
        r = run_one(python, module, tests_dir, shim, logdir, label,
                    args.per_test_timeout, args.per_file_timeout)
        status = "import error" if r["import_error"] else \
            f"{r['pass']}/{r['run']} passed"
        print(f"  {label:6} {module:18} {status} ({r['seconds']} s)", flush=True)
        return label, r

    items = [(j, m) for m in present for j in jobs]
    results = {"ferrox": {}, "mlx": {}}
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for label, r in ex.map(work, items):
            results[label][r["module"]] = r
    rows = [results["ferrox"][m] for m in present]
    ref_rows = [results["mlx"][m] for m in present] if args.reference else None
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"origin": origin, "ferrox": rows, "mlx": ref_rows}, f, indent=1)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return report(args, rows, ref_rows)


def report(args, rows, ref_rows):

    print()
    text, tot, rtot = table(rows, ref_rows)
    print("ferrox" + (" (left) vs MLX (right)" if ref_rows else "") + ":")
    print(text)
    out, per_file = causes(rows, ref_rows)
    print()
    print("failure causes in ferrox (failing tests per cause; a test counts once, "
          "by its first error):")
    order = sorted(out, key=lambda g: -sum(out[g].values()))
    for g in order:
        print(f"\n### {g}: {sum(out[g].values())} tests")
        for k, n in out[g].most_common(args.top):
            print(f"- {n:4}  {k}")
    if ref_rows:
        rout, _ = causes(ref_rows)
        if rout:
            print("\nfailure causes in MLX:")
            for g in rout:
                for k, n in rout[g].most_common(args.top):
                    print(f"- {n:4}  {g}: {k}")
    if args.min_pass is not None and tot["pass"] < args.min_pass:
        print(f"mlx-tests: {tot['pass']} passing, fewer than --min-pass {args.min_pass}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
