#!/usr/bin/env python3
"""scripts/compile_time.py — times a cold `kfuse compile` of ResNet-18, and a
rebuild from a warm kernel cache.

    python3 scripts/compile_time.py --kfuse build/kfuse [--batch 8] [--runs 3]
                                    [--seed warm | --seed build/tests/cache_compile]

ResNet-18 is written out here in plain PyTorch (the torchvision layout:
basic blocks [2, 2, 2, 2], 64-512 channels, batch norm, 1000 classes; no
torchvision needed), exported on the CPU with kfuse.export (core ATen) at
[batch, 3, 224, 224] and compiled with `kfuse compile` into a module, no GPU
and no kernel cache involved: every run compiles every kernel from scratch.
Prints each run's wall time, the median and the report's group count. The
issue's target is under 30 s on the 2-core CI machines.

--seed fills a fresh kernel cache first — `warm`: `kfuse warm` judging on
this machine's GPU; a path: the test helper tests/cache/cache_compile
(a synthetic picker calling every unit verified, for machines without a
GPU) — then times rebuilds from it alone (`--require-cached`, NVRTC made
unloadable so nothing can compile), with the report's phases: issue 12's
target is under 1 s plus link time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kfuse  # noqa: E402


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", help="warm, or the path of tests/cache/cache_compile: time rebuilds from a cache")
    args = ap.parse_args()
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="kfuse-ctime-")
    pt2 = os.path.join(work, "resnet18.pt2")
    kfuse.export(ResNet18().eval(), (torch.randn(args.batch, 3, 224, 224),), pt2)
    times = []
    for i in range(args.runs):
        so = os.path.join(work, f"r{i}.so")
        rep = os.path.join(work, f"r{i}.json")
        t0 = time.time()
        r = subprocess.run([args.kfuse, "compile", pt2, "-o", so, "-q", "--no-cache", "--report", rep],
                           capture_output=True, text=True)
        dt = time.time() - t0
        if r.returncode != 0:
            sys.exit(f"compile_time: kfuse compile failed: {r.stderr.strip()}")
        times.append(dt)
        print(f"run {i + 1}: {dt:.2f} s", flush=True)
    with open(os.path.join(work, "r0.json")) as f:
        groups = json.load(f).get("groups")
    print(f"ResNet-18, batch {args.batch}, 224x224: cold kfuse compile median {statistics.median(times):.2f} s "
          f"over {args.runs} runs on {os.cpu_count()} cores; {groups} groups")
    if args.seed:
        rebuild(args, work, pt2)


def rebuild(args, work, pt2):
    cache = os.path.join(work, "cache")
    env = dict(os.environ)
    env.pop("KFUSE_CACHE_DIR", None)
    if args.seed == "warm":
        seed = [args.kfuse, "warm", pt2, "--cache", cache, "-q"]
    else:
        lib = os.path.join(os.path.dirname(os.path.abspath(args.kfuse)), "libkfuse_runtime.a")
        env.setdefault("KFUSE_RUNTIME_LIB", lib)
        seed = [args.seed, "compile", pt2, os.path.join(work, "seed.so"), cache]
    r = subprocess.run(seed, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"compile_time: seeding the cache failed: {r.stderr.strip()[-2000:]}")
    env["KFUSE_NVRTC_LIBRARY"] = os.path.join(work, "no-such-libnvrtc.so")
    times, phases = [], None
    for i in range(args.runs):
        so = os.path.join(work, f"c{i}.so")
        rep = os.path.join(work, f"c{i}.json")
        t0 = time.time()
        r = subprocess.run([args.kfuse, "compile", pt2, "-o", so, "-q", "--cache", cache, "--require-cached",
                            "--report", rep], capture_output=True, text=True, env=env)
        dt = time.time() - t0
        if r.returncode != 0:
            sys.exit(f"compile_time: the rebuild from the cache failed: {r.stderr.strip()[-2000:]}")
        times.append(dt)
        with open(rep) as f:
            rj = json.load(f)
        phases = rj["seconds"]
        print(f"rebuild {i + 1}: {dt:.2f} s ({rj['units_from_cache']} of {rj['unique_units']} units from the "
              f"cache, {rj['units_compiled']} compiled)", flush=True)
    link = phases.get("link", 0)
    print(f"ResNet-18 rebuild from the cache ({'kfuse warm' if args.seed == 'warm' else 'synthetic seed'}): "
          f"median {statistics.median(times):.2f} s wall, of which link {link:.2f} s; phases of the last: "
          + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()))


if __name__ == "__main__":
    main()
