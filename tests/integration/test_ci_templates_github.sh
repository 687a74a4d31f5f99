#!/usr/bin/env bash
# The GitHub template end to end in a simulated Actions runner (ci_sim.py): the example
# workflow ciprof.yml with the composite action, on a tiny CMake project, against a fake
# GitHub API on loopback. A push to main builds ciprof once (then the build cache serves every
# job), saves the database to the (emulated) cache, also when the suite fails; a pull request
# restores it, reports, uploads the artifact and posts the sticky comment; the next push to the
# PR updates it, also when the suite fails, and re-running that job overwrites its artifact;
# .ciprof.yml's rate is not overridden and run-options reach ciprof run; a PR into a branch
# never profiled says why there is no baseline; a shallow checkout is deepened to the
# merge-base; a fork's PR only uploads, and the workflow_run companion ciprof-comment.yml
# renders the comment again from the artifact's database (never the fork's Markdown) and posts
# it, is skipped for same-repository PRs and green without an artifact; a pinned release is
# installed only when its SHA-256 matches; with history-branch, a push saves the database to a
# branch of the repository and a PR finds its baseline there after every cache was evicted;
# two pushes to main at once are run in turn by the example's concurrency group (emulated as a
# lock) and the newest saved database holds both runs. runs: auto (the default) runs a push
# once and a PR once while main's history is short; with a stand-in --need-run
# (data/need_run.bash) it runs again while that answers 0, at most 3 times, stops on 1 and
# (warning) on 3; an invalid runs warns and runs as auto; runs: 4 is judged with --head-runs 4.
# actions/checkout is skipped (the work tree is
# prepared here); the cache and artifact actions are emulated; sudo, apt-get and sysctl are
# recording stand-ins, so nothing on this machine is changed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
command -v cmake >/dev/null || fail "cmake is needed"
require_sampling

SIM="$CIPROF_SRC/tests/integration/ci_sim.py"
WF="$CIPROF_SRC/ci-templates/github/workflows"
ACTION="$CIPROF_SRC/ci-templates/github"
WS="$TMP/ws"
STATE="$TMP/state"
RT="$TMP/runner-temp" # kept between jobs, like a self-hosted runner, so ciprof builds once
SHIMS="$TMP/shims"
mkdir -p "$WS" "$STATE" "$RT" "$SHIMS"

