#!/usr/bin/env python3
"""`kfuse serve` (tools/serve*.c) driven by its Python client
(python/kfuse/rollout.py) on loopback, on a task made from
tests/hacks/model.mlir (y = x * sigmoid(x)).

    serve_check.py KFUSE [FAKE_LIBCUDA] [--gpu]

Without --gpu the judge runs on the fake CUDA driver (no kernel runs, so no
unit verifies) or, with no driver given, on none; with --gpu on the real
one, where the built-in unit must verify (reward >= 1) and be kept.
Checks:
  - the bound address printed on stdout; a bearer token required (401
    without it, or with a wrong one);
  - health, tasks (id, key, ops);
  - a session: the skill document, the task's summary, the six tools;
    list_files, read_file, a read outside the task refused, broken JSON
    arguments and an unknown tool answered with error observations, the
    built-in unit written and judged, then profiled (per-step times on the
    GPU; without one "not available" and why), a unit that does not
    compile judged (reward -1), state, submit (done; later calls 409),
    close (result);
  - errors: a body that is not JSON (400), unknown session (404), unknown
    task or a task id escaping --tasks (404), too many sessions (429),
    wrong method (405), unknown path (404), an oversized body (413), a
    chunked body (411);
  - connections: with 32 idle and 8 slow (unfinished head) connections
    open, a request is answered within 1 s; a wrong token is answered 401
    from the head alone (the body never sent) and the connection closed;
    any error closes the connection; pipelined keep-alive requests;
  - one GPU: a judge call started while another's compile runs (a
    source NVRTC takes seconds over) finishes first;
  - two sessions judged at once;
  - SIGTERM with a judge call in flight: the call is answered, the server
    exits 0, every session's trajectory ends with its end record and
    result.json;
  - the token in no output and no file; no seed in what the model sees;
    no host path in a trajectory or result."""
import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from harness import key_leaks, skill_version  # noqa: E402
from kfuse.rollout import Client, RolloutError  # noqa: E402

KFUSE = sys.argv[1]
SKILL_VERSION = skill_version()
GPU = "--gpu" in sys.argv
FAKE = next((a for a in sys.argv[2:] if a != "--gpu"), None)
work = tempfile.mkdtemp(prefix="kfuse-serve-")
token = "tok-" + secrets.token_hex(16)
failures, outputs = [], []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def status_of(fn):
    try:
        fn()
    except RolloutError as e:
        return e.status, e.error
    return 200, ""


