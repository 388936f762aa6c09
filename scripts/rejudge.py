#!/usr/bin/env python3
"""scripts/rejudge.py — an outside re-judgement of the judge's milestones
(issue 10): for each task, the judge's verdict on a unit is compared with
what PyTorch sees when the same unit runs as a kfuse module.

    python3 scripts/rejudge.py KFUSE TASK_DIR... [--unit NAME] [--out FILE.jsonl] [--budget S]

For each task directory (`kfuse task` wrote it, with model.py):
  1. eager and torch.compile baselines into task.json when it has none
     (kfuse.baselines, the judge's rewards 2 and 3 use them);
  2. `kfuse judge TASK TASK/NAME` (NAME: the unit directory inside the task,
     default "builtin"): the judge's reward;
  3. `kfuse compile TASK/group.mlir --unit KEY=TASK/NAME`: a module whose
     one group runs that unit (judged again there, so only a verified unit
     gets in);
  4. in this process: model.py's Model and the module through kfuse.load on
     three fresh input sets from get_inputs(), compared with the precision
     policy's tolerance; then eager, torch.compile and the module timed
     side by side (kfuse.baselines' clock: CUDA events, a spin kernel ahead,
     L2 flushed, the median); the outside milestone: -1 mismatch, 1 correct,
     2 at least 5% faster than eager, 3 at least 5% faster than
     torch.compile.
The judge's milestone and the outside one agree or not; a line per task and
a summary. Tasks with non-contiguous inputs are skipped (kfuse.load passes
contiguous tensors). Needs a GPU, torch and the kfuse Python package.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
SPEEDUP = 1.05


def contiguous(v):
    st, sh = v["strides"], v["shape"]
    want = 1
    for d in range(len(sh) - 1, -1, -1):
        if sh[d] != 1 and st[d] != want:
            return False
        want *= sh[d]
    return v.get("offset", 0) == 0


def milestone(correct, ms, eager, compiled):
    if not correct:
        return -1
    r = 1
    if ms * SPEEDUP <= eager:
        r = 2
    if ms * SPEEDUP <= compiled:
        r = 3
    return r


def tolerance(precision, tf32_conv):
    return {"tf32": 5e-3, "fp16": 1e-2, "bf16": 2e-2}.get("tf32" if tf32_conv else precision, 1e-4)


def one(kfuse, td, unit_name, budget, work):
    import torch
    import kfuse as kf
    from kfuse import baselines

    task = json.load(open(os.path.join(td, "task.json")))
    rec = {"task": td, "group": task.get("group"), "kind": task.get("kind")}
    if not task.get("model_py"):
        rec["skipped"] = "no model.py: " + task.get("model_py_why", "")
        return rec
    if not all(contiguous(v) for v in task["inputs"] + task["outputs"]):
        rec["skipped"] = "non-contiguous inputs or outputs"
        return rec
    unit = os.path.join(td, unit_name)
    if task.get("baselines", {}).get("eager_ms") is None:
        baselines.measure(td, budget=budget)
        task = json.load(open(os.path.join(td, "task.json")))
    p = subprocess.run([kfuse, "judge", td, unit], capture_output=True, text=True, timeout=900)
    try:
        v = json.loads(p.stdout)
    except ValueError:
        rec["error"] = "no verdict: " + p.stderr[-400:]
        return rec
    rec["judge_reward"] = v.get("reward")
    rec["judge_ms"] = (v.get("candidate") or {}).get("ms")
    rec["judge_baselines"] = v.get("baselines")
    so = os.path.join(work, "g%s.so" % task.get("group"))
    p = subprocess.run([kfuse, "compile", os.path.join(td, "group.mlir"), "-o", so, "-q", "--unit",
                        "%s=%s" % (task["key"], unit)], capture_output=True, text=True, timeout=900)
    if p.returncode:
        rec["outside_reward"] = -1
        rec["outside_why"] = "the module with this unit was not built: " + p.stderr.strip()[-400:]
        rec["agree"] = rec["judge_reward"] == -1
        return rec
    mod = baselines.task_model(td, task)
    tf32_conv = task.get("precision") == "default" and any(o["op"] == "conv" for o in task.get("ops", []))
    tol = tolerance(task.get("precision"), tf32_conv)
    model = mod.Model(*mod.get_init_inputs()).cuda().eval()
    m = kf.load(so)
    worst = 0.0
    correct = True
    with torch.no_grad():
        sets = []
        for k in range(3):
            xs = [x.cuda().contiguous() for x in mod.get_inputs()]
            sets.append(xs)
            want = model(*xs)
            got = m(*xs)
            want = want if isinstance(want, (tuple, list)) else (want,)
            got = got if isinstance(got, (tuple, list)) else (got,)
            for a, b in zip(got, want):
                a64, b64 = a.double(), b.double()
                if a.dtype.is_floating_point:
                    err = (a64 - b64).norm().item() / max(b64.norm().item(), 1e-30)
                    worst = max(worst, err)
                    if not (err <= tol) or bool(torch.isnan(a64).ne(torch.isnan(b64)).any()):
                        correct = False
                elif not torch.equal(a, b):
                    correct = False
        clock = baselines._gpu_clock(torch)
        eager_ms, _ = clock(model, sets[:2], budget)
        compiled = torch.compile(model)
        compile_ms, _ = clock(compiled, sets[:2], budget)
        kfuse_ms, _ = clock(m, sets[:2], budget)
    rec.update({"max_rel_error_norm": worst, "tolerance": tol, "eager_ms": eager_ms, "torch_compile_ms": compile_ms,
                "module_ms": kfuse_ms})
    rec["outside_reward"] = milestone(correct, kfuse_ms, eager_ms, compile_ms)
    rec["agree"] = rec["outside_reward"] == rec["judge_reward"]
    if not rec["agree"] and correct and rec["judge_reward"] > 0:
        # both correct, the milestones differ: at the 5% line when the
        # speed-ups that decide (the judge's against the task's baselines,
        # this one's against the fresh ones) both lie within 1.00 to 1.10
        jb = rec["judge_baselines"] or {}
        jms = rec["judge_ms"] or 0
        pairs = [(jb.get("eager_ms"), eager_ms), (jb.get("torch_compile_ms"), compile_ms)]
        rec["at_threshold"] = any(
            b0 and jms and 1.0 <= b0 / jms <= 1.10 and 1.0 <= b1 / kfuse_ms <= 1.10 for b0, b1 in pairs)
    m.close()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kfuse")
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--unit", default="builtin", help="the unit's directory inside each task (default builtin)")
    ap.add_argument("--out", help="a JSONL record per task")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of timed runs per variant")
    a = ap.parse_args()
    recs = []
    out = open(a.out, "w") if a.out else None
    with tempfile.TemporaryDirectory() as work:
        for td in a.tasks:
            try:
                r = one(a.kfuse, td, a.unit, a.budget, work)
            except Exception as e:  # one task's failure is reported; the others go on
                r = {"task": td, "error": "%s: %s" % (type(e).__name__, e)}
            recs.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
            if "skipped" in r or "error" in r:
                print("%s: %s" % (td, r.get("skipped") or r.get("error")), flush=True)
                continue
            print("%s: judge %s, outside %s (%s); module %.4g ms, judge %.4g ms, eager %.4g ms, compile %.4g ms%s" % (
                td, r["judge_reward"], r["outside_reward"],
                "agree" if r["agree"] else "disagree at the 5% line" if r.get("at_threshold") else "DISAGREE",
                r.get("module_ms", 0), r.get("judge_ms") or 0, r.get("eager_ms", 0), r.get("torch_compile_ms", 0),
                ("; " + r["outside_why"]) if r.get("outside_why") else ""), flush=True)
    done = [r for r in recs if "agree" in r]
    agree = sum(r["agree"] for r in done)
    line = sum(1 for r in done if not r["agree"] and r.get("at_threshold"))
    print("rejudge: %d tasks compared, %d agree, %d disagree at the 5%% line (both speed-ups within 1.00-1.10), "
          "%d disagree otherwise, %d skipped or failed" % (
              len(done), agree, line, len(done) - agree - line, len(recs) - len(done)))
    return 0 if done and agree + line == len(done) else 1


if __name__ == "__main__":
    sys.exit(main())
