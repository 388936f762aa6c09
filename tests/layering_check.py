#!/usr/bin/env python3
"""tests/layering_check.py ROOT — scripts/layering.py on small trees made
here: a clean tree passes; an include of a higher layer's header, of
another folder's private header, or from runtime/ outside it fails and
names the line; a listed exception that is gone fails; an
include/kfuse/ header with no owner fails; docs/ARCHITECTURE.md's table
whose folder lists disagree with the includes (or lack a folder's row)
fails, and --fix-doc rewrites the lists."""
import os
import shutil
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(sys.argv[1], "scripts", "layering.py")


def tree(files, allowed=None):
    d = tempfile.mkdtemp(prefix="layering-")
    for path, text in files.items():
        p = os.path.join(d, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    if allowed is not None:
        os.makedirs(os.path.join(d, "scripts"), exist_ok=True)
        with open(os.path.join(d, "scripts", "layering_allowed.txt"), "w") as f:
            f.write(allowed)
    return d


def run(d):
    r = subprocess.run([sys.executable, SCRIPT, "--root", d], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


BASE = {
    "include/kfuse/ir.h": "#pragma once\n",
    "include/kfuse/cache.h": '#include "kfuse/ir.h"\n',
    "include/kfuse/status.h": "",
    "pass/pass_int.h": '#include "kfuse/ir.h"\n',
    "pass/dce.c": '#include "kfuse/ir.h"\n#include "pass_int.h"\n',
    "cache/store.c": '#include "kfuse/cache.h"\n#include "kfuse/status.h"\n#include "kfr_plan.h"\n',
    "runtime/kfr_plan.h": "",
    "runtime/kfr_int.h": '#include "kfr_plan.h"\n',
    "runtime/kfr_run.c": '#include "kfr_int.h"\n#include <stdio.h>\n',
}
fails = 0


def expect(name, files, rc_want, text_want="", allowed=None):
    global fails
    d = tree(files, allowed)
    rc, out = run(d)
    shutil.rmtree(d, ignore_errors=True)
    if rc != rc_want or text_want not in out:
        fails += 1
        print(f"FAIL {name}: rc {rc} (want {rc_want}), output:\n{out}")
    else:
        print(f"ok   {name}")


expect("clean tree", BASE, 0, "keeps the rule")
expect("a higher layer's header", dict(BASE, **{"pass/fold.c": '#include "kfuse/cache.h"\n'}), 1,
       'pass/fold.c:1: #include "kfuse/cache.h": pass/ is below cache/')
expect("another folder's private header", dict(BASE, **{"cache/key.c": '\n#include "pass_int.h"\n'}), 1,
       'cache/key.c:2: #include "pass_int.h": pass_int.h is pass/\'s private header')
expect("runtime's private header", dict(BASE, **{"cache/key.c": '#include "kfr_int.h"\n'}), 1,
       "kfr_int.h is runtime/'s private header")
expect("runtime outside itself", dict(BASE, **{"runtime/kfr_x.c": '#include "kfuse/status.h"\n'}), 1,
       "runtime/ stands alone")
expect("a listed exception", dict(BASE, **{"pass/fold.c": '#include "kfuse/cache.h"\n'}), 0, "1 known exception",
       allowed="pass/fold.c: kfuse/cache.h\n")
expect("a stale exception", BASE, 1, "no longer occurs", allowed="pass/fold.c: kfuse/cache.h\n")
expect("a public header with no owner", dict(BASE, **{"include/kfuse/new.h": ""}), 1, "no owner")


def doc(lists, drop=None):
    """docs/ARCHITECTURE.md with a row per folder, "may call" beginning
    with lists[folder] in bold (default: none)"""
    rows = ["| folder | what it holds | may call |", "|---|---|---|"]
    for f in ["support", "ir", "interp", "pass", "frontend", "agent", "cache", "judge", "driver", "tools",
              "runtime"]:
        if f != drop:
            rows.append(f"| `{f}/` | things | **{lists.get(f, '—')}**; prose |")
    return {"docs/ARCHITECTURE.md": "# x\n\n" + "\n".join(rows) + "\n"}


TRUE_LISTS = {"pass": "ir", "cache": "support, ir, runtime"}
expect("the table agrees", dict(BASE, **doc(TRUE_LISTS)), 0, "keeps the rule")
expect("the table leaves a folder out", dict(BASE, **doc({"pass": "ir", "cache": "support, ir"})), 1,
       "cache/'s \"may call\" cell lists **support, ir**; its includes are **support, ir, runtime**")
expect("the table names one too many", dict(BASE, **doc(dict(TRUE_LISTS, **{"pass": "ir, interp"}))), 1,
       "pass/'s \"may call\" cell lists **ir, interp**; its includes are **ir**")
expect("the table lacks a row", dict(BASE, **doc(TRUE_LISTS, drop="judge")), 1, "no row for `judge/`")
d = tree(dict(BASE, **doc({})))
subprocess.run([sys.executable, SCRIPT, "--root", d, "--fix-doc"], capture_output=True, check=True)
rc, out = run(d)
shutil.rmtree(d, ignore_errors=True)
if rc != 0:
    fails += 1
    print(f"FAIL --fix-doc: rc {rc} after the fix:\n{out}")
else:
    print("ok   --fix-doc")



def objects_case(name, caller_folder, callee_folder, rc_want, text_want):
    """two objects compiled with cc where CMake puts them, caller_folder's
    calling a function callee_folder's defines"""
    global fails
    d = tree(BASE)
    objdir = os.path.join(d, "build", "CMakeFiles", "kfuse_core.dir")
    for folder, text in ((caller_folder, "int callee(void);\nint caller(void) { return callee(); }\n"),
                         (callee_folder, "int callee(void) { return 1; }\n")):
        src = os.path.join(d, f"{folder}_{'caller' if 'caller' in text else 'callee'}.c")
        with open(src, "w") as f:
            f.write(text)
        os.makedirs(os.path.join(objdir, folder), exist_ok=True)
        obj = os.path.join(objdir, folder, os.path.basename(src) + ".o")
        subprocess.run(["cc", "-c", src, "-o", obj], check=True)
    r = subprocess.run([sys.executable, SCRIPT, "--root", d, "--objects", os.path.join(d, "build")],
                       capture_output=True, text=True)
    shutil.rmtree(d, ignore_errors=True)
    out = r.stdout + r.stderr
    if r.returncode != rc_want or text_want not in out:
        fails += 1
        print(f"FAIL {name}: rc {r.returncode} (want {rc_want}), output:\n{out}")
    else:
        print(f"ok   {name}")


objects_case("a call down", "cache", "support", 0, "keeps the rule")
objects_case("a call up", "pass", "cache", 1, "call pass/ -> cache/: callee: pass/ is below cache/")
sys.exit(1 if fails else 0)
