#!/usr/bin/env python3
"""tests/empty_weights_check.py KFUSE FIXTURES WORKDIR — a .pt2 exported
from fake (meta) tensors has empty weight records; PyTorch loads them as
zeros and kfuse says it does: `kfuse compile` must warn and build a module
whose weights file holds zeros of the tensor's size for that record (it
failed with an internal error: the plan recorded a 0-byte weight)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad"))
from make_bad import Archive, first_weight  # noqa: E402

kfuse, fixtures, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
a = Archive(os.path.join(fixtures, "mlp.core.pt2"))
fqn, rec = first_weight(a)
full = len(a.get("data/weights/" + rec))
a.put("data/weights/" + rec, b"")
pt2 = os.path.join(work, "empty_weight.pt2")
with open(pt2, "wb") as f:
    f.write(a.zip())
so = os.path.join(work, "empty_weight.so")
r = subprocess.run([kfuse, "compile", pt2, "-o", so], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"FAIL: kfuse compile exited {r.returncode}:\n{r.stderr}")
if "empty record" not in r.stderr or fqn not in r.stderr:
    sys.exit(f"FAIL: no warning naming the empty record of '{fqn}':\n{r.stderr}")
wsize = os.path.getsize(so + ".weights")
if wsize < full:
    sys.exit(f"FAIL: the weights file has {wsize} bytes, under the {full} of '{fqn}' alone")
print(f"PASS: '{fqn}' ({rec}, {full} bytes) empty: warned, compiled, weights file {wsize} bytes")
