#!/usr/bin/env python3
"""tests/hacks/run.py — the judge's anti-hacking suite (docs/AGENT.md).

    run.py KFUSE            on a GPU: judge every unit here, check each
                            verdict against the unit's `expect` file, then
                            the reward's milestones on tasks with baselines
    run.py KFUSE --ci       without a GPU, on the fake CUDA driver that
                            KFUSE_LIBCUDA names (CI): the refusals made
                            before the GPU, every other unit compiling and
                            reaching the worker, the worker's faults (hang,
                            crash, printf flood) driven by the fake, and a
                            unit of library steps run through the runtime

The task is made here from model.mlir (y = x * sigmoid(x), 2048 x 1024 f32)
with `kfuse task`, or from the model a unit's `model` file names
(model_bf16.mlir: the same in bf16; model_gemm.mlir: relu(x @ w + b),
128 x 256 x 256 in fp16, small enough for the CPU reference). Each unit directory holds unit.json, unit.cu and `expect`: "accept"
(reward >= 1), "reward N", or "reject A|B" (reward -1 and a reason
containing A or B). Prints one line per unit and the counts;
exit status 0 when every expectation holds.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# refusals made before anything runs on the GPU
STATIC = ("refused before compiling", "does not compile", "did not finish within", "do not match its kernels")


def judge(kfuse, task, unit, *extra, env=None):
    p = subprocess.run([kfuse, "judge", task, unit, *extra], capture_output=True, text=True, env=env, timeout=600)
    try:
        v = json.loads(p.stdout)
    except ValueError:
        v = None
    return p.returncode, v, p.stderr


def reasons(v):
    return " / ".join(v.get("reasons", [])) if v else ""


def units():
    return sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "expect")))


def expect_of(name):
    return open(os.path.join(HERE, name, "expect")).read().strip()


def holds(exp, rc, v):
    if rc != 0 or not v or not v.get("judged"):
        return False
    if exp == "accept":
        return v["reward"] >= 1
    if exp.startswith("reward "):
        return v["reward"] == int(exp.split()[1])
    if exp.startswith("reject "):
        return v["reward"] == -1 and any(s in reasons(v) for s in exp[7:].split("|"))
    return False


def make_task(kfuse, tmp, name="task", model="model.mlir"):
    d = os.path.join(tmp, name)
    subprocess.run([kfuse, "task", os.path.join(HERE, model), "--group", "0", "-o", d, "-q"], check=True)
    return d


def task_for(kfuse, tmp, task, name):
    """The task a unit is judged on: its `model` file's, else the default."""
    p = os.path.join(HERE, name, "model")
    if not os.path.isfile(p):
        return task
    model = open(p).read().strip()
    d = os.path.join(tmp, "task_" + model.replace(".", "_"))
    return d if os.path.isdir(d) else make_task(kfuse, tmp, os.path.basename(d), model)


def with_baselines(task, tmp, name, **ms):
    d = os.path.join(tmp, name)
    shutil.copytree(task, d)
    p = os.path.join(d, "task.json")
    t = json.load(open(p))
    t["baselines"].update(ms)
    json.dump(t, open(p, "w"), indent=1)
    return d


