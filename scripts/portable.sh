#!/usr/bin/env bash
# scripts/portable.sh — builds and packs the portable kfuse: LLVM and MLIR
# linked statically from Debian's archives (only the objects used), libstdc++
# and libgcc static, libzip/minizip/cJSON/SQLite carried in lib/ beside the binary
# (rpath $ORIGIN/lib; Debian ships no static archives of those), the CUDA
# driver loaded at run time, SQLite carried too. It runs on the GPU machines (Ubuntu 24.04, none
# of our Debian packages) and is the release artifact for GPU CI runners.
#
#   bash scripts/portable.sh            -> dist/kfuse-portable-x86_64.tar.xz
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ -f scripts/deps.sh ]; then bash scripts/deps.sh; fi
cmake -S . -B build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKFUSE_PORTABLE=ON -DKFUSE_TESTS=OFF -DKFUSE_WERROR=ON >/dev/null
ninja -C build-portable kfuse kfuse_runtime
out=dist/kfuse-portable
rm -rf "$out" && mkdir -p "$out/bin/lib"
# laid out as `cmake --install` lays out a prefix (bin/kfuse,
# lib/libkfuse_runtime.a, include/kfuse_runtime.h, lib/cmake/kfuse: the
# CMake package, find_package(kfuse) with -Dkfuse_DIR=<dir>/lib/cmake/kfuse)
cmake --install build-portable --prefix "$out" --strip >/dev/null
# the runtime every compiled module links, also beside the binary (where
# the GPU scripts of earlier versions looked for it)
cp build-portable/libkfuse_runtime.a "$out/bin/libkfuse_runtime.a"
# carry the shared libraries the binary needs that are not in a plain
# Ubuntu/Debian base system
for lib in libzip.so.4 libcjson.so.1 libminizip.so.1 libsqlite3.so.0; do
  path=$(ldd "$out/bin/kfuse" | awk -v l="$lib" '$1 == l { print $3 }')
  if [ -z "$path" ]; then echo "portable: $lib is not linked?" >&2; exit 1; fi
  cp -L "$path" "$out/bin/lib/$lib"
done
strip "$out"/bin/lib/*.so.* || true
if ldd "$out/bin/kfuse" | grep -E "libLLVM|libMLIR|libstdc\+\+" >/dev/null; then
  echo "portable: the binary still links LLVM/MLIR or libstdc++ dynamically:" >&2
  ldd "$out/bin/kfuse" >&2
  exit 1
fi
cat > "$out/README" <<'TXT'
kfuse portable build. Run bin/kfuse; it finds its libraries in bin/lib.
Also an installed CMake package: find_package(kfuse) with
-Dkfuse_DIR=<this directory>/lib/cmake/kfuse (kfuse_add_model).
Needs glibc >= 2.36, libbz2, zlib and OpenSSL 3 (libcrypto.so.3) from the base system.
TXT
tar -C dist -cJf dist/kfuse-portable-x86_64.tar.xz kfuse-portable
ls -l "$out/bin/kfuse" "$out/bin/libkfuse_runtime.a" "$out"/bin/lib/* dist/kfuse-portable-x86_64.tar.xz
echo "portable: wrote $root/dist/kfuse-portable-x86_64.tar.xz"
