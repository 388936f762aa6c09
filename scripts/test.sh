#!/usr/bin/env bash
# scripts/test.sh — the README's second command and what CI runs (.ci/run):
# install the dependencies, then
#   1. build with -Werror and run the whole ctest suite        (build/)
#   2. build with ASan + UBSan and run the suite again          (build-asan/)
#   3. fuzz the .pt2 frontend for a bounded time                (build-fuzz/)
# and print a summary. Every step runs even when an earlier one failed; the
# exit status is non-zero if any did.
#
# Environment: KFUSE_BUILD_DIR, KFUSE_ASAN_BUILD_DIR, FUZZ_BUILD_DIR (build
# directories), FUZZ_SECONDS (per fuzz target, default 60), KFUSE_JOBS
# (parallel build and test jobs, default: the number of cores).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${KFUSE_JOBS:-$(nproc)}
build=${KFUSE_BUILD_DIR:-$root/build}
asan=${KFUSE_ASAN_BUILD_DIR:-$root/build-asan}
export FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$root/build-fuzz}
export FUZZ_SECONDS=${FUZZ_SECONDS:-60}

t_start=$SECONDS
names=()
results=()
times=()
step() { # step NAME COMMAND...
  local name=$1
  shift
  local t0=$SECONDS
  echo
  echo "==== test.sh: $name"
  if "$@"; then
    results+=("ok")
  else
    results+=("FAILED")
  fi
  names+=("$name")
  times+=("$((SECONDS - t0))")
}

if ! bash scripts/deps.sh; then
  echo "test.sh: installing dependencies failed; nothing was built" >&2
  exit 1
fi

configure_and_build() { # DIR CMAKE-ARGS...
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -G Ninja -DKFUSE_WERROR=ON "$@" && ninja -C "$dir" -j "$jobs"
}
run_ctest() { # DIR
  ctest --test-dir "$1" --output-on-failure -j "$jobs"
}

step "build" configure_and_build "$build"
step "tests" run_ctest "$build"

# LeakSanitizer is part of ASan on x86-64 Linux; keep it on and make every
# finding fatal, so a leak or UB fails its test instead of scrolling past.
#
# intercept_tls_get_addr=0: NVRTC is dlopen'd and has a TLS segment, so its
# thread-local block comes from __tls_get_addr. gcc 12's ASan records such
# blocks for LeakSanitizer, and where a block happens to start 16 bytes into
# a page it takes the 16 bytes before it for a glibc 2.19 header (start and
# size) that newer glibc does not write; LSan's tracer then scans that bogus
# range at exit and dies ("Tracer caught signal 11 ... LeakSanitizer has
# encountered a fatal error"). Whether a block lands there depends on what
# was allocated before it (the checkout's path, the environment), so the
# crash is deterministic per machine and path: CI's /check/work/main hit it
# in kernels.rnn.default and two module tests on every run, this machine's
# checkout never did. Without the interception no such blocks are recorded;
# leaks are still found, only pointers held solely in a dlopen'd library's
# thread-local storage are no longer roots (none of ours are).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
step "build (ASan+UBSan)" configure_and_build "$asan" -DKFUSE_SANITIZE=ON
step "tests (ASan+UBSan)" run_ctest "$asan"
unset ASAN_OPTIONS UBSAN_OPTIONS

step "fuzz (${FUZZ_SECONDS}s per target)" bash scripts/fuzz.sh "$FUZZ_SECONDS"

echo
echo "==== test.sh: summary ($((SECONDS - t_start)) s in all)"
status=0
for i in "${!names[@]}"; do
  printf '  %-28s %-7s %5d s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  [[ ${results[$i]} == ok ]] || status=1
done
if [[ $status -eq 0 ]]; then
  echo "test.sh: all passed"
else
  echo "test.sh: FAILED (see the output of the failed steps above)"
fi
exit $status
