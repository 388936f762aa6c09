#!/usr/bin/env python3
"""scripts/serve_throughput.py — judged candidates per minute through
`kfuse serve` (issue 29's service targets: >= 60 a minute per GPU with 8
concurrent sessions, and two GPUs >= 1.8 x one).

    python3 scripts/serve_throughput.py KFUSE [--gpus 1,2] [--sessions 8]
        [--seconds 60] [--sanitize] [--out DIR]

For each GPU count: a task made from tests/hacks/model.mlir (y = x *
sigmoid(x), 2048 x 1024 f32; `kfuse task`), `kfuse serve --gpus N` on
loopback with room for the sessions, then SESSIONS client threads
(python/kfuse/rollout.py), each opening sessions on the task and, until
--seconds have passed, writing a unit (the task's built-in unit, or
tests/hacks/honest_fast) and judging it. A candidate counts when its
judge call came back judged (reward -1..3, not "not judged"); the rate is
those over the wall time, per minute and per GPU, with the median and
95th percentile of a judge call's latency. The service runs without the
compute-sanitizer pass unless --sanitize (the targets are for the judge
itself; the pass adds about 2.5 s to each verified candidate on an
H200). Prints a table and writes DIR/throughput.json. Without a GPU
(the fake driver in KFUSE_LIBCUDA) it exercises the plumbing only: no
candidate is judged there.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from kfuse.rollout import Client, RolloutError  # noqa: E402


def units(task):
    built = os.path.join(task, "builtin")
    fast = os.path.join(ROOT, "tests", "hacks", "honest_fast")
    out = []
    for d in (built, fast):
        if os.path.isdir(d):
            j = json.load(open(os.path.join(d, "unit.json")))
            j["source"] = "unit.cu"
            j["policy"] = "bench:throughput"
            out.append({"unit_json": json.dumps(j), "unit_cu": open(os.path.join(d, "unit.cu")).read()})
    return out


def measure(kfuse, tasks, n_gpus, n_sessions, seconds, sanitize, work):
    out = os.path.join(work, f"serve{n_gpus}")
    cmd = [kfuse, "serve", "--tasks", tasks, "-o", out, "--listen", "127.0.0.1:0", "--gpus", str(n_gpus),
           "--max-sessions", str(n_sessions * 2), "--max-judge", "100000", "--max-calls", "1000000", "-q"]
    if not sanitize:
        cmd.append("--no-sanitize")
    log = open(os.path.join(work, f"serve{n_gpus}.log"), "w")
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        url = srv.stdout.readline().strip()
        client = Client(url)
        health = client.health()
        tid = client.tasks()[0]["id"]
        cands = units(os.path.join(tasks, tid))
        lat, judged, errors = [], [0], []
        lock = threading.Lock()
        end = time.monotonic() + seconds

        def worker(k):
            i = k
            while time.monotonic() < end:
                try:
                    with client.session(tid, max_judge=100000, model="throughput") as s:
                        while time.monotonic() < end:
                            c = cands[i % len(cands)]
                            i += 1
                            s.call("write_unit", c)
                            t0 = time.monotonic()
                            r = s.call("judge")
                            dt = time.monotonic() - t0
                            v = r.get("verdict") or {}
                            with lock:
                                lat.append(dt)
                                judged[0] += bool(v.get("judged"))
                except RolloutError as e:
                    with lock:
                        errors.append(str(e)[:200])
                    time.sleep(0.5)

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
    finally:
        srv.terminate()
        srv.wait(timeout=60)
    lat.sort()
    return {"gpus": n_gpus, "sessions": n_sessions, "sanitize": sanitize, "wall_s": round(wall, 1),
            "judge_calls": len(lat), "judged": judged[0],
            "judged_per_min": round(judged[0] / wall * 60, 1),
            "judged_per_min_per_gpu": round(judged[0] / wall * 60 / n_gpus, 1),
            "latency_median_s": round(statistics.median(lat), 3) if lat else None,
            "latency_p95_s": round(lat[int(0.95 * (len(lat) - 1))], 3) if lat else None,
            "health": health.get("status"), "errors": errors[:5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kfuse")
    ap.add_argument("--gpus", default="1")
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--sanitize", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kfuse-throughput-")
    tasks = os.path.join(work, "tasks")
    subprocess.run([a.kfuse, "task", os.path.join(ROOT, "tests", "hacks", "model.mlir"), "--all", "-o", tasks, "-q"],
                   check=True)
    rows = [measure(a.kfuse, tasks, int(g), a.sessions, a.seconds, a.sanitize, work) for g in a.gpus.split(",")]
    print("| GPUs | sessions | judge calls | judged | judged/min | per GPU | median s | p95 s | health |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gpus']} | {r['sessions']} | {r['judge_calls']} | {r['judged']} | {r['judged_per_min']} | "
              f"{r['judged_per_min_per_gpu']} | {r['latency_median_s']} | {r['latency_p95_s']} | {r['health']} |")
        for e in r["errors"]:
            print(f"  error: {e}")
    if len(rows) > 1 and rows[0]["judged_per_min"]:
        print(f"scaling {rows[-1]['gpus']} GPUs / {rows[0]['gpus']}: "
              f"{rows[-1]['judged_per_min'] / rows[0]['judged_per_min']:.2f}x")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        json.dump(rows, open(os.path.join(a.out, "throughput.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
