#!/usr/bin/env python3
"""tests/judge/compile_check.py — kfuse compile choosing through the judge,
without a GPU: on the fake CUDA driver (tests/fake/fake_cuda.c, which runs no
kernel, so every candidate fails verification with its outputs unwritten) and
with no driver at all.

    compile_check.py KFUSE FAKE_LIBCUDA

Checks: a group with template variants has all its candidates judged, each
with its reason, and the rule's unit is kept (with a warning) when none is
verified; candidates that crash, hang or flood their worker fail with that
reason and the compile carries on, a fresh worker per fault; no driver means
nothing is judged and the report says why; --no-judge judges nothing; a unit
given with --unit is refused unless verified."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KFUSE, FAKE = sys.argv[1], sys.argv[2]
SOFTMAX = os.path.join(HERE, "softmax.mlir")
SILU = os.path.join(HERE, "..", "hacks", "model.mlir")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def compile_(model, extra, env_extra, tmp, name):
    out = os.path.join(tmp, name + ".so")
    rep = os.path.join(tmp, name + ".json")
    env = dict(os.environ)
    env.pop("FAKE_CUDA_LAUNCH", None)
    env.update(env_extra)
    t0 = time.monotonic()
    # --no-verify-module: the whole-module check's worker opens the driver
    # KFUSE_LIBCUDA names, and on the fake one made to crash or hang every
    # launch the module check would crash or hang too; what is under test
    # here is the judge (tests/module_check_worker.sh tests the check there)
    p = subprocess.run([KFUSE, "compile", model, "-o", out, "--report", rep, "--no-verify-module"] + extra, env=env,
                       capture_output=True, text=True, timeout=600)
    dt = time.monotonic() - t0
    r = json.load(open(rep)) if p.returncode == 0 and os.path.exists(rep) else None
    return p, r, dt


def crashed(why):
    # a sanitizer's SEGV handler turns the crash into exit status 1
    return "signal 11" in why or "exited with status 1" in why


def groups(r):
    return [g for g in r["group_list"] if g["kind"] != "view"]


with tempfile.TemporaryDirectory() as tmp:
    fake = {"KFUSE_LIBCUDA": FAKE}

    # 1. every candidate of a row normalisation judged; none verified
    p, r, _ = compile_(SOFTMAX, [], fake, tmp, "softmax")
    check(p.returncode == 0, "softmax on the fake driver compiles: " + p.stderr[-500:])
    if r:
        g = groups(r)[0]
        cands = g.get("candidates", [])
        labels = [c["candidate"] for c in cands]
        check(len(cands) >= 2 and labels[0] == "rule", "softmax: the rule and variants judged: %s" % labels)
        check(all(not c["correct"] and c["reward"] == -1 and "never written" in c["why"] for c in cands),
              "softmax: every candidate fails with its outputs unwritten")
        check([c["chosen"] for c in cands] == [True] + [False] * (len(cands) - 1), "softmax: the rule's unit kept")
        check(r["units_judged"] == 1 and r["units_verified"] == 0 and r["verified"] is False,
              "softmax: the report's counts")
        check(g["judge"]["device"] == "Fake GPU" and g["judge"]["workers"] == 1, "softmax: one worker, the device")
        check("no candidate was verified" in p.stderr, "softmax: the warning")
        check(os.path.exists(os.path.join(tmp, "softmax.so")), "softmax: the module is written")

    # 2. every candidate crashes its worker: each fails with the signal, a
    #    fresh worker for the next, the compile goes on
    p, r, _ = compile_(SOFTMAX, ["-q"], dict(fake, FAKE_CUDA_LAUNCH="crash"), tmp, "crash")
    check(p.returncode == 0, "crashing candidates: the compile succeeds: " + p.stderr[-500:])
    if r:
        g = groups(r)[0]
        cands = g.get("candidates", [])
        check(len(cands) >= 2 and all(not c["correct"] and crashed(c["why"]) for c in cands),
              "crash: every candidate fails naming the signal")
        check(g["judge"]["workers"] == len(cands), "crash: a fresh worker after each crash")

    # the GPU reference (a group past the CPU interpreter's size) crashing:
    # the group is not judged, and the reason says so
    large = os.path.join(HERE, "..", "hacks", "large_model.mlir")
    p, r, _ = compile_(large, ["-q"], dict(fake, FAKE_CUDA_LAUNCH="crash"), tmp, "refcrash")
    check(p.returncode == 0, "a crashing reference: the compile succeeds")
    if r:
        judge = groups(r)[0].get("judge")
        check(isinstance(judge, str) and "reference" in judge and crashed(judge),
              "a crashing reference: the reason: %s" % judge)

    # 3. a candidate that never ends: killed at --judge-timeout (5 s: the
    # limit also covers the worker's start and device open, which on the
    # fake driver copies 1.5 GB for the bandwidth figure, past 2 s on a
    # loaded machine)
    p, r, dt = compile_(SILU, ["-q", "--judge-all", "--judge-timeout", "5"], dict(fake, FAKE_CUDA_LAUNCH="hang"),
                        tmp, "hang")
    check(p.returncode == 0, "a hanging candidate: the compile succeeds")
    check(dt < 30, "a hanging candidate: killed in time (%.1f s)" % dt)
    if r:
        c = groups(r)[0]["candidates"][0]
        check(not c["correct"] and "5 s limit" in c["why"], "hang: the reason names the limit: %s" % c["why"])

    # 4. a printf flood
    p, r, _ = compile_(SILU, ["-q", "--judge-all"], dict(fake, FAKE_CUDA_LAUNCH="print:200000"), tmp, "flood")
    check(p.returncode == 0, "a flooding candidate: the compile succeeds")
    if r:
        c = groups(r)[0]["candidates"][0]
        check(not c["correct"] and "printf flood" in c["why"], "flood: the reason: %s" % c["why"])

    # 5. no driver: nothing judged, said once, the module still written
    p, r, _ = compile_(SOFTMAX, [], {"KFUSE_LIBCUDA": os.path.join(tmp, "no-such-libcuda.so")}, tmp, "nogpu")
    check(p.returncode == 0, "no driver: the compile succeeds")
    if r:
        check(r["units_judged"] == 0 and "no GPU to judge on" in r["note"], "no driver: the note says why")
        check("choices by rule, nothing judged" in p.stderr, "no driver: the progress line")

    # 6. --no-judge
    p, r, _ = compile_(SOFTMAX, ["--no-judge"], fake, tmp, "nojudge")
    check(p.returncode == 0 and r and r["units_judged"] == 0 and "--no-judge" in r["note"], "--no-judge")
    p, _, _ = compile_(SOFTMAX, ["--no-judge", "--judge-all"], fake, tmp, "both")
    check(p.returncode == 2 and "contradict" in p.stderr, "--no-judge with --judge-all is refused")

    # 7. --unit KEY=DIR: a unit written for a group's task goes into the
    #    module only once verified here; never without a GPU
    task = os.path.join(tmp, "task")
    subprocess.run([KFUSE, "task", SOFTMAX, "--group", "0", "-o", task, "-q"], check=True)
    key = json.load(open(os.path.join(task, "task.json")))["key"]
    model = os.path.join(task, "group.mlir")
    given = "%s=%s" % (key, os.path.join(task, "builtin"))
    p, _, _ = compile_(model, ["-q", "--unit", given], fake, tmp, "given")
    check(p.returncode == 1 and "failed the judge" in p.stderr, "--unit: an unverified unit is refused (fake)")
    p, _, _ = compile_(model, ["-q", "--unit", given], {"KFUSE_LIBCUDA": os.path.join(tmp, "none.so")}, tmp, "given2")
    check(p.returncode == 1 and "cannot be verified here" in p.stderr, "--unit: refused without a GPU")
    p, _, _ = compile_(model, ["-q", "--no-judge", "--unit", given], fake, tmp, "given3")
    check(p.returncode == 1 and "nothing is judged here" in p.stderr, "--unit with --no-judge is refused")
    p, _, _ = compile_(model, ["-q", "--unit", "0" * 64 + "=" + task], fake, tmp, "given4")
    check(p.returncode == 1 and "no group of this model has that key" in p.stderr, "--unit: an unknown key")
    p, _, _ = compile_(model, ["-q", "--unit", "abc=" + task], fake, tmp, "given5")
    check(p.returncode == 2 and "64-hex-digit" in p.stderr, "--unit: a malformed key")
    check(not os.path.exists(os.path.join(tmp, "given.so")), "--unit: no module after a refusal")

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("compile_check: all checks passed")
