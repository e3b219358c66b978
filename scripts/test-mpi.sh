#!/usr/bin/env bash
# The distributed tests across processes, on this machine over loopback:
# the Rust checks (crates/ferrox/tests/mpi_distributed.rs) under
# `mpirun -np 2` and `-np 4`, the failure scenario (a rank that dies makes
# the job end, not hang), and, when FERROX_MPI_PYTHON names a Python with
# ferrox built with MPI (scripts/test-python.sh does this), the Python
# checks under `mpirun -np 2`. Every mpirun runs under `timeout`.
#
#   ./scripts/test-mpi.sh                  # everything
#   ./scripts/test-mpi.sh --python-only    # only mpi_check.py (FERROX_MPI_PYTHON)
#
# Needs Open MPI (Debian: libopenmpi-dev openmpi-bin) and libclang for the
# `mpi` crate's bindings; exits 0 with a note when mpicc is missing, unless
# FERROX_REQUIRE_MPI=1.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    if [ "${FERROX_REQUIRE_MPI:-0}" = 1 ]; then
        echo "test-mpi: mpicc/mpirun not found (FERROX_REQUIRE_MPI=1)" >&2
        exit 1
    fi
    echo "test-mpi: no MPI on this machine (mpicc/mpirun not found): skipped"
    exit 0
fi

# One machine: more ranks than cores is fine (--oversubscribe); CI runs as
# root, which Open MPI refuses without --allow-run-as-root.
mpirun=(mpirun --oversubscribe)
if [ "$(id -u)" = 0 ]; then
    mpirun+=(--allow-run-as-root)
fi
# Containers often forbid the cross-memory attach of the shared-memory
# transport; copying through the shared segment works everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=none

python_only=0
if [ "${1:-}" = --python-only ]; then
    python_only=1
fi

if [ "$python_only" = 0 ]; then
echo "== build the mpi_distributed checks (feature ferrox/mpi)"
# --workspace keeps every dependency's features as `cargo test --workspace`
# resolved them, so only ferrox itself is rebuilt with the feature.
# The build's output goes to stderr through the open descriptor (`>&2`):
# `tee /dev/stderr` would reopen the file behind it and truncate a log that
# stderr is redirected to.
build_log=$(cargo test --workspace --features ferrox/mpi --test mpi_distributed --no-run 2>&1) ||
    { printf '%s\n' "$build_log" >&2; exit 1; }
printf '%s\n' "$build_log" >&2
bin=$(printf '%s\n' "$build_log" | sed -n 's/.*Executable .*(\(.*mpi_distributed-[^)]*\)).*/\1/p' | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "test-mpi: could not find the mpi_distributed binary" >&2
    exit 1
fi

for np in 2 4; do
    echo "== mpirun -np $np mpi_distributed"
    timeout 300 "${mpirun[@]}" -np "$np" "$bin"
done

echo "== a rank that dies: the job must end with an error, not hang"
start=$SECONDS
set +e
timeout 60 "${mpirun[@]}" -np 2 "$bin" die >/tmp/ferrox-mpi-die.log 2>&1
rc=$?
set -e
elapsed=$((SECONDS - start))
if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then
    echo "test-mpi: the dying-rank job returned $rc after ${elapsed}s (expected a failure before the timeout)" >&2
    cat /tmp/ferrox-mpi-die.log >&2
    exit 1
fi
echo "ok: the job failed with status $rc after ${elapsed}s; mpirun said:"
grep -m2 -i "noticed\|aborted" /tmp/ferrox-mpi-die.log || true
fi

if [ -n "${FERROX_MPI_PYTHON:-}" ]; then
    echo "== mpirun -np 2 python mpi_check.py"
    timeout 300 "${mpirun[@]}" -np 2 "$FERROX_MPI_PYTHON" crates/ferrox-py/tests/mpi_check.py
fi

# Optional (FERROX_MPI_CLI: a `ferrox` program built with --features
# ferrox-cli/mpi): 2 processes with batch B against 1 with batch 2B.
if [ -n "${FERROX_MPI_CLI:-}" ]; then
    echo "== ferrox train: 2 processes x batch 8 against 1 process x batch 16"
    dp=$(mktemp -d)
    timeout 900 "$FERROX_MPI_CLI" train --steps 25 --batch 16 --seq 32 --quiet --out "$dp/one" >/dev/null
    timeout 900 "${mpirun[@]}" -np 2 "$FERROX_MPI_CLI" train --steps 25 --batch 8 --seq 32 --quiet \
        --out "$dp/two" >/dev/null
    python3 - "$dp" <<'PY'
import csv, sys
def tail(path):
    rows = [float(r[1]) for r in csv.reader(open(path)) if r and r[0].isdigit()]
    return sum(rows[-5:]) / 5
one, two = tail(sys.argv[1] + "/one/loss.csv"), tail(sys.argv[1] + "/two/loss.csv")
print(f"last-5 mean loss: 1 process {one:.3f}, 2 processes {two:.3f}")
assert abs(one - two) < 0.15 * one, "the data-parallel curve left the single-process one"
PY
    rm -rf "$dp"
fi

echo "== distributed tests passed"
