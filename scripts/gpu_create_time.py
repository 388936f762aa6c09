#!/usr/bin/env python3
"""scripts/gpu_create_time.py — what loading a compiled zoo model costs
(kfuse_model_create: cubins, weights, cuBLASLt and cuDNN plans), with
cuDNN's plans searched and timed (the default) and with its heuristics'
first (KFUSE_CUDNN_FIND=0), each in a fresh process, twice.

    python3 scripts/gpu_create_time.py --kfuse dist/kfuse-portable/bin/kfuse \\
        --model resnet50 [--dtype fp32] [--work DIR]

The model is built and exported as scripts/zoo.py does (its spec, seed 42)
and compiled with `kfuse compile --no-verify-module`. Each load prints the
seconds of create, of the first run and of a second, how many CONV steps
reuse an earlier step's plan (KFUSE_CUDNN_VERBOSE=1's lines), and the
relative error of its output against the first variant's on the same
inputs (plans differ, the answer must not).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, os, sys, time
import torch
sys.path.insert(0, sys.argv[1])
import kfuse
so, xs_path, out_path = sys.argv[2:5]
xs = [x.cuda() for x in torch.load(xs_path)]
torch.cuda.synchronize()
t0 = time.perf_counter(); m = kfuse.load(so); t1 = time.perf_counter()
y = m(*xs); torch.cuda.synchronize(); t2 = time.perf_counter()
y = m(*xs); torch.cuda.synchronize(); t3 = time.perf_counter()
y = y[0] if isinstance(y, (tuple, list)) else y
torch.save(y.float().cpu(), out_path)
print(json.dumps({"create_s": t1 - t0, "first_run_s": t2 - t1, "second_run_s": t3 - t2}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--model", required=True, help="a zoo model name (scripts/zoo.py --list)")
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "fp16", "bf16"))
    ap.add_argument("--work")
    a = ap.parse_args()
    spec_ = importlib.util.spec_from_file_location("zoo_runner", os.path.join(HERE, "zoo.py"))
    zoo = importlib.util.module_from_spec(spec_)
    sys.modules["zoo_runner"] = zoo
    spec_.loader.exec_module(zoo)
    import torch
    pydir = os.path.join(HERE, "..", "python")
    sys.path.insert(0, pydir)
    import kfuse
    spec = zoo.model_spec(a.model)
    work = a.work or tempfile.mkdtemp(prefix="create-time-")
    os.makedirs(work, exist_ok=True)
    m, _ = zoo.build_module(torch, spec, False, a.dtype, 42)
    pt2, so, xs_path = (os.path.join(work, n) for n in ("model.pt2", "model.so", "inputs.pt"))
    kfuse.export(m, zoo.input_tensors(torch, spec, False, a.dtype, 43, "cpu", fake=True), pt2)
    torch.save(zoo.input_tensors(torch, spec, False, a.dtype, 43, "cpu"), xs_path)
    env = dict(os.environ)
    cd = zoo.kb.cudnn_dir()
    if cd:
        env["LD_LIBRARY_PATH"] = cd + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    r = subprocess.run([a.kfuse, "compile", pt2, "-o", so, "-q", "--no-cache", "--no-verify-module"], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"gpu_create_time: kfuse compile failed:\n{r.stderr[-3000:]}")
    first = None
    print(f"{a.model}/{a.dtype}: create of the compiled module, fresh process each")
    for label, extra in (("searched (default)", {}), ("heuristics (KFUSE_CUDNN_FIND=0)", {"KFUSE_CUDNN_FIND": "0"})):
        for k in range(2):
            out = os.path.join(work, f"y-{len(extra)}-{k}.pt")
            e = dict(env, KFUSE_CUDNN_VERBOSE="1", **extra)
            p = subprocess.run([sys.executable, "-c", CHILD, pydir, so, xs_path, out], env=e, capture_output=True,
                               text=True)
            if p.returncode:
                print(f"  {label}: failed:\n{p.stderr[-2000:]}")
                continue
            res = json.loads(p.stdout.strip().splitlines()[-1])
            shared = p.stderr.count("the graph plan of step")
            plans = p.stderr.count("graph API plan, workspace")
            y = torch.load(out)
            if first is None:
                first = y
            err = ((y.double() - first.double()).norm() / first.double().norm()).item()
            print(f"  {label} #{k + 1}: create {res['create_s']:.2f} s, first run {res['first_run_s'] * 1e3:.1f} ms, "
                  f"second {res['second_run_s'] * 1e3:.2f} ms; {plans} plans built, {shared} steps reuse one; "
                  f"output {err:.2e} from the first load's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
