#!/usr/bin/env python3
"""scripts/sweep.py — on the GPU machine: times one benchmark workload's
kfuse module compiled with several template choices (`kfuse compile
--kernel-option ...`), next to eager and torch.compile in the same run, and
optionally lists the kernels each variant launches (torch.profiler).

    python3 scripts/sweep.py --kfuse PATH/TO/kfuse --only softmax_rows,layernorm_gelu \\
        --variant "" --variant "tpr=1024" --variant "cache=-1,tpr=128,block=256" \\
        [--profile] [--out sweep.json]

A variant is a comma-separated list of KEY=N (block, vec, tpr, cache, occ;
see `kfuse help`) and `kfuse compile` flags (--no-channels-last, ...); ""
is the rule's choice. Every module is checked against eager
before it is timed (bench.py's tolerance); figures are GPU-time medians
(bench.py's time_fn).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402
import kfuse  # noqa: E402  (bench put python/ on the path)


def kernels(fn, args, iters=10):
    """[(kernel name, launches per call, mean us per launch)] under torch.profiler"""
    from torch.profiler import ProfilerActivity, profile
    fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn(*args)
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        if e.count and t > 0 and e.key not in ("", "cudaDeviceSynchronize"):
            rows.append((e.key[:90], e.count / iters, t / e.count))
    rows.sort(key=lambda r: -r[1] * r[2])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--only", required=True, help="workload names (bench.py)")
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--profile", action="store_true", help="list each variant's kernels")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--out", default=None)
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="relative error allowed against eager (bench.py uses 2e-3 for TF32 convolutions)")
    args = ap.parse_args()
    variants = args.variant if args.variant is not None else [""]
    wanted = args.only.split(",")
    work = tempfile.mkdtemp(prefix="kfuse-sweep-")
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for name, model, make in bench.workloads(False):
        if name not in wanted:
            continue
        model = model.eval()
        with torch.no_grad():
            pt2 = os.path.join(work, f"{name}.pt2")
            kfuse.export(model, make(), pt2)
            model = model.cuda()
            sets = [tuple(a.cuda() for a in make()) for _ in range(3)]
            row = {"workload": name, "eager": bench.time_fn(model, sets, 10, args.iters)["median"]}
            prof = {}
            if args.profile:
                prof["eager"] = kernels(model, sets[0])
            if not args.no_compile:
                torch._dynamo.reset()
                cm = torch.compile(model)
                row["compile"] = bench.time_fn(cm, sets, 10, args.iters)["median"]
                if args.profile:
                    prof["compile"] = kernels(cm, sets[0])
            want = model(*sets[1])
            for v in variants:
                so = os.path.join(work, f"{name}.{len(row)}.so")
                cmd = [args.kfuse, "compile", pt2, "-o", so, "-q"]
                for kv in filter(None, v.split(",")):
                    cmd += [kv] if kv.startswith("--") else ["--kernel-option", kv]
                r = subprocess.run(cmd, capture_output=True, text=True)
                key = f"kfuse[{v}]"
                if r.returncode != 0:
                    row[key] = "compile failed: " + (r.stderr or r.stdout).strip()[:200]
                    continue
                m = kfuse.load(so)
                got = m(*sets[1])
                err = bench.rel_err(got, want)
                if not err <= args.tol:
                    row[key] = f"mismatch {err:.2e}"
                    continue
                row[key] = bench.time_fn(m, sets, 10, args.iters)["median"]
                if args.profile:
                    prof[key] = kernels(m, sets[0])
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
            for k, ks in prof.items():
                print(f"  {name} {k}:")
                for kn, per, us in ks[:12]:
                    print(f"    {per:5.1f} x {us:9.2f} us  {kn}")
            if prof:
                row["kernels"] = prof
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
