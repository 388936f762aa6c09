#!/usr/bin/env bash
# tests/cmake_package_check.sh SOURCE_DIR BUILD_DIR OUT_DIR FAKE_LIBCUDA
# The CMake package and the build-system examples (docs/BUILD.md), without a
# GPU:
#   - `cmake --install BUILD_DIR` writes the binary, the runtime archive, its
#     header and the package; the package names no path of the build or
#     source tree, and works after the prefix is moved (relocatable);
#   - examples/cmake (a copy, with the model beside it as in the tree)
#     configures against it with -Dkfuse_DIR, compiles the model at build
#     time through kfuse_add_model and links the program; a second build is
#     a no-op; touching the model, or the kfuse binary, re-runs the compile;
#   - the program fails with the runtime's message and status 1 when there
#     is no CUDA driver, with a weights error when its weights file is
#     missing, and creates and runs the model on the fake CUDA driver
#     (tests/fake: kernels are not executed, so the checksum means nothing);
#   - examples/make/Makefile's pattern rule builds the shared-module version,
#     which runs on the fake driver too.
# KFUSE_TEST_LDFLAGS: the sanitizer runtimes when the tree is built with them.
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) out=$3 fake=$4
fail() { echo "cmake_package_check: $*" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---- install, then move the prefix: nothing may point back at the stage
cmake --install "$build" --prefix "$out/stage" >"$out/install.log" 2>&1 \
  || { cat "$out/install.log" >&2; fail "cmake --install failed"; }
mv "$out/stage" "$out/prefix"
p=$out/prefix
for f in bin/kfuse lib/libkfuse_runtime.a include/kfuse_runtime.h \
         lib/cmake/kfuse/kfuseConfig.cmake lib/cmake/kfuse/kfuseConfigVersion.cmake \
         lib/cmake/kfuse/kfuseFunctions.cmake lib/cmake/kfuse/kfuseTargets.cmake; do
  [ -f "$p/$f" ] || fail "cmake --install wrote no $f"
done
for tree in "$build" "$src" "$out/stage"; do
  if hits=$(grep -rlF "$tree" "$p/lib/cmake" "$p/include"); then
    fail "the installed package names $tree (not relocatable): $hits"
  fi
done

# ---- examples/cmake against the installed package
mkdir -p "$out/src"
cp -r "$src/examples/cmake" "$out/src/cmake"
cp "$src/examples/resnet_block.pt2" "$out/src/resnet_block.pt2"
gen=()
if command -v ninja >/dev/null; then gen=(-G Ninja); fi
ex=$out/ex
cmake -S "$out/src/cmake" -B "$ex" "${gen[@]}" -Dkfuse_DIR="$p/lib/cmake/kfuse" \
  -DCMAKE_EXE_LINKER_FLAGS="${KFUSE_TEST_LDFLAGS:-}" >"$out/configure.log" 2>&1 \
  || { cat "$out/configure.log" >&2; fail "configuring examples/cmake failed"; }
cmake --build "$ex" >"$out/build1.log" 2>&1 || { cat "$out/build1.log" >&2; fail "building examples/cmake failed"; }
grep -q "kfuse: compiling" "$out/build1.log" || fail "the first build did not compile the model"
obj=$ex/kfuse_models/resnet_block/resnet_block.o
prog=$ex/resnet_block_demo
[ -x "$prog" ] || fail "no program $prog"
[ -f "$ex/resnet_block.o.weights" ] || fail "no weights file beside the program"
stamp() { stat -c %Y.%y "$obj" "$prog" "$ex/resnet_block.o.weights"; }
before=$(stamp)
cmake --build "$ex" >"$out/build2.log" 2>&1 || { cat "$out/build2.log" >&2; fail "the second build failed"; }
! grep -q "kfuse: compiling" "$out/build2.log" || fail "the second build compiled the model again"
[ "$(stamp)" = "$before" ] || fail "the second build was not a no-op: $(cat "$out/build2.log")"
sleep 0.05
touch "$out/src/resnet_block.pt2"
cmake --build "$ex" >"$out/build3.log" 2>&1 || { cat "$out/build3.log" >&2; fail "the build after touching the model failed"; }
grep -q "kfuse: compiling" "$out/build3.log" || fail "touching the model did not re-run kfuse compile"
[ "$obj" -nt "$out/src/resnet_block.pt2" ] || fail "the object module is older than the touched model"
sleep 0.05
touch "$p/bin/kfuse"
cmake --build "$ex" >"$out/build4.log" 2>&1 || { cat "$out/build4.log" >&2; fail "the build after touching kfuse failed"; }
grep -q "kfuse: compiling" "$out/build4.log" || fail "touching the kfuse binary did not re-run kfuse compile"

# ---- the program: no driver, no weights, the fake driver
set +e
msg=$(KFUSE_LIBCUDA=$out/no-such-libcuda.so.1 "$prog" 2>&1); rc=$?
set -e
[ $rc = 1 ] || fail "without a CUDA driver the program exited $rc, not 1: $msg"
case $msg in *"cannot create the model (error 2)"*"no CUDA driver"*) ;;
  *) fail "without a CUDA driver the message is not the runtime's: $msg";; esac
fk=(env KFUSE_LIBCUDA="$fake" KFUSE_CUBLASLT="$fake" KFUSE_CUDNN_LIBRARY="$fake")
msg=$("${fk[@]}" "$prog" 2>&1) || fail "on the fake driver the program failed: $msg"
case $msg in *"output "*"[2x10] sum "*" ms"*) ;; *) fail "unexpected output on the fake driver: $msg";; esac
mv "$ex/resnet_block.o.weights" "$out/w.tmp"
set +e
msg=$("${fk[@]}" "$prog" 2>&1); rc=$?
set -e
mv "$out/w.tmp" "$ex/resnet_block.o.weights"
[ $rc = 1 ] || fail "without its weights file the program exited $rc, not 1: $msg"
case $msg in *"(error 5)"*resnet_block.o.weights*) ;; *) fail "no weights error naming the file: $msg";; esac

# ---- the make rule
if command -v make >/dev/null; then
  mkdir -p "$out/mk"
  make -C "$out/mk" -f "$src/examples/make/Makefile" KFUSE="$p/bin/kfuse" \
    CFLAGS="-O2 -Wall -Wextra -Werror" LDFLAGS="${KFUSE_TEST_LDFLAGS:-}" >"$out/make.log" 2>&1 \
    || { cat "$out/make.log" >&2; fail "examples/make failed"; }
  [ -f "$out/mk/resnet_block.so.weights" ] || fail "the make rule wrote no weights beside the module"
  msg=$("${fk[@]}" "$out/mk/resnet_block_demo" 2>&1) || fail "the make example failed on the fake driver: $msg"
  case $msg in *"[2x10] sum "*) ;; *) fail "unexpected output of the make example: $msg";; esac
fi
echo "cmake_package_check: ok"
