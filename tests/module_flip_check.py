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
is printed, so a failure can be replayed. Then the module cut short at
eight lengths, and given a 32-bit ELF header: `kfuse run` and `kfuse.load`
must each refuse all nine before dlopen ("not a loadable module"), where
the dynamic loader would otherwise fault (SIGBUS) on a truncated file.
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

# truncated and foreign files: refused before dlopen by kfuse run's loader
# and by kfuse.load (the Python side needs no torch to get that far)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kfuse as kfuse_py  # noqa: E402
io = os.path.join(fixtures, "mlp.kfio")
cut_ok = py_ok = 0
cuts = [0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999] + ["foreign"]
for i, frac in enumerate(cuts):
    path = os.path.join(out, f"cut{i}.so")
    if frac == "foreign":
        open(path, "wb").write(b"\x7fELF\x01\x01" + data[6:])  # a 32-bit ELF header
    else:
        open(path, "wb").write(data[: int(len(data) * frac)])
    p = subprocess.run([kfuse, "run", path, "--io", io], capture_output=True, text=True, env=env, timeout=120)
    cut_ok += p.returncode == 1 and "not a loadable module" in p.stderr
    try:
        kfuse_py.load(path)
    except kfuse_py.KfuseError as e:
        py_ok += "not a loadable module" in str(e)
check(cut_ok == len(cuts), f"kfuse run refuses {cut_ok} of {len(cuts)} truncated or foreign modules with an error")
check(py_ok == len(cuts), f"kfuse.load refuses {py_ok} of {len(cuts)} with KfuseError")
check(not silent, f"no flipped module loaded silently ({len(silent)} at plan offsets {[s[0] for s in silent[:5]]})")
print(f"     refused {refused} of 150: {reasons}")
print(f"module_flip_check: {'PASS' if not failures else 'FAIL'} ({len(failures)} failed)")
sys.exit(1 if failures else 0)
