#!/usr/bin/env python3
"""tests/tasks_check.py KFUSE FIXTURES_DIR WORK — `kfuse tasks`, the task set
of many models (docs/AGENT.md "Task sets"), end to end without a GPU:

- several fixture models: one task directory per unique key, named by its
  first 16 hex digits, each one `kfuse task --all` would write for that key
  (same key, same group ids), and index.json consistent with the disk;
- the same model twice: the same tasks, its occurrences doubled; keys shared
  in one model (gpt_block's repeated groups) and across models (mlp's core
  and default exports) written once;
- the filters: fills (constant_output) and weight-only groups
  (input_independent) dropped with reasons, the floor window and --kinds;
- --update adds only new keys, leaves the tasks there untouched, merges
  occurrences, and refuses other options;
- a missing model, a corrupt file, a truncated archive: a non-zero exit, a
  message naming the file, nothing left behind (nor changed, with --update);
  --keep-going skips them and lists them;
- usage errors exit 2;
- written tasks read back through `kfuse judge`'s task reader (no GPU: the
  verdict names the task's key and says only that no GPU was there).
"""
import filecmp
import json
import os
import shutil
import subprocess
import sys

K, FX, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def fx(name):
    return os.path.join(FX, name + ".pt2")


def run(*args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([K, *args], capture_output=True, text=True, env=e, timeout=600)
    return p.returncode, p.stdout, p.stderr


def tasks(out, *models, opts=()):
    return run("tasks", *[fx(m) for m in models], "-o", out, "-q", *opts)


def index(out):
    with open(os.path.join(out, "index.json")) as f:
        return json.load(f)


def leftovers():
    """temporary directories a run left in WORK or in a set"""
    left = [n for n in os.listdir(WORK) if ".tmp." in n]
    for n in os.listdir(WORK):
        p = os.path.join(WORK, n)
        if os.path.isdir(p):
            left += [os.path.join(n, m) for m in os.listdir(p) if m.startswith(".staging.") or ".tmp." in m]
    return left


def check_set(out, what):
    """index.json against the directory: every task there and read back,
    nothing else there, counts that add up; returns the index"""
    j = index(out)
    check(j["format"] == "kfuse-task-set-v1", f"{what}: format {j.get('format')}")
    keys = [t["key"] for t in j["tasks"]] + [d["key"] for d in j["dropped"]]
    check(len(keys) == len(set(keys)), f"{what}: a key listed twice")
    dirs = sorted(t["dir"] for t in j["tasks"])
    on_disk = sorted(n for n in os.listdir(out) if n != "index.json")
    check(dirs == on_disk, f"{what}: directories {on_disk} but index.json lists {dirs}")
    for t in j["tasks"]:
        check(t["dir"] == t["key"][:16], f"{what}: task {t['key']} in {t['dir']}")
        with open(os.path.join(out, t["dir"], "task.json")) as f:
            tj = json.load(f)
        check(tj["key"] == t["key"] and tj["kind"] == t["kind"], f"{what}: {t['dir']}/task.json is another task")
        check(tj["floor"]["bytes"] == t["floor"]["bytes"] and tj["floor"]["flops"] == t["floor"]["flops"],
              f"{what}: {t['dir']}: floor differs from task.json's")
        check(os.path.isfile(os.path.join(out, t["dir"], "group.mlir")), f"{what}: {t['dir']}: no group.mlir")
        check(any(not o.get("input_independent") for o in t["occurrences"]),
              f"{what}: task {t['dir']} has only input-independent occurrences")
    for d in j["dropped"]:
        check(d["reason"] in ("kind", "constant_output", "floor_below", "floor_above", "input_independent")
              and d["why"], f"{what}: dropped {d['key']}: reason {d.get('reason')!r}")
    s = j["summary"]
    n_occ = sum(len(e["occurrences"]) for e in j["tasks"] + j["dropped"])
    check(s["tasks"] == len(j["tasks"]) and s["dropped"] == len(j["dropped"]), f"{what}: summary counts")
    check(s["groups"] == n_occ and s["duplicates"] == n_occ - len(keys) and s["unique_keys"] == len(keys),
          f"{what}: summary groups/duplicates {s}")
    check(sum(s["dropped_by_reason"].values()) == s["dropped"], f"{what}: dropped_by_reason does not add up")
    check(s["groups"] == sum(m["groups"] for m in j["models"]), f"{what}: models' groups do not add up")
    return j


def occ(j):
    """key -> [(model, group)]"""
    return {e["key"]: [(o["model"], o["group"]) for o in e["occurrences"]] for e in j["tasks"] + j["dropped"]}


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
W = lambda n: os.path.join(WORK, n)

# ---- several models; the same model twice ----
models = ["mlp.core", "gpt_block.core", "factories.core", "mlp.default"]
rc, _, err = tasks(W("a"), *models)
check(rc == 0, f"set a: exit {rc}: {err}")
a = check_set(W("a"), "set a")
rc, _, err = tasks(W("a2"), *models, "mlp.core")
check(rc == 0, f"set a2: exit {rc}: {err}")
a2 = check_set(W("a2"), "set a2")
check([t["key"] for t in a2["tasks"]] == [t["key"] for t in a["tasks"]], "mlp.core twice: other tasks")
check(sorted(os.listdir(W("a2"))) == sorted(os.listdir(W("a"))), "mlp.core twice: other directories")
oa, oa2 = occ(a), occ(a2)
for key, o in oa.items():
    n = sum(1 for m, _ in o if m == "mlp.core.pt2")
    n2 = sum(1 for m, _ in oa2[key] if m == "mlp.core.pt2")
    check(n2 == 2 * n, f"mlp.core twice: key {key[:16]} has {n2} mlp.core occurrences, not {2 * n}")
check(a2["summary"]["groups"] > a["summary"]["groups"], "mlp.core twice: no more occurrences")

# the occurrences are kfuse task --all's groups, key for key
for m in models:
    rc, _, err = run("task", fx(m), "--all", "-o", W("one-" + m), "-q")
    check(rc == 0, f"task --all {m}: {err}")
    with open(os.path.join(W("one-" + m), "tasks.json")) as f:
        one = json.load(f)["tasks"]
    got = sorted((g, k) for k, o in oa.items() for mm, g in o if mm == m + ".pt2")
    want = sorted((t["group"], t["key"]) for t in one)
    check(got == want, f"{m}: occurrences {got} are not kfuse task's groups {want}")
    shutil.rmtree(W("one-" + m))

# shared in one model and across two
check(any(len({g for mm, g in o if mm == "gpt_block.core.pt2"}) > 1 for o in oa.values()),
      "no key repeated within gpt_block.core")
shared = [k for k, o in oa.items() if {"mlp.core.pt2", "mlp.default.pt2"} <= {mm for mm, _ in o}]
check(len(shared) >= 3, f"mlp.core and mlp.default share {len(shared)} keys")
check(all(len(t["occurrences"]) == 1 + (t["key"] in shared) or t["key"] not in shared for t in a["tasks"]),
      "shared keys' occurrences")

# ---- the filters that need no option ----
by = {d["reason"]: d for d in a["dropped"]}
fills = [d for d in a["dropped"] if d["reason"] == "constant_output"]
check(len(fills) >= 4 and all(mm == "factories.core.pt2" or "arange" in d["ops"] for d in fills
                              for mm, _ in occ({"tasks": [], "dropped": [d]})[d["key"]]),
      f"fills dropped: {[(d['ops'], d['occurrences']) for d in fills]}")
indep = [d for d in a["dropped"] if d["reason"] == "input_independent"]
check(any(d["ops"] == "embedding" for d in indep), f"gpt_block's position embedding not dropped: {indep}")
check(a["summary"]["dropped_by_reason"]["constant_output"] == len(fills), "constant_output count")
dropped_keys = {d["key"] for d in a["dropped"]}
check(not any(os.path.exists(os.path.join(W("a"), k[:16])) for k in dropped_keys), "a dropped key has a task")

# ---- the floor window and --kinds ----
est = sorted(t["floor"]["estimate_us"] for t in a["tasks"])
mid = est[len(est) // 2]
rc, _, err = tasks(W("lo"), *models, opts=("--min-floor-us", repr(mid)))
check(rc == 0, f"--min-floor-us: {err}")
lo = check_set(W("lo"), "--min-floor-us")
check(all(t["floor"]["estimate_us"] >= mid for t in lo["tasks"]), "--min-floor-us kept a smaller floor")
below = [d for d in lo["dropped"] if d["reason"] == "floor_below"]
check(below and all(d["floor"]["estimate_us"] < mid for d in below), "--min-floor-us dropped nothing, or wrongly")
check([t["key"] for t in lo["tasks"]] == [t["key"] for t in a["tasks"] if t["floor"]["estimate_us"] >= mid],
      "--min-floor-us: not the tasks with a floor at least that")
rc, _, err = tasks(W("hi"), *models, opts=("--max-floor-us", repr(mid)))
hi = check_set(W("hi"), "--max-floor-us") if check(rc == 0, f"--max-floor-us: {err}") else None
if hi:
    check(all(t["floor"]["estimate_us"] <= mid for t in hi["tasks"]), "--max-floor-us kept a larger floor")
    check(any(d["reason"] == "floor_above" for d in hi["dropped"]), "--max-floor-us dropped nothing")
rc, _, err = tasks(W("kinds"), *models, opts=("--kinds", "gemm,reduce"))
kj = check_set(W("kinds"), "--kinds") if check(rc == 0, f"--kinds: {err}") else None
if kj:
    check(kj["tasks"] and all(t["kind"] in ("gemm", "reduce") for t in kj["tasks"]), "--kinds kept another kind")
    check(any(d["reason"] == "kind" for d in kj["dropped"]), "--kinds dropped nothing")
    check(kj["filters"]["kinds"] == ["reduce", "gemm"], f"--kinds in index: {kj['filters']['kinds']}")

# ---- determinism ----
rc, _, _ = tasks(W("a3"), *models)
check(rc == 0 and filecmp.cmp(W("a/index.json"), W("a3/index.json"), shallow=False),
      "the same models twice give different index.json")

# ---- --update ----
rc, _, err = tasks(W("u"), "mlp.core")
check(rc == 0, f"update base: {err}")
before = {n: os.stat(os.path.join(W("u"), n, "task.json")).st_ino for n in os.listdir(W("u")) if n != "index.json"}
rc, _, err = run("tasks", fx("gpt_block.core"), fx("mlp.core"), "-o", W("u"), "--update")
check(rc == 0, f"--update: exit {rc}: {err}")
check("new tasks" in err, f"--update: no progress lines on stderr: {err}")
u = check_set(W("u"), "--update")
rc, _, err = tasks(W("u-ref"), "mlp.core", "gpt_block.core", "mlp.core")
ref = check_set(W("u-ref"), "update reference")
check(sorted(t["key"] for t in u["tasks"]) == sorted(t["key"] for t in ref["tasks"]),
      "--update: other tasks than one run over the same models")
check({k: sorted(v) for k, v in occ(u).items()} == {k: sorted(v) for k, v in occ(ref).items()},
      "--update: occurrences not merged")
after = {n: os.stat(os.path.join(W("u"), n, "task.json")).st_ino for n in before}
check(before == after, "--update rewrote tasks that were there")
check([m["new_tasks"] for m in u["models"]][0] == 4 and u["models"][2]["new_tasks"] == 0,
      f"--update: new_tasks per model {u['models']}")
with open(W("u/index.json")) as f:
    u_text = f.read()
rc, _, err = tasks(W("u"), "attention.core", opts=("--update", "--precision", "bf16"))
check(rc != 0 and "options" in err, f"--update with other options: exit {rc}: {err}")
rc, _, err = tasks(W("u"), "attention.core", opts=("--update", "--kinds", "gemm"))
check(rc != 0 and "filters" in err, f"--update with other filters: exit {rc}: {err}")
rc, _, err = tasks(W("u"), "attention.core", "no_such_model", opts=("--update",))
check(rc != 0 and "no_such_model" in err, f"--update with a missing model: exit {rc}: {err}")
with open(W("u/index.json")) as f:
    check(f.read() == u_text, "a failed --update changed index.json")
check(sorted(os.listdir(W("u"))) == sorted(os.listdir(W("u-ref"))), "a failed --update left tasks")
os.makedirs(W("noindex"))
rc, _, err = tasks(W("noindex"), "mlp.core", opts=("--update",))
check(rc != 0 and "index.json" in err and os.listdir(W("noindex")) == [],
      f"--update on a directory with no index: {err}")
rc, _, err = tasks(W("u-new"), "mlp.core", opts=("--update",))
check(rc == 0 and os.path.isfile(W("u-new/index.json")), f"--update on a missing directory: {err}")
with open(W("u-new/index.json"), "w") as f:
    f.write('{"format": "kfuse-task-set-v1", "tasks": [')
rc, _, err = tasks(W("u-new"), "gpt_block.core", opts=("--update",))
check(rc == 1 and "not JSON" in err and len(os.listdir(W("u-new"))) == 5, f"--update on a corrupt index: {err}")

# ---- bad models ----
with open(W("corrupt.pt2"), "wb") as f:
    f.write(b"PK\x03\x04 this is not a zip archive" * 10)
with open(fx("mlp.core"), "rb") as f:
    data = f.read()
with open(W("truncated.pt2"), "wb") as f:
    f.write(data[: len(data) // 2])
for name, path in [("missing", W("no_such_model.pt2")), ("corrupt", W("corrupt.pt2")),
                   ("truncated", W("truncated.pt2"))]:
    out = W("bad-" + name)
    rc, _, err = run("tasks", fx("mlp.core"), path, "-o", out, "-q")
    check(rc == 1, f"{name} model: exit {rc}")
    check(os.path.basename(path) in err and "nothing written" in err, f"{name} model: message {err!r}")
    check(not os.path.exists(out), f"{name} model: {out} left behind")
    check(not leftovers(), f"{name} model: temporary directories left: {leftovers()}")
rc, _, err = run("tasks", fx("mlp.core"), W("corrupt.pt2"), "-o", W("kg"), "--keep-going", "-q")
check(rc == 0, f"--keep-going: exit {rc}: {err}")
if rc == 0:
    kg = check_set(W("kg"), "--keep-going")
    check([f["model"] for f in kg["failed"]] == ["corrupt.pt2"] and kg["failed"][0]["error"],
          f"--keep-going: failed {kg['failed']}")
    check(len(kg["tasks"]) == 4 and kg["summary"]["models_failed"] == 1, "--keep-going: the good model's tasks")
rc, _, err = run("tasks", W("corrupt.pt2"), "-o", W("kg-none"), "--keep-going", "-q")
check(rc == 1 and not os.path.exists(W("kg-none")), f"--keep-going, every model bad: exit {rc}")
check(not leftovers(), f"temporary directories left: {leftovers()}")

# ---- an existing directory, usage errors ----
os.makedirs(W("exists"))
rc, _, err = tasks(W("exists"), "mlp.core")
check(rc == 1 and "exists" in err and os.listdir(W("exists")) == [], f"existing -o: exit {rc}: {err}")
for what, args in [("no -o", [fx("mlp.core")]), ("no model", ["-o", W("x")]),
                   ("-o without a value", [fx("mlp.core"), "-o"]),
                   ("bad kind", [fx("mlp.core"), "-o", W("x"), "--kinds", "gemm,matmul"]),
                   ("junk floor", [fx("mlp.core"), "-o", W("x"), "--min-floor-us", "1x"]),
                   ("nan floor", [fx("mlp.core"), "-o", W("x"), "--max-floor-us", "nan"]),
                   ("min above max", [fx("mlp.core"), "-o", W("x"), "--min-floor-us", "2", "--max-floor-us", "1"]),
                   ("bad precision", [fx("mlp.core"), "-o", W("x"), "--precision", "fp8"]),
                   ("unknown option", [fx("mlp.core"), "-o", W("x"), "--frobnicate"])]:
    rc, _, err = run("tasks", *args)
    check(rc == 2 and "tasks" in err, f"usage ({what}): exit {rc}: {err}")
check(not os.path.exists(W("x")), "a usage error wrote something")
rc, outp, _ = run("tasks", "--help")
check(rc == 0 and "--update" in outp, "tasks --help")

# ---- the tasks read back through the judge's task reader ----
nogpu = {"KFUSE_LIBCUDA": W("no-libcuda.so.1")}
picked = [t for t in a["tasks"] if t["kind"] in ("gemm", "reduce", "elementwise")][:3]
for t in picked:
    d = os.path.join(W("a"), t["dir"])
    if not os.path.isdir(os.path.join(d, "builtin")):
        continue
    rc, outp, err = run("judge", d, os.path.join(d, "builtin"), env=nogpu)
    try:
        v = json.loads(outp)
    except ValueError:
        fail(f"judge {t['dir']}: no verdict: {outp!r} {err!r}")
        continue
    check(rc == 1 and v.get("key") == t["key"] and v.get("compiled") is True and "no GPU" in v.get("why", ""),
          f"judge {t['dir']}: {v}")
check(len(picked) == 3, "fewer than 3 tasks to judge")
# and a task made unreadable is refused by that reader (the check can fail)
broken = W("broken")
shutil.copytree(os.path.join(W("a"), picked[0]["dir"]), broken)
with open(os.path.join(broken, "task.json"), "w") as f:
    f.write("{")
rc, outp, _ = run("judge", broken, os.path.join(broken, "builtin"), env=nogpu)
check(rc == 1 and "not JSON" in outp and '"key"' not in outp, f"judge on a broken task: {outp}")

n = len(a["tasks"])
print(f"{n} tasks, {len(a['dropped'])} dropped from {len(models)} models; {len(failures)} failures")
sys.exit(1 if failures else 0)
