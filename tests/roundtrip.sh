#!/usr/bin/env bash
# tests/roundtrip.sh — the textual IR of a model round-trips.
#
#   roundtrip.sh KFUSE MODEL WORKDIR [MLIR_OPT]
#
# Prints MODEL's IR (a.mlir), parses and prints that again (b.mlir): the two
# must be byte-identical. The same after the default pipeline (c.mlir ->
# d.mlir). With MLIR_OPT, upstream mlir-opt must also accept the printed text
# as generic-form MLIR, so the form is MLIR and not just what our parser
# happens to read.
set -euo pipefail
kfuse=$1 model=$2 dir=$3 mlir_opt=${4:-}
mkdir -p "$dir"
"$kfuse" opt "$model" -o "$dir/a.mlir"
"$kfuse" opt "$dir/a.mlir" -o "$dir/b.mlir"
if ! cmp -s "$dir/a.mlir" "$dir/b.mlir"; then
  echo "roundtrip: printing the parsed IR of $model changed it:" >&2
  diff -u "$dir/a.mlir" "$dir/b.mlir" | head -40 >&2
  exit 1
fi
"$kfuse" opt -p default "$model" -o "$dir/c.mlir"
"$kfuse" opt "$dir/c.mlir" -o "$dir/d.mlir"
if ! cmp -s "$dir/c.mlir" "$dir/d.mlir"; then
  echo "roundtrip: after the default pipeline, printing the parsed IR of $model changed it:" >&2
  diff -u "$dir/c.mlir" "$dir/d.mlir" | head -40 >&2
  exit 1
fi
if [[ -n "$mlir_opt" && -x "$mlir_opt" ]]; then
  "$mlir_opt" --allow-unregistered-dialect --mlir-print-op-generic "$dir/a.mlir" -o "$dir/a.upstream.mlir"
fi
echo "roundtrip: $model: ok ($(wc -l <"$dir/a.mlir") lines)"
