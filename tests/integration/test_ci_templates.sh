#!/usr/bin/env bash
# ci-templates/: every YAML file parses (python3-yaml) and has the keys its CI requires: the
# composite action's inputs and steps, the example workflows' triggers and permissions (the
# fork companion never checks out code), the GitLab template's cache, rules and exposed
# artifacts; no ${{ }} expression is pasted into a shell script; the packages the templates
# install are scripts/setup's; the GitLab CI/CD component (templates/ciprof.yml) maps only
# declared inputs to the template's variables. The end-to-end runs are test_ci_templates_github/gitlab.sh.
source "$(dirname "$0")/lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"

python3 - "$CIPROF_SRC" <<'PY' || check_failed "template checks (see above)"
import glob, os, re, sys
import yaml

src = sys.argv[1]
tpl = os.path.join(src, "ci-templates")
problems = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        problems.append(what)


files = sorted(glob.glob(f"{tpl}/**/*.yml", recursive=True))
check(len(files) >= 5, f"{len(files)} YAML files under ci-templates/")
docs = {}
for f in files:
    try:
        docs[os.path.relpath(f, tpl)] = yaml.safe_load(open(f))
        check(True, f"{os.path.relpath(f, src)} parses")
    except yaml.YAMLError as e:
        check(False, f"{os.path.relpath(f, src)} parses: {e}")


def on(doc):  # YAML 1.1 reads the key `on` as True
    return doc.get("on", doc.get(True)) or {}


def run_steps(steps):
    return [s for s in steps if "run" in s]


# --- the composite action -------------------------------------------------------------
a = docs["github/action.yml"]
check(a.get("name") and a.get("description"), "action.yml has name and description")
check(a["runs"]["using"] == "composite", "action.yml is a composite action")
inputs = a.get("inputs", {})
for i in ("command", "base-branch", "hz", "comment", "fail-on-regression", "token",
          "database-cache-key"):
    check(i in inputs and "description" in inputs[i], f"action input {i}")
check(inputs["token"]["default"] == "${{ github.token }}", "token defaults to github.token")
steps = a["runs"]["steps"]
for s in run_steps(steps):
    check(s.get("shell") == "bash", f"step '{s.get('name')}' says shell: bash")
    check("${{" not in s["run"], f"step '{s.get('name')}': no expression in its script")
text = open(f"{tpl}/github/action.yml").read()
used_inputs = set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", text))
check(used_inputs <= set(inputs), f"every inputs.X used is declared ({sorted(used_inputs - set(inputs))})")
uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
for u in ("actions/cache/restore", "actions/cache/save", "actions/upload-artifact"):
    check(u in uses, f"action uses {u}")
restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore")
               and "db-dir" in s["with"]["path"])
check("restore-keys" in restore["with"] and "base-branch" in restore["with"]["key"],
      "the cache is keyed on the base branch, with restore-keys")
save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save")
            and "db-dir" in s["with"]["path"])
check("save == 'true'" in save.get("if", ""), "the cache is saved only on the base branch")
scripts = "\n".join(s["run"] for s in run_steps(steps))
check("sysctl -w kernel.perf_event_paranoid=2" in scripts, "perf_event_paranoid is lowered")
check("ciprof run" in scripts and "ciprof report" in scripts and "ciprof comment" in scripts,
      "the action runs, reports and comments")
check('GITHUB_STEP_SUMMARY' in scripts or "ciprof comment" in scripts, "job summary written")
check(all(k in a.get("outputs", {}) for k in ("verdict", "report-dir")), "action outputs")
for i in ("run-options", "report-options", "history-branches", "release-url", "release-sha256"):
    check(i in inputs and "description" in inputs[i], f"action input {i}")
for i in ("hz", "base-branch"):
    check(inputs[i].get("default") == "", f"input {i} has no default: .ciprof.yml / the PR decide")
upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
check(upload["with"].get("overwrite") is True, "the artifact upload overwrites (re-runs)")
check(save.get("if", "").startswith("always()"), "the database is saved after a failed suite too")
check("GITHUB_BASE_REF" in scripts, "the base branch is the pull request's target")
check(inputs["runs"].get("default") == "auto", "runs defaults to auto")
run_step = next(s for s in steps if s.get("id") == "run")
check(re.search(r'ciprof report --base "\$BASE" "\$\{report_opts\[@\]\}" --need-run', run_step["run"])
      and "INPUT_REPORT_OPTIONS" in run_step["env"],
      "runs: auto asks ciprof report --need-run, with the report-options")
check("max=3" in run_step["run"] and '[ "$SAVE" = true ] && max=1' in run_step["run"],
      "runs: auto runs at most 3 times, once on a history push")
report_step = next(s for s in steps if s.get("id") == "report")
check("--head-runs" in report_step["run"] and "steps.run.outputs.runs" in report_step["env"]["RUNS"],
      "more than 3 runs are judged with --head-runs")
check("CI_JOB_TOKEN" not in scripts, "no GitLab variable in the action")

