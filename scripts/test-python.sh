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
# Cross-checks of the file formats (test_io.py skips them without these).
"$venv/bin/python" -m pip install --quiet safetensors gguf || echo "(safetensors/gguf not installed: their cross-checks skip)"

# The wheel has MPI (ferrox.core.distributed across processes) wherever
# the build finds it; FERROX_PY_MPI=0 builds without.
features=()
if [ "${FERROX_PY_MPI:-1}" != 0 ] && command -v mpicc >/dev/null; then
    features=(--features mpi)
fi

echo "== maturin develop (crates/ferrox-py) ${features[*]}"
(
    cd crates/ferrox-py
    VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --quiet ${features[@]+"${features[@]}"}
)

echo "== pytest"
# Run from the tests folder's parent, against the installed package.
(cd crates/ferrox-py && "$venv/bin/python" -m pytest -q tests "$@")

if [ ${#features[@]} -gt 0 ]; then
    echo "== ferrox.core.distributed across processes"
    FERROX_MPI_PYTHON="$venv/bin/python" ./scripts/test-mpi.sh --python-only
fi

# Interpreter exit differs between CPython versions (3.11-3.13 end daemon
# threads with pthread_exit, 3.14 parks them), so the exit scenarios also run
# on the newest other CPython 3.11+ under pyenv: with the default
# interpreter that covers both ends of the installed range, for one extra
# build of the extension (EXIT_PYTHONS, a list of interpreters, overrides
# that; an empty value skips them).
if [ -z "${EXIT_PYTHONS+set}" ]; then
    EXIT_PYTHONS=""
    mine=$("$venv/bin/python" -c 'import sys; print(sys.version_info[:2])')
    for py in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[1-9]* 2>/dev/null | sort -V); do
        py="$py/bin/python3"
        if [ -x "$py" ] && [ "$("$py" -c 'import sys; print(sys.version_info[:2])')" != "$mine" ]; then
            EXIT_PYTHONS="$py"
        fi
    done
fi
for py in ${EXIT_PYTHONS:-}; do
    v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    echo "== exit scenarios on CPython $v"
    other="$root/target/py-venv-$v"
    rm -rf "$other"
    "$py" -m venv "$other"
    "$other/bin/python" -m pip install --quiet --upgrade pip
    "$other/bin/python" -m pip install --quiet maturin pytest numpy
    (
        cd crates/ferrox-py
        # The same features as the main build: only pyo3 and ferrox-py are
        # rebuilt for this interpreter, ferrox itself is shared.
        VIRTUAL_ENV="$other" PATH="$other/bin:$PATH" "$other/bin/maturin" develop --quiet ${features[@]+"${features[@]}"}
        "$other/bin/python" -m pytest -q tests/test_exit.py
    )
done
