#!/usr/bin/env python3
"""tests/loader_check.py — rebuilding a module at the same path, without a GPU.

    python3 tests/loader_check.py KFUSE FIXTURES_DIR

1. `kfuse compile` replaces its outputs by renaming: a rebuild gives the
   module a new file (inode), and a failed rebuild — a bad model, or a
   report path that cannot be written — leaves the previous module and
   weights byte for byte, with no temporary files left behind.
2. `kfuse.load`'s library loading (python/kfuse: _open_library) returns the
   rebuilt module, not the one this process loaded first from the same
   path (dlopen alone caches by path name), the same library for the same
   unchanged file, and refuses a file rewritten in place.
3. A module and its weights file are one artifact (with KFUSE_LIBCUDA naming
   the fake CUDA driver of tests/fake, create runs on the CPU): a shared
   module reads <its own file>.weights, so a pair renamed together still
   loads and a stale file under the old name is never read; another build's
   weights file is refused by its model id; the old library of a module
   rebuilt after this process loaded it refuses the new weights (and the
   new library loads); a reader that mapped the weights before a rebuild
   keeps reading the old bytes (the rebuild never truncates in place).
4. Symbols bind within a module: with another library defining the module
   API loaded first into the global scope (another module of another kfuse
   version, say), the module's own call of kfuse_options_init still runs its
   own copy.
Loading a module's library needs no GPU (the runtime opens the driver at
create), so this runs in CI.
"""
import mmap
import shutil
import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kfuse  # noqa: E402  (no torch needed for this part)


def compile_to(k, model, out, *extra):
    return subprocess.run([k, "compile", model, "-o", out, "-q", *extra],
                          capture_output=True, text=True)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def addr(lib):
    return ctypes.cast(lib.kfuse_model_create, ctypes.c_void_p).value


def create(lib, weights=None):
    """(rc, message) of kfuse_model_create on the fake driver; destroys."""
    kfuse._bind(lib)
    o = kfuse._Options(ctypes.sizeof(kfuse._Options), 0,
                       os.fsencode(weights) if weights else None, 0, 0)
    h = ctypes.c_void_p()
    rc = lib.kfuse_model_create(ctypes.byref(o), ctypes.byref(h))
    msg = (lib.kfuse_last_error() or b"").decode(errors="replace")
    if rc == 0:
        lib.kfuse_model_destroy(h)
    return rc, msg


def main():
    k, fixtures = sys.argv[1], sys.argv[2]
    a, b = os.path.join(fixtures, "mlp.core.pt2"), os.path.join(fixtures, "norms.core.pt2")
    fails = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    with tempfile.TemporaryDirectory() as d:
        so = os.path.join(d, "m.so")
        r = compile_to(k, a, so)
        check(r.returncode == 0, f"compile {os.path.basename(a)}: {r.stderr.strip()[:200]}")
        ino_a = os.stat(so).st_ino
        lib_a = kfuse._open_library(so)
        check(kfuse._open_library(so) is lib_a, "the same unchanged file loads as the same library")

        r = compile_to(k, b, so)
        check(r.returncode == 0, f"rebuild with {os.path.basename(b)}: {r.stderr.strip()[:200]}")
        check(os.stat(so).st_ino != ino_a, "the rebuilt module is a new file (renamed into place)")
        lib_b = kfuse._open_library(so)
        check(lib_b is not lib_a and addr(lib_b) != addr(lib_a),
              "the rebuilt module loads as a new library, not the cached first one")

        before = {p: digest(os.path.join(d, p)) for p in ("m.so", "m.so.weights")}
        bad = os.path.join(d, "bad.pt2")
        with open(bad, "wb") as f:
            f.write(b"PK\x03\x04 not really a zip archive")
        r = compile_to(k, bad, so)
        check(r.returncode != 0, "compiling a malformed archive fails")
        r = compile_to(k, a, so, "--report", os.path.join(d, "no-such-dir", "r.json"))
        check(r.returncode != 0 and "r.json: cannot write the report" in r.stderr and "kfuse-tmp" not in r.stderr,
              f"an unwritable --report fails the compile: {r.stderr.strip()[:200]}")
        after = {p: digest(os.path.join(d, p)) for p in ("m.so", "m.so.weights")}
        check(before == after, "failed rebuilds leave the previous module and weights as they were")
        left = sorted(p for p in os.listdir(d) if "kfuse-tmp" in p)
        check(not left, f"no temporary files left behind ({left})")

        # rewritten in place: same inode, new size and time
        with open(so, "ab") as f:
            f.write(b"\0" * 16)
        try:
            kfuse._open_library(so)
            check(False, "a module rewritten in place is refused")
        except kfuse.KfuseError as e:
            check("rewritten in place" in str(e), f"a module rewritten in place is refused: {e}")
    symbol_checks(k, b, check)
    if os.environ.get("KFUSE_LIBCUDA"):
        deploy_checks(k, a, b, check)
    else:
        print("skip the create checks: KFUSE_LIBCUDA does not name the fake driver")
    if fails:
        print(f"loader_check: {len(fails)} failure(s)")
        return 1
    print("loader_check: all passed")
    return 0


