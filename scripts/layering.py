#!/usr/bin/env python3
"""scripts/layering.py — the source tree's one-way layering, checked over
the `#include "..."` lines of every .c and .h in the compiler's folders.

    python3 scripts/layering.py [--root DIR] [--objects BUILD_DIR] [--graph] [--write-allowed] [--fix-doc]

The layers, lowest first (a folder may include the headers of its own
layer-mates only where LAYERS puts them in order, and of the layers below):

    support < ir < interp < pass < frontend < agent < cache < judge < driver < tools

runtime/ stands alone: it includes nothing outside runtime/, and every
folder may include its public headers (RUNTIME_PUBLIC: the module API and
the plan format the compiler writes). A header in a folder (not
include/kfuse/) is that folder's private header: another folder including
it is a violation whatever the layers say. A public header in
include/kfuse/ belongs to the folder that implements it (OWNER).

With --objects, the calls too: every symbol an object of one folder
uses that an object of another defines (`nm -P` over CMake's object
files), held to the same order; a header that declares another layer's
functions cannot hide a call that way. A violation is
`file:line: #include "h": why` or `call from/ -> to/: symbol: why`. The ones the tree has
today are listed in scripts/layering_allowed.txt (one `file: header` a
line, each to be removed by the restructuring of issue 28): the check
fails on a violation not listed there, and on a listed one that is gone
(so the list only shrinks). --write-allowed rewrites the list from the
tree. --graph prints the folder graph: for each folder, the folders whose
headers it includes, with the number of include lines.

docs/ARCHITECTURE.md's source-tree table is checked against the tree: the
"may call" cell of each folder's row begins with the folders whose headers
it includes, in bold (`**support, ir**`, `**—**` for none), and that list
must be the folder's include graph exactly (a row missing, or a list that
names a folder it does not include or leaves one out, fails); --fix-doc
rewrites the lists from the tree.

Exit status: 0 when the tree keeps the rule, 1 when it does not, 2 on bad
usage or an unreadable tree.
"""
import argparse
import os
import re
import sys

# lowest first; a folder may include headers of folders before it
LAYERS = ["support", "ir", "interp", "pass", "frontend", "agent", "cache", "judge", "driver", "tools"]
FOLDERS = LAYERS + ["runtime"]

# include/kfuse/ headers -> the folder that implements them
OWNER = {
    "status.h": "support",
    "curl.h": "support",
    "elf.h": "support",
    "ir.h": "ir",
    "ops.def": "ir",
    "precision.h": "ir",
    "interp.h": "interp",
    "partition.h": "pass",
    "pass.h": "pass",
    "frontend.h": "frontend",
    "agent.h": "agent",
    "llm.h": "agent",
    "options.h": "agent",
    "task.h": "agent",
    "plan.h": "agent",
    "cache.h": "cache",
    "judge.h": "judge",
    "agent_loop.h": "agent",
    "env_session.h": "agent",
    "compile.h": "driver",
    "compile_agent.h": "driver",
}

