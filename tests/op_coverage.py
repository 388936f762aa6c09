#!/usr/bin/env python3
"""tests/op_coverage.py --kfuse KFUSE --root ROOT [--extra-op NAME] — every
op of include/kfuse/ops.def appears in a graph the suite runs end to end:
a fixture (tests/fixtures/*.pt2, exported from PyTorch with its outputs
recorded by scripts/make_fixtures.py; the interpreter, the emulated
kernels and, on a GPU, the compiled module are held to those outputs) or
an emulation graph (tests/emu/*.mlir: the emulated kernels against the
interpreter), as loaded or after the compile pipeline (`kfuse opt -p
compile`, which makes some ops: kf.rnn, the scan forms). An op in none of
them is a row whose pieces nothing tests (its ATen lowering, inference,
interpreter, kernels, model.py spelling); adding an op is its row and a
graph that uses it, and this check fails naming the op until the graph
exists. --extra-op adds a pretend row (the suite's proof that a missing
graph fails)."""
import argparse
import glob
import os
import re
import subprocess
import sys

ROW = re.compile(r'^\s*KF_(?:OP|EW1|EW2)\(\s*([A-Z0-9_]+)\s*,\s*"([a-z0-9_]+)"', re.M)


def ops_of(path):
    with open(path) as f:
        text = f.read()
    # rows only: not the comments' templates ("KF_EW1(ID, "name", ...)")
    return [name for ident, name in ROW.findall(text) if ident != "ID"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kfuse", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--extra-op", action="append", default=[])
    a = ap.parse_args()
    ops = ops_of(os.path.join(a.root, "include", "kfuse", "ops.def")) + a.extra_op
    if len(ops) < 100:
        sys.exit(f"op_coverage: only {len(ops)} rows read from ops.def: has its row syntax changed?")
    graphs = sorted(glob.glob(os.path.join(a.root, "tests", "fixtures", "*.pt2")) +
                    glob.glob(os.path.join(a.root, "tests", "emu", "*.mlir")))
    if not graphs:
        sys.exit("op_coverage: no fixtures or emulation graphs found")
    seen = {}
    for g in graphs:
        for pipeline in ([], ["-p", "compile"]):
            p = subprocess.run([a.kfuse, "opt", g] + pipeline, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"op_coverage: kfuse opt {os.path.relpath(g, a.root)} {' '.join(pipeline)} failed: "
                         f"{p.stderr.strip()[-400:]}")
            for name in set(re.findall(r'"kf\.([a-z0-9_]+)"', p.stdout)):
                seen.setdefault(name, os.path.relpath(g, a.root))
    missing = [o for o in ops if o not in seen]
    unknown = sorted(set(seen) - set(ops))
    if unknown:
        print(f"op_coverage: graphs use ops ops.def has no row for: {', '.join(unknown)}", file=sys.stderr)
        return 1
    if missing:
        for o in missing:
            print(f"op_coverage: kf.{o} (include/kfuse/ops.def) is in no fixture (tests/fixtures, made by "
                  f"scripts/make_fixtures.py from PyTorch) nor emulation graph (tests/emu/*.mlir): add one that "
                  f"uses it, so its lowering, interpreter, kernels and model.py are tested", file=sys.stderr)
        return 1
    print(f"op_coverage: all {len(ops)} ops of ops.def appear in the {len(graphs)} fixtures and emulation graphs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
