#!/usr/bin/env python3
"""The LLM client (agent/llm.c) against a scripted OpenAI-compatible server
on loopback (tests/agent/llm_server.py), through `kfuse llm-chat`:

  - the request: path, model, messages, tools, temperature, max tokens,
    JSON content type, the bearer key from the variable --api-key-env names;
  - a text reply, tool calls (arguments parsed; broken JSON and a non-object
    reported on the call, not fatal);
  - retries: 429 with Retry-After (waited), 500/503 with backoff, a timeout,
    a server failing every attempt (exit 1, the reason), a 400 (no retry,
    the server's message), a reply that is not a chat completion;
  - no key variable set: no Authorization header;
  - the key appears in no output and no file the run writes.

    llm_check.py KFUSE"""
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import key_leaks, read_requests, scripted_server  # noqa: E402

kfuse = sys.argv[1]
work = tempfile.mkdtemp(prefix="kfuse-llm-")
key = "sk-test-" + secrets.token_hex(16)
failures = []
outputs = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def completion(content=None, calls=None, usage=(12, 7)):
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": f"call_{i}", "type": "function",
                              "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)]
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}


def run(name, script, args, env_key=True, timeout=60):
    d = os.path.join(work, name)
    os.makedirs(d)
    with scripted_server(script, d) as port:
        env = dict(os.environ)
        env.pop("OPENAI_API_KEY", None)
        if env_key:
            env["KFUSE_TEST_LLM_KEY"] = key
        cmd = [kfuse, "llm-chat", "--endpoint", f"http://127.0.0.1:{port}/v1/", "--model", "kernel-model",
               "--api-key-env", "KFUSE_TEST_LLM_KEY"] + args
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        dt = time.time() - t0
    outputs.append(p.stdout + p.stderr)
    open(os.path.join(d, "stdout"), "w").write(p.stdout)
    open(os.path.join(d, "stderr"), "w").write(p.stderr)
    reqs = read_requests(d)
    out = None
    if p.returncode == 0:
        try:
            out = json.loads(p.stdout)
        except ValueError:
            pass
    return p, out, reqs, dt


msgs = os.path.join(work, "messages.json")
json.dump([{"role": "system", "content": "You write CUDA kernels."},
           {"role": "user", "content": "Write unit.cu for the task."}], open(msgs, "w"))
