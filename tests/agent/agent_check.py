#!/usr/bin/env python3
"""`kfuse agent` (judge/agent_loop.c) against scripted conversations on a
loopback OpenAI-compatible server (tests/agent/llm_server.py), on a task
made from tests/hacks/model.mlir (y = x * sigmoid(x)).

    agent_check.py KFUSE [FAKE_LIBCUDA] [--gpu]

Without --gpu the judge runs on the fake CUDA driver (no kernel runs, so
no unit verifies) or, with no driver given, on none; with --gpu on the
real one, where the replayed built-in unit must verify (reward >= 1) and be
kept. Checks:
  - the first request: the skill document as the system prompt, the task's
    summary, the five tools; later requests: each tool result answering
    its call by id;
  - a session: list_files, read_file of task.json, a read outside the task
    refused, a tool call with broken JSON answered with an error, the
    built-in unit written and judged, a unit that does not compile judged
    (reward -1, NVRTC's error in the reasons), a 429 on the way, submit;
  - OUT_DIR: attempts/001 and 002, result.json, trajectory.jsonl (start with
    the skill version and task key, every assistant turn and tool call with
    observation and verdict, end);
  - budgets: a model that never submits stops at --max-turns; a judge
    budget answered with an error;
  - an endpoint that fails: the session ends, says why, exits 0;
  - a reply without tool calls gets a nudge;
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
KFUSE = sys.argv[1]
GPU = "--gpu" in sys.argv
FAKE = next((a for a in sys.argv[2:] if a != "--gpu"), None)
work = tempfile.mkdtemp(prefix="kfuse-agent-")
key = "sk-test-" + secrets.token_hex(16)
failures, outputs = [], []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def reply(calls=None, content=None, tokens=(100, 20)):
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": f"c{secrets.token_hex(3)}", "type": "function",
                              "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
                             for n, a in calls]
    return {"status": 200, "body": {"choices": [{"index": 0, "message": msg,
                                                 "finish_reason": "tool_calls" if calls else "stop"}],
                                    "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]}}}


def agent_env():
    """The environment of a kfuse run: the key in its own variable (none
    in OPENAI_API_KEY), and the fake driver or none unless --gpu."""
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env["KFUSE_TEST_AGENT_KEY"] = key
    if not GPU:
        env.pop("KFUSE_LIBCUDA", None)
        if FAKE:
            env["KFUSE_LIBCUDA"] = FAKE
    return env


def session(name, script, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    out = os.path.join(d, "out")
    with scripted_server(script, d) as port:
        env = agent_env()
        cmd = [KFUSE, "agent", TASK, "-o", out, "--endpoint", f"http://127.0.0.1:{port}/v1",
               "--model", "scripted", "--api-key-env", "KFUSE_TEST_AGENT_KEY", "--backoff", "0.05",
               "--judge-timeout", "120"] + list(extra)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    outputs.append(p.stdout + p.stderr)
    reqs = read_requests(d)
    res = None
    try:
        res = json.loads(p.stdout)
    except ValueError:
        pass
    traj = []
    tp = os.path.join(out, "trajectory.jsonl")
    if os.path.exists(tp):
        traj = [json.loads(l) for l in open(tp)]
    return p, res, reqs, traj, out


tasks = os.path.join(work, "tasks")
subprocess.run([KFUSE, "task", os.path.join(HERE, "..", "hacks", "model.mlir"), "--all", "-o", tasks, "-q"],
               check=True)
TASK = os.path.join(tasks, "group_0")
unit_cu = open(os.path.join(TASK, "builtin", "unit.cu")).read()
unit_json = json.load(open(os.path.join(TASK, "builtin", "unit.json")))
unit_json["policy"] = "llm:scripted"
task_key = json.load(open(os.path.join(TASK, "task.json")))["key"]

# ---- a whole session ----
script = [
    reply([("list_files", {}), ("read_file", {"path": "task.json"})]),
    reply([("read_file", {"path": "../../etc/passwd"}), ("read_file", '{"path": "group.mlir"')]),
    {"status": 429, "headers": {"Retry-After": "0"}, "body": {"error": {"message": "slow down"}}},
    reply([("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})]),
    reply([("judge", {})]),
    reply([("write_unit", {"unit_cu": "this is not CUDA", "unit_json": json.dumps(unit_json)}), ("judge", {})]),
    reply([("submit", {})], content="done"),
]
p, res, reqs, traj, out = session("whole", script)
check(p.returncode == 0 and res is not None, "the session runs and prints result.json")
check(res and res["stop"] == "submitted" and res["turns"] == 6, "ends on submit after 6 turns")
check(res and res["units_written"] == 2 and res["judge_calls"] == 2, "two units written, two judged")
check(res and res["prompt_tokens"] == 600 and res["completion_tokens"] == 120, "tokens summed")
check(len(reqs) == 7, "7 requests (one retried after 429)")
first = reqs[0]["request"] if reqs else {}
msgs = first.get("messages", [])
check(len(msgs) == 2 and msgs[0]["role"] == "system" and msgs[0]["content"].startswith("skill-version: 1"),
      "the skill document is the system prompt")
check(len(msgs) == 2 and task_key in msgs[1]["content"] and "kf." in msgs[1]["content"],
      "the first user message quotes task.json and group.mlir")
check(sorted(t["function"]["name"] for t in first.get("tools", [])) ==
      ["judge", "list_files", "read_file", "submit", "write_unit"], "the five tools offered")
second = reqs[1]["request"]["messages"] if len(reqs) > 1 else []
asst = second[2] if len(second) > 2 else {}
tool_msgs = [m for m in second if m.get("role") == "tool"]
check(asst.get("role") == "assistant" and len(tool_msgs) == 2 and
      [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in asst.get("tool_calls", [])],
      "each tool result answers its call by id")
check(len(tool_msgs) == 2 and "task.json" in tool_msgs[0]["content"] and "builtin/unit.cu" in tool_msgs[0]["content"],
      "list_files lists the task's files")
check(len(tool_msgs) == 2 and json.loads(tool_msgs[1]["content"])["key"] == task_key, "read_file returns task.json")
third = [m for m in reqs[2]["request"]["messages"] if m.get("role") == "tool"][-2:] if len(reqs) > 2 else []
check(len(third) == 2 and third[0]["content"].startswith("error: only files inside the task directory"),
      "a read outside the task is refused")
check(len(third) == 2 and "not valid JSON" in third[1]["content"], "broken JSON arguments answered with an error")
tools_traj = [r for r in traj if r["type"] == "tool"]
judges = [r for r in tools_traj if r["name"] == "judge"]
check(len(judges) == 2 and all("verdict" in r for r in judges), "both verdicts in the trajectory")
bad = judges[1]["verdict"] if len(judges) == 2 else {}
check(bad.get("compiled") is False and bad.get("reward") == -1 and
      "does not compile" in str(bad.get("reasons")) and "expected a declaration" in str(bad.get("reasons")),
      "the unit that does not compile: reward -1 with NVRTC's error")
good = judges[0]["verdict"] if judges else {}
if GPU:
    check(good.get("correct") is True and good.get("reward", -1) >= 1, "the built-in unit verifies on the GPU")
    check(res and res["have_unit"] and res["best_reward"] >= 1 and
          open(os.path.join(out, "unit.cu")).read() == unit_cu, "the verified unit is kept in OUT_DIR")
else:
    check(good.get("compiled") is True and (good.get("correct") is False or good.get("judged") is False),
          "the built-in unit compiles; without a GPU it does not verify")
    check(res and not res["have_unit"] and not os.path.exists(os.path.join(out, "unit.cu")),
          "no unit kept when none verified")
for n, want in ((1, unit_cu), (2, "this is not CUDA")):
    f = os.path.join(out, "attempts", f"{n:03d}", "unit.cu")
    check(os.path.exists(f) and open(f).read() == want, f"attempt {n} written")
start = traj[0] if traj else {}
check(start.get("type") == "start" and start.get("skill_version") == "1" and start.get("task_key") == task_key
      and start.get("model") == "scripted" and len(start.get("tools", [])) == 5, "trajectory start record")
check(sum(r["type"] == "assistant" for r in traj) == 6 and traj[-1]["type"] == "end"
      and traj[-1]["stop"] == "submitted", "trajectory: six assistant turns and the end")
check(json.load(open(os.path.join(out, "result.json"))) == res, "result.json is what was printed")

# ---- a model that never submits: the turn budget ----
p, res, reqs, traj, out = session("turns", [reply([("list_files", {})])] * 10, ["--max-turns", "3"])
check(p.returncode == 0 and res and res["turns"] == 3 and "turn budget (3)" in res["stop"] and len(reqs) == 3,
      "stops at --max-turns")

# ---- the judge budget ----
p, res, reqs, traj, out = session("judge_budget", [
    reply([("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})]),
    reply([("judge", {}), ("judge", {})]), reply([("submit", {})])], ["--max-judge", "1"])
obs = [r["observation"] for r in traj if r["type"] == "tool" and r["name"] == "judge"]
check(res and res["judge_calls"] == 1 and len(obs) == 2 and obs[1].startswith("error: the judge budget"),
      "a judge call past --max-judge is answered with an error")

# ---- a reply without tool calls gets a nudge ----
p, res, reqs, traj, out = session("nudge", [reply(content="I will think."), reply([("submit", {})])])
last = reqs[1]["request"]["messages"][-1] if len(reqs) > 1 else {}
check(res and res["stop"] == "submitted" and last.get("role") == "user" and "Use the tools" in last.get("content", ""),
      "a reply without tool calls is nudged")

# ---- an endpoint that fails ----
p, res, reqs, traj, out = session("down", [{"status": 500, "body": {"error": {"message": "down"}}}] * 3,
                                  ["--retries", "1"])
check(p.returncode == 0 and res and res["stop"].startswith("the endpoint failed") and "HTTP 500" in res["stop"]
      and not res["have_unit"] and len(reqs) == 2, "an endpoint that fails ends the session with the reason")
check(any(r["type"] == "error" for r in traj), "the failure is in the trajectory")

# ---- OUT_DIR must not exist ----
p2 = subprocess.run([KFUSE, "agent", TASK, "-o", out, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"],
                    capture_output=True, text=True)
check(p2.returncode == 1 and "must not exist" in p2.stderr, "an existing OUT_DIR is refused")

# ---- kfuse compile --agent llm: sessions before the compile, the built-in fallback ----
def compile_agent(name, script, extra=()):
    d = os.path.join(work, name)
    os.makedirs(d)
    so = os.path.join(d, "m.so")
    with scripted_server(script, d) as port:
        env = agent_env()
        p = subprocess.run([KFUSE, "compile", os.path.join(HERE, "..", "judge", "softmax.mlir"), "-o", so,
                            "--report", os.path.join(d, "r.json"), "--agent", "llm",
                            "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "scripted",
                            "--api-key-env", "KFUSE_TEST_AGENT_KEY", "--backoff", "0.05"] + list(extra),
                           capture_output=True, text=True, env=env, timeout=900)
    outputs.append(p.stdout + p.stderr)
    summary = None
    sp = os.path.join(d, "m.so.agent", "agent.json")
    if os.path.exists(sp):
        summary = json.load(open(sp))
    return p, summary, read_requests(d), d


p, summ, reqs, d = compile_agent("compile", [reply([("list_files", {})]), reply([("submit", {})])] * 8,
                                 ["--agent-groups", "2"])
sessions = summ["sessions"] if summ else []
check(p.returncode == 0 and os.path.exists(os.path.join(d, "m.so")), "compile --agent llm writes the module")
check(len(sessions) >= 1 and len(sessions) <= 2 and all(s["stop"] == "submitted" for s in sessions)
      and len(reqs) == 2 * len(sessions), "one session per group up to --agent-groups, each submitted")
check(all(os.path.exists(os.path.join(s["dir"], "trajectory.jsonl")) for s in sessions),
      "each session's trajectory kept")
check(summ and summ.get("skill_version") == "1" and "kfuse: agent: group" in p.stderr, "agent.json and progress")
if not GPU:
    check(all(not s["have_unit"] for s in sessions) and "the built-in one stays" in p.stderr,
          "no unit verified: the built-in units compile")
p, summ, reqs, d = compile_agent("compile_down", [{"status": 503, "body": {}}] * 20, ["--retries", "0"])
check(p.returncode == 0 and os.path.exists(os.path.join(d, "m.so")) and summ and
      all(s["stop"].startswith("the endpoint failed") for s in summ["sessions"]),
      "an endpoint that fails: every session says so, the module is built all the same")
p2 = subprocess.run([KFUSE, "compile", os.path.join(HERE, "..", "judge", "softmax.mlir"), "-o",
                     os.path.join(work, "x.so"), "--agent", "llm"], capture_output=True, text=True)
check(p2.returncode == 2 and "--agent llm needs --endpoint and --model" in p2.stderr, "--agent llm without an endpoint")

# ---- the key in no output and no file ----
check(not key_leaks(key, outputs, work), "the API key appears in no output or file")

print(f"agent_check: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
if failures:
    print(f"agent_check: everything kept in {work}")
else:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
