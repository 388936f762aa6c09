#!/usr/bin/env bash
# tests/artifact_check.sh KFUSE FIXTURES_DIR OUTDIR
# Every output of `kfuse compile` is replaced by renaming, and a failed
# compile leaves the previous outputs as they were (docs/DEPLOY.md):
#   - a good build of a shared module (.so, .so.weights, report) and of an
#     object module (.o, .h, .o.weights, report);
#   - rebuilds that fail — a malformed model, a report in a missing
#     directory, a report path that is a directory, an output path, a
#     weights path or a header path that is a directory, a directory that
#     cannot be written (when not root) — must each exit 1 with a
#     "kfuse: error:" line naming the user's path (never a temporary name),
#     leave every previous file byte for byte, and no temporary file.
set -uo pipefail
k=$1 fixtures=$2 dir=$3
model=$fixtures/mlp.core.pt2
rm -rf "$dir"
mkdir -p "$dir"
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

sums() { # inode:checksum of the named files, in order (missing: "-"); a
  # rebuild is byte-identical, so only the inode shows a replaced file
  for f in "$@"; do
    if [ -f "$f" ]; then echo "$(stat -c %i "$f"):$(sha256sum < "$f" | cut -c1-12)"; else echo -; fi
  done | tr '\n' ' '
}

# expect_fail WHAT EXPECTED-TEXT FILES... -- COMPILE-ARGS...
expect_fail() {
  local what=$1 want=$2
  shift 2
  local files=()
  while [ "$1" != -- ]; do files+=("$1"); shift; done
  shift
  local before after err rc
  before=$(sums "${files[@]}")
  err=$("$k" compile "$@" -q 2>&1 >/dev/null)
  rc=$?
  after=$(sums "${files[@]}")
  local left
  left=$(find "$dir" -name '*kfuse-tmp*' | head -3)
  if [ $rc -ne 1 ]; then
    bad "$what: exit status $rc, expected 1 ($err)"
  elif [ "$before" != "$after" ]; then
    bad "$what: the previous files changed ($before -> $after)"
  elif [ -n "$left" ]; then
    bad "$what: temporary files left behind: $left"
  elif ! grep -q "^kfuse: error: .*$want" <<<"$err"; then
    bad "$what: expected an error containing '$want', got: $err"
  elif grep -q kfuse-tmp <<<"$err"; then
    bad "$what: the error names a temporary file: $err"
  else
    ok "$what: $(head -1 <<<"$err")"
  fi
}

broken=$dir/broken.pt2
printf 'PK\003\004 not really a zip archive' > "$broken"

# ---- a shared module ----------------------------------------------------------
so=$dir/m.so
if "$k" compile "$model" -o "$so" --report "$dir/r.json" -q; then
  ok "build $so"
else
  bad "build $so"
fi
files=("$so" "$so.weights" "$dir/r.json")
expect_fail "a malformed model" "broken.pt2" "${files[@]}" -- "$broken" -o "$so" --report "$dir/r.json"
expect_fail "a report in a missing directory" "$dir/nodir/r.json: cannot" "${files[@]}" \
  -- "$model" -o "$so" --report "$dir/nodir/r.json"
mkdir -p "$dir/rdir"
expect_fail "a report path that is a directory" "$dir/rdir: is a directory" "${files[@]}" \
  -- "$model" -o "$so" --report "$dir/rdir"
mkdir -p "$dir/d.so"
expect_fail "an output path that is a directory" "$dir/d.so: is a directory" "${files[@]}" "$dir/d.so.weights" \
  -- "$model" -o "$dir/d.so"
mkdir -p "$dir/w.so.weights"
expect_fail "a weights path that is a directory" "$dir/w.so.weights" "${files[@]}" "$dir/w.so" \
  -- "$model" -o "$dir/w.so"
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$dir/ro"
  "$k" compile "$model" -o "$dir/ro/m.so" -q || bad "build ro/m.so"
  chmod 555 "$dir/ro"
  expect_fail "a directory that cannot be written" "$dir/ro/m.so.weights: cannot open" \
    "$dir/ro/m.so" "$dir/ro/m.so.weights" -- "$model" -o "$dir/ro/m.so"
  chmod 755 "$dir/ro"
else
  echo "skip a directory that cannot be written: running as root"
fi

# ---- an object module -----------------------------------------------------------
o=$dir/m.o
if "$k" compile "$model" -o "$o" --emit obj --report "$dir/ro.json" -q; then
  ok "build $o"
else
  bad "build $o"
fi
files=("$o" "$dir/m.h" "$o.weights" "$dir/ro.json")
expect_fail "a malformed model (object)" "broken.pt2" "${files[@]}" -- "$broken" -o "$o" --emit obj
expect_fail "a report path that is a directory (object)" "$dir/rdir: is a directory" "${files[@]}" \
  -- "$model" -o "$o" --emit obj --report "$dir/rdir"
mkdir -p "$dir/h.h"
expect_fail "a header path that is a directory" "$dir/h.h: is a directory" "${files[@]}" "$dir/h.o" \
  -- "$model" -o "$dir/h.o" --emit obj

# a good rebuild replaces every file (new inodes: renamed, not rewritten)
ino() { stat -c %i "$1"; }
before="$(ino "$o") $(ino "$dir/m.h") $(ino "$o.weights")"
"$k" compile "$model" -o "$o" --emit obj -q || bad "rebuild $o"
after="$(ino "$o") $(ino "$dir/m.h") $(ino "$o.weights")"
set -- $before
b1=$1 b2=$2 b3=$3
set -- $after
if [ "$b1" != "$1" ] && [ "$b2" != "$2" ] && [ "$b3" != "$3" ]; then
  ok "a rebuild renames a new object, header and weights file into place"
else
  bad "a rebuild rewrote a file in place (inodes $before -> $after)"
fi

if [ $fails -ne 0 ]; then
  echo "artifact_check: $fails failure(s)"
  exit 1
fi
echo "artifact_check: all passed"
