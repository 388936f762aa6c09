#!/usr/bin/env bash
# tests/task_check.sh KFUSE FIXTURES_DIR WORK — `kfuse task --all` on every
# fixture model: each writes its tasks, every group.mlir reads back through
# `kfuse opt` (the MLIR-text reader and the verifier), every task.json is
# JSON naming its format and every task has a built-in unit or says why
# not; and the command's usage errors exit 2 naming the problem.
set -u
k=$1 fx=$2 work=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
fail=0 n=0 models=0
for p in "$fx"/*.pt2; do
  b=$(basename "$p" .pt2)
  models=$((models + 1))
  if ! "$k" task "$p" --all -o "$work/$b" -q 2> "$work/$b.err"; then
    echo "FAIL $b: kfuse task: $(head -n 2 "$work/$b.err")"; fail=1; continue
  fi
  for d in "$work/$b"/group_*; do
    n=$((n + 1))
    "$k" opt "$d/group.mlir" > /dev/null 2> "$work/opt.err" || { echo "FAIL $d/group.mlir: $(head -n 2 "$work/opt.err")"; fail=1; }
    grep -q '"format":[[:space:]]*"kfuse-task-v1"' "$d/task.json" || { echo "FAIL $d/task.json: no format"; fail=1; }
    if [ ! -f "$d/builtin/unit.json" ] && ! grep -q '"builtin_why"' "$d/task.json"; then
      echo "FAIL $d: no built-in unit and no reason"; fail=1
    fi
    if [ ! -f "$d/model.py" ] && ! grep -q '"model_py_why"' "$d/task.json"; then
      echo "FAIL $d: no model.py and no reason"; fail=1
    fi
  done
done
echo "$n tasks from $models models"
# every model.py is Python (scripts/check_model_py.py runs them against the
# interpreter where PyTorch is installed)
if command -v python3 > /dev/null; then
  find "$work" -name model.py -print0 | xargs -0 python3 -c '
import ast, sys
for f in sys.argv[1:]:
    ast.parse(open(f).read(), f)
print(len(sys.argv) - 1, "model.py files parse")' || { echo "FAIL a model.py does not parse"; fail=1; }
fi
[ "$n" -gt 0 ] || fail=1
expect2() { # description, args...
  local what=$1; shift
  "$k" task "$@" > "$work/u.out" 2>&1; local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL usage ($what): exit $rc"; fail=1; fi
}
m=$(ls "$fx"/*.pt2 | head -n 1)
expect2 "neither --group nor --all" "$m" -o "$work/x"
expect2 "both" "$m" --all --group 1 -o "$work/x"
expect2 "junk group" "$m" --group 1x -o "$work/x"
expect2 "no -o" "$m" --all
expect2 "-o without a value" "$m" --all -o
"$k" task --help > /dev/null || { echo "FAIL task --help"; fail=1; }
# an existing directory is never written into
mkdir -p "$work/exists"
if "$k" task "$m" --all -o "$work/exists" -q 2> "$work/e.err"; then echo "FAIL existing -o accepted"; fail=1
elif ! grep -q exists "$work/e.err"; then echo "FAIL existing -o: $(cat "$work/e.err")"; fail=1; fi
[ -z "$(ls -A "$work/exists")" ] || { echo "FAIL something written into an existing directory"; fail=1; }
exit $fail
