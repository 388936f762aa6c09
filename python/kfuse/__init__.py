"""kfuse — load modules compiled by kfuse into PyTorch, and export models for it.

    import kfuse
    kfuse.export(model, (x,), "model.pt2")   # torch.export with the decompositions kfuse expects
    # $ kfuse compile model.pt2 -o model.so
    m = kfuse.load("model.so")
    y = m(x)                                 # torch tensors in, torch tensors out

Pure Python over ctypes: the module's C API is runtime/kfuse_runtime.h. The
call runs on the current CUDA stream of the input's device and returns when
the work is queued, like any PyTorch CUDA op.

Threads: a Module may be called from several threads (runs are serialised,
on the host and on the GPU, see docs/DEPLOY.md); close() waits for calls in
progress on other threads, and calls after it raise KfuseError. A call
captured into a torch.cuda.CUDAGraph keeps the module's GPU memory alive
until that graph is gone, even after close().
"""

import contextlib
import ctypes
import os
import threading

__all__ = ["load", "export", "Module", "KfuseError", "KfuseIndexError", "RolloutClient", "RolloutError"]

_MAX_RANK = 8
# KFUSE_DTYPE_* (runtime/kfuse_runtime.h) -> torch dtype name
_DTYPES = {1: "float32", 2: "float64", 3: "float16", 4: "bfloat16", 5: "int64",
           6: "int32", 7: "int16", 8: "int8", 9: "uint8", 10: "bool"}


class KfuseError(RuntimeError):
    """A failure reported by a kfuse module (create or run)."""


class KfuseIndexError(KfuseError, IndexError):
    """An index op (gather, embedding, index, index_select) met an index out
    of range, where PyTorch raises IndexError (found by a checked call)."""


_EINDEX = 10  # KFUSE_EINDEX (runtime/kfuse_runtime.h)


class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_int),
                ("weights_path", ctypes.c_char_p), ("cuda_graph", ctypes.c_int),
                ("skip_weights_hash", ctypes.c_int), ("conv_search", ctypes.c_int)]


class _Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * _MAX_RANK)]


def _bind(lib):
    P, I = ctypes.c_void_p, ctypes.c_int
    lib.kfuse_model_create.argtypes = [ctypes.POINTER(_Options), ctypes.POINTER(P)]
    lib.kfuse_model_create.restype = I
    lib.kfuse_model_run.argtypes = [P, P, ctypes.POINTER(P), ctypes.POINTER(P)]
    lib.kfuse_model_run.restype = I
    lib.kfuse_model_destroy.argtypes = [P]
    lib.kfuse_model_destroy.restype = None
    for f in (lib.kfuse_model_num_inputs, lib.kfuse_model_num_outputs):
        f.argtypes = [P]
        f.restype = I
    for f in (lib.kfuse_model_input_info, lib.kfuse_model_output_info):
        f.argtypes = [P, I, ctypes.POINTER(_Info)]
        f.restype = I
    lib.kfuse_model_error.argtypes = [P]
    lib.kfuse_model_error.restype = ctypes.c_char_p
    lib.kfuse_last_error.argtypes = []
    lib.kfuse_last_error.restype = ctypes.c_char_p
    try:  # modules from before kfuse_model_check have none
        lib.kfuse_model_check.argtypes = [P]
        lib.kfuse_model_check.restype = I
    except AttributeError:
        pass


# Libraries loaded by this process, by file identity (st_dev, st_ino) ->
# ((st_size, st_mtime_ns), CDLL). dlopen returns the library already loaded
# under the same path name, so a module rebuilt at the same path would come
# back as the old one (with the new weights file beside it). Each distinct
# file is opened once and loaded as /proc/self/fd/N: a name no other file
# gets while the descriptor stays open, which it does for the life of the
# process, like the library itself (ctypes never unloads one). The kernel
# resolves that name to the file itself, so the module still finds its
# weights beside its real path.
_loaded = {}
_loaded_lock = threading.Lock()


