#!/usr/bin/env bash
# scripts/example.sh — the README's first command: install the dependencies,
# build kfuse, and run it on the bundled example model. Prints the
# partition-ready IR of examples/resnet_block.pt2 and what the model needs
# (ops, weights, memory).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${KFUSE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja >/dev/null
ninja -C "$build" kfuse
"$build/kfuse" info examples/resnet_block.pt2
