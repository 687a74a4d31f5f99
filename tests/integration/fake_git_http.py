#!/usr/bin/env python3
"""A fake GitLab git server on 127.0.0.1 for the CI-template tests: git's smart HTTP protocol
(git http-backend, as CGI) over the bare repositories under --root, behind HTTP Basic auth.

--read TOKEN may fetch (git-upload-pack); --write TOKEN may fetch and push (git-receive-pack);
any user name is accepted, as GitLab does with access tokens. Everything else gets 401 (no
credentials) or 403 (a token without the right). Every request is one JSON line in --log:
method, path, service, the user name, "auth" (none | read | write | wrong), the status sent,
and the push options a push carried (from the repository's hooks, --log + ".push"). The tokens
themselves are never logged.

Bounded like fake_forge.py: a port the OS chooses (written to --port-file), stops after
--timeout seconds or when the process --parent names has ended.
"""
import argparse
import base64
import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


def backend():
    out = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True)
    return os.path.join(out.stdout.strip(), "git-http-backend")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive bookkeeping

    def log_message(self, fmt, *a):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self, method):
        a = self.server.args
        url = urlsplit(self.path)
        service = "git-receive-pack" if ("git-receive-pack" in url.path or
                                         "service=git-receive-pack" in url.query) \
            else "git-upload-pack"
        user, auth = "", "none"
        h = self.headers.get("Authorization", "")
        if h.lower().startswith("basic "):
            try:
                user, _, token = base64.b64decode(h[6:]).decode().partition(":")
            except ValueError:
                token = ""
            auth = "write" if token == a.write else "read" if token == a.read else "wrong"
        record = {"method": method, "path": url.path, "service": service, "user": user,
                  "auth": auth}
        data = self.body()
        allowed = auth == "write" or (auth == "read" and service == "git-upload-pack")
        if not allowed:
            status = 401 if auth in ("none", "wrong") else 403
            self.send_response(status)
            if status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="fake GitLab"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.record(record, status)
            return
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "GIT_PROJECT_ROOT": a.root, "GIT_HTTP_EXPORT_ALL": "1",
               "REQUEST_METHOD": method, "PATH_INFO": url.path, "QUERY_STRING": url.query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(data)), "REMOTE_USER": user or "ci",
               "REMOTE_ADDR": "127.0.0.1", "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": a.root, "FAKE_GIT_PUSH_LOG": a.log + ".push"}
        enc = self.headers.get("Content-Encoding")
        if enc:
            env["HTTP_CONTENT_ENCODING"] = enc
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        p = subprocess.run([backend()], input=data, env=env, capture_output=True)
        head, _, out = p.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = p.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            k, _, v = line.partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            elif k:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        self.record(record, status)

    def record(self, record, status):
        record["status"] = status
        with self.server.lock:
            with open(self.server.args.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True, help="folder of bare repositories (group/name.git)")
    p.add_argument("--read", required=True, help="a token that may fetch")
    p.add_argument("--write", required=True, help="a token that may fetch and push")
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--parent", type=int, default=0)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.args = args
    server.lock = threading.Lock()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_port))
    os.rename(tmp, args.port_file)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if args.parent:
            try:
                os.kill(args.parent, 0)
            except ProcessLookupError:
                break
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
