#!/usr/bin/env python3
"""scripts/zoo_profile.py — where a zoo model's GPU time goes, for PyTorch
eager, torch.compile (default mode) and a kfuse module side by side.

    python3 scripts/zoo_profile.py --kfuse dist/kfuse-portable/bin/kfuse \\
        --model bert-base --dtype bf16 [--work DIR] [--top 15] [--no-compile]

The model is built as scripts/zoo.py builds it (its spec, seed 42, random
weights, eval mode, in the dtype), exported with kfuse.export and compiled
with `kfuse compile` (the module check on; --compile-arg passes more
flags), then each variant is called a few times to warm up and --calls
times under torch.profiler (CUDA activity: every kernel, cuDNN's, cuBLAS's
and kfuse's alike, since all run in this process). For each variant: the
GPU time of one call (the kernels' sum; gaps between launches are not in
it), the number of kernels a call runs, and the kernels taking the most
time (name, launches per call, microseconds per call, share).

A diagnostic, not a benchmark: the L2 is not flushed between calls and the
profiler adds its own overhead; the zoo runner's figures are the ones to
quote.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kfuse", required=True, help="the kfuse binary")
    ap.add_argument("--model", required=True, help="a zoo model name (scripts/zoo.py --list)")
    ap.add_argument("--dtype", default="fp32", choices=("fp32", "fp16", "bf16"))
    ap.add_argument("--work", help="where the export, module and report go (default: a temporary directory)")
    ap.add_argument("--compile-arg", action="append", default=[], help="one more `kfuse compile` argument")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    a = ap.parse_args()
    zoo = _load("zoo_runner", "zoo.py")
    prof = _load("kb_profile", "kb_profile.py")
    try:
        spec = zoo.model_spec(a.model)
    except KeyError:
        raise SystemExit(f"zoo_profile: no zoo model {a.model!r} (scripts/zoo.py --list shows them)")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import kfuse
    work = a.work or tempfile.mkdtemp(prefix="zoo-profile-")
    os.makedirs(work, exist_ok=True)
    m, notes = zoo.build_module(torch, spec, False, a.dtype, 42)
    pt2, so, rep = (os.path.join(work, n) for n in ("model.pt2", "model.so", "report.json"))
    kfuse.export(m, zoo.input_tensors(torch, spec, False, a.dtype, 43, "cpu", fake=True), pt2)
    env = dict(os.environ)
    cd = zoo.kb.cudnn_dir()
    if cd:
        env["LD_LIBRARY_PATH"] = cd + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    r = subprocess.run([a.kfuse, "compile", pt2, "-o", so, "-q", "--no-cache", "--report", rep] + a.compile_arg,
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"zoo_profile: kfuse compile failed:\n{r.stderr[-3000:]}")
    m = m.cuda()
    xs = zoo.input_tensors(torch, spec, False, a.dtype, 43, "cuda")
    print(f"{a.model}/{a.dtype} on {torch.cuda.get_device_name()}, torch {torch.__version__}"
          + (f" ({'; '.join(notes)})" if notes else ""))
    prof.show("eager", prof.profile(torch, m, xs, a.calls), a.calls, a.top)
    if not a.no_compile:
        prof.show("torch.compile", prof.profile(torch, torch.compile(m), xs, a.calls), a.calls, a.top)
    prof.show("kfuse", prof.profile(torch, kfuse.load(so), xs, a.calls), a.calls, a.top)
    print(f"(export, module and report in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
