"""Shared by the agent tests (llm_check.py, agent_check.py, serve_check.py):
the scripted OpenAI-compatible server (llm_server.py) started on loopback
for one session and stopped after it, the search for the API key in every
output and file a run left, and the skill document's version."""
import contextlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def scripted_server(script, d):
    """Serve script (llm_server.py's steps) from directory d; yields the
    port. d/requests.jsonl logs what was received (read_requests)."""
    sp, log, portf = (os.path.join(d, x) for x in ("script.json", "requests.jsonl", "port"))
    with open(sp, "w") as f:
        json.dump(script, f)
    srv = subprocess.Popen([sys.executable, os.path.join(HERE, "llm_server.py"), sp, log, portf])
    try:
        for _ in range(400):
            if os.path.exists(portf) or srv.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(portf):
            raise RuntimeError("the scripted server did not start")
        yield open(portf).read().strip()
    finally:
        srv.kill()
        srv.wait()


def read_requests(d):
    log = os.path.join(d, "requests.jsonl")
    return [json.loads(l) for l in open(log)] if os.path.exists(log) else []


def key_leaks(key, outputs, root):
    """The outputs and the files under root that hold key."""
    leaked = [o[:80] for o in outputs if key in o]
    for top, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(top, f), "rb") as fh:
                if key.encode() in fh.read():
                    leaked.append(os.path.join(top, f))
    return leaked


def skill_version():
    """The version agent/SKILL.md declares on its first line (the system
    prompt kfuse embeds at build time)."""
    with open(os.path.join(HERE, "..", "..", "agent", "SKILL.md")) as f:
        first = f.readline()
    return first.split(":", 1)[1].strip() if first.startswith("skill-version:") else None
