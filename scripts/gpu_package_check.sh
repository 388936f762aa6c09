#!/usr/bin/env bash
# scripts/gpu_package_check.sh — the CMake package on the GPU machine
# (repository root, dist/ from scripts/portable.sh carried along; the
# portable tarball is also an installed package):
#
#   1. examples/cmake configured against the package (-Dkfuse_DIR), the
#      model compiled at build time by kfuse_add_model, the program linked;
#   2. the program run on the GPU: its output's sum and absolute sum
#      against PyTorch running the same archive (torch.export.load) on the
#      same deterministic input (tolerance 2e-3 relative: TF32
#      convolutions), on the GPU;
#   3. the same with the model compiled from a kernel cache that kfuse warm
#      filled on this GPU (KFUSE_CACHE_DIR, OPTIONS --require-cached
#      --offline through KFUSE_OPTIONS below).
#
#   bash scripts/gpu_package_check.sh
set -uo pipefail
out=${OUT:-/tmp/kfuse-gpu-package}
mkdir -p "$out"
exec > >(tee "$out/gpu_package_check.log") 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf dist/kfuse-portable-x86_64.tar.xz || { echo "no dist/kfuse-portable-x86_64.tar.xz"; exit 1; }
pkg=$work/kfuse-portable
[ -f "$pkg/lib/cmake/kfuse/kfuseConfig.cmake" ] || { echo "the tarball holds no CMake package"; exit 1; }
. scripts/gpu_env.sh
cudnn_dir=$(cudnn_dir)
[ -n "$cudnn_dir" ] && export LD_LIBRARY_PATH="$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fail=0

expected() { # the sums PyTorch gives for the program's input
  python3 - <<'PY'
import torch
ep = torch.export.load("examples/resnet_block.pt2")
m = ep.module().to("cuda")
x0 = ep.example_inputs[0][0] if ep.example_inputs else None
shape = tuple(x0.shape) if x0 is not None else (2, 3, 16, 16)
n = 1
for d in shape:
    n *= d
x = torch.tensor([((i * 2654435761) % 2001 - 1000) / 1000.0 for i in range(n)], dtype=torch.float32)
y = m(x.reshape(shape).cuda())
y = y[0] if isinstance(y, (tuple, list)) else y
y = y.double().cpu()
print(f"{y.sum().item():.6f} {y.abs().sum().item():.6f}")
PY
}

build_and_run() { # NAME [cmake args...]
  local name=$1
  shift
  local ex=$work/$name
  if ! cmake -S examples/cmake -B "$ex" -G Ninja -Dkfuse_DIR="$pkg/lib/cmake/kfuse" "$@" > "$ex.configure.log" 2>&1 ||
     ! cmake --build "$ex" > "$ex.build.log" 2>&1; then
    echo "BUILD-FAIL $name: $(tail -n 5 "$ex.configure.log" "$ex.build.log" 2>/dev/null | tr '\n' ' ')"
    return 1
  fi
  local got
  if ! got=$("$ex/resnet_block_demo" 2>&1); then
    echo "RUN-FAIL $name: $got"
    return 1
  fi
  echo "$name: $got"
  python3 - "$got" "$want" <<'PY'
import re, sys
got, want = sys.argv[1], sys.argv[2].split()
m = re.search(r"sum (-?[0-9.]+) abs-sum ([0-9.]+)", got)
ok = m and all(abs(float(a) - float(b)) <= 2e-3 * max(1.0, abs(float(b))) for a, b in zip(m.groups(), want))
print(("PASS" if ok else "MISMATCH") + f": program {m.groups() if m else '?'} vs PyTorch {tuple(want)}")
sys.exit(0 if ok else 1)
PY
}

want=$(expected) || { echo "PyTorch could not run examples/resnet_block.pt2"; exit 1; }
echo "PyTorch on the program's input: sum abs-sum = $want"
echo "== 1-2. examples/cmake built against the package and run"
build_and_run plain || fail=1
echo "== 3. the same from a kernel cache kfuse warm filled here"
cache=$work/cache
"$pkg/bin/kfuse" warm examples/resnet_block.pt2 --cache "$cache" -q || fail=1
KFUSE_CACHE_DIR=$cache build_and_run cached -DKFUSE_MODEL_OPTIONS="--require-cached;--offline" || fail=1
echo "gpu_package_check: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
