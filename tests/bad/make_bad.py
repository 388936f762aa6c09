#!/usr/bin/env python3
"""tests/bad/make_bad.py — broken inputs derived from good fixtures, and the
check that kfuse rejects each one cleanly.

  make_bad.py list                         names of the cases (one a line)
  make_bad.py generate --fixtures D --out O   write every broken file into O
  make_bad.py check --kfuse K --fixtures D --out O CASE...
                                           write CASE's file and run kfuse on it

A case passes when kfuse exits with status 1 (not 0, not a signal, not a
sanitizer's exit code), prints nothing but diagnostics on stderr, and its
first stderr line is one "kfuse: error: ..." line that names the file and
contains the case's expected substring (the record or field at fault);
further lines may only be notes (and a note's indented continuation
lines). Archives are rebuilt the way torch.export
writes them (stored entries, data on 64-byte boundaries) so that each case
breaks exactly one thing. Only the Python standard library is used.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib

SOURCE = "mlp.core.pt2"      # the good archive most cases start from
SOURCE_IO = "mlp.kfio"       # and its recorded inputs/outputs

# ---------------------------------------------------------------------------
# archive helpers


def read_entries(path):
    with zipfile.ZipFile(path) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def write_zip(entries):
    """Stored zip with every entry's data on a 64-byte boundary (an extra
    field pads the local header, as PyTorch's writer does)."""
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        nb = name.encode()
        off = len(out)
        pad = (-(off + 30 + len(nb) + 4)) % 64
        extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        crc = zlib.crc32(data) & 0xFFFFFFFF
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(data), len(data),
                           len(nb), len(extra)) + nb + extra
        assert len(out) % 64 == 0
        out += data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, len(data),
                               len(data), len(nb), 0, 0, 0, 0, 0, off) + nb
    cd_off = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central),
                       cd_off, 0)
    return bytes(out)


class Archive:
    """A good fixture archive, opened for editing by record suffix."""

    def __init__(self, path):
        self.entries = read_entries(path)
        self.raw = open(path, "rb").read()

    def find(self, suffix):
        for i, (n, _) in enumerate(self.entries):
            if n.endswith(suffix):
                return i
        raise SystemExit(f"make_bad: no record ending in {suffix}")

    def get(self, suffix):
        return self.entries[self.find(suffix)][1]

    def put(self, suffix, data):
        i = self.find(suffix)
        self.entries[i] = (self.entries[i][0], data)

    def drop(self, suffix):
        del self.entries[self.find(suffix)]

    def model(self):
        return json.loads(self.get("models/model.json"))

    def put_model(self, j):
        self.put("models/model.json", json.dumps(j).encode())

    def weights_config(self):
        return json.loads(self.get("_weights_config.json"))["config"]

    def zip(self):
        return write_zip(self.entries)


def node(j, name):
    for n in j["graph_module"]["graph"]["nodes"]:
        for o in n["outputs"]:
            if o.get("as_tensor", {}).get("name") == name:
                return n
    raise SystemExit(f"make_bad: no node named {name}")


def first_weight(a):
    """(fqn, record name) of the first parameter in the weights config."""
    fqn, meta = next(iter(a.weights_config().items()))
    return fqn, meta["path_name"]


# ---------------------------------------------------------------------------
# the cases: name -> (builder(fixtures_dir) -> bytes, kind, [expected...])
# Expected substrings: any one must appear in the error line. kind "pt2"
# runs `kfuse info FILE`; "kfio" runs `kfuse run MODEL --io FILE` on a
# small text model written next to it.

CASES = {}


def case(name, kind="pt2", expect=()):
    def reg(fn):
        CASES[name] = (fn, kind, list(expect))
        return fn
    return reg


def src(d):
    return os.path.join(d, SOURCE)


def truncated(frac):
    def build(d):
        raw = open(src(d), "rb").read()
        return raw[: int(len(raw) * frac)]
    return build


for _f in (0.01, 0.25, 0.5, 0.75, 0.999):
    case(f"truncated_{int(_f * 1000):03d}", expect=[])(truncated(_f))


@case("truncated_eocd", expect=[])
def _(d):
    raw = open(src(d), "rb").read()
    return raw[:-10]  # cuts the end-of-central-directory record


