#!/usr/bin/env bash
# tests/module_cpu_check.sh KFUSE MODEL DIR — kfuse compile's whole-module
# check without a GPU (judge/module_check.c, the CPU emulation of
# judge/emu.c against the fp64 interpreter), on a model whose convolutions
# a default compile lays out channels-last (tests/models/tv_bottleneck_cl.pt2):
#   1. a plain compile: the check ran on the CPU, passed, no fallback, held
#      to fp32's policy bound (1e-3: the emulation computes nothing in TF32,
#      so the TF32 bound a GPU check of these fp32 convolutions gets would
#      only loosen it);
#   2. the mutation (KFUSE_TEST_BREAK_LAYOUT=1: the channels-last pass
#      writes 3x3 filters with their spatial dims exchanged; every group is
#      still right against its own weights): the check fails, names a
#      channels-last convolution group as the first to diverge, and the
#      compile falls back to --no-channels-last, which passes;
#   3. the same with --no-verify-module: nothing checked, the report says
#      so (the broken module is written: the escape hatch does what it says);
#   4. over the emulation's size limit (KFUSE_MODULE_CHECK_CPU_LIMIT=1): not
#      checked, and the report says why.
set -euo pipefail
k=$1 model=$2 dir=$3
mkdir -p "$dir"
fail() { echo "module_cpu_check: $*" >&2; exit 1; }
field() { # REPORT PYTHON-EXPRESSION over the report's module_check as m
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['module_check']; print($2)" "$1"
}

"$k" compile "$model" -o "$dir/a.so" -q --report "$dir/a.json"
[ "$(field "$dir/a.json" "m.get('checked')")" = True ] || fail "plain: not checked: $(field "$dir/a.json" "m.get('why')")"
[ "$(field "$dir/a.json" "m.get('passed')")" = True ] || fail "plain: the check failed: $(field "$dir/a.json" "m.get('failure')")"
[ "$(field "$dir/a.json" "'CPU' in m.get('device', '')")" = True ] || fail "plain: not the CPU path"
[ "$(field "$dir/a.json" "m.get('fallback', '')")" = "" ] || fail "plain: a fallback was needed"
[ "$(field "$dir/a.json" "m.get('policy_bound')")" = 0.001 ] \
  || fail "plain: the CPU check's policy bound is $(field "$dir/a.json" "m.get('policy_bound')"), not fp32's 1e-3"

KFUSE_TEST_BREAK_LAYOUT=1 "$k" compile "$model" -o "$dir/b.so" -q --report "$dir/b.json" 2>"$dir/b.err" \
  || fail "mutation: the fallback compile did not succeed: $(tail -3 "$dir/b.err")"
[ "$(field "$dir/b.json" "m.get('fallback')")" = "--no-channels-last" ] \
  || fail "mutation: expected the --no-channels-last fallback, the report says: $(field "$dir/b.json" "m")"
[ "$(field "$dir/b.json" "m.get('passed')")" = True ] || fail "mutation: the fallback module failed its check"
first=$(field "$dir/b.json" "m.get('first_failure', '')")
case $first in
  *"first diverging group: group "*"channels-last"*"(kf.conv)"*) ;;
  *) fail "mutation: the first failure does not name a channels-last convolution group: $first" ;;
esac
grep -q "does not match the reference" "$dir/b.err" || fail "mutation: no warning on stderr"

KFUSE_TEST_BREAK_LAYOUT=1 "$k" compile "$model" -o "$dir/c.so" -q --report "$dir/c.json" --no-verify-module
[ "$(field "$dir/c.json" "m.get('checked')")" = False ] || fail "--no-verify-module: checked anyway"
[ -s "$dir/c.so" ] || fail "--no-verify-module: no module written"

KFUSE_MODULE_CHECK_CPU_LIMIT=1 "$k" compile "$model" -o "$dir/d.so" -q --report "$dir/d.json"
[ "$(field "$dir/d.json" "m.get('checked')")" = False ] || fail "over the limit: checked anyway"
case $(field "$dir/d.json" "m.get('why', '')") in
  *"KFUSE_MODULE_CHECK_CPU_LIMIT"*) ;;
  *) fail "over the limit: the report does not say why: $(field "$dir/d.json" "m.get('why')")" ;;
esac
echo "module_cpu_check: passed (mutation caught: $first)"
