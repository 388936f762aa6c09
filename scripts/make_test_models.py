#!/usr/bin/env python3
"""scripts/make_test_models.py — writes the models of tests/models/ (torch.export
.pt2 files, random weights from a fixed seed, no recorded outputs: the tests
that use them compare a compiled module with kfuse's own fp64 interpreter).

  python3 scripts/make_test_models.py [--out DIR] [--only NAME,...]

tv_bottleneck_cl: two torchvision ResNet bottlenecks (Bottleneck(128, 32)) in
an nn.Sequential on a 1x128x48x48 input: every convolution's result has at
least 2^16 elements and they chain, so a default `kfuse compile` lays them
out channels-last (pass/layout.c's size floor), and one run is about 8e7
multiply-adds, inside the module check's CPU emulation limit. The module
check's CPU path and its mutation test (tests/module_cpu_check.sh) use it.

inplace_ops: in-place modules as torchvision writes them, in the default
IR (ctest module.inplace-ops: compiled, and its module checked on the CPU).

bf16_rounding: a bf16 model whose own rounding moves its answer by about
0.1 (ctest module.check-rounding: the module check's bound comes from the
model where the policy's would refuse a module as right as eager).
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from make_fixtures import scrub_paths  # noqa: E402  (stack traces without this machine's paths)


def tv_bottleneck_cl():
    from torchvision.models.resnet import Bottleneck
    m = nn.Sequential(Bottleneck(128, 32), Bottleneck(128, 32))
    for mod in m.modules():  # batch norms that are not the identity
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.5, 0.5)
    return m.eval(), (torch.randn(1, 128, 48, 48),)


def inplace_ops():
    """torchvision's habit of in-place modules (nn.ReLU(inplace=True),
    nn.Dropout(inplace=True), nn.Hardswish(inplace=True)) exported with
    torch.export as it comes, eval mode: the default IR keeps
    aten.dropout_ (whose argument is self where dropout's is input)."""
    m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True), nn.Dropout(0.2, inplace=True),
                      nn.Linear(32, 16), nn.Hardswish(inplace=True), nn.Dropout(0.1, inplace=True))
    return m.eval(), (torch.randn(4, 16),)


class _Offset(nn.Module):
    def forward(self, x):
        y = torch.tanh(x) * 4.0
        return (y + 64.0) - 64.0


def bf16_rounding():
    """a bf16 model whose own rounding moves its answer far: (y + 64) - 64
    with y = 4 tanh(x) of order 1 stores y + 64 in bf16, whose spacing
    there is 0.5, so eager is about 0.1 from the unrounded model. A module
    that rounds where eager does (compiled --no-fuse) is as right as eager
    and must pass the module check, whose bound then comes from the model
    (judge/module_check.c's bound_for), not the policy's 6e-2."""
    return _Offset().eval(), (torch.randn(64, 256).to(torch.bfloat16),)


MODELS = {"tv_bottleneck_cl": tv_bottleneck_cl, "inplace_ops": inplace_ops, "bf16_rounding": bf16_rounding}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "models"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    want = [n for n in a.only.split(",") if n] or list(MODELS)
    os.makedirs(a.out, exist_ok=True)
    for name in want:
        if name not in MODELS:
            sys.exit(f"make_test_models: no model {name!r} (have {', '.join(MODELS)})")
        torch.manual_seed(0)
        m, args = MODELS[name]()
        with torch.no_grad():
            ep = torch.export.export(m, args)
        # the example input is not needed (shapes are in the graph) and
        # would be most of the file
        ep._example_inputs = None
        scrub_paths(ep)
        path = os.path.join(a.out, name + ".pt2")
        torch.export.save(ep, path)
        print(f"{path}: {os.path.getsize(path)} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