@case("flip_central_directory", expect=["model.json", "central", "inconsistent", "zip", "archive"])
def _(d):
    raw = bytearray(open(src(d), "rb").read())
    # the central-directory file name of the models/*.json record
    at = raw.rfind(b"PK\x01\x02", 0, raw.rfind(b"models/"))
    name_at = raw.find(b"models/", at) + len("models/")
    raw[name_at] ^= 0x20
    return bytes(raw)


@case("flip_central_header", expect=["zip", "archive", "central", "inconsistent", "model.json",
                                     "weight", "record"])
def _(d):
    raw = bytearray(open(src(d), "rb").read())
    at = raw.rfind(b"PK\x01\x02")
    raw[at + 1] ^= 0xFF  # the signature of the last central-directory entry
    return bytes(raw)


@case("flip_json_record", expect=["model.json"])
def _(d):
    a = Archive(src(d))
    good = a.get("models/model.json")
    # flip one byte of the stored JSON but keep the recorded CRC: the reader
    # must notice (CRC check) rather than parse garbage
    raw = bytearray(a.raw)
    at = raw.find(good[:64]) + len(good) // 2
    raw[at] ^= 0x01
    return bytes(raw)


@case("missing_model_json", expect=["models/"])
def _(d):
    a = Archive(src(d))
    a.drop("models/model.json")
    return a.zip()


@case("missing_weight_record", expect=["weight"])
def _(d):
    a = Archive(src(d))
    fqn, rec = first_weight(a)
    CASES["missing_weight_record"][2][:] = [rec, fqn]
    a.drop("data/weights/" + rec)
    return a.zip()


@case("missing_weights_config", expect=["weights_config", "fc1.weight"])
def _(d):
    a = Archive(src(d))
    a.drop("_weights_config.json")
    return a.zip()


