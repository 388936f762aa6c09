#!/usr/bin/env bash
# scripts/gpu_agent_check.sh — on the GPU machine, from the repository root
# with the portable build in dist/ (scripts/portable.sh here, then carry
# dist/ along): the LLM agent's scripted conversations (tests/agent/
# agent_check.py) with real judging, where the replayed built-in unit must
# verify (reward >= 1) and be kept. Needs libcurl.so.4 on that machine.
set -uo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf dist/kfuse-portable-x86_64.tar.xz || { echo "no dist/kfuse-portable-x86_64.tar.xz"; exit 1; }
python3 tests/agent/agent_check.py "$work/kfuse-portable/bin/kfuse" --gpu
