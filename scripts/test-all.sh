#!/usr/bin/env bash
# Runs every test of the project: formatting, Rust unit, integration,
# doc and exit tests, and the loom model of the evaluation state machine.
# Works on a fresh machine with a Rust toolchain and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== rustfmt (reported; run cargo fmt --all before committing)"
cargo fmt --all --check >/dev/null 2>&1 || echo "rustfmt: some files need formatting"

echo "== numpy for fixture generators"
python3 -c "import numpy" 2>/dev/null || python3 -m pip install --quiet numpy

echo "== cargo test"
cargo test --workspace

echo "== loom model (separate target dir: cfg(loom) rebuilds everything)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p ferrox --test loom_cell --test loom_cache

echo "== all tests passed"
