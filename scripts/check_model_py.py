#!/usr/bin/env python3
"""scripts/check_model_py.py — every fixture task's model.py against kfuse's
fp64 interpreter (needs PyTorch; the CPU build is enough).

    python3 scripts/check_model_py.py KFUSE [FIXTURE.pt2 ...]

For each fixture (default: tests/fixtures/*.core.pt2) it writes the tasks
(`kfuse task --all`), and for each task with a model.py: imports it, runs
Model()(*get_inputs()) in PyTorch, records inputs and outputs as a .kfio
file, and runs `kfuse run group.mlir --io` on it, which compares the
interpreter's outputs with PyTorch's (atol = rtol = 1e-4; 1e-2 for f16 and
bf16 outputs). Prints one line per task that fails and the counts; exit
status 0 when every model.py runs and matches.
"""
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_fixtures", os.path.join(HERE, "make_fixtures.py"))
mf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mf)


def main():
    kfuse = os.path.abspath(sys.argv[1])
    models = sys.argv[2:] or sorted(glob.glob(os.path.join(HERE, "..", "tests", "fixtures", "*.core.pt2")))
    counts = {"match": 0, "mismatch": 0, "error": 0, "no model.py": 0}
    missing = {}
    with tempfile.TemporaryDirectory() as tmp:
        for m in models:
            name = os.path.basename(m).split(".")[0]
            d = os.path.join(tmp, name)
            subprocess.run([kfuse, "task", m, "--all", "-o", d, "-q"], check=True)
            for t in json.load(open(os.path.join(d, "tasks.json")))["tasks"]:
                td = t["dir"] if os.path.isabs(t["dir"]) else os.path.join(d, t["dir"])
                task = json.load(open(os.path.join(td, "task.json")))
                if not task.get("model_py"):
                    counts["no model.py"] += 1
                    why = task.get("model_py_why", "")
                    missing[why.split(" (kf.")[-1].split(")")[0] if "kf." in why else why] = why
                    continue
                where = f"{name} group {t['group']}"
                try:
                    s = importlib.util.spec_from_file_location("task_model", os.path.join(td, "model.py"))
                    mod = importlib.util.module_from_spec(s)
                    s.loader.exec_module(mod)
                    torch.manual_seed(t["group"])
                    ins = mod.get_inputs()
                    with torch.no_grad():
                        out = mod.Model(*mod.get_init_inputs())(*ins)
                    outs = list(out) if isinstance(out, (tuple, list)) else [out]
                    low = any(o.dtype in (torch.float16, torch.bfloat16) for o in outs)
                    tol = 1e-2 if low else 1e-4
                    io = os.path.join(td, "check.kfio")
                    mf.write_kfio(io, f"group_{t['group']}", tol, tol,
                                  [(i["name"], x.contiguous()) for i, x in zip(task["inputs"], ins)],
                                  [(o["name"], y.contiguous()) for o, y in zip(task["outputs"], outs)])
                except Exception as e:  # a model.py that does not run is a failure of the generator
                    counts["error"] += 1
                    print(f"ERROR {where}: {type(e).__name__}: {str(e)[:300]}")
                    continue
                r = subprocess.run([kfuse, "run", os.path.join(td, "group.mlir"), "--io", io],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    counts["match"] += 1
                else:
                    counts["mismatch"] += 1
                    print(f"MISMATCH {where}: {(r.stdout + r.stderr).strip()[-400:]}")
    print("model.py:", counts)
    for k, why in sorted(missing.items()):
        print(f"  no model.py: {why}")
    return 1 if counts["mismatch"] or counts["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
