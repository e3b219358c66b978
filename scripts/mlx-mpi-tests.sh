#!/usr/bin/env bash
# Runs MLX's python/tests/mpi_test_distributed.py against ferrox (through the
# forwarding `mlx` package of scripts/mlx_compat/shim) under
# `mpirun -np 8 --oversubscribe`, and prints rank 0's pass count;
# --reference PYTHON runs the same file with a real MLX (built with MPI).
#
#   MLX_GIT_DIR=/path/to/mlx/.git ./scripts/mlx-mpi-tests.sh [--reference /mlx-venv/bin/python]
#
# PYTHON: the interpreter with ferrox built with MPI (default python3).
# MLX_REF: the MLX tag whose tests run (default v0.32.1). NP: processes (8).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
git_dir=${MLX_GIT_DIR:?set MLX_GIT_DIR to an MLX git directory}
ref=${MLX_REF:-v0.32.1}
np=${NP:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git --git-dir "$git_dir" archive "$ref" python/tests | tar -x -C "$work"
tests="$work/python/tests"
mpirun=(mpirun --oversubscribe -np "$np")
if [ "$(id -u)" = 0 ]; then mpirun+=(--allow-run-as-root); fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# Each rank writes its own results (interleaved output would be unreadable);
# a test passes when it passes on every rank.
runner='
import json, os, sys, unittest
out = sys.argv[1]
rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
suite = unittest.defaultTestLoader.loadTestsFromName("mpi_test_distributed")
names = []
def walk(s):
    for t in s:
        walk(t) if isinstance(t, unittest.TestSuite) else names.append(t.id())
walk(suite)
with open(os.devnull, "w") as devnull:
    r = unittest.TextTestRunner(stream=devnull).run(suite)
bad = {t.id(): tb.strip().splitlines()[-1] for t, tb in r.failures + r.errors}
bad.update({t.id(): "skipped: " + why for t, why in r.skipped})
json.dump({"tests": names, "bad": bad}, open(os.path.join(out, "rank%s.json" % rank), "w"))
'
summary='
import glob, json, sys
ranks = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/rank*.json"))]
if not ranks:
    print(sys.argv[2] + ": no rank reported (see the log)"); sys.exit(0)
tests = ranks[0]["tests"]
bad = {}
for r in ranks:
    bad.update(r["bad"])
passed = [t for t in tests if t not in bad]
print("%s: %d of %d tests pass on all %d ranks" % (sys.argv[2], len(passed), len(tests), len(ranks)))
for t, why in sorted(bad.items()):
    print("  not passing: %s: %s" % (t.split(".")[-1], why[:150]))
'

run() { # label, python, PYTHONPATH
    local out="$work/$1"
    mkdir -p "$out"
    (cd "$tests" && PYTHONPATH="$3" timeout 600 "${mpirun[@]}" "$2" -c "$runner" "$out" \
        >"$out/log" 2>&1) || echo "$1: mpirun ended with an error (log: last lines below)" >&2
    tail -3 "$out/log" >&2 || true
    "$2" -c "$summary" "$out" "$1"
}

run ferrox "${PYTHON:-python3}" "$here/mlx_compat/shim:$tests"
if [ "${1:-}" = --reference ]; then
    run mlx "${2:?--reference needs an interpreter}" "$tests"
fi
