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

# LeakSanitizer's stop-the-world tracer sometimes dies itself at process exit
# ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal
# error"): a fault of the sanitizer runtime that comes and goes between runs
# of the same binary (google/sanitizers#1353; seen here once, on CI, on the
# two longest NVRTC tests, and not in 12 local runs of them). It is not a
# finding, so a test that failed with that message and no sanitizer report
# runs again, up to twice. Any other failure stands, and a test whose own
# failure was hidden by the crash fails again on the rerun.
lsan_tracer_crash='LeakSanitizer has encountered a fatal error'
sanitizer_report='ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:'
test_output() { # LOG NAME: the output ctest recorded for test NAME
  awk -v name="$2" '
    $0 ~ /^[0-9]+\/[0-9]+ Test: / && substr($0, index($0, "Test: ") + 6) == name { on = 1; next }
    on && index($0, "\"" name "\" end time:") == 1 { on = 0 }
    on { print }' "$1"
}
run_ctest_sanitized() { # DIR
  local dir=$1
  run_ctest "$dir" && return 0
  local tmp=$dir/Testing/Temporary
  [[ -f $tmp/LastTestsFailed.log && -f $tmp/LastTest.log ]] || return 1
  local retry=() name out
  while IFS=: read -r _ name; do
    out=$(test_output "$tmp/LastTest.log" "$name")
    if grep -q "$lsan_tracer_crash" <<<"$out" && ! grep -Eq "$sanitizer_report" <<<"$out"; then
      retry+=("$name")
    else
      echo "test.sh: $name failed on its own (not LeakSanitizer's tracer); not rerun" >&2
      return 1
    fi
  done <"$tmp/LastTestsFailed.log"
  ((${#retry[@]})) || return 1
  local re attempt
  re="^($(printf '%s\n' "${retry[@]}" | sed 's/[.[\]*^$+?(){}|]/\\&/g' | paste -sd '|'))\$"
  for attempt in 1 2; do
    echo "test.sh: LeakSanitizer's tracer crashed in ${#retry[@]} test(s): ${retry[*]}; rerun $attempt of 2" >&2
    ctest --test-dir "$dir" --output-on-failure -R "$re" && return 0
  done
  return 1
}

step "build" configure_and_build "$build"
step "tests" run_ctest "$build"

# LeakSanitizer is part of ASan on x86-64 Linux; keep it on and make every
# finding fatal, so a leak or UB fails its test instead of scrolling past.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
step "build (ASan+UBSan)" configure_and_build "$asan" -DKFUSE_SANITIZE=ON
step "tests (ASan+UBSan)" run_ctest_sanitized "$asan"
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
