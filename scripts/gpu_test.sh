#!/usr/bin/env bash
# scripts/gpu_test.sh — GPU tests, run on the GPU machine from the repository
# root with the portable build in dist/ (scripts/portable.sh here, then carry
# dist/ along):
#   1. the runtime smoke test (scripts/gpu_runtime_smoke.sh) when present;
#   2. every fixture model, both IR flavours: `kfuse compile` to a module,
#      `kfuse run MODULE.so --io X.kfio` on the GPU against the outputs
#      recorded from PyTorch eager (fp32 kernels vs fp32 eager: atol/rtol
#      1e-4 unless KFUSE_GPU_TOL says otherwise; 2e-3 for modules with TF32
#      convolutions, which the default precision policy allows exactly as
#      PyTorch eager does on the GPU — KFUSE_GPU_TOL_TF32; a fixture recorded
#      at a looser tolerance than these, a bf16/fp16 model's (make_fixtures.py's
#      HALF table: kfuse rounds to the half type at group boundaries, PyTorch
#      after every op), at its own), and the same module through
#      the Python loader for a few of them;
#   3. the per-op fp64 reference (`kfuse compile --reference`) of every
#      core-IR fixture against PyTorch at the fixture's recorded tolerance;
# and prints a table. Writes logs under $OUT (default /tmp/kfuse-gpu-test).
set -uo pipefail
out=${OUT:-/tmp/kfuse-gpu-test}
mkdir -p "$out"
exec > >(tee "$out/gpu_test.log") 2>&1
tol=${KFUSE_GPU_TOL:-1e-4}
tol_tf32=${KFUSE_GPU_TOL_TF32:-2e-3}
work=$(mktemp -d)
tar -C "$work" -xJf dist/kfuse-portable-x86_64.tar.xz || { echo "no dist/kfuse-portable-x86_64.tar.xz"; exit 1; }
k="$work/kfuse-portable/bin/kfuse"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# modules with convolutions load cuDNN 9 at create time (scripts/gpu_env.sh)
. scripts/gpu_env.sh
cudnn_dir=$(cudnn_dir)
[ -n "$cudnn_dir" ] && export LD_LIBRARY_PATH="$cudnn_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "cuDNN from: ${cudnn_dir:-not found (modules with convolutions will not load)}"
fail=0
if [ -x scripts/gpu_runtime_smoke.sh ] || [ -f scripts/gpu_runtime_smoke.sh ]; then
  echo "== runtime smoke test"
  bash scripts/gpu_runtime_smoke.sh || fail=1
fi
echo "== fixtures: compile, run on the GPU, compare with PyTorch (atol=rtol=$tol; $tol_tf32 with TF32 convolutions)"
pass=0 total=0 cfail=0 rfail=0
for p in tests/fixtures/*.pt2; do
  b=$(basename "$p" .pt2); base=${b%%.*}
  total=$((total + 1))
  so="$work/$b.so"
  if ! "$k" compile "$p" -o "$so" -q --report "$work/$b.report.json" > "$work/$b.compile.log" 2>&1; then
    cfail=$((cfail + 1)); echo "COMPILE-FAIL $b: $(head -n 1 "$work/$b.compile.log")"; continue
  fi
  t=$tol; note=""
  if grep -qi tf32 "$work/$b.report.json"; then t=$tol_tf32; note=" (TF32, tolerance $t)"; fi
  # the .kfio's own atol/rtol where looser (its JSON header: docs/FORMATS.md)
  own=$(python3 -c 'import json,struct,sys; f=open(sys.argv[1],"rb"); f.read(8); n=struct.unpack("<Q",f.read(8))[0]; h=json.loads(f.read(n)); print(max(h["atol"],h["rtol"]))' "tests/fixtures/$base.kfio")
  if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$own" "$t"; then
    t=$own; note=" (recorded in half precision, its tolerance $t)"
  fi
  if "$k" run "$so" --io "tests/fixtures/$base.kfio" --atol "$t" --rtol "$t" > "$work/$b.run.log" 2>&1; then
    pass=$((pass + 1)); echo "PASS $b$note"
  else
    rfail=$((rfail + 1)); echo "RUN-FAIL $b: $(grep -m 2 error "$work/$b.run.log" | tr '\n' ' ')"
  fi
done
echo "fixtures: $pass of $total pass; $cfail do not compile yet, $rfail mismatch or fail at run time"
[ "$rfail" -eq 0 ] || fail=1
echo "== the per-op fp64 reference (kfuse compile --reference): one group per op, every"
echo "   kernel in fp64, against PyTorch at the fixture's own tolerance (as the CPU interpreter)"
rpass=0 rtotal=0 rbad=0
for p in tests/fixtures/*.core.pt2; do
  b=$(basename "$p" .pt2); base=${b%%.*}
  rtotal=$((rtotal + 1))
  so="$work/$b.ref.so"
  if ! "$k" compile "$p" -o "$so" -q --reference > "$work/$b.ref.compile.log" 2>&1; then
    rbad=$((rbad + 1)); echo "REF-COMPILE-FAIL $b: $(head -n 1 "$work/$b.ref.compile.log")"; continue
  fi
  if "$k" run "$so" --io "tests/fixtures/$base.kfio" > "$work/$b.ref.run.log" 2>&1; then
    rpass=$((rpass + 1)); echo "PASS $b (fp64 reference)"
  else
    rbad=$((rbad + 1)); echo "REF-FAIL $b: $(grep -m 2 error "$work/$b.ref.run.log" | tr '\n' ' ')"
  fi
done
echo "fp64 reference: $rpass of $rtotal pass"
[ "$rbad" -eq 0 ] || fail=1
echo "== Python loader"
python3 - "$k" "$work" <<'PY' || fail=1
import os, subprocess, sys, torch
sys.path.insert(0, "python")
import kfuse
k, work = sys.argv[1], sys.argv[2]
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.l = torch.nn.Linear(64, 32)
    def forward(s, x): return torch.softmax(torch.relu(s.l(x)) * 2.0, -1)
m = M().eval(); x = torch.randn(16, 64)
kfuse.export(m, (x,), f"{work}/py.pt2")
subprocess.run([k, "compile", f"{work}/py.pt2", "-o", f"{work}/py.so", "-q"], check=True)
mod = kfuse.load(f"{work}/py.so")
xs = [torch.randn(16, 64, device="cuda") for _ in range(3)]
mc = m.cuda()
err = max(((mod(a) - mc(a)).abs().max()).item() for a in xs)
print(f"python loader: max abs error vs eager {err:.2e}")
assert err < 1e-4, err
try:
    mod(torch.randn(8, 64, device="cuda"))
    raise SystemExit("a wrong shape was accepted")
except ValueError as e:
    print("python loader: wrong shape rejected:", e)
PY
echo "== result: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