def raw(url, method, path, body=b"", headers=None):
    u = urllib.parse.urlparse(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = {"Authorization": f"Bearer {token}"}
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, {"raw": data.decode(errors="replace")}


tasks = os.path.join(work, "tasks")
subprocess.run([KFUSE, "task", os.path.join(HERE, "..", "hacks", "model.mlir"), "--all", "-o", tasks, "-q"],
               check=True)
TASK = os.path.join(tasks, "group_0")
unit_cu = open(os.path.join(TASK, "builtin", "unit.cu")).read()
unit_json = json.load(open(os.path.join(TASK, "builtin", "unit.json")))
unit_json["policy"] = "rl:test"
task_key = json.load(open(os.path.join(TASK, "task.json")))["key"]
# a secret outside --tasks, which no id may reach
with open(os.path.join(work, "secret.txt"), "w") as f:
    f.write("not for the model")

env = dict(os.environ)
env["KFUSE_TEST_SERVE_TOKEN"] = token
if not GPU:
    env.pop("KFUSE_LIBCUDA", None)
    if FAKE:
        env["KFUSE_LIBCUDA"] = FAKE
out = os.path.join(work, "out")
log = open(os.path.join(work, "serve.log"), "w+")
srv = subprocess.Popen([KFUSE, "serve", "--tasks", tasks, "-o", out, "--listen", "127.0.0.1:0",
                        "--max-sessions", "2", "--max-body", "65536", "--token-env", "KFUSE_TEST_SERVE_TOKEN",
                        "--judge-timeout", "120"], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
try:
    url = srv.stdout.readline().strip()
    check(url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0, "the bound address printed")

    # ---- auth ----
    st, err = status_of(lambda: Client(url).health())
    check(st == 401 and "bearer token" in err, "no token: 401")
    st, _ = status_of(lambda: Client(url, token="tok-wrong").health())
    check(st == 401, "a wrong token: 401")
    c = Client(url, token=token)
    h = c.health()
    check(h["status"] == "ok" and h["max_sessions"] == 2 and h["gpus"] == 1 and h["sessions"] == 0, "health")
    # a service started for more GPUs than the driver sees: health says so
    srv2 = subprocess.Popen([KFUSE, "serve", "--tasks", tasks, "-o", os.path.join(work, "out2"), "--listen",
                             "127.0.0.1:0", "--gpus", "64"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    try:
        h2 = Client(srv2.stdout.readline().strip()).health()
    finally:
        srv2.terminate()
        srv2.wait(timeout=30)
    check(h2["status"] == "degraded" and "64 device(s) needed" in h2.get("judge", ""),
          f"health without the GPUs it needs: degraded, and why ({h2.get('judge', '')[:80]})")
    ts = c.tasks()
    check([t["id"] for t in ts] == ["group_0"] and ts[0]["key"] == task_key and ts[0]["ops"] == ["sigmoid", "mul"],
          "tasks: the id, key and ops")

    # ---- a whole session ----
    s = c.session("group_0", max_judge=5, model="test-policy")
    check(s.system.startswith("skill-version: " + SKILL_VERSION) and task_key in s.prompt and "kf." in s.prompt,
          "the session: the skill document and the task's summary")
    check(sorted(t["function"]["name"] for t in s.tools) == ["judge", "list_files", "profile", "read_file",
                                                             "submit", "write_unit"], "the six tools")
    check(s.budget == {"tool_calls": 200, "judge_calls": 5}, "the budget: the session's within the service's")
    r = s.call("list_files", {}, id="c1", turn=1,
               message={"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]})
    check("task.json" in r["observation"] and "builtin/unit.cu" in r["observation"] and r["reward"] is None
          and r["verdict"] is None and r["done"] is False, "list_files")
    r = s.call("read_file", {"path": "task.json"})
    check(json.loads(r["observation"])["key"] == task_key, "read_file returns task.json")
    for p in ("../secret.txt", "../../secret.txt", os.path.join(work, "secret.txt")):
        r = s.call("read_file", {"path": p})
        check(r["observation"].startswith("error: only files inside the task directory"), f"a read of {p} refused")
    r = s.call("read_file", '{"path": "group.mlir"')
    check("not valid JSON" in r["observation"], "broken JSON arguments answered with an error observation")
    r = s.call("read_file", "[1, 2]")
    check("not a JSON object" in r["observation"], "arguments that are not an object answered with an error")
    r = s.call("launch_missiles", {})
    check(r["observation"].startswith("error: no tool named"), "an unknown tool answered with an error")
    r = s.call("judge")
    check(r["observation"].startswith("error: no unit written"), "judge before write_unit")
    r = s.call("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})
    check(r["observation"].startswith("written as attempt 1"), "write_unit")
    r = s.call("judge", {})
    v = r["verdict"] or {}
    check(isinstance(v, dict) and "seed" not in json.dumps(v) and "seed" not in r["observation"]
          and "unit" not in v and "task" not in v, "the verdict the model sees: no seed, no paths")
    if GPU:
        check(r["reward"] is not None and r["reward"] >= 1 and r["best_reward"] >= 1,
              "the built-in unit verifies on the GPU: reward >= 1")
    else:
        check(v.get("compiled") is True and (v.get("correct") is False or v.get("judged") is False)
              and r["best_reward"] is None, "the built-in unit compiles; without a GPU it does not verify")
        check(r["reward"] in (-1, None), "its reward: -1, or none when not judged")
    # the profile tool: a judge call with each step timed alone
    r = s.call("profile", {})
    pv = json.loads(r["observation"]) if r["observation"].startswith("{") else {}
    if GPU:
        steps = pv.get("steps", [])
        check(pv.get("available") is True and len(steps) == len(unit_json["steps"]) and
              all(x["ms"] > 0 for x in steps) and pv.get("floor_ms", 0) > 0 and r["reward"] >= 1,
              "profile: per-step times on the GPU")
    else:
        check(pv.get("available") is False and pv.get("why", "").startswith("not available: ")
              and r["reward"] in (-1, None), "profile without a GPU: not available, and why")
    s.call("write_unit", {"unit_cu": "this is not CUDA", "unit_json": unit_json})
    r = s.call("judge", {})
    check(r["reward"] == -1 and r["verdict"]["compiled"] is False and "expected a declaration" in r["observation"],
          "a unit that does not compile: reward -1 with NVRTC's error")
    stt = s.state()
    check(stt["state"] == "open" and stt["judge_calls"] == 3 and stt["units_written"] == 2 and
          stt["tool_calls"] == 14 and stt["busy"] is False, "state: the counts")
    r = s.call("submit", {})
    check(r["done"] is True and "submitted" in r["observation"], "submit: done")
    st, err = status_of(lambda: s.call("list_files", {}))
    check(st == 409 and "submitted" in err, "a call after submit: 409")
    res = s.close()
    check(res["stop"] == "submitted" and res["judge_calls"] == 3 and res["tool_calls"] == 15,
          "close: the result")
    check((s.unit == s.dir) if GPU else (s.unit is None), "close: the kept unit's directory (or none)")
    st, _ = status_of(lambda: s.state())
    check(st == 404, "a closed session: 404")
    sdir = os.path.join(out, s.dir)
    traj = [json.loads(l) for l in open(os.path.join(sdir, "trajectory.jsonl"))]
    start = traj[0] if traj else {}
    check(start.get("type") == "start" and start.get("source") == "serve" and start.get("task_key") == task_key
          and start.get("model") == "test-policy" and start.get("format") == "kfuse-trajectory-v1"
          and len(start.get("tools", [])) == 6 and start.get("messages", [{}])[0].get("role") == "system",
          "trajectory: the start record")
    check([r["type"] for r in traj].count("tool") == 15 and traj[1]["type"] == "assistant"
          and traj[2].get("id") == "c1" and traj[-1]["type"] == "end" and traj[-1]["stop"] == "submitted",
          "trajectory: the assistant message, every tool call, the end")
    check(sum("verdict" in r for r in traj) == 3 and json.load(open(os.path.join(sdir, "result.json")))["stop"]
          == "submitted", "trajectory: the three verdicts; result.json")
    check(os.path.exists(os.path.join(sdir, "attempts", "002", "unit.cu")), "the attempts written")

    # ---- errors ----
    st, b = raw(url, "POST", "/v1/sessions", b"not json")
    check(st == 400 and "not a JSON object" in b.get("error", ""), "a body that is not JSON: 400")
    st, b = raw(url, "POST", "/v1/sessions", b'{"task": 3}')
    check(st == 400, "a task that is not a string: 400")
    for bad in ("nope", "../tasks/group_0", "group_0/..", "/etc", "group_0/builtin"):
        st, err = status_of(lambda: c.session(bad))
        check(st == 404 and "no task" in err, f"task {bad!r}: 404")
    st, b = raw(url, "POST", "/v1/sessions/0123456789abcdef/tools", b'{"name": "list_files"}')
    check(st == 404 and "no open session" in b.get("error", ""), "an unknown session: 404")
    st, b = raw(url, "PUT", "/v1/health", b"{}")
    check(st == 405, "a wrong method: 405")
    st, b = raw(url, "GET", "/v2/nothing")
    check(st == 404, "an unknown path: 404")
    st, b = raw(url, "POST", "/v1/sessions", b"x" * 70000, {"Content-Type": "application/json"})
    check(st == 413, "a body over --max-body: 413")
    u = urllib.parse.urlparse(url)
    hc = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    hc.putrequest("POST", "/v1/sessions")
    hc.putheader("Authorization", f"Bearer {token}")
    hc.putheader("Transfer-Encoding", "chunked")
    hc.endheaders()
    hc.send(b"2\r\n{}\r\n0\r\n\r\n")
    rr = hc.getresponse()
    check(rr.status == 411, "a chunked body: 411")
    hc.close()
    st, b = raw(url, "POST", "/v1/sessions", b'{"task": "group_0", "max_judge": -3}')
    check(st == 400 and "max_judge" in b.get("error", ""), "a bad budget: 400")

    # ---- connections: idle and slow clients hold no thread; auth before the body; errors close ----
    import socket

    def conn():
        so = socket.create_connection((u.hostname, u.port), timeout=10)
        return so

    def read_all(so, limit=3.0):
        so.settimeout(limit)
        data = b""
        try:
            while True:
                b = so.recv(65536)
                if not b:
                    return data, True
                data += b
        except socket.timeout:
            return data, False

    idle = [conn() for _ in range(32)]
    slow = [conn() for _ in range(8)]
    for so in slow:  # a head never finished
        so.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
    time.sleep(0.3)
    t0 = time.time()
    st, b = raw(url, "GET", "/v1/health")
    dt = time.time() - t0
    check(st == 200 and dt < 1.0, f"with 32 idle and 8 slow connections open, a request answered in {dt:.3f} s")
    so = conn()  # the token is decided from the head: no body is waited for
    t0 = time.time()
    so.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
               b"Content-Length: 60000\r\n\r\n")
    data, closed = read_all(so)
    dt = time.time() - t0
    check(data.startswith(b"HTTP/1.1 401") and b"Connection: close" in data and closed and dt < 1.5,
          f"a wrong token with the body not sent: 401 in {dt:.3f} s, then closed")
    so.close()
    so = conn()  # a request, then the client shuts its side: answered
    so.sendall(f"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    so.shutdown(socket.SHUT_WR)
    data, closed = read_all(so)
    check(data.startswith(b"HTTP/1.1 200") and closed, "a request followed by the client's shutdown: answered")
    so.close()
    so = conn()  # a NUL byte in the head: 400 at once, not a wait
    so.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\x00y\r\n\r\n")
    t0 = time.time()
    data, closed = read_all(so)
    check(data.startswith(b"HTTP/1.1 400") and closed and time.time() - t0 < 1.5, "a NUL byte in the head: 400")
    so.close()
    so = conn()  # an error closes the connection, keep-alive asked or not
    so.sendall(f"GET /v2/nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    data, closed = read_all(so)
    check(data.startswith(b"HTTP/1.1 404") and b"Connection: close" in data and closed, "a 404 closes the connection")
    so.close()
    so = conn()  # a success keeps it: two requests on one connection, the second pipelined
    req = f"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    so.sendall(req + req)
    data, closed = read_all(so, 1.0)
    check(data.count(b"HTTP/1.1 200") == 2 and not closed, "keep-alive: two pipelined requests answered, kept open")
    so.close()
    for x in idle + slow:
        x.close()

    # ---- the GPU is held for a judge call's run, not its compile: with one
    # GPU, a call that starts while another compiles (a source NVRTC takes
    # seconds over) finishes first ----
    # (6000 statements: NVRTC takes 10-15 s over them on CI's machine, while
    # the quick call's host work, the CPU reference of 12 input variants of
    # 2M elements, takes about 3 s under ASan; 1000 statements took 2.6 s,
    # too close)
    step = "counter += (int)x[counter & 7]; counter ^= counter >> 3; counter += (int)x[(counter >> 2) & 7]; " * 2
    slow_cu = ("#define T10(x) x x x x x x x x x x\n__device__ int counter;\n"
               "extern \"C\" __global__ void k(const float *x, float *y, long long n) {\n"
               f"  T10(T10(T10({step})))\n  y[0] = (float)counter;\n}}\n")
    sa, sb = c.session("group_0"), c.session("group_0")
    sa.call("write_unit", {"unit_cu": slow_cu, "unit_json": json.dumps(unit_json)})
    sb.call("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})
    done_at = {}

    def judge_at(name, sess, delay):
        time.sleep(delay)
        try:
            sess.call("judge", {})
        except RolloutError:
            pass
        done_at[name] = time.time()

    th = [threading.Thread(target=judge_at, args=a) for a in (("slow", sa, 0.0), ("quick", sb, 0.5))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(done_at["quick"] < done_at["slow"],
          f"a judge call started during another's compile finishes first ({done_at['slow'] - done_at['quick']:.1f} s "
          "before it)")
    sa.close()
    sb.close()

    # ---- two sessions at once, then a third refused ----
    s1, s2 = c.session("group_0"), c.session("group_0", max_judge=1)
    st, err = status_of(lambda: c.session("group_0"))
    check(st == 429 and "--max-sessions" in err, "too many sessions: 429")
    check(len(c.sessions()) == 2 and c.health()["sessions"] == 2, "two sessions open")
    got = {}

    def run(name, sess):
        try:
            sess.call("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})
            got[name] = sess.call("judge", {})
        except RolloutError as e:
            got[name] = e

    th = [threading.Thread(target=run, args=(n, x)) for n, x in (("a", s1), ("b", s2))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    check(all(isinstance(got.get(n), dict) and got[n]["verdict"] and got[n]["judge_calls"] == 1 for n in "ab"),
          "two sessions judged at once: both verdicts")
    r = s2.call("judge", {})
    check(r["observation"].startswith("error: the judge budget"), "the session's judge budget")

    # ---- SIGTERM with a judge call in flight ----
    s1.call("write_unit", {"unit_cu": unit_cu + "\n// again\n", "unit_json": json.dumps(unit_json)})
    inflight = {}

    def judge_late():
        try:
            inflight["r"] = s1.call("judge", {})
        except RolloutError as e:
            inflight["r"] = e

    t = threading.Thread(target=judge_late)
    t.start()
    time.sleep(0.3)
    srv.send_signal(signal.SIGTERM)
    t.join(120)
    rc = srv.wait(120)
    check(rc == 0, "SIGTERM: exit 0")
    check(isinstance(inflight.get("r"), dict) and inflight["r"]["verdict"] is not None,
          "the judge call in flight when stopped was answered")
    log.seek(0)
    lines = log.read().splitlines()
    stop_at = next((i for i, l in enumerate(lines) if "serve: stopping" in l), None)
    last_call = max((i for i, l in enumerate(lines) if f"/v1/sessions/{s1.id}/tools 200" in l), default=-1)
    check(stop_at is not None and last_call > stop_at, "... after the stop began (it was in flight)")
    for x in (s1, s2):
        d = os.path.join(out, x.dir)
        tr = [json.loads(l) for l in open(os.path.join(d, "trajectory.jsonl"))]
        res = json.load(open(os.path.join(d, "result.json"))) if os.path.exists(os.path.join(d, "result.json")) \
            else {}
        check(tr and tr[-1]["type"] == "end" and tr[-1]["stop"] == "the service stopped"
              and res.get("stop") == "the service stopped", f"session {x.id[:8]}: closed with its result on stop")
    check(len(os.listdir(os.path.join(out, "sessions"))) == 5, "five sessions written")
finally:
    if srv.poll() is None:
        srv.kill()
        srv.wait()
    log.seek(0)
    outputs.append(log.read())
    outputs.append(srv.stdout.read() if srv.stdout else "")

st = subprocess.run([KFUSE, "serve", "--tasks", tasks, "-o", os.path.join(work, "o2"), "--token-env",
                     "KFUSE_TEST_SERVE_NO_SUCH"], capture_output=True, text=True)
check(st.returncode == 2 and "not set or empty" in st.stderr, "--token-env naming no variable: exit 2")
st = subprocess.run([KFUSE, "serve", "--tasks", os.path.join(work, "none"), "-o", os.path.join(work, "o3"),
                     "--listen", "127.0.0.1:0"], capture_output=True, text=True)
check(st.returncode == 1 and "not a directory" in st.stderr, "--tasks that does not exist: exit 1")
st = subprocess.run([KFUSE, "serve", "--tasks", tasks, "-o", os.path.join(work, "o4"), "--listen", "nonsense"],
                    capture_output=True, text=True)
check(st.returncode == 2 and "HOST:PORT" in st.stderr, "a malformed --listen: exit 2")
st = subprocess.run([KFUSE, "serve", "--tasks", tasks, "-o", os.path.join(work, "o5"), "--listen", "127.0.0.1:0"],
                    capture_output=True, text=True, env=dict(env, KFUSE_JUDGE_NO_WORKER="1"))
check(st.returncode == 2 and "KFUSE_JUDGE_NO_WORKER" in st.stderr,
      "KFUSE_JUDGE_NO_WORKER: serve refuses to start (untrusted kernels only in workers)")
outputs += [st.stdout + st.stderr]
check(not key_leaks(token, outputs, work), "the token appears in no output or file")
leaks = []  # what a trainer reads: no path of this machine (but those the test's model wrote itself)
for root, _, files in os.walk(os.path.join(out, "sessions")):
    for f in files:
        if not f.endswith((".jsonl", ".json")):
            continue
        for line in open(os.path.join(root, f), errors="replace").read().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                rec = line
            if isinstance(rec, dict):
                rec = {k: v for k, v in rec.items() if k not in ("arguments", "message")}
            if work in json.dumps(rec):
                leaks.append(os.path.relpath(os.path.join(root, f), out) + ": " + json.dumps(rec)[:200])
check(not leaks, f"no host path in the sessions' trajectories and results {leaks[:3]}")

print(f"serve_check: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
if failures:
    print(f"serve_check: everything kept in {work}")
else:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