def deploy_checks(k, mlp, norms, check):
    """Section 3 of the file comment. norms has weights and no library
    steps, so it creates on the fake driver; --no-fuse gives the same
    weights under another plan (another model id)."""
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.so"), os.path.join(d, "b.so")
        r = compile_to(k, norms, a)
        check(r.returncode == 0, f"compile {os.path.basename(norms)}: {r.stderr.strip()[:200]}")
        rc, msg = create(kfuse._open_library(a))
        check(rc == 0, f"a module creates with its weights file: {msg}")

        # rename the pair; a stale a.so.weights of another build appears
        os.rename(a, b)
        os.rename(a + ".weights", b + ".weights")
        r = compile_to(k, norms, a, "--no-fuse")
        check(r.returncode == 0, f"compile {os.path.basename(norms)} --no-fuse: {r.stderr.strip()[:200]}")
        lib_b = kfuse._open_library(b)
        rc, msg = create(lib_b)
        check(rc == 0, f"a renamed pair loads b.so.weights, not the stale a.so.weights: {msg}")

        # another build's weights under the right name
        saved = b + ".saved"
        shutil.copyfile(b + ".weights", saved)
        shutil.copyfile(a + ".weights", b + ".weights")
        rc, msg = create(lib_b)
        check(rc == 5 and "b.so.weights belongs to another module" in msg,
              f"another build's weights file is refused (KFUSE_EWEIGHTS): {msg}")
        os.replace(saved, b + ".weights")
        rc, msg = create(lib_b, weights=a + ".weights")
        check(rc == 5 and "belongs to another module" in msg,
              f"... also when named explicitly: {msg}")

        # a reader maps the weights; the module is rebuilt at the same path
        with open(b + ".weights", "rb") as f:
            old_bytes = f.read()
            view = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            old_ino = os.fstat(f.fileno()).st_ino
            r = compile_to(k, norms, b, "--no-fuse", "--no-horizontal")
            check(r.returncode == 0, f"rebuild b.so: {r.stderr.strip()[:200]}")
            check(os.stat(b + ".weights").st_ino != old_ino,
                  "the rebuilt weights are a new file (renamed into place)")
            check(view[:] == old_bytes and os.fstat(f.fileno()).st_size == len(old_bytes),
                  "a reader's mapping of the old weights is intact after the rebuild")
            view.close()
        # this process still has the old b.so: its plan is not the new file's
        rc, msg = create(lib_b)
        check(rc == 5 and "the module file was replaced since this process loaded it" in msg,
              f"the old library refuses the rebuilt module's weights: {msg}")
        rc, msg = create(kfuse._open_library(b))
        check(rc == 0, f"the rebuilt module loads and creates: {msg}")


INTERPOSER = r"""
#include <string.h>
#include "kfuse_runtime.h"
int interposed_calls;
void kfuse_options_init(kfuse_options *o) {
  interposed_calls++;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}
"""


def symbol_checks(k, model, check):
    """Section 4 of the file comment."""
    with tempfile.TemporaryDirectory() as d:
        src, lib = os.path.join(d, "interposer.c"), os.path.join(d, "libinterposer.so")
        with open(src, "w") as f:
            f.write(INTERPOSER)
        r = subprocess.run(["cc", "-shared", "-fPIC", "-I", os.path.join(HERE, "..", "runtime"),
                            "-o", lib, src], capture_output=True, text=True)
        check(r.returncode == 0, f"build an interposer: {r.stderr.strip()[:200]}")
        if r.returncode:
            return
        other = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
        so = os.path.join(d, "m.so")
        r = compile_to(k, model, so)
        check(r.returncode == 0, f"compile {os.path.basename(model)}: {r.stderr.strip()[:200]}")
        mod = kfuse._open_library(so)
        kfuse._bind(mod)
        h = ctypes.c_void_p()
        mod.kfuse_model_create(None, ctypes.byref(h))  # any outcome: the call inside counts
        if h.value:
            mod.kfuse_model_destroy(h)
        calls = ctypes.c_int.in_dll(other, "interposed_calls").value
        check(calls == 0, f"the module's own kfuse_options_init ran, not the global one "
                          f"({calls} interposed call(s))")


if __name__ == "__main__":
    sys.exit(main())