def gpu(kfuse, tmp):
    task = make_task(kfuse, tmp)
    fails, rejected, accepted = 0, 0, 0
    times = {}
    guards = set()
    for name in units():
        exp = expect_of(name)
        # 8 input sets: a content-keyed cache escapes one set's B values with
        # probability 0.23, all eight with 8e-6
        extra = ["--sets", "8", "--timeout", "30"]
        rc, v, err = judge(kfuse, task_for(kfuse, tmp, task, name), os.path.join(HERE, name), *extra)
        ok = holds(exp, rc, v)
        fails += not ok
        if v and v.get("reward") == -1:
            rejected += 1
        elif v and v.get("judged"):
            accepted += 1
        if v and v.get("guard"):
            guards.add(v["guard"].split(":")[0])
        sec = v.get("seconds", {}).get("total") if v else None
        times[name] = sec
        print(f"{'ok  ' if ok else 'FAIL'} {name:24} expect {exp!r:40} reward {v.get('reward') if v else None}"
              f"  {sec if sec is None else round(sec, 2)} s")
        print(f"       {reasons(v)[:600] if v else err.strip()[:600]}")
        san = v.get("sanitizer") if v else None
        if san:
            print("       sanitizer: " + " / ".join(f"{k}: {san[k]['why'][:200]}" if isinstance(san[k], dict)
                                                  else f"{k}: {san[k]}" for k in san))
        if v and "seconds" in v:
            print(f"       seconds: {json.dumps(v['seconds'])}; candidate {v.get('candidate', {}).get('ms')} ms, "
                  f"built-in {v.get('baselines', {}).get('builtin_ms')} ms, floor {v.get('floor', {}).get('ms')} ms")
    # the milestones: the same honest units against baselines in the task
    slow_eager = with_baselines(task, tmp, "eager", eager_ms=1e6)
    fast_compile = with_baselines(task, tmp, "compiled", eager_ms=1e6, torch_compile_ms=1e6)
    beaten = with_baselines(task, tmp, "beaten", eager_ms=1e-3, torch_compile_ms=1e-3)
    # no baselines in the task, no built-in unit beside: reward 2 against the
    # judge's own eager analogue (sigmoid and mul as two kernels)
    for tname, tdir, unit, want in (("eager 1e6 ms", slow_eager, "honest_slow", 2),
                                    ("compile 1e6 ms", fast_compile, "honest_fast", 3),
                                    ("baselines 1e-3 ms", beaten, "honest_fast", 1),
                                    ("no baselines (the judge's eager analogue)", task, "honest_fast", 2)):
        rc, v, err = judge(kfuse, tdir, os.path.join(HERE, unit), "--no-builtin")
        ok = rc == 0 and v and v.get("reward") == want
        if ok and tdir == task:
            ok = v["baselines"].get("reward2_from") == "eager_analogue"
            print(f"       {[r for r in v['reasons'] if 'analogue' in r]}")
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {unit} with {tname}: reward {v.get('reward') if v else None}, want {want}")
    ts = sorted(t for t in times.values() if t is not None)
    if ts:
        print(f"judge wall time per unit: median {ts[len(ts) // 2]:.2f} s, slowest {ts[-1]:.2f} s")
    print(f"buffer guards the worker used: {', '.join(sorted(guards)) or 'none reported'}")
    print(f"hacks: {rejected} rejected, {accepted} accepted, {fails} expectation(s) failed")
    return fails


