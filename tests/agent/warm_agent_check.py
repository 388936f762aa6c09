#!/usr/bin/env python3
"""`kfuse warm --agent llm` (tools/cmd_warm.c): LLM agent sessions on the
groups the kernel cache missed, and on no other, against a scripted
OpenAI-compatible server on loopback, judged on the fake CUDA driver.

    warm_agent_check.py KFUSE FAKE_LIBCUDA CACHE_COMPILE RUNTIME_LIB

tests/fixtures/mlp.core.pt2 is put in the cache first by the synthetic
picker (tests/cache/cache_compile.c: CI has no GPU to verify a unit), so
its groups are hits; tests/fixtures/activations.default.pt2's three are
not. `kfuse warm MLP ACTIVATIONS --agent llm` must then run sessions on
exactly the three missed groups (agent.json per model: none for the MLP),
say so, store nothing it could not verify (the fake driver verifies
nothing; the endpoint answers 503), exit 1 (groups not verified), leave
the MLP's entries as they were, and write the API key nowhere. With
--shard, sessions cover only the shard's missed groups; --offline with
--agent llm is a usage error."""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import key_leaks, scripted_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KFUSE, FAKE, HELPER, RUNTIME = sys.argv[1:5]
FIX = os.path.join(HERE, "..", "fixtures")
MLP, ACT = os.path.join(FIX, "mlp.core.pt2"), os.path.join(FIX, "activations.default.pt2")
key = "sk-test-" + secrets.token_hex(16)
failures, outputs = [], []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def env():
    e = dict(os.environ, KFUSE_RUNTIME_LIB=RUNTIME, KFUSE_LIBCUDA=FAKE, KFUSE_TEST_AGENT_KEY=key)
    for v in ("OPENAI_API_KEY", "KFUSE_CACHE_DIR", "KFUSE_CACHE_REMOTE"):
        e.pop(v, None)
    return e


def group_keys(model, work):
    rep = os.path.join(work, "keys.json")
    p = subprocess.run([KFUSE, "compile", model, "-o", os.path.join(work, "keys.so"), "-q", "--no-cache",
                        "--no-judge", "--report", rep], capture_output=True, text=True, env=env())
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return set()
    return {g["key"] for g in json.load(open(rep))["group_list"] if "unit" in g}


def ls(cache):
    p = subprocess.run([KFUSE, "cache", "ls", "--json", "--cache", cache], capture_output=True, text=True)
    return {e["key"]: e["payload_hash"] for e in json.loads(p.stdout)} if p.returncode == 0 else {}


def warm(work, name, cache, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    agent_dir = os.path.join(d, "agent")
    with scripted_server([{"status": 503, "body": {}}] * 40, d) as port:
        p = subprocess.run([KFUSE, "warm", MLP, ACT, "--cache", cache, "--agent", "llm",
                            "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "scripted",
                            "--api-key-env", "KFUSE_TEST_AGENT_KEY", "--retries", "0", "--agent-dir", agent_dir]
                           + list(extra), capture_output=True, text=True, env=env(), timeout=600)
    outputs.append(p.stdout + p.stderr)
    summ = {}
    for m in (1, 2):
        sp = os.path.join(agent_dir, f"model_{m}", "agent.json")
        summ[m] = json.load(open(sp)) if os.path.exists(sp) else None
    return p, summ


def main():
    work = tempfile.mkdtemp(prefix="kfuse-warm-agent-")
    try:
        act_keys, mlp_keys = group_keys(ACT, work), group_keys(MLP, work)
        check(len(act_keys) == 3 and mlp_keys and not act_keys & mlp_keys,
              f"the fixtures' groups: {len(act_keys)} and {len(mlp_keys)}, none shared")
        cache = os.path.join(work, "cache")
        p = subprocess.run([HELPER, "compile", MLP, os.path.join(work, "seed.so"), cache], capture_output=True,
                           text=True, env=env())
        before = ls(cache)
        check(p.returncode == 0 and len(before) == len(mlp_keys), f"the MLP's {len(mlp_keys)} groups seeded")

        p, summ = warm(work, "all", cache)
        sessions = [s["key"] for m in (1, 2) if summ[m] for s in summ[m]["sessions"]]
        check(p.returncode == 1, f"warm exits 1: groups the fake driver cannot verify (exit {p.returncode})")
        check(summ[1] is not None and not summ[1]["sessions"],
              "no session on the MLP, whose groups all hit the cache")
        check(sorted(sessions) == sorted(act_keys),
              f"one session on each missed group of the activations model ({len(sessions)})")
        check(summ[2] is not None and all(s["stop"].startswith("the endpoint failed") for s in summ[2]["sessions"]),
              "each session says the endpoint failed")
        check("warm: agent: 3 sessions on the 3 missed groups, no unit verified" in p.stdout,
              "warm says what the sessions did")
        check(ls(cache) == before, "the cache holds the MLP's entries, unchanged, and nothing unverified")

        # shards: the sessions follow the shard's misses
        both = []
        for k in (1, 2):
            p, summ = warm(work, f"shard{k}", cache, ["--shard", f"{k}/2"])
            both += [s["key"] for m in (1, 2) if summ[m] for s in summ[m]["sessions"]]
        check(sorted(both) == sorted(act_keys), "two shards: every missed group has one session, in one shard")

        p = subprocess.run([KFUSE, "warm", ACT, "--agent", "llm", "--endpoint", "http://127.0.0.1:9/v1",
                            "--model", "m", "--offline"], capture_output=True, text=True, env=env())
        check(p.returncode == 2 and "--offline" in p.stderr, "--offline with --agent llm is a usage error")
        leaks = key_leaks(key, outputs, work)
        check(not leaks, f"the API key in no output or file ({leaks[:3]})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
