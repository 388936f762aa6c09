#!/usr/bin/env python3
"""tests/kb_runner_check.py — the KernelBench runner's scheduling and
bookkeeping without a GPU or torch (scripts/kernelbench.py,
scripts/kb_gpus.sh):

  - --shard-costs splits by an earlier run's seconds: every problem in
    exactly one shard, the same split from every shard, loads balanced;
  - the warm phase's parts: the "gpu" part (run before the timing) does the
    torch.compile warm-ups and no bare export, the "cpu" part (beside the
    timing) only exports and never warms torch.compile, which runs the
    model on the GPU (a warm-up beside a timed problem spoiled the
    2026-11-28 run);
  - the summary names the problems timed beside another GPU process and
    says when that was not watched; GpuWatch counts this process and its
    children as one;
  - kb_gpus.sh refuses what it sets per shard and a bad --gpus.

Usage: kb_runner_check.py REPO_ROOT. Exit 0 when every check holds.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import types

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def main():
    root = sys.argv[1]
    sys.path.insert(0, os.path.join(root, "scripts"))
    import kernelbench as kb

    # 1. --shard-costs
    probs = [{"id": f"L{lv}/{n}", "level": lv, "num": n} for lv in (1, 2, 3) for n in range(1, 21)]
    costs = {p["id"]: float((i * 37) % 53 + 1) for i, p in enumerate(probs)}
    costs["L3/20"] = 400.0  # one long problem
    del costs["L2/7"]  # unknown: counts as the median
    for n in (1, 2, 4, 7):
        part = kb.lpt_shards(probs, costs, n)
        check(part == kb.lpt_shards(list(probs), dict(costs), n), f"lpt_shards({n}) is deterministic")
        check(all(0 <= s < n for s in part) and len(part) == len(probs), f"lpt_shards({n}) covers every problem")
        med = sorted(costs.values())[len(costs) // 2]
        loads = [sum(costs.get(p["id"], med) for p, s in zip(probs, part) if s == k) for k in range(n)]
        longest = max(costs.get(p["id"], med) for p in probs)
        # greedy longest-first: no shard exceeds the mean by more than the longest job
        check(max(loads) <= sum(loads) / n + longest, f"lpt_shards({n}) balances: {loads}")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "old.jsonl")
        with open(f, "w") as fh:
            for pid, c in costs.items():
                fh.write(json.dumps({"type": "problem", "id": pid, "wall_s": c}) + "\n")
            fh.write(json.dumps({"type": "run", "run_id": "x"}) + "\n")
        check(kb.shard_costs(f) == costs, "shard_costs reads wall_s of problem records")
        seen = []
        for k in (1, 2, 3):
            a = types.SimpleNamespace(level="", only="", skip="", shard=f"{k}/3", shard_costs=f)
            seen += [p["id"] for p in kb.select(probs, a)]
        check(sorted(seen) == sorted(p["id"] for p in probs), "--shard K/3 with --shard-costs: each problem once")
        try:
            kb.shard_costs(os.path.join(d, "missing.jsonl"))
            check(False, "shard_costs refuses a missing file")
        except SystemExit:
            pass

    # 2. the warm phase's parts
    with tempfile.TemporaryDirectory() as d:
        calls = []
        lock = threading.Lock()

        class R:
            out = work = d
            modes = ["default"]
            run_id = "t"

            def left(self):
                return None

            def job(self, kind, p, **kw):
                return dict(p=p, **kw)

            def run_job(self, j, t):
                with lock:
                    calls.append(j)
                if j["warm_export"] or j["warm_kfuse"]:
                    os.makedirs(os.path.join(d, kb.file_id(j["p"]["id"])), exist_ok=True)
                    with open(os.path.join(d, kb.file_id(j["p"]["id"]), "kfuse.warm.json"), "w") as fh:
                        fh.write("{}")
                return {"final": True}, 0, False, ""

        args = types.SimpleNamespace(warm_kfuse=False, warm_export=True, warm_jobs=0, timeout=10,
                                     warm_export_max_mb=1024)
        few = probs[:5]
        ev = {p["id"]: threading.Event() for p in few}
        kb.warm_phase(R(), args, few, None, 3, part="gpu")
        check(len(calls) == 5 and all(c["warm_modes"] == ["default"] and not c["warm_export"] and not c["warm_kfuse"]
                                      for c in calls), "gpu part: torch.compile warm-ups, no bare export")
        calls.clear()
        kb.warm_phase(R(), args, few, None, 3, ev, part="cpu")
        check(len(calls) == 5 and all(not c["warm_modes"] and c["warm_export"] and not c["warm_kfuse"]
                                      for c in calls), "cpu part: exports only, nothing on the GPU")
        check(all(e.is_set() for e in ev.values()), "cpu part: every problem's event set")
        calls.clear()
        kb.warm_phase(R(), args, few, None, 3, part="gpu")
        kb.warm_phase(R(), args, few, None, 3, part="cpu")
        check(not calls, "warm.jsonl and kfuse.warm.json: nothing warmed twice")
        with open(os.path.join(d, "warm.jsonl")) as fh:
            parts = [json.loads(line).get("part") for line in fh]
        check(parts.count("gpu") == 5 and parts.count("cpu") == 5, "warm.jsonl records each part")
    with tempfile.TemporaryDirectory() as d:
        calls = []
        R.out = R.work = d
        args.warm_kfuse = True
        kb.warm_phase(R(), args, probs[:3], None, 2, part="gpu")
        check(len(calls) == 3 and all(c["warm_kfuse"] and c["warm_export"] for c in calls),
              "--warm-kfuse: export and judged compile in the gpu part")
        calls.clear()
        kb.warm_phase(R(), args, probs[:3], None, 2, part="cpu")
        check(not calls, "--warm-kfuse: nothing left for the cpu part")

    # 3. GPU sharing in the summary, and GpuWatch
    def rec(pid, n):
        r = {"type": "problem", "id": pid, "level": 1, "num": int(pid.split("/")[1]), "name": "x",
             "status": "ok", "eager_ms": 1.0, "kfuse_ms": 1.0, "compile_ms": 1.0, "speedup_eager": 1.0,
             "speedup_compile": 1.0}
        if n is not None:
            r["gpu_processes"] = n
        return r
    s = kb.summarize([rec("L1/1", 1), rec("L1/2", 3), rec("L1/3", None)])
    check(s["shared_gpu"] == ["L1/2"] and s["gpu_watched"] == 2, f"summary: shared {s['shared_gpu']}")
    check("Timed beside other processes" in kb.summary_md(s), "summary.md names the shared problems")
    s = kb.summarize([rec("L1/1", None)])
    check("not watched" in kb.summary_md(s), "summary.md says when sharing was not watched")
    me = os.getpid()
    w = kb.GpuWatch.__new__(kb.GpuWatch)
    w.dev, w.seen = 0, []
    pids = [me]
    w.nvml = types.SimpleNamespace(nvmlDeviceGetComputeRunningProcesses=lambda dev: [
        types.SimpleNamespace(pid=p) for p in pids])
    w.sample()
    pids.append(2 ** 22 + 7)  # another process, not a child
    w.sample()
    check(w.seen == [1, 2] and w.result() == 2, f"GpuWatch counts another process: {w.seen}")
    w.seen = []
    pids.clear()
    w.sample()
    check(w.result() is None, "GpuWatch: no process listed (not even this one) is not known")

    # 4. kb_gpus.sh's refusals
    sh = os.path.join(root, "scripts", "kb_gpus.sh")
    for argv, what in ((["--out", "x"], "no --gpus"), (["--gpus", "0", "--out", "x"], "--gpus 0"),
                       (["--gpus", "2", "--out", "x", "--work", "w"], "--work given"),
                       (["--out", "x", "--gpus"], "--gpus without a value"),
                       (["--gpus", "2", "--out"], "--out without a value")):
        p = subprocess.run(["bash", sh] + argv, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and p.stderr.strip(), f"kb_gpus.sh refuses {what}")

    print(f"kb_runner_check: {'FAILED ' + str(len(failures)) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
