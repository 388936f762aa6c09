"""kfuse.rollout — a client of `kfuse serve`, the kernel environment as an
HTTP rollout service for RL trainers (docs/AGENT.md, "The rollout service").

    from kfuse.rollout import Client
    c = Client("http://127.0.0.1:8470", token=os.environ.get("KFUSE_SERVE_TOKEN"))
    task = c.tasks()[0]["id"]
    with c.session(task, max_judge=4) as s:
        messages = [{"role": "system", "content": s.system},
                    {"role": "user", "content": s.prompt}]
        # ... the policy answers with tool calls, each run here:
        out = s.call("judge", {})          # {"observation", "verdict", "reward", "done", ...}
    print(s.result["best_reward"] if s.result["have_unit"] else "no unit verified")

Standard library only (urllib, json). Every failure the server reports
raises RolloutError with its HTTP status and the server's message; a
server that cannot be reached raises RolloutError with status None.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "Session", "RolloutError"]


class RolloutError(RuntimeError):
    """A request the rollout service refused or could not answer.

    status: the HTTP status (None when the service was not reached);
    error: the server's message ({"error": ...}) or the transport's."""

    def __init__(self, status, error, method="", path=""):
        self.status = status
        self.error = error
        where = f"{method} {path}: " if method else ""
        super().__init__(f"{where}{'HTTP ' + str(status) + ': ' if status else ''}{error}")


class Client:
    """The service at url ("http://HOST:PORT", as `kfuse serve` prints it).
    token: the bearer token the service was started with (--token-env), or
    None. timeout: seconds for one request; a judge call waits for a GPU
    and then runs, so keep it above the service's judge timeout."""

    def __init__(self, url, token=None, timeout=900.0):
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout

    def __repr__(self):  # never the token
        return f"kfuse.rollout.Client({self.url!r})"

    def _request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self._token:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                msg = json.loads(raw).get("error", raw.decode(errors="replace"))
            except (ValueError, AttributeError):
                msg = raw.decode(errors="replace") or e.reason
            raise RolloutError(e.code, msg, method, path) from None
        except (urllib.error.URLError, OSError) as e:
            raise RolloutError(None, str(getattr(e, "reason", e)), method, path) from None

    def health(self):
        """The service's state: sessions open, the most it takes, GPUs."""
        return self._request("GET", "/v1/health")

    def tasks(self):
        """The tasks it serves: dicts with id, key, kind, ops, ..."""
        return self._request("GET", "/v1/tasks")["tasks"]

    def sessions(self):
        """The sessions open now."""
        return self._request("GET", "/v1/sessions")["sessions"]

    def session(self, task, **budgets):
        """Open a session on task (an id from tasks()). budgets: max_judge,
        max_calls (at most the service's), model (a name recorded in the
        trajectory)."""
        body = {"task": task}
        body.update(budgets)
        return Session(self, self._request("POST", "/v1/sessions", body))


class Session:
    """One session: system (the skill document), prompt (the task's
    summary), tools (OpenAI function tools), budget; call() runs one tool
    call; close() ends it and sets result. A context manager: leaving the
    block closes it."""

    def __init__(self, client, opened):
        self._client = client
        self.id = opened["session"]
        self.task = opened["task"]
        self.task_key = opened.get("task_key", "")
        self.system = opened["system"]
        self.prompt = opened["prompt"]
        self.tools = opened["tools"]
        self.budget = opened.get("budget", {})
        self.dir = opened.get("dir")
        self.result = None
        self.closed = False

    def __repr__(self):
        return f"kfuse.rollout.Session({self.id!r}, task={self.task!r})"

    def _path(self, tail=""):
        return "/v1/sessions/" + urllib.parse.quote(self.id) + tail

    def call(self, name, arguments=None, id=None, turn=None, message=None):
        """Run tool name with arguments (a dict, or the JSON text the model
        wrote, which the environment parses: broken text gets an error
        observation). id, turn and message (the assistant message that made
        the call; send it with a turn's first call) go to the trajectory.
        Returns {"observation", "verdict", "reward", "done", "best_reward",
        "tool_calls", "judge_calls"}; reward is the judge's (-1, 1, 2, 3)
        for judge calls, else None."""
        body = {"name": name}
        if arguments is not None:
            body["arguments"] = arguments
        if id is not None:
            body["id"] = id
        if turn is not None:
            body["turn"] = turn
        if message is not None:
            body["message"] = message
        return self._client._request("POST", self._path("/tools"), body)

    def state(self):
        """Where it stands: counts, best reward, budget (or busy)."""
        return self._client._request("GET", self._path())

    def close(self):
        """End it; the result (result.json's fields) is returned and kept in
        .result, the kept unit's directory (relative to the service's
        OUT_DIR) in .unit. Closing twice is fine."""
        if self.closed:
            return self.result
        r = self._client._request("DELETE", self._path())
        self.closed = True
        self.result = r["result"]
        self.unit = r.get("unit")
        return self.result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.close()
        except RolloutError:
            if exc[0] is None:
                raise
        return False
