#!/usr/bin/env python3
"""scripts/zoo_precision.py — where a zoo model's error comes from: one
export, the module compiled with several sets of `kfuse compile` flags
(in parallel), and every module run on the same inputs as the fp64 model
and eager with cuDNN's TF32 on (PyTorch's default) and off, in one
process: each one's relative error norm against fp64 and median time.

    python3 scripts/zoo_precision.py --kfuse dist/kfuse-portable/bin/kfuse \\
        --only deeplabv3_mobilenet_v3_large/fp32,resnet50/fp32 \\
        --variant default= --variant fp32='--precision fp32' \\
        --variant nchw=--no-channels-last --variant legacy=@KFUSE_CUDNN_GRAPH=0 \
        --out out/prec

A variant's flags go to `kfuse compile`, except tokens @NAME=VALUE, which
are set in the environment while its module is loaded (the runtime's
KFUSE_CUDNN_GRAPH, KFUSE_CUDNN_FIND); variants with the same compile flags
share one compile. Eager runs as exported (NCHW) and, for image models,
also in channels-last memory format (what cuDNN computes in NHWC).

Writes OUT/results.jsonl (a record per unit and variant: error, ms, the
compile's seconds, the module check's verdict) and prints a table. Models
are zoo.py's (build_module, realistic_init, input_tensors: the same
weights and first input set as a zoo run of the same seed). Needs a GPU, torch,
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


def load_with(kfuse, so, env):
    """kfuse.load(so) with env set in the environment while it loads (the
    runtime reads KFUSE_CUDNN_* when the module is created)"""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return kfuse.load(so)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
    ap.add_argument("--seed", type=int, default=42,
                    help="weights seed (zoo.py's default); export inputs seed+1, run inputs seed+2")
    a = ap.parse_args()
    variants = []  # (name, compile flags, load-time environment)
    for v in a.variant or ["default="]:
        name, _, flags = v.partition("=")
        toks = shlex.split(flags)
        env = dict(t[1:].split("=", 1) for t in toks if t.startswith("@") and "=" in t)
        variants.append((name, [t for t in toks if not t.startswith("@")], env))
    import torch
    import kfuse
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(a.out, exist_ok=True)
    models = {m["name"]: m for m in zoo.zoo_models()}
    units = []
    for u in a.only.split(","):
        name, _, dtype = u.partition("/")
        if name not in models:
            sys.exit(f"zoo_precision: --only {u}: no zoo model '{name}' (scripts/zoo.py --list names them)")
        if dtype and dtype not in ("fp32", "fp16", "bf16"):
            sys.exit(f"zoo_precision: --only {u}: dtype '{dtype}' is not fp32, fp16 or bf16")
        units.append((name, dtype or "fp32"))
    # export each, then compile every variant of every unit
    jobs = []
    for name, dtype in units:
        d = os.path.join(a.out, zoo.file_id(f"{name}/{dtype}"))
        os.makedirs(d, exist_ok=True)
        pt2 = os.path.join(d, "model.pt2")
        m, _ = zoo.build_module(torch, models[name], False, dtype, a.seed)
        kfuse.export(m, zoo.input_tensors(torch, models[name], False, dtype, a.seed + 1, "cpu", fake=True), pt2)
        seen = set()
        for vn, flags, _ in variants:
            if tuple(flags) not in seen:
                seen.add(tuple(flags))
                jobs.append((name, dtype, tuple(flags), pt2, os.path.join(d, f"c{len(seen)}.so")))
        print(f"exported {name}/{dtype}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        res = ex.map(lambda j: compile_one(a.kfuse, j[3], j[4], list(j[2]), j[4] + ".log"), jobs)
        done = {(j[0], j[1], j[2]): (j[4],) + r for j, r in zip(jobs, res)}
    rows = []
    with open(os.path.join(a.out, "results.jsonl"), "a") as out:
        for name, dtype in units:
            spec = models[name]
            m, _ = zoo.build_module(torch, spec, False, dtype, a.seed)
            m = m.cuda()
            xs = zoo.input_tensors(torch, spec, False, dtype, a.seed + 2, "cuda")
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
                if all(x.dim() in (4, 5) for x in xs if x.is_floating_point()) and any(x.is_floating_point()
                                                                                        for x in xs):
                    fmt = torch.channels_last if xs[0].dim() == 4 else torch.channels_last_3d
                    mc_ = copy.deepcopy(m).to(memory_format=fmt)
                    xc = [x.contiguous(memory_format=fmt) if x.is_floating_point() else x for x in xs]
                    got = mc_(*xc)
                    recs.append({"variant": "eager channels-last (cudnn tf32 on)", "err": zoo.rel_err(torch, got, ref),
                                 "ms": median_ms(torch, lambda: mc_(*xc), a.runs)})
                    del mc_, xc
                for vn, flags, env in variants:
                    so, rc, secs = done[(name, dtype, tuple(flags))]
                    r = {"variant": f"kfuse {vn}", "flags": " ".join(flags), "env": env, "compile_rc": rc,
                         "compile_s": round(secs, 1)}
                    try:
                        with open(so + ".json") as f:
                            mc = json.load(f).get("module_check") or {}
                        r["module_check"] = {k: mc.get(k) for k in ("passed", "max_rel_err", "bound", "rounding_rel_err",
                                                                "fallback", "first_failure")
                                             if k in mc}
                    except (OSError, ValueError):
                        pass
                    if rc != 0:
                        r["error"] = f"kfuse compile exited {rc} (see {so}.log)"
                    else:
                        try:
                            km = load_with(kfuse, so, env)
                            got = km(*xs)
                            r["err"] = zoo.rel_err(torch, got if isinstance(got, tuple) else (got,), ref)
                            r["ms"] = median_ms(torch, lambda: km(*xs), a.runs)
                            del km
                        except Exception as e:  # noqa: BLE001 -- recorded, the other variants go on
                            r["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
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
        err = f"{r['err']:.3g}" if r.get("err") is not None else r.get("error", "—")
        ms = f"{r['ms']:.3f}" if r.get("ms") else "—"
        print(f"| {r['unit']} | {r['variant']} | {err} | {ms} | {r.get('compile_s', '')} | "
              f"{json.dumps(r.get('module_check', ''))} |")


if __name__ == "__main__":
    main()