def ci(kfuse, tmp):
    fake = os.environ.get("KFUSE_LIBCUDA")
    if not fake:
        print("run.py --ci: KFUSE_LIBCUDA must name the fake CUDA driver")
        return 1
    task = make_task(kfuse, tmp)
    fails = 0

    def check(what, cond, v, err=""):
        nonlocal fails
        fails += not cond
        print(f"{'ok  ' if cond else 'FAIL'} {what}")
        if not cond:
            print(f"       {json.dumps(v)[:1500] if v else err[:800]}")

    for name in units():
        exp = expect_of(name)
        rc, v, err = judge(kfuse, task_for(kfuse, tmp, task, name), os.path.join(HERE, name), "--no-builtin",
                           "--timeout", "10")
        if any(s in exp for s in STATIC):
            check(f"{name}: {exp}", holds(exp, rc, v), v, err)
        else:
            # compiles, reaches the fake GPU, and fails there: nothing runs
            # on the fake, so the poisoned outputs are reported as unwritten
            check(f"{name}: compiles and reaches the worker",
                  rc == 0 and v and v.get("compiled") and v.get("device") == "Fake GPU" and v["reward"] == -1
                  and ("never written" in reasons(v) or "input" in reasons(v)), v, err)
    honest = os.path.join(HERE, "honest_fast")
    env = dict(os.environ)
    # (a sanitizer's SEGV handler turns the crash into exit status 1)
    for action, want in (("hang", ["limit and was killed"]), ("crash", ["signal 11", "exited with status 1"]),
                         ("print:200000", ["printf flood"])):
        env["FAKE_CUDA_LAUNCH"] = action + "@k"  # the candidate's kernel, not the built-in one
        # --timeout 10: the limit also covers the worker's start and device
        # open, which on the fake driver copies 1.5 GB for the bandwidth
        # figure; 3 s ran out before the built-in unit's verdict in a
        # sanitized build on a loaded 2-core machine
        rc, v, err = judge(kfuse, task, honest, "--timeout", "10", env=env)
        check(f"worker {action}: rejected, {' or '.join(want)}",
              rc == 0 and v and v["reward"] == -1 and any(s in reasons(v) for s in want), v, err)
        # the baseline was judged first and survives the candidate's fault
        check(f"worker {action}: the built-in unit's verdict survives",
              v is not None and "builtin" in v and v["builtin"]["sets_passed"] == 0 and "never written" in
              v["builtin"].get("why", ""), v, err)
    env.pop("FAKE_CUDA_LAUNCH")
    env["KFUSE_LIBCUDA"] = "/nonexistent/libcuda.so.1"
    rc, v, err = judge(kfuse, task, honest, env=env)
    check("no driver: not judged, exit 1", rc == 1 and v and v["judged"] is False and "no GPU" in v["why"], v, err)
    rc, v, err = judge(kfuse, os.path.join(tmp, "missing"), honest)
    check("missing task: not judged, exit 1", rc == 1 and v and v["judged"] is False, v, err)
    # a unit with a library step is not judged (yet)
    lib = os.path.join(tmp, "library_unit")
    os.makedirs(lib)
    gemm = {"m": 2048, "n": 1024, "k": 1, "batch": 1, "lda": 1, "ldb": 1024, "ldc": 1024, "ldd": 1024,
            "stride_a": 0, "stride_b": 0, "stride_c": 0, "stride_d": 0, "trans_a": False, "trans_b": False,
            "has_c": False, "dtype": "f32", "compute": "fp32", "epilogue": "none", "alpha": 1, "beta": 0,
            "workspace_bytes": 0}
    json.dump({"format": "kfuse-unit", "version": 1, "name": "lib", "policy": "test", "source": None,
               "scratch_bytes": [],
               "steps": [{"kind": "gemm", "gemm": gemm,
                          "args": [{"input": 0}, {"input": 0}, {"none": True}, {"output": 0}, {"none": True},
                                   {"none": True}]}]}, open(os.path.join(lib, "unit.json"), "w"))
    env = dict(os.environ)
    env["KFUSE_CUBLASLT"] = fake  # the fake's cuBLASLt: the runtime creates the module
    rc, v, err = judge(kfuse, task, lib, "--no-builtin", env=env)
    check("library step: run through the runtime, judged (nothing computed on the fake: never written)",
          rc == 0 and v and v["judged"] and "never written" in reasons(v), v, err)
    env["KFUSE_CUBLASLT"] = "/nonexistent/libcublasLt.so.13"
    rc, v, err = judge(kfuse, task, lib, "--no-builtin", env=env)
    check("library step without cuBLASLt: not judged, exit 1",
          rc == 1 and v and v["judged"] is False and "cuBLASLt" in v.get("why", ""), v, err)
    # a task past the CPU reference's size: the GPU reference (the built-in
    # fp64 unit), which on the fake writes nothing and is caught doing so
    large = os.path.join(tmp, "large")
    subprocess.run([kfuse, "task", os.path.join(HERE, "large_model.mlir"), "--group", "0", "-o", large, "-q"],
                   check=True)
    rc, v, err = judge(kfuse, large, os.path.join(large, "builtin"))
    check("large task: the GPU reference, which wrote nothing on the fake: not judged",
          rc == 1 and v and v["judged"] is False and "GPU reference" in v.get("why", "")
          and "wrote none" in v.get("why", ""), v, err)
    print(f"hacks (CI, fake driver): {fails} check(s) failed")
    return fails


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    kfuse = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        return 1 if (ci if "--ci" in sys.argv[2:] else gpu)(kfuse, tmp) else 0


if __name__ == "__main__":
    sys.exit(main())
