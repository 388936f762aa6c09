#!/usr/bin/env python3
"""scripts/kernelbench.py — the KernelBench runner (issue 9): every problem of
KernelBench levels 1-3 exported, compiled with kfuse, checked against PyTorch
eager and timed side by side with eager and torch.compile, one fresh process
per problem.

    python3 scripts/kernelbench.py --kb .kb --kfuse dist/kfuse-portable/bin/kfuse --out kb-out
    python3 scripts/kernelbench.py --kb .kb --kfuse build/kfuse --out kb-cpu --cpu-check --jobs 2
    python3 scripts/kernelbench.py --out kb-out --summarize        # no GPU, no torch

--kb DIR is a folder with level1/ level2/ level3/ of KernelBench problem files
(N_Name.py, each defining Model, get_inputs() and get_init_inputs());
scripts/kb_fetch.sh makes one from a KernelBench checkout or git mirror.
Problems are named L<level>/<number> (L1/19 is level1/19_ReLU.py).

Selection: --level 1,2; --only L1/19,L2/43; --skip L3/38; --shard K/N (the
K-th of N deterministic round-robin parts of the selection, K from 1; with
--shard-costs OLD.jsonl the parts are balanced by the seconds each problem
took in OLD instead, longest first). --list prints
the selection and stops. Rerunning with the same --out skips problems already
in DIR/results.jsonl (--redo: run them again; --redo-status timeout,crash: run
again those that ended so); the summary takes each problem's last record.

Per problem (GPU mode, the default), in a fresh process with a wall-clock
limit (--timeout), so a crash, an out-of-memory kill or a hang fails that
problem alone and is recorded with the stage it reached. The processes are
forked from a server that has imported torch, dynamo, inductor and export
once (about 12 s a process on the GPU machine otherwise; --no-fork-server
starts each as a fresh Python):
  1. import the file, seed, build Model(*get_init_inputs()) in eval mode on
     the CPU;
  2. export it with kfuse.export (core ATen, SDPA whole) on shape-only
     (fake) inputs: the export runs no forward pass and needs no input data.
     Non-tensor inputs (L1/5's scalar) are bound into the exported graph as
     constants and the module takes the tensors alone. If the fake inputs
     will not export, a real draw is tried; a model that assigns a plain
     tensor attribute in forward (which torch.export refuses) is exported
     with it registered as a buffer, and the record says so. The exported
     model is dropped and eager builds its own with the same seed (one
     model's weights in memory at a time);
  3. `kfuse compile` it (--kfuse, --compile-args passed through, --report):
     cold wall time recorded; with the GPU present kfuse's judge verifies
     and times its candidates on it (unless --no-judge is among the compile
     args);
  4. move the model to the GPU, draw two FRESH input sets from get_inputs()
     (seeds other than the export's, generated on the GPU), run eager on
     each (twice on the first: an eager that disagrees with itself, such as
     a forward that draws random numbers, is flagged), load the module with
     kfuse.load and compare on both: allclose with atol=rtol=1e-4 for fp32
     (KernelBench's fp32 tolerance), 2e-3 where the compile report mentions
     TF32 or the model has convolutions (eager's own convolutions are TF32 by
     PyTorch's default, as scripts/bench.py and gpu_test.sh allow), 1e-2 for
     fp16/bf16 outputs; NaN must match NaN and infinities exactly; integer
     outputs exactly. A draw that fails against eager is judged against the
     model run in float64 on the GPU: it passes when each element is within
     tolerance of the fp64 result or no further from it than eager's
     (kfuse's algebraic rewrites round differently from eager and can be
     the more accurate), or, failing that, when kfuse is as accurate as
     eager against fp64 (within 10%) by count of elements out of tolerance,
     largest error and error norm (ill-conditioned outputs, where eager
     itself is out of tolerance of fp64: rule "aggregate"); the record marks it
     judged_by_fp64 with both distances. Recorded: max abs error, max rel error
     (|kfuse-eager| / max(|eager|, atol)), relative error in norm, elements
     out of tolerance, and eager's largest magnitude (a check on outputs far
     below atol proves little). Inputs must be left unchanged by kfuse;
  5. time eager, torch.compile (default mode; --max-autotune adds
     mode="max-autotune", --modes lists any; Inductor's run-time autotuning
     is redone here on the idle GPU, not taken from the warm jobs' cache:
     --cached-autotune takes it) and kfuse in the same process
     with CUDA events: 3 warm-up calls, then runs until --budget seconds
     (wall) have passed and at least --min-runs were made, at most
     --max-runs; median, p10, p90 and the number of runs recorded. Before
     each timed call a spin kernel is queued, sized from the measured host
     cost of one call (1.5x + 0.2 ms, at least 0.5 ms), so the call is wholly
     enqueued before the GPU reaches it: the figures are GPU time, host-side
     launch costs (eager's dispatch, torch.compile's guards, kfuse's ctypes
     call) left out for every variant alike; host_ms records that cost;
     gpu_processes the most processes NVML saw on the GPU meanwhile (more
     than this one: the summary names the problem, its times suspect).
     L2 is flushed (a buffer of twice its size zeroed) between the spin and
     the start event, and calls alternate between the two input sets, so
     inputs and weights come from DRAM every time;
  6. the roofline floor: max(bytes / copy bandwidth, fp32 flops / fp32 GEMM
     rate + convolution flops / TF32 GEMM rate), bytes = tensor inputs +
     parameters and buffers + outputs once each, flops from
     torch.utils.flop_counter; fraction of floor = floor / kfuse time. The
     ceilings (1 GiB device copy, 8192^3 GEMM in fp32 and TF32) are measured
     once per run and stored in the run's header record.
torch.backends.cuda.matmul.allow_tf32=False and cudnn.allow_tf32=True are set
explicitly (PyTorch's defaults) in every process. Problems kfuse fails on are
not timed unless --time-failed.

Statuses: ok, eager-fail (the problem itself could not be imported, built or
run), export-fail, compile-fail, load-fail, run-fail (the kfuse module raised
when called), mismatch, timeout, crash (the worker died: signal, OOM kill,
uncaught error). --cpu-check records ok when export and compile succeeded.

Device-time economy:
  --warm-jobs N   before timing, N parallel workers import every pending
                  problem and run its torch.compile variants once, filling
                  Inductor's on-disk caches (FX graph, Triton, autotuning;
                  --inductor-cache DIR puts them in DIR), so the timing phase
                  hits them. --warm-export lets those workers also export
                  (CPU work: LSTM/GRU problems take minutes); the timing
                  phase then compiles serially and cold, as without it.
                  Exports over --warm-export-max-mb (1024) are not kept
                  (levels 1-3 export about 31 GB in all, a third of it in
                  four problems): they are exported again when timed.
                  --warm-kfuse lets them also `kfuse compile` (in parallel, so
                  its GPU judging is timed under contention: add
                  --compile-args=--no-judge for clean timing; the record says
                  compile_in_warm_phase). --warm-only stops after the warm
                  phase (warm.jsonl remembers what is warm; with
                  --warm-export/--warm-kfuse give --work DIR so the exports
                  outlive the run).
  --warm-background N  the warm jobs, N at a time, in two parts: those that
                  run on the GPU (torch.compile's warm-up calls the model;
                  --warm-kfuse judges) before the timing, as --warm-jobs N;
                  the CPU-only exports (--warm-export) beside the timing,
                  each problem timed as soon as its own export has ended
                  (the jobs run in timing order), so the GPU does not idle
                  through the long exports (the recurrent networks' take 3-6
                  minutes each) and nothing else runs on the GPU while a
                  problem is timed or judged. Cold compile times are then
                  measured beside N busy export workers (CPU).
  --deadline S    start nothing after S seconds and cut the running problem
                  at S (not recorded: it runs again on resume), so a run fits
                  a command limit; rerun with the same --out to go on.
  --reuse-baselines OLD.jsonl --drift-sample K: eager and torch.compile times
                  of OLD (same device name; the option may be given several
                  times, a later file's record of a problem replacing an
                  earlier one's) are reused, after K problems
                  (deterministic sample) are timed again in full: if the
                  median ratio new/old of eager or of compile is off by more
                  than --drift-max (5%), nothing is reused and everything is
                  timed; the drift is recorded either way.

--cpu-check (no GPU): every problem built and exported on the CPU and
compiled with `kfuse compile` (which needs no GPU), --jobs at a time: export
and compile status, errors and compile time; no forward pass, no timing.

Output in --out DIR: results.jsonl (a "run" header per invocation with the
ceilings, versions and options, a "drift" record when baselines were
offered, one "problem" record per problem), summary.md and summary.json (per
level: problems, exported, compiled, correct, fast_1 against eager and
against compile (correct and faster, over all problems), geometric-mean
speedups over correct problems, worst ten against eager, median fraction of
the floor of memory-bound problems (bytes floor >= flops floor), slowest cold
compiles, every failure with its first error line, every problem), reports/
(kfuse's compile reports) and logs/ (worker logs of failed problems), both
also in reports.tar.gz (one file, for tools that bring back few). A
progress line per problem is printed as it ends, the level table at the end.
"""
import argparse
import concurrent.futures
import datetime
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import tarfile
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
THIS = os.path.abspath(__file__)
STATUSES = ("ok", "eager-fail", "export-fail", "compile-fail", "load-fail", "run-fail", "mismatch",
            "timeout", "crash")
PROBLEM_RE = re.compile(r"^(\d+)_(.+)\.py$")
ID_RE = re.compile(r"^[Ll]([123])/(\d+)$")


# ---- problems ---------------------------------------------------------------------------

def find_problems(kb):
    """every KernelBench problem under kb (level1..3, or kb/KernelBench/level1..3)"""
    root = kb
    if not os.path.isdir(os.path.join(root, "level1")) and os.path.isdir(os.path.join(root, "KernelBench", "level1")):
        root = os.path.join(root, "KernelBench")
    out = []
    for level in (1, 2, 3):
        d = os.path.join(root, f"level{level}")
        if not os.path.isdir(d):
            raise SystemExit(f"kernelbench: {kb} has no level{level}/ (make it with scripts/kb_fetch.sh)")
        for f in os.listdir(d):
            m = PROBLEM_RE.match(f)
            if m:
                num = int(m.group(1))
                out.append({"id": f"L{level}/{num}", "level": level, "num": num, "name": m.group(2),
                            "path": os.path.abspath(os.path.join(d, f))})
    out.sort(key=lambda p: (p["level"], p["num"]))
    ids = [p["id"] for p in out]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise SystemExit(f"kernelbench: two files share a problem number: {', '.join(dup)}")
    return out, root


def select(problems, args):
    sel = problems
    if args.level:
        try:
            levels = {int(x) for x in args.level.split(",") if x.strip()}
        except ValueError:
            raise SystemExit(f"kernelbench: --level takes e.g. 1,2 (got {args.level!r})") from None
        if not levels <= {1, 2, 3}:
            raise SystemExit(f"kernelbench: --level: levels are 1, 2 and 3 (got {args.level!r})")
        sel = [p for p in sel if p["level"] in levels]
    known = {p["id"] for p in problems}

    def ids(opt, text):
        want = []
        for x in text.split(","):
            x = x.strip()
            if not x:
                continue
            m = ID_RE.match(x)
            if not m:
                raise SystemExit(f"kernelbench: {opt}: {x!r} is not a problem id like L1/19")
            want.append(f"L{m.group(1)}/{int(m.group(2))}")
        missing = [w for w in want if w not in known]
        if missing:
            raise SystemExit(f"kernelbench: {opt}: no such problem: {', '.join(missing)}")
        return set(want)
    if args.only:
        only = ids("--only", args.only)
        sel = [p for p in sel if p["id"] in only]
    if args.skip:
        skip = ids("--skip", args.skip)
        sel = [p for p in sel if p["id"] not in skip]
    if args.shard:
        m = re.match(r"^(\d+)/(\d+)$", args.shard)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise SystemExit(f"kernelbench: --shard takes K/N with 1 <= K <= N (got {args.shard!r})")
        k, n = int(m.group(1)), int(m.group(2))
        if getattr(args, "shard_costs", None):
            part = lpt_shards(sel, shard_costs(args.shard_costs), n)
            sel = [p for i, p in enumerate(sel) if part[i] == k - 1]
        else:
            sel = [p for i, p in enumerate(sel) if i % n == k - 1]
    return sel


