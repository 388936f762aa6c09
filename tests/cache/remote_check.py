#!/usr/bin/env python3
"""tests/cache/remote_check.py KFUSE REMOTE_CLIENT — the kernel cache's HTTP
remote against real servers on loopback (docs/CACHE.md, "The remote").

Starts nginx (Debian's, with its WebDAV module) on 127.0.0.1 on a free port
with a generated config in a temporary directory, and stops it whatever
happens. Its locations: /cache/ (WebDAV PUT, create_full_put_path), /basic/
(auth_basic, an htpasswd written here), /bearer/ (a fixed bearer token),
/err500/ (always 500), /nodav/ (static files only: PUT is refused). Beside
it, small servers of our own: one answering 503 (Retry-After) and 500
before 200, one always 503, one announcing a body over the limit, one that
accepts connections and never answers; and a port where nothing listens.

Checks: push, then push again (HEAD finds them all); pull into an empty
store gives the same entries (ls --json); a missing key is a miss; corrupt
downloads (a flipped byte, a truncated file, another key's entry) are each
a warning naming the key and a miss, never a crash, and the local store
stays clean (verify) while good keys in the same run still arrive; server
errors are retried (the access log counts the requests) and then mark the
remote down: one warning, no further request; Retry-After is honoured, and
one longer than the timeout is not waited for; a slow server costs about
the timeout once; a refused connection costs no time; read-only never PUTs
(nothing in the access log or the root) while kf_cache_store writes through
otherwise; a server refusing PUT stops the puts after one; basic and bearer
auth work only with the right variables, and neither the password nor the
token appears in anything kfuse wrote (its stores, stdout, stderr).

Exits 77 (ctest SKIP_RETURN_CODE) only when there is no nginx, or one
without the WebDAV module; scripts/deps.sh installs Debian's, which has it.
An nginx that is there but does not start is a failure."""
import base64
import hashlib
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
failures = []
outputs = []  # every stdout and stderr kfuse and remote_client wrote


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
        if detail:
            print("     " + detail.replace("\n", "\n     "))
    return cond


