#!/usr/bin/env python3
"""scripts/kb_profile.py — where a KernelBench problem's GPU time goes, for
PyTorch eager, torch.compile (default mode) and a kfuse module side by side.

    python3 scripts/kb_profile.py --kb KB --id L3/19 [--so MODULE.so] [--top 15]

The problem is built as scripts/kernelbench.py builds it (eval mode, seed 42,
TF32 for convolutions only, PyTorch's defaults), each variant is called a few
times to warm up, then --calls times under torch.profiler (CUDA activity:
every kernel, cuDNN's and cuBLAS's and kfuse's alike, since all run in this
process). For each variant: the GPU time of one call (the kernels' sum, so
gaps between launches are not in it), the number of kernels a call runs,
and the kernels taking the most time (name, launches per call, microseconds
per call, share). --so names a module compiled by `kfuse compile` from the
problem's export (scripts/kernelbench.py leaves one in its --work
directory); without it only eager and torch.compile are profiled.

A diagnostic, not a benchmark: the L2 is not flushed between calls and the
profiler adds its own overhead; the runner's figures are the ones to quote.
"""
import argparse
import collections
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def runner():
    spec = importlib.util.spec_from_file_location("kb_runner", os.path.join(HERE, "kernelbench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def profile(torch, fn, args, calls):
    from torch.profiler import ProfilerActivity, profile as tprofile
    with torch.no_grad():
        for _ in range(3):
            fn(*args)
        torch.cuda.synchronize()
        with tprofile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn(*args)
            torch.cuda.synchronize()
    kern = collections.defaultdict(lambda: [0, 0.0])  # name -> launches, us
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kern[e.name]
            k[0] += 1
            k[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    return kern


def show(label, kern, calls, top):
    total = sum(v[1] for v in kern.values()) / calls
    launches = sum(v[0] for v in kern.values()) / calls
    print(f"== {label}: {total / 1e3:.4f} ms of kernels a call, {launches:.0f} kernels a call")
    for name, (n, us) in sorted(kern.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {us / calls:9.1f} us {100 * us / calls / total if total else 0:5.1f}%  x{n / calls:<5.1f} {name[:110]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", required=True, help="a KernelBench checkout (as scripts/kernelbench.py takes)")
    ap.add_argument("--id", required=True, help="a problem, L<level>/<number>")
    ap.add_argument("--so", help="a kfuse module of the problem")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    a = ap.parse_args()
    kb = runner()
    problems, _ = kb.find_problems(a.kb)
    p = next((q for q in problems if q["id"] == a.id), None)
    if p is None:
        raise SystemExit(f"kb_profile: no problem {a.id} in {a.kb}")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    mod = kb.load_problem(p["path"])
    model = kb.build_model(torch, mod, 42).cuda()
    args = kb.draw_inputs(torch, mod, 42, "cuda")
    bound = kb.bound_model(torch, model, args)
    tensors = kb.split_args(torch, args)
    print(f"{p['id']} {p['name']} on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    show("eager", profile(torch, bound, tensors, a.calls), a.calls, a.top)
    if not a.no_compile:
        show("torch.compile", profile(torch, torch.compile(bound), tensors, a.calls), a.calls, a.top)
    if a.so:
        import kfuse
        show("kfuse", profile(torch, kfuse.load(a.so), tensors, a.calls), a.calls, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