# --- example workflows ------------------------------------------------------------------
w = docs["github/workflows/ciprof.yml"]
check("pull_request" in on(w) and "push" in on(w), "ciprof.yml runs on pull_request and push")
check(w.get("permissions", {}).get("pull-requests") == "write", "ciprof.yml may comment")
job = next(iter(w["jobs"].values()))
check(any("ci-templates/github" in s.get("uses", "") for s in job["steps"]),
      "ciprof.yml uses the action")
c = docs["github/workflows/ciprof-comment.yml"]
check("workflow_run" in on(c) and on(c)["workflow_run"].get("types") == ["completed"],
      "ciprof-comment.yml runs on workflow_run completed")
check(on(c)["workflow_run"].get("workflows") == [w["name"]],
      "ciprof-comment.yml follows ciprof.yml by its name")
perms = c.get("permissions", {})
check(perms.get("pull-requests") == "write" and perms.get("actions") == "read",
      "ciprof-comment.yml: pull-requests write, actions read")
cjob = next(iter(c["jobs"].values()))
check(not any(s.get("uses", "").startswith("actions/checkout") for s in cjob["steps"]),
      "ciprof-comment.yml never checks out the pull request's code")
check(any(s.get("uses", "").startswith("actions/download-artifact") for s in cjob["steps"]),
      "ciprof-comment.yml downloads the report artifact")
action_step = next(s for s in cjob["steps"] if "ci-templates/github" in s.get("uses", ""))
check({"report-artifact", "pr-number", "pr-head-sha"} <= set(action_step["with"]),
      "ciprof-comment.yml posts in comment-only mode with the head commit checked")
check("head_repository.full_name != github.repository" in cjob.get("if", ""),
      "ciprof-comment.yml runs only for fork pull requests")
