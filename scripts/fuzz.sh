#!/usr/bin/env bash
# scripts/fuzz.sh — build the libFuzzer targets with clang-14 (ASan + UBSan +
# LeakSanitizer) and run each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]        default 60 s per target (or $FUZZ_SECONDS)
#
# Targets (tests/fuzz): fuzz_pt2 (raw .pt2 bytes: zip, records, JSON,
# weights), fuzz_pt2_json (the exported-program JSON inside a well-formed
# archive) and fuzz_cache_wire (the kernel cache's wire form, what an HTTP
# remote hands back). Seeds: tests/fixtures/*.pt2, the broken archives of
# tests/bad, past findings (tests/fuzz/regressions), the fixtures'
# models/*.json, and one entry's fields written below.
# Exits non-zero on any finding; the reproducer is left in
# build-fuzz/artifacts/ (rerun it with `build-fuzz/tests/fuzz_pt2 FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-${FUZZ_SECONDS:-60}}
bdir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
cc=${FUZZ_CC:-clang-14}
cxx=${FUZZ_CXX:-clang++-14}

command -v "$cc" >/dev/null || { echo "fuzz.sh: $cc not found (Debian: clang-14)" >&2; exit 1; }

mkdir -p "$bdir"
cmake -S "$root" -B "$bdir" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" \
  -DKFUSE_SANITIZE=ON -DKFUSE_FUZZ=ON >"$bdir/configure.log" 2>&1 \
  || { cat "$bdir/configure.log" >&2; exit 1; }
ninja -C "$bdir" fuzz_pt2 fuzz_pt2_json fuzz_cache_wire

# seed corpora (read-only inputs) and the working corpora libFuzzer grows
seeds=$bdir/seeds
rm -rf "$seeds"
mkdir -p "$seeds/pt2" "$seeds/json" "$seeds/wire" "$bdir/corpus/pt2" "$bdir/corpus/json" "$bdir/corpus/wire" \
  "$bdir/artifacts"
cp tests/fixtures/*.pt2 examples/*.pt2 "$seeds/pt2/"
python3 tests/bad/make_bad.py generate --fixtures tests/fixtures --out "$seeds/bad" >/dev/null
cp "$seeds"/bad/*.pt2 "$seeds/pt2/"
# inputs that once found a bug: libFuzzer runs every seed first, so each is
# a deterministic regression test
cp tests/fuzz/regressions/*.pt2 "$seeds/pt2/"
python3 - "$seeds/json" tests/fixtures/*.pt2 <<'EOF'
import os, sys, zipfile
out = sys.argv[1]
for p in sys.argv[2:]:
    with zipfile.ZipFile(p) as z:
        for n in z.namelist():
            if "/models/" in n and n.endswith(".json"):
                open(os.path.join(out, os.path.basename(p) + ".json"), "wb").write(z.read(n))
EOF

# the fields of one cache entry (fuzz_cache_wire adds the version line and
# the checksum itself): each a tag, an 8-byte little-endian length, the bytes
python3 - "$seeds/wire" <<'EOF'
import os, struct, sys
fields = [("K", "ab" * 32), ("H", "cd" * 32), ("G", "kfuse-group-v1\nkind elementwise\n"), ("P", "default"),
          ("A", "sm_90a"), ("T", "cuda-13.0"), ("D", ""), ("C", "1"), ("J", '{"synthetic": true}'),
          ("S", "extern \"C\" __global__ void k() {}"), ("B", "\0\x7fELF\0\1"), ("R", '{"reward": 2}'),
          ("E", "{}"), ("W", "2"), ("M", "0.125"), ("U", "synthetic-gpu"), ("O", "synthetic:fuzz"), ("N", ""),
          ("c", "1700000000000")]
body = b"".join(t.encode() + struct.pack("<Q", len(v.encode("latin-1"))) + v.encode("latin-1") for t, v in fields)
open(os.path.join(sys.argv[1], "entry-fields.bin"), "wb").write(body)
EOF

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export KFUSE_FUZZ_TEMPLATE=$root/tests/fixtures/mlp.core.pt2
status=0
run() {
  local target=$1 corpus=$2 seed=$3
  echo "fuzz.sh: $target for ${seconds}s (seeds: $(ls "$seed" | wc -l))"
  if ! "$bdir/tests/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -max_len=1048576 -print_final_stats=1 -artifact_prefix="$bdir/artifacts/$target-" \
      "$corpus" "$seed" >"$bdir/$target.log" 2>&1; then
    echo "fuzz.sh: $target FOUND A PROBLEM; log: $bdir/$target.log" >&2
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$bdir/$target.log" | head -10 >&2
    grep -m8 -E "^ +#[0-9]+ .* in [A-Za-z_][A-Za-z0-9_]* [^ ]*\.c:[0-9]+" "$bdir/$target.log" >&2 || true
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$bdir/$target.log" | tr '\n' ' '
    echo
  fi
}
run fuzz_pt2 "$bdir/corpus/pt2" "$seeds/pt2"
run fuzz_pt2_json "$bdir/corpus/json" "$seeds/json"
run fuzz_cache_wire "$bdir/corpus/wire" "$seeds/wire"
if [[ $status -eq 0 ]]; then echo "fuzz.sh: no findings"; fi
exit $status
