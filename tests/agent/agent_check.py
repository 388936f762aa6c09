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
    summary, the six tools; later requests: each tool result answering
    its call by id;
  - a session: list_files, read_file of task.json, a read outside the task
    refused, a tool call with broken JSON answered with an error, the
    built-in unit written and judged, a unit that does not compile judged
    (reward -1, NVRTC's error in the reasons), a 429 on the way, submit;
  - OUT_DIR: attempts/001 and 002, result.json, trajectory.jsonl (start with
    the skill version and task key, every assistant turn and tool call with
    observation and verdict, end);
  - a compile error fixed on the next turn (tests/hacks/compile_error, then
    honest_fast): NVRTC's error in the next request, the fix judged;
  - a cheating kernel (tests/hacks/constant_output) rejected and never
    kept, a 2048-thread block refused before compiling; the same session,
    each reply 0.15 s late, measures the loop's overhead (seconds less
    model_seconds and judge_seconds): under 5%;
  - reward 3 on a copy of the task with slow baselines (eager and
    torch.compile 1e6 ms; --gpu), then the profile tool on a two-step unit
    (per-step times on the GPU; without one, "not available" and why);
  - budgets: a model that never submits stops at --max-turns; a judge
    budget answered with an error;
  - an endpoint that fails: the session ends, says why, exits 0;
  - a reply without tool calls gets a nudge;
  - the trajectory replays every request byte for byte, with observations
    trimmed and, under a smaller --context-chars, whole turns dropped;
  - a 200 with a cut-off body retried, "" tool arguments read as {};
  - replies without usage: tokens estimated, the token budget holds;
  - --trajectory never overwrites a file;
  - the API key appears in no output and no file."""
import copy
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import key_leaks, read_requests, scripted_server, skill_version  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HACKS = os.path.join(HERE, "..", "hacks")
KFUSE = sys.argv[1]
SKILL_VERSION = skill_version()
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


def session(name, script, extra=(), task=None, userinfo=""):
    d = os.path.join(work, name)
    os.makedirs(d)
    out = os.path.join(d, "out")
    with scripted_server(script, d) as port:
        env = agent_env()
        cmd = [KFUSE, "agent", task or TASK, "-o", out, "--endpoint", f"http://{userinfo}127.0.0.1:{port}/v1",
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
check(len(msgs) == 2 and msgs[0]["role"] == "system" and msgs[0]["content"].startswith("skill-version: " + SKILL_VERSION),
      "the skill document is the system prompt")
check(len(msgs) == 2 and task_key in msgs[1]["content"] and "kf." in msgs[1]["content"],
      "the first user message quotes task.json and group.mlir")
check(sorted(t["function"]["name"] for t in first.get("tools", [])) ==
      ["judge", "list_files", "profile", "read_file", "submit", "write_unit"], "the six tools offered")
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
check(len(judges) == 2 and all(r["judged"] == r["verdict"]["judged"] and
                               r["reward"] == (r["verdict"]["reward"] if r["judged"] else None) for r in judges)
      and judges[1]["judged"] and judges[1]["reward"] == -1,
      "each judge record carries the step's reward (null when not judged)")
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
check(start.get("type") == "start" and start.get("skill_version") == SKILL_VERSION and start.get("task_key") == task_key
      and start.get("model") == "scripted" and len(start.get("tools", [])) == 6, "trajectory start record")
check(sum(r["type"] == "assistant" for r in traj) == 6 and traj[-1]["type"] == "end"
      and traj[-1]["stop"] == "submitted", "trajectory: six assistant turns and the end")
check(json.load(open(os.path.join(out, "result.json"))) == res, "result.json is what was printed")

def unit_of(name):
    """A unit of the anti-hacking suite (tests/hacks/NAME): its unit.cu and unit.json texts."""
    d = os.path.join(HACKS, name)
    return open(os.path.join(d, "unit.cu")).read(), open(os.path.join(d, "unit.json")).read()


def verdicts(traj):
    return [r.get("verdict", {}) for r in traj if r["type"] == "tool" and r["name"] in ("judge", "profile")]


fast_cu, fast_json = unit_of("honest_fast")

# ---- a compile error fixed on the next turn ----
bad_cu, bad_json = unit_of("compile_error")
p, res, reqs, traj, out = session("fix", [
    reply([("write_unit", {"unit_cu": bad_cu, "unit_json": bad_json}), ("judge", {})]),
    reply([("write_unit", {"unit_cu": fast_cu, "unit_json": fast_json}), ("judge", {})]),
    reply([("submit", {})])])
vs = verdicts(traj)
seen = [m for m in reqs[1]["request"]["messages"] if m.get("role") == "tool"] if len(reqs) > 1 else []
check(len(vs) == 2 and vs[0].get("compiled") is False and vs[0].get("reward") == -1
      and "undefined_name" in str(vs[0].get("reasons")), "a compile error: reward -1, NVRTC's error in the reasons")
check(len(seen) == 2 and "does not compile" in seen[1]["content"] and "undefined_name" in seen[1]["content"],
      "the next request shows the model NVRTC's error")
check(len(vs) == 2 and vs[1].get("compiled") is True, "the corrected unit compiles")
if GPU:
    check(vs[1].get("correct") is True and vs[1].get("reward", -1) >= 1 and res and res["have_unit"]
          and open(os.path.join(out, "unit.cu")).read() == fast_cu, "the corrected unit verifies and is kept")
else:
    check(res and res["stop"] == "submitted" and not res["have_unit"], "the corrected unit: judged, none verified")

# ---- a cheating kernel rejected and never kept; the loop's overhead ----
# every reply 0.15 s late, so that the model's time is not nothing and the
# loop's own (everything but the model's and the judge's) can be measured
const_cu, const_json = unit_of("constant_output")
big_cu, big_json = unit_of("oversized_launch")
late = [dict(r, delay=0.15) for r in [
    reply([("list_files", {})]),
    reply([("read_file", {"path": "task.json"}), ("read_file", {"path": "model.py"})]),
    reply([("read_file", {"path": "builtin/unit.cu"}), ("read_file", {"path": "builtin/unit.json"})]),
    reply([("write_unit", {"unit_cu": unit_cu, "unit_json": json.dumps(unit_json)})]),
    reply([("judge", {})]),
    reply([("write_unit", {"unit_cu": const_cu, "unit_json": const_json})]),
    reply([("judge", {})]),
    reply([("write_unit", {"unit_cu": big_cu, "unit_json": big_json})]),
    reply([("judge", {})]),
    reply([("submit", {})])]]
p, res, reqs, traj, out = session("cheat", late)
vs = verdicts(traj)
cheat = vs[1] if len(vs) == 3 else {}
check(cheat.get("reward") == -1 and cheat.get("correct") is False, "constant output: reward -1")
if GPU:
    check("out of tolerance" in str(cheat.get("reasons")), "constant output: the verdict says out of tolerance")
    check(res and res["have_unit"] and res["best_reward"] >= 1 and open(os.path.join(out, "unit.cu")).read() == unit_cu,
          "the honest unit judged before stays kept; the cheat never replaces it")
else:
    check(cheat.get("compiled") is True and res and not res["have_unit"]
          and not os.path.exists(os.path.join(out, "unit.cu")), "constant output: compiled, judged, never kept")
check(len(vs) == 3 and vs[2].get("reward") == -1 and "refused before compiling" in str(vs[2].get("reasons"))
      and "2048" in str(vs[2].get("reasons")), "a 2048-thread block: refused before compiling, the reason named")
if res and res.get("seconds"):
    loop_s = res["seconds"] - res["model_seconds"] - res["judge_seconds"]
    share = loop_s / res["seconds"]
    print(f"     the loop's overhead: {loop_s * 1000:.1f} ms of {res['seconds']:.2f} s ({100 * share:.2f}%; model "
          f"{res['model_seconds']:.2f} s, judge {res['judge_seconds']:.2f} s, {res['turns']} turns, "
          f"{res['tool_calls']} tool calls)")
    check(res["model_seconds"] >= 10 * 0.15 and 0 <= share < 0.05,
          "the loop's overhead under 5% of the session (the model's and the judge's time measured)")
else:
    check(False, "the loop's overhead measured")

# ---- reward 3 (baselines written into a copy of the task, as tests/hacks/run.py does), then a profile ----
task3 = os.path.join(work, "task_slow_baselines")
shutil.copytree(TASK, task3)
tj = json.load(open(os.path.join(task3, "task.json")))
tj["baselines"].update(eager_ms=1e6, torch_compile_ms=1e6)
json.dump(tj, open(os.path.join(task3, "task.json"), "w"), indent=1)
two = json.loads(fast_json)  # a zero fill ahead of the kernel: a unit of two steps to profile
two["steps"].insert(0, {"kind": "memset", "args": [{"output": 0}, {"i64": 2048 * 1024 * 4}]})
p, res, reqs, traj, out = session("reward3", [
    reply([("write_unit", {"unit_cu": fast_cu, "unit_json": fast_json}), ("judge", {})]),
    reply([("write_unit", {"unit_cu": fast_cu, "unit_json": json.dumps(two)}), ("profile", {})]),
    reply([("submit", {})])], task=task3)
vs = verdicts(traj)
prof_obs = [r["observation"] for r in traj if r["type"] == "tool" and r["name"] == "profile"]
prof = json.loads(prof_obs[0]) if prof_obs and prof_obs[0].startswith("{") else {}
check(res and res["judge_calls"] == 2 and len(vs) == 2 and vs[0].get("baselines", {}).get("torch_compile_ms") == 1e6,
      "the profile counts as a judge call; the task's baselines in the verdict")
if GPU:
    check(vs[0].get("correct") is True and vs[0].get("reward") == 3 and "reward 3" in str(vs[0].get("reasons")),
          "honest_fast against slow baselines: reward 3")
    steps = prof.get("steps", [])
    check(prof.get("available") is True and [x["kind"] for x in steps] == ["memset", "launch"]
          and all(x["ms"] > 0 for x in steps) and prof.get("whole_ms", 0) > 0 and prof.get("floor_ms", 0) > 0
          and 0 < prof.get("floor_fraction", 0) <= 1.5 and prof.get("reward") == 3,
          "profile: each step's time, the floor and its fraction")
    kept = json.load(open(os.path.join(out, "unit.json")))
    check(res["best_reward"] == 3 and len(kept["steps"]) == 1,
          "the faster one-step unit stays kept (same reward, the profiled two-step one is slower)")
    print(f"     profile: {json.dumps(steps)[:300]}")
else:
    check(prof.get("available") is False and prof.get("why", "").startswith("not available: ")
          and prof.get("reward") in (-1, None), "profile without a GPU: not available, and why")

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

# ---- a reply cut at the token limit: the model is told so ----
cut = reply(content="Here is a long plan that")
cut["body"]["choices"][0]["finish_reason"] = "length"
p, res, reqs, traj, out = session("cut", [cut, reply([("submit", {})])], ["--max-tokens", "64"])
last = reqs[1]["request"]["messages"][-1] if len(reqs) > 1 else {}
check(res and res["stop"] == "submitted" and "cut off at the completion token limit (64 tokens)" in
      last.get("content", "") and any(r.get("finish_reason") == "length" for r in traj),
      "a reply cut at max_tokens: the model is told why, the trajectory records finish_reason")

# ---- the trajectory replays every request byte for byte: nudges and trims recorded ----
def replay(traj):
    """Every request body the loop sent, rebuilt from the trajectory alone."""
    st = traj[0]
    msgs = copy.deepcopy(st["messages"])
    out = []
    for r in traj[1:]:
        t = r["type"]
        if t == "trim" and "drop" in r:
            del msgs[r["drop"]:r["drop"] + r["count"]]
        elif t == "trim":
            msgs[r["index"]]["content"] = r["content"]
        elif t == "user":
            msgs.append({"role": "user", "content": r["content"]})
        elif t == "tool":
            msgs.append({"role": "tool", "content": r["observation"], "tool_call_id": r["id"]})
        elif t in ("assistant", "error"):
            body = {"model": st["model"], "messages": copy.deepcopy(msgs)}
            if st.get("tools"):
                body["tools"] = st["tools"]
            body.update(st.get("request", {}))
            out.append(json.dumps(body, separators=(",", ":"), ensure_ascii=False))
            if t == "assistant":
                msgs.append(r["message"])
    return out


big = "x" * 3000
script = [reply([("read_file", {"path": "task.json"})]), reply(content="thinking"),
          reply([("list_files", {}), ("read_file", {"path": "model.py"})]),
          reply([("write_unit", {"unit_cu": unit_cu + "// " + big, "unit_json": json.dumps(unit_json)})]),
          reply([("read_file", {"path": "task.json"})]), reply([("read_file", {"path": "task.json"})]),
          reply([("read_file", {"path": "task.json"})]), reply([("submit", {})])]
p, res, reqs, traj, out = session("replay", script, ["--context-chars", "12000", "--temperature", "0.3",
                                                      "--max-tokens", "512"])
rebuilt = replay(traj) if traj else []
same = len(rebuilt) == len(reqs) and all(a == q["body"] for a, q in zip(rebuilt, reqs))
check(res and res["stop"] == "submitted" and same and any(r["type"] == "trim" for r in traj)
      and any(r["type"] == "user" for r in traj),
      f"the trajectory replays all {len(reqs)} requests byte for byte (nudge and trims recorded)")

# ---- whole turns give way when trimming observations is not enough ----
p, res, reqs, traj, out = session("replay_turns", script, ["--context-chars", "7000"])
rebuilt = replay(traj) if traj else []
same = len(rebuilt) == len(reqs) and all(a == q["body"] for a, q in zip(rebuilt, reqs))
drops = [r for r in traj if r["type"] == "trim" and "drop" in r]
sizes = [len(json.dumps(q["request"]["messages"], separators=(",", ":"))) for q in reqs]
valid = all(m.get("role") != "tool" or i > 0 and (q["request"]["messages"][i - 1].get("role") in ("assistant", "tool"))
            for q in reqs for i, m in enumerate(q["request"]["messages"]))
print(f"     request sizes (messages, chars): {sizes}")
check(res and res["stop"] == "submitted" and same and drops and valid and max(sizes[1:]) < 3 * 7000,
      f"whole older turns dropped under --context-chars 7000 ({len(drops)} drop records), every request "
      f"rebuilt from the trajectory byte for byte, every tool message after its call")

# ---- a 200 whose body was cut off is tried again; "" arguments are {} ----
p, res, reqs, traj, out = session("cutoff", [{"status": 200, "raw": '{"choices": [{"index": 0, "mess'},
                                             reply([("submit", "")])])
check(p.returncode == 0 and res and res["stop"] == "submitted" and len(reqs) == 2,
      "a 200 with a cut-off body is retried; a tool call with arguments \"\" is a call without arguments")

# ---- no usage in the replies: tokens estimated, and the token budget holds ----
nousage = reply([("list_files", {})])
del nousage["body"]["usage"]
p, res, reqs, traj, out = session("nousage", [nousage] * 6, ["--session-tokens", "2000"])
check(res and res.get("tokens_estimated") is True and res["prompt_tokens"] > 0 and "token budget" in res["stop"]
      and len(reqs) < 6, f"replies without usage: tokens estimated ({res and res['prompt_tokens']} prompt), "
      f"the token budget stops the session after {len(reqs)} requests")

# ---- --trajectory never overwrites ----
tfile = os.path.join(work, "kept.jsonl")
open(tfile, "w").write("keep me\n")
p, res, reqs, traj, out = session("traj_exists", [reply([("submit", {})])], ["--trajectory", tfile])
check(p.returncode != 0 and open(tfile).read() == "keep me\n" and "never overwritten" in p.stderr,
      "--trajectory naming an existing file: refused, the file untouched")

# ---- an endpoint that fails ----
p, res, reqs, traj, out = session("down", [{"status": 500, "body": {"error": {"message": "down"}}}] * 3,
                                  ["--retries", "1"])
check(p.returncode == 1 and res and res["stop"].startswith("the endpoint failed") and "HTTP 500" in res["stop"]
      and "HTTP 500" in (res.get("error") or "") and "ended on an error: the endpoint failed" in p.stderr
      and not res["have_unit"] and len(reqs) == 2, "an endpoint that fails ends the session with the reason, exit 1")
check(res and traj and traj[-1]["type"] == "end", "the failed session's trajectory ends")
if not GPU:  # no GPU to judge on: said before any request, so no token is spent
    saved = FAKE
    FAKE = "/nonexistent/libcuda.so.1"
    p, res, reqs, traj, out = session("no_gpu", [reply([("submit", {})])])
    FAKE = saved
    check(p.returncode == 1 and len(reqs) == 0 and res and "judge cannot run here" in res["stop"]
          and "no GPU to judge on" in (res.get("error") or "") and "no GPU to judge on" in p.stderr,
          "no GPU: the session ends before any request, exit 1, the reason in result.json and on stderr")
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
check(summ and summ.get("skill_version") == SKILL_VERSION and "kfuse: agent: group" in p.stderr, "agent.json and progress")
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

# ---- credentials in the endpoint's URL: shown nowhere ----
cred = "pw" + secrets.token_hex(8)
p, res, reqs, traj, out = session("userinfo", [{"status": 500, "body": {"error": {"message": "down"}}}] * 2,
                                  ["--retries", "1"], userinfo=f"user:{cred}@")
check(p.returncode == 1 and "HTTP 500" in p.stderr and not key_leaks(cred, [p.stdout + p.stderr], out)
      and traj and traj[0]["endpoint"].startswith("http://127.0.0.1:"),
      "an endpoint URL with user:password@: the password in no message, trajectory or result")
p = subprocess.run([KFUSE, "llm-chat", "--endpoint", "http://user:" + cred + "@203.0.113.1:9/v1", "--model", "m",
                    "--timeout", "1", "--retries", "0", "--prompt", "hi"], capture_output=True, text=True, env=agent_env())
check(p.returncode != 0 and "unencrypted" in p.stderr and cred not in p.stdout + p.stderr,
      "plain http:// to another host: a warning, and no password shown")

# ---- the key in no output and no file ----
check(not key_leaks(key, outputs, work), "the API key appears in no output or file")

print(f"agent_check: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
if failures:
    print(f"agent_check: everything kept in {work}")
else:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