def shard_costs(path):
    """problem id -> seconds its last record in an earlier results.jsonl took
    (wall_s: export, compile, check and timing)"""
    if not os.path.exists(path):
        raise SystemExit(f"kernelbench: --shard-costs: {path} does not exist")
    costs = {}
    for r in read_jsonl(path):
        if r.get("type") == "problem" and isinstance(r.get("wall_s"), (int, float)):
            costs[r["id"]] = float(r["wall_s"])
    if not costs:
        raise SystemExit(f"kernelbench: --shard-costs: {path} has no problem records with wall_s")
    return costs


def lpt_shards(sel, costs, n):
    """the shard (0..n-1) of each problem of sel: longest known cost first,
    each to the shard with the least so far (ties to the lowest shard, so
    every shard computes the same split); a problem with no known cost
    counts as the median"""
    known = sorted(costs.values())
    median = known[len(known) // 2]
    cost = [costs.get(p["id"], median) for p in sel]
    load = [0.0] * n
    part = [0] * len(sel)
    for i in sorted(range(len(sel)), key=lambda i: (-cost[i], i)):
        s = min(range(n), key=lambda s: (load[s], s))
        part[i] = s
        load[s] += cost[i]
    return part


def file_id(pid):
    return pid.replace("/", "_")


# ---- records ----------------------------------------------------------------------------

def read_jsonl(path):
    """the records of a JSONL file; a torn last line (a run cut off while
    writing) is skipped with a warning, any other bad line is an error"""
    if not os.path.exists(path):
        return []
    recs = []
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            recs.append(json.loads(line))
        except ValueError:
            if i >= len(lines) - 2:
                print(f"kernelbench: {path}: line {i + 1} is torn (a cut-off run?); ignored", flush=True)
            else:
                raise SystemExit(f"kernelbench: {path}: line {i + 1} is not JSON") from None
    return recs


_write_lock = threading.Lock()


def append_jsonl(path, rec):
    with _write_lock:
        with open(path, "a") as f:
            f.write(json.dumps(rec, sort_keys=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


def latest(records):
    """each problem's last record, in file order of first appearance"""
    last = {}
    for r in records:
        if r.get("type") == "problem" and "id" in r:
            last[r["id"]] = r
    return last


def first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def error_lines(text, n=5, width=300):
    """the first n non-empty lines of an error text, each cut at width"""
    out = [line.rstrip()[:width] for line in (text or "").splitlines() if line.strip()]
    return "\n".join(out[:n])


# ---- summary (no torch) ---------------------------------------------------------------

def gmean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def level_summary(recs):
    n = len(recs)
    ok = [r for r in recs if r.get("status") == "ok" and r.get("mode") != "cpu-check"]
    timed = [r for r in ok if r.get("kfuse_ms")]
    se = [r["speedup_eager"] for r in timed if r.get("speedup_eager")]
    sc = [r["speedup_compile"] for r in timed if r.get("speedup_compile")]
    mem = [r["floor_frac"] for r in timed if r.get("memory_bound") and r.get("floor_frac")]
    comp = sorted((r for r in recs if r.get("compile_s") is not None), key=lambda r: -r["compile_s"])
    gpu = any(r.get("mode") == "gpu" for r in recs)
    statuses = {}
    for r in recs:
        statuses[r.get("status", "?")] = statuses.get(r.get("status", "?"), 0) + 1
    return {
        "problems": n,
        "exported": sum(1 for r in recs if r.get("exported")),
        "compiled": sum(1 for r in recs if r.get("compiled")),
        "correct": len(ok),
        "timed": len(timed),
        "fast_1_eager": (sum(1 for x in se if x > 1) / n) if n and gpu else None,
        "fast_1_compile": (sum(1 for x in sc if x > 1) / n) if n and gpu else None,
        "fast_1_eager_count": sum(1 for x in se if x > 1),
        "fast_1_compile_count": sum(1 for x in sc if x > 1),
        "gmean_speedup_eager": gmean(se),
        "gmean_speedup_compile": gmean(sc),
        "speedup_eager_n": len(se),
        "speedup_compile_n": len(sc),
        "median_floor_frac_memory_bound": statistics.median(mem) if mem else None,
        "memory_bound_n": len(mem),
        "median_compile_s": statistics.median([r["compile_s"] for r in comp]) if comp else None,
        "slowest_compile": [{"id": r["id"], "compile_s": r["compile_s"]} for r in comp[:5]],
        "statuses": statuses,
    }


def summarize(records):
    last = latest(records)
    recs = sorted(last.values(), key=lambda r: (r.get("level", 0), r.get("num", 0)))
    levels = {}
    for lv in (1, 2, 3):
        sub = [r for r in recs if r.get("level") == lv]
        if sub:
            levels[f"L{lv}"] = level_summary(sub)
    if recs:
        levels["all"] = level_summary(recs)
    timed = [r for r in recs if r.get("status") == "ok" and r.get("speedup_eager")]
    worst = sorted(timed, key=lambda r: r["speedup_eager"])[:10]
    fails = [r for r in recs if r.get("status") != "ok"]
    return {
        "runs": [r for r in records if r.get("type") == "run"],
        "drift": [r for r in records if r.get("type") == "drift"],
        "levels": levels,
        "worst_vs_eager": [{"id": r["id"], "name": r.get("name"), "speedup_eager": r["speedup_eager"],
                            "speedup_compile": r.get("speedup_compile"), "kfuse_ms": r.get("kfuse_ms"),
                            "eager_ms": r.get("eager_ms")} for r in worst],
        "failures": [{"id": r["id"], "name": r.get("name"), "status": r.get("status"),
                      "stage": r.get("stage"), "error": first_line(r.get("error"))} for r in fails],
        # timed beside other processes on the same GPU: their times are suspect
        "shared_gpu": [r["id"] for r in recs if (r.get("gpu_processes") or 0) > 1],
        "gpu_watched": sum(1 for r in recs if r.get("gpu_processes") is not None),
        "problems": recs,
    }


def _f(v, fmt="{:.3f}", none="—"):
    return fmt.format(v) if isinstance(v, (int, float)) and v is not None and math.isfinite(v) else none


def _pct(v):
    return f"{v:.0%}" if isinstance(v, (int, float)) and v is not None else "—"


def level_table(levels):
    lines = ["| level | problems | exported | compiled | correct | fast_1 vs eager | fast_1 vs compile "
             "| geomean vs eager | geomean vs compile | median floor fraction, memory-bound (n) "
             "| median / slowest cold compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in levels.items():
        slow = s["slowest_compile"][0] if s["slowest_compile"] else None
        lines.append(
            f"| {name} | {s['problems']} | {s['exported']} | {s['compiled']} | {s['correct']} | "
            f"{_pct(s['fast_1_eager'])} | {_pct(s['fast_1_compile'])} | "
            f"{_f(s['gmean_speedup_eager'], '{:.2f}x')} ({s['speedup_eager_n']}) | "
            f"{_f(s['gmean_speedup_compile'], '{:.2f}x')} ({s['speedup_compile_n']}) | "
            f"{_pct(s['median_floor_frac_memory_bound'])} ({s['memory_bound_n']}) | "
            f"{_f(s['median_compile_s'], '{:.2f}')} / "
            + (f"{slow['compile_s']:.2f} ({slow['id']})" if slow else "—") + " |")
    return lines


def summary_md(summ):
    L = ["# KernelBench with kfuse", ""]
    for h in summ["runs"]:
        mode = h.get("mode")
        line = f"- run {h.get('run_id')} ({mode}): {h.get('device')}; torch {h.get('torch')}"
        if h.get("copy_bw"):
            line += (f"; copy {h['copy_bw'] / 1e12:.2f} TB/s, fp32 GEMM {h['gemm_rate'] / 1e12:.1f} TFLOP/s, "
                     f"TF32 GEMM {h['gemm_rate_tf32'] / 1e12:.1f} TFLOP/s")
        line += f"; {h.get('kfuse_version', 'kfuse ?')} (sha256 {str(h.get('kfuse_sha256', '?'))[:12]})"
        if h.get("compile_args"):
            line += f", compile args `{h['compile_args']}`"
        if h.get("kb_source"):
            line += f"; {h['kb_source']}"
        L.append(line)
    for d in summ["drift"]:
        L.append(f"- baseline drift against {d.get('old')}: eager new/old median {_f(d.get('eager_ratio'))}, "
                 f"compile {_f(d.get('compile_ratio'))} over {d.get('n')} problems "
                 f"({', '.join(d.get('sample', []))}); limit {d.get('limit'):.0%}: "
                 + ("baselines reused" if d.get("reuse") else f"not reused ({d.get('why', '')})"))
    L += [""] + level_table(summ["levels"]) + [""]
    L.append("fast_1: correct and faster, over all problems of the level; geometric means over the correct "
             "problems timed (n); memory-bound: bytes floor >= flops floor.")
    timed = sum(1 for r in summ["problems"] if r.get("eager_ms") or r.get("kfuse_ms"))
    if summ.get("shared_gpu"):
        L += ["", f"**Timed beside other processes on the same GPU** ({len(summ['shared_gpu'])} problems; "
              "their times are suspect): " + ", ".join(summ["shared_gpu"])]
    elif summ.get("gpu_watched"):
        L += ["", f"GPU sharing watched (NVML) for {summ['gpu_watched']} of {timed} problems timed; "
              "none of those was timed beside another process on its GPU."]
    elif timed:
        L += ["", "GPU sharing not watched (no NVML process list in these records)."]
    L += ["", "Statuses: " + "; ".join(
        f"{k} " + ", ".join(f"{s} {n}" for s, n in sorted(v["statuses"].items()))
        for k, v in summ["levels"].items() if k != "all")]
    if summ["failures"]:
        L += ["", "## Failures", "", "| problem | name | status | stage | first error line |",
              "|---|---|---|---|---|"]
        for r in summ["failures"]:
            err = (r["error"] or "").replace("|", "\\|")
            L.append(f"| {r['id']} | {r['name']} | {r['status']} | {r.get('stage') or ''} | {err} |")
    if summ["worst_vs_eager"]:
        L += ["", "## Worst ten by speedup against eager", "",
              "| problem | name | eager ms | kfuse ms | vs eager | vs compile |", "|---|---|---|---|---|---|"]
        for r in summ["worst_vs_eager"]:
            L.append(f"| {r['id']} | {r['name']} | {_f(r['eager_ms'])} | {_f(r['kfuse_ms'])} | "
                     f"{_f(r['speedup_eager'], '{:.2f}x')} | {_f(r['speedup_compile'], '{:.2f}x')} |")
    if not any(r.get("mode") == "gpu" for r in summ["problems"]):
        L += ["", "## Every problem (export and compile only)", "",
              "| problem | name | status | export s | kfuse compile s | groups | launches / GEMM / conv steps "
              "| weights MB | note |", "|---|---|---|---|---|---|---|---|---|"]
        for r in summ["problems"]:
            st = r.get("steps_per_run") or {}
            steps = "/".join(str(st.get(k, "—")) for k in ("launches", "gemm", "conv")) if st else "—"
            note = r.get("export_workaround") or (r.get("export_inputs") if r.get("export_inputs") not in
                                                  (None, "fake") else "")
            L.append(f"| {r['id']} | {r.get('name')} | {r.get('status')} | {_f(r.get('export_s'), '{:.1f}')} | "
                     f"{_f(r.get('compile_s'), '{:.2f}')} | {r.get('groups', '—')} | {steps} | "
                     f"{_f((r.get('param_bytes') or 0) / 1e6, '{:.1f}')} | {note} |")
        return "\n".join(L) + "\n"
    L += ["", "## Every problem", "",
          "| problem | name | status | eager ms | compile ms | kfuse ms | vs eager | vs compile | floor ms "
          "| of floor | bound | kfuse compile s | groups | runs e/c/k | max abs err | max rel err | tol |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in summ["problems"]:
        runs = "/".join(str((r.get(k) or {}).get("runs", "—")) if isinstance(r.get(k), dict) else "—"
                        for k in ("eager", "compile", "kfuse"))
        bound = "" if r.get("memory_bound") is None else ("memory" if r["memory_bound"] else "compute")
        L.append(f"| {r['id']} | {r.get('name')} | {r.get('status')} | {_f(r.get('eager_ms'))} | "
                 f"{_f(r.get('compile_ms'))} | {_f(r.get('kfuse_ms'))} | {_f(r.get('speedup_eager'), '{:.2f}x')} | "
                 f"{_f(r.get('speedup_compile'), '{:.2f}x')} | {_f(r.get('floor_ms'))} | {_pct(r.get('floor_frac'))} | "
                 f"{bound} | {_f(r.get('compile_s'), '{:.2f}')} | {r.get('groups', '—')} | {runs} | "
                 f"{_f(r.get('max_abs_err'), '{:.1e}')} | {_f(r.get('max_rel_err'), '{:.1e}')} | "
                 f"{_f(r.get('tol'), '{:.0e}')} |")
    return "\n".join(L) + "\n"


def bundle_reports(out):
    """reports/ and logs/ as one reports.tar.gz beside them: the device tool
    brings back a limited number of files, and a run's reports are one per
    problem (most of a 38-problem run's did not come back one by one)."""
    dirs = [d for d in ("reports", "logs") if os.path.isdir(os.path.join(out, d))]
    if not dirs:
        return
    tmp = os.path.join(out, "reports.tar.gz.tmp")
    with tarfile.open(tmp, "w:gz") as t:
        for d in dirs:
            t.add(os.path.join(out, d), arcname=d)
    os.replace(tmp, os.path.join(out, "reports.tar.gz"))


def write_summary(out, quiet=False):
    records = read_jsonl(os.path.join(out, "results.jsonl"))
    summ = summarize(records)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({k: v for k, v in summ.items() if k != "problems"}, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary_md(summ))
    bundle_reports(out)
    if not quiet:
        print("\n".join(level_table(summ["levels"])), flush=True)
    return summ


# ---- the orchestrator (no torch) ----------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.results = os.path.join(self.out, "results.jsonl")
        self.work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix="kfuse-kb-")
        os.makedirs(self.work, exist_ok=True)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.deadline if args.deadline else None
        # the workers' environment (this process imports no torch): set here,
        # before the fork server starts, since it inherits it
        os.environ["PYTHONUNBUFFERED"] = "1"
        # torch.cuda.is_available() through NVML: the driver query would
        # "poison" fork (torch._inductor calls it at import, in the server)
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        if args.inductor_cache:
            d = os.path.abspath(args.inductor_cache)
            os.makedirs(d, exist_ok=True)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = d
            os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "triton")
        self.ctx = None
        if not args.no_fork_server:
            import multiprocessing
            self.ctx = multiprocessing.get_context("forkserver")
            self.ctx.set_forkserver_preload(FORK_PRELOAD_CPU if args.cpu_check else FORK_PRELOAD)
        self.run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    def left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0

    def job(self, kind, problem=None, **extra):
        """a worker's job description: everything it needs, as JSON"""
        a = self.args
        d = os.path.join(self.work, file_id(problem["id"]) if problem else "_run")
        os.makedirs(d, exist_ok=True)
        j = {"kind": kind, "dir": d, "result": os.path.join(d, f"{kind}.result.json"),
             "kfuse": os.path.abspath(a.kfuse) if a.kfuse else None,
             "compile_args": shlex.split(a.compile_args or ""), "report": self.report_ok,
             "compile_timeout": a.compile_timeout, "seed": a.seed, "python_dir": os.path.join(HERE, "..", "python"),
             "modes": self.modes, "budget": a.budget, "min_runs": a.min_runs, "max_runs": a.max_runs,
             "time_failed": a.time_failed, "keep_work": a.keep_work,
             "cached_autotune": a.cached_autotune}
        if problem:
            j["problem"] = {k: problem[k] for k in ("id", "level", "num", "name", "path")}
        j.update(extra)
        return j

    def run_job(self, j, timeout):
        """run one worker process on job j with a wall-clock limit; returns
        (result or None, exit code or None, timed out, log path)"""
        jp = os.path.join(j["dir"], f"{j['kind']}.job.json")
        with open(jp, "w") as f:
            json.dump(j, f)
        if os.path.exists(j["result"]):
            os.remove(j["result"])
        log = os.path.join(j["dir"], f"{j['kind']}.log")
        timeout = max(1.0, timeout)
        if self.ctx is not None:
            # a child of the fork server, which has torch, dynamo, inductor
            # and export imported (12 s a process on the GPU machine)
            p = self.ctx.Process(target=fork_child, args=(jp, log))
            p.start()
            p.join(timeout)
            timed_out = p.is_alive()
            if timed_out:
                kill_group(p.pid, p.kill)
                p.join()
            rc = None if timed_out else p.exitcode
        else:
            with open(log, "w") as lf:
                p = subprocess.Popen([sys.executable, THIS, "--worker", jp], stdout=lf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
                try:
                    rc, timed_out = p.wait(timeout=timeout), False
                except subprocess.TimeoutExpired:
                    kill_group(p.pid, p.kill)
                    p.wait()
                    rc, timed_out = None, True
        # what the worker started and left (kfuse compile, Inductor's compile
        # workers): its process group, which outlives it only through them
        kill_group(p.pid, None)
        res = None
        if os.path.exists(j["result"]):
            try:
                with open(j["result"]) as f:
                    res = json.load(f)
            except ValueError:
                res = None
        return res, rc, timed_out, log

    # -- shared setup

    def kfuse_info(self):
        a = self.args
        if not a.kfuse:
            raise SystemExit("kernelbench: --kfuse PATH (the kfuse binary) is needed")
        k = os.path.abspath(a.kfuse)
        if not os.access(k, os.X_OK):
            raise SystemExit(f"kernelbench: --kfuse {a.kfuse}: not an executable file")
        r = subprocess.run([k, "version"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SystemExit(f"kernelbench: `kfuse version` failed ({r.returncode}): "
                             f"{first_line(r.stderr or r.stdout)}")
        version = first_line(r.stdout)
        h = subprocess.run([k, "help"], capture_output=True, text=True, timeout=60)
        self.report_ok = "--report" in (h.stdout + h.stderr)
        with open(k, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        return version, sha

    def header(self, mode, probe):
        a = self.args
        src = None
        sp = os.path.join(a.kb, "SOURCE")  # written by scripts/kb_fetch.sh
        if os.path.exists(sp):
            with open(sp) as f:
                src = f.read().strip()
        h = {"type": "run", "run_id": self.run_id, "mode": mode,
             "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "kfuse_version": self.kfuse_version, "kfuse_sha256": self.kfuse_sha,
             "compile_args": a.compile_args or "", "kb_source": src,
             "selection": {"level": a.level, "only": a.only, "skip": a.skip, "shard": a.shard},
             "options": {"timeout": a.timeout, "compile_timeout": a.compile_timeout, "seed": a.seed}}
        if mode == "gpu":
            h["options"].update(budget=a.budget, min_runs=a.min_runs, max_runs=a.max_runs, modes=self.modes,
                                warm_jobs=a.warm_jobs, warm_background=a.warm_background,
                                warm_export=a.warm_export, warm_kfuse=a.warm_kfuse,
                                cached_autotune=a.cached_autotune, shard_costs=a.shard_costs)
        else:
            h["options"]["jobs"] = a.jobs
        h.update(probe)
        return h

    def pending(self, problems):
        a = self.args
        if a.redo:
            return list(problems)
        mode = "cpu-check" if a.cpu_check else "gpu"
        done = latest([r for r in read_jsonl(self.results) if r.get("type") != "problem" or r.get("mode") == mode])
        redo = {s.strip() for s in (a.redo_status or "").split(",") if s.strip()}
        bad = redo - set(STATUSES)
        if bad:
            raise SystemExit(f"kernelbench: --redo-status: unknown status {', '.join(sorted(bad))} "
                             f"(statuses: {', '.join(STATUSES)})")
        return [p for p in problems if p["id"] not in done or done[p["id"]].get("status") in redo]

    def finish_record(self, p, res, rc, timed_out, log, timeout, mode):
        """the record of one problem from what its worker left (complete or not)"""
        rec = dict(res or {})
        rec.pop("final", None)
        rec.update(type="problem", id=p["id"], level=p["level"], num=p["num"], name=p["name"],
                   mode=mode, run_id=self.run_id)
        for k in ("device", "torch"):
            rec.setdefault(k, self.probe.get(k))
        final = bool(res and res.get("final"))
        if timed_out:
            rec["status"] = "timeout"
            rec["error"] = f"timed out after {timeout:.0f} s in stage {rec.get('stage', 'start')}"
        elif not final:
            sig = ""
            if rc is not None and rc < 0:
                try:
                    sig = f" ({signal.Signals(-rc).name}{', out of memory?' if -rc == signal.SIGKILL else ''})"
                except ValueError:
                    pass
            tail = log_tail(log, 12)
            rec["status"] = "crash"
            rec["error"] = (f"worker exited with code {rc}{sig} in stage {rec.get('stage', 'start')}"
                            + (f"\n{last_error_line(tail)}" if tail else ""))
        elif rc != 0:
            rec.setdefault("note", f"worker exited with code {rc} after writing its result")
        if not rec.get("status"):
            rec["status"] = "crash"
            rec["error"] = f"the worker finished without a status (stage {rec.get('stage', 'start')}; exit {rc})"
        if rec.get("error"):
            for a, b in ((os.path.dirname(log), "<work>"), (self.work, "<work>"),
                         (os.path.abspath(self.args.kb or "."), "<kb>")):
                rec["error"] = rec["error"].replace(a, b)
        if rec.get("status") != "ok":
            os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
            try:
                with open(os.path.join(self.out, "logs", f"{file_id(p['id'])}.{mode}.log"), "w") as f:
                    f.write(log_tail(log, 200))
            except OSError:
                pass
        rep = os.path.join(os.path.dirname(log), "kfuse.report.json")
        if os.path.exists(rep):
            os.makedirs(os.path.join(self.out, "reports"), exist_ok=True)
            shutil.copyfile(rep, os.path.join(self.out, "reports", f"{file_id(p['id'])}.report.json"))
        return rec


FORK_PRELOAD = ["__main__", "torch", "torch._dynamo", "torch._inductor.compile_fx", "torch.export",
                "torch.utils.flop_counter", "torch._subclasses.fake_tensor"]
FORK_PRELOAD_CPU = ["__main__", "torch", "torch.export", "torch._subclasses.fake_tensor"]


def fork_child(job_path, log_path):
    """a worker forked by the fork server: its own session (so a timeout
    kills what it started too), output to its log"""
    os.setsid()
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)
    sys.exit(worker_main(job_path))


def kill_group(pid, fallback):
    """SIGKILL to the process group a worker leads (we started it, with its
    own session); fallback when the group is not there yet"""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if fallback is not None:
            try:
                fallback()
            except OSError:
                pass


def log_tail(path, n):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def last_error_line(text):
    """the last line of a traceback-looking text that names an error"""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception|Killed|error:)", line) or "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else ""


def progress(i, n, rec, elapsed):
    s = rec.get("status")
    parts = [f"[{i}/{n}] {rec['id']} {rec.get('name')}: {s}"]
    if s == "ok":
        if rec.get("kfuse_ms"):
            parts.append(f"eager {_f(rec.get('eager_ms'))} compile {_f(rec.get('compile_ms'))} "
                         f"kfuse {_f(rec.get('kfuse_ms'))} ms ({_f(rec.get('speedup_eager'), '{:.2f}x')} eager, "
                         f"{_f(rec.get('speedup_compile'), '{:.2f}x')} compile, "
                         f"{_pct(rec.get('floor_frac'))} of floor)")
        if rec.get("max_abs_err") is not None:
            parts.append(f"err {rec['max_abs_err']:.1e}")
    else:
        parts.append(first_line(rec.get("error")))
    if rec.get("compile_s") is not None:
        parts.append(f"kfuse compile {rec['compile_s']:.1f} s")
    parts.append(f"[{elapsed:.0f} s]")
    print("  ".join(parts), flush=True)


def cpu_check(args, problems, kb_root):
    r = Runner(args)
    r.kb_root = kb_root
    r.modes = []
    r.kfuse_version, r.kfuse_sha = r.kfuse_info()
    todo = r.pending(problems)
    print(f"kernelbench --cpu-check: {len(problems)} selected, {len(todo)} to do, {args.jobs} at a time; "
          f"work in {r.work}", flush=True)
    if not todo:
        write_summary(r.out)
        return 0
    pres, rc, to, log = r.run_job(r.job("probe"), 300)
    if not pres or not pres.get("final"):
        raise SystemExit(f"kernelbench: the probe worker failed (torch importable?):\n{log_tail(log, 20)}")
    r.probe = {"device": "cpu (export and kfuse compile only)", "torch": pres.get("torch")}
    append_jsonl(r.results, r.header("cpu-check", r.probe))
    count = [0]
    stop = threading.Event()

    def one(p):
        if stop.is_set():
            return None
        left = r.left()
        if left is not None and left < 5:
            stop.set()
            return None
        t = args.timeout if left is None else min(args.timeout, left)
        res, rc, timed_out, log = r.run_job(r.job("cpu-check", p), t)
        if timed_out and t < args.timeout:
            stop.set()
            print(f"{p['id']}: stopped at the deadline; not recorded (it runs again on resume)", flush=True)
            return None
        rec = r.finish_record(p, res, rc, timed_out, log, t, "cpu-check")
        append_jsonl(r.results, rec)
        with _write_lock:
            count[0] += 1
            progress(count[0], len(todo), rec, r.elapsed())
        if not args.keep_work:
            shutil.rmtree(os.path.join(r.work, file_id(p["id"])), ignore_errors=True)
        return rec

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        list(ex.map(one, todo))
    if stop.is_set():
        print("kernelbench: deadline reached; rerun with the same --out to go on", flush=True)
    write_summary(r.out)
    if not args.work and not args.keep_work:
        shutil.rmtree(r.work, ignore_errors=True)
    return 0


def gpu_run(args, problems, kb_root):
    r = Runner(args)
    r.kb_root = kb_root
    r.modes = ["default"] + [m for m in (args.modes or "").split(",") if m and m != "default"]
    if args.max_autotune and "max-autotune" not in r.modes:
        r.modes.append("max-autotune")
    if args.no_compile:
        r.modes = []
    r.kfuse_version, r.kfuse_sha = r.kfuse_info()
    todo = r.pending(problems)
    print(f"kernelbench: {len(problems)} selected, {len(todo)} to do; work in {r.work}", flush=True)
    if not todo:
        write_summary(r.out)
        return 0
    # ceilings, device, versions: once per run
    res, rc, to, log = r.run_job(r.job("ceilings"), 600)
    if r.ctx is not None and "forked subprocess" in ((res or {}).get("error") or "") + log_tail(log, 30):
        print("kernelbench: CUDA refuses to start in a forked worker here; one fresh process per problem "
              "instead (slower: torch is imported every time)", flush=True)
        r.ctx = None
        res, rc, to, log = r.run_job(r.job("ceilings"), 600)
    if not res or not res.get("final") or res.get("error"):
        raise SystemExit(f"kernelbench: measuring the ceilings failed (a GPU here?):\n"
                         f"{(res or {}).get('error') or log_tail(log, 20)}")
    r.probe = res
    keys = ("device", "torch", "cuda", "cudnn", "l2_bytes", "sm_count", "memory_bytes", "copy_bw", "gemm_rate",
            "gemm_rate_tf32")
    head = r.header("gpu", {k: res[k] for k in keys})
    append_jsonl(r.results, head)
    print(f"device: {res['device']}; torch {res['torch']}; copy {res['copy_bw'] / 1e12:.2f} TB/s, fp32 GEMM "
          f"{res['gemm_rate'] / 1e12:.1f} TFLOP/s, TF32 GEMM {res['gemm_rate_tf32'] / 1e12:.1f} TFLOP/s", flush=True)
    ceil = {k: res[k] for k in ("copy_bw", "gemm_rate", "gemm_rate_tf32")}

    reuse, sample = None, []
    if args.reuse_baselines:
        reuse, sample = plan_reuse(r, args, todo, res["device"])
    count = [0]
    total = len(todo)

    def time_one(p, extra):
        left = r.left()
        if left is not None and left < 10:
            return "deadline"
        t = args.timeout if left is None else min(args.timeout, left)
        j = r.job("problem", p, ceilings=ceil, **extra)
        res, rc, timed_out, log = r.run_job(j, t)
        if timed_out and t < args.timeout:
            print(f"{p['id']}: stopped at the deadline; not recorded (it runs again on resume)", flush=True)
            return "deadline"
        rec = r.finish_record(p, res, rc, timed_out, log, t, "gpu")
        append_jsonl(r.results, rec)
        count[0] += 1
        progress(count[0], total, rec, r.elapsed())
        if not args.keep_work:
            shutil.rmtree(os.path.join(r.work, file_id(p["id"])), ignore_errors=True)
        write_summary(r.out, quiet=True)
        return rec

    # 1. the drift sample, timed in full before anything else (its
    # torch.compile caches warmed in parallel first)
    done_ids = set()
    if sample:
        if args.warm_jobs > 0 or args.warm_background > 0:
            warm_phase(r, args, sample, None, args.warm_jobs or args.warm_background)
        recs = []
        for p in sample:
            rec = time_one(p, {})
            if rec == "deadline":
                break
            recs.append(rec)
            done_ids.add(p["id"])
        reuse = decide_reuse(r, args, reuse, recs)
    rest = [p for p in todo if p["id"] not in done_ids]

    # 2. warm phase: before the timing; with --warm-background only what
    # runs on the GPU before it and the CPU-only exports beside it (a warm-up
    # on the GPU beside a timed run would spoil its timing and the judge's)
    warm_done = {}
    if args.warm_background > 0 and rest:
        warm_phase(r, args, rest, reuse, args.warm_background, part="gpu")
        warm_done = {p["id"]: threading.Event() for p in rest}

        def background():
            try:
                warm_phase(r, args, rest, reuse, args.warm_background, warm_done, part="cpu")
            finally:  # whatever happened there, the timing never waits forever
                for ev in warm_done.values():
                    ev.set()
        bg = threading.Thread(target=background, daemon=True)
        bg.start()
    if args.warm_jobs > 0 and rest:
        warm_phase(r, args, rest, reuse)
        if args.warm_only:
            print("kernelbench: --warm-only: warm phase done", flush=True)
            if not args.work:
                shutil.rmtree(r.work, ignore_errors=True)
            return 0

    # 3. one problem at a time
    stopped = False
    for p in rest:
        extra = {}
        if reuse and p["id"] in reuse["records"]:
            o = reuse["records"][p["id"]]
            extra["reuse"] = {"eager": o.get("eager"), "compile": {m: o.get(mode_key(m)) for m in r.modes},
                              "run_id": o.get("run_id"), "old": reuse["old"]}
        ev = warm_done.get(p["id"])
        while ev is not None and not ev.wait(5):
            left = r.left()
            if left is not None and left < 10:
                break
        if ev is not None and not ev.is_set():
            stopped = True  # the deadline came while its warm job ran
            break
        warm = os.path.join(r.work, file_id(p["id"]), "kfuse.warm.json")
        if os.path.exists(warm):
            extra["warm_meta"] = warm
        rec = time_one(p, extra)
        if rec == "deadline":
            stopped = True
            break
    if stopped:
        print("kernelbench: deadline reached; rerun with the same --out to go on", flush=True)
    if args.warm_background > 0 and rest:
        bg.join()  # its jobs end by the deadline too
    summ = write_summary(r.out)
    worst = summ["worst_vs_eager"]
    if worst:
        print("worst against eager: " + ", ".join(f"{w['id']} {w['speedup_eager']:.2f}x" for w in worst), flush=True)
    if not args.work and not args.keep_work:
        shutil.rmtree(r.work, ignore_errors=True)
    return 0


def mode_key(mode):
    return "compile" if mode == "default" else f"compile_{mode}"


def warm_phase(r, args, todo, reuse, jobs=None, done=None, part="all"):
    """fill torch.compile's caches (and with --warm-kfuse compile kfuse) in
    parallel workers (jobs, else --warm-jobs); outcomes in warm.jsonl,
    problems already warm there skipped; done: problem id -> threading.Event,
    each set when that problem's warm job has ended (or was not needed).
    part: "all"; "gpu", the jobs that run on the GPU (torch.compile's
    warm-up; --warm-kfuse, which exports and judges), no bare export; "cpu",
    only the exports (--warm-export), which never touch the GPU and so may
    run beside the timing"""
    jobs = jobs or args.warm_jobs
    done = done or {}
    wpath = os.path.join(r.out, "warm.jsonl")
    warm_ok = {w["id"] for w in read_jsonl(wpath) if w.get("ok") and w.get("modes") == r.modes}
    want_modes = part != "cpu"
    want_kfuse = bool(args.warm_kfuse) and part != "cpu"
    # --warm-kfuse exports too; a bare export is left to the "cpu" part
    want_export = want_kfuse or (bool(args.warm_export) and part != "gpu")
    kfuse_warm = want_export

    def kfuse_warm_there(p):
        # kfuse's warm artefacts live in --work: warm only if they are still there
        return os.path.exists(os.path.join(r.work, file_id(p["id"]), "kfuse.warm.json"))

    def warm_already(p):
        if part == "cpu":
            return kfuse_warm_there(p)
        if p["id"] not in warm_ok:
            return False
        return not kfuse_warm or kfuse_warm_there(p)
    todo = [p for p in todo if not warm_already(p)]
    if reuse and want_modes:
        # baselines reused: torch.compile is not run for those problems
        todo = [p for p in todo if p["id"] not in reuse["records"] or kfuse_warm]
    if not ((want_modes and r.modes) or kfuse_warm):
        todo = []
    waiting = {p["id"] for p in todo}
    for pid, ev in done.items():
        if pid not in waiting:
            ev.set()
    if not todo:
        return
    what = [w for w, on in (("torch.compile", want_modes and r.modes),
                             ("kfuse export + compile" if want_kfuse else "kfuse export", kfuse_warm)) if on]
    print(f"warm phase ({part}): {len(todo)} problems, {jobs} at a time ({', '.join(what)})", flush=True)
    t0 = time.monotonic()
    stop = threading.Event()
    n = [0]

    def one(p):
        try:
            warm_one(p)
        finally:
            if p["id"] in done:
                done[p["id"]].set()

    def warm_one(p):
        if stop.is_set():
            return
        left = r.left()
        if left is not None and left < 30:
            stop.set()
            return
        t = args.timeout if left is None else min(args.timeout, left)
        modes = [] if (not want_modes or (reuse and p["id"] in reuse["records"])) else r.modes
        j = r.job("warm", p, warm_modes=modes, warm_kfuse=want_kfuse, warm_export=want_export,
                  warm_export_max_mb=args.warm_export_max_mb)
        res, rc, timed_out, log = r.run_job(j, t)
        ok = bool(res and res.get("final") and not res.get("error"))
        # an export-only job warms no torch.compile mode: recorded so
        w = {"id": p["id"], "ok": ok, "modes": r.modes if want_modes else None,
             "seconds": round(time.monotonic() - t0, 1), "run_id": r.run_id, "part": part}
        if not ok:
            w["error"] = (res or {}).get("error") or (
                "timed out" if timed_out else f"exit {rc}: {last_error_line(log_tail(log, 12))}")
        if kfuse_warm and res and res.get("kfuse"):
            w["kfuse"] = {k: res["kfuse"].get(k) for k in ("exported", "export_s", "compiled", "compile_s", "error")
                          if k in res["kfuse"]}
        append_jsonl(wpath, w)
        with _write_lock:
            n[0] += 1
            print(f"  warm [{n[0]}/{len(todo)}] {p['id']}: " + ("ok" if ok else f"FAILED {first_line(w['error'])}")
                  + f" [{time.monotonic() - t0:.0f} s]", flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(one, todo))
    print(f"warm phase: {time.monotonic() - t0:.0f} s" + (" (stopped at the deadline)" if stop.is_set() else ""),
          flush=True)


def plan_reuse(r, args, todo, device):
    """the old baselines that may be reused, and the sample to re-time"""
    old, h = [], hashlib.sha256()
    for path in args.reuse_baselines:
        old += read_jsonl(path)
        with open(path, "rb") as f:
            h.update(f.read())
    old_sha = h.hexdigest()[:16]
    old_name = "+".join(os.path.basename(p) for p in args.reuse_baselines)
    runs = {h.get("run_id"): h for h in old if h.get("type") == "run"}
    recs = {}
    for pid, rec in latest(old).items():
        h = runs.get(rec.get("run_id"), {})
        if rec.get("mode") == "gpu" and isinstance(rec.get("eager"), dict) and rec["eager"].get("median") \
                and all(isinstance(rec.get(mode_key(m)), dict) and rec[mode_key(m)].get("median") for m in r.modes) \
                and (h.get("device") or rec.get("device")) == device:
            recs[pid] = rec
    info = {"old": old_name, "old_sha256": old_sha, "records": recs}
    # a decision already taken for this OLD in this --out (an earlier, resumed invocation)
    for d in read_jsonl(r.results):
        if d.get("type") == "drift" and d.get("old_sha256") == old_sha:
            print(f"baselines: drift decided earlier in this --out: {'reuse' if d.get('reuse') else 'no reuse'}",
                  flush=True)
            return (info if d.get("reuse") else None), []
    cand = [p for p in todo if p["id"] in recs]
    if not cand:
        print(f"baselines: {old_name} has no usable baselines for these problems on {device}; "
              "everything is timed", flush=True)
        append_jsonl(r.results, {"type": "drift", "run_id": r.run_id, "old": info["old"], "old_sha256": old_sha,
                                 "n": 0, "sample": [], "limit": args.drift_max, "reuse": False,
                                 "why": "no usable baselines (device differs or none recorded)"})
        return None, []
    # from the cheaper half by the old records' wall time (an L3 network's
    # cold torch.compile alone takes minutes), in a deterministic order
    k = max(1, args.drift_sample)
    cheap = sorted(cand, key=lambda p: (recs[p["id"]].get("wall_s") or 1e9, p["id"]))[:max(k, len(cand) // 2)]
    sample = sorted(cheap, key=lambda p: hashlib.sha1(p["id"].encode()).hexdigest())[:k]
    print(f"baselines: {len(recs)} reusable from {info['old']}; re-timing a sample of {len(sample)} first: "
          + ", ".join(p["id"] for p in sample), flush=True)
    return info, sample


def decide_reuse(r, args, info, recs):
    ratios_e, ratios_c = [], []
    for rec in recs:
        o = info["records"].get(rec["id"])
        if not o or rec.get("status") != "ok":
            continue
        if rec.get("eager_ms") and o.get("eager_ms"):
            ratios_e.append(rec["eager_ms"] / o["eager_ms"])
        if rec.get("compile_ms") and o.get("compile_ms"):
            ratios_c.append(rec["compile_ms"] / o["compile_ms"])
    de = statistics.median(ratios_e) if ratios_e else None
    dc = statistics.median(ratios_c) if ratios_c else None
    need = max(1, (len(recs) + 1) // 2)
    why = ""
    if len(ratios_e) < need:
        why = f"only {len(ratios_e)} of {len(recs)} sampled problems gave comparable times"
    elif abs(de - 1) > args.drift_max or (dc is not None and abs(dc - 1) > args.drift_max):
        why = f"drift beyond {args.drift_max:.0%}"
    elif "default" in r.modes and dc is None:
        why = "no torch.compile time to compare"
    reuse = not why
    d = {"type": "drift", "run_id": r.run_id, "old": info["old"], "old_sha256": info["old_sha256"],
         "n": len(ratios_e), "sample": [x["id"] for x in recs], "eager_ratio": de, "compile_ratio": dc,
         "eager_ratios": ratios_e, "compile_ratios": ratios_c, "limit": args.drift_max, "reuse": reuse, "why": why}
    append_jsonl(r.results, d)
    print(f"baselines: drift new/old eager {_f(de)}, compile {_f(dc)} over {len(ratios_e)}: "
          + ("reusing the old baselines" if reuse else f"NOT reusing them ({why}); everything is timed"), flush=True)
    return info if reuse else None


# ---- the worker (torch) -------------------------------------------------------------------

class Worker:
    """one job in a fresh process; writes its result (atomically) after every
    stage, so a crash or a kill leaves what was reached"""

    def __init__(self, job):
        self.job = job
        self.res = {"stage": "start"}
        self.t0 = time.monotonic()

    def save(self, final=False):
        self.res["wall_s"] = round(time.monotonic() - self.t0, 2)
        if final:
            self.res["final"] = True
        tmp = self.job["result"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.res, f, default=_json_default)
        os.replace(tmp, self.job["result"])

    def stage(self, name):
        self.res["stage"] = name
        self.save()
        print(f"-- {name} [{time.monotonic() - self.t0:.1f} s]", flush=True)

    def fail(self, status, e, final=True):
        import traceback
        text = scrub(self, f"{type(e).__name__}: {e}" if isinstance(e, BaseException) else str(e))
        self.res["status"] = status
        self.res["error"] = error_lines(text)
        if isinstance(e, BaseException):
            traceback.print_exception(e)
        else:
            print(text, flush=True)
        self.save(final=final)


def _json_default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    return str(o)


def _setup_torch(job):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's defaults, stated
    torch.backends.cudnn.allow_tf32 = True
    sys.path.insert(0, os.path.abspath(job["python_dir"]))
    if HERE not in sys.path:
        sys.path.insert(0, HERE)  # scripts/bench.py: the ceilings and the flop count
    return torch


class GpuWatch:
    """how many processes run on this problem's GPU while it is timed,
    through NVML (pynvml, from nvidia-ml-py) where it can be had: more than
    one (this worker) means the times were taken beside other GPU work (a
    warm-up, a test, another run), which spoils them. sample() after each
    variant; result() is None where NVML is not there or does not answer."""

    def __init__(self, torch):
        self.nvml = self.dev = None
        self.seen = []
        try:
            import pynvml
            pynvml.nvmlInit()
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            uuid = str(getattr(props, "uuid", "") or "")
            if uuid:
                self.dev = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)
            else:
                vis = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
                self.dev = pynvml.nvmlDeviceGetHandleByIndex(int(vis) if vis.isdigit() else 0)
            self.nvml = pynvml
        except Exception:  # noqa: BLE001 — no NVML: nothing watched, said so
            self.nvml = self.dev = None

    def sample(self):
        if self.nvml is None:
            return
        try:
            pids = {q.pid for q in self.nvml.nvmlDeviceGetComputeRunningProcesses(self.dev)}
        except Exception:  # noqa: BLE001
            return
        me = os.getpid()
        if me in pids:
            # NVML's pids are ours: this process and its children (Inductor's
            # compile workers) count as one
            mine = {me}
            try:
                import psutil
                mine |= {c.pid for c in psutil.Process(me).children(recursive=True)}
            except Exception:  # noqa: BLE001
                pass
            self.seen.append(1 + len(pids - mine))
        else:
            self.seen.append(len(pids))

    def result(self):
        # 0: NVML lists no process, not even this one (a sandbox that hides
        # them): not known
        return max(self.seen) if self.seen and max(self.seen) > 0 else None


def fresh_autotune(torch, job):
    """unless --cached-autotune: Inductor's run-time autotuning (a kernel
    with several configs benchmarks them at its first call) is done again in
    the timing process, on a GPU nothing else uses, instead of taking the
    choice a warm job made beside other warm jobs on the same GPU; the
    compiled kernels still come from the warm caches. Returns whether it
    applies (the attribute is Inductor's autotune_local_cache)."""
    if job.get("cached_autotune"):
        return False
    import torch._inductor.config as icfg
    if not hasattr(icfg, "autotune_local_cache"):
        return False
    icfg.autotune_local_cache = False
    return True


def load_problem(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("kb_problem", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kb_problem"] = mod
    spec.loader.exec_module(mod)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            raise AttributeError(f"the problem file defines no {name}")
    return mod


def build_model(torch, mod, seed):
    torch.manual_seed(seed)
    init = mod.get_init_inputs()
    return mod.Model(*init).eval()


def shape_inputs(torch, mod, seed):
    """get_inputs() as shapes only: drawn on the meta device (no memory, no
    time), then made fake CPU tensors for torch.export; where get_inputs()
    will not run on meta, a real CPU draw. Returns (args, how)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    torch.manual_seed(seed)
    try:
        with torch.device("meta"):
            meta = list(mod.get_inputs())
    except Exception:  # noqa: BLE001 - fall back to real data
        torch.manual_seed(seed)
        return list(mod.get_inputs()), "real"
    fm = FakeTensorMode(allow_non_fake_inputs=True)
    out = []
    with fm:
        for a in meta:
            if isinstance(a, torch.Tensor):
                out.append(torch.empty_strided(tuple(a.shape), tuple(a.stride()), dtype=a.dtype, device="cpu"))
            else:
                out.append(a)
    return out, "fake"


def draw_inputs(torch, mod, seed, device):
    """a fresh draw of get_inputs(), generated on the device where the
    problem's code allows (CPU draws of GB-sized inputs take seconds)"""
    torch.manual_seed(seed)
    try:
        with torch.device(device):
            args = list(mod.get_inputs())
    except Exception:  # noqa: BLE001
        torch.manual_seed(seed)
        args = list(mod.get_inputs())
    return [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]


def split_args(torch, args):
    """(tensor args, template): the module takes the tensors; the template
    keeps the other inputs (constants bound at export)"""
    for a in args:
        if not isinstance(a, torch.Tensor) and isinstance(a, (list, tuple, dict)):
            flat = a.values() if isinstance(a, dict) else a
            if any(isinstance(x, torch.Tensor) for x in flat):
                raise TypeError("an input is a container of tensors: not supported by the runner")
    return [a for a in args if isinstance(a, torch.Tensor)]


def bound_model(torch, model, args):
    """model itself when every input is a tensor, else a module taking the
    tensors alone and passing the other inputs as constants"""
    if all(isinstance(a, torch.Tensor) for a in args):
        return model

    class Bound(torch.nn.Module):
        def __init__(self, m, tmpl):
            super().__init__()
            self.model = m
            self.tmpl = tmpl

        def forward(self, *tensors):
            it = iter(tensors)
            return self.model(*[next(it) if t is None else t for t in self.tmpl])

    return Bound(model, [None if isinstance(a, torch.Tensor) else a for a in args]).eval()


def kfuse_compile(w, pt2):
    """`kfuse compile` with the report; fills w.res and returns the .so or None"""
    j = w.job
    so = os.path.join(j["dir"], "kfuse.so")
    rep = os.path.join(j["dir"], "kfuse.report.json")
    # cold compiles: the kernel cache only when the flags ask for one
    cache = [] if any(a.startswith("--cache") or a == "--no-cache" for a in j["compile_args"]) else ["--no-cache"]
    cmd = [j["kfuse"], "compile", pt2, "-o", so, "-q"] + (["--report", rep] if j["report"] else []) \
        + j["compile_args"] + cache
    env = dict(os.environ)
    cd = cudnn_dir()
    if cd:
        env["LD_LIBRARY_PATH"] = cd + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=j["compile_timeout"], env=env)
    except subprocess.TimeoutExpired:
        w.res["compile_s"] = round(time.perf_counter() - t0, 3)
        w.res["compile_error"] = f"kfuse compile timed out after {j['compile_timeout']} s"
        return None
    w.res["compile_s"] = round(time.perf_counter() - t0, 3)
    w.res["compile_rc"] = r.returncode
    if os.path.exists(rep):
        try:
            with open(rep) as f:
                text = f.read()
            w.res["tf32"] = "tf32" in text.lower()
            w.res.update(report_fields(json.loads(text)))
        except (OSError, ValueError) as e:
            w.res["report_error"] = f"{type(e).__name__}: {e}"[:300]
    if r.returncode != 0:
        how = f"exited with {r.returncode}"
        if r.returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-r.returncode).name}"
            except ValueError:
                pass
        text = error_lines(scrub(w, r.stderr or r.stdout))
        w.res["compile_error"] = f"kfuse compile {how}" + (f": {text}" if text else "") if r.returncode < 0 or \
            not text else text
        return None
    if not os.path.exists(so):
        w.res["compile_error"] = "kfuse compile exited 0 but wrote no module"
        return None
    return so


def report_fields(rep):
    out = {k: rep.get(k) for k in ("groups", "unique_units", "steps_per_run", "arena_bytes", "scratch_bytes",
                                   "weights_bytes", "precision", "units_judged", "units_verified",
                                   "units_replaced") if k in rep}
    out["searched_groups"] = sum(1 for g in rep.get("group_list", []) if isinstance(g.get("candidates"), list))
    kinds = {}
    for g in rep.get("group_list", []):
        kinds[g.get("kind")] = kinds.get(g.get("kind"), 0) + 1
    out["group_kinds"] = kinds
    return out


_CUDNN = []


def cudnn_dir():
    """cuDNN 9's lib folder from the pip package PyTorch uses (modules with
    convolutions load it), else torch's lib folder (as gpu_test.sh finds it)"""
    if _CUDNN:
        return _CUDNN[0]
    import glob
    d = None
    try:
        import nvidia.cudnn as c
        ds = [os.path.join(p, "lib") for p in c.__path__ if glob.glob(os.path.join(p, "lib", "libcudnn.so.9*"))]
        d = ds[0] if ds else None
    except ImportError:
        pass
    if d is None:
        try:
            import torch
            d = os.path.join(os.path.dirname(torch.__file__), "lib")
        except ImportError:
            d = None
    _CUDNN.append(d)
    return d


EXPORT_KEYS = ("exported", "export_s", "export_inputs", "non_tensor_inputs", "pt2_bytes", "export_workaround",
               "export_workaround_error")
COMPILE_KEYS = ("compiled", "compile_s", "compile_rc", "compile_error", "report_error", "tf32", "groups",
                "unique_units", "steps_per_run", "arena_bytes", "scratch_bytes", "weights_bytes", "precision",
                "units_judged", "units_verified", "units_replaced", "searched_groups", "group_kinds")


def as_buffers(torch, model):
    """plain tensor attributes (not parameters or buffers) of every submodule
    registered as non-persistent buffers: what torch.export asks of a model
    that assigns such an attribute in forward ("Constant ... is mutated in
    the forward method. Pls register it as buffer"); eager is unchanged"""
    names = []
    for mname, m in model.named_modules():
        for k, v in list(vars(m).items()):
            if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
                delattr(m, k)
                m.register_buffer(k, v, persistent=False)
                names.append(f"{mname}.{k}" if mname else k)
    return names


def export_stage(w, torch, mod):
    """build the model on the CPU (the weights seed) and kfuse.export it on
    shape-only inputs; the exported model is dropped after (torch.export runs
    forward on fake tensors, which a stateful model may keep in its
    attributes; eager gets a model of its own, built the same way). Returns
    the .pt2 or None (status set: eager-fail if the model cannot be built,
    else export-fail). The runner's own shortcuts and adaptations are retried
    without blame: fake inputs that do not export are replaced by a real
    draw, and a model that assigns a plain tensor attribute in forward gets
    it as a buffer; the error reported is that of the plain export on real
    inputs."""
    import kfuse
    j = w.job
    w.stage("init")
    try:
        m = build_model(torch, mod, j["seed"])
        w.res["param_bytes"] = nbytes_of(torch, list(m.parameters()) + list(m.buffers()))
    except Exception as e:  # noqa: BLE001
        w.fail("eager-fail", e, final=False)
        return None
    w.stage("export")
    pt2 = os.path.join(j["dir"], "model.pt2")
    t0 = time.perf_counter()
    inputs, buffers, errors = "fake", False, []
    while True:
        try:
            if inputs == "fake":
                args, inputs = shape_inputs(torch, mod, j["seed"] + 1)
            else:
                args = draw_inputs(torch, mod, j["seed"] + 1, "cpu")
            tensors = split_args(torch, args)
            if m is None:
                m = build_model(torch, mod, j["seed"])
            if buffers:
                w.res["export_workaround"] = "tensor attributes registered as buffers: " + ", ".join(
                    as_buffers(torch, m))
            kfuse.export(bound_model(torch, m, args), tensors, pt2)
            break
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exception(e)
            errors.append((inputs, buffers, e))
            m = args = tensors = None
            if "is mutated in the forward method" in str(e) and not buffers:
                buffers = True
            elif inputs == "fake":
                inputs = "real"
            else:
                plain = [x for x in errors if not x[1]]
                e0 = (plain[-1] if plain else errors[-1])[2]
                w.res.pop("export_workaround", None)
                w.res.update(exported=False, export_s=round(time.perf_counter() - t0, 3), status="export-fail",
                             export_inputs=inputs, error=error_lines(scrub(w, f"{type(e0).__name__}: {e0}")))
                if buffers and plain:
                    w.res["export_workaround_error"] = error_lines(scrub(w, f"{type(e).__name__}: {e}"), 2)
                return None
            print(f"-- export again: {inputs} inputs" + (", tensor attributes as buffers" if buffers else ""),
                  flush=True)
    w.res.update(exported=True, export_s=round(time.perf_counter() - t0, 3), pt2_bytes=os.path.getsize(pt2),
                 export_inputs=inputs + (" (fake failed)" if inputs == "real" and errors and
                                         errors[0][0] == "fake" else ""),
                 non_tensor_inputs=len(args) - len(tensors))
    return pt2


def compile_stage(w, pt2):
    """`kfuse compile` of the .pt2 (removed after unless --keep-work);
    returns the .so or None (status compile-fail)"""
    w.stage("compile")
    so = kfuse_compile(w, pt2)
    if not w.job.get("keep_work"):
        os.remove(pt2)
    w.res["compiled"] = so is not None
    if so is None:
        w.res["status"] = "compile-fail"
        w.res["error"] = w.res.get("compile_error")
    return so


def scrub(w, text):
    """error text without this machine's paths (work folder, problem folder,
    repository, torch's install)"""
    j = w.job
    subs = [(j.get("dir"), "<work>"), (os.path.abspath(os.path.join(HERE, "..")), "<repo>")]
    if j.get("problem"):
        subs.append((os.path.dirname(os.path.dirname(j["problem"]["path"])), "<kb>"))
    tm = sys.modules.get("torch")
    if tm is not None:
        subs.append((os.path.dirname(os.path.dirname(tm.__file__)), "<site-packages>"))
    for a, b in subs:
        if a:
            text = text.replace(a, b)
    return text


def worker_probe(w):
    import torch
    w.res.update(torch=torch.__version__, cuda_available=torch.cuda.is_available())
    w.save(final=True)


def worker_cpu_check(w):
    j = w.job
    w.stage("import")
    try:
        torch = _setup_torch(j)
        w.res["torch"] = torch.__version__
        mod = load_problem(j["problem"]["path"])
    except Exception as e:  # noqa: BLE001
        return w.fail("eager-fail", e)
    pt2 = export_stage(w, torch, mod)
    if pt2 is not None and compile_stage(w, pt2) is not None:
        w.res["status"] = "ok"
        w.stage("done")
    w.save(final=True)


class Clock:
    """GPU time of a callable, CUDA events, spin kernel ahead, L2 flushed"""

    def __init__(self, torch, budget, min_runs, max_runs, warmup=3):
        self.torch = torch
        self.budget, self.min_runs, self.max_runs, self.warmup = budget, min_runs, max_runs, warmup
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)
        self.flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.cuda._sleep(5_000_000)
        e1.record()
        e1.synchronize()
        self.cycles_per_ms = 5_000_000 / max(e0.elapsed_time(e1), 1e-3)

    def time(self, fn, sets):
        torch = self.torch
        n = len(sets)
        for i in range(self.warmup):
            fn(*sets[i % n])
        torch.cuda.synchronize()
        host = []
        for i in range(3):
            t0 = time.perf_counter()
            fn(*sets[i % n])
            host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        host_ms = statistics.median(host)
        spin_ms = min(max(1.5 * host_ms + 0.2, 0.5), 200.0)
        cycles = int(spin_ms * self.cycles_per_ms)
        times = []
        start = time.perf_counter()
        while True:
            a = sets[len(times) % n]
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(cycles)
            self.flush.zero_()
            e0.record()
            fn(*a)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
            if len(times) >= self.max_runs or (len(times) >= self.min_runs and
                                               time.perf_counter() - start >= self.budget):
                break
        times.sort()
        k = len(times)
        return {"median": statistics.median(times), "p10": times[int(0.1 * (k - 1))],
                "p90": times[int(math.ceil(0.9 * (k - 1)))], "mean": statistics.fmean(times), "min": times[0],
                "runs": k, "host_ms": round(host_ms, 4), "spin_ms": round(spin_ms, 3),
                "seconds": round(time.perf_counter() - start, 3)}


def worker_ceilings(w):
    """the roofline's ceilings, measured as scripts/bench.py measures them
    (its own function), so both harnesses' floors compare"""
    torch = _setup_torch(w.job)
    try:
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device visible to PyTorch")
        props = torch.cuda.get_device_properties(0)
        w.res.update(device=torch.cuda.get_device_name(), torch=torch.__version__, cuda=torch.version.cuda,
                     cudnn=torch.backends.cudnn.version(), l2_bytes=getattr(props, "L2_cache_size", None),
                     sm_count=props.multi_processor_count, memory_bytes=props.total_memory)
        from bench import ceilings
        w.res["copy_bw"], w.res["gemm_rate"], w.res["gemm_rate_tf32"] = ceilings()
    except Exception as e:  # noqa: BLE001
        return w.fail("crash", e)
    w.save(final=True)


def leaves(torch, out):
    import torch.utils._pytree as pytree
    return [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


def compare(torch, got, want, atol, rtol):
    """one output against eager's, in chunks (outputs can be GBs): allclose
    verdict and error figures"""
    r = {"shape": list(want.shape)}
    if tuple(got.shape) != tuple(want.shape):
        r.update(ok=False, why=f"shape {list(got.shape)}, eager {list(want.shape)}")
        return r
    if got.dtype != want.dtype:
        r.update(ok=False, why=f"dtype {got.dtype}, eager {want.dtype}")
        return r
    g, wt = got.reshape(-1), want.reshape(-1)
    n = wt.numel()
    if not wt.is_floating_point():
        bad = int((g != wt).sum().item()) if n else 0
        r.update(ok=bad == 0, bad=bad, n=n, max_abs_err=0.0 if bad == 0 else float("inf"), max_rel_err=0.0
                 if bad == 0 else float("inf"), exact=True)
        return r
    max_abs = max_rel = ref_max = 0.0
    bad = nonfin = 0
    sd = sr = 0.0
    step = 1 << 24
    for i in range(0, n, step):
        gd, wd = g[i:i + step].double(), wt[i:i + step].double()
        fw, fg = torch.isfinite(wd), torch.isfinite(gd)
        both = fw & fg
        nf = ~both
        if bool(nf.any()):
            same = (torch.isnan(gd) & torch.isnan(wd)) | (gd == wd)
            nonfin += int((nf & ~same).sum().item())
        d = torch.where(both, (gd - wd).abs(), torch.zeros_like(gd))
        aw = torch.where(fw, wd.abs(), torch.zeros_like(wd))
        bad += int((d > atol + rtol * aw).sum().item())
        if d.numel():
            max_abs = max(max_abs, d.max().item())
            max_rel = max(max_rel, (d / aw.clamp(min=atol)).max().item())
            ref_max = max(ref_max, aw.max().item())
            sd += float((d * d).sum().item())
            sr += float((aw * aw).sum().item())
    bad += nonfin
    r.update(ok=bad == 0, bad=bad, n=n, nonfinite_mismatch=nonfin, max_abs_err=max_abs, max_rel_err=max_rel,
             rel_err_norm=math.sqrt(sd) / max(math.sqrt(sr), 1e-30), ref_absmax=ref_max)
    if bad:
        r["why"] = f"{bad} of {n} elements out of tolerance" + (f" ({nonfin} non-finite differ)" if nonfin else "")
    return r


def compare_all(torch, got, want, tol):
    gl, wl = leaves(torch, got), leaves(torch, want)
    if len(gl) != len(wl):
        return {"ok": False, "why": f"{len(gl)} outputs, eager {len(wl)}"}
    rs = []
    for g, wv in zip(gl, wl):
        t = tol if wv.dtype in (torch.float32, torch.float64) else max(tol, 1e-2)
        rs.append(compare(torch, g, wv, t, t))
    out = {"ok": all(x["ok"] for x in rs), "outputs": rs}
    for k in ("max_abs_err", "max_rel_err", "rel_err_norm", "ref_absmax"):
        vals = [x[k] for x in rs if k in x]
        out[k] = max(vals) if vals else None
    bad = [f"output {i}: {x['why']}" for i, x in enumerate(rs) if not x["ok"]]
    if bad:
        out["why"] = "; ".join(bad)
    return out


# fp64_verdict's aggregate rule: kfuse's count of elements out of tolerance
# of fp64, largest error and error norm may each exceed eager's by 10%
AGG_SLACK = 1.1


def fp64_verdict(torch, model, inputs, got, want, tol):
    """A draw where kfuse and eager disagree beyond tolerance, judged
    against the model run in float64 (a copy, on the GPU): kfuse passes when
    every element is within tolerance of the fp64 result or no further from
    it than eager's own element. Algebraic rewrites (a sum over a product's
    columns taken as a product of the summed columns) round differently
    from eager and can be more accurate than it; this tells those from
    errors. Where some elements fail that test, kfuse still passes when it
    is as accurate as eager by every aggregate measure against fp64, up to
    AGG_SLACK (rounding-order noise): elements out of tolerance of fp64,
    largest error and error norm. Ill-conditioned outputs need this:
    KernelBench L3 48 (Mamba2's exp of cumulative sums, values to 3e20) had
    eager itself out of tolerance of fp64 on 78,395 elements, kfuse on
    79,590, with kfuse's error norm 0.56x eager's and its largest error
    0.70x (H100, 2026-11-25); the record says rule "aggregate". Returns {ok, bad, n, kfuse_vs_fp64,
    eager_vs_fp64, kfuse_bad_fp64, eager_bad_fp64, kfuse_norm_fp64,
    eager_norm_fp64, rule} or {error}."""
    import copy
    try:
        m64 = copy.deepcopy(model).double()
        ins = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
        with torch.no_grad():
            ref = m64(*ins)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {first_line(str(e))}"}
    gl, wl, rl = leaves(torch, got), leaves(torch, want), leaves(torch, ref)
    if not (len(gl) == len(wl) == len(rl)):
        return {"error": "output counts differ"}
    bad = n = kbad = ebad = 0
    dk_max = de_max = 0.0
    sk = se = sr = 0.0
    for g, wv, r in zip(gl, wl, rl):
        if not wv.is_floating_point():
            return {"error": "a non-float output differs"}
        g, wv, r = g.reshape(-1), wv.reshape(-1), r.reshape(-1)
        step = 1 << 24
        for i in range(0, r.numel(), step):
            gd, wd, rd = g[i:i + step].double(), wv[i:i + step].double(), r[i:i + step]
            dk, de = (gd - rd).abs(), (wd - rd).abs()
            lim = torch.maximum(de, tol + tol * rd.abs())
            nan_ok = torch.isnan(gd) == torch.isnan(rd)
            bad += int((~((dk <= lim) | (torch.isnan(dk) & torch.isnan(rd))) | ~nan_ok).sum().item())
            n += rd.numel()
            tl = tol + tol * rd.abs()
            both_nan = torch.isnan(rd)
            kbad += int((~((dk <= tl) | (both_nan & torch.isnan(gd)))).sum().item())
            ebad += int((~((de <= tl) | (both_nan & torch.isnan(wd)))).sum().item())
            fin_r = torch.isfinite(rd)
            sk += float((torch.nan_to_num(dk, nan=float("inf"))[fin_r] ** 2).sum().item())
            se += float((torch.nan_to_num(de, nan=float("inf"))[fin_r] ** 2).sum().item())
            sr += float((rd[fin_r] ** 2).sum().item())
            fin = torch.isfinite(dk) & torch.isfinite(de)
            if bool(fin.any()):
                dk_max = max(dk_max, dk[fin].max().item())
                de_max = max(de_max, de[fin].max().item())
    del m64, ref
    nk, ne = math.sqrt(sk) / max(math.sqrt(sr), 1e-30), math.sqrt(se) / max(math.sqrt(sr), 1e-30)
    out = {"ok": bad == 0, "bad": bad, "n": n, "kfuse_vs_fp64": dk_max, "eager_vs_fp64": de_max,
           "kfuse_bad_fp64": kbad, "eager_bad_fp64": ebad, "kfuse_norm_fp64": nk, "eager_norm_fp64": ne,
           "rule": "elementwise"}
    if bad and kbad <= AGG_SLACK * ebad and dk_max <= AGG_SLACK * de_max and nk <= AGG_SLACK * ne:
        out.update(ok=True, rule="aggregate")
    return out


def clone_all(torch, xs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def same_inputs(torch, a, b):
    return all(torch.equal(x, y) if isinstance(x, torch.Tensor) else True for x, y in zip(a, b))


def nbytes_of(torch, tensors):
    seen, n = set(), 0
    for t in tensors:
        key = (t.untyped_storage().data_ptr(), t.dtype, tuple(t.shape)) if t.device.type != "meta" else id(t)
        if key in seen:
            continue
        seen.add(key)
        n += t.numel() * t.element_size()
    return n


def worker_warm(w):
    """torch.compile each mode once (fills Inductor's caches); with
    warm_export also kfuse.export, with warm_kfuse also `kfuse compile`,
    for the timing phase (kfuse.warm.json in the problem's work folder)"""
    j = w.job
    errors = []
    try:
        w.stage("import")
        torch = _setup_torch(j)
        mod = load_problem(j["problem"]["path"])
        if j.get("warm_export") or j.get("warm_kfuse"):
            pt2 = export_stage(w, torch, mod)
            so = None
            if pt2 is not None and j.get("warm_kfuse"):
                w.stage("compile")
                so = kfuse_compile(w, pt2)
                w.res["compiled"] = so is not None
                if so is not None and not j.get("keep_work"):
                    os.remove(pt2)  # else kept: the timing phase compiles it again, serially
                    pt2 = None
            if pt2 is not None and so is None and os.path.getsize(pt2) > j.get("warm_export_max_mb", 1024) << 20:
                # exports wait on disk for the timing phase: the big ones
                # (GBs of weights) are exported again there instead
                os.remove(pt2)
                pt2 = None
                w.res["warm_export_dropped"] = True
            meta = {k: w.res[k] for k in EXPORT_KEYS + COMPILE_KEYS + ("status", "error") if k in w.res}
            meta.update(pt2=pt2, so=so)
            w.res["kfuse"] = meta
            with open(os.path.join(j["dir"], "kfuse.warm.json"), "w") as f:
                json.dump(meta, f)
            for k in ("status", "error"):
                w.res.pop(k, None)
        if j.get("warm_modes"):
            w.stage("compile-warm")
            model = build_model(torch, mod, j["seed"]).cuda()
            args = draw_inputs(torch, mod, j["seed"] + 2, "cuda")
            with torch.no_grad():
                for mode in j["warm_modes"]:
                    try:
                        torch._dynamo.reset()
                        cm = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
                        cm(*args)
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001
                        errors.append(f"{mode}: {type(e).__name__}: {first_line(str(e))}")
    except Exception as e:  # noqa: BLE001
        errors.append(f"{type(e).__name__}: {first_line(str(e))}")
    if errors:
        w.res["error"] = scrub(w, "\n".join(errors))
    w.save(final=True)


def kfuse_stages(w, torch, mod):
    """export + compile: taken from the warm phase where it did them
    (kfuse.warm.json), else done here, serially and cold; returns the .so or
    None (status set)"""
    warm = w.job.get("warm_meta")
    meta = None
    if warm and os.path.exists(warm):
        with open(warm) as f:
            meta = json.load(f)
    if meta and meta.get("so") and os.path.exists(meta["so"]):
        w.res.update({k: meta[k] for k in EXPORT_KEYS + COMPILE_KEYS if k in meta})
        w.res["compile_in_warm_phase"] = True
        return meta["so"]
    if meta and meta.get("pt2") and os.path.exists(meta["pt2"]):
        w.res.update({k: meta[k] for k in EXPORT_KEYS if k in meta})
        w.res["export_in_warm_phase"] = True
        return compile_stage(w, meta["pt2"])
    if meta and meta.get("exported") is False:
        w.res.update({k: meta[k] for k in EXPORT_KEYS + ("status", "error") if k in meta})
        w.res["export_in_warm_phase"] = True
        return None
    pt2 = export_stage(w, torch, mod)
    return compile_stage(w, pt2) if pt2 is not None else None


def worker_problem(w):
    j = w.job
    p = j["problem"]
    w.stage("import")
    try:
        torch = _setup_torch(j)
        import kfuse
        w.res.update(torch=torch.__version__, device=torch.cuda.get_device_name())
        mod = load_problem(p["path"])
    except Exception as e:  # noqa: BLE001
        return w.fail("eager-fail", e)

    so = kfuse_stages(w, torch, mod)
    kfuse_failed = so is None
    if w.res.get("status") == "eager-fail":
        w.save(final=True)
        return
    w.save()

    # eager: its own model (the same seed as the exported one), fresh inputs, on the GPU
    w.stage("eager")
    tol_reason = []
    try:
        model = build_model(torch, mod, j["seed"]).cuda()
        sets = [draw_inputs(torch, mod, j["seed"] + 2 + k, "cuda") for k in range(2)]
        with torch.no_grad():
            want0 = model(*clone_all(torch, sets[0]))
            torch.cuda.synchronize()
            want0b = model(*clone_all(torch, sets[0]))
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        return w.fail("eager-fail", e)
    if kfuse_failed:
        w.res["stage"] = "compile" if w.res.get("exported") else "export"  # where kfuse failed
        if not j.get("time_failed"):
            w.save(final=True)
            return

    tol = 1e-4
    if w.res.get("tf32"):
        tol_reason.append("the kfuse report mentions TF32")
    try:
        with torch.no_grad():
            from bench import flops_of  # (all flops, convolution flops), as scripts/bench.py counts them
            flops, conv = flops_of(model, clone_all(torch, sets[0]))
    except Exception as e:  # noqa: BLE001
        flops, conv = None, 0
        w.res["flops_error"] = f"{type(e).__name__}: {first_line(str(e))}"
    if conv:
        tol_reason.append("eager's convolutions run in TF32")
    if tol_reason:
        tol = 2e-3
    w.res["tol"] = tol
    w.res["tol_reason"] = "; ".join(tol_reason) or "fp32"
    selfcheck = compare_all(torch, want0b, want0, tol)
    w.res["eager_deterministic"] = selfcheck["ok"]
    if not selfcheck["ok"]:
        w.res["eager_selfcheck"] = selfcheck.get("why")
    del want0b

    # floor
    ceil = j["ceilings"]
    tens = split_args(torch, sets[0])
    nbytes = nbytes_of(torch, tens) + nbytes_of(torch, list(model.parameters()) + list(model.buffers())) \
        + nbytes_of(torch, leaves(torch, want0))
    t_bytes = nbytes / ceil["copy_bw"] * 1e3
    t_flops = ((flops - conv) / ceil["gemm_rate"] + conv / ceil["gemm_rate_tf32"]) * 1e3 if flops is not None else 0.0
    w.res.update(bytes=nbytes, flops=flops, conv_flops=conv, floor_ms=max(t_bytes, t_flops),
                 floor_bytes_ms=t_bytes, floor_flops_ms=t_flops if flops is not None else None,
                 memory_bound=t_bytes >= t_flops if flops is not None else None)

    kmod = None
    if not kfuse_failed:
        w.stage("load")
        try:
            kmod = kfuse.load(so)
        except Exception as e:  # noqa: BLE001
            if not j.get("time_failed"):
                return w.fail("load-fail", e)
            w.res.update(status="load-fail", error=error_lines(scrub(w, f"{type(e).__name__}: {e}")))

    if kmod is not None:
        w.stage("check")
        checks = []
        for k, s in enumerate(sets):
            try:
                with torch.no_grad():
                    want = want0 if k == 0 else model(*clone_all(torch, s))
                    pristine = clone_all(torch, s)
                    got = kmod(*split_args(torch, s))
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                w.res["check"] = checks
                if not j.get("time_failed"):
                    return w.fail("run-fail", e)
                w.res.update(status="run-fail", error=error_lines(scrub(w, f"{type(e).__name__}: {e}")))
                kmod = None
                break
            c = compare_all(torch, got, want, tol)
            if not same_inputs(torch, s, pristine):
                c["ok"] = False
                c["why"] = (c.get("why", "") + "; " if c.get("why") else "") + "kfuse changed its inputs"
            elif not c["ok"]:
                v = fp64_verdict(torch, model, clone_all(torch, s), got, want, tol)
                c["fp64"] = v
                if v.get("ok"):
                    c["ok"] = True
                    c["judged_by_fp64"] = True
                    c["why_eager"] = c.pop("why", None)
            if c["ok"]:
                c.pop("outputs", None)  # the per-output figures only where something failed
            checks.append(c)
            del got, pristine
            if k > 0:
                del want
        w.res["check"] = checks
        if any(c.get("judged_by_fp64") for c in checks):
            w.res["judged_by_fp64"] = True
        for key in ("max_abs_err", "max_rel_err", "rel_err_norm", "ref_absmax"):
            vals = [c.get(key) for c in checks if c.get(key) is not None]
            w.res[key] = max(vals) if vals else None
        if kmod is not None and not all(c["ok"] for c in checks):
            why = "; ".join(f"draw {i + 1}: {c.get('why')}" for i, c in enumerate(checks) if not c["ok"])
            if not w.res.get("eager_deterministic", True):
                why += " (eager disagrees with itself: " + str(w.res.get("eager_selfcheck")) + ")"
            w.res.update(status="mismatch", error=error_lines(f"mismatch: {why}"))
            if not j.get("time_failed"):
                w.save(final=True)
                return
            kmod = None
    del want0
    torch.cuda.empty_cache()

    # time: eager, torch.compile modes, kfuse
    clock = Clock(torch, j["budget"], j["min_runs"], j["max_runs"])
    reuse = j.get("reuse") or {}
    watch = GpuWatch(torch)
    watch.sample()
    with torch.no_grad():
        w.stage("time-eager")
        if reuse.get("eager"):
            w.res["eager"] = dict(reuse["eager"], reused_from=reuse.get("run_id"))
        else:
            try:
                w.res["eager"] = clock.time(model, sets)
            except Exception as e:  # noqa: BLE001
                w.res["eager"] = {"error": f"{type(e).__name__}: {first_line(str(e))}"}
        watch.sample()
        w.save()
        for mode in j["modes"]:
            key = mode_key(mode)
            w.stage(f"time-{key}")
            old = (reuse.get("compile") or {}).get(mode)
            if old:
                w.res[key] = dict(old, reused_from=reuse.get("run_id"))
                continue
            try:
                torch._dynamo.reset()
                fresh = fresh_autotune(torch, j)
                cm = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
                t0 = time.perf_counter()
                cm(*sets[0])
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                w.res[key] = clock.time(cm, sets)
                w.res[key]["first_call_s"] = round(first, 3)
                w.res[key]["autotune"] = "fresh" if fresh else "cached"
            except Exception as e:  # noqa: BLE001
                w.res[key] = {"error": f"{type(e).__name__}: {first_line(str(e))}"}
            watch.sample()
            w.save()
            torch.cuda.empty_cache()
        if kmod is not None:
            w.stage("time-kfuse")
            ksets = [split_args(torch, s) for s in sets]
            try:
                w.res["kfuse"] = clock.time(kmod, ksets)
            except Exception as e:  # noqa: BLE001
                return w.fail("run-fail", e)
            watch.sample()
    # processes on the GPU while timing (this one included); None: not known
    w.res["gpu_processes"] = watch.result()

    def med(k):
        v = w.res.get(k)
        return v.get("median") if isinstance(v, dict) else None
    w.res["eager_ms"] = med("eager")
    w.res["compile_ms"] = med("compile")
    for mode in j["modes"]:
        if mode != "default":
            w.res[f"{mode_key(mode)}_ms"] = med(mode_key(mode))
    k = med("kfuse")
    w.res["kfuse_ms"] = k
    if k:
        e, c = w.res["eager_ms"], w.res["compile_ms"]
        w.res["speedup_eager"] = e / k if e else None
        w.res["speedup_compile"] = c / k if c else None
        w.res["floor_frac"] = w.res["floor_ms"] / k if w.res.get("floor_ms") else None
    w.res.setdefault("status", "ok")
    w.stage("done")
    w.save(final=True)


def worker_main(job_path):
    with open(job_path) as f:
        job = json.load(f)
    w = Worker(job)
    kind = job["kind"]
    try:
        {"probe": worker_probe, "cpu-check": worker_cpu_check, "ceilings": worker_ceilings,
         "warm": worker_warm, "problem": worker_problem}[kind](w)
    except BaseException as e:  # noqa: BLE001 - recorded, with the stage it reached
        if isinstance(e, KeyboardInterrupt):
            raise
        w.fail("crash", e)
    return 0


# ---- command line -------------------------------------------------------------------------

def main():
    class Fmt(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        pass
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=Fmt,
                                 epilog="The method, the outputs and the statuses: the docstring at the top of "
                                        "this file and docs/PERFORMANCE.md (KernelBench runner).")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--kb", help="folder with level1/ level2/ level3/ (scripts/kb_fetch.sh)")
    ap.add_argument("--kfuse", help="the kfuse binary")
    ap.add_argument("--out", help="results.jsonl, summary.md, summary.json, reports/, logs/ go here")
    ap.add_argument("--work", help="per-problem exports and modules (default: a temp dir, removed)")
    ap.add_argument("--keep-work", action="store_true", help="keep the .pt2/.so of every problem in --work")
    ap.add_argument("--level", default="", help="levels to run, e.g. 1,2")
    ap.add_argument("--only", default="", help="problems to run, e.g. L1/19,L2/43")
    ap.add_argument("--skip", default="", help="problems to leave out, e.g. L3/36,L3/37")
    ap.add_argument("--shard", default="", help="K/N: the K-th (from 1) of N round-robin parts of the selection")
    ap.add_argument("--shard-costs", metavar="OLD.jsonl",
                    help="--shard splits by the seconds each problem took in OLD (longest first, to the least "
                         "loaded shard) instead of round-robin")
    ap.add_argument("--list", action="store_true", help="print the selected problems and stop")
    ap.add_argument("--redo", action="store_true", help="run problems already in results.jsonl again")
    ap.add_argument("--redo-status", default="", help="run again those recorded with these statuses "
                    "(e.g. timeout,crash)")
    ap.add_argument("--no-fork-server", action="store_true",
                    help="start every worker as a fresh Python (default: forked from a server that has torch "
                         "imported once)")
    ap.add_argument("--summarize", action="store_true", help="rebuild summary.md/json from results.jsonl and stop")
    ap.add_argument("--cpu-check", action="store_true", help="export and kfuse compile on the CPU only: no GPU, "
                    "no forward pass, no timing")
    ap.add_argument("--jobs", type=int, default=2, help="--cpu-check: problems at a time")
    ap.add_argument("--compile-args", default="", help="extra `kfuse compile` flags, e.g. --no-judge")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds a problem's process may take (default 480; --cpu-check 300)")
    ap.add_argument("--compile-timeout", type=float, default=300, help="seconds `kfuse compile` may take")
    ap.add_argument("--deadline", type=float, default=None,
                    help="seconds from the start after which nothing new starts and a running problem is cut "
                         "(not recorded; it runs again on resume)")
    ap.add_argument("--seed", type=int, default=42, help="weights seed; export shapes seed+1, checks seed+2, +3")
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of timed runs per variant (wall)")
    ap.add_argument("--min-runs", type=int, default=10)
    ap.add_argument("--max-runs", type=int, default=100)
    ap.add_argument("--modes", default="default", help="torch.compile modes to time, comma-separated")
    ap.add_argument("--max-autotune", action="store_true", help='also time torch.compile(mode="max-autotune")')
    ap.add_argument("--cached-autotune", action="store_true",
                    help="the timed torch.compile takes the run-time autotuning choices the warm jobs cached "
                         "(made beside other warm jobs on the GPU) instead of making them again")
    ap.add_argument("--no-compile", action="store_true", help="do not time torch.compile at all")
    ap.add_argument("--time-failed", action="store_true",
                    help="time eager and torch.compile also where kfuse failed or mismatched")
    ap.add_argument("--warm-jobs", type=int, default=0,
                    help="N parallel workers fill torch.compile's caches before the timing phase")
    ap.add_argument("--warm-export", action="store_true",
                    help="the warm workers also kfuse.export (CPU only; the timing phase compiles, serially)")
    ap.add_argument("--warm-export-max-mb", type=int, default=1024,
                    help="warm exports larger than this are not kept (exported again when timed): the disk")
    ap.add_argument("--warm-kfuse", action="store_true",
                    help="the warm workers also export and `kfuse compile` (in parallel, so GPU tuning is under "
                         "contention; see --compile-args=--no-judge)")
    ap.add_argument("--warm-only", action="store_true", help="stop after the warm phase")
    ap.add_argument("--warm-background", type=int, default=0, metavar="N",
                    help="N warm workers: the GPU warm-ups (torch.compile, --warm-kfuse) before the timing, "
                         "the CPU-only exports (--warm-export) beside it; each problem is timed once its own "
                         "export is done")
    ap.add_argument("--inductor-cache", help="TORCHINDUCTOR_CACHE_DIR for every worker (e.g. inside --out)")
    ap.add_argument("--reuse-baselines", metavar="OLD.jsonl", action="append",
                    help="reuse eager/compile times of an earlier results.jsonl after a drift check (given "
                         "more than once: a later file's record of a problem replaces an earlier one's)")
    ap.add_argument("--drift-sample", type=int, default=8, help="problems re-timed in full to check the drift")
    ap.add_argument("--drift-max", type=float, default=0.05, help="largest drift (median new/old - 1) accepted")
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)
    if args.summarize:
        if not args.out:
            ap.error("--summarize needs --out")
        if not os.path.exists(os.path.join(args.out, "results.jsonl")):
            raise SystemExit(f"kernelbench: {args.out}/results.jsonl does not exist")
        summ = write_summary(args.out)
        print(f"wrote {args.out}/summary.md and summary.json ({len(summ['problems'])} problems)")
        return 0
    if args.shard_costs and not args.shard:
        ap.error("--shard-costs balances --shard K/N: give --shard too")
    if not args.kb:
        ap.error("--kb DIR is needed")
    problems, root = find_problems(args.kb)
    sel = select(problems, args)
    if args.list:
        for p in sel:
            print(f"{p['id']}\t{p['name']}")
        print(f"{len(sel)} problems")
        return 0
    if not args.out:
        ap.error("--out DIR is needed")
    if not sel:
        raise SystemExit("kernelbench: the selection is empty")
    if args.timeout is None:
        args.timeout = 300.0 if args.cpu_check else 480.0
    if args.warm_only and not args.warm_jobs:
        ap.error("--warm-only needs --warm-jobs N")
    if args.warm_background and (args.warm_only or args.warm_jobs):
        ap.error("--warm-background N replaces --warm-jobs (and has no --warm-only)")
    if args.warm_only and (args.warm_kfuse or args.warm_export) and not args.work:
        ap.error("--warm-only with --warm-export/--warm-kfuse needs --work DIR (what they make must outlive "
                 "this run)")
    if args.cpu_check:
        return cpu_check(args, sel, root)
    return gpu_run(args, sel, root)


if __name__ == "__main__":
    sys.exit(main())
