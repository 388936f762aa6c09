#!/usr/bin/env bash
# scripts/kb_gpus.sh: one KernelBench run spread over the GPUs of one host.
#
#   bash scripts/kb_gpus.sh --gpus N --out DIR [kernelbench.py options...]
#   bash scripts/kb_gpus.sh --runner zoo --gpus N --out DIR [zoo.py options...]
#
# --runner zoo shards the model zoo runner (scripts/zoo.py) the same way
# (its units are models in a dtype); the default is kernelbench.
#
# Starts N copies of scripts/kernelbench.py, copy K (0-based) on GPU K only
# (CUDA_VISIBLE_DEVICES=K) with --shard K+1/N, its own --out DIR/shard-K,
# --work DIR/shard-K/work and --inductor-cache DIR/shard-K/inductor, so that
# each GPU times its own problems one at a time, as a one-GPU run does
# (eager, torch.compile and kfuse side by side in the same process). When
# all have stopped, the shards' results.jsonl are concatenated into
# DIR/results.jsonl and summarised (DIR/summary.md, DIR/summary.json).
# Run the same command again to resume: each shard resumes its own part.
#
# Options that name paths per run (--out, --work, --inductor-cache, --shard)
# are set here; pass the rest (--kb, --kfuse, --level, --deadline, ...).
# --shard-costs OLD.jsonl balances the shards by OLD's seconds a problem.
# Each runner warms torch.compile on its own GPU before it times anything
# (--warm-jobs N, or --warm-background N, which also exports beside the
# timing on the CPU only), so no GPU runs a warm-up beside a timed problem.
set -u
gpus=""
out=""
runner=kernelbench
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --gpus|--out|--runner)
            if [ $# -lt 2 ]; then echo "kb_gpus.sh: $1 needs a value" >&2; exit 2; fi
            case "$1" in --gpus) gpus="$2" ;; --out) out="$2" ;; *) runner="$2" ;; esac
            shift 2 ;;
        --work|--inductor-cache|--shard)
            echo "kb_gpus.sh: $1 is set per shard; leave it out" >&2; exit 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
if ! [[ "$gpus" =~ ^[1-9][0-9]*$ ]] || [ -z "$out" ]; then
    echo "usage: bash scripts/kb_gpus.sh [--runner kernelbench|zoo] --gpus N --out DIR [runner options...]" >&2
    exit 2
fi
case "$runner" in
    kernelbench|zoo) ;;
    *) echo "kb_gpus.sh: --runner is kernelbench or zoo (got $runner)" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"
have="$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)"
if [ "$have" -lt "$gpus" ]; then
    echo "kb_gpus.sh: --gpus $gpus but torch sees $have GPU(s)" >&2
    exit 2
fi
mkdir -p "$out" || exit 1
# GPU K of this run is the K-th of CUDA_VISIBLE_DEVICES when it is set
IFS=, read -r -a visible <<<"${CUDA_VISIBLE_DEVICES:-}"
pids=()
for ((k = 0; k < gpus; k++)); do
    d="$out/shard-$k"
    mkdir -p "$d" || exit 1
    dev=$k
    [ ${#visible[@]} -gt $k ] && dev="${visible[$k]}"
    CUDA_VISIBLE_DEVICES=$dev python3 "$here/$runner.py" "${args[@]}" \
        --shard "$((k + 1))/$gpus" --out "$d" --work "$d/work" --inductor-cache "$d/inductor" \
        >"$d/runner.log" 2>&1 &
    pids+=($!)
    echo "kb_gpus.sh: shard $((k + 1))/$gpus on GPU $dev, log $d/runner.log"
done
rc=0
for ((k = 0; k < gpus; k++)); do
    if ! wait "${pids[$k]}"; then
        echo "kb_gpus.sh: shard $((k + 1))/$gpus stopped with an error (see $out/shard-$k/runner.log)" >&2
        rc=1
    fi
done
tmp="$out/results.jsonl.tmp"
: >"$tmp" || exit 1
for ((k = 0; k < gpus; k++)); do
    f="$out/shard-$k/results.jsonl"
    [ -f "$f" ] && cat "$f" >>"$tmp"
done
mv "$tmp" "$out/results.jsonl" || exit 1
python3 "$here/$runner.py" --summarize --out "$out" || rc=1
exit $rc
