#!/usr/bin/env python3
"""A fake Grafana Pyroscope /ingest on 127.0.0.1, for ciprof's push tests.

It accepts POST /ingest as Pyroscope does for format=pprof (a multipart form whose "profile"
part is the pprof, or the pprof as the whole body), checks authentication and the tenant
header, and decodes the profile with an independent reader, `go tool pprof -raw`: a profile
Go's pprof cannot read is refused with 400. Each request is logged as one JSON line in --log:
query parameters, the kind of authentication and whether it was right, the tenant, the
status sent, and for accepted profiles the decoded totals (samples/count and cpu/nanoseconds
sums, samples per `test` label, the period). The credentials themselves are never logged.

--fail N answers the first N requests 503 (N '*': all of them). A wrong credential gets 401
with a body that echoes the Authorization header, as a careless proxy might, so that the test
can check ciprof redacts what the server says. Binds a port the OS chooses (written to
--port-file) and stops after --timeout seconds.
"""
import argparse
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def decode_raw(data, workdir):
    """Totals of a pprof profile as go tool pprof -raw reads it; None and a message if not."""
    fd, path = tempfile.mkstemp(suffix=".pb.gz", dir=workdir)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    env = dict(os.environ, HOME=workdir, PPROF_TMPDIR=workdir)
    p = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True,
                       env=env, timeout=60)
    if p.returncode != 0:
        return None, p.stderr.strip()[:300]
    lines = p.stdout.splitlines()
    out = {"samples": 0, "cpu_ns": 0, "tests": {}, "period": None, "period_type": None}
    for line in lines:
        if line.startswith("Period: "):
            out["period"] = int(line.split()[1])
        if line.startswith("PeriodType: "):
            out["period_type"] = line[len("PeriodType: "):]
    # ciprof's runs: samples/count and cpu/nanoseconds; runs without a sampling period
    # (folded imports): samples/count alone.
    types = [l for l in lines if l.startswith("samples/count")]
    if not types or types[0] not in ("samples/count cpu/nanoseconds", "samples/count"):
        return None, "no samples/count [cpu/nanoseconds] sample types"
    i = lines.index(types[0])
    out["sample_types"] = types[0]
    cur = None
    for line in lines[i + 1:]:
        m = re.match(r"^\s+(\d+)(?:\s+(\d+))?: [\d ]+$", line)
        if m:
            cur = int(m.group(1))
            out["samples"] += cur
            out["cpu_ns"] += int(m.group(2) or 0)
            continue
        m = re.match(r"^\s+test:\[(.*)\]$", line)
        if m and cur is not None:
            out["tests"][m.group(1)] = out["tests"].get(m.group(1), 0) + cur
            continue
        if not line.startswith(" "):
            break
    return out, None


def multipart_profile(body, ctype):
    m = re.search(r'boundary="?([^";]+)"?', ctype)
    if not m:
        return None
    sep = b"--" + m.group(1).encode()
    for part in body.split(sep)[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.partition(b"\r\n\r\n")
        if b'name="profile"' in head:
            return content[:-2] if content.endswith(b"\r\n") else content
    return None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *a):
        pass

    def reply(self, status, body, rec):
        rec["status"] = status
        with self.server.lock:
            with open(self.server.args.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        a = self.server.args
        url = urlsplit(self.path)
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        auth = self.headers.get("Authorization", "")
        kind = auth.split(" ")[0] if auth else "none"
        if a.token:
            auth_ok = auth == "Bearer " + a.token
        elif a.basic:
            auth_ok = kind == "Basic" and \
                base64.b64decode(auth[6:]).decode(errors="replace") == a.basic
        else:
            auth_ok = not auth
        rec = {"path": url.path, "query": q, "auth": kind, "auth_ok": auth_ok,
               "tenant": self.headers.get("X-Scope-OrgID"),
               "content_type": self.headers.get("Content-Type", "")}
        with self.server.lock:
            self.server.requests += 1
            nth = self.server.requests
        if url.path != "/ingest":
            return self.reply(404, "not found", rec)
        if a.fail == "*" or (a.fail and nth <= int(a.fail)):
            return self.reply(503, "try again", rec)
        if not auth_ok:
            return self.reply(401, "invalid credentials: " + auth, rec)
        if a.tenant and rec["tenant"] != a.tenant:
            return self.reply(401, "no org id", rec)
        for k in ("name", "from", "until"):
            if k not in q:
                return self.reply(400, "missing " + k, rec)
        ctype = rec["content_type"]
        data = multipart_profile(body, ctype) if ctype.startswith("multipart/") else body
        if data is None:
            return self.reply(400, "no profile part", rec)
        decoded, err = decode_raw(data, a.workdir)
        if decoded is None:
            rec["error"] = err
            return self.reply(400, "cannot decode the pprof: " + err, rec)
        rec["profile"] = decoded
        return self.reply(200, "", rec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--token")
    ap.add_argument("--basic", help="USER:PASSWORD")
    ap.add_argument("--tenant")
    ap.add_argument("--fail", default="0")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.args, srv.lock, srv.requests = args, threading.Lock(), 0
    open(args.log, "a").close()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    threading.Timer(args.timeout, srv.shutdown).start()
    srv.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
