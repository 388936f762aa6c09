#!/usr/bin/env python3
"""tests/zoo_runner_check.py — the model zoo runner's bookkeeping without a
GPU or torch (scripts/zoo.py; its sharding through scripts/kb_gpus.sh):

  - the zoo: unique names, every family the runner promises, both sizes of
    every model, realistic full sizes (CNNs 32 x 3 x 224 x 224, video 8 x 3
    x 16 x 112 x 112, text 8 x 512), token inputs with their vocabulary;
  - selection: --dtype, --tier, --family (families and groups), --only and
    --skip by name, pattern and MODEL/DTYPE, unknown names refused; --shard
    K/N round robin and with --shard-costs: every unit in exactly one shard;
    --priority (named models first) and --done (units an earlier results
    file holds left out before the shards are cut);
  - the tolerance rule: tolerance() and verdict();
  - resume: pending() skips what this mode recorded, --redo, --redo-status;
  - the warm phase: each unit warmed once, --warm-export up to its disk cap;
  - the summary: per-dtype geomeans and fast_1, fast_1 per family, units
    below 0.9x eager, failures grouped by message (numbers and names taken
    out), the CPU-check table; --summarize and --list from the command line;
  - importing zoo.py imports no torch; kb_gpus.sh refuses an unknown runner.

Usage: zoo_runner_check.py REPO_ROOT. Exit 0 when every check holds.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import types

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def refused(fn, what):
    try:
        fn()
    except SystemExit:
        return
    check(False, f"{what} is refused")


def sel(zoo, **kw):
    a = dict(dtype="fp32,fp16,bf16", tier="all", family="", only="", skip="", shard="", shard_costs=None)
    a.update(kw)
    return zoo.select(zoo.zoo_models(), types.SimpleNamespace(**a))


def main():
    root = sys.argv[1]
    sys.path.insert(0, os.path.join(root, "scripts"))
    import zoo
    check("torch" not in sys.modules, "importing zoo.py imports no torch")

    # 1. the zoo
    models = zoo.zoo_models()
    names = [m["name"] for m in models]
    check(len(names) == len(set(names)), "model names are unique")
    fams = {m["family"] for m in models}
    for f in ("resnet", "resnext", "wide_resnet", "vgg", "densenet", "mobilenet", "efficientnet", "efficientnet_v2",
              "regnet", "convnext", "shufflenet", "squeezenet", "mnasnet", "googlenet", "inception", "vit", "swin",
              "maxvit", "fcn", "deeplabv3", "lraspp", "video_resnet", "bert", "roberta", "distilbert", "gpt2",
              "llama", "mistral", "qwen2", "t5", "vit_hf", "clip", "whisper", "wav2vec2"):
        check(f in fams, f"the zoo has family {f}")
        check(any(m["family"] == f and m["tier"] == "core" for m in models), f"family {f} has a core model")
    for n in ("r3d_18", "mc3_18", "r2plus1d_18", "mobilenet_v2", "mobilenet_v3_large", "llama-1b"):
        check(n in names, f"the zoo has {n}")
    for m in models:
        check(m["group"] in zoo.GROUPS and m["src"] in ("tv", "hf") and m["tier"] in ("core", "all"),
              f"{m['name']}: group, src, tier")
        for size in ("full", "small"):
            ins = m[size]["inputs"]
            check(ins and all(len(i["shape"]) >= 2 and i["kind"] in ("float", "tokens") for i in ins),
                  f"{m['name']}: {size} inputs")
            for i in ins:
                if i["kind"] == "tokens":
                    check(isinstance(i.get("high"), int) and i["high"] > 1, f"{m['name']}: token vocabulary")
        nf = math.prod(m["full"]["inputs"][0]["shape"])
        ns = math.prod(m["small"]["inputs"][0]["shape"])
        check(ns <= nf, f"{m['name']}: --small is no larger")
        if m["src"] == "hf":
            check(m["small"]["config"] != m["full"]["config"], f"{m['name']}: --small shrinks the config")
    spec = zoo.model_spec("resnet50")
    check(spec["full"]["inputs"][0]["shape"] == [32, 3, 224, 224], "resnet50 at 32 x 3 x 224 x 224")
    check(zoo.model_spec("inception_v3")["full"]["inputs"][0]["shape"] == [32, 3, 299, 299], "inception at 299")
    check(zoo.model_spec("r3d_18")["full"]["inputs"][0]["shape"] == [8, 3, 16, 112, 112], "video 8x3x16x112x112")
    check(zoo.model_spec("bert-base")["full"]["inputs"][0]["shape"] == [8, 512], "bert 8 x 512")
    check(zoo.model_spec("fcn_resnet50")["full"]["kw"].get("weights_backbone", 1) is None,
          "segmentation: no backbone weights (nothing downloaded)")
    llama = zoo.model_spec("llama-1b")["full"]["config"]
    check(llama["num_key_value_heads"] < llama["num_attention_heads"], "llama-1b has GQA")

    # 2. selection
    all_units = sel(zoo)
    check(len(all_units) == 3 * len(models), "every model in every dtype by default")
    check([u["id"] for u in all_units[:3]] == ["resnet18/fp32", "resnet18/fp16", "resnet18/bf16"],
          f"units model by model: {[u['id'] for u in all_units[:3]]}")
    check(len(sel(zoo, dtype="bf16,fp32")) == 2 * len(models), "--dtype picks dtypes")
    refused(lambda: sel(zoo, dtype="fp8"), "--dtype fp8")
    refused(lambda: sel(zoo, dtype=""), "an empty --dtype")
    core = sel(zoo, tier="core", dtype="fp32")
    check(0 < len(core) < len(models) and all(u["tier"] == "core" for u in core), "--tier core")
    refused(lambda: sel(zoo, tier="most"), "--tier most")
    r = sel(zoo, family="resnet,bert", dtype="fp32")
    check({u["family"] for u in r} == {"resnet", "bert"} and len(r) == 7, f"--family resnet,bert: {len(r)}")
    r = sel(zoo, family="decoder", dtype="fp32")
    check({u["model"] for u in r} == {"gpt2", "gpt2-medium", "llama-1b", "mistral-1b", "qwen2-0.5b", "gptj-0.4b"},
          "--family takes a group")
    refused(lambda: sel(zoo, family="resnot"), "--family resnot")
    r = sel(zoo, only="resnet*,bert-base/bf16")
    check([u["id"] for u in r if u["model"] == "bert-base"] == ["bert-base/bf16"]
          and sum(1 for u in r if u["family"] == "resnet") == 15, "--only patterns and MODEL/DTYPE")
    r = sel(zoo, only="resnet50", skip="resnet50/fp16")
    check([u["id"] for u in r] == ["resnet50/fp32", "resnet50/bf16"], f"--skip MODEL/DTYPE: {[u['id'] for u in r]}")
    refused(lambda: sel(zoo, only="resnet9000"), "--only with an unknown model")
    refused(lambda: sel(zoo, skip="resnet50/fp8"), "--skip with an unknown dtype")
    refused(lambda: sel(zoo, shard="3/2"), "--shard 3/2")
    for n in (1, 2, 3, 5):
        seen = []
        for k in range(1, n + 1):
            seen += [u["id"] for u in sel(zoo, shard=f"{k}/{n}")]
        check(sorted(seen) == sorted(u["id"] for u in all_units), f"--shard K/{n}: every unit exactly once")
    with tempfile.TemporaryDirectory() as d:
        old = os.path.join(d, "old.jsonl")
        with open(old, "w") as f:
            for i, u in enumerate(all_units):
                if i % 7:
                    f.write(json.dumps({"type": "model", "id": u["id"], "wall_s": float(i % 13 + 1)}) + "\n")
            f.write(json.dumps({"type": "run"}) + "\n")
        costs = zoo.shard_costs(old)
        check(len(costs) == sum(1 for i in range(len(all_units)) if i % 7), "shard_costs reads model records")
        seen, loads = [], []
        for k in (1, 2, 3):
            part = sel(zoo, shard=f"{k}/3", shard_costs=old)
            seen += [u["id"] for u in part]
            loads.append(sum(costs.get(u["id"], 7.0) for u in part))
        check(sorted(seen) == sorted(u["id"] for u in all_units), "--shard-costs: every unit exactly once")
        check(max(loads) - min(loads) <= 13, f"--shard-costs balances: {loads}")
        refused(lambda: zoo.shard_costs(os.path.join(d, "none.jsonl")), "--shard-costs with a missing file")

    # --priority: the named models first, in its order; the rest in zoo order
    r = sel(zoo, priority="bert-base,resnet5*", dtype="fp32")
    check([u["id"] for u in r[:2]] == ["bert-base/fp32", "resnet50/fp32"] and r[2]["id"] == "resnet18/fp32"
          and len(r) == len(models), f"--priority: {[u['id'] for u in r[:3]]}")
    refused(lambda: sel(zoo, priority="resnet9000"), "--priority with an unknown model")
    # --done: units an earlier results.jsonl holds (gpu mode) left out before the shards are cut,
    # those with a --redo-status status kept
    with tempfile.TemporaryDirectory() as d:
        done = os.path.join(d, "done.jsonl")
        with open(done, "w") as f:
            f.write(json.dumps({"type": "run"}) + "\n")
            for uid, st, mode in (("resnet18/fp32", "ok", "gpu"), ("resnet18/fp16", "timeout", "gpu"),
                                  ("resnet18/bf16", "ok", "cpu-check")):
                f.write(json.dumps({"type": "model", "id": uid, "status": st, "mode": mode}) + "\n")
        r = sel(zoo, done=done, only="resnet18")
        check([u["id"] for u in r] == ["resnet18/bf16"], f"--done (gpu records only): {[u['id'] for u in r]}")
        r = sel(zoo, done=done, only="resnet18", redo_status="timeout")
        check([u["id"] for u in r] == ["resnet18/fp16", "resnet18/bf16"], "--done with --redo-status")
        seen = []
        for k in (1, 2):
            seen += [u["id"] for u in sel(zoo, done=done, only="resnet18,resnet50", shard=f"{k}/2")]
        check(sorted(seen) == sorted(["resnet18/bf16", "resnet50/fp32", "resnet50/fp16", "resnet50/bf16"])
              and len(sel(zoo, done=done, only="resnet18,resnet50", shard="1/2")) == 2,
              "--done: the shards split what is left")
        refused(lambda: sel(zoo, done=os.path.join(d, "none.jsonl")), "--done with a missing file")

    # 3. the tolerance rule
    check(zoo.tolerance("fp32", None) == 1e-3 and zoo.tolerance("bf16", None) == 2e-2, "tolerance bases")
    check(zoo.tolerance("fp32", 1e-3) == 3e-3 and zoo.tolerance("fp16", 1e-3) == 2e-2, "tolerance: 3x eager's")
    check(zoo.tolerance("fp32", float("inf")) == 1e-3 and zoo.tolerance("fp32", float("nan")) == 1e-3,
          "a non-finite eager error gives no allowance")
    check(zoo.verdict("fp32", 1e-4, 9e-4, 5e-4)[:3:2] == (True, "fp64"), "fp32 within 1e-3 of fp64 passes")
    check(not zoo.verdict("fp32", 1e-4, 2e-3, 2e-3)[0], "fp32 2e-3 off fp64 fails when eager is 1e-4")
    check(zoo.verdict("fp32", 1e-3, 2.9e-3, 2e-3)[0], "fp32 within 3x eager's passes")
    check(zoo.verdict("bf16", 1e-2, 2.5e-2, 1e-2)[0] and not zoo.verdict("bf16", 1e-3, 2.5e-2, 1e-2)[0],
          "bf16: max(3x eager, 2e-2)")
    check(not zoo.verdict("fp16", 1e-3, float("inf"), 1.0)[0], "a non-finite kfuse error fails")
    ok, tol, rule = zoo.verdict("fp32", None, None, 1.5e-3)
    check(ok and rule == "eager" and tol == 2e-3, "without fp64: against eager within 2x the base")
    check(not zoo.verdict("fp32", None, None, None)[0], "no error figure at all fails")

    # 4. resume
    units = sel(zoo, only="resnet18,bert-base", dtype="fp32,bf16")
    recs = [{"type": "run", "mode": "gpu"},
            {"type": "model", "id": "resnet18/fp32", "mode": "gpu", "status": "ok"},
            {"type": "model", "id": "resnet18/bf16", "mode": "gpu", "status": "timeout"},
            {"type": "model", "id": "bert-base/fp32", "mode": "cpu-check", "status": "ok"},
            {"type": "model", "id": "bert-base/bf16", "mode": "gpu", "status": "crash"},
            {"type": "model", "id": "bert-base/bf16", "mode": "gpu", "status": "ok"}]
    ids = lambda us: [u["id"] for u in us]  # noqa: E731
    check(ids(zoo.pending(units, recs, "gpu")) == ["bert-base/fp32"], "pending: recorded units skipped, "
          "a cpu-check record does not count for the GPU run, the last record counts")
    check(ids(zoo.pending(units, recs, "gpu", redo_status="timeout")) == ["resnet18/bf16", "bert-base/fp32"],
          "--redo-status timeout")
    check(len(zoo.pending(units, recs, "gpu", redo=True)) == 4, "--redo")
    check(ids(zoo.pending(units, recs, "cpu-check")) == ["resnet18/fp32", "resnet18/bf16", "bert-base/bf16"],
          "pending in cpu-check mode")
    refused(lambda: zoo.pending(units, recs, "gpu", redo_status="slow"), "--redo-status slow")

    # 5. the warm phase: torch.compile warm-ups and --warm-export, remembered
    with tempfile.TemporaryDirectory() as d:
        calls = []

        class R:
            out = work = d
            modes = ["default"]
            run_id = "t"
            args = types.SimpleNamespace(warm_export=True, warm_export_max_gb=1.5e-9, warm_jobs=1, timeout=10)

            def left(self):
                return None

            def job(self, kind, u, **kw):
                return dict(u=u, kind=kind, **kw)

            def run_job(self, j, t):
                calls.append(j)
                if j["warm_export"]:
                    os.makedirs(os.path.join(d, zoo.file_id(j["u"]["id"])), exist_ok=True)
                    with open(os.path.join(d, zoo.file_id(j["u"]["id"]), "kfuse.warm.json"), "w") as fh:
                        fh.write("{}")
                return {"final": True, "exported": j["warm_export"], "pt2_bytes": 1}, 0, False, ""
        few = units[:3]
        zoo.warm_phase(R(), few)
        check([c["warm_export"] for c in calls] == [True, True, False],
              f"--warm-export until --warm-export-max-gb is reached: {[c['warm_export'] for c in calls]}")
        calls.clear()
        zoo.warm_phase(R(), few)
        check([c["u"]["id"] for c in calls] == [few[2]["id"]] and calls[0]["warm_export"],
              "warm.jsonl and kfuse.warm.json: only the export left out is done again")
        calls.clear()
        R.args.warm_export = False
        zoo.warm_phase(R(), units)
        check([c["u"]["id"] for c in calls] == [units[3]["id"]] and not calls[0]["warm_export"],
              "without --warm-export only the units not warm yet")

    # 6. the summary
    def rec(uid, status="ok", e=None, c=None, **kw):
        m, d = uid.split("/")
        s = zoo.model_spec(m)
        r = {"type": "model", "id": uid, "model": m, "dtype": d, "family": s["family"], "group": s["group"],
             "mode": "gpu", "status": status, "compiled": status not in ("compile-fail", "export-fail"),
             "exported": status != "export-fail", "kfuse_ms": 1.0 if e else None, "eager_ms": e,
             "compile_ms": c, "speedup_eager": e, "speedup_compile": c, "compile_s": 2.0}
        r.update(kw)
        return r
    recs = [{"type": "run", "run_id": "r1", "mode": "gpu", "device": "H200", "torch": "2.x",
             "torchvision": "0.x", "transformers": "5.x", "command": "scripts/zoo.py --out o", "started": "today"},
            rec("resnet18/fp32", e=2.0, c=1.5), rec("resnet50/fp32", e=0.5, c=0.4),
            rec("resnet50/bf16", e=4.0, c=2.0), rec("bert-base/fp32", e=1.2, c=0.8, gpu_processes=2),
            rec("gpt2/fp32", "compile-fail", error="kfuse: error: model.pt2: node 'aten_cumsum_12' (aten.cumsum) "
                "is not supported for shape [8, 512]"),
            rec("llama-1b/fp32", "compile-fail", error="kfuse: error: model.pt2: node 'aten_cumsum_3' (aten.cumsum) "
                "is not supported for shape [2, 128]"),
            rec("vgg16/fp16", "mismatch", error="mismatch: kfuse's relative error norm 5.00e-02 against fp64 is over "
                "2.0e-02")]
    s = zoo.summarize(recs)
    fp32 = s["dtypes"]["fp32"]
    check(fp32["units"] == 5 and fp32["correct"] == 3 and fp32["compiled"] == 3, f"fp32 counts: {fp32}")
    check(abs(fp32["gmean_speedup_eager"] - (2.0 * 0.5 * 1.2) ** (1 / 3)) < 1e-9, "geomean over eager")
    check(abs(fp32["fast_1_eager"] - 2 / 5) < 1e-9 and abs(fp32["fast_1_compile"] - 1 / 5) < 1e-9,
          f"fast_1 over all units: {fp32['fast_1_eager']}, {fp32['fast_1_compile']}")
    check(s["families"]["resnet"]["fp32"] == {"n": 2, "fast": 1, "fast_compile": 1, "correct": 2},
          f"fast_1 per family: {s['families']['resnet']}")
    check([x["id"] for x in s["below_eager"]] == ["resnet50/fp32"], "units below 0.9x eager")
    check(s["shared_gpu"] == ["bert-base/fp32"], "units timed beside another GPU process")
    g = s["failure_groups"]
    check(len(g) == 2 and g[0]["count"] == 2 and set(g[0]["units"]) == {"gpt2/fp32", "llama-1b/fp32"},
          f"failures grouped by message: {g}")
    check(g[0]["example"].startswith("kfuse: error:"), "the group's example is kfuse's error line")
    md = zoo.summary_md(s)
    for want in ("# Model zoo with kfuse", "H200", "scripts/zoo.py --out o", "| fp32 | 5 |", "fast_1 against eager "
                 "per family", "Below 0.9x eager", "resnet50/fp32", "Failures grouped by message", "Every unit",
                 "Timed beside other processes"):
        check(want in md, f"summary.md has {want!r}")
    check(zoo.error_key("kfuse: error: a.pt2: op 'x_1' has 3 dims") == zoo.error_key(
        "Traceback\nkfuse: error: a.pt2: op 'y_22' has 4 dims"), "error_key takes names and numbers out")
    check(zoo.error_key("kfuse: error: <work>/model.pt2: node 'v_4' (kf.reshape): result 0 is declared "
                        "tensor<2x7x1xf32, #kf.strided<[7, 1, 1]>> but the op gives tensor<2x7x1xf32>") ==
          zoo.error_key("kfuse: error: <work>/model.pt2: node 'v_9' (kf.reshape): result 0 is declared "
                        "tensor<4x7x1xbf16, #kf.strided<[7, 1, 1]>> but the op gives tensor<4x7x1xbf16>"),
          "error_key takes IR types out")
    cpu = [dict(r, mode="cpu-check") for r in recs if r.get("type") == "model"]
    md = zoo.summary_md(zoo.summarize(cpu))
    check("export and compile only" in md and "kfuse: error:" in md and "| — | — |" in md,
          "the cpu-check summary lists kfuse's messages")

    # 7. the command line, without torch
    script = os.path.join(root, "scripts", "zoo.py")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
            f.write('{"type": "model", "id": "torn')  # a run cut off while writing
        p = subprocess.run([sys.executable, script, "--summarize", "--out", d], capture_output=True, text=True,
                           timeout=120)
        check(p.returncode == 0 and os.path.exists(os.path.join(d, "summary.md")), f"--summarize: {p.stderr[-300:]}")
    p = subprocess.run([sys.executable, script, "--list", "--tier", "core", "--dtype", "bf16", "--family", "video"],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0 and "r3d_18/bf16" in p.stdout and "3 units" in p.stdout, f"--list: {p.stdout[-300:]}")
    p = subprocess.run(["bash", os.path.join(root, "scripts", "kb_gpus.sh"), "--runner", "bogus", "--gpus", "1",
                        "--out", "x"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "runner" in p.stderr, "kb_gpus.sh refuses an unknown --runner")

    print(f"zoo_runner_check: {'FAILED ' + str(len(failures)) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
