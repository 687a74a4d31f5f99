#!/usr/bin/env python3
"""Runs ciprof's CI templates' shell steps end to end in a simulated CI, for the template tests.

github: runs one job of a workflow file; a step that uses ciprof's composite action
(".../ci-templates/github@REF" or "./ci-templates/github") runs that action's steps with the
step's `with:` inputs. `run:` steps run as GitHub does (bash --noprofile --norc -eo pipefail),
with GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files; `if:` conditions
and ${{ }} expressions are evaluated (a small subset: contexts github, inputs, steps, env,
runner; literals; ! == != && || and parentheses; success() failure() always() cancelled()
startsWith() contains()). Of the `uses:` actions, actions/cache/{restore,save} and
actions/{upload,download}-artifact are emulated with folders under --state; every other one
(actions/checkout, ...) is skipped, and the log says so. A job's `concurrency:` group
(evaluated) makes jobs of one group wait for each other (a lock under --state); GitHub's
cancelling of pending runs is not simulated.

gitlab: runs one job of a .gitlab-ci.yml that extends the template's hidden job: `extends:`
merged, workflow and job `rules:` evaluated ($VAR, "strings", == != && || parentheses),
variables expanded, the cache pulled before and pushed after as its policy says (folders
under --state), before_script + script run as one bash script with errexit, artifacts
checked and copied under --state; `resource_group:` (expanded) makes jobs of one group wait for
each other (a lock under --state). `include:` is not fetched: the template is given with
--template. With --component FILE, the .gitlab-ci.yml includes ciprof as a CI/CD component:
FILE's `spec: inputs:` are checked against the include's `inputs:` (unknown names, missing
required ones, values outside `options:`), `$[[ inputs.NAME ]]` is interpolated in its keys
and values, and its own `include: local:` of the template is the --template file.

Every line a step prints is also appended to --log. Exit status: 0 when the job succeeded.
"""
import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml


def say(msg):
    print(f"sim: {msg}", flush=True)


# --- GitHub expressions -------------------------------------------------------------------

TOKEN_RE = re.compile(r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|
    (?P<op>==|!=|&&|\|\||<=|>=|[!()<>,])|(?P<name>[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z0-9_\-\*]+)*))""",
                      re.X)


def tokenize(expr):
    pos, out = 0, []
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN_RE.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression at {expr[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


def to_number(v):
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if s == "":
            return 0.0
        try:
            return float(s)
        except ValueError:
            return float("nan")
    return float("nan")


def loose_eq(a, b):
    if type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if isinstance(a, str):
            return a.lower() == b.lower()
        return a == b
    return to_number(a) == to_number(b)


def truthy(v):
    if v is None or v is False or v == "" :
        return False
    if isinstance(v, (int, float)) and (v == 0 or v != v):
        return False
    return True


def as_string(v):
    if v is None:
        return ""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


class Expr:
    def __init__(self, text, ctx, status):
        self.toks = tokenize(text)
        self.i = 0
        self.ctx = ctx
        self.status = status  # "success" | "failure"

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        t = self.peek()
        if value is not None and t[1] != value:
            raise ValueError(f"expected {value!r}, got {t[1]!r}")
        self.i += 1
        return t

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected {self.peek()[1]!r}")
        return v

    def or_(self):
        v = self.and_()
        while self.peek()[1] == "||":
            self.take()
            r = self.and_()
            v = v if truthy(v) else r
        return v

    def and_(self):
        v = self.cmp()
        while self.peek()[1] == "&&":
            self.take()
            r = self.cmp()
            v = r if truthy(v) else v
        return v

    def cmp(self):
        v = self.unary()
        while self.peek()[1] in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            r = self.unary()
            if op == "==":
                v = loose_eq(v, r)
            elif op == "!=":
                v = not loose_eq(v, r)
            else:
                a, b = to_number(v), to_number(r)
                v = {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
        return v

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if val == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return float(val)
        if kind != "name":
            raise ValueError(f"unexpected {val!r}")
        if val in ("true", "false"):
            return val == "true"
        if val == "null":
            return None
        if self.peek()[1] == "(":
            self.take()
            args = []
            while self.peek()[1] != ")":
                args.append(self.or_())
                if self.peek()[1] == ",":
                    self.take()
            self.take(")")
            return self.call(val, args)
        cur = self.ctx
        for part in val.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        return cur

    def call(self, name, args):
        name = name.lower()
        if name == "success":
            return self.status == "success"
        if name == "failure":
            return self.status == "failure"
        if name == "always":
            return True
        if name == "cancelled":
            return False
        if name == "startswith":
            return as_string(args[0]).lower().startswith(as_string(args[1]).lower())
        if name == "contains":
            return as_string(args[1]).lower() in as_string(args[0]).lower()
        raise ValueError(f"function {name}() is not simulated")


def evaluate(text, ctx, status="success"):
    return Expr(text, ctx, status).parse()


def interpolate(value, ctx):
    """Replaces each ${{ expr }} in a string."""
    if not isinstance(value, str):
        return as_string(value)
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_string(evaluate(m.group(1), ctx)), value,
                  flags=re.S)


def condition(text, ctx, status):
    if text is None:
        text = "success()"
    if isinstance(text, bool):
        return text
    text = str(text).strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    if m:
        text = m.group(1)
    if not re.search(r"\b(success|failure|always|cancelled)\s*\(", text):
        text = f"success() && ({text})"
    return truthy(evaluate(text, ctx, status))


# --- GitHub runner --------------------------------------------------------------------------

def parse_env_file(path):
    """KEY=VALUE lines and KEY<<DELIM heredocs (GITHUB_OUTPUT / GITHUB_ENV)."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        m = re.match(r"^([^=<]+)<<(.+)$", line)
        if m:
            key, delim, buf = m.group(1), m.group(2), []
            while i < len(lines) and lines[i] != delim:
                buf.append(lines[i])
                i += 1
            i += 1
            out[key] = "\n".join(buf)
        elif "=" in line:
            k, _, v = line.partition("=")
            out[k] = v
        else:
            raise ValueError(f"{path}: bad line {line!r}")
    return out


