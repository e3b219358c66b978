#!/usr/bin/env bash
# Builds the Python package (crates/ferrox-py, `import ferrox.core`) into a
# fresh virtual environment and runs its pytest suite. Works on a fresh
# machine with a Rust toolchain and Python 3.9+ (with venv and pip).
#
#   ./scripts/test-python.sh            # fresh venv in target/py-venv
#   ./scripts/test-python.sh -k threads # extra arguments go to pytest
#
# PYTHON picks the interpreter (default python3); FERROX_PY_VENV the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
venv=${FERROX_PY_VENV:-$root/target/py-venv}

echo "== fresh venv in $venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet maturin pytest numpy

echo "== maturin develop (crates/ferrox-py)"
(
    cd crates/ferrox-py
    VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --quiet
)

echo "== pytest"
cd crates/ferrox-py
# Run from the tests folder's parent, against the installed package.
exec "$venv/bin/python" -m pytest -q tests "$@"