dl = next(s for s in cjob["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
check(dl.get("continue-on-error") is True, "ciprof-comment.yml is green without an artifact")
check("body-file" not in inputs, "the action has no input that posts a given Markdown file")
co = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
check(co.get("with", {}).get("persist-credentials") is False, "ciprof.yml: persist-credentials false")
check(co.get("with", {}).get("fetch-depth", 1) != 0, "ciprof.yml: no full-history fetch")
act = next(s for s in job["steps"] if "ci-templates/github" in s.get("uses", ""))
check("base-branch" not in act.get("with", {}) and "hz" not in act.get("with", {}),
      "ciprof.yml forces neither a base branch nor a rate")
check("concurrency" in job, "ciprof.yml serialises pushes (concurrency group)")
for f in files:
    check("your-org" not in open(f).read(), f"{os.path.relpath(f, src)}: no your-org placeholder")
for wf in (w, c):
    for j in wf["jobs"].values():
        for s in run_steps(j["steps"]):
            check("${{" not in s["run"], f"workflow step '{s.get('name')}': no expression in its script")

# --- GitLab -------------------------------------------------------------------------------
g = docs["gitlab/ciprof.gitlab-ci.yml"]
j = g[".ciprof"]
check(isinstance(j.get("script"), list) and "before_script" not in j,
      ".ciprof has only script: a job's own before_script is kept")
dbc = next(c for c in j["cache"] if ".ciprof/" in c["paths"])
check("CIPROF_CACHE_BRANCH" in dbc["key"], "the database cache is keyed on the branch compared against")
check(dbc["policy"].startswith("$"), "the cache policy comes from the rules")
check(j["rules"][0] == {"if": '$CIPROF_FORK_NOTES == "true"', "when": "never"},
      "the fork-notes schedule does not profile")
run_rules = [r for r in j["rules"] if r.get("when") != "never"]
pol = {r["variables"]["CIPROF_CACHE_POLICY"] for r in run_rules}
check(pol == {"pull", "pull-push"}, "merge requests pull, the default branch pushes")
cb = {r["variables"]["CIPROF_CACHE_BRANCH"] for r in run_rules}
check(cb == {"$CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "$CI_DEFAULT_BRANCH"},
      "an MR reads its target branch's cache")
check(any(".ciprof-install/" in c["paths"] for c in j["cache"]), "ciprof's build is cached")
gtext = open(f"{tpl}/gitlab/ciprof.gitlab-ci.yml").read()
check("CI_JOB_TOKEN" in gtext, "a private mirror is cloned with CI_JOB_TOKEN")
check(j.get("resource_group") == "ciprof-$CI_COMMIT_REF_SLUG",
      "a branch's jobs run one at a time (resource_group), so no default-branch run is lost")
check("distributed cache" in gtext, "the distributed-cache note is there")
check("CIPROF_RUN_HZ" not in gtext and "--hz" not in "\n".join(j["script"]),
      "the template forces no rate")
check("CIPROF_RUN_OPTIONS" in j["variables"] and "CIPROF_REPORT_OPTIONS" in j["variables"],
      "run and report options variables")
check(str(j["variables"].get("GIT_DEPTH")) != "0", "no full-history fetch")
check(j["variables"].get("CIPROF_RUNS") == "auto", "CIPROF_RUNS defaults to auto")
check(re.search(r'ciprof report --base "\$base" "\$\{report_opts\[@\]\}" --need-run', "\n".join(j["script"]))
      and "max=3" in "\n".join(j["script"]),
      "CIPROF_RUNS=auto asks ciprof report --need-run, with CIPROF_REPORT_OPTIONS, at most 3 times")
check('[ "$history_job" = true ] && max=1' in "\n".join(j["script"]),
      "CIPROF_RUNS=auto runs once on the default branch")
art = j["artifacts"]
check(art.get("expose_as") and all(p.endswith("/") for p in art["paths"]),
      "artifacts exposed in the merge request (directory paths end with /)")
check(art.get("when") == "always", "artifacts kept when the job fails")
gscripts = "\n".join(j["script"])
check("ciprof comment --provider gitlab" in gscripts, "the job posts the MR note")
check("privileged" in open(f"{tpl}/gitlab/ciprof.gitlab-ci.yml").read(), "the runner note is there")
fn = g[".ciprof-fork-notes"]
check(fn["rules"] == [{"if": '$CIPROF_FORK_NOTES == "true" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH'}],
      "the fork-notes job runs only in the default branch's schedule (this project's own configuration)")
check(fn["script"][0] == j["script"][0], "the fork-notes job installs ciprof as .ciprof does")
check("gitlab-fork-notes.sh" in fn["script"][1], "the fork-notes job runs gitlab-fork-notes.sh")
check("ciprof.db" in gscripts and "CI_MERGE_REQUEST_SOURCE_PROJECT_ID" in gscripts,
      "a fork's job keeps its database in the artifacts")
e = docs["gitlab/example.gitlab-ci.yml"]
check("include" in e and e["ciprof"]["extends"] == ".ciprof", "the example includes and extends .ciprof")
check(e["ciprof-fork-notes"]["extends"] == ".ciprof-fork-notes", "the example has the fork-notes job")

# --- the CI/CD component: every input it uses is declared, each sets a template variable ------
comp_path = os.path.join(src, "templates/ciprof.yml")
spec, body = yaml.safe_load_all(open(comp_path))
cin = spec["spec"]["inputs"]
check(all("description" in (d or {}) for d in cin.values()), "every component input has a description")
check(cin["runs"].get("default") == "auto", "the component's runs defaults to auto")
ctext = open(comp_path).read().split("\n---\n", 1)[1]
cused = set(re.findall(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]", ctext))
check(cused == set(cin), f"the component uses exactly its declared inputs ({sorted(cused ^ set(cin))})")
check(body["include"] == [{"local": "/ci-templates/gitlab/ciprof.gitlab-ci.yml"}],
      "the component includes the template from its own project")
cjob = body["$[[ inputs.job-name ]]"]
check(cjob["extends"] == ".ciprof", "the component's job extends .ciprof")
check(set(cjob["variables"]) <= set(j["variables"]) | {"CIPROF_COMMENT_ENABLED"},
      f"the component sets only the template's variables ({sorted(set(cjob['variables']) - set(j['variables']))})")

# --- packages -------------------------------------------------------------------------------
setup = open(os.path.join(src, "scripts/setup")).read()
setup_pkgs = set(re.search(r"packages=\((.*?)\n\)", setup, re.S).group(1).split())
for name, body in (("action.yml", scripts), ("ciprof.gitlab-ci.yml", gscripts)):
    m = re.search(r'packages="([^"]*)"', body)
    pk = set(m.group(1).split()) if m else set()
    check(pk and pk <= setup_pkgs, f"{name} installs only scripts/setup's packages ({sorted(pk - setup_pkgs)})")

# --- docs/ci.md matches the templates ---------------------------------------------------------
doc = open(os.path.join(src, "docs/ci.md")).read()
blocks = re.findall(r"<!-- file: (\S+) -->\n```yaml\n(.*?)```\n", doc, re.S)
check(len(blocks) >= 3, f"docs/ci.md shows {len(blocks)} template files")
for path, text in blocks:
    check(text == open(os.path.join(src, path)).read(), f"docs/ci.md shows {path} as it is")
names = {n for row in re.findall(r"^\| (`[^|]*) \|", doc, re.M)
         for n in re.findall(r"`([a-z0-9-]+)`", row)}
check(set(inputs) <= names, f"docs/ci.md documents every action input ({sorted(set(inputs) - names)})")
gvars = {k for k in j["variables"] if k.startswith("CIPROF_")}
gdoc = set(re.findall(r"`(CIPROF_[A-Z0-9_]+)`", doc))
check(gvars <= gdoc, f"docs/ci.md documents every template variable ({sorted(gvars - gdoc)})")
for gone in ("your-org", "your-group", "@v1", "fetch-depth: 0", "CIPROF_RUN_HZ` | `99"):
    check(gone not in doc, f"docs/ci.md no longer says {gone!r}")

sys.exit(1 if problems else 0)
PY
ok "templates checked"
finish