class GitHub:
    def __init__(self, args):
        self.args = args
        self.state = args.state
        self.log = open(args.log, "a", encoding="utf-8")
        event = json.load(open(args.event)) if args.event else {}
        self.base_env = dict(kv.split("=", 1) for kv in args.env)
        self.workspace = self.base_env["GITHUB_WORKSPACE"]
        self.runner_temp = self.base_env["RUNNER_TEMP"]
        self.github = {
            "event_name": self.base_env.get("GITHUB_EVENT_NAME", ""),
            "event": event,
            "ref": self.base_env.get("GITHUB_REF", ""),
            "ref_name": self.base_env.get("GITHUB_REF_NAME", ""),
            "base_ref": self.base_env.get("GITHUB_BASE_REF", ""),
            "head_ref": self.base_env.get("GITHUB_HEAD_REF", ""),
            "repository": self.base_env.get("GITHUB_REPOSITORY", ""),
            "sha": self.base_env.get("GITHUB_SHA", ""),
            "run_id": self.base_env.get("GITHUB_RUN_ID", "1"),
            "run_attempt": self.base_env.get("GITHUB_RUN_ATTEMPT", "1"),
            "workspace": self.workspace,
            "token": self.base_env.get("SIM_GITHUB_TOKEN", ""),
            "job": self.base_env.get("GITHUB_JOB", ""),
            "api_url": self.base_env.get("GITHUB_API_URL", ""),
        }
        self.env_file_vars = {}  # GITHUB_ENV, for all later steps
        self.path_prefix = []    # GITHUB_PATH
        self.summary = self.base_env.get("GITHUB_STEP_SUMMARY")
        self.steps_run = []

    def ctx(self, steps, inputs, env, action_path=None):
        gh = dict(self.github)
        if action_path:
            gh["action_path"] = action_path
        return {"github": gh, "inputs": inputs, "steps": steps, "env": env,
                "runner": {"temp": self.runner_temp, "os": "Linux"},
                "job": {"status": "success"}}

    def out(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()
        self.log.write(text)
        self.log.flush()

    def run_job(self, wf_path, job_name):
        wf = yaml.safe_load(open(wf_path))
        job = wf["jobs"][job_name]
        ctx = self.ctx({}, {}, {})
        if "if" in job and not condition(job["if"], ctx, "success"):
            say(f"job {job_name}: skipped by its if:")
            return 0, "skipped"
        env = {k: interpolate(v, ctx) for k, v in (job.get("env") or {}).items()}
        conc = job.get("concurrency") or wf.get("concurrency")
        group = interpolate(conc.get("group", "") if isinstance(conc, dict) else conc, ctx) \
            if conc else ""
        with group_lock(self.state, "concurrency", group):
            status = self.run_steps(job["steps"], {}, env, None)
        return (0 if status == "success" else 1), status

    def run_steps(self, steps, inputs, env_base, action_path, parent_status="success"):
        steps_ctx = {}
        status = parent_status
        for n, step in enumerate(steps):
            name = step.get("name") or step.get("id") or step.get("uses") or f"step {n + 1}"
            ctx = self.ctx(steps_ctx, inputs, {**env_base, **self.env_file_vars}, action_path)
            sid = step.get("id")
            if not condition(step.get("if"), ctx, status):
                say(f"step '{name}': skipped (if: {step.get('if')})")
                if sid:
                    steps_ctx[sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
                self.steps_run.append({"name": name, "outcome": "skipped"})
                continue
            env = {**env_base}
            for k, v in (step.get("env") or {}).items():
                env[k] = interpolate(v, ctx)
            if "uses" in step:
                outcome, outputs = self.uses(step, ctx, env)
            else:
                outcome, outputs = self.run_shell(name, step, env, ctx)
            if sid:
                steps_ctx[sid] = {"outputs": outputs, "outcome": outcome, "conclusion": outcome}
            self.steps_run.append({"name": name, "outcome": outcome})
            if outcome == "failure" and not step.get("continue-on-error"):
                status = "failure"
        self.last_steps = steps_ctx
        return status

    def run_shell(self, name, step, env, ctx):
        shell = step.get("shell", "bash")
        if shell != "bash":
            raise ValueError(f"step {name}: shell {shell} is not simulated")
        script = step["run"]
        if "${{" in script:
            script = interpolate(script, ctx)
        tmp = tempfile.mkdtemp(dir=self.runner_temp, prefix="sim-step-")
        files = {k: os.path.join(tmp, k.lower()) for k in ("GITHUB_OUTPUT", "GITHUB_ENV",
                                                           "GITHUB_PATH")}
        for f in files.values():
            open(f, "w").close()
        script_path = os.path.join(tmp, "script.sh")
        with open(script_path, "w") as f:
            f.write(script)
        full_env = {**self.base_env, **self.env_file_vars, **env, **files}
        full_env.pop("SIM_GITHUB_TOKEN", None)
        full_env["PATH"] = ":".join(self.path_prefix + [self.base_env["PATH"]])
        cwd = step.get("working-directory", self.workspace)
        say(f"step '{name}': run")
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script_path],
                           cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace")
        self.out(p.stdout)
        outputs = parse_env_file(files["GITHUB_OUTPUT"])
        self.env_file_vars.update(parse_env_file(files["GITHUB_ENV"]))
        for line in open(files["GITHUB_PATH"]).read().splitlines():
            if line.strip():
                self.path_prefix.insert(0, line.strip())
        shutil.rmtree(tmp, ignore_errors=True)
        outcome = "success" if p.returncode == 0 else "failure"
        say(f"step '{name}': {outcome} (exit {p.returncode})")
        return outcome, outputs

    def uses(self, step, ctx, env):
        uses = step["uses"]
        with_ = {k: interpolate(v, ctx) for k, v in (step.get("with") or {}).items()}
        name = step.get("name") or uses
        if re.search(r"(^\./|/)ci-templates/github(@|$)", uses) or uses == "./ci-templates/github":
            return self.composite(self.args.action_dir, with_, env)
        base = uses.split("@")[0]
        if base == "actions/cache/restore":
            return self.cache_restore(with_)
        if base == "actions/cache/save":
            return self.cache_save(with_)
        if base == "actions/upload-artifact":
            return self.upload(with_)
        if base == "actions/download-artifact":
            return self.download(with_)
        say(f"step '{name}': skipped: 'uses: {uses}' is not simulated")
        return "success", {}

    def composite(self, action_dir, with_, env):
        action = yaml.safe_load(open(os.path.join(action_dir, "action.yml")))
        assert action["runs"]["using"] == "composite"
        ctx0 = self.ctx({}, {}, env, action_dir)
        inputs = {}
        for k, spec in (action.get("inputs") or {}).items():
            if k in with_:
                inputs[k] = with_[k]
            else:
                inputs[k] = interpolate(spec.get("default", ""), ctx0)
        for k in with_:
            if k not in inputs:
                raise ValueError(f"input {k!r} is not declared by the action")
        say(f"composite action {action_dir}: inputs {sorted(k for k in with_)}")
        status = self.run_steps(action["runs"]["steps"], inputs, env, action_dir)
        ctx = self.ctx(self.last_steps, inputs, env, action_dir)
        outputs = {k: interpolate(v.get("value", ""), ctx)
                   for k, v in (action.get("outputs") or {}).items()}
        return status, outputs

    # -- emulated actions --
    def cache_restore(self, w):
        root = os.path.join(self.state, "gh-cache")
        os.makedirs(root, exist_ok=True)
        path = w["path"].strip()
        hit = None
        if os.path.isdir(os.path.join(root, w["key"])):
            hit = w["key"]
        else:
            for prefix in [l.strip() for l in w.get("restore-keys", "").splitlines() if l.strip()]:
                cands = [k for k in os.listdir(root) if k.startswith(prefix)]
                if cands:
                    hit = max(cands, key=lambda k: os.path.getmtime(os.path.join(root, k)))
                    break
        if hit:
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(os.path.join(root, hit), path)
            say(f"actions/cache/restore (emulated): restored {hit}")
        else:
            say("actions/cache/restore (emulated): no cache")
        return "success", {"cache-hit": "true" if hit == w["key"] else "false",
                           "cache-matched-key": hit or ""}

    def cache_save(self, w):
        root = os.path.join(self.state, "gh-cache")
        dest = os.path.join(root, w["key"])
        if os.path.exists(dest):
            say(f"actions/cache/save (emulated): {w['key']} exists, not saved")
        else:
            shutil.copytree(w["path"].strip(), dest)
            say(f"actions/cache/save (emulated): saved {w['key']}")
        return "success", {}

    def upload(self, w):
        dest = os.path.join(self.state, "gh-artifacts", self.github["run_id"], w["name"])
        src = w["path"].strip()
        if not os.path.isdir(src):
            if w.get("if-no-files-found", "warn") == "error":
                return "failure", {}
            say(f"actions/upload-artifact (emulated): nothing at {src}")
            return "success", {}
        if os.path.exists(dest):
            # upload-artifact@v4: names are unique within a workflow run, re-runs included.
            if str(w.get("overwrite", "false")).lower() != "true":
                say(f"actions/upload-artifact (emulated): an artifact named {w['name']!r} "
                    "already exists in this run (overwrite: false)")
                return "failure", {}
            shutil.rmtree(dest)
        shutil.copytree(src, dest)
        say(f"actions/upload-artifact (emulated): {w['name']} <- {src}")
        return "success", {}

    def download(self, w):
        run_id = w.get("run-id") or self.github["run_id"]
        src = os.path.join(self.state, "gh-artifacts", str(run_id), w["name"])
        dest = os.path.join(self.workspace, w.get("path", "."))
        if not os.path.isdir(src):
            say(f"actions/download-artifact (emulated): no artifact {w['name']} in run {run_id}")
            return "failure", {}
        shutil.copytree(src, dest, dirs_exist_ok=True)
        say(f"actions/download-artifact (emulated): {w['name']} of run {run_id} -> {dest}")
        return "success", {}


@contextlib.contextmanager
def group_lock(state, kind, name):
    """Holds the state folder's lock for concurrency group NAME for the block: jobs of one
    group (GitHub concurrency:, GitLab resource_group:) run one at a time, the others wait,
    as both CIs queue them (cancel-in-progress is not simulated)."""
    if not name:
        yield
        return
    d = os.path.join(state, "groups")
    os.makedirs(d, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    with open(os.path.join(d, f"{kind}-{safe}.lock"), "w") as f:
        say(f"{kind} (emulated): waiting for {name!r}")
        fcntl.flock(f, fcntl.LOCK_EX)
        say(f"{kind} (emulated): holding {name!r}")
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
            say(f"{kind} (emulated): released {name!r}")


# --- GitLab ---------------------------------------------------------------------------------

GL_TOKEN_RE = re.compile(r"""\s*(?:(?P<var>\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)|(?P<str>"[^"]*"|'[^']*')|
    (?P<op>==|!=|&&|\|\||[()])|(?P<null>null))""", re.X)


def gl_eval(expr, variables):
    toks, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = GL_TOKEN_RE.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse rule {expr!r} at {expr[pos:]!r}")
        pos = m.end()
        toks.append((m.lastgroup, m.group(m.lastgroup)))
    i = [0]

    def peek():
        return toks[i[0]][1] if i[0] < len(toks) else None

    def prim():
        kind, val = toks[i[0]]
        i[0] += 1
        if val == "(":
            v = or_()
            i[0] += 1
            return v
        if kind == "var":
            name = val.strip("${}")
            return variables.get(name)
        if kind == "str":
            return val[1:-1]
        return None

    def cmp():
        v = prim()
        while peek() in ("==", "!="):
            op = toks[i[0]][1]
            i[0] += 1
            r = prim()
            eq = (v or None) == (r or None) if (v is None or r is None) else v == r
            v = eq if op == "==" else not eq
        return v

    def and_():
        v = cmp()
        while peek() == "&&":
            i[0] += 1
            r = cmp()
            v = bool(v) and bool(r)
        return v

    def or_():
        v = and_()
        while peek() == "||":
            i[0] += 1
            r = and_()
            v = bool(v) or bool(r)
        return v

    return bool(or_())


def expand(value, variables):
    """GitLab's variable expansion in variables and keys: $NAME and ${NAME}."""
    value = as_string(value)
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)",
                  lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), value)


