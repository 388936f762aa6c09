#!/usr/bin/env bash
# tests/compile_jobs_check.sh KFUSE MODEL WORKDIR — the parallel NVRTC
# compile (driver/compile.c) gives the units a serial one gives: the same
# groups, keys, units and cubins (compared by the report's group list and
# the plan's bytes: only the linker's build-id may differ), and a failing
# compile reports the same first error either way.
set -euo pipefail
kfuse=$1 model=$2 work=$3
rm -rf "$work" && mkdir -p "$work/serial" "$work/par" "$work/junk"
# one file name in two folders: the plan records the weights file's name
KFUSE_COMPILE_JOBS=1 "$kfuse" compile "$model" -o "$work/serial/m.so" --report "$work/serial.json" -q
KFUSE_COMPILE_JOBS=4 "$kfuse" compile "$model" -o "$work/par/m.so" --report "$work/par.json" -q
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def units(f):
    r = json.load(open(f))
    keep = ("id", "kind", "key", "ops", "unit", "policy", "cubin_bytes", "library")
    return r["unique_units"], [{k: g.get(k) for k in keep} for g in r["group_list"]]
a, b = units(f"{w}/serial.json"), units(f"{w}/par.json")
if a != b:
    sys.exit(f"FAIL: the parallel compile's groups differ from the serial one's:\n{a}\n{b}")
if a[0] < 3:
    sys.exit(f"FAIL: {a[0]} unique units: the model proves nothing about parallel compiles")
print(f"PASS: {a[0]} units, the same serial and on 4 threads")
PY
# the .rodata (plan, cubins) byte for byte
for v in serial par; do objcopy -O binary --only-section=.rodata "$work/$v/m.so" "$work/$v.rodata"; done
cmp "$work/serial.rodata" "$work/par.rodata" || { echo "FAIL: the plans differ"; exit 1; }
# a bad thread count falls back to the default, never to no compile
KFUSE_COMPILE_JOBS=junk "$kfuse" compile "$model" -o "$work/junk/m.so" -q
echo "PASS: plans identical; KFUSE_COMPILE_JOBS=junk compiles"
