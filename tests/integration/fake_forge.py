#!/usr/bin/env python3
"""A fake GitHub or GitLab REST API on 127.0.0.1, for ciprof's comment tests.

It keeps one PR's (MR's) comments in memory, serves them in small pages (GitHub: Link
rel="next"; GitLab: X-Next-Page), creates and edits them, and records every request as one
JSON line in --log (method, path, query, whether the token was right, the JSON body, the
status sent). Scripted faults (--fault) answer chosen requests with an error first.

It is bounded: it binds 127.0.0.1 on a port the OS chooses (written to --port-file), stops
after --max-requests requests or --timeout seconds, whichever comes first, when the
process --parent names has ended, or on GET /__shutdown. The token itself is never written to the log.

Faults: METHOD:PATH_SUBSTRING:STATUS:COUNT[:Header=Value...], COUNT a number or '*' (always),
e.g. GET:/comments:500:1, POST:/notes:429:1:Retry-After=0, POST:/comments:403:*. The pseudo
header Apply=1 makes the fault happen after the request took effect (a comment created, then
a 502 answered), as a flaky proxy in front of a working server would.

GitLab with --fork-project ID: the merge request comes from that fork. The open merge requests
are listed (it, and a same-project merge request --number + 1), the merge request names its
head pipeline (id 4242 in the fork, for --pipeline-sha, default the head), the pipeline has one
finished job "ciprof" (id 99), whose artifacts are the files under --fork-artifacts.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MARKER = "<!-- ciprof-report -->"


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.comments = []  # dicts: id, body, author (login), author_id, system
        self.next_id = 1000
        self.requests = 0
        self.faults = []
        for spec in args.fault or []:
            parts = spec.split(":")
            if len(parts) < 4:
                sys.exit(f"fake_forge: bad --fault {spec!r}")
            method, path, status, count = parts[:4]
            headers = {}
            for h in parts[4:]:
                k, _, v = h.partition("=")
                headers[k] = v
            self.faults.append({
                "method": method, "path": path, "status": int(status),
                "left": None if count == "*" else int(count), "headers": headers,
            })
        if args.api == "github":
            self.me = ("github-actions[bot]", 41898282) if args.installation_token \
                else ("ciprof-bot", 1001)
        else:
            self.me = ("project_5_bot_1a2b", 77)
        for i in range(args.seed):
            self.add(f"comment {i + 1} from a human", "alice", 5)
        if args.foreign_marker:
            self.add(f"{MARKER}\nI pasted ciprof's marker into my own comment", "mallory", 6)
        if args.system_marker and args.api == "gitlab":
            # a system note by ciprof's own user that happens to carry the marker: skipped
            self.add(f"changed the description {MARKER}", self.me[0], self.me[1], system=True)
        if args.existing:
            self.add(f"{MARKER}\nan older ciprof report", self.me[0], self.me[1])

    def add(self, body, author, author_id, system=False):
        c = {"id": self.next_id, "body": body, "author": author, "author_id": author_id,
             "system": system}
        self.next_id += 1
        self.comments.append(c)
        return c


def comment_json(api, c, args):
    if api == "github":
        return {"id": c["id"], "body": c["body"],
                "user": {"login": c["author"], "id": c["author_id"],
                         "type": "Bot" if c["author"].endswith("[bot]") else "User"},
                "html_url": f"https://github.example/{args.repo}/pull/{args.number}"
                            f"#issuecomment-{c['id']}"}
    return {"id": c["id"], "body": c["body"], "system": c["system"],
            "author": {"id": c["author_id"], "username": c["author"]}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-forge/1"

    def log_message(self, fmt, *a):  # quiet
        pass

    # -- plumbing ------------------------------------------------------------------------
    override = None  # (status, obj, headers): an Apply=1 fault answering for the handler

    def reply(self, status, obj=None, headers=None, record=None):
        if self.override:
            status, obj, headers = self.override
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        if record is not None:
            record["status"] = status
            st = self.server.state
            with st.lock:
                with open(st.args.log, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record) + "\n")

    def auth(self):
        a = self.server.state.args
        if a.api == "github":
            h = self.headers.get("Authorization", "")
            if not h:
                return "missing"
            return "ok" if h in (f"Bearer {a.token}", f"token {a.token}") else "wrong"
        h = self.headers.get("PRIVATE-TOKEN")
        if h is None:
            return "missing"
        return "ok" if h == a.token else "wrong"

    def handle_any(self, method):
        st = self.server.state
        a = st.args
        self.override = None  # one handler serves every request of a kept-alive connection
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        record = {"method": method, "path": url.path, "query": url.query,
                  "auth": self.auth(), "body": body,
                  "content_type": self.headers.get("Content-Type"),
                  "user_agent": self.headers.get("User-Agent")}
        if url.path == "/__shutdown":
            self.reply(200, {"bye": True})
            st.done.set()
            return
        with st.lock:
            st.requests += 1
            over = st.requests > a.max_requests
        if over:
            self.reply(503, {"message": "fake_forge: too many requests"}, record=record)
            st.done.set()
            return
        if record["auth"] != "ok":
            self.reply(401, {"message": "Bad credentials"}, record=record)
            return
        # scripted faults
        with st.lock:
            for f in st.faults:
                if f["method"] == method and f["path"] in url.path and f["left"] != 0:
                    if f["left"] is not None:
                        f["left"] -= 1
                    fault = f
                    break
            else:
                fault = None
        if fault:
            msg = {403: "Resource not accessible by integration", 429: "rate limited",
                   404: "Not Found"}.get(fault["status"], "server error")
            if a.leak_token:
                msg += f" (token {a.token})"  # ciprof must redact what it prints
            headers = {k: v for k, v in fault["headers"].items() if k != "Apply"}
            if fault["headers"].get("Apply") != "1":
                self.reply(fault["status"], {"message": msg}, headers=headers, record=record)
                return
            record["applied"] = True
            self.override = (fault["status"], {"message": msg}, headers)
        if a.api == "github":
            self.github(method, url, body, record)
        else:
            self.gitlab(method, url, body, record)

    def do_GET(self):
        self.handle_any("GET")

    def raw(self, status, data, record):
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        record["status"] = status
        st = self.server.state
        with st.lock:
            with open(st.args.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def do_POST(self):
        self.handle_any("POST")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_PUT(self):
        self.handle_any("PUT")

    # -- pagination ----------------------------------------------------------------------
    def page(self, url):
        a = self.server.state.args
        q = parse_qs(url.query)
        per = min(int(q.get("per_page", ["30"])[0]), a.page_size)
        page = int(q.get("page", ["1"])[0])
        return page, per

    # -- GitHub --------------------------------------------------------------------------
    def github(self, method, url, body, record):
        st = self.server.state
        a = st.args
        path = url.path
        if a.prefix and path.startswith(a.prefix):
            path = path[len(a.prefix):]
        base = f"/repos/{a.repo}"
        if method == "GET" and path == "/user":
            if a.installation_token:
                return self.reply(403, {"message": "Resource not accessible by integration"},
                                  record=record)
            return self.reply(200, {"login": st.me[0], "id": st.me[1]}, record=record)
        if method == "GET" and path == f"{base}/pulls/{a.number}":
            return self.reply(200, {"number": a.number, "head": {"sha": a.head_sha}},
                              record=record)
        if path == f"{base}/issues/{a.number}/comments":
            if method == "GET":
                page, per = self.page(url)
                with st.lock:
                    items = list(st.comments)
                chunk = items[(page - 1) * per: page * per]
                last = max(1, (len(items) + per - 1) // per)
                headers = {}
                host = a.link_host or f"127.0.0.1:{self.server.server_port}"
                links = []
                if page < last:
                    links.append(f'<http://{host}{url.path}?per_page={per}&page={page + 1}>; '
                                 f'rel="next"')
                links.append(f'<http://{host}{url.path}?per_page={per}&page={last}>; rel="last"')
                headers["Link"] = ", ".join(links)
                return self.reply(200, [comment_json("github", c, a) for c in chunk],
                                  headers=headers, record=record)
            if method == "POST":
                with st.lock:
                    c = st.add(body["body"], st.me[0], st.me[1])
                return self.reply(201, comment_json("github", c, a), record=record)
        m = re.fullmatch(rf"{re.escape(base)}/issues/comments/(\d+)", path)
        if m and method == "PATCH":
            cid = int(m.group(1))
            with st.lock:
                c = next((c for c in st.comments if c["id"] == cid), None)
                if c and c["author"] == st.me[0]:
                    c["body"] = body["body"]
            if not c:
                return self.reply(404, {"message": "Not Found"}, record=record)
            if c["author"] != st.me[0]:
                return self.reply(403, {"message": "not your comment"}, record=record)
            return self.reply(200, comment_json("github", c, a), record=record)
        return self.reply(404, {"message": f"Not Found: {method} {path}"}, record=record)

    # -- GitLab --------------------------------------------------------------------------
    def gitlab(self, method, url, body, record):
        st = self.server.state
        a = st.args
        path = url.path
        if method == "GET" and path == "/api/v4/user":
            return self.reply(200, {"id": st.me[1], "username": st.me[0]}, record=record)
        fork = a.fork_project
        if fork and method == "GET":
            if path == f"/api/v4/projects/{a.project}/merge_requests":
                return self.reply(200, [
                    {"iid": a.number, "source_project_id": int(fork),
                     "target_project_id": int(a.project), "sha": a.head_sha},
                    {"iid": a.number + 1, "source_project_id": int(a.project),
                     "target_project_id": int(a.project), "sha": a.head_sha}], record=record)
            if path == f"/api/v4/projects/{fork}/pipelines/4242/jobs":
                return self.reply(200, [{"id": 98, "name": "build", "status": "success"},
                                        {"id": 99, "name": "ciprof", "status": "success"}],
                                  record=record)
            pre = f"/api/v4/projects/{fork}/jobs/99/artifacts/"
            if path.startswith(pre):
                rel = os.path.normpath(path[len(pre):])
                f = os.path.join(a.fork_artifacts, rel)
                if rel.startswith("..") or not os.path.isfile(f):
                    return self.reply(404, {"message": "404 Not found"}, record=record)
                return self.raw(200, open(f, "rb").read(), record)
        m = re.fullmatch(r"/api/v4/projects/([^/]+)/merge_requests/(\d+)(/notes(?:/(\d+))?)?",
                         path)
        if not m or m.group(1) != a.project or int(m.group(2)) != a.number:
            return self.reply(404, {"message": "404 Not found"}, record=record)
        if not m.group(3):
            if method == "GET":
                mr = {"iid": a.number, "sha": a.head_sha}
                if a.fork_project:
                    mr.update({"source_project_id": int(a.fork_project),
                               "target_project_id": int(a.project),
                               "head_pipeline": {"id": 4242, "project_id": int(a.fork_project),
                                                 "sha": a.pipeline_sha or a.head_sha}})
                return self.reply(200, mr, record=record)
        elif m.group(4) is None:
            if method == "GET":
                page, per = self.page(url)
                with st.lock:
                    items = list(st.comments)
                chunk = items[(page - 1) * per: page * per]
                last = max(1, (len(items) + per - 1) // per)
                headers = {"X-Page": str(page), "X-Per-Page": str(per),
                           "X-Total": str(len(items)), "X-Total-Pages": str(last),
                           "X-Next-Page": str(page + 1) if page < last else ""}
                return self.reply(200, [comment_json("gitlab", c, a) for c in chunk],
                                  headers=headers, record=record)
            if method == "POST":
                with st.lock:
                    c = st.add(body["body"], st.me[0], st.me[1])
                return self.reply(201, comment_json("gitlab", c, a), record=record)
        else:
            if method == "PUT":
                cid = int(m.group(4))
                with st.lock:
                    c = next((c for c in st.comments if c["id"] == cid), None)
                    if c and c["author"] == st.me[0] and not c["system"]:
                        c["body"] = body["body"]
                if not c:
                    return self.reply(404, {"message": "404 Not found"}, record=record)
                if c["author"] != st.me[0] or c["system"]:
                    return self.reply(403, {"message": "403 Forbidden"}, record=record)
                return self.reply(200, comment_json("gitlab", c, a), record=record)
        return self.reply(405, {"message": "405 Method Not Allowed"}, record=record)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--api", choices=["github", "gitlab"], required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--repo", default="octo/widgets")
    p.add_argument("--project", default="5")
    p.add_argument("--number", type=int, default=7)
    p.add_argument("--prefix", default="", help="GitHub Enterprise-like path prefix")
    p.add_argument("--head-sha", default="0123456789abcdef0123456789abcdef01234567")
    p.add_argument("--page-size", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="comments by a human")
    p.add_argument("--foreign-marker", action="store_true")
    p.add_argument("--system-marker", action="store_true")
    p.add_argument("--existing", action="store_true", help="an older comment of ciprof's")
    p.add_argument("--installation-token", action="store_true")
    p.add_argument("--link-host", default="", help="host:port put in Link headers")
    p.add_argument("--leak-token", action="store_true", help="echo the token in errors")
    p.add_argument("--fault", action="append")
    p.add_argument("--fork-project", default="", help="GitLab: the MR comes from this fork")
    p.add_argument("--fork-artifacts", default="", help="GitLab: the fork's ciprof job's artifacts")
    p.add_argument("--pipeline-sha", default="", help="GitLab: the fork's head pipeline's commit")
    p.add_argument("--max-requests", type=int, default=200)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--parent", type=int, default=0,
                   help="stop when this process ends (the test), however long it takes")
    args = p.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    server.state.done = threading.Event()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_port))
    os.rename(tmp, args.port_file)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    deadline = time.monotonic() + args.timeout
    while not server.state.done.wait(0.2):
        if time.monotonic() >= deadline:
            break
        if args.parent:
            try:
                os.kill(args.parent, 0)
            except ProcessLookupError:
                break
    time.sleep(0.05)  # let the last answer leave
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