def deep_merge(base, child):
    out = dict(base)
    for k, v in child.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


INPUT_RE = re.compile(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]")


def component_jobs(path, conf):
    """The jobs a CI/CD component adds, its inputs taken from conf's include: component."""
    header, body = yaml.safe_load_all(open(path))
    spec = (header.get("spec") or {}).get("inputs") or {}
    incs = conf.get("include") or []
    inc = next((i for i in (incs if isinstance(incs, list) else [incs])
                if isinstance(i, dict) and "component" in i), None)
    if inc is None:
        raise SystemExit(f"{path}: the .gitlab-ci.yml has no include: component")
    given = inc.get("inputs") or {}
    for k in given:
        if k not in spec:
            raise SystemExit(f"component: unknown input {k!r}")
    values = {}
    for k, d in spec.items():
        d = d or {}
        if k not in given and "default" not in d:
            raise SystemExit(f"component: input {k!r} is required")
        v = as_string(given.get(k, d.get("default")))
        if "options" in d and v not in [as_string(o) for o in d["options"]]:
            raise SystemExit(f"component: input {k!r} is {v!r}, not one of {d['options']}")
        values[k] = v

    def interp(x):
        if isinstance(x, dict):
            return {interp(k): interp(v) for k, v in x.items()}
        if isinstance(x, list):
            return [interp(v) for v in x]
        if isinstance(x, str):
            def one(m):
                if m.group(1) not in values:
                    raise SystemExit(f"component: unknown input {m.group(1)!r} in {x!r}")
                return values[m.group(1)]
            return INPUT_RE.sub(one, x)
        return x

    body = interp(body)
    say(f"component: {inc['component']} with inputs {sorted(given)}; its include: local "
        "is the template")
    body.pop("include", None)
    return body


