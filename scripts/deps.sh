#!/usr/bin/env bash
# scripts/deps.sh — install kfuse's build and test dependencies from Debian 12
# (bookworm) packages. Idempotent: when every package is already installed
# it changes nothing and does not touch apt. Uses sudo when not run as root.
#
# LLVM/MLIR 22 come from bookworm-security (already in a stock sources.list).
# The CUDA 13 toolkit is not a Debian package: it must already be at
# /usr/local/cuda; this script stops with a clear message when it is not.
set -euo pipefail

PACKAGES=(
  # LLVM/MLIR 22: C API archives, CMake configs; lit, FileCheck, not,
  # split-file (llvm-22-tools) and mlir-opt (mlir-22-tools) for the tests
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  # frontend, agent and cache libraries
  libcjson-dev libcurl4-openssl-dev libzip-dev libminizip-dev libsqlite3-dev
  zlib1g-dev libzstd-dev
  # tests: unit tests, fuzzing with libFuzzer (clang-14 + its runtimes),
  # the kernel cache's HTTP remote against nginx's WebDAV module
  libcmocka-dev clang-14 libclang-rt-14-dev nginx
  # build tools
  gcc g++ cmake ninja-build pkg-config python3
)

CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
if [[ ! -x "$CUDA_ROOT/bin/nvcc" ]]; then
  echo "deps.sh: error: CUDA 13 toolkit not found at $CUDA_ROOT (no $CUDA_ROOT/bin/nvcc)." >&2
  echo "deps.sh: install the CUDA 13 toolkit there (it is not a Debian package), or set CUDA_ROOT." >&2
  exit 1
fi
cuda_release=$("$CUDA_ROOT/bin/nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p')
if [[ "$cuda_release" != 13 ]]; then
  echo "deps.sh: error: CUDA 13 toolkit not found at $CUDA_ROOT: nvcc reports release '${cuda_release:-unknown}'." >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#PACKAGES[@]} packages installed; CUDA $cuda_release at $CUDA_ROOT"
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "deps.sh: error: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  SUDO=(sudo)
fi
echo "deps.sh: installing ${missing[*]}"
"${SUDO[@]}" apt-get update
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y "${missing[@]}"; then
  echo "deps.sh: error: apt-get install failed. LLVM/MLIR 22 come from bookworm-security:" >&2
  echo "deps.sh: check that 'deb http://deb.debian.org/debian-security bookworm-security main'" >&2
  echo "deps.sh: (or the deb822 equivalent) is among the apt sources." >&2
  exit 1
fi
echo "deps.sh: done; CUDA $cuda_release at $CUDA_ROOT"
