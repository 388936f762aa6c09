#!/usr/bin/env bash
# scripts/example.sh — the README's first command: install the dependencies,
# build kfuse, and run it on the bundled example model. Prints the
# partition-ready IR of examples/resnet_block.pt2 and what the model needs
# (ops, weights, memory), then compiles it into a GPU module
# ($build/resnet_block.so, its weights sidecar and report; no GPU needed to
# compile — `kfuse run` / `kfuse bench` on a GPU machine run it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${KFUSE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja >/dev/null
ninja -C "$build" kfuse kfuse_runtime
"$build/kfuse" info examples/resnet_block.pt2
echo
"$build/kfuse" compile examples/resnet_block.pt2 -o "$build/resnet_block.so" \
  --report "$build/resnet_block.report.json"
echo "example: module $build/resnet_block.so (report $build/resnet_block.report.json);"
echo "example: on a GPU machine: $build/kfuse run $build/resnet_block.so --io tests/fixtures/resnet_block.kfio"
