#!/usr/bin/env bash
# Lints: clippy with warnings as errors (not yet part of test-all.sh: the
# op families still carry test-code warnings to clean up).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy --workspace --all-targets -- -D warnings