tools = os.path.join(work, "tools.json")
json.dump([{"type": "function", "function": {"name": "read_file", "description": "read a task file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}],
          open(tools, "w"))
base = ["--messages", msgs, "--tools", tools, "--temperature", "0.2", "--max-tokens", "64", "--backoff", "0.05"]

# 1. a text reply and the request kfuse sends
p, out, reqs, _ = run("text", [{"status": 200, "body": completion("a kernel")}], base)
check(p.returncode == 0 and out and out["content"] == "a kernel", "text reply")
check(out and out["prompt_tokens"] == 12 and out["completion_tokens"] == 7 and out["attempts"] == 1,
      "token counts and one attempt")
r = reqs[0]["request"] if reqs else {}
check(len(reqs) == 1 and reqs[0]["path"] == "/v1/chat/completions", "POST to <endpoint>/chat/completions")
check(r.get("model") == "kernel-model" and r.get("messages") == json.load(open(msgs)), "model and messages sent")
check(r.get("tools") == json.load(open(tools)) and r.get("temperature") == 0.2 and r.get("max_tokens") == 64,
      "tools, temperature and max_tokens sent")
check(reqs and reqs[0]["content_type"] == "application/json", "JSON content type")
want = hashlib.sha256(("Bearer " + key).encode()).hexdigest()
check(reqs and reqs[0]["auth"] == {"scheme": "Bearer", "sha256": want}, "bearer key from --api-key-env")

# 2. tool calls: parsed arguments; broken JSON and a non-object reported on the call
p, out, reqs, _ = run("tools", [{"status": 200, "body": completion(None, [
    ("read_file", '{"path": "task.json"}'), ("write_file", '{"path": "unit.cu", "text": '), ("judge", "[1, 2]")])}],
    base)
calls = out["tool_calls"] if out else []
check(p.returncode == 0 and len(calls) == 3, "three tool calls, exit 0")
check(calls and calls[0]["name"] == "read_file" and calls[0].get("args") == {"path": "task.json"}
      and "args_error" not in calls[0], "valid arguments parsed")
check(len(calls) > 1 and "args" not in calls[1] and "not valid JSON" in calls[1].get("args_error", "")
      and calls[1]["arguments"] == '{"path": "unit.cu", "text": ', "broken JSON arguments reported on the call")
check(len(calls) > 2 and "not a JSON object" in calls[2].get("args_error", ""), "non-object arguments reported")
check(out and out["content"] is None and out.get("finish_reason") == "tool_calls", "no text, finish_reason")

# 3. 429 with Retry-After: 1 s waited, then the reply
p, out, reqs, dt = run("retry_after", [{"status": 429, "headers": {"Retry-After": "1"},
                                        "body": {"error": {"message": "rate limited"}}},
                                       {"status": 200, "body": completion("after 429")}], base)
check(p.returncode == 0 and out and out["content"] == "after 429" and out["attempts"] == 2 and len(reqs) == 2,
      "429 retried")
check(dt >= 1.0 and "retrying in 1.0 s" in p.stderr, f"Retry-After honoured ({dt:.2f} s)")

# 4. 500 and 503 with backoff
p, out, reqs, _ = run("backoff", [{"status": 500, "raw": "oops"}, {"status": 503, "raw": ""},
                                  {"status": 200, "body": completion("third")}], base)
check(p.returncode == 0 and out and out["content"] == "third" and out["attempts"] == 3, "500 and 503 retried")

# 5. a timeout, then the reply
p, out, reqs, _ = run("timeout", [{"status": 200, "delay": 3, "body": completion("late")},
                                  {"status": 200, "body": completion("in time")}], base + ["--timeout", "0.5"])
check(p.returncode == 0 and out and out["content"] == "in time" and out["attempts"] == 2, "timeout retried")

# 6. a server failing every attempt: exit 1 with the reason
p, out, reqs, _ = run("down", [{"status": 502, "body": {"error": {"message": "bad gateway"}}}] * 5,
                      base + ["--retries", "2"])
check(p.returncode == 1 and len(reqs) == 3, "three attempts with --retries 2, exit 1")
check("HTTP 502: bad gateway (no attempt left)" in p.stderr, "the failure says why")

# 7. a 400: no retry, the server's message
p, out, reqs, _ = run("bad_request", [{"status": 400, "body": {"error": {"message": "unknown model"}}},
                                      {"status": 200, "body": completion("never")}], base)
check(p.returncode == 1 and len(reqs) == 1 and "HTTP 400: unknown model" in p.stderr, "400 not retried")

# 8. replies that are not chat completions: a body that is not JSON or has
# no "choices" array (what a proxy cutting a reply short leaves) is tried
# again like a transient failure, then reported; a whole one without a
# usable choice is an error at once
for nm, step, why, tries in (("not_json", {"status": 200, "raw": "<html>"}, "not a whole chat completion", 5),
                             ("no_choices", {"status": 200, "body": {"object": "x"}}, "not a whole chat completion",
                              5),
                             ("empty_choices", {"status": 200, "body": {"choices": []}},
                              "not a chat completion (\"choices\" is empty", 1)):
    p, out, reqs, _ = run(nm, [step] * tries, base)
    check(p.returncode == 1 and why in p.stderr and len(reqs) == tries,
          f"malformed reply ({nm}): {len(reqs)} request(s), then '{why}'")

# 9. no key variable: no Authorization header
p, out, reqs, _ = run("no_key", [{"status": 200, "body": completion("local")}], base, env_key=False)
check(p.returncode == 0 and reqs and reqs[0]["auth"] is None, "no key, no Authorization header")

# 10. the key in no output and no file
check(not key_leaks(key, outputs, work), "the API key appears in no output or file")

print(f"llm_check: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
if failures:
    print(f"llm_check: requests, outputs and scripts kept in {work}")
else:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
