#!/usr/bin/env bash
# scripts/gpu_judge_check.sh — the judge on the GPU machine (issue 10), from
# the repository root with the portable kfuse (scripts/portable.sh):
#   1. the anti-hacking suite, tests/hacks/run.py: every cheating unit
#      rejected with its reason, the honest ones accepted with the right
#      reward; rejected/accepted counts;
#   2. every fixture's tasks (kfuse task --all over tests/fixtures/*.pt2)
#      with their built-in unit judged as the candidate: how many are
#      correct, how many are not judged and why (library steps, the CPU
#      reference's size limit), and the judge's wall time per unit (median,
#      slowest);
#   3. a task too large for the CPU reference (tests/hacks/large_model.mlir)
#      judged against the GPU reference.
# FIXTURES (a glob) narrows step 2. Writes logs under $OUT when set. Exit status 0 when the suite passes and
# no built-in unit is judged incorrect.
set -u
. scripts/gpu_env.sh
OUT=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
KFUSE=$(kfuse_bin "$WORK") || { echo "gpu_judge_check: no portable kfuse (run scripts/portable.sh)"; exit 1; }
rc=0

echo "== the anti-hacking suite"
python3 tests/hacks/run.py "$KFUSE" 2>&1 | tee "$OUT/hacks.log" | grep -vE '^       '
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1

echo "== every fixture's built-in units through the judge"
python3 - "$KFUSE" "$WORK" "$OUT" <<'PY' || rc=1
import collections, concurrent.futures, glob, json, os, subprocess, sys
kfuse, work, out = sys.argv[1:4]
counts = collections.Counter()
why = collections.Counter()
secs = []
log = open(os.path.join(out, "fixtures.jsonl"), "w")
def judge(td):
    p = subprocess.run([kfuse, "judge", td, os.path.join(td, "builtin"), "--no-builtin", "--min-time", "20"],
                       capture_output=True, text=True, timeout=300)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"judged": False, "why": "no verdict: " + p.stderr[:300]}

jobs = []
for m in sorted(glob.glob(os.environ.get("FIXTURES", "tests/fixtures/*.core.pt2"))):
    name = os.path.basename(m)[:-len(".core.pt2")]
    d = os.path.join(work, name)
    r = subprocess.run([kfuse, "task", m, "--all", "-o", d, "-q"], capture_output=True, text=True)
    if r.returncode:
        counts["task failed"] += 1
        print(f"FAIL kfuse task {m}: {r.stderr.strip()[:300]}")
        continue
    for t in json.load(open(os.path.join(d, "tasks.json")))["tasks"]:
        td = t["dir"] if os.path.isabs(t["dir"]) else os.path.join(d, t["dir"])
        if not os.path.isdir(os.path.join(td, "builtin")):
            counts["no built-in unit"] += 1
        else:
            jobs.append((name, td))
# several judges at once: this checks correctness; their times overlap on
# the one GPU, so the per-unit wall times quoted are the suite's, above
with concurrent.futures.ThreadPoolExecutor(int(os.environ.get("JOBS", "6"))) as ex:
    verdicts = list(ex.map(lambda j: judge(j[1]), jobs))
for (name, td), v in zip(jobs, verdicts):
    v["fixture"] = name
    log.write(json.dumps(v) + "\n")
    if not v.get("judged"):
        counts["not judged"] += 1
        w = v.get("why", "")
        why["library steps" if "library step" in w else "reference" if "reference" in w else w[:120]] += 1
        continue
    if "seconds" in v:
        secs.append(v["seconds"]["total"])
    if v.get("correct"):
        counts["correct"] += 1
    else:
        counts["incorrect"] += 1
        print(f"FAIL {name} group {v.get('group')}: {' / '.join(v.get('reasons', []))[:500]}")
print("built-in units:", dict(counts))
print("not judged:", dict(why))
if secs:
    secs.sort()
    print(f"judge wall time per unit, {os.environ.get('JOBS', '6')} at once: median {secs[len(secs) // 2]:.2f} s, "
          f"slowest {secs[-1]:.2f} s over {len(secs)}")
sys.exit(1 if counts["incorrect"] or counts["task failed"] else 0)
PY
echo "== a task past the CPU reference's size: the GPU reference (the built-in fp64 unit)"
rm -rf "$WORK/large"
"$KFUSE" task tests/hacks/large_model.mlir --group 0 -o "$WORK/large" -q &&
  "$KFUSE" judge "$WORK/large" "$WORK/large/builtin" --no-builtin > "$OUT/large.json"
python3 - "$OUT/large.json" <<'PY' || rc=1
import json, sys
v = json.load(open(sys.argv[1]))
ok = v.get("judged") and v.get("correct") and v.get("reference") == "built-in fp64 unit on the GPU"
print(("ok  " if ok else "FAIL"), "large task, built-in unit:", v.get("reference"), "reward", v.get("reward"),
      "ms", v.get("candidate", {}).get("ms"), "seconds", v.get("seconds"), " / ".join(v.get("reasons", []))[:400])
sys.exit(0 if ok else 1)
PY
echo "== result: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
