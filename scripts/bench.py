#!/usr/bin/env python3
"""scripts/bench.py — times PyTorch eager, torch.compile (default and
max-autotune) and kfuse side by side, in one run, on the GPU machine.

    python3 scripts/bench.py --kfuse PATH/TO/kfuse --out DIR [--quick] [--only NAME,...] [--scans]

For every workload: export (kfuse.export: core ATen, SDPA whole), compile
with `kfuse compile`, load with kfuse.load, check the module against eager
(fresh random inputs; fp32 tolerance), then time each variant with CUDA
events: warm-up, then many runs, median and p10/p90 of GPU time (a spin
kernel queued ahead keeps host-side launch costs out of every variant). Inputs rotate across
several sets so the working set is not served from L2 when it fits there.
Before the workloads it measures the two ceilings of the roofline on this
GPU: device-to-device copy bandwidth (bytes read + written) and the fp32 GEMM
rate (full fp32, TF32 off, as PyTorch's default for matmul) and the TF32 GEMM
rate (what convolutions may use: PyTorch allows TF32 in cuDNN by default).
The floor of a workload is max(bytes / bandwidth, flops / rate + conv flops /
TF32 rate) with bytes = inputs + weights + outputs read or written once and
flops from torch.utils.flop_counter.

    --fixtures tests/fixtures  also times every committed fixture model (the
                               exported program's module as eager); they are
                               summarised apart from the workloads
    --unfused NAME,...         these workloads (default: the ones with a GEMM
                               or convolution epilogue) are also compiled with
                               --no-fuse, checked and timed: the fused
                               epilogue against the unfused sequence, in a
                               table of its own
    --compile-args "FLAGS"     extra `kfuse compile` flags for every kfuse
                               module (e.g. --no-horizontal: a second run with
                               them times kfuse against itself)

Writes DIR/bench.json, DIR/bench.md (the table) and DIR/bench.png, and prints
the table. A workload kfuse cannot compile or that mismatches is reported as
such (with the reason), never silently dropped.
"""
import argparse
import glob
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kfuse  # noqa: E402
from bench_report import write_outputs  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's defaults, stated
torch.backends.cudnn.allow_tf32 = True


# ---- workloads ---------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, d=4096, h=4096):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(d, h), nn.Linear(h, h), nn.Linear(h, 1024)

    def forward(self, x):
        return F.log_softmax(self.fc3(F.relu(self.fc2(F.relu(self.fc1(x))))), dim=-1)


class EltwiseChain(nn.Module):
    """element-wise chain over a large tensor: memory bound"""

    def forward(self, x, y):
        return torch.sigmoid(x * 1.5 + y) * torch.tanh(y - 0.25) + x.abs()


class NormGelu(nn.Module):
    """layer norm + GELU + residual over [tokens, d]: reduction + epilogue"""

    def __init__(self, d=4096):
        super().__init__()
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        return F.gelu(self.ln(x)) + x


class SoftmaxRows(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 0.125, dim=-1)


class GPTBlock(nn.Module):
    def __init__(self, d=1024, heads=16):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ResNetBlock(nn.Module):
    def __init__(self, c=64):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + x)


class LinearGelu(nn.Module):
    """GEMM with a bias + GELU epilogue (fused in kfuse, separate kernels in eager)"""

    def __init__(self, d=4096):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return F.gelu(self.fc(x), approximate="tanh")


class MatMul(nn.Module):
    """a plain GEMM: eager is cuBLAS alone"""

    def forward(self, a, b):
        return a @ b


class ConvBnRelu(nn.Module):
    def __init__(self, c=128):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


# KernelBench level 1 scans (89-93: [32768, 32768] f32, dim 1, written as
# there) and a decayed cumulative sum with element-wise ops around it


class Cumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)


class Cumprod(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, 1)


class ReverseCumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x.flip(1), 1).flip(1)


class ExclusiveCumsum(nn.Module):
    def forward(self, x):
        c = torch.cumsum(x.narrow(1, 0, x.size(1) - 1), 1)
        return torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), c), dim=1)


class MaskedCumsum(nn.Module):
    def forward(self, x, m):
        return torch.cumsum(x * m, 1)


