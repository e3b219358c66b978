#!/usr/bin/env bash
# Runs MLX's own Python tests (python/tests of an MLX checkout) against
# ferrox.core through a forwarding `mlx` package (scripts/mlx_compat/shim/mlx) and
# prints pass counts per file; --reference [PYTHON] runs the real MLX too.
#
#   MLX_TESTS_DIR=~/src/mlx ./scripts/mlx-tests.sh
#   MLX_GIT_DIR=/path/to/mlx/.git MLX_REF=v0.32.1 ./scripts/mlx-tests.sh --reference /path/to/mlx-venv/bin/python
#   ./scripts/mlx-tests.sh test_ops test_array     # some files only
#
# PYTHON: the interpreter that has ferrox (and numpy) installed (default
# python3). Without MLX tests it says so and exits 0. Exits 0 whatever fails,
# unless --min-pass N is given and fewer than N tests pass.
# See docs/mlx-compat.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "${PYTHON:-python3}" "$here/mlx_compat/mlx_tests_runner.py" "$@"
