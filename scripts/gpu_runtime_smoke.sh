#!/usr/bin/env bash
# scripts/gpu_runtime_smoke.sh — builds and runs the runtime's GPU smoke test
# (tests/gpu/runtime_smoke.c) on a machine with an NVIDIA GPU and the CUDA
# toolkit (nvcc, headers); nothing else from kfuse's dependencies is needed.
#
#   1. compiles tests/gpu/smoke_kernels.cu with nvcc -cubin for the GPU's
#      architecture (from nvidia-smi; SM=90 to override);
#   2. builds the runtime into a shared library and checks that it needs
#      nothing beyond libc/libdl/libpthread and exports only kfuse_* names;
#   3. builds runtime_smoke from the runtime and plan-writer sources with the
#      system C compiler (CC, default gcc) and runs it;
#   4. with SANITIZER=1, runs it again under compute-sanitizer (memcheck).
#
# Prints PASS/FAIL lines and a final PASS or FAIL; exits non-zero on failure.
# The log goes to $OUT (or /tmp/kfuse-runtime-smoke); binaries and scratch
# files to a temporary directory (WORK to choose one).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/kfuse-runtime-smoke}
mkdir -p "$out"
log="$out/gpu_runtime_smoke.log"
work=${WORK:-$(mktemp -d /tmp/kfuse-runtime-smoke.XXXXXX)}
mkdir -p "$work"
exec > >(tee "$log") 2>&1
fail=0
say() { echo "== $*"; }

say "machine"
date -u
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true

nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "FAIL setup: no nvcc on PATH or in /usr/local/cuda/bin"
  echo "FAIL"; exit 1
fi
cuda_inc=$(cd "$(dirname "$nvcc")/../include" 2>/dev/null && pwd)
if [ ! -f "$cuda_inc/cuda.h" ]; then
  for d in /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include; do
    [ -f "$d/cuda.h" ] && cuda_inc=$d && break
  done
fi
if [ ! -f "$cuda_inc/cuda.h" ]; then
  echo "FAIL setup: cuda.h not found next to $nvcc"
  echo "FAIL"; exit 1
fi
incs=(-isystem "$cuda_inc")
# cublasLt.h may come from a Python wheel rather than the toolkit
if [ ! -f "$cuda_inc/cublasLt.h" ]; then
  lt_h=$(ls /usr/local/cuda*/include/cublasLt.h /usr/local/cuda*/targets/*/include/cublasLt.h \
           /opt/*/.venv/lib/python3*/site-packages/nvidia/{cu13,cublas}/include/cublasLt.h \
           /usr/local/lib/python3*/dist-packages/nvidia/{cu13,cublas}/include/cublasLt.h \
           /usr/lib/python3*/{site,dist}-packages/nvidia/{cu13,cublas}/include/cublasLt.h \
           2>/dev/null | head -n 1)
  if [ -z "$lt_h" ]; then
    lt_h=$(python3 -c 'import glob, os, site
for d in site.getsitepackages():
    for p in glob.glob(os.path.join(d, "nvidia", "*", "include", "cublasLt.h")):
        print(p); raise SystemExit' 2>/dev/null | head -n 1)
  fi
  if [ -z "$lt_h" ]; then
    echo "FAIL setup: cublasLt.h not found (looked in $cuda_inc and Python's nvidia packages)"
    echo "FAIL"; exit 1
  fi
  incs+=(-isystem "$(dirname "$lt_h")")
fi
echo "nvcc: $nvcc ($("$nvcc" --version | tail -n 1)); headers: ${incs[*]}"

sm=${SM:-}
if [ -z "$sm" ]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ')
  sm=${cap/./}
fi
if ! [[ $sm =~ ^[0-9]+$ ]]; then
  echo "could not read the compute capability (got '$sm'); assuming sm_90"
  sm=90
fi

say "kernels for sm_$sm"
if ! "$nvcc" -cubin -arch="sm_$sm" -o "$work/smoke_kernels.cubin" tests/gpu/smoke_kernels.cu; then
  echo "FAIL build: nvcc -cubin tests/gpu/smoke_kernels.cu"
  echo "FAIL"; exit 1
fi

cc=${CC:-gcc}
cflags=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wno-unused-parameter -Iruntime "${incs[@]}")
rt_src=(runtime/kfr_validate.c runtime/kfr_hash.c runtime/kfr_driver.c runtime/kfr_model.c
        runtime/kfr_params.c runtime/kfr_weights.c runtime/kfr_run.c
        runtime/kfr_cudnn.c runtime/kfr_cudnn_graph.c runtime/kfr_sync.c)

say "runtime as a shared library: link dependencies and exports"
if "$cc" "${cflags[@]}" -fPIC -fvisibility=hidden -shared -o "$work/libkfr_check.so" \
     "${rt_src[@]}" -ldl -lpthread; then
  needed=$(readelf -d "$work/libkfr_check.so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
  echo "NEEDED: $needed"
  bad_needed=$(echo "$needed" | tr ' ' '\n' | grep -Ev '^(libc\.so|libdl\.so|libpthread\.so|ld-linux|$)' || true)
  exports=$(nm -D --defined-only "$work/libkfr_check.so" | awk '{print $3}' | tr '\n' ' ')
  echo "exports: $exports"
  bad_exports=$(echo "$exports" | tr ' ' '\n' | grep -Ev '^(kfuse_[a-z_]+|_init|_fini|)$' || true)
  if [ -n "$bad_needed" ] || [ -n "$bad_exports" ]; then
    echo "FAIL runtime link check: unexpected NEEDED [$bad_needed] or exports [$bad_exports]"
    fail=1
  else
    echo "PASS runtime link check: only libc/libdl/libpthread, only kfuse_* exported"
  fi
else
  echo "FAIL runtime link check: building the shared library failed"
  fail=1
fi

say "runtime_smoke"
if ! "$cc" "${cflags[@]}" -o "$work/runtime_smoke" "${rt_src[@]}" runtime/kfr_plan_writer.c \
     tests/gpu/runtime_smoke.c -ldl -lpthread -lm; then
  echo "FAIL build: runtime_smoke"
  echo "FAIL"; exit 1
fi
export TMPDIR=$work
"$work/runtime_smoke" "$work/smoke_kernels.cubin" "$sm" || fail=1

if [ "${SANITIZER:-0}" = 1 ]; then
  say "runtime_smoke under compute-sanitizer"
  if command -v compute-sanitizer > /dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$work/runtime_smoke" "$work/smoke_kernels.cubin" "$sm" > "$out/sanitizer.log" 2>&1
    rc=$?
    tail -n 5 "$out/sanitizer.log"
    if [ $rc -eq 0 ]; then echo "PASS compute-sanitizer memcheck"; else
      echo "FAIL compute-sanitizer memcheck (rc $rc, $out/sanitizer.log)"; fail=1; fi
  else
    echo "compute-sanitizer not found; skipped"
  fi
fi

echo "== result"
if [ $fail -eq 0 ]; then echo PASS; else echo FAIL; fi
exit $fail
