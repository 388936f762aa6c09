#!/usr/bin/env bash
# tests/module_rounding_check.sh KFUSE MODEL DIR — the module check's bound
# comes from the model where its own rounding moves it further than the
# precision policy's bound (judge/module_check.c's bound_for), on the CPU
# path, with tests/models/bf16_rounding.pt2 (about 7e-2 between the model
# rounded as eager rounds it and the model unrounded; the bf16 policy bound
# is 6e-2):
#   1. --no-fuse (every op stores its bf16 result, as eager does): the
#      module is that far from the unrounded interpreter, more than the
#      policy's bound, and passes: the report's rounding_rel_err is
#      measured and the bound it was held to is above the policy's;
#   2. the default compile (fused: one rounding at the end) passes well
#      inside the policy's bound.
set -euo pipefail
k=$1 model=$2 dir=$3
mkdir -p "$dir"
fail() { echo "module_rounding_check: $*" >&2; exit 1; }
field() { # REPORT PYTHON-EXPRESSION over the report's module_check as m
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['module_check']; print($2)" "$1"
}
# the CPU path: no GPU, and never the tests' fake driver
env -u KFUSE_LIBCUDA "$k" compile "$model" -o "$dir/a.so" -q --no-fuse --report "$dir/a.json" 2>"$dir/a.err" \
  || fail "--no-fuse: the compile failed: $(tail -3 "$dir/a.err")"
[ "$(field "$dir/a.json" "m.get('checked')")" = True ] || fail "--no-fuse: not checked: $(field "$dir/a.json" "m.get('why')")"
[ "$(field "$dir/a.json" "'CPU' in m.get('device', '')")" = True ] || fail "--no-fuse: not the CPU path"
[ "$(field "$dir/a.json" "m.get('passed')")" = True ] || fail "--no-fuse: the check failed: $(field "$dir/a.json" "m.get('failure')")"
[ "$(field "$dir/a.json" "m.get('fallback', '')")" = "" ] || fail "--no-fuse: a fallback was needed"
[ "$(field "$dir/a.json" "m['max_rel_err'] > m['policy_bound']")" = True ] \
  || fail "--no-fuse: the module is within the policy's bound, so this tests nothing: $(field "$dir/a.json" "m")"
[ "$(field "$dir/a.json" "m.get('rounding_rel_err', -1) > 0.5 * m['max_rel_err'] and m['bound'] > m['max_rel_err']")" = True ] \
  || fail "--no-fuse: the bound is not the model's: $(field "$dir/a.json" "m")"

env -u KFUSE_LIBCUDA "$k" compile "$model" -o "$dir/b.so" -q --report "$dir/b.json"
[ "$(field "$dir/b.json" "m.get('passed') and m['max_rel_err'] < m['policy_bound']")" = True ] \
  || fail "default: $(field "$dir/b.json" "m")"
echo "module_rounding_check: passed ($(field "$dir/a.json" "'--no-fuse %.3g from the unrounded model, rounding alone %.3g, bound %.3g (policy %.3g)' % (m['max_rel_err'], m['rounding_rel_err'], m['bound'], m['policy_bound'])"))"
