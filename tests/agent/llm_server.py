#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for the LLM client's tests (loopback only).

    llm_server.py SCRIPT.json LOG.jsonl PORT_FILE

SCRIPT.json is a list of steps, one per request received, in order:
  {"status": 200, "body": {...} | "raw": "text", "headers": {...}, "delay": seconds}
A request after the last step gets HTTP 500 with body {"error": {"message":
"script exhausted"}}. Every request is logged as one JSON line: method,
path, the request body parsed (or "raw") and as received ("body"), and "auth": the Authorization
header's scheme and a SHA-256 of the whole header value, never the value
itself. The server binds 127.0.0.1 on a free port, writes the port to
PORT_FILE and serves until killed."""
import hashlib
import http.server
import json
import socketserver
import sys
import threading
import time

script = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
lock = threading.Lock()
state = {"n": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n).decode("utf-8", "replace")
        try:
            req = json.loads(raw)
        except ValueError:
            req = {"raw": raw}
        auth = self.headers.get("Authorization")
        with lock:
            i = state["n"]
            state["n"] += 1
            with open(log_path, "a") as f:
                f.write(json.dumps({
                    "method": "POST", "path": self.path, "request": req, "body": raw,
                    "content_type": self.headers.get("Content-Type"),
                    "auth": None if auth is None else {
                        "scheme": auth.split(" ", 1)[0],
                        "sha256": hashlib.sha256(auth.encode()).hexdigest()}}) + "\n")
        step = script[i] if i < len(script) else {"status": 500, "body": {"error": {"message": "script exhausted"}}}
        time.sleep(step.get("delay", 0))
        data = step["raw"].encode() if "raw" in step else json.dumps(step.get("body", {})).encode()
        try:
            self.send_response(step.get("status", 200))
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in step.get("headers", {}).items():
                self.send_header(k, str(v))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout step)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(sys.argv[3] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.replace(sys.argv[3] + ".tmp", sys.argv[3])
srv.serve_forever()
