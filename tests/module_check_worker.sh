#!/usr/bin/env bash
# tests/module_check_worker.sh KFUSE FAKE_CUDA MODEL DIR — the plumbing of
# kfuse compile's GPU module check (judge/module_check.c and its worker,
# judge/module_check_worker.c) on the fake CUDA driver (tests/fake/: no
# kernel runs, device memory is zeroed host memory, so both modules'
# outputs are zeros and the comparison itself is not under test here; the
# GPU runs of scripts/gpu_module_check.sh are):
#   1. the worker starts with the compile, finds the (fake) GPU, builds and
#      loads the reference, takes the check and answers it: the report says
#      checked on "Fake GPU", with the reference built alongside and the
#      time split; nothing of the worker is left after;
#   2. KFUSE_MODULE_CHECK_KEEP=1 keeps its files: ready.json, the reference,
#      one spec and one result;
#   3. a compile that fails after the worker started (its output directory
#      does not exist) exits 1 at once, and leaves no worker process and
#      no temporary directory behind.
set -euo pipefail
k=$1 fake=$2 model=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir/tmp"
fail() { echo "module_check_worker: $*" >&2; exit 1; }
field() { # REPORT PYTHON-EXPRESSION over the report's module_check as m
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['module_check']; print($2)" "$1"
}
export KFUSE_LIBCUDA=$fake KFUSE_CUBLASLT=$fake KFUSE_CUDNN_LIBRARY=$fake TMPDIR=$dir/tmp
# --no-judge: the fake runs no kernel, so nothing could be verified on it
"$k" compile "$model" -o "$dir/a.so" -q --no-judge --report "$dir/a.json"
[ "$(field "$dir/a.json" "m.get('checked')")" = True ] || fail "not checked: $(field "$dir/a.json" "m.get('why')")"
[ "$(field "$dir/a.json" "m.get('device')")" = "Fake GPU" ] || fail "not checked on the fake GPU"
[ "$(field "$dir/a.json" "m.get('passed') and m.get('sets') == 3")" = True ] || fail "$(field "$dir/a.json" "m")"
[ "$(field "$dir/a.json" "m['reference_seconds'] > 0 and 'load_module' in m['seconds_in']")" = True ] ||
  fail "no reference time or no split of the check's time: $(field "$dir/a.json" "m")"
[ -z "$(ls -A "$dir/tmp")" ] || fail "the check's files were left in TMPDIR: $(ls "$dir/tmp")"

KFUSE_MODULE_CHECK_KEEP=1 "$k" compile "$model" -o "$dir/b.so" -q --no-judge --report "$dir/b.json"
kept=$(ls -d "$dir"/tmp/kfuse-mcheck-* 2>/dev/null | head -1)
[ -n "$kept" ] || fail "KFUSE_MODULE_CHECK_KEEP=1 kept nothing"
for f in ready.json reference.so reference.so.weights spec-0.json result-0.json worker.log; do
  [ -e "$kept/$f" ] || fail "KFUSE_MODULE_CHECK_KEEP=1: no $f in the kept directory"
done
rm -rf "$dir/tmp" && mkdir -p "$dir/tmp"

t0=$(date +%s)
if "$k" compile "$model" -o "$dir/missing/c.so" -q --no-judge 2>"$dir/c.err"; then
  fail "a compile into a missing directory succeeded"
fi
[ $(($(date +%s) - t0)) -lt 20 ] || fail "the failed compile took $(($(date +%s) - t0)) s"
sleep 0.2
if pgrep -f "module-check-worker .*$dir/tmp" >/dev/null; then fail "a worker outlived its compile"; fi
[ -z "$(ls -A "$dir/tmp")" ] || fail "the failed compile left $(ls "$dir/tmp") in TMPDIR"
echo "module_check_worker: ok"
