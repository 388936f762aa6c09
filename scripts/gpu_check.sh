#!/usr/bin/env bash
# scripts/gpu_check.sh — run on the GPU machine (Ubuntu 24.04 with PyTorch,
# none of kfuse's Debian packages) from the repository root:
#   1. unpack the portable build (dist/kfuse-portable-x86_64.tar.xz, made
#      here by scripts/portable.sh and carried along) and run it on the
#      bundled example and on every committed fixture;
#   2. regenerate the fixtures with that machine's PyTorch
#      (scripts/make_fixtures.py) and check kfuse against those too, and the
#      regenerated recorded outputs against the committed ones.
# Writes a log to $OUT (or /tmp/kfuse-gpu) and exits non-zero on failure.
set -uo pipefail
out=${OUT:-/tmp/kfuse-gpu}
mkdir -p "$out"
log="$out/gpu_check.log"
exec > >(tee "$log") 2>&1
fail=0
echo "== machine"
date -u
grep PRETTY_NAME /etc/os-release || true
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
work=$(mktemp -d)
tar -C "$work" -xJf dist/kfuse-portable-x86_64.tar.xz || { echo "no portable build in dist/"; exit 1; }
k="$work/kfuse-portable/bin/kfuse"
echo "== portable kfuse: $(du -h dist/kfuse-portable-x86_64.tar.xz | cut -f1) packed, $(du -h "$k" | cut -f1) binary"
ldd "$k"
"$k" version || fail=1
echo "== kfuse info examples/resnet_block.pt2"
"$k" info examples/resnet_block.pt2 || fail=1

check_dir() { # dir -> runs every fixture in it
  local dir=$1 n=0 bad=0
  for p in "$dir"/*.pt2; do
    local base; base=$(basename "$p"); base=${base%%.*}
    n=$((n + 1))
    if ! "$k" run "$p" --io "$dir/$base.kfio" > /dev/null; then
      bad=$((bad + 1)); echo "FAIL: $p"
    fi
  done
  echo "$dir: $((n - bad)) of $n archives match the recorded PyTorch outputs"
  [ "$bad" -eq 0 ]
}
echo "== committed fixtures"
check_dir tests/fixtures || fail=1
echo "== fixtures regenerated with this machine's PyTorch"
regen="$work/regen"
if python3 scripts/make_fixtures.py --out "$regen" --no-example > "$out/regen.log" 2>&1; then
  tail -n 1 "$out/regen.log"
  check_dir "$regen" || fail=1
  python3 - "$regen" <<'PY' || fail=1
import struct, sys, json, glob, os
def read(p):
    b = open(p, "rb").read()
    h = struct.unpack("<Q", b[8:16])[0]
    meta = json.loads(b[16:16 + h]); base = (16 + h + 63) // 64 * 64
    return {e["name"]: b[base + e["offset"]: base + e["offset"] + e["nbytes"]]
            for e in meta["inputs"] + meta["outputs"]}
same = diff = 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.kfio"))):
    a, b = read(p), read(os.path.join("tests/fixtures", os.path.basename(p)))
    if a == b: same += 1
    else: diff += 1; print("differs bytewise:", os.path.basename(p))
print(f"regenerated .kfio files identical to the committed ones: {same} of {same + diff}")
PY
else
  echo "make_fixtures.py failed:"; tail -n 20 "$out/regen.log"; fail=1
fi
echo "== result: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
