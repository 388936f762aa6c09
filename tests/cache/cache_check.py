#!/usr/bin/env python3
"""tests/cache/cache_check.py KFUSE CACHE_STRESS — the kernel cache under
concurrent writers that get killed (docs/CACHE.md, "Concurrency").

Eight cache_stress writers put and get synthetic entries (up to 256 KiB of
random cubin each) on one fresh store; three of them are SIGKILLed at
random moments. Afterwards:
  - `kfuse cache verify` finds every entry intact (exit 0, 0 corrupt);
  - `cache_stress check` finds every put that a writer logged after its
    commit, with a unit at least as good (nothing lost);
  - `kfuse cache ls --json` lists each key once, and only keys that were put;
  - export -> import into an empty store gives the same `ls --json` (hits
    aside: they count this store's gets), and `stats` agrees;
  - `gc --max-bytes` brings the payload under the limit and verify passes.
The entries are synthetic: no kernel, timing or GPU is involved."""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

WRITERS, KILLED, OPS, NKEYS = 8, 3, 200, 24


def run(*args, ok=(0,)):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode not in ok:
        sys.exit(f"FAIL: {' '.join(args)} -> {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def ls(kfuse, d):
    return json.loads(run(kfuse, "cache", "ls", "--json", "--cache", d).stdout)


def main():
    kfuse, stress = sys.argv[1], sys.argv[2]
    seed = int(os.environ.get("KFUSE_TEST_SEED", time.time_ns() % 100000))
    rnd = random.Random(seed)
    print(f"seed {seed}")
    with tempfile.TemporaryDirectory(prefix="kfuse_cache_check_") as tmp:
        store = os.path.join(tmp, "store")
        logs = [os.path.join(tmp, f"writer{i}.log") for i in range(WRITERS)]
        procs = [subprocess.Popen([stress, "write", store, str(seed * 100 + i), str(OPS), str(NKEYS), logs[i]],
                                  stderr=subprocess.PIPE, text=True) for i in range(WRITERS)]
        victims = rnd.sample(range(WRITERS), KILLED)
        t0 = time.monotonic()
        for v in victims:
            time.sleep(rnd.uniform(0.05, 0.35))
            procs[v].send_signal(signal.SIGKILL)
        killed_mid_run = 0
        for i, p in enumerate(procs):
            try:
                _, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                sys.exit(f"FAIL: writer {i} did not finish in 120 s")
            if i in victims:
                if p.returncode == -signal.SIGKILL:
                    killed_mid_run += 1
                elif p.returncode != 0:
                    sys.exit(f"FAIL: writer {i} exit {p.returncode}: {err}")
            elif p.returncode != 0:
                sys.exit(f"FAIL: writer {i} exit {p.returncode}: {err}")
        print(f"{WRITERS} writers, {killed_mid_run} killed mid-run, {time.monotonic() - t0:.1f} s")
        if killed_mid_run == 0:
            sys.exit("FAIL: no writer was killed while running (the run is too short to test kills)")

        v = run(kfuse, "cache", "verify", "--cache", store)
        if " 0 corrupt" not in v.stdout or v.stderr.strip():
            sys.exit(f"FAIL: verify: {v.stdout}{v.stderr}")
        print(v.stdout.strip())
        print(run(stress, "check", store, *logs).stdout.strip())

        logged = set()
        for log in logs:
            if os.path.exists(log):
                for line in open(log):
                    if line.endswith("\n") and line.startswith("put "):
                        logged.add(line.split()[1])
        entries = ls(kfuse, store)
        keys = [e["key"] for e in entries]
        if len(keys) != len(set(keys)):
            sys.exit("FAIL: a key is listed twice")
        # writers killed between commit and log write may leave unlogged keys
        if not logged <= set(keys) or len(keys) > NKEYS:
            sys.exit(f"FAIL: ls has {len(keys)} keys, {len(logged)} logged, missing {logged - set(keys)}")
        if any(e["policy"] != "synthetic:stress" or e["gpu"] != "synthetic-gpu" for e in entries):
            sys.exit("FAIL: an entry that no writer made")
        print(f"{len(keys)} entries, each key once; all {len(logged)} logged keys present")

        exported = os.path.join(tmp, "cache.kfc")
        run(kfuse, "cache", "export", exported, "--cache", store)
        fresh = os.path.join(tmp, "fresh")
        out = run(kfuse, "cache", "import", exported, "--cache", fresh).stdout
        if f"{len(keys)} added" not in out:
            sys.exit(f"FAIL: import: {out}")
        a = [{k: x for k, x in e.items() if k != "hits"} for e in ls(kfuse, store)]
        b = [{k: x for k, x in e.items() if k != "hits"} for e in ls(kfuse, fresh)]
        if a != b:
            sys.exit("FAIL: export -> import gives other entries")
        sa = json.loads(run(kfuse, "cache", "stats", "--json", "--cache", store).stdout)
        sb = json.loads(run(kfuse, "cache", "stats", "--json", "--cache", fresh).stdout)
        if sa["entries"] != sb["entries"] or sa["bytes"] != sb["bytes"]:
            sys.exit(f"FAIL: stats differ after import: {sa} {sb}")
        print(f"export -> import: the same {len(b)} entries, {sb['bytes']} payload bytes")

        limit = sb["bytes"] // 3
        run(kfuse, "cache", "gc", "--max-bytes", str(limit), "--cache", fresh)
        sc = json.loads(run(kfuse, "cache", "stats", "--json", "--cache", fresh).stdout)
        if sc["bytes"] > limit or sc["entries"] >= sb["entries"]:
            sys.exit(f"FAIL: gc --max-bytes {limit}: {sc}")
        run(kfuse, "cache", "verify", "--cache", fresh)
        print(f"gc --max-bytes {limit}: {sc['entries']} entries, {sc['bytes']} bytes")
    print("PASS")


if __name__ == "__main__":
    main()
