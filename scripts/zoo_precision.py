#!/usr/bin/env python3
"""scripts/zoo_precision.py — where a zoo model's error comes from: one
export, the module compiled with several sets of `kfuse compile` flags
(in parallel), and every module run on the same inputs as the fp64 model
and eager with cuDNN's TF32 on (PyTorch's default) and off, in one
process: each one's relative error norm against fp64 and median time.

    python3 scripts/zoo_precision.py --kfuse dist/kfuse-portable/bin/kfuse \\
        --only deeplabv3_mobilenet_v3_large/fp32,resnet50/fp32 \\
        --variant default= --variant fp32='--precision fp32' \\
        --variant nchw=--no-channels-last --out out/prec

Writes OUT/results.jsonl (a record per unit and variant: error, ms, the
compile's seconds, the module check's verdict) and prints a table. Models
are zoo.py's (build_module, realistic_init, input_tensors: the same
weights and inputs as a zoo run of the same seed). Needs a GPU, torch,
torchvision/transformers and the kfuse Python package (python/).
"""
import argparse
import concurrent.futures
import copy
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import zoo  # noqa: E402


def median_ms(torch, fn, runs):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def compile_one(kfuse, pt2, so, flags, log):
    t0 = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run([kfuse, "compile", pt2, "-o", so, "-q", "--report", so + ".json"] + flags,
                            stdout=f, stderr=subprocess.STDOUT).returncode
    return rc, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--only", required=True, help="units, MODEL/DTYPE, comma-separated")
    ap.add_argument("--variant", action="append", default=[], help="NAME=FLAGS (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=4, help="compiles at a time")
    ap.add_argument("--runs", type=int, default=20, help="timed runs of each")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    variants = []
    for v in a.variant or ["default="]:
        name, _, flags = v.partition("=")
        variants.append((name, shlex.split(flags)))
    import torch
    import kfuse
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(a.out, exist_ok=True)
    models = {m["name"]: m for m in zoo.zoo_models()}
    units = []
    for u in a.only.split(","):
        name, _, dtype = u.partition("/")
        if name not in models:
            sys.exit(f"zoo_precision: no zoo model '{name}'")
        units.append((name, dtype or "fp32"))
    # export each, then compile every variant of every unit
    jobs = []
    for name, dtype in units:
        d = os.path.join(a.out, zoo.file_id(f"{name}/{dtype}"))
        os.makedirs(d, exist_ok=True)
        pt2 = os.path.join(d, "model.pt2")
        m, _ = zoo.build_module(torch, models[name], False, dtype, a.seed)
        kfuse.export(m, zoo.input_tensors(torch, models[name], False, dtype, a.seed + 1, "cpu", fake=True), pt2)
        for vn, flags in variants:
            jobs.append((name, dtype, vn, flags, pt2, os.path.join(d, vn + ".so")))
        print(f"exported {name}/{dtype}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        done = dict(zip([(j[0], j[1], j[2]) for j in jobs],
                        ex.map(lambda j: compile_one(a.kfuse, j[4], j[5], j[3], j[5] + ".log"), jobs)))
    rows = []
    with open(os.path.join(a.out, "results.jsonl"), "a") as out:
        for name, dtype in units:
            spec = models[name]
            m, _ = zoo.build_module(torch, spec, False, dtype, a.seed)
            m = m.cuda()
            xs = zoo.input_tensors(torch, spec, False, dtype, a.seed + 1, "cuda")
            with torch.no_grad():
                ref = copy.deepcopy(m).double()(*[x.double() if x.is_floating_point() else x for x in xs])
                recs = []
                for tf32 in (True, False):
                    torch.backends.cudnn.allow_tf32 = tf32
                    got = m(*xs)
                    recs.append({"variant": f"eager (cudnn tf32 {'on' if tf32 else 'off'})",
                                 "err": zoo.rel_err(torch, got, ref),
                                 "ms": median_ms(torch, lambda: m(*xs), a.runs)})
                torch.backends.cudnn.allow_tf32 = True
                for vn, flags in variants:
                    so = os.path.join(a.out, zoo.file_id(f"{name}/{dtype}"), vn + ".so")
                    rc, secs = done[(name, dtype, vn)]
                    r = {"variant": f"kfuse {vn}", "flags": " ".join(flags), "compile_rc": rc,
                         "compile_s": round(secs, 1)}
                    try:
                        with open(so + ".json") as f:
                            mc = json.load(f).get("module_check") or {}
                        r["module_check"] = {k: mc.get(k) for k in ("passed", "max_rel_err", "bound", "fallback")
                                             if k in mc}
                    except (OSError, ValueError):
                        pass
                    if rc == 0:
                        km = kfuse.load(so)
                        got = km(*xs)
                        r["err"] = zoo.rel_err(torch, got if isinstance(got, tuple) else (got,), ref)
                        r["ms"] = median_ms(torch, lambda: km(*xs), a.runs)
                        del km
                    recs.append(r)
            for r in recs:
                r.update(unit=f"{name}/{dtype}", device=torch.cuda.get_device_name())
                out.write(json.dumps(r) + "\n")
                rows.append(r)
            del m, ref
            torch.cuda.empty_cache()
    print("| unit | variant | error vs fp64 | ms | compile s | module check |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        err = r.get("err")
        print(f"| {r['unit']} | {r['variant']} | {err:.3g} |" if err is not None else f"| {r['unit']} | "
              f"{r['variant']} | — |", f"{r['ms']:.3f} |" if r.get("ms") else "— |",
              f"{r.get('compile_s', '')} | {json.dumps(r.get('module_check', ''))} |")


if __name__ == "__main__":
    main()