def run(args, env=None, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    p.seconds = time.monotonic() - t0
    outputs.append(p.stdout)
    outputs.append(p.stderr)
    if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
        check(False, f"no sanitizer report from {os.path.basename(args[0])} {' '.join(args[1:3])}", p.stderr[-3000:])
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


# ---- nginx ------------------------------------------------------------------------

class Nginx:
    """nginx on 127.0.0.1:port, everything under base; stop() always."""

    def __init__(self, binary, base, user, password, token):
        self.binary, self.base = binary, base
        self.port = free_port()
        self.root = os.path.join(base, "root")
        self.access_log = os.path.join(base, "access.log")
        self.error_log = os.path.join(base, "error.log")
        self.proc = None
        for d in ("root/cache", "root/basic", "root/bearer", "root/nodav", "tmp"):
            os.makedirs(os.path.join(base, d), exist_ok=True)
        salt = secrets.token_bytes(8)
        ssha = base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()
        htpasswd = os.path.join(base, "htpasswd")
        with open(htpasswd, "w") as f:
            f.write(f"{user}:{{SSHA}}{ssha}\n")
        dav = "dav_methods PUT DELETE; create_full_put_path on; dav_access user:rw group:r all:r;"
        tmp = os.path.join(base, "tmp")
        conf = f"""
daemon off;
pid {base}/nginx.pid;
error_log {self.error_log} info;
worker_processes 1;
{"user root;" if os.geteuid() == 0 else ""}
events {{ worker_connections 128; }}
http {{
  access_log {self.access_log};
  default_type application/octet-stream;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  client_max_body_size 300m;
  server {{
    listen 127.0.0.1:{self.port};
    root {self.root};
    location /cache/ {{ {dav} }}
    location /basic/ {{ auth_basic "kfuse cache"; auth_basic_user_file {htpasswd}; {dav} }}
    location /bearer/ {{
      if ($http_authorization != "Bearer {token}") {{ return 401; }}
      {dav}
    }}
    location /err500/ {{ return 500; }}
    location /nodav/ {{ }}
  }}
}}
"""
        self.conf = os.path.join(base, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(conf)

    def start(self):
        log = open(os.path.join(self.base, "nginx.out"), "w")
        # -e: the error log before the config is read (Debian's default
        # path is not writable for everyone); -p: relative paths
        self.proc = subprocess.Popen([self.binary, "-e", self.error_log, "-p", self.base + "/", "-c", self.conf],
                                     stdout=log, stderr=subprocess.STDOUT)
        if not wait_port(self.port, self.proc):
            self.stop()
            text = ""
            for p in (os.path.join(self.base, "nginx.out"), self.error_log):
                if os.path.exists(p):
                    text += open(p).read()
            return text or "nginx did not start"
        return None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: finishes the requests in flight
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def url(self, loc):
        return f"http://127.0.0.1:{self.port}/{loc}"

    def file(self, loc, key):
        return os.path.join(self.root, loc, key[:2], key)

    def log_lines(self, method, loc):
        if not os.path.exists(self.access_log):
            return []
        return [l for l in open(self.access_log) if f'"{method} /{loc}/' in l]


def find_nginx():
    for c in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if c and os.access(c, os.X_OK):
            return c
    return None


# ---- servers of our own -----------------------------------------------------------

class Scripted(http.server.ThreadingHTTPServer):
    """Answers GET /PREFIX/ab/KEY by a script per prefix: a list of
    (status, headers, body) consumed one per request, the last repeated;
    body "FILE" is the nginx root's copy of the key."""
    daemon_threads = True

    def __init__(self, nginx_root):
        super().__init__(("127.0.0.1", 0), Handler)
        self.scripts, self.counts, self.nginx_root = {}, {}, nginx_root
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        prefix, key = parts[0], parts[-1]
        with self.server.lock:
            n = self.server.counts.get(prefix, 0)
            self.server.counts[prefix] = n + 1
            script = self.server.scripts.get(prefix, [(404, {}, b"")])
            status, headers, body = script[min(n, len(script) - 1)]
        if body == "FILE":
            body = open(os.path.join(self.server.nginx_root, "cache", key[:2], key), "rb").read()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status != 204:
            self.wfile.write(body)


class Silent:
    """Accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns, self.stopping = [], False
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stopping:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                pass

    def stop(self):
        self.stopping = True
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()


# ---- the checks -------------------------------------------------------------------

def ls(kfuse, store):
    p = run([kfuse, "cache", "ls", "--json", "--cache", store])
    if p.returncode != 0:
        return None
    return {e["key"]: (e["payload_hash"], e["created_ms"], e["bytes"], e["reward"]) for e in json.loads(p.stdout)}


def warnings(text):
    return [l for l in text.splitlines() if "warning:" in l]


def main():
    kfuse, client = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    binary = find_nginx()
    if not binary:
        print("SKIP: nginx not found (Debian: apt-get install nginx; scripts/deps.sh installs it)")
        return SKIP
    user, password = "kfuse-ci", "pw-" + secrets.token_hex(12)
    token = "tok-" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFUSE_CACHE_REMOTE_")}
    with tempfile.TemporaryDirectory(prefix="kfuse_remote_check_") as tmp:
        server_dir, mine = os.path.join(tmp, "server"), os.path.join(tmp, "kfuse")
        os.makedirs(server_dir)
        os.makedirs(mine)
        ng = Nginx(binary, server_dir, user, password, token)
        why = ng.start()
        if why and ("dav_methods" in why or "create_full_put_path" in why):
            print(f"SKIP: {binary} lacks the WebDAV module (Debian's nginx has it):\n{why}")
            return SKIP
        if why:  # nginx is there and should start: a failure, not a skip
            print(f"FAIL: nginx ({binary}) did not start:\n{why}")
            return 1
        servers = []
        try:
            checks(kfuse, client, ng, mine, env, user, password, token, servers)
        finally:
            for s in servers:
                s.stop()
            ng.stop()
            check(ng.proc.poll() is not None, "nginx stopped")
        # secrets: in nothing kfuse wrote
        leaked = []
        for dirpath, _, files in os.walk(mine):
            for fn in files:
                data = open(os.path.join(dirpath, fn), "rb").read()
                if password.encode() in data or token.encode() in data:
                    leaked.append(os.path.join(dirpath, fn))
        if any(password in o or token in o for o in outputs):
            leaked.append("stdout/stderr")
        check(not leaked, "neither the password nor the token in any store, stdout or stderr", str(leaked))
    if failures:
        print(f"remote_check: FAIL ({len(failures)} failed)")
        return 1
    print("PASS")
    return 0


def checks(kfuse, client, ng, mine, env, user, password, token, servers):
    src, n = os.path.join(mine, "src"), 8
    p = run([client, "make", src, str(n), "4242"])
    keys = p.stdout.split()
    if not check(p.returncode == 0 and len(keys) == n, f"{n} synthetic entries made", p.stderr):
        return
    want = ls(kfuse, src)
    cache = ng.url("cache")
    if shutil.which("readelf"):
        p = subprocess.run(["readelf", "-d", kfuse], capture_output=True, text=True)
        check(p.returncode == 0 and "libcurl" not in p.stdout, "kfuse does not link libcurl (it loads it)")

    # ---- push, pull, identical entries
    p = run([kfuse, "cache", "push", "--remote", cache, "--cache", src], env=env)
    check(p.returncode == 0 and f"{n} pushed, 0 already there, 0 failed" in p.stdout, "push: every entry PUT",
          p.stdout + p.stderr)
    check(all(os.path.isfile(ng.file("cache", k)) for k in keys), "stored at URL/ab/KEY in the server's root")
    check(len(ng.log_lines("PUT", "cache")) == n, f"{n} PUTs in the access log")
    p = run([kfuse, "cache", "push", "--remote", cache + "/", "--cache", src], env=env)
    check(p.returncode == 0 and f"0 pushed, {n} already there" in p.stdout and len(ng.log_lines("PUT", "cache")) == n,
          "push again: HEAD finds them all, nothing PUT", p.stdout + p.stderr)
    dst = os.path.join(mine, "dst")
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", dst, *keys], env=env)
    check(p.returncode == 0 and f"{n} pulled, 0 already local, 0 missed" in p.stdout and not p.stderr,
          "pull into an empty store", p.stdout + p.stderr)
    check(ls(kfuse, dst) == want, "pulled entries identical (key, payload hash, created_ms, bytes, reward)")
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", dst, keys[0]], env=env)
    check(p.returncode == 0 and "already local" in p.stdout and len(ng.log_lines("GET", "cache")) == n,
          "pull of a key already local: no request")

    # ---- a miss
    missing = "0" * 63 + "1"
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", dst, missing, keys[1]], env=env)
    check(p.returncode == 1 and f"{missing} missed" in p.stdout and not warnings(p.stderr),
          "a missing key: a miss (exit 1), no warning", p.stdout + p.stderr)
    p = run([client, "get", cache, missing], env=env)
    check(p.returncode == 0 and f"{missing} miss" in p.stdout and '"down": false' in p.stdout,
          "remote get of a missing key: a miss, the remote still up", p.stdout + p.stderr)

    # ---- corrupt downloads
    bad = keys[:3]
    path = ng.file("cache", bad[0])
    b = bytearray(open(path, "rb").read())
    b[len(b) // 2] ^= 0x10
    open(path, "wb").write(b)
    path = ng.file("cache", bad[1])
    b = open(path, "rb").read()
    open(path, "wb").write(b[: len(b) // 2])
    shutil.copyfile(ng.file("cache", keys[4]), ng.file("cache", bad[2]))  # another key's entry
    fresh = os.path.join(mine, "fresh")
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", fresh, *bad, keys[3]], env=env)
    w = warnings(p.stderr)
    check(p.returncode == 1, "corrupt downloads: exit 1, not a crash", f"exit {p.returncode}\n{p.stderr}")
    check(len(w) == 3 and all(any(k in l for l in w) for k in bad) and all("treated as a miss" in l for l in w),
          "each corrupt download a warning naming its key", p.stderr)
    check(f"{keys[3]} pulled" in p.stdout and "3 missed (3 corrupt)" in p.stdout,
          "the good key in the same run still pulled (the remote not marked down)", p.stdout)
    got = ls(kfuse, fresh)
    check(got == {keys[3]: want[keys[3]]}, "nothing corrupt reached the local store", str(got))
    p = run([kfuse, "cache", "verify", "--cache", fresh])
    check(p.returncode == 0 and " 0 corrupt" in p.stdout, "verify: the local store is clean", p.stdout + p.stderr)
    # repair the server's copies for what follows: HEAD cannot tell a
    # corrupt copy from a good one, so remove them and push again
    for k in bad:
        os.remove(ng.file("cache", k))
    p = run([kfuse, "cache", "push", "--remote", cache, "--cache", src], env=env)
    check(p.returncode == 0 and "3 pushed" in p.stdout, "push restores the removed entries", p.stdout + p.stderr)

    # ---- server errors: nginx's 500
    err = ng.url("err500")
    p = run([kfuse, "cache", "pull", "--remote", err, "--cache", os.path.join(mine, "e1"), *keys[:3]], env=env)
    w = warnings(p.stderr)
    check(p.returncode == 1 and len(w) == 1 and "HTTP 500" in w[0] and "not used again" in w[0],
          "HTTP 500: one warning, the remote marked down", p.stderr)
    check(len(ng.log_lines("GET", "err500")) == 3, "500 retried: 3 requests (1 + 2 retries), then none",
          f"{len(ng.log_lines('GET', 'err500'))} requests")
    check(p.seconds < 5, f"...in {p.seconds:.1f} s")

    # ---- retries that succeed, Retry-After
    sc = Scripted(ng.root)
    threading.Thread(target=sc.serve_forever, daemon=True).start()
    servers.append(type("S", (), {"stop": lambda self: (sc.shutdown(), sc.server_close())})())
    base = f"http://127.0.0.1:{sc.server_address[1]}"
    sc.scripts["flaky"] = [(503, {"Retry-After": "1"}, b"busy"), (500, {}, b"oops"), (200, {}, "FILE")]
    p = run([client, "get", base + "/flaky", keys[5]], env=env)
    check(p.returncode == 0 and f"{keys[5]} hit" in p.stdout and sc.counts.get("flaky") == 3,
          "503 (Retry-After: 1), 500, then 200: a hit on the third request", p.stdout + p.stderr)
    check(p.seconds >= 1.0 and '"retries": 2' in p.stdout and not warnings(p.stderr),
          f"Retry-After honoured ({p.seconds:.1f} s), no warning", p.stdout + p.stderr)
    sc.scripts["busy"] = [(503, {}, b"busy")]
    p = run([client, "get", base + "/busy", *keys[:3]], env=env)
    check(sc.counts.get("busy") == 3 and p.stdout.count(" miss ") == 3 and '"down": true' in p.stdout
          and len(warnings(p.stderr)) == 1 and "HTTP 503" in p.stderr,
          "always 503: 3 requests for the first key, none after; one warning", p.stdout + p.stderr)
    sc.scripts["later"] = [(429, {"Retry-After": "30"}, b"later")]
    p = run([client, "get", base + "/later", "--timeout", "3", keys[0]], env=env)
    check(sc.counts.get("later") == 1 and p.seconds < 2.5 and "no time left" in p.stderr,
          f"Retry-After beyond the timeout: not waited for ({p.seconds:.1f} s)", p.stdout + p.stderr)
    sc.scripts["huge"] = [(200, {"Content-Length": str(300 << 20)}, b"")]
    p = run([client, "get", base + "/huge", keys[0], keys[1]], env=env)
    check(p.returncode == 0 and "exceeds 268435456 bytes" in p.stderr and '"down": false' in p.stdout
          and sc.counts.get("huge") == 2,
          "a body over 256 MiB: refused before it is read, a miss", p.stdout + p.stderr)

    # ---- a slow server, a refused connection
    silent = Silent()
    servers.append(silent)
    slow = f"http://127.0.0.1:{silent.port}/cache"
    p = run([kfuse, "cache", "pull", "--remote", slow, "--remote-timeout", "2", "--cache",
             os.path.join(mine, "slow"), *keys[:4]], env=env)
    w = warnings(p.stderr)
    check(p.returncode == 1 and len(w) == 1 and "not used again" in w[0] and "4 missed" in p.stdout,
          "a server that never answers: one warning, every key a miss", p.stdout + p.stderr)
    check(1.8 <= p.seconds <= 4.5, f"...costing about the timeout once (2 s): {p.seconds:.1f} s")
    port = free_port()
    p = run([kfuse, "cache", "pull", "--remote", f"http://127.0.0.1:{port}/cache", "--cache",
             os.path.join(mine, "refused"), *keys[:4]], env=env)
    w = warnings(p.stderr)
    check(p.returncode == 1 and len(w) == 1 and "connect" in w[0].lower() and p.seconds < 3,
          f"a refused connection: one warning, {p.seconds:.1f} s", p.stderr)
    p = run([kfuse, "cache", "push", "--remote", f"http://127.0.0.1:{port}/cache", "--cache", src], env=env)
    check(p.returncode == 1 and f"{n} failed" in p.stdout and len(warnings(p.stderr)) == 1,
          "push to a dead remote: every entry failed, one warning", p.stdout + p.stderr)

    # ---- read-only, write-through
    puts = len(ng.log_lines("PUT", "cache"))
    ro = os.path.join(mine, "ro")
    p = run([client, "store", cache, ro, "777", "--read-only"], env=env)
    key = p.stdout.split()[0] if p.stdout else "?"
    check(p.returncode == 0 and '"requests": 0' in p.stdout and '"skipped": 1' in p.stdout,
          "read-only kf_cache_store: nothing sent", p.stdout + p.stderr)
    check(len(ng.log_lines("PUT", "cache")) == puts and not os.path.exists(ng.file("cache", key)),
          "read-only: no PUT in the access log, nothing in the root")
    check(key in (ls(kfuse, ro) or {}), "read-only: stored locally")
    p = run([kfuse, "cache", "push", "--remote", cache, "--remote-read-only", "--cache", src], env=env)
    check(p.returncode == 2 and "kfuse: error:" in p.stderr, "push --remote-read-only: a usage error", p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", cache, "--remote-read-only", "--cache", ro, keys[6]], env=env)
    check(p.returncode == 0 and "1 pulled" in p.stdout and len(ng.log_lines("PUT", "cache")) == puts,
          "pull --remote-read-only: GET only", p.stdout + p.stderr)
    wt = os.path.join(mine, "wt")
    p = run([client, "store", cache, wt, "778"], env=env)
    key = p.stdout.split()[0] if p.stdout else "?"
    check(p.returncode == 0 and '"puts": 1' in p.stdout and os.path.isfile(ng.file("cache", key))
          and key in (ls(kfuse, wt) or {}), "kf_cache_store: put locally and to the remote", p.stdout + p.stderr)
    again = os.path.join(mine, "again")
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", again, key], env=env)
    check(p.returncode == 0 and ls(kfuse, again) == {key: ls(kfuse, wt)[key]},
          "...and another store pulls the same entry", p.stdout + p.stderr)

    # ---- a server that refuses PUT
    p = run([kfuse, "cache", "push", "--remote", ng.url("nodav"), "--cache", src], env=env)
    w = warnings(p.stderr)
    check(p.returncode == 1 and len(w) == 1 and "HTTP 405" in w[0] and "create_full_put_path" in w[0]
          and len(ng.log_lines("PUT", "nodav")) == 1 and f"{n} failed" in p.stdout,
          "PUT refused (405): one PUT, one warning, the rest not sent", p.stdout + p.stderr)

    # ---- auth
    basic = ng.url("basic")
    p = run([kfuse, "cache", "push", "--remote", basic, "--cache", src], env=env)
    check(p.returncode == 1 and "HTTP 401" in p.stderr and "KFUSE_CACHE_REMOTE_USER" in p.stderr,
          "basic auth: without credentials, HTTP 401 named", p.stderr)
    bad_env = dict(env, KFUSE_CACHE_REMOTE_USER=user, KFUSE_CACHE_REMOTE_PASSWORD=password + "x")
    p = run([kfuse, "cache", "push", "--remote", basic, "--cache", src], env=bad_env)
    check(p.returncode == 1 and "HTTP 401" in p.stderr, "basic auth: a wrong password refused", p.stderr)
    good = dict(env, KFUSE_CACHE_REMOTE_USER=user, KFUSE_CACHE_REMOTE_PASSWORD=password)
    p = run([kfuse, "cache", "push", "--remote", basic, "--cache", src], env=good)
    check(p.returncode == 0 and f"{n} pushed" in p.stdout, "basic auth: push", p.stdout + p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", basic, "--cache", os.path.join(mine, "basic"), *keys], env=good)
    check(p.returncode == 0 and ls(kfuse, os.path.join(mine, "basic")) == want, "basic auth: pull, same entries",
          p.stdout + p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", basic, "--cache", os.path.join(mine, "basic2"), keys[0]], env=env)
    check(p.returncode == 1 and "HTTP 401" in p.stderr, "basic auth: a pull without credentials refused", p.stderr)
    bearer = ng.url("bearer")
    p = run([kfuse, "cache", "push", "--remote", bearer, "--cache", src], env=dict(env, KFUSE_CACHE_REMOTE_BEARER="nope"))
    check(p.returncode == 1 and "HTTP 401" in p.stderr, "bearer: a wrong token refused", p.stderr)
    tok = dict(env, KFUSE_CACHE_REMOTE_BEARER=token)
    p = run([kfuse, "cache", "push", "--remote", bearer, "--cache", src], env=tok)
    check(p.returncode == 0 and f"{n} pushed" in p.stdout, "bearer: push", p.stdout + p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", bearer, "--cache", os.path.join(mine, "bearer"), *keys], env=tok)
    check(p.returncode == 0 and ls(kfuse, os.path.join(mine, "bearer")) == want, "bearer: pull, same entries",
          p.stdout + p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", f"http://{user}:{password}@127.0.0.1:{ng.port}/basic",
             "--cache", os.path.join(mine, "inurl"), keys[0]], env=env)
    check(p.returncode == 2 and "holds credentials" in p.stderr, "credentials in the URL refused (exit 2)", p.stderr)
    p = run([kfuse, "cache", "pull", "--remote", cache, "--cache", dst, "not-a-key"], env=env)
    check(p.returncode == 2 and "kfuse: error:" in p.stderr, "pull of something that is not a key: exit 2",
          p.stderr)


if __name__ == "__main__":
    sys.exit(main())