# runtime/ headers every folder may include: the module API, the plan
# format and its writer, the weights' hash, the CUDA driver's loader
RUNTIME_PUBLIC = {"kfuse_runtime.h", "kfr_plan.h", "kfr_plan_writer.h", "kfr_hash.h", "kfr_driver.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def calls(build):
    """{(from folder, to folder, symbol)} of the compiled objects under
    build (CMake's CMakeFiles/<target>.dir/<folder>/<file>.c.o): every
    undefined symbol of an object defined by an object of another folder
    (`nm -P`); a symbol defined in two folders is not attributed"""
    import subprocess
    objs = []
    for dp, _, fn in os.walk(build):
        parts = dp.replace(os.sep, "/").split("/")
        if not any(p.endswith(".dir") for p in parts) or "tests" in parts:
            continue
        folder = next((p for p in reversed(parts) if p in FOLDERS), None)
        if folder:
            objs += [(folder, os.path.join(dp, f)) for f in fn if f.endswith(".c.o")]
    defs, undef = {}, []
    for folder, o in objs:
        r = subprocess.run(["nm", "-P", o], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"layering: nm failed on {o}: {r.stderr.strip()}")
        for line in r.stdout.splitlines():
            p = line.split()
            if len(p) < 2:
                continue
            if p[1] == "U":
                undef.append((folder, p[0]))
            elif p[1].isupper() and p[1] not in "VW":
                defs.setdefault(p[0], set()).add(folder)
    out = set()
    for folder, name in undef:
        d = defs.get(name)
        if d and len(d) == 1 and folder not in d:
            out.add((folder, next(iter(d)), name))
    return out


def header_owner(folder, inc, own_headers):
    """(owner folder, private) of the header `inc` included from `folder`,
    or (None, False) for one that is not ours (a system or generated one)"""
    base = os.path.basename(inc)
    if inc.startswith("kfuse/"):
        return OWNER.get(inc[len("kfuse/"):]), False
    if base in own_headers.get(folder, set()):
        return folder, folder != "runtime" or base not in RUNTIME_PUBLIC
    for f, hs in own_headers.items():
        if base in hs:
            return f, not (f == "runtime" and base in RUNTIME_PUBLIC)
    return None, False


def scan(root):
    """every (file, line, header, owner, private) include of the folders"""
    own = {}
    for f in FOLDERS:
        d = os.path.join(root, f)
        if not os.path.isdir(d):
            continue
        own[f] = {n for n in os.listdir(d) if n.endswith((".h", ".def"))}
    out = []
    for f in FOLDERS:
        d = os.path.join(root, f)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(d, name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for no, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    owner, private = header_owner(f, m.group(1), own)
                    if owner is None:
                        continue
                    out.append((f"{f}/{name}", no, m.group(1), f, owner, private))
    # include/kfuse/ headers including each other: the including header's owner
    inc_dir = os.path.join(root, "include", "kfuse")
    for name in sorted(os.listdir(inc_dir)) if os.path.isdir(inc_dir) else []:
        src = OWNER.get(name)
        if not src:
            continue
        with open(os.path.join(inc_dir, name), encoding="utf-8", errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if m and m.group(1).startswith("kfuse/") and OWNER.get(m.group(1)[6:]):
                    out.append((f"include/kfuse/{name}", no, m.group(1), src, OWNER[m.group(1)[6:]], False))
    return out


def why_not(src, owner, private, header):
    if src == owner:
        return None
    if src == "runtime":
        return "runtime/ stands alone"
    if owner == "runtime":
        return None if not private else f"{header} is runtime/'s private header"
    if private:
        return f"{header} is {owner}/'s private header"
    if LAYERS.index(owner) > LAYERS.index(src):
        return f"{src}/ is below {owner}/ ({' < '.join(LAYERS)})"
    return None


DOC_ROW = re.compile(r"^(\| `([a-z_]+)/` \|.*\| )(\*\*([^*]*)\*\*(; )?)?([^|]*\|\s*)$")


def include_graph(incs):
    edges = {}
    for _, _, _, src, owner, _ in incs:
        if src != owner:
            edges.setdefault(src, {}).setdefault(owner, 0)
            edges[src][owner] += 1
    return edges


def doc_list(edges, folder):
    deps = sorted(edges.get(folder, {}), key=FOLDERS.index)
    return ", ".join(deps) if deps else "—"


def check_doc(path, edges, fix):
    """Problems of docs/ARCHITECTURE.md's table against the include graph
    (with fix, the file rewritten and nothing reported)."""
    with open(path) as fh:
        lines = fh.readlines()
    seen, bad = set(), []
    for i, line in enumerate(lines):
        m = DOC_ROW.match(line.rstrip("\n"))
        if not m or m.group(2) not in FOLDERS:
            continue
        f = m.group(2)
        seen.add(f)
        want = doc_list(edges, f)
        have = m.group(4)
        if fix:
            rest = m.group(6)
            lines[i] = f"{m.group(1)}**{want}**" + ("; " + rest if rest.strip(" |\n") else " " + rest.lstrip()) + "\n"
        elif have is None:
            bad.append(f"{path}:{i + 1}: {f}/'s \"may call\" cell does not begin with its folders in bold "
                       f"(**{want}**)")
        elif [x.strip() for x in have.split(",")] != [x.strip() for x in want.split(",")]:
            bad.append(f"{path}:{i + 1}: {f}/'s \"may call\" cell lists **{have}**; its includes are **{want}**")
    for f in FOLDERS:
        if f not in seen:
            bad.append(f"{path}: the source-tree table has no row for `{f}/`")
    if fix:
        with open(path, "w") as fh:
            fh.writelines(lines)
        return []
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--graph", action="store_true", help="print the folder include graph")
    ap.add_argument("--write-allowed", action="store_true", help="rewrite the allowed list from the tree")
    ap.add_argument("--objects", help="a build directory: also check the calls between the folders' objects")
    ap.add_argument("--fix-doc", action="store_true",
                    help="rewrite the folder lists of docs/ARCHITECTURE.md's table from the tree")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.root, "include", "kfuse")):
        print(f"layering: {a.root} is not a kfuse source tree (no include/kfuse/)", file=sys.stderr)
        return 2
    incs = scan(a.root)
    missing = [h for h in os.listdir(os.path.join(a.root, "include", "kfuse"))
               if h.endswith((".h", ".def")) and h not in OWNER]
    if missing:
        print(f"layering: include/kfuse/ headers with no owner in OWNER: {', '.join(sorted(missing))}",
              file=sys.stderr)
        return 1
    edges = include_graph(incs)
    doc = os.path.join(a.root, "docs", "ARCHITECTURE.md")
    doc_bad = check_doc(doc, edges, a.fix_doc) if os.path.exists(doc) else []
    if a.fix_doc:
        print(f"layering: wrote the folder lists of {doc}")
        return 0
    if a.graph:
        for f in FOLDERS:
            e = edges.get(f, {})
            print(f"{f}: " + (", ".join(f"{o} ({n})" for o, n in sorted(e.items(), key=lambda kv: FOLDERS.index(kv[0])))
                              or "-"))
    bad = []
    for file, no, header, src, owner, private in incs:
        w = why_not(src, owner, private, header)
        if w:
            bad.append((file, no, header, w))
    if a.objects:
        if not os.path.isdir(a.objects):
            print(f"layering: --objects {a.objects}: not a directory", file=sys.stderr)
            return 2
        cs = calls(a.objects)
        if not cs:
            print(f"layering: --objects {a.objects}: no compiled objects of the folders found", file=sys.stderr)
            return 2
        if a.graph:
            edges = {}
            for src, dst, _ in cs:
                edges.setdefault(src, {}).setdefault(dst, 0)
                edges[src][dst] += 1
            print("calls (symbols):")
            for f in FOLDERS:
                e = edges.get(f, {})
                print(f"  {f}: " + (", ".join(f"{o} ({n})" for o, n in
                                             sorted(e.items(), key=lambda kv: FOLDERS.index(kv[0]))) or "-"))
        for src, dst, name in sorted(cs):
            w = why_not(src, dst, False, name)
            if w:
                bad.append((f"call {src}/ -> {dst}/", 0, name, w))
    allowed_path = os.path.join(a.root, "scripts", "layering_allowed.txt")
    allowed = set()
    if os.path.exists(allowed_path):
        with open(allowed_path) as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith("#"):
                    f, _, h = line.partition(": ")
                    allowed.add((f, h))
    old_calls = {k for k in allowed if k[0].startswith("call ")}
    if a.write_allowed:
        with open(allowed_path, "w") as fh:
            fh.write("# scripts/layering.py: the include lines and calls that break the layering today,\n"
                     "# each to be removed by issue 28's restructuring (the check fails on a new one, and\n"
                     "# on one listed here that is gone). One `file: header` or\n"
                     "# `call from/ -> to/: symbol` a line.\n")
            if not a.objects:
                # keep the call entries: without --objects they were not looked at
                fh.writelines(f"{f}: {h}\n" for f, h in sorted(old_calls))
            for k in sorted({(f, h) for f, _, h, _ in bad}):
                fh.write(f"{k[0]}: {k[1]}\n")
        print(f"layering: wrote the known exceptions to {allowed_path}")
        return 0
    new = [b for b in bad if (b[0], b[2]) not in allowed]
    seen = {(b[0], b[2]) for b in bad}
    stale = sorted(k for k in allowed - seen if a.objects or not k[0].startswith("call "))
    for file, no, header, w in new:
        if file.startswith("call "):
            print(f"{file}: {header}: {w}")
        else:
            print(f"{file}:{no}: #include \"{header}\": {w}")
    for f, h in stale:
        print(f"scripts/layering_allowed.txt: '{f}: {h}' no longer occurs: remove it")
    n_allowed = len(seen & allowed)
    for line in doc_bad:
        print(line)
    if new or stale or doc_bad:
        print(f"layering: {len(new)} new violation(s), {len(stale)} stale allowance(s), {len(doc_bad)} "
              f"disagreement(s) with docs/ARCHITECTURE.md", file=sys.stderr)
        return 1
    print(f"layering: the tree keeps the rule ({len(incs)} includes checked; {n_allowed} known exceptions "
          f"listed in scripts/layering_allowed.txt)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