class DecayedCumsum(nn.Module):
    """y_t = sum_{s <= t} a^(t - s) x_s as cumsum(x * a^-t) * a^t, then a residual"""

    def __init__(self, n=4096, a=0.999):
        super().__init__()
        self.register_buffer("up", a ** -torch.arange(n, dtype=torch.float32))
        self.register_buffer("down", a ** torch.arange(n, dtype=torch.float32))

    def forward(self, x):
        return torch.cumsum(x * self.up, -1) * self.down + x


def scan_workloads(quick):
    s = 4 if quick else 1
    n = 32768
    return [
        ("kb89_cumsum", Cumsum(), lambda: (torch.rand(n // s, n),)),
        ("kb90_cumprod", Cumprod(), lambda: (torch.rand(n // s, n),)),
        ("kb91_cumsum_reverse", ReverseCumsum(), lambda: (torch.rand(n // s, n),)),
        ("kb92_cumsum_exclusive", ExclusiveCumsum(), lambda: (torch.rand(n // s, n),)),
        ("kb93_masked_cumsum", MaskedCumsum(), lambda: (torch.rand(n // s, n), torch.rand(n // s, n) > 0.5)),
        ("decayed_cumsum", DecayedCumsum(), lambda: (torch.randn(8192 // s, 4096),)),
        ("cumsum_one_row", Cumsum(), lambda: (torch.rand(1, (1 << 24) // s),)),
    ]


def workloads(quick):
    s = 4 if quick else 1  # --quick shrinks the big ones
    return [
        ("mlp_4096", MLP(), lambda: (torch.randn(4096 // s, 4096),)),
        ("eltwise_64M", EltwiseChain(), lambda: (torch.randn((16 << 20) // s), torch.randn((16 << 20) // s))),
        ("layernorm_gelu", NormGelu(), lambda: (torch.randn(8192 // s, 4096),)),
        ("softmax_rows", SoftmaxRows(), lambda: (torch.randn(8192 // s, 4096),)),
        ("gpt_block", GPTBlock(), lambda: (torch.randn(8, 1024 // s, 1024),)),
        ("resnet_block", ResNetBlock(), lambda: (torch.randn(32 // s, 64, 56, 56),)),
        ("gemm_4096", MatMul(), lambda: (torch.randn(4096 // s, 4096), torch.randn(4096, 4096))),
        ("linear_gelu", LinearGelu(), lambda: (torch.randn(4096 // s, 4096),)),
        ("conv_bn_relu", ConvBnRelu(), lambda: (torch.randn(32 // s, 128, 28, 28),)),
    ]


def read_kfio_inputs(path):
    """the recorded inputs of a fixture (.kfio, written by scripts/make_fixtures.py)"""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"KFIO0001":
        raise SystemExit(f"{path}: not a .kfio file")
    n = int.from_bytes(blob[8:16], "little")
    hdr = json.loads(blob[16:16 + n])
    align = 64
    start = (16 + n + align - 1) // align * align
    dts = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
           "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
           "ui8": torch.uint8, "i1": torch.bool}
    out = []
    for e in hdr["inputs"]:
        raw = bytearray(blob[start + e["offset"]:start + e["offset"] + e["nbytes"]])
        t = torch.frombuffer(raw, dtype=dts[e["dtype"]]) if raw else torch.empty(0, dtype=dts[e["dtype"]])
        out.append(t.reshape(e["shape"]).clone())
    return tuple(out)


def to_cuda_graph_module(gm):
    """an exported program's module, exported on the CPU, made to run on the
    GPU: tensor constants (plain attributes) moved, and factory calls whose
    device was recorded as the CPU pointed at the GPU"""
    cuda = torch.device("cuda", torch.cuda.current_device())  # "cuda:0": _assert_tensor_metadata compares exactly
    for mod in gm.modules():
        for k, v in list(vars(mod).items()):
            if isinstance(v, torch.Tensor) and not isinstance(v, nn.Parameter) and v.device.type == "cpu":
                setattr(mod, k, v.cuda())
        graph = getattr(mod, "graph", None)
        if graph is None:
            continue
        changed = False
        for n in graph.nodes:
            dev = n.kwargs.get("device") if n.op == "call_function" else None
            if dev is not None and torch.device(dev).type == "cpu":
                n.kwargs = {**n.kwargs, "device": cuda}
                changed = True
        if changed:
            mod.recompile()


def fixture_workloads(fixdir):
    """the committed fixture models (tests/fixtures/*.core.pt2): eager is the
    exported program's module, inputs the ones recorded in the fixture (valid
    indices, no integer division by zero)"""
    out = []
    for p in sorted(glob.glob(os.path.join(fixdir, "*.core.pt2"))):
        base = os.path.basename(p)[:-len(".core.pt2")]
        inputs = read_kfio_inputs(os.path.join(fixdir, base + ".kfio"))
        out.append(("fx:" + base, torch.export.load(p).module(), lambda inputs=inputs: inputs, p))
    return out


# ---- measurement ---------------------------------------------------------------------

SLEEP_CYCLES = None


def time_fn(fn, arg_sets, warmup, iters, queued=True):
    """median/p10/p90 in ms of fn(*args) on the GPU with CUDA events, rotating
    arg sets. A spin kernel of about 2 ms is queued before the start event,
    so the host has enqueued the whole call before the GPU reaches it: the
    figure is GPU time, not the Python-side launch cost (the same for every
    variant: eager's dispatch, torch.compile's guards, kfuse's ctypes call).
    queued=False: no spin kernel, so the host's cost of the call counts
    wherever the GPU would wait for it (end to end)."""
    global SLEEP_CYCLES
    if SLEEP_CYCLES is None:
        # calibrate the spin kernel: cycles per ms on this GPU
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        torch.cuda._sleep(10_000_000)
        e1.record()
        e1.synchronize()
        SLEEP_CYCLES = int(2 * 10_000_000 / max(e0.elapsed_time(e1), 1e-3))
    for i in range(warmup):
        fn(*arg_sets[i % len(arg_sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        a = arg_sets[i % len(arg_sets)]
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if queued:
            torch.cuda._sleep(SLEEP_CYCLES)
        e0.record()
        fn(*a)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return {"median": statistics.median(times), "p10": times[len(times) // 10],
            "p90": times[(len(times) * 9) // 10], "runs": iters}


def ceilings():
    n = 1 << 28  # 1 GiB of fp32 each way
    a = torch.empty(n, device="cuda")
    b = torch.empty_like(a)
    t = time_fn(lambda: b.copy_(a), [()], 5, 20)["median"]
    bw = 2 * a.numel() * 4 / (t * 1e-3)
    del a, b
    m = 8192
    x, y = torch.randn(m, m, device="cuda"), torch.randn(m, m, device="cuda")
    t = time_fn(lambda: x @ y, [()], 3, 10)["median"]
    rate = 2 * m ** 3 / (t * 1e-3)
    # TF32: the rate convolutions run at (cuDNN, TF32 allowed by default)
    torch.backends.cuda.matmul.allow_tf32 = True
    t = time_fn(lambda: x @ y, [()], 3, 10)["median"]
    torch.backends.cuda.matmul.allow_tf32 = False
    rate_tf32 = 2 * m ** 3 / (t * 1e-3)
    return bw, rate, rate_tf32


def rel_err(got, want):
    """relative error in norm over the elements where eager is finite; inf
    if a non-finite element of eager's is not reproduced (NaN where NaN, the
    same infinity)"""
    g, w = got.double().flatten(), want.double().flatten()
    if g.shape != w.shape:
        return float("inf")
    fin = torch.isfinite(w)
    if not torch.equal(g[~fin].isnan(), w[~fin].isnan()) or \
            not torch.equal(g[~fin].nan_to_num(0.0), w[~fin].nan_to_num(0.0)):
        return float("inf")
    return ((g[fin] - w[fin]).norm() / max(w[fin].norm().item(), 1e-30)).item()


def flops_of(model, args):
    """(all flops, convolution flops)"""
    from torch.utils.flop_counter import FlopCounterMode
    with FlopCounterMode(display=False) as fc:
        model(*args)
    conv = sum(n for op, n in fc.get_flop_counts().get("Global", {}).items() if "convolution" in str(op))
    return fc.get_total_flops(), conv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kfuse", required=True, help="the kfuse binary (portable build)")
    ap.add_argument("--out", required=True, help="bench.json, bench.md, bench.png go here")
    ap.add_argument("--work", default=None, help="exports, modules, reports (default: a temp dir)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--scans", action="store_true",
                    help="time KernelBench's scans (level 1, 89-93), a decayed cumulative sum and one "
                         "16M-element row instead of the default workloads")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--compile-args", default="",
                    help="extra `kfuse compile` flags for every kfuse module, e.g. --no-horizontal "
                         "(a second run with them times kfuse against itself)")
    ap.add_argument("--fixtures", default="",
                    help="also time the fixture models in this directory (tests/fixtures)")
    ap.add_argument("--modes", default="default,max-autotune-no-cudagraphs",
                    help="torch.compile modes to time (comma-separated; '' for none)")
    ap.add_argument("--unfused", default="mlp_4096,linear_gelu,conv_bn_relu,resnet_block",
                    help="workloads also compiled with --no-fuse (one group per op) and timed, so the "
                         "fused epilogues are measured against the unfused sequence ('' for none)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import tempfile
    work = args.work or tempfile.mkdtemp(prefix="kfuse-bench-")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    dev = torch.cuda.get_device_name()
    bw, rate, rate_tf32 = ceilings()
    print(f"device: {dev}; measured copy bandwidth {bw / 1e12:.2f} TB/s, fp32 GEMM {rate / 1e12:.1f} TFLOP/s, "
          f"TF32 GEMM {rate_tf32 / 1e12:.1f} TFLOP/s", flush=True)
    rows = []
    only = set(filter(None, args.only.split(",")))
    todo = [(n, m, mk, None) for n, m, mk in (scan_workloads if args.scans else workloads)(args.quick)]
    if args.fixtures:
        todo += fixture_workloads(args.fixtures)
    for name, model, make, given_pt2 in todo:
        if only and name not in only:
            continue
        row = {"name": name}
        rows.append(row)
        try:
            run_workload(args, work, name, model, make, given_pt2, row, bw, rate, rate_tf32)
        except Exception as e:  # noqa: BLE001 - a workload that cannot run is a row with the reason
            row.setdefault("kfuse", {"error": f"workload failed: {type(e).__name__}: {e}"[:300]})
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
        print(json.dumps(row)[:400], flush=True)
        write_outputs(args.out, dev, (bw, rate, rate_tf32), rows, False, torch.__version__)

    write_outputs(args.out, dev, (bw, rate, rate_tf32), rows, True, torch.__version__)


def run_workload(args, work, name, model, make, given_pt2, row, bw, rate, rate_tf32):
    if True:
        if given_pt2 is None:
            model = model.eval()
        with torch.no_grad():
            cpu_args = make()
            pt2 = given_pt2 or os.path.join(work, f"{name}.pt2")
            if given_pt2 is None:
                kfuse.export(model, cpu_args, pt2)
            model = model.cuda()
            if given_pt2 is not None:
                to_cuda_graph_module(model)
            sets = [tuple(a.cuda() for a in make()) for _ in range(3)]
            nbytes = sum(a.numel() * a.element_size() for a in sets[0])
            nbytes += sum(p.numel() * p.element_size() for p in model.parameters())
            out = model(*sets[0])
            outs = out if isinstance(out, tuple) else (out,)
            nbytes += sum(o.numel() * o.element_size() for o in outs)
            flops, conv_flops = flops_of(model, sets[0])
            floor = max(nbytes / bw, (flops - conv_flops) / rate + conv_flops / rate_tf32) * 1e3
            row.update(bytes=nbytes, flops=flops, conv_flops=conv_flops, floor_ms=floor)
            # eager's peak: memory allocated while one forward runs, beyond
            # what the inputs and weights already hold
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            model(*sets[0])
            torch.cuda.synchronize()
            row["eager_peak_bytes"] = torch.cuda.max_memory_allocated() - base
            row["eager"] = time_fn(model, sets, 10, args.iters)
            row["eager_e2e"] = time_fn(model, sets, 5, args.iters, queued=False)
            if True:
                for mode in filter(None, args.modes.split(",")):
                    torch._dynamo.reset()
                    try:
                        cm = torch.compile(model, mode=mode)
                        row[f"compile_{mode}"] = time_fn(cm, sets, 10, args.iters)
                    except Exception as e:  # noqa: BLE001 - reported in the table
                        row[f"compile_{mode}"] = {"error": f"{type(e).__name__}: {e}"[:300]}
            fname = name.replace(":", "_")
            so = os.path.join(work, f"{fname}.so")
            t0 = time.time()
            rep_path = os.path.join(work, f"{fname}.report.json")
            r = subprocess.run([args.kfuse, "compile", pt2, "-o", so, "-q", "--report", rep_path]
                               + shlex.split(args.compile_args), capture_output=True, text=True)
            row["kfuse_compile_s"] = time.time() - t0
            try:
                with open(rep_path) as rf:
                    rep = json.load(rf)
                row["kfuse_arena_bytes"] = rep.get("arena_bytes")
                row["kfuse_groups"] = rep.get("groups")
                row["kfuse_launches"] = (rep.get("steps_per_run") or {}).get("launches")
            except (OSError, ValueError):
                pass
            if r.returncode != 0:
                row["kfuse"] = {"error": (r.stderr or r.stdout).strip().splitlines()[0][:300]}
                print(f"{name}: kfuse compile failed: {row['kfuse']['error']}", flush=True)
                return
            try:
                m = kfuse.load(so)
                err = module_err(m, model, sets[1])
                row["rel_err"] = err
                # fp32 kernels: 1e-4 relative (norm); models with
                # convolutions: 2e-3, since eager computes them in TF32
                # (PyTorch's default) and so may kfuse (the default policy)
                with open(rep_path) as rf:
                    tol = 2e-3 if "tf32" in rf.read().lower() or conv_flops > 0 else 1e-4
                row["tolerance"] = tol
                if not math.isfinite(err) or err > tol:
                    row["kfuse"] = {"error": f"mismatch: relative error {err:.2e} vs eager"}
                    return
                row["kfuse"] = time_fn(m, sets, 10, args.iters)
                row["kfuse_e2e"] = time_fn(m, sets, 5, args.iters, queued=False)
            except Exception as e:  # noqa: BLE001 - reported
                row["kfuse"] = {"error": f"{type(e).__name__}: {e}"[:300]}
                return
            if name in set(filter(None, args.unfused.split(","))):
                row["kfuse_unfused"] = time_unfused(args, work, fname, pt2, model, sets, tol)


def module_err(m, model, args):
    """largest rel_err of the module's outputs against eager's on args"""
    got = m(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = model(*args)
    want = want if isinstance(want, tuple) else (want,)
    return max(rel_err(g, w) for g, w in zip(got, want))


def time_unfused(args, work, fname, pt2, model, sets, tol):
    """the same model compiled with --no-fuse (one group, so one kernel or
    library call, per op: the unfused sequence the fused epilogues must
    beat), checked against eager like the fused module and timed"""
    so = os.path.join(work, f"{fname}.unfused.so")
    rep_path = os.path.join(work, f"{fname}.unfused.report.json")
    r = subprocess.run([args.kfuse, "compile", pt2, "-o", so, "-q", "--no-fuse", "--report", rep_path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": "--no-fuse compile failed: " + (r.stderr or r.stdout).strip().splitlines()[0][:300]}
    try:
        with open(rep_path) as rf:
            groups = json.load(rf).get("groups")
        m = kfuse.load(so)
        err = module_err(m, model, sets[2])
        if not math.isfinite(err) or err > tol:
            return {"error": f"--no-fuse mismatch: relative error {err:.2e} vs eager"}
        t = time_fn(m, sets, 10, args.iters)
        t["groups"] = groups
        return t
    except Exception as e:  # noqa: BLE001 - reported
        return {"error": f"{type(e).__name__}: {e}"[:300]}


if __name__ == "__main__":
    main()