@case("json_syntax", expect=["model.json"])
def _(d):
    a = Archive(src(d))
    text = a.get("models/model.json")
    a.put("models/model.json", text[: len(text) // 3] + b"}}")
    return a.zip()


@case("json_not_object", expect=["model.json"])
def _(d):
    a = Archive(src(d))
    a.put("models/model.json", b"[1, 2, 3]")
    return a.zip()


@case("json_nodes_not_list", expect=["nodes"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["nodes"] = "relu"
    a.put_model(j)
    return a.zip()


@case("schema_major_7", expect=["schema", "major", "version"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    j["schema_version"]["major"] = 7
    a.put_model(j)
    return a.zip()


@case("unknown_dtype_99", expect=["dtype"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["tensor_values"]["x"]["dtype"] = 99
    a.put_model(j)
    return a.zip()


@case("shape_contradicts_op", expect=["relu"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    tv = j["graph_module"]["graph"]["tensor_values"]["relu"]
    tv["sizes"][1] = {"as_int": tv["sizes"][1]["as_int"] + 3}
    a.put_model(j)
    return a.zip()


@case("attribute_contradicts_shape", expect=["permute", "dims"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    n = node(j, "permute")
    for arg in n["inputs"]:
        if arg["name"] == "dims":
            arg["arg"] = {"as_ints": [1, 0, 2]}
    a.put_model(j)
    return a.zip()


@case("weight_wrong_size", expect=["weight"])
def _(d):
    a = Archive(src(d))
    fqn, rec = first_weight(a)
    CASES["weight_wrong_size"][2][:] = [rec, fqn]
    data = a.get("data/weights/" + rec)
    a.put("data/weights/" + rec, data[:-4])
    return a.zip()


@case("param_graph_offset", expect=["fc1.weight", "storage offset"])
def _(d):
    """the graph's view of a parameter starts far past its storage (the
    weights config, which the record is checked against, says 0)"""
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["tensor_values"]["p_fc1_weight"]["storage_offset"] = {"as_int": 100000}
    a.put_model(j)
    return a.zip()


@case("param_graph_strides", expect=["fc1.weight", "strides"])
def _(d):
    """the graph's strides for a parameter are not the weights config's"""
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["tensor_values"]["p_fc1_weight"]["strides"] = [{"as_int": 1}, {"as_int": 32}]
    a.put_model(j)
    return a.zip()


@case("graph_output_unknown", expect=["no_such_output"])
def _(d):
    """graph.outputs names a value nothing defines"""
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["outputs"] = [{"as_tensor": {"name": "no_such_output"}}]
    a.put_model(j)
    return a.zip()


@case("graph_output_disagrees", expect=["graph output 0", "relu"])
def _(d):
    """graph.outputs and the signature's output_specs name different values"""
    a = Archive(src(d))
    j = a.model()
    j["graph_module"]["graph"]["outputs"] = [{"as_tensor": {"name": "relu"}}]
    a.put_model(j)
    return a.zip()


@case("unknown_op_target", expect=["frobnicate"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    node(j, "relu")["target"] = "torch.ops.aten.frobnicate.default"
    a.put_model(j)
    return a.zip()


@case("higher_order_op", expect=["cond"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    node(j, "relu")["target"] = "torch.ops.higher_order.cond"
    a.put_model(j)
    return a.zip()


@case("undefined_operand", expect=["no_such_value"])
def _(d):
    a = Archive(src(d))
    j = a.model()
    node(j, "relu")["inputs"][0]["arg"] = {"as_tensor": {"name": "no_such_value"}}
    a.put_model(j)
    return a.zip()


@case("buffer_state_core", expect=["held before"])
def _(d):
    """scratch_buffers with the cat reading the buffer's old value (state
    kept between calls): refused, where the fixture's writes are dropped"""
    a = Archive(os.path.join(d, "scratch_buffers.core.pt2"))
    j = a.model()
    node(j, "cat")["inputs"][0]["arg"]["as_tensors"][1] = {"name": "b_hidden"}
    a.put_model(j)
    return a.zip()


@case("buffer_state_default", expect=["held before"])
def _(d):
    """the same in the default IR: the buffer read first, then overwritten
    in place (copy_ moved after the cat that reads it)"""
    a = Archive(os.path.join(d, "scratch_buffers.default.pt2"))
    j = a.model()
    nodes = j["graph_module"]["graph"]["nodes"]
    cp = node(j, "copy_")
    node(j, "cat")["inputs"][0]["arg"]["as_tensors"][1] = {"name": "b_hidden"}
    nodes.remove(cp)
    nodes.insert(nodes.index(node(j, "cat")) + 1, cp)
    a.put_model(j)
    return a.zip()


@case("pickled_weight", expect=["pickle"])
def _(d):
    a = Archive(src(d))
    cfg = json.loads(a.get("_weights_config.json"))
    next(iter(cfg["config"].values()))["use_pickle"] = True
    a.put("_weights_config.json", json.dumps(cfg).encode())
    return a.zip()


@case("empty_file", expect=[])
def _(d):
    return b""


@case("not_a_zip", expect=[])
def _(d):
    return b"this is not a zip archive, just some text\n" * 4


# ---- .kfio files, run against a small text model -------------------------

TEXT_MODEL = """"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4x16xf32>) -> (tensor<4x16xf32>), sym_name = "relu"}> ({
  ^bb0(%x: tensor<4x16xf32>):
    %r = "kf.relu"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("r")
    "func.return"(%r) : (tensor<4x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
"""


def kfio(header, data):
    hb = json.dumps(header).encode()
    start = (16 + len(hb) + 63) // 64 * 64
    return b"KFIO0001" + struct.pack("<Q", len(hb)) + hb + b"\0" * (start - 16 - len(hb)) + data


def good_io(d):
    raw = open(os.path.join(d, SOURCE_IO), "rb").read()
    h = struct.unpack("<Q", raw[8:16])[0]
    start = (16 + h + 63) // 64 * 64
    return json.loads(raw[16:16 + h]), raw[start:], raw


def io_case(name, expect):
    def reg(fn):
        return case(name, kind="kfio", expect=expect)(fn)
    return reg


@io_case("kfio_bad_magic", ["magic"])
def _(d):
    return b"KFIO9999" + good_io(d)[2][8:]


@io_case("kfio_truncated_prefix", ["header length"])
def _(d):
    return good_io(d)[2][:12]


@io_case("kfio_header_past_end", ["header length"])
def _(d):
    raw = good_io(d)[2]
    return raw[:8] + struct.pack("<Q", len(raw)) + raw[16:]


@io_case("kfio_malformed_json", ["malformed JSON"])
def _(d):
    h, data, _ = good_io(d)
    hb = json.dumps(h).encode()[:-5]
    start = (16 + len(hb) + 63) // 64 * 64
    return b"KFIO0001" + struct.pack("<Q", len(hb)) + hb + b"\0" * (start - 16 - len(hb)) + data


@io_case("kfio_unknown_dtype", ["inputs[0] ('x').dtype"])
def _(d):
    h, data, _ = good_io(d)
    h["inputs"][0]["dtype"] = "f8"
    return kfio(h, data)


@io_case("kfio_nbytes_mismatch", ["inputs[0] ('x').nbytes"])
def _(d):
    h, data, _ = good_io(d)
    h["inputs"][0]["nbytes"] -= 4
    return kfio(h, data)


@io_case("kfio_offset_out_of_range", ["outputs[0] ('out').offset"])
def _(d):
    h, data, _ = good_io(d)
    h["outputs"][0]["offset"] = len(data)
    return kfio(h, data)


@io_case("kfio_data_truncated", ["outputs[0] ('out').offset"])
def _(d):
    h, data, _ = good_io(d)
    return kfio(h, data[:-8])


@io_case("kfio_version_2", ["version 2"])
def _(d):
    h, data, _ = good_io(d)
    h["version"] = 2
    return kfio(h, data)


@io_case("kfio_wrong_model", ["inputs", "outputs"])
def _(d):
    h, data, _ = good_io(d)
    h["outputs"].append(dict(h["outputs"][0], name="extra"))
    return kfio(h, data)


# ---------------------------------------------------------------------------


def file_name(c):
    return f"{c}.kfio" if CASES[c][1] == "kfio" else f"{c}.pt2"


def generate(fixtures, out, names):
    os.makedirs(out, exist_ok=True)
    paths = {}
    for c in names:
        build = CASES[c][0]
        p = os.path.join(out, file_name(c))
        with open(p, "wb") as f:
            f.write(build(fixtures))
        paths[c] = p
    return paths


def check(kfuse, fixtures, out, c):
    path = generate(fixtures, out, [c])[c]
    kind, expect = CASES[c][1], CASES[c][2]
    if kind == "kfio":
        model = os.path.join(out, c + ".model.mlir")  # per case: tests run in parallel
        with open(model, "w") as f:
            f.write(TEXT_MODEL)
        cmd = [kfuse, "run", model, "--io", path]
    else:
        cmd = [kfuse, "info", "--no-ir", path]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return f"{c}: kfuse did not finish within 120 s"
    err = r.stderr.decode("utf-8", "replace")
    shown = "\n".join("    | " + ln for ln in err.splitlines()[:20])
    if r.returncode < 0:
        return f"{c}: kfuse was killed by signal {-r.returncode}\n{shown}"
    if r.returncode != 1:
        return f"{c}: exit status {r.returncode}, expected 1\n{shown}"
    lines = err.splitlines()
    if not lines:
        return f"{c}: exit status 1 but nothing on stderr"
    if not lines[0].startswith("kfuse: error: "):
        return f"{c}: first stderr line is not 'kfuse: error: ...'\n{shown}"
    # notes may follow, and a note may continue on indented lines (a stack
    # trace); nothing else may
    extra, in_note = [], False
    for ln in lines[1:]:
        if ln.startswith("kfuse: note: "):
            in_note = True
        elif not (in_note and ln[:1].isspace()):
            extra.append(ln)
    if extra:
        return f"{c}: expected one error line (notes allowed after it), got more\n{shown}"
    first = lines[0]
    base = os.path.basename(path)
    if base not in first:
        return f"{c}: the error does not name the file {base}\n{shown}"
    if expect and not any(e in first for e in expect):
        return f"{c}: the error names none of {expect}\n{shown}"
    print(f"{c}: ok: {first}")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["list", "generate", "check"])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--kfuse")
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "fixtures"))
    ap.add_argument("--out", default="bad-out")
    a = ap.parse_intermixed_args()
    names = a.cases or list(CASES)
    for c in names:
        if c not in CASES:
            raise SystemExit(f"make_bad: unknown case {c}")
    if a.command == "list":
        print("\n".join(CASES))
        return 0
    if a.command == "generate":
        for c, p in generate(a.fixtures, a.out, names).items():
            print(p)
        return 0
    if not a.kfuse:
        raise SystemExit("make_bad: check needs --kfuse")
    failures = [f for f in (check(a.kfuse, a.fixtures, a.out, c) for c in names) if f]
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
