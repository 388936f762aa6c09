#!/usr/bin/env bash
# scripts/kb_fetch.sh — materialises KernelBench's problems (levels 1-3) into
# a folder that scripts/kernelbench.py reads with --kb:
#
#   bash scripts/kb_fetch.sh SRC DEST [REV]
#
# SRC is a KernelBench checkout (ScalingIntelligence/KernelBench, MIT) or a
# bare git mirror of it; REV a commit or branch (default HEAD). From a git
# repository the files are taken from REV with `git archive`, so a dirty work
# tree does not leak in; a plain folder holding KernelBench/level1 (no git)
# is copied as it is. DEST gets level1/ level2/ level3/ (N_Name.py files),
# KernelBench's LICENSE, and SOURCE (commit and file counts), which the runner
# records in its results. DEST's level folders are replaced; nothing else in
# DEST is touched. The problems are not ours to commit: keep DEST outside the
# repository, or in an ignored folder such as .kb/ (carried to the GPU
# machine with the device tool's carry).
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: bash scripts/kb_fetch.sh SRC DEST [REV]" >&2
  exit 2
fi
src=$1
dest=$2
rev=${3:-HEAD}
levels="level1 level2 level3"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git -C "$src" rev-parse --verify "$rev^{commit}") || {
    echo "kb_fetch: $rev is not a commit of $src" >&2
    exit 1
  }
  paths=""
  for l in $levels; do
    if [ -z "$(git -C "$src" ls-tree "$commit" "KernelBench/$l")" ]; then
      echo "kb_fetch: $src has no KernelBench/$l at $commit: not a KernelBench repository?" >&2
      exit 1
    fi
    paths="$paths KernelBench/$l"
  done
  lic=""
  [ -n "$(git -C "$src" ls-tree "$commit" LICENSE)" ] && lic=LICENSE
  # shellcheck disable=SC2086 # the paths are known names without spaces
  git -C "$src" archive "$commit" $paths $lic | tar -x -C "$tmp"
  origin="commit $commit ($(git -C "$src" log -1 --format=%cs "$commit"))"
elif [ -d "$src/KernelBench/level1" ]; then
  mkdir -p "$tmp/KernelBench"
  for l in $levels; do
    [ -d "$src/KernelBench/$l" ] || { echo "kb_fetch: $src/KernelBench/$l is missing" >&2; exit 1; }
    cp -R "$src/KernelBench/$l" "$tmp/KernelBench/$l"
  done
  [ -f "$src/LICENSE" ] && cp "$src/LICENSE" "$tmp/LICENSE"
  origin="a plain folder, no git commit known"
else
  echo "kb_fetch: $src is neither a git repository nor a folder with KernelBench/level1" >&2
  exit 1
fi

mkdir -p "$dest"
counts=""
for l in $levels; do
  n=$(find "$tmp/KernelBench/$l" -maxdepth 1 -name '[0-9]*_*.py' | wc -l)
  if [ "$n" -eq 0 ]; then
    echo "kb_fetch: no problem files in KernelBench/$l" >&2
    exit 1
  fi
  rm -rf "${dest:?}/$l"
  mkdir -p "$dest/$l"
  find "$tmp/KernelBench/$l" -maxdepth 1 -name '[0-9]*_*.py' -exec cp {} "$dest/$l/" \;
  counts="$counts $l=$n"
done
[ -f "$tmp/LICENSE" ] && cp "$tmp/LICENSE" "$dest/LICENSE"
echo "KernelBench (ScalingIntelligence/KernelBench, MIT), $origin;$counts" > "$dest/SOURCE"
echo "kb_fetch: $(cat "$dest/SOURCE")"
echo "kb_fetch: wrote $dest/{level1,level2,level3}"
