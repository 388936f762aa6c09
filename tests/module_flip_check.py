#!/usr/bin/env python3
"""tests/module_flip_check.py — a compiled module fails closed (issue 30).

    module_flip_check.py KFUSE FIXTURES_DIR OUT_DIR

with KFUSE_LIBCUDA and KFUSE_CREATE_CHECK set (tests/fake). The module of
mlp.core.pt2 is compiled once and created on the fake driver (it must
succeed); then 150 copies, each with one random bit of its embedded plan
flipped (the plan's header, steps, arguments, strings and cubins alike),
are created the same way: every one must be refused with an error (the
plan's checks, or its model id: the plan hashed at compile and checked at
create), none may load silently and none may crash the process. The seed
is printed, so a failure can be replayed.
"""
import os
import random
import shutil
import struct
import subprocess
import sys

kfuse, fixtures, out = sys.argv[1:4]
create = os.environ["KFUSE_CREATE_CHECK"]
env = dict(os.environ, KFUSE_CUBLASLT=os.environ["KFUSE_LIBCUDA"], KFUSE_CUDNN_LIBRARY=os.environ["KFUSE_LIBCUDA"])
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
so = os.path.join(out, "m.so")
subprocess.run([kfuse, "compile", os.path.join(fixtures, "mlp.core.pt2"), "-o", so, "-q"], check=True)
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def create_rc(path):
    p = subprocess.run([create, path, "--expect-ok"], capture_output=True, text=True, env=env, timeout=120)
    line = (p.stdout + p.stderr).strip().splitlines()
    return p.returncode, line[-1] if line else ""


rc, line = create_rc(so)
check(rc == 0 and "rc=0" in line, f"the module as compiled is created ({line[:100]})")
data = open(so, "rb").read()
# the plan: the magic followed by a header whose total size fits the file
# (the runtime's own copy of the magic string, in its constants, does not)
at, total = -1, 0
pos = data.find(b"KFPLAN\r\n")
while pos >= 0 and at < 0:
    t = struct.unpack_from("<Q", data, pos + 16)[0] if pos + 24 <= len(data) else 0
    if 0 < t <= len(data) - pos:
        at, total = pos, t
    pos = data.find(b"KFPLAN\r\n", pos + 1)
check(at >= 0 and 0 < total < len(data), f"its plan: {total} bytes at offset {at}")
seed = int.from_bytes(os.urandom(4), "little")
rng = random.Random(seed)
print(f"seed {seed}")
silent, crashed, refused, reasons = [], [], 0, {}
for i in range(150):
    off = at + rng.randrange(total)
    bad = bytearray(data)
    bad[off] ^= 1 << rng.randrange(8)
    path = os.path.join(out, f"flip{i}.so")
    open(path, "wb").write(bad)
    shutil.copyfile(so + ".weights", path + ".weights")
    rc, line = create_rc(path)
    if rc < 0:
        crashed.append((off - at, line))
    elif rc == 0:
        silent.append((off - at, line))
    else:
        refused += 1
        key = "model id" if "model id" in line else "plan check" if "rc=4" in line else line[line.find(":", 30):][:60]
        reasons[key] = reasons.get(key, 0) + 1
    os.remove(path)
    os.remove(path + ".weights")
check(not crashed, f"no flipped module crashed the process ({len(crashed)}: {crashed[:3]})")
check(not silent, f"no flipped module loaded silently ({len(silent)} at plan offsets {[s[0] for s in silent[:5]]})")
print(f"     refused {refused} of 150: {reasons}")
print(f"module_flip_check: {'PASS' if not failures else 'FAIL'} ({len(failures)} failed)")
sys.exit(1 if failures else 0)