def gitlab(args):
    log = open(args.log, "a", encoding="utf-8")
    conf = yaml.safe_load(open(args.ci_file))
    template = yaml.safe_load(open(args.template))
    if args.component:
        template = {**template, **component_jobs(args.component, conf)}
    if "include" in conf:
        say(f"include: not fetched; using {args.template}")
    for k in ("image", "tags", "services"):
        if k in conf.get(args.job, {}):
            say(f"{k}: not simulated (the job runs on this machine)")
    jobs = {**template, **conf}
    job = jobs[args.job]
    ext = job.get("extends")
    for e in ([ext] if isinstance(ext, str) else ext or []):
        job = deep_merge(jobs[e], {k: v for k, v in job.items() if k != "extends"})
    env = dict(kv.split("=", 1) for kv in args.env)
    project_vars = dict(kv.split("=", 1) for kv in args.var)
    variables = {**env, **project_vars}

    def add_vars(vs):
        for k, v in (vs or {}).items():
            if k in project_vars:
                continue  # project CI/CD variables win over the file's
            if isinstance(v, dict):
                v = v.get("value", "")
            variables[k] = expand(v, variables)

    wf = conf.get("workflow", {}).get("rules")
    if wf is not None:
        for r in wf:
            if "if" not in r or gl_eval(r["if"], variables):
                if r.get("when") == "never":
                    say("workflow: rules say never; no pipeline")
                    return 0
                add_vars(r.get("variables"))
                break
        else:
            say("workflow: no rule matches; no pipeline")
            return 0
    add_vars(conf.get("variables"))
    add_vars(job.get("variables"))
    rules = job.get("rules")
    if rules is not None:
        for r in rules:
            if "if" not in r or gl_eval(r["if"], variables):
                if r.get("when") == "never":
                    rules = None
                    say(f"job {args.job}: rules say never; not run")
                    return 0
                add_vars(r.get("variables"))
                break
        else:
            say(f"job {args.job}: no rule matches; not run")
            return 0
    project = variables["CI_PROJECT_DIR"]
    # resource_group: the job (cache pull to cache push) waits for the group's other jobs.
    held = contextlib.ExitStack()
    held.enter_context(group_lock(args.state, "resource_group",
                                  expand(job.get("resource_group", ""), variables)))
    cache = job.get("cache")
    caches = cache if isinstance(cache, list) else [cache] if cache else []
    root = os.path.join(args.state, "gl-cache")
    for c in caches:
        key = expand(c.get("key", "default"), variables)
        policy = expand(c.get("policy", "pull-push"), variables) or "pull-push"
        c["_key"], c["_policy"] = key, policy
        if policy in ("pull", "pull-push") and os.path.isdir(os.path.join(root, key)):
            shutil.copytree(os.path.join(root, key), project, dirs_exist_ok=True)
            say(f"cache (emulated): pulled {key}")
        elif policy in ("pull", "pull-push"):
            say(f"cache (emulated): no cache {key}")
    script = ["set -eo pipefail"]
    for part in ("before_script", "script"):
        for entry in job.get(part) or []:
            script.append(entry)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write("\n".join(script) + "\n")
        path = f.name
    say(f"job {args.job}: running before_script and script")
    p = subprocess.run(["bash", "--noprofile", "--norc", path], cwd=project, env=variables,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    os.unlink(path)
    sys.stdout.write(p.stdout)
    log.write(p.stdout)
    ok = p.returncode == 0
    say(f"job {args.job}: {'success' if ok else 'failed'} (exit {p.returncode})")
    for c in caches:
        when = c.get("when", "on_success")
        if c["_policy"] in ("push", "pull-push") and (ok or when in ("always", "on_failure")):
            dest = os.path.join(root, c["_key"])
            shutil.rmtree(dest, ignore_errors=True)
            for pth in c.get("paths", []):
                src = os.path.join(project, expand(pth, variables))
                if os.path.exists(src):
                    shutil.copytree(src, os.path.join(dest, pth.rstrip("/")), dirs_exist_ok=True)
            say(f"cache (emulated): pushed {c['_key']}")
    art = job.get("artifacts")
    if art and (ok or art.get("when") in ("always", "on_failure")):
        dest = os.path.join(args.state, "gl-artifacts", args.job)
        for pth in art.get("paths", []):
            src = os.path.join(project, expand(pth, variables))
            if os.path.exists(src):
                shutil.copytree(src, os.path.join(dest, pth.rstrip("/")), dirs_exist_ok=True)
                say(f"artifacts (emulated): {pth} kept" +
                    (f", exposed as {art['expose_as']!r}" if "expose_as" in art else ""))
            else:
                say(f"artifacts (emulated): {pth} missing")
    held.close()
    return p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("github")
    g.add_argument("workflow")
    g.add_argument("--job", required=True)
    g.add_argument("--action-dir", required=True)
    g.add_argument("--event")
    g.add_argument("--state", required=True)
    g.add_argument("--log", required=True)
    g.add_argument("--steps-json")
    g.add_argument("--env", action="append", default=[], help="NAME=VALUE")
    l = sub.add_parser("gitlab")
    l.add_argument("ci_file")
    l.add_argument("--template", required=True)
    l.add_argument("--component", help="a CI/CD component (spec: inputs) the file includes")
    l.add_argument("--job", required=True)
    l.add_argument("--state", required=True)
    l.add_argument("--log", required=True)
    l.add_argument("--env", action="append", default=[],
                   help="NAME=VALUE: the runner's environment and predefined variables")
    l.add_argument("--var", action="append", default=[],
                   help="NAME=VALUE: a project CI/CD variable (overrides the file's)")
    args = ap.parse_args()
    if args.cmd == "github":
        gh = GitHub(args)
        rc, status = gh.run_job(args.workflow, args.job)
        if args.steps_json:
            json.dump(gh.steps_run, open(args.steps_json, "w"), indent=1)
        say(f"job {args.job}: {status}")
        return rc
    return gitlab(args)


if __name__ == "__main__":
    sys.exit(main())