def _elf_problem(fd, size):
    """Why the open file cannot be dlopen'ed safely, or None: the checks of
    kfuse run's loader (support/elf.c). The dynamic loader maps segments
    as the program headers say and touches them, so a module cut short
    would kill this process with SIGBUS inside dlopen."""
    import struct
    eh = os.pread(fd, 64, 0)
    if len(eh) < 64 or eh[:4] != b"\x7fELF":
        return f"not an ELF file ({size} bytes)"
    if eh[4] != 2 or eh[5] != 1:
        return "not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", eh, 16)
    phoff, shoff = struct.unpack_from("<QQ", eh, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", eh, 54)
    if e_machine != 62 or e_type != 3:
        return f"not an x86-64 shared object (machine {e_machine}, type {e_type})"
    if phentsize != 56 or phnum == 0 or phoff + phnum * 56 > size:
        return f"its program headers lie outside its {size} bytes: truncated or damaged"
    if shnum and (shentsize != 64 or shoff + shnum * 64 > size):
        return f"its section headers end past its {size} bytes: truncated"
    ph = os.pread(fd, phnum * 56, phoff)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", ph, i * 56)
        if p_type == 1 and p_offset + p_filesz > size:
            return f"segment {i} ends at byte {p_offset + p_filesz} of a {size}-byte file: truncated"
    return None


def _open_library(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise KfuseError(f"{path}: cannot open the module: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        problem = _elf_problem(fd, st.st_size)
        if problem:
            raise KfuseError(f"{path}: not a loadable module: {problem}")
        key, sig = (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns)
        with _loaded_lock:
            hit = _loaded.get(key)
            if hit is not None:
                if hit[0] != sig:
                    raise KfuseError(
                        f"{path}: this file was rewritten in place after this process loaded it, and "
                        f"a process cannot load two versions of one file; write the new module to a new "
                        f"file (kfuse compile replaces its output by renaming) or restart the process")
                return hit[1]
            try:
                lib = ctypes.CDLL(f"/proc/self/fd/{fd}")
            except OSError as e:
                raise KfuseError(f"{path}: cannot load the module: {e}") from None
            _loaded[key] = (sig, lib)
            fd = -1  # kept open: see above
            return lib
    finally:
        if fd >= 0:
            os.close(fd)


class Module:
    """A loaded kfuse module: call it with torch tensors."""

    def __init__(self, path, device=None, weights=None, cuda_graph=False, verify_weights=True,
                 check=None, conv_search=True):
        """verify_weights=False: do not hash the weights file at create
        (its exact size and the model id in its header are still checked).
        conv_search=False: each convolution takes cuDNN's heuristics' engine
        instead of the fastest timed one (a faster create, the same choice
        every time; kfuse_options.conv_search).
        check: after every call, wait for it and raise KfuseIndexError if
        an index was out of range (a debug aid: each call then synchronises;
        default: the KFUSE_CHECK=1 environment variable)."""
        self._h = None
        self._check = (os.environ.get("KFUSE_CHECK", "0") not in ("", "0")) if check is None else bool(check)
        # calls in progress; close() waits for them (the handle must not be
        # destroyed under a call on another thread)
        self._gate = threading.Condition()
        self._active = 0
        self.path = os.path.abspath(path)
        # the file first (a truncated or foreign one is refused before
        # anything else is loaded), then PyTorch
        self._lib = _open_library(self.path)
        import torch
        self._torch = torch
        try:
            _bind(self._lib)
        except AttributeError as e:
            raise KfuseError(f"{path}: not a kfuse module ({e})") from None
        self.device = torch.device("cuda", torch.cuda.current_device() if device is None else device)
        torch.cuda.init()  # the module shares PyTorch's primary context
        opts = _Options(ctypes.sizeof(_Options), self.device.index,
                        os.fsencode(weights) if weights else None, 1 if cuda_graph else 0,
                        0 if verify_weights else 1, 1 if conv_search else 0)
        h = ctypes.c_void_p()
        with torch.cuda.device(self.device):
            rc = self._lib.kfuse_model_create(ctypes.byref(opts), ctypes.byref(h))
        if rc != 0:
            msg = self._lib.kfuse_last_error() or b"unknown error"
            raise KfuseError(f"{path}: {msg.decode(errors='replace')} (code {rc})")
        self._h = h
        self.inputs = [self._info(self._lib.kfuse_model_input_info, i)
                       for i in range(self._lib.kfuse_model_num_inputs(h))]
        self.outputs = [self._info(self._lib.kfuse_model_output_info, i)
                        for i in range(self._lib.kfuse_model_num_outputs(h))]

    def _info(self, fn, i):
        info = _Info()
        if fn(self._h, i, ctypes.byref(info)) != 0:
            raise KfuseError(f"{self.path}: cannot query tensor {i}")
        dtype = getattr(self._torch, _DTYPES.get(info.dtype, ""), None)
        if dtype is None:
            raise KfuseError(f"{self.path}: tensor {i} has unknown dtype code {info.dtype}")
        return (info.name.decode() if info.name else f"t{i}", dtype,
                tuple(info.shape[k] for k in range(info.rank)))

    def __call__(self, *args):
        torch = self._torch
        if len(args) != len(self.inputs):
            raise TypeError(f"{os.path.basename(self.path)} takes {len(self.inputs)} inputs, "
                            f"got {len(args)}")
        keep = []
        for t, (name, dtype, shape) in zip(args, self.inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"input '{name}' must be a torch.Tensor")
            if t.dtype != dtype or tuple(t.shape) != shape:
                raise ValueError(f"input '{name}': expected {dtype} {list(shape)}, "
                                 f"got {t.dtype} {list(t.shape)}")
            if t.device != self.device:
                raise ValueError(f"input '{name}' is on {t.device}, the module on {self.device}")
            keep.append(t.contiguous())
        outs = [torch.empty(shape, dtype=dtype, device=self.device)
                for _, dtype, shape in self.outputs]
        ins = (ctypes.c_void_p * max(1, len(keep)))(*[t.data_ptr() for t in keep])
        ous = (ctypes.c_void_p * max(1, len(outs)))(*[t.data_ptr() for t in outs])
        stream = torch.cuda.current_stream(self.device).cuda_stream
        with self._using() as h:
            rc = self._lib.kfuse_model_run(h, ctypes.c_void_p(stream), ins, ous)
            if rc != 0:
                msg = self._lib.kfuse_model_error(h) or b"unknown error"
                raise KfuseError(f"{self.path}: {msg.decode(errors='replace')} (code {rc})")
            if self._check and not torch.cuda.is_current_stream_capturing():
                self._check_handle(h)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def check(self):
        """Wait for the calls so far and raise KfuseIndexError if one met an
        out-of-range index (the flag is cleared), KfuseError if one failed
        on the GPU."""
        with self._using() as h:
            self._check_handle(h)

    def _check_handle(self, h):
        if not hasattr(self._lib, "kfuse_model_check"):
            raise KfuseError(f"{self.path}: this module predates kfuse_model_check; rebuild it to check runs")
        rc = self._lib.kfuse_model_check(h)
        if rc != 0:
            msg = (self._lib.kfuse_model_error(h) or b"unknown error").decode(errors="replace")
            cls = KfuseIndexError if rc == _EINDEX else KfuseError
            raise cls(f"{self.path}: {msg} (code {rc})")

    @contextlib.contextmanager
    def _using(self):
        """The handle, for one call; close() waits until the call is done."""
        with self._gate:
            if self._h is None:
                raise KfuseError(f"{self.path}: the module is closed")
            self._active += 1
        try:
            yield self._h
        finally:
            with self._gate:
                self._active -= 1
                self._gate.notify_all()

    def close(self):
        """Destroy the instance: waits for calls in progress on other
        threads; later calls raise KfuseError. A CUDA graph that captured a
        call keeps the GPU memory until the graph is destroyed."""
        gate = getattr(self, "_gate", None)
        if gate is None:  # __init__ failed before the handle existed
            return
        with gate:
            h, self._h = self._h, None
            while self._active:
                gate.wait()
        if h:
            self._lib.kfuse_model_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def load(path, device=None, weights=None, cuda_graph=False, verify_weights=True, check=None,
         conv_search=True):
    """Load a module compiled by `kfuse compile` (model.so). Its weights file
    (model.so.weights beside it, or `weights`) must be the one compiled with
    it: exact size, the module's model id in its header, and unless
    verify_weights=False the XXH64 of its data (docs/DEPLOY.md). check=True
    (or KFUSE_CHECK=1): every call waits and raises KfuseIndexError on an
    out-of-range index, as PyTorch would; conv_search=False: cuDNN's
    heuristics pick each convolution's engine (no timing at create); see
    Module."""
    return Module(path, device=device, weights=weights, cuda_graph=cuda_graph,
                  verify_weights=verify_weights, check=check, conv_search=conv_search)


def export(model, args, path, kwargs=None):
    """torch.export the model in eval mode, decompose to core ATen keeping
    scaled_dot_product_attention whole, and save it as a .pt2 archive.
    The archive holds the graph and the weights, not the example inputs
    (torch.export.save would store them too: 6 GB for a 6 GB input, and
    nothing kfuse reads); args may be FakeTensors (shapes and dtypes only)."""
    import torch
    model = model.eval()
    with torch.no_grad():
        ep = torch.export.export(model, tuple(args), kwargs=kwargs)
        table = torch.export.default_decompositions()
        table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
        ep = ep.run_decompositions(table)
    try:
        ep.example_inputs = None
    except AttributeError:  # a PyTorch without the setter: saved as before
        pass
    torch.export.save(ep, path)
    return ep


def __getattr__(name):
    """kfuse.RolloutClient and kfuse.RolloutError (kfuse.rollout, the client
    of `kfuse serve`), imported on first use: urllib stays out of
    `import kfuse`."""
    if name in ("RolloutClient", "RolloutError"):
        from . import rollout
        return rollout.Client if name == "RolloutClient" else rollout.RolloutError
    raise AttributeError(f"module 'kfuse' has no attribute {name!r}")
