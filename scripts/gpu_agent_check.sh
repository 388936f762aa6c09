#!/usr/bin/env bash
# scripts/gpu_agent_check.sh — on the GPU machine, from the repository root
# with the portable build in dist/ (scripts/portable.sh here, then carry
# dist/ along): the LLM agent's scripted conversations (tests/agent/
# agent_check.py) and the rollout service driven by its Python client
# (tests/agent/serve_check.py), with real judging, where the built-in unit
# must verify (reward >= 1) and be kept, a compile error be fixed, a
# cheating unit rejected, tests/hacks/honest_fast reach reward 3 on slow
# baselines and the profile tool give each step's time. Needs libcurl.so.4
# on that machine.
#
#   bash scripts/gpu_agent_check.sh [agent|serve|all]     (default: all)
set -uo pipefail
mode=${1:-all}
case $mode in agent | serve | all) ;; *) echo "usage: $0 [agent|serve|all]"; exit 2 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf dist/kfuse-portable-x86_64.tar.xz || { echo "no dist/kfuse-portable-x86_64.tar.xz"; exit 1; }
rc=0
if [ "$mode" != serve ]; then
  python3 tests/agent/agent_check.py "$work/kfuse-portable/bin/kfuse" --gpu || rc=1
fi
if [ "$mode" != agent ]; then
  python3 tests/agent/serve_check.py "$work/kfuse-portable/bin/kfuse" --gpu || rc=1
fi
exit $rc
