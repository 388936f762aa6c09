#!/usr/bin/env python3
"""tests/loader_gate_check.py — kfuse.Module.close() against calls on other
threads, without a GPU or PyTorch.

    python3 tests/loader_gate_check.py

close() must wait for a call in progress on another thread before it
destroys the handle (the C destroy would wait too, but the handle itself
must not be used after it is freed), destroy exactly once, and make later
calls raise KfuseError instead of passing a freed or NULL handle to the
module. Also: Module.check() turns the module's KFUSE_EINDEX into
KfuseIndexError (an IndexError, as PyTorch raises) and other codes into
KfuseError. And kfuse.load's options reach the module's create:
verify_weights=False as kfuse_options.skip_weights_hash = 1, check=True (or
KFUSE_CHECK=1) as a checked Module, cuda_graph and the weights path
alongside. The module's library (and PyTorch, for the options) is a
stand-in here: only the loader's side is under test
(scripts/gpu_concurrency_check.sh runs the real thing on a GPU).
"""
import contextlib
import os
import sys
import threading
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kfuse  # noqa: E402


class FakeLib:
    def __init__(self):
        self.destroyed = []
        self.check_rc = 0

    def kfuse_model_destroy(self, h):
        self.destroyed.append(h)

    def kfuse_model_check(self, h):
        return self.check_rc

    def kfuse_model_error(self, h):
        return b"an index was out of range in step 1 (g1_embedding)" if self.check_rc == 10 else b"boom"


def load_with_options(**kw):
    """kfuse.load("fake.so", **kw) on a stand-in library and torch: the
    Module and the kfuse_options its create received."""
    seen = {}

    def create(opts, out):
        o = opts._obj
        seen.update(struct_size=o.struct_size, device=o.device, weights_path=o.weights_path,
                    cuda_graph=o.cuda_graph, skip_weights_hash=o.skip_weights_hash,
                    conv_search=o.conv_search)
        out._obj.value = 0x5678
        return 0

    lib = types.SimpleNamespace()
    for name, fn in (("kfuse_model_create", create), ("kfuse_model_run", lambda *a: 0),
                     ("kfuse_model_destroy", lambda h: None), ("kfuse_model_num_inputs", lambda h: 0),
                     ("kfuse_model_num_outputs", lambda h: 0), ("kfuse_model_input_info", lambda *a: 0),
                     ("kfuse_model_output_info", lambda *a: 0), ("kfuse_model_error", lambda h: b""),
                     ("kfuse_last_error", lambda: b""), ("kfuse_model_check", lambda h: 0)):
        setattr(lib, name, fn)  # plain functions: _bind sets argtypes on them
    torch = types.ModuleType("torch")
    torch.device = lambda kind, index: types.SimpleNamespace(type=kind, index=index)
    torch.cuda = types.SimpleNamespace(current_device=lambda: 0, init=lambda: None,
                                       device=lambda d: contextlib.nullcontext())
    saved = sys.modules.get("torch"), kfuse._open_library
    sys.modules["torch"], kfuse._open_library = torch, lambda path: lib
    try:
        m = kfuse.load("fake.so", **kw)
    finally:
        kfuse._open_library = saved[1]
        if saved[0] is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved[0]
    return m, seen


def main():
    fails = 0

    def check(ok, what):
        nonlocal fails
        print(("PASS " if ok else "FAIL ") + what)
        fails += not ok

    os.environ.pop("KFUSE_CHECK", None)
    m, o = load_with_options()
    check(o.get("skip_weights_hash") == 0 and o.get("cuda_graph") == 0 and o.get("weights_path") is None
          and o.get("conv_search") == 1 and not m._check,
          "load(): defaults hash the weights, no CUDA graph, time cuDNN's engines, no checked calls")
    m, o = load_with_options(conv_search=False)
    check(o.get("conv_search") == 0 and o.get("skip_weights_hash") == 0, "load(conv_search=False) reaches create")
    m, o = load_with_options(verify_weights=False, check=True, cuda_graph=True, weights="w.bin", device=0)
    check(o.get("skip_weights_hash") == 1 and o.get("cuda_graph") == 1 and o.get("weights_path") == b"w.bin"
          and m._check, "load(verify_weights=False, check=True, ...) reaches create and the Module")
    os.environ["KFUSE_CHECK"] = "1"
    m, o = load_with_options()
    del os.environ["KFUSE_CHECK"]
    check(m._check and o.get("skip_weights_hash") == 0, "KFUSE_CHECK=1 checks calls, weights still hashed")

    m = object.__new__(kfuse.Module)  # no torch: set up what close() and calls use
    m.path, m._lib, m._h = "fake.so", FakeLib(), 0x1234
    m._gate, m._active = threading.Condition(), 0

    def raised(rc):
        m._lib.check_rc = rc
        try:
            m.check()
            return None
        except kfuse.KfuseError as e:
            return e

    e0, e10, e7 = raised(0), raised(10), raised(7)
    check(e0 is None and isinstance(e10, kfuse.KfuseIndexError) and isinstance(e10, IndexError)
          and "g1_embedding" in str(e10) and isinstance(e7, kfuse.KfuseError)
          and not isinstance(e7, IndexError), "check(): KfuseIndexError for KFUSE_EINDEX, KfuseError otherwise")
    m._lib.check_rc = 0

    inside, leave = threading.Event(), threading.Event()
    seen = []

    def call():
        with m._using() as h:
            seen.append(h)
            inside.set()
            leave.wait(10)

    a = threading.Thread(target=call)
    a.start()
    inside.wait(10)
    b = threading.Thread(target=m.close)
    b.start()
    b.join(0.3)
    check(b.is_alive() and not m._lib.destroyed, "close() waits for a call in progress on another thread")
    leave.set()
    a.join(10)
    b.join(10)
    check(not b.is_alive() and m._lib.destroyed == [0x1234] and seen == [0x1234],
          "the handle is destroyed once, after the call")
    try:
        with m._using():
            pass
        check(False, "a call after close() raises KfuseError")
    except kfuse.KfuseError as e:
        check("closed" in str(e), "a call after close() raises KfuseError")
    m.close()
    m.__del__()
    check(m._lib.destroyed == [0x1234], "close() again and __del__ destroy nothing more")
    print("PASS" if not fails else "FAIL")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