# Recording stand-ins for what must not touch this machine.
cat >"$SHIMS/sudo" <<'EOF'
#!/bin/sh
echo "sudo $*" >>"$SHIM_LOG"
exec env "$@"
EOF
cat >"$SHIMS/sysctl" <<'EOF'
#!/bin/sh
echo "sysctl $*" >>"$SHIM_LOG"
EOF
cat >"$SHIMS/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$SHIM_LOG"
EOF
chmod +x "$SHIMS"/*
echo 4 >"$TMP/paranoid" # what GitHub's Ubuntu runners have
# A stand-in for ciprof report --need-run, read by each step's bash (BASH_ENV: the action puts
# ciprof's own bin first on PATH): it answers the exit codes in $NEED_RUN_ANSWERS in turn (the
# last again), logging each call to $NEED_RUN_LOG; every other ciprof report is logged to
# $REPORT_LOG and run. Nothing depends on timing.
cp "$CIPROF_SRC/tests/integration/data/need_run.bash" "$TMP/need_run.bash"

# The project under test: two CTest tests of known cost.
cd "$WS" || fail "no work tree"
cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(widgets C)
enable_testing()
add_executable(spin spin.c)
add_test(NAME spin_small COMMAND spin 30)
add_test(NAME spin_large COMMAND spin 60)
EOF
cp "$CIPROF_SRC/tests/integration/data/spin.c" spin.c
printf 'build/\n' >.gitignore
printf 'run:\n  hz: 173\n' >.ciprof.yml # the action must not override it
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A &&
	git -c user.name=t -c user.email=t@e commit -q -m "widgets" || fail "git"
MAIN_SHA=$(git rev-parse HEAD)
git checkout -q -b feature
sed -i 's/spin 60/spin 90/' CMakeLists.txt
git -c user.name=t -c user.email=t@e commit -q -am "slower" || fail "git"
PR_SHA=$(git rev-parse HEAD)

# job NAME RUN_ID EVENT_NAME REF BRANCH WORKFLOW_FILE JOB [extra --env...]: one simulated job
# on a fresh checkout of BRANCH ($WS/.ciprof removed: only the cache brings it back), with the
# event payload $TMP/NAME.event.json (or $EVENT_FILE), in $JOB_WS instead of $WS when set
# (then checked out already), as run attempt $ATTEMPT (default 1).
job() {
	local name=$1 run_id=$2 event=$3 ref=$4 branch=$5 wf=$6 jobname=$7
	shift 7
	local ws=${JOB_WS:-$WS}
	[ -n "${JOB_WS:-}" ] || git -C "$WS" checkout -q "$branch"
	rm -rf "$ws/.ciprof" "$ws/ciprof-report"
	local ref_name=${ref#refs/heads/}
	ref_name=${ref_name#refs/pull/}
	RC=0
	python3 "$SIM" github "$wf" --job "$jobname" --action-dir "$ACTION" \
		--event "${EVENT_FILE:-$TMP/$name.event.json}" --state "$STATE" --log "$TMP/$name.log" \
		--steps-json "$TMP/$name.steps.json" \
		--env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env CI=true --env GITHUB_ACTIONS=true \
		--env GITHUB_WORKSPACE="$ws" --env RUNNER_TEMP="$RT" --env GITHUB_EVENT_NAME="$event" \
		--env GITHUB_EVENT_PATH="${EVENT_FILE:-$TMP/$name.event.json}" --env GITHUB_REF="$ref" \
		--env GITHUB_REF_NAME="$ref_name" --env GITHUB_REPOSITORY=octo/widgets \
		--env GITHUB_API_URL="$FORGE_URL" --env GITHUB_RUN_ID="$run_id" --env GITHUB_JOB="$jobname" \
		--env GITHUB_SHA="$(git -C "$ws" rev-parse HEAD)" --env GITHUB_RUN_ATTEMPT="${ATTEMPT:-1}" \
		--env GITHUB_STEP_SUMMARY="$TMP/$name.summary.md" --env SIM_GITHUB_TOKEN="$TOKEN" \
		--env CIPROF_PERF_PARANOID_FILE="$TMP/paranoid" --env SHIM_LOG="$TMP/shims.log" \
		--env CIPROF_HTTP_BACKOFF_MS=5 --env CIPROF_HTTP_MAX_WAIT_MS=3000 "$@" \
		>"$TMP/$name.out" 2>&1 </dev/null || RC=$?
	ln -sf "$name.out" "$TMP/$name.err" # what expect_rc shows on failure
}

# step_outcome NAME STEP: the outcome the simulator recorded for the step so named.
step_outcome() {
	python3 -c 'import json,sys; print(",".join(s["outcome"] for s in json.load(open(sys.argv[1])) if s["name"] == sys.argv[2]) or "absent")' \
		"$TMP/$1.steps.json" "$2"
}

runs_of() { # runs_of DB COMMIT: how many runs of COMMIT the database holds
	"$CIPROF" runs --db "$1" --limit 100000 --format json 2>/dev/null |
		python3 -c 'import json,sys; print(sum(r["commit"] == sys.argv[1] for r in json.load(sys.stdin)["runs"]))' "$2" 2>&1
}

pr_event() { # pr_event FILE NUMBER HEAD_SHA HEAD_REPO [BASE]
	cat >"$1" <<EOF
{"action": "synchronize", "number": $2,
 "pull_request": {"number": $2, "base": {"ref": "${5:-main}"},
                  "head": {"ref": "feature", "sha": "$3", "repo": {"full_name": "$4"}}},
 "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
}

forge_start api github --number 7 --head-sha "$PR_SHA"
API_LOG=$FORGE_LOG

# --- 1. push to main: ciprof built and cached, the baseline saved ---------------------------
cat >"$TMP/push.event.json" <<'EOF'
{"ref": "refs/heads/main", "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
job push 100 push refs/heads/main main "$WF/ciprof.yml" profile
expect_rc "push to main" 0 push
expect_eq "build step ran" "$(step_outcome push "ciprof - build")" success
expect_grep "ciprof built from source" "$TMP/push.out" "ciprof: built from $CIPROF_SRC"
expect_eq "the build is cached" "$(step_outcome push "ciprof - cache the build")" success
expect_eq "checkout is skipped (not simulated)" "$(grep -c "skipped: 'uses: actions/checkout@v4' is not simulated" "$TMP/push.out")" 1
expect_grep "paranoid 4 is lowered to 2" "$TMP/shims.log" "sudo sysctl -w kernel.perf_event_paranoid=2"
expect_grep "the base branch is the default branch" "$TMP/push.out" "base branch main, database saved after the run: true"
expect_eq "database saved on main" "$(step_outcome push "ciprof - save the base branch's database")" success
[ -f "$STATE/gh-cache/ciprof-db-main-100-1/ciprof.db" ] && ok "cache holds the database" ||
	check_failed "no database in the emulated cache: $(ls -R "$STATE" | head)"
expect_grep ".ciprof.yml's rate is kept (no forced --hz)" "$TMP/push.out" "at 173 Hz"
expect_grep "job summary on main" "$TMP/push.summary.md" "<!-- ciprof-report -->"
expect_grep "runs: auto on a push to main runs once" "$TMP/push.out" "the suite exited with status 0 (1 run)"
expect_no_grep "a push does not ask --need-run" "$TMP/push.out" "further run needed"
expect_grep "not a PR: no comment" "$TMP/push.out" "not for a pull request"
expect_eq "no API write on main" "$(forge_query "$API_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0

# A failing suite on main: the job fails, and the run is still saved (always()).
EVENT_FILE="$TMP/push.event.json" job pushfail 99 push refs/heads/main main "$WF/ciprof.yml" profile --env SPIN_FAIL=1
expect_rc "failing suite on main fails the job" 1 pushfail
expect_eq "the failing run's database is saved" "$(step_outcome pushfail "ciprof - save the base branch's database")" success
rm -rf "$STATE/gh-cache/ciprof-db-main-99-1" # keep run 100's as the newest baseline

# --- 2. a pull request: restore, run, report, artifact, comment ----------------------------
: >"$TMP/shims.log"
pr_event "$TMP/pr1.event.json" 7 "$PR_SHA" octo/widgets
job pr1 101 pull_request refs/pull/7/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "pull request" 0 pr1
expect_grep "the build cache serves the next job" "$TMP/pr1.out" "ciprof: the cached build of this source"
expect_no_grep "no apt-get on a cache hit" "$TMP/shims.log" "apt-get install"
expect_grep "main's database restored" "$TMP/pr1.out" "restored ciprof-db-main-100-1"
expect_eq "not saved on a PR" "$(step_outcome pr1 "ciprof - save the base branch's database")" skipped
ART="$STATE/gh-artifacts/101/ciprof-report"
for f in report.md report.html report.svg report.json; do
	[ -s "$ART/$f" ] && ok "artifact holds $f" || check_failed "artifact lacks $f"
done
expect_eq "artifact names the PR" "$(cat "$ART/pr-number" 2>/dev/null)" 7
[ ! -e "$ART/ciprof.db" ] && ok "a same-repository PR uploads no database" ||
	check_failed "the database is uploaded for a same-repository PR"
expect_grep "the report compares with main" "$ART/report.md" "main"
expect_no_grep "a baseline was found" "$ART/report.json" '"no_baseline": true'
expect_grep "job summary on the PR" "$TMP/pr1.summary.md" "<!-- ciprof-report -->"
expect_eq "one POST" "$(forge_count "$API_LOG" POST '/issues/7/comments$' 201)" 1
expect_eq "posted body is the report" \
	"$(forge_query "$API_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"] == open("'"$ART/report.md"'").read()')" True
# runs: auto (the default): main has under 20 runs, so ciprof report --need-run answers 1
expect_eq "runs: auto on a PR with a short history runs the suite once" "$(runs_of "$WS/.ciprof/ciprof.db" "$PR_SHA")" 1
expect_grep "the job says one run" "$TMP/pr1.out" "the suite exited with status 0 (1 run)"
expect_grep "--need-run was asked and said why not" "$TMP/pr1.out" "no further run needed: "

# --- 3. the next push to the PR updates the comment, also when the suite fails; a re-run ----
EVENT_FILE="$TMP/pr1.event.json" job pr2 102 pull_request refs/pull/7/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature --env SPIN_FAIL=1
expect_rc "failing suite fails the job" 1 pr2
expect_grep "the suite's failure is said" "$TMP/pr2.out" "the test command failed"
expect_eq "still reported" "$(step_outcome pr2 "ciprof - report")" success
expect_eq "still one POST" "$(forge_count "$API_LOG" POST '/issues/7/comments$')" 1
expect_eq "one PATCH of that comment" \
	"$(forge_query "$API_LOG" '[r["path"] for r in reqs if r["method"] == "PATCH"]')" \
	"['/repos/octo/widgets/issues/comments/1000']"
# "Re-run jobs": the same run id, attempt 2, uploads the same artifact name again.
ATTEMPT=2 EVENT_FILE="$TMP/pr1.event.json" job rerun 102 pull_request refs/pull/7/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "a re-run succeeds" 0 rerun
expect_eq "the re-run overwrites the artifact" "$(step_outcome rerun "ciprof - upload the report")" success

# --- 4. options: run-options reach ciprof run, --hz only when asked ------------------------
python3 - "$WF/ciprof.yml" "$TMP/options.yml" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"].update({"run-options": "--tag suite=widgets --tag shard=1", "hz": "211",
                     "runs": "2"})
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
EVENT_FILE="$TMP/pr1.event.json" job options 106 pull_request refs/pull/7/merge feature "$TMP/options.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "run-options and hz" 0 options
expect_grep "the hz input wins" "$TMP/options.out" "at 211 Hz"
tags=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --limit 1 --format json 2>&1)
tags=$(printf '%s' "$tags" | python3 -c 'import json,sys; t=json.load(sys.stdin)["runs"][0]["tags"]; print(t.get("suite"), t.get("shard"))' 2>&1)
expect_eq "run-options' tags are stored with the run" "$tags" "widgets 1"
nruns=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --format json 2>&1 |
	python3 -c 'import json,sys; print(sum(r["tags"].get("suite") == "widgets" for r in json.load(sys.stdin)["runs"]))' 2>&1)
expect_eq "runs: 2 runs the suite twice" "$nruns" 2

# runs: auto with a stand-in --need-run (data/need_run.bash): the job asks again while it
# answers 0, with the report-options, and stops on 1; never more than 3 runs; a failing
# --need-run (3) stops with a warning; an invalid runs warns and runs as auto; 4 runs are
# judged with --head-runs 4 and never ask.
autojob() { # autojob NAME RUN_ID RUNS REPORT_OPTIONS ANSWERS
	python3 - "$WF/ciprof.yml" "$TMP/$1.yml" "$1" "$3" "$4" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"].update({"run-options": "--tag case=" + sys.argv[3], "runs": sys.argv[4],
                     "report-options": sys.argv[5]})
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
	EVENT_FILE="$TMP/pr1.event.json" job "$1" "$2" pull_request refs/pull/7/merge feature "$TMP/$1.yml" profile \
		--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature --env BASH_ENV="$TMP/need_run.bash" \
		--env NEED_RUN_ANSWERS="$5" --env NEED_RUN_LOG="$TMP/$1.need" --env REPORT_LOG="$TMP/$1.reports"
	tagged_runs=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --format json 2>&1 |
		python3 -c 'import json,sys; print(sum(r["tags"].get("case") == sys.argv[1] for r in json.load(sys.stdin)["runs"]))' "$1" 2>&1)
	need_calls=$(cat "$TMP/$1.need" 2>/dev/null | wc -l)
}
autojob twice 140 x "--min-change 7" "0 1"
expect_rc "runs: auto, asked again once" 0 twice
expect_grep "an invalid runs warns and runs as auto" "$TMP/twice.out" "::warning title=ciprof::runs must be a whole number from 1 or auto, not 'x': running as auto"
expect_eq "--need-run 0 then 1: two runs" "$tagged_runs" 2
expect_eq "--need-run asked after each of the two runs" "$need_calls" 2
expect_grep "it compares with the base branch, with the report-options" "$TMP/twice.need" "report --base main --min-change 7 --need-run"
expect_grep "the extra run says why" "$TMP/twice.out" "ciprof: running the suite again (run 2 of at most 3): another run could decide"
expect_grep "with --need-run's lines" "$TMP/twice.out" "ciprof:   confirm function work_hot +20.0 %"
expect_no_grep "3 runs or fewer: the report's own --head-runs" "$TMP/twice.reports" "--head-runs"
autojob cap 141 auto "" "0"
expect_rc "runs: auto, --need-run always 0" 0 cap
expect_eq "at most 3 runs whatever --need-run says" "$tagged_runs" 3
expect_eq "asked after runs 1 and 2" "$need_calls" 2
autojob needfail 142 auto "" "3"
expect_rc "runs: auto, --need-run fails" 0 needfail
expect_eq "a failing --need-run: no second run" "$tagged_runs" 1
expect_grep "and a warning" "$TMP/needfail.out" "::warning title=ciprof::ciprof report --need-run failed (exit 3): the suite is not run again"
autojob four 143 4 "" "1"
expect_rc "runs: 4" 0 four
expect_eq "runs: 4 runs the suite 4 times" "$tagged_runs" 4
expect_eq "a number never asks --need-run" "$need_calls" 0
expect_eq "every report is judged with --head-runs 4" "$(grep -c -- '--head-runs 4 ' "$TMP/four.reports")" 4

# --- 5. a PR into a branch never profiled: no baseline, and why ------------------------------
git -C "$WS" branch -q release "$MAIN_SHA"
pr_event "$TMP/rel.event.json" 9 "$PR_SHA" octo/widgets release
job rel 107 pull_request refs/pull/9/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=release --env GITHUB_HEAD_REF=feature
expect_rc "PR into release: advisory, green" 0 rel
expect_grep "the base is the PR's target" "$TMP/rel.out" "base branch release, database saved after the run: false"
expect_grep "no baseline explained" "$TMP/rel.out" "no database of release was in the cache"
expect_grep "what to do" "$TMP/rel.out" "The next push to release stores its profile"
expect_grep "the comment says why" "$STATE/gh-artifacts/107/ciprof-report/report.md" "**No baseline:**"

# with fail-on-regression, a base branch ciprof has no run of fails the job, naming the branches
python3 - "$WF/ciprof.yml" "$TMP/gate.yml" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"]["fail-on-regression"] = "true"
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
EVENT_FILE="$TMP/rel.event.json" job gate 113 pull_request refs/pull/9/merge feature "$TMP/gate.yml" profile \
	--env GITHUB_BASE_REF=release --env GITHUB_HEAD_REF=feature
expect_rc "unknown base with fail-on-regression" 1 gate
expect_grep "ciprof names the branches it has" "$TMP/gate.out" "(branches: "
expect_grep "the job says why it failed" "$TMP/gate.out" "fail-on-regression is set and ciprof report failed"

# --- 6. a shallow checkout is deepened to the merge-base -----------------------------------
git clone -q --bare "$WS" "$TMP/origin.git" || fail "git clone --bare"
for i in $(seq 1 60); do
	git -C "$WS" -c user.name=t -c user.email=t@e commit -q --allow-empty -m "f$i" || fail "git commit"
done
git -C "$WS" push -q "$TMP/origin.git" feature || fail "git push"
git clone -q --depth 1 --branch feature "file://$TMP/origin.git" "$TMP/shallow" || fail "shallow clone"
[ "$(git -C "$TMP/shallow" rev-parse --is-shallow-repository)" = true ] || fail "no shallow clone"
JOB_WS="$TMP/shallow" EVENT_FILE="$TMP/pr1.event.json" job shallow 108 pull_request refs/pull/7/merge feature \
	"$WF/ciprof.yml" profile --env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "shallow PR checkout" 0 shallow
expect_grep "the merge-base is fetched" "$TMP/shallow.out" "ciprof: merge-base with main: $MAIN_SHA"
mb=$("$CIPROF" runs --db "$TMP/shallow/.ciprof/ciprof.db" --limit 1 --format json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0].get("merge_base"))' 2>&1)
expect_eq "the run records the merge-base" "$mb" "$MAIN_SHA"
git -C "$WS" reset -q --hard "$PR_SHA" || fail "git reset"

# --- 7. a fork's pull request: no comment from its run, the companion renders and posts ----
forge_stop_all
forge_start fork github --number 8 --head-sha "$PR_SHA"
FORK_LOG=$FORGE_LOG
pr_event "$TMP/fork.event.json" 8 "$PR_SHA" mallory/widgets
# runs: 4: the job judges its 4 runs together (--head-runs 4), and so must the companion.
python3 - "$WF/ciprof.yml" "$TMP/fork4.yml" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"]["runs"] = "4"
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
job fork 103 pull_request refs/pull/8/merge feature "$TMP/fork4.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "fork PR run" 0 fork
expect_grep "fork PR explained" "$TMP/fork.out" "pull request from the fork mallory/widgets"
expect_eq "the fork's run writes nothing" "$(forge_query "$FORK_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
FART="$STATE/gh-artifacts/103/ciprof-report"
expect_eq "its artifact names PR 8" "$(cat "$FART/pr-number" 2>/dev/null)" 8
[ -s "$FART/ciprof.db" ] && ok "a fork PR uploads its database" || check_failed "no database in the fork's artifact"
expect_eq "its artifact says it judged 4 runs together" "$(cat "$FART/head-runs" 2>/dev/null)" 4
# The fork controls its artifact: its Markdown must never be posted.
[ -d "$FART" ] && printf '<!-- ciprof-report -->\n@everyone **ciprof: no regression** [click](https://evil.example)\n' >"$FART/report.md"
companion_event() { # companion_event FILE RUN_ID HEAD_SHA HEAD_REPO
	cat >"$1" <<EOF
{"action": "completed",
 "workflow_run": {"id": $2, "event": "pull_request", "conclusion": "success",
                  "head_sha": "$3", "pull_requests": [],
                  "head_repository": {"full_name": "$4"}},
 "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
}
companion_event "$TMP/companion.event.json" 103 "$PR_SHA" mallory/widgets
job companion 104 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "workflow_run companion" 0 companion
expect_grep "artifact downloaded" "$TMP/companion.out" "ciprof-report of run 103"
expect_grep "the companion judges the 4 runs as the job did" "$TMP/companion.out" \
	"the fork's job judged 4 runs of its commit together: --head-runs 4"
expect_eq "the companion skips the suite" "$(step_outcome companion "ciprof - run the suite")" skipped
expect_eq "the companion checked the PR's head, then posted" \
	"$(forge_query "$FORK_LOG" '[(r["method"], r["path"]) for r in reqs if r["method"] != "GET" or "/pulls/" in r["path"]]')" \
	"[('GET', '/repos/octo/widgets/pulls/8'), ('POST', '/repos/octo/widgets/issues/8/comments')]"
posted=$(forge_query "$FORK_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"]')
case "$posted" in
*@everyone* | *evil.example*) check_failed "the fork's Markdown was posted: $posted" ;;
"<!-- ciprof-report -->"*main*) ok "the posted comment is ciprof's own rendering of the fork's run" ;;
*) check_failed "the posted comment is not a ciprof report: $posted" ;;
esac
case "$posted" in
*"**4 runs of this commit:**"*) ok "the comment judged the 4 runs of the fork's commit" ;;
*) check_failed "the comment did not judge the fork's 4 runs: $posted" ;;
esac
# head-runs is the fork's data: anything but a number from 2 to 20 is ignored
[ -d "$FART" ] && printf '4 --format html -o /tmp/x\n' >"$FART/head-runs"
# a report for another commit is not posted
sed "s/$PR_SHA/$MAIN_SHA/" "$TMP/companion.event.json" >"$TMP/stale.event.json"
job stale 105 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "stale companion: a warning" 0 stale
expect_grep "stale report refused" "$TMP/stale.out" "the report is for another commit"
expect_grep "a hostile head-runs is ignored" "$TMP/stale.out" "the artifact's head-runs is not a number from 2 to 20; ignored"
expect_eq "nothing more posted" "$(forge_count "$FORK_LOG" POST .)" 1
# same-repository PRs commented themselves: the companion does not run
companion_event "$TMP/same.event.json" 101 "$PR_SHA" octo/widgets
job same 109 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "companion after a same-repository PR" 0 same
expect_grep "skipped for same-repository PRs" "$TMP/same.out" "job comment: skipped by its if:"
# a fork run that left no artifact: green, nothing posted
companion_event "$TMP/none.event.json" 555 "$PR_SHA" mallory/widgets
job none 110 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "companion without an artifact is green" 0 none
expect_grep "nothing to post" "$TMP/none.out" "no pull request number in the artifact; nothing to post"
expect_eq "still nothing more posted" "$(forge_count "$FORK_LOG" POST .)" 1

# --- 8. a pinned release: installed when its SHA-256 matches, refused otherwise --------------
"$CIPROF_SRC/scripts/package" --build-dir "$CIPROF_BUILD" --no-source --out "$TMP/dist" >"$TMP/package.out" 2>&1 ||
	fail "scripts/package failed: $(cat "$TMP/package.out")"
TGZ=$(ls "$TMP/dist"/*-linux-*.tar.gz)
SUM=$(sha256sum "$TGZ" | cut -d' ' -f1)
BAD=$(printf '%s' "$SUM" | tr '0-9a-f' '1-9a-f0')
for v in release:$SUM badsum:$BAD; do
	python3 - "$WF/ciprof.yml" "$TMP/${v%%:*}.yml" "file://$TGZ" "${v#*:}" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"].update({"release-url": sys.argv[3], "release-sha256": sys.argv[4]})
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
done
EVENT_FILE="$TMP/pr1.event.json" job release 111 pull_request refs/pull/7/merge feature "$TMP/release.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "with a pinned release" 0 release
expect_grep "the release is installed" "$TMP/release.out" "installed $(basename "$TGZ") (SHA-256 checked)"
expect_eq "nothing is built" "$(step_outcome release "ciprof - build")" skipped
expect_grep "the release's ciprof runs the suite" "$TMP/release.out" "ciprof: verdict"
EVENT_FILE="$TMP/pr1.event.json" job badsum 112 pull_request refs/pull/7/merge feature "$TMP/badsum.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "a wrong SHA-256 fails the job" 1 badsum
expect_grep "the mismatch is said" "$TMP/badsum.out" "does not have the SHA-256 given in release-sha256; not installed"

# --- 9. history that lasts: the database on a branch, found again after the cache is gone ---
git -C "$WS" remote add origin "$TMP/origin.git" || fail "git remote add"
python3 - "$WF/ciprof.yml" "$TMP/history.yml" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"]["history-branch"] = "ciprof-history"
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
EVENT_FILE="$TMP/push.event.json" job hist1 120 push refs/heads/main main "$TMP/history.yml" profile
expect_rc "push to main with a history branch" 0 hist1
expect_grep "saved to the history branch" "$TMP/hist1.out" "saved $WS/.ciprof/ciprof.db to ciprof-history"
git -C "$TMP/origin.git" cat-file -e "ciprof-history:ciprof.db" 2>/dev/null && ok "the branch holds ciprof.db" ||
	check_failed "no ciprof.db on the history branch"
rm -rf "$STATE"/gh-cache/ciprof-db-* # every database cache evicted
EVENT_FILE="$TMP/pr1.event.json" job hist2 121 pull_request refs/pull/7/merge feature "$TMP/history.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "PR after the cache was evicted" 0 hist2
expect_grep "no cache" "$TMP/hist2.out" "actions/cache/restore (emulated): no cache"
expect_grep "restored from the branch" "$TMP/hist2.out" "restored $WS/.ciprof/ciprof.db from ciprof-history"
expect_no_grep "a baseline all the same" "$STATE/gh-artifacts/121/ciprof-report/report.json" '"no_baseline": true'
expect_eq "a PR does not push the history" "$(step_outcome hist2 "ciprof - save to the history branch")" skipped

# --- 10. two pushes to main at once: the example's concurrency group runs them in turn ------
# A's suite waits until B is queued on the group, or has restored main's database (which it
# may only do when nothing serialises them): without the group both restore the same
# database, and the newest save lacks the other's run.
newest_db() { ls -td "$STATE"/gh-cache/ciprof-db-main-* 2>/dev/null | head -n1; }
n_runs() {
	"$CIPROF" runs --db "$1/ciprof.db" --limit 100000 --format json 2>/dev/null |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))' 2>/dev/null || echo none
}
n0=0 # section 9 evicted every database cache
[ -z "$(newest_db)" ] || n0=$(n_runs "$(newest_db)")
WAIT_B="for i in \$(seq 3000); do grep -qE \"concurrency \\(emulated\\): waiting for|restored ciprof-db-main\" \"$TMP/ccB.out\" 2>/dev/null && break; sleep 0.1; done"
python3 - "$WF/ciprof.yml" "$TMP/ccA.yml" "$WAIT_B" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
step = next(s for s in wf["jobs"]["profile"]["steps"] if "ci-templates/github" in s.get("uses", ""))
step["with"]["command"] = sys.argv[3] + "; " + step["with"]["command"]
yaml.safe_dump(wf, open(sys.argv[2], "w"))
PY
for w in ccA ccB; do
	git clone -q --branch main "$WS" "$TMP/$w" || fail "git clone"
done
JOB_WS="$TMP/ccA" EVENT_FILE="$TMP/push.event.json" job ccA 130 push refs/heads/main main "$TMP/ccA.yml" profile &
pid_a=$!
for i in $(seq 3000); do
	grep -q "concurrency (emulated): holding 'ciprof-refs/heads/main'" "$TMP/ccA.out" 2>/dev/null && break
	sleep 0.1
done
JOB_WS="$TMP/ccB" EVENT_FILE="$TMP/push.event.json" job ccB 131 push refs/heads/main main "$WF/ciprof.yml" profile &
pid_b=$!
wait "$pid_a" "$pid_b"
expect_grep "A ran" "$TMP/ccA.out" "job profile: success"
expect_grep "B ran" "$TMP/ccB.out" "job profile: success"
expect_grep "B waited for A" "$TMP/ccB.out" "concurrency (emulated): waiting for 'ciprof-refs/heads/main'"
expect_grep "B restored A's save" "$TMP/ccB.out" "restored ciprof-db-main-130-1"
expect_eq "the newest save holds both runs" "$(n_runs "$(newest_db)")" "$((n0 + 2))"
expect_grep "a pull request's group is its own run" "$TMP/pr1.out" "concurrency (emulated): holding 'ciprof-101'"

# --- the token ------------------------------------------------------------------------------
expect_no_token "every job's output" "$TMP"/{push,pushfail,pr1,pr2,rerun,options,twice,cap,needfail,four,rel,gate,shallow,fork,companion,stale,same,none,release,badsum,hist1,hist2,ccA,ccB}.out \
	"$TMP"/*.summary.md
finish
