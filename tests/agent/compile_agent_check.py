#!/usr/bin/env python3
"""`kfuse compile --agent llm`'s scheduling (tools/compile_agent.c) against
scripted conversations on a loopback OpenAI-compatible server
(tests/agent/llm_server.py), on tests/fixtures/activations.default.pt2
(three groups, each with a built-in unit), judged on the fake CUDA driver
(no unit verifies there, so the built-in units time nothing and the
ordering is the static estimate).

    compile_agent_check.py KFUSE FAKE_LIBCUDA

Checks:
  - several sessions in flight: with --agent-jobs 3 and slow replies, the
    server's first three requests come from three different sessions
    (told apart by the task key in their first user message) before any
    session's second request;
  - the ordering in agent.json: "static" on the fake driver, with why, the
    groups by descending score, the sessions in that order;
  - the compile report's "agent": the sessions, in_module, units_replaced;
  - a per-model token budget: sessions in flight stop at their next turn
    with the model's budget as the reason, and no new session starts;
  - an endpoint that fails: every session says so, every group keeps its
    built-in unit and the module is written;
  - the API key appears in no output and no file."""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import key_leaks, read_requests, scripted_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KFUSE, FAKE = sys.argv[1], sys.argv[2]
MODEL = os.path.join(HERE, "..", "fixtures", "activations.default.pt2")
work = tempfile.mkdtemp(prefix="kfuse-compile-agent-")
key = "sk-test-" + secrets.token_hex(16)
failures, outputs = [], []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def reply(calls, tokens=(100, 20), delay=0):
    msg = {"role": "assistant", "content": None,
           "tool_calls": [{"id": f"c{secrets.token_hex(3)}", "type": "function",
                           "function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls]}
    return {"status": 200, "delay": delay,
            "body": {"choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}],
                     "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}}}


def compile_agent(name, script, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    so = os.path.join(d, "m.so")
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env["KFUSE_TEST_AGENT_KEY"] = key
    env["KFUSE_LIBCUDA"] = FAKE
    with scripted_server(script, d) as port:
        p = subprocess.run([KFUSE, "compile", MODEL, "-o", so, "--report", os.path.join(d, "r.json"),
                            "--agent", "llm", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "scripted",
                            "--api-key-env", "KFUSE_TEST_AGENT_KEY", "--backoff", "0.05"] + list(extra),
                           capture_output=True, text=True, env=env, timeout=300)
    outputs.append(p.stdout + p.stderr)
    summ = report = None
    sp = os.path.join(d, "m.so.agent", "agent.json")
    if os.path.exists(sp):
        summ = json.load(open(sp))
    if os.path.exists(os.path.join(d, "r.json")):
        report = json.load(open(os.path.join(d, "r.json")))
    return p, summ, report, read_requests(d), d


def session_of(req, keys):
    """The task key a request's first user message names."""
    msgs = req["request"].get("messages", [])
    text = msgs[1]["content"] if len(msgs) > 1 else ""
    return next((k for k in keys if k in text), None)


# ---- three sessions in flight at once ----
script = [reply([("list_files", {})], delay=1.0)] * 3 + [reply([("submit", {})])] * 3
p, summ, report, reqs, d = compile_agent("jobs", script, ["--agent-jobs", "3", "--agent-groups", "3"])
sessions = summ["sessions"] if summ else []
keys = [s["key"] for s in sessions]
order = [session_of(r, keys) for r in reqs]
check(p.returncode == 0 and os.path.exists(os.path.join(d, "m.so")), "compile --agent llm writes the module")
check(len(sessions) == 3 and all(s["stop"] == "submitted" for s in sessions) and len(reqs) == 6,
      "three sessions, each submitted after two turns")
check(len(order) == 6 and None not in order and len(set(order[:3])) == 3,
      "the first three requests come from three different sessions (in flight at once)")
check(all(order.count(k) == 2 for k in keys), "each session's two requests carry its own task")
check(p.stderr.count("started with scripted") == 3 and p.stderr.count("the built-in one stays") == 3,
      "a progress line per session start and stop")
ordering = summ["ordering"] if summ else {}
check(ordering.get("by") == "static" and "could not be timed" in ordering.get("why", ""),
      "the ordering is the static estimate on the fake driver, and says why")
groups = summ["groups"] if summ else []
scores = [g["score"] for g in groups]
check(len(groups) == 3 and scores == sorted(scores, reverse=True) and
      all(abs(g["score"] - g["copies"] * g["floor_estimate_ms"]) < 1e-12 for g in groups),
      "the groups by descending score, copies x floor estimate")
check([s["key"] for s in sessions] == [g["key"] for g in groups] and
      all(s["ordering"] == "static" and "score" in s for s in sessions), "the sessions in the ordering's order")
check(all(k in sessions[0] for k in ("turns", "tokens", "seconds", "judge_calls", "have_unit", "stop")) and
      sum(s["tokens"] for s in sessions) == 6 * 120 == summ.get("tokens"), "agent.json's counts")
ag = report.get("agent", {}) if report else {}
check(len(ag.get("sessions", [])) == 3 and ag.get("units_replaced") == 0 and
      all(s.get("in_module") is False for s in ag["sessions"]) and "no agent unit replaced" in ag.get("note", ""),
      "the report lists the sessions and says no agent unit replaced a built-in one")
check(summ and summ["budget"]["jobs"] == 3 and summ["budget"]["gpus"] >= 1, "agent.json's budget")

# ---- the model's token budget: sessions in flight stop, no new one starts ----
script = [reply([("list_files", {})], delay=0.3)] * 12
p, summ, report, reqs, d = compile_agent("tokens", script, ["--agent-jobs", "2", "--agent-groups", "3",
                                                           "--agent-tokens", "300", "--agent-turns", "10"])
sessions = summ["sessions"] if summ else []
groups = summ["groups"] if summ else []
check(p.returncode == 0 and os.path.exists(os.path.join(d, "m.so")), "the module is written")
check(len(sessions) == 2 and all("the model's token budget (300) is spent" in s["stop"] for s in sessions),
      "both sessions in flight stop on the model's token budget")
check(len(reqs) <= 5 and sum(s["tokens"] for s in sessions) >= 300, "they stop at their next turn")
check(len(groups) == 3 and sum(g["session"].startswith("not started: the model's token budget") for g in groups) == 1,
      "no new session starts once it is spent")
check(summ and summ.get("budget_spent", "").startswith("the model's token budget"), "agent.json says it was spent")

# ---- an endpoint that fails: every group falls back ----
p, summ, report, reqs, d = compile_agent("down", [{"status": 503, "body": {}}] * 20,
                                         ["--retries", "0", "--agent-groups", "3"])
sessions = summ["sessions"] if summ else []
check(p.returncode == 0 and os.path.exists(os.path.join(d, "m.so")) and len(sessions) == 3 and
      all(s["stop"].startswith("the endpoint failed") and not s["have_unit"] for s in sessions),
      "an endpoint that fails: every session says so, the module is built")
check(report and report["unique_units"] == 3 and
      all(e.get("policy", "").startswith("builtin") for e in report["group_list"] if "policy" in e),
      "every group keeps its built-in unit")

# ---- option errors ----
p2 = subprocess.run([KFUSE, "compile", MODEL, "-o", os.path.join(work, "x.so"), "--agent", "llm",
                     "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--agent-jobs", "0"],
                    capture_output=True, text=True)
check(p2.returncode == 2 and "--agent-jobs" in p2.stderr, "--agent-jobs 0 refused")

check(not key_leaks(key, outputs, work), "the API key appears in no output or file")

print(f"compile_agent_check: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
if failures:
    print(f"compile_agent_check: everything kept in {work}")
else:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
