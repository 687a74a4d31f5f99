#!/usr/bin/env bash
# The GitLab template end to end in a simulated GitLab runner (ci_sim.py): example.gitlab-ci.yml
# extending .ciprof from ciprof.gitlab-ci.yml, on a tiny CMake project, against a fake GitLab
# API on loopback. The default branch's pipeline builds ciprof (cached for the next jobs),
# keeps the job's own before_script, does not override .ciprof.yml's rate and pushes the
# database to the (emulated) cache; merge request pipelines pull it, report, keep
# ciprof-report/ as exposed artifacts and post then update one MR note; CIPROF_RUN_OPTIONS
# reach ciprof run; an MR into a branch never profiled says why there is no baseline; a
# branch pipeline without an MR runs nothing; a re-run (retried job) updates the same note; a
# shallow clone is deepened to the merge-base; a failing suite on the default branch still
# pushes its run; a pinned release is installed only with the right SHA-256; a private mirror
# of ciprof on this GitLab is fetched with CI_JOB_TOKEN as a header (and no other host gets
# it); two default-branch pipelines at once are serialised by resource_group and keep both
# runs; with CIPROF_HISTORY_BRANCH the database is pushed to a branch of the project (with
# ci.skip) and found there after every cache is gone; a fork's merge request pipeline keeps its
# database in the artifacts and the target project's scheduled .ciprof-fork-notes job renders
# and posts the note from it (never the fork's Markdown), only for the head commit. CIPROF_RUNS=auto
# (the default) runs the default branch once and an MR once while main's history is short; with
# a stand-in --need-run (data/need_run.bash) it runs again while that answers 0, at most 3
# times, stops on 1 and (warning) on 3; an invalid value warns and runs as auto; CIPROF_RUNS=4
# is judged with --head-runs 4. `include:` is not fetched (the template
# is passed in), image and tags are not simulated; the project's and the mirror's git remotes
# are bare repositories behind a fake GitLab git server on loopback (fake_git_http.py); sudo
# and apt-get are recording stand-ins.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
command -v cmake >/dev/null || fail "cmake is needed"
require_sampling

SIM="$CIPROF_SRC/tests/integration/ci_sim.py"
TEMPLATE="$CIPROF_SRC/ci-templates/gitlab/ciprof.gitlab-ci.yml"
EXAMPLE="$CIPROF_SRC/ci-templates/gitlab/example.gitlab-ci.yml"
WS="$TMP/ws"
STATE="$TMP/state"
RUNNER_TMP="$TMP/runner-tmp" # a shell runner's /tmp: ciprof's build is kept between jobs
SHIMS="$TMP/shims"
mkdir -p "$WS" "$STATE" "$RUNNER_TMP" "$SHIMS"
for tool in sudo apt-get; do
	printf '#!/bin/sh\necho "%s $*" >>"$SHIM_LOG"\n' "$tool" >"$SHIMS/$tool"
	chmod +x "$SHIMS/$tool"
done

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
printf 'run:\n  hz: 173\n' >.ciprof.yml # the template must not override it
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A &&
	git -c user.name=t -c user.email=t@e commit -q -m "widgets" || fail "git"
MAIN_SHA=$(git rev-parse HEAD)
git checkout -q -b feature
sed -i 's/spin 60/spin 90/' CMakeLists.txt
git -c user.name=t -c user.email=t@e commit -q -am "slower" || fail "git"

forge_start api gitlab --number 7
API_LOG=$FORGE_LOG

# The fake GitLab's git server: the project (octo/widgets) and a private mirror of ciprof
# (ciprof/ciprof, this source tree's tracked files at a tag v0.1.0). The job token may read;
# HISTORY_TOKEN (a project access token with write_repository) may also push.
JOB_TOKEN="glcbt-ciprofJobToken$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
HISTORY_TOKEN="glpat-ciprofHistory$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
GIT_ROOT="$TMP/git-server"
mkdir -p "$GIT_ROOT/octo" "$GIT_ROOT/ciprof" "$TMP/mirror-src"
git clone -q --bare "$WS" "$GIT_ROOT/octo/widgets.git" || fail "git clone --bare"
git -C "$GIT_ROOT/octo/widgets.git" config receive.advertisePushOptions true
printf '#!/bin/sh\necho "push options: ${GIT_PUSH_OPTION_0:-none}" >>"${FAKE_GIT_PUSH_LOG:-/dev/null}"\n' \
	>"$GIT_ROOT/octo/widgets.git/hooks/pre-receive"
chmod +x "$GIT_ROOT/octo/widgets.git/hooks/pre-receive"
(cd "$CIPROF_SRC" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$TMP/mirror-src" ||
	fail "cannot copy ciprof's tracked files"
git -C "$TMP/mirror-src" init -q -b main && git -C "$TMP/mirror-src" add -A &&
	git -C "$TMP/mirror-src" -c user.name=t -c user.email=t@e commit -q -m "ciprof" &&
	git -C "$TMP/mirror-src" tag v0.1.0 &&
	git clone -q --bare "$TMP/mirror-src" "$GIT_ROOT/ciprof/ciprof.git" || fail "cannot make the mirror"
GIT_LOG="$TMP/git-server.jsonl"
python3 "$CIPROF_SRC/tests/integration/fake_git_http.py" --root "$GIT_ROOT" --read "$JOB_TOKEN" \
	--write "$HISTORY_TOKEN" --port-file "$TMP/git.port" --log "$GIT_LOG" --parent $$ \
	2>"$TMP/git-server.err" &
FORGE_PIDS+=($!) # stopped with the fake APIs
for i in $(seq 1200); do
	[ -s "$TMP/git.port" ] && break
	sleep 0.05
done
[ -s "$TMP/git.port" ] || fail "the fake git server did not start: $(cat "$TMP/git-server.err")"
GIT_URL="http://127.0.0.1:$(cat "$TMP/git.port")"

# runs_in DB: how many runs the database holds; last_exit DB: the newest run's exit code.
runs_in() {
	"$CIPROF" runs --db "$1" --limit 100000 --format json 2>/dev/null |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))' 2>/dev/null || echo none
}
last_exit() {
	"$CIPROF" runs --db "$1" --limit 1 --format json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["exit_code"])' 2>/dev/null || echo none
}

# pipeline NAME BRANCH [--env/--var ...]: one simulated job on a fresh checkout, of CI_FILE
# (the example's job "ciprof" unless changed).
# In $JOB_WS instead of $WS when set (then checked out already); CI_PIPELINE_ID is $PIPELINE
# (default: a new one per call).
CI_FILE=("$EXAMPLE" --job ciprof)
PIPELINES=0
pipeline() {
	local name=$1 branch=$2 ws=${JOB_WS:-$WS}
	shift 2
	PIPELINES=$((PIPELINES + 1))
	[ -n "${JOB_WS:-}" ] || git -C "$WS" checkout -q "$branch"
	rm -rf "$ws/.ciprof" "$ws/.ciprof-install" "$ws/.project-setup-ran" "$ws/ciprof-report" "$STATE/gl-artifacts"
	RC=0
	python3 "$SIM" gitlab "${CI_FILE[@]}" --template "$TEMPLATE" --state "$STATE" \
		--log "$TMP/$name.log" \
		--env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env TMPDIR="$RUNNER_TMP" --env CI=true \
		--env GITLAB_CI=true --env CI_PROJECT_DIR="$ws" --env CI_DEFAULT_BRANCH=main \
		--env CI_API_V4_URL="$FORGE_URL/api/v4" --env CI_PROJECT_ID=5 --env CI_JOB_NAME=ciprof \
		--env CI_SERVER_URL="$GIT_URL" --env CI_PROJECT_PATH=octo/widgets --env CI_JOB_TOKEN="$JOB_TOKEN" \
		--env CI_PIPELINE_ID="${PIPELINE:-$((500 + PIPELINES))}" --env CI_JOB_ID="$((900 + PIPELINES))" \
		--env CI_COMMIT_REF_SLUG="$branch" --env GIT_TERMINAL_PROMPT=0 \
		--env CI_COMMIT_SHA="$(git -C "$ws" rev-parse HEAD)" --env SHIM_LOG="$TMP/shims.log" \
		--env CIPROF_HTTP_BACKOFF_MS=5 --env CIPROF_HTTP_MAX_WAIT_MS=3000 \
		--var CIPROF_SOURCE_DIR="$CIPROF_SRC" "$@" >"$TMP/$name.out" 2>&1 </dev/null || RC=$?
	ln -sf "$name.out" "$TMP/$name.err"
}
MR_ENV=(--env CI_PIPELINE_SOURCE=merge_request_event --env CI_MERGE_REQUEST_IID=7
	--env CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main --env CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=feature
	--env CI_COMMIT_REF_NAME=feature)

# --- 1. the default branch: baseline pushed to the cache -----------------------------------
pipeline main main --env CI_PIPELINE_SOURCE=push --env CI_COMMIT_BRANCH=main \
	--env CI_COMMIT_REF_NAME=main --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "default branch pipeline" 0 main
expect_grep "ciprof built from CIPROF_SOURCE_DIR" "$TMP/main.out" "ciprof: built from $CIPROF_SRC"
expect_grep "ciprof runs" "$TMP/main.out" "ciprof 0.1.0"
[ -f "$WS/.project-setup-ran" ] && ok "the job's own before_script ran" || check_failed "the job's before_script was dropped"
expect_grep "the base is the default branch" "$TMP/main.out" "ciprof: base branch main"
expect_grep ".ciprof.yml's rate is kept (no forced --hz)" "$TMP/main.out" "at 173 Hz"
expect_grep "ciprof's build cached" "$TMP/main.out" "cache (emulated): pushed ciprof-bin-"
expect_grep "cache pushed" "$TMP/main.out" "cache (emulated): pushed ciprof-db-main"
[ -f "$STATE/gl-cache/ciprof-db-main/.ciprof/ciprof.db" ] && ok "the cache holds the database" ||
	check_failed "no database in the emulated cache"
expect_grep "no MR: no note" "$TMP/main.out" "not for a merge request"
expect_grep "CIPROF_RUNS=auto on the default branch runs once" "$TMP/main.out" "the suite exited with status 0 (1 run)"
expect_no_grep "the default branch does not ask --need-run" "$TMP/main.out" "further run needed"
expect_eq "no API write" "$(forge_query "$API_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0

# --- 2. a merge request: pull, report, artifacts, note ---------------------------------------
pipeline mr1 feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "merge request pipeline" 0 mr1
expect_grep "cache pulled" "$TMP/mr1.out" "cache (emulated): pulled ciprof-db-main"
expect_grep "the cached build serves the MR" "$TMP/mr1.out" "ciprof: the cached build of this source"
expect_no_grep "cache not pushed from an MR" "$TMP/mr1.out" "pushed ciprof-db-main"
expect_grep "artifacts exposed" "$TMP/mr1.out" "exposed as 'ciprof report'"
for f in report.md report.html report.svg report.json; do
	[ -s "$STATE/gl-artifacts/ciprof/ciprof-report/$f" ] && ok "artifacts hold $f" ||
		check_failed "artifacts lack $f"
done
expect_grep "compared with the default branch's run" "$STATE/gl-artifacts/ciprof/ciprof-report/report.md" "of main"
expect_eq "one POST of the note" "$(forge_count "$API_LOG" POST '/api/v4/projects/5/merge_requests/7/notes$' 201)" 1
expect_eq "the note is the report" \
	"$(forge_query "$API_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"] == open("'"$STATE/gl-artifacts/ciprof/ciprof-report/report.md"'").read()')" True
# CIPROF_RUNS=auto (the default): main has under 20 runs, so ciprof report --need-run answers 1
expect_eq "CIPROF_RUNS=auto in an MR with a short history runs the suite once" \
	"$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --limit 100000 --format json 2>/dev/null |
		python3 -c 'import json,sys; print(sum(r["commit"] == sys.argv[1] for r in json.load(sys.stdin)["runs"]))' \
			"$(git -C "$WS" rev-parse feature)" 2>&1)" 1
expect_grep "--need-run was asked and said why not" "$TMP/mr1.out" "no further run needed: "

# --- 3. the next MR pipeline updates the note --------------------------------------------
pipeline mr2 feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "second MR pipeline" 0 mr2
expect_eq "still one POST" "$(forge_count "$API_LOG" POST .)" 1
expect_eq "one PUT of that note" \
	"$(forge_query "$API_LOG" '[r["path"] for r in reqs if r["method"] == "PUT"]')" \
	"['/api/v4/projects/5/merge_requests/7/notes/1000']"

# --- 3b. CIPROF_RUN_OPTIONS reach ciprof run, CIPROF_RUNS repeats it -----------------
pipeline opts feature "${MR_ENV[@]}" --var CIPROF_RUN_OPTIONS="--tag suite=widgets --hz 211" \
	--var CIPROF_RUNS=2
expect_rc "MR pipeline with CIPROF_RUN_OPTIONS" 0 opts
expect_grep "the option reaches ciprof run" "$TMP/opts.out" "at 211 Hz"
tags=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --limit 1 --format json 2>&1 |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["tags"].get("suite"))' 2>&1)
expect_eq "its tag is stored" "$tags" widgets
nruns=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --format json 2>&1 |
	python3 -c 'import json,sys; print(sum(r["tags"].get("suite") == "widgets" for r in json.load(sys.stdin)["runs"]))' 2>&1)
expect_eq "CIPROF_RUNS=2 runs the suite twice" "$nruns" 2

# CIPROF_RUNS=auto with a stand-in --need-run (data/need_run.bash, through BASH_ENV): asked
# again while it answers 0, with CIPROF_REPORT_OPTIONS, stopping on 1; at most 3 runs; a
# failing --need-run (3) stops with a warning; an invalid CIPROF_RUNS warns and runs as auto.
autojob() { # autojob NAME CIPROF_RUNS CIPROF_REPORT_OPTIONS ANSWERS
	pipeline "$1" feature "${MR_ENV[@]}" --var CIPROF_RUN_OPTIONS="--tag case=$1" --var CIPROF_RUNS="$2" \
		--var CIPROF_REPORT_OPTIONS="$3" --env BASH_ENV="$CIPROF_SRC/tests/integration/data/need_run.bash" \
		--env NEED_RUN_ANSWERS="$4" --env NEED_RUN_LOG="$TMP/$1.need" --env REPORT_LOG="$TMP/$1.reports"
	tagged_runs=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --format json 2>&1 |
		python3 -c 'import json,sys; print(sum(r["tags"].get("case") == sys.argv[1] for r in json.load(sys.stdin)["runs"]))' "$1" 2>&1)
	need_calls=$(cat "$TMP/$1.need" 2>/dev/null | wc -l)
}
autojob twice x "--min-change 7" "0 1"
expect_rc "CIPROF_RUNS=auto, asked again once" 0 twice
expect_grep "an invalid CIPROF_RUNS warns and runs as auto" "$TMP/twice.out" "ciprof: CIPROF_RUNS must be a whole number from 1 or auto, not 'x': running as auto"
expect_eq "--need-run 0 then 1: two runs" "$tagged_runs" 2
expect_eq "--need-run asked after each of the two runs" "$need_calls" 2
expect_grep "it compares with the target branch, with CIPROF_REPORT_OPTIONS" "$TMP/twice.need" "report --base main --min-change 7 --need-run"
expect_grep "the extra run says why" "$TMP/twice.out" "ciprof: running the suite again (run 2 of at most 3): another run could decide"
expect_grep "with --need-run's lines" "$TMP/twice.out" "ciprof:   confirm function work_hot +20.0 %"
autojob cap auto "" "0"
expect_rc "CIPROF_RUNS=auto, --need-run always 0" 0 cap
expect_eq "at most 3 runs whatever --need-run says" "$tagged_runs" 3
expect_eq "asked after runs 1 and 2" "$need_calls" 2
autojob needfail auto "" "3"
expect_rc "CIPROF_RUNS=auto, --need-run fails" 0 needfail
expect_eq "a failing --need-run: no second run" "$tagged_runs" 1
expect_grep "and a warning" "$TMP/needfail.out" "ciprof: warning: ciprof report --need-run failed (exit 3): the suite is not run again"
autojob four 4 "" "1"
expect_rc "CIPROF_RUNS=4" 0 four
expect_eq "CIPROF_RUNS=4 runs the suite 4 times" "$tagged_runs" 4
expect_eq "a number never asks --need-run" "$need_calls" 0
expect_eq "every report is judged with --head-runs 4" "$(grep -c -- '--head-runs 4 ' "$TMP/four.reports")" 4

# --- 3c. an MR into a branch never profiled: no baseline, and why -------------------------
git -C "$WS" branch -q release main
pipeline rel feature --env CI_PIPELINE_SOURCE=merge_request_event --env CI_MERGE_REQUEST_IID=9 \
	--env CI_MERGE_REQUEST_TARGET_BRANCH_NAME=release --env CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=feature \
	--env CI_COMMIT_REF_NAME=feature
expect_rc "MR into release: advisory, green" 0 rel
expect_grep "the base is the MR's target" "$TMP/rel.out" "ciprof: base branch release"
expect_grep "no release cache" "$TMP/rel.out" "cache (emulated): no cache ciprof-db-release"
expect_grep "no baseline explained" "$TMP/rel.out" "ciprof: no baseline: no run of release"
expect_grep "the note says why" "$STATE/gl-artifacts/ciprof/ciprof-report/report.md" "**No baseline:**"

# --- 4. no token (a fork's MR pipeline): a warning, the job still passes -----------------
pipeline notoken feature "${MR_ENV[@]}"
expect_rc "MR pipeline without CIPROF_GITLAB_TOKEN" 0 notoken
expect_grep "missing token explained" "$TMP/notoken.out" "CIPROF_GITLAB_TOKEN is not set"

# --- 5. a branch pipeline without MR: the workflow rules run nothing -----------------------
pipeline branch feature --env CI_PIPELINE_SOURCE=push --env CI_COMMIT_BRANCH=feature
expect_rc "branch pipeline" 0 branch
expect_grep "no pipeline" "$TMP/branch.out" "workflow: no rule matches; no pipeline"

# --- 6. the CI/CD component (templates/ciprof.yml): inputs become the template's variables --
cat >"$TMP/component.gitlab-ci.yml" <<'EOF'
include:
  - component: gitlab.example.com/ciprof/ciprof/ciprof@v0.1.0
    inputs:
      job-name: profile
      command: ctest --test-dir build --output-on-failure
      build-command: cmake -S . -B build && cmake --build build
      run-options: --tag via=component --hz 223
      fail-on-regression: "true"
EOF
CI_FILE=("$TMP/component.gitlab-ci.yml" --component "$CIPROF_SRC/templates/ciprof.yml" --job profile)
pipeline comp feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_grep "the component's job runs the template" "$TMP/comp.out" "job profile: running before_script and script"
expect_grep "run-options reach ciprof run" "$TMP/comp.out" "at 223 Hz"
tags=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --limit 1 --format json 2>&1 |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["tags"].get("via"))' 2>&1)
expect_eq "its tag is stored" "$tags" component
expect_grep "the report compares with the default branch" \
	"$STATE/gl-artifacts/profile/ciprof-report/report.md" "of main"
# base-branch and fail-on-regression reach the job: a base never profiled fails it, named
cat >"$TMP/component-gate.gitlab-ci.yml" <<'EOF'
include:
  - component: gitlab.example.com/ciprof/ciprof/ciprof@v0.1.0
    inputs:
      command: ctest --test-dir build --output-on-failure
      build-command: cmake -S . -B build && cmake --build build
      base-branch: nosuch
      fail-on-regression: "true"
EOF
CI_FILE=("$TMP/component-gate.gitlab-ci.yml" --component "$CIPROF_SRC/templates/ciprof.yml" --job ciprof)
pipeline compgate feature "${MR_ENV[@]}"
expect_rc "an unknown base-branch with fail-on-regression fails the job" 1 compgate
expect_grep "ciprof names the branches it has" "$TMP/compgate.out" "(branches: "
cat >"$TMP/component-bad.gitlab-ci.yml" <<'EOF'
include:
  - component: gitlab.example.com/ciprof/ciprof/ciprof@v0.1.0
    inputs:
      comand: make check
EOF
CI_FILE=("$TMP/component-bad.gitlab-ci.yml" --component "$CIPROF_SRC/templates/ciprof.yml" --job ciprof)
pipeline compbad feature "${MR_ENV[@]}"
expect_grep "a misspelt input is refused, as GitLab does" "$TMP/compbad.out" "unknown input 'comand'"

CI_FILE=("$EXAMPLE" --job ciprof)

# --- 7. a re-run: the MR job retried in the same pipeline updates the same note --------------
puts=$(forge_count "$API_LOG" PUT .)
PIPELINE=777 pipeline try1 feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
PIPELINE=777 pipeline retry feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "the retried job succeeds" 0 retry
expect_eq "still one POST after the retry" "$(forge_count "$API_LOG" POST .)" 1
expect_eq "the retry updated the note" "$(forge_count "$API_LOG" PUT .)" "$((puts + 2))"
expect_eq "the note is the retry's report" \
	"$(forge_query "$API_LOG" '[r for r in reqs if r["method"] == "PUT"][-1]["body"]["body"] == open("'"$STATE/gl-artifacts/ciprof/ciprof-report/report.md"'").read()')" True

# --- 8. a shallow clone (GIT_DEPTH 50) is deepened until the merge-base is found -----------
for i in $(seq 1 60); do
	git -C "$WS" -c user.name=t -c user.email=t@e commit -q --allow-empty -m "f$i" || fail "git commit"
done
git -C "$WS" push -q "$GIT_ROOT/octo/widgets.git" feature || fail "git push"
git clone -q --depth 50 --branch feature "file://$GIT_ROOT/octo/widgets.git" "$TMP/shallow" || fail "shallow clone"
[ "$(git -C "$TMP/shallow" rev-parse --is-shallow-repository)" = true ] || fail "no shallow clone"
git -C "$TMP/shallow" merge-base HEAD "$MAIN_SHA" >/dev/null 2>&1 && fail "the shallow clone already has the merge-base"
JOB_WS="$TMP/shallow" pipeline shallow feature "${MR_ENV[@]}"
expect_rc "MR pipeline in a shallow clone" 0 shallow
mb=$("$CIPROF" runs --db "$TMP/shallow/.ciprof/ciprof.db" --limit 1 --format json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0].get("merge_base"))' 2>&1)
expect_eq "the run records the merge-base, found by deepening" "$mb" "$MAIN_SHA"
expect_no_grep "a baseline was found" "$STATE/gl-artifacts/ciprof/ciprof-report/report.json" '"no_baseline": true'
git -C "$WS" reset -q --hard "$(git -C "$WS" rev-parse feature~60)" || fail "git reset"

# --- 9. a failing suite on the default branch: the job fails, its run is still pushed -------
CACHED="$STATE/gl-cache/ciprof-db-main/.ciprof/ciprof.db"
n0=$(runs_in "$CACHED")
pipeline mainfail main --env CI_PIPELINE_SOURCE=push --env CI_COMMIT_BRANCH=main \
	--env CI_COMMIT_REF_NAME=main --env SPIN_FAIL=1
expect_rc "a failing suite fails the job with its status (ctest: 8)" 8 mainfail
expect_grep "the failure is said" "$TMP/mainfail.out" "the test command failed"
expect_grep "the cache is pushed after a failure" "$TMP/mainfail.out" "cache (emulated): pushed ciprof-db-main"
expect_eq "the failing run is in the pushed database" "$(runs_in "$CACHED")" "$((n0 + 1))"
expect_eq "with its exit code" "$(last_exit "$CACHED")" 8

# --- 11. a private mirror of ciprof on this GitLab: fetched with CI_JOB_TOKEN as a header ----
: >"$GIT_LOG"
pipeline mirror feature "${MR_ENV[@]}" --var CIPROF_SOURCE_DIR= --var CIPROF_REPO="$GIT_URL/ciprof/ciprof.git"
expect_rc "MR pipeline with ciprof from the private mirror" 0 mirror
expect_eq "the mirror was read with the job token" \
	"$(forge_query "$GIT_LOG" 'sorted({(r["user"], r["auth"], r["status"]) for r in reqs if r["path"].startswith("/ciprof/")})')" \
	"[('gitlab-ci-token', 'read', 200)]"
expect_grep "the mirror's source is the cached build's" "$TMP/mirror.out" "ciprof: the cached build of this source"
pipeline badjob feature "${MR_ENV[@]}" --var CIPROF_SOURCE_DIR= --var CIPROF_REPO="$GIT_URL/ciprof/ciprof.git" \
	--env CI_JOB_TOKEN=glcbt-wrong
expect_rc "a job token the mirror refuses fails the job" 1 badjob
expect_grep "it says what it could not fetch" "$TMP/badjob.out" "ciprof: cannot fetch v0.1.0 of $GIT_URL/ciprof/ciprof.git"
: >"$GIT_LOG"
other="http://localhost:${GIT_URL##*:}/ciprof/ciprof.git" # the same server under another host name
pipeline otherhost feature "${MR_ENV[@]}" --var CIPROF_SOURCE_DIR= --var CIPROF_REPO="$other"
expect_rc "a mirror on another host gets no job token (and refuses)" 1 otherhost
expect_eq "no credentials went to the other host" \
	"$(forge_query "$GIT_LOG" 'sorted({r["auth"] for r in reqs})')" "['none']"

# --- 12. two default-branch pipelines at once: resource_group runs them one after the other --
# A's suite waits until B is queued on the resource group, or has pulled the cache (which it
# may only do when nothing serialises them): without resource_group both pull the same
# database, and the later push loses the other's run.
n0=$(runs_in "$CACHED")
for w in rgA rgB; do
	git clone -q --branch main "$WS" "$TMP/$w" || fail "git clone"
done
WAIT_B="for i in \$(seq 3000); do grep -qE \"resource_group \\(emulated\\): waiting for|cache \\(emulated\\): (pulled|no cache) ciprof-db-main\" \"$TMP/rgB.out\" 2>/dev/null && break; sleep 0.1; done"
MAIN_ENV=(--env CI_PIPELINE_SOURCE=push --env CI_COMMIT_BRANCH=main --env CI_COMMIT_REF_NAME=main)
JOB_WS="$TMP/rgA" pipeline rgA main "${MAIN_ENV[@]}" --var CIPROF_COMMAND="$WAIT_B; ctest --test-dir build" &
pid_a=$!
for i in $(seq 3000); do
	grep -q "holding 'ciprof-main'" "$TMP/rgA.out" 2>/dev/null && break
	sleep 0.1
done
JOB_WS="$TMP/rgB" pipeline rgB main "${MAIN_ENV[@]}" &
pid_b=$!
wait "$pid_a" "$pid_b"
expect_grep "A ran" "$TMP/rgA.out" "job ciprof: success"
expect_grep "B ran" "$TMP/rgB.out" "job ciprof: success"
expect_grep "B waited for A" "$TMP/rgB.out" "resource_group (emulated): waiting for 'ciprof-main'"
expect_eq "both runs are in the cached database" "$(runs_in "$CACHED")" "$((n0 + 2))"
expect_grep "merge requests wait only for their own branch" "$TMP/mr1.out" "waiting for 'ciprof-feature'"

# --- 13. the history branch: pushed on the default branch, found after the cache is gone ----
: >"$GIT_LOG"
pipeline histro main "${MAIN_ENV[@]}" --var CIPROF_HISTORY_BRANCH=ciprof-history --var CIPROF_HISTORY_ATTEMPTS=1
expect_rc "saving with a read-only job token fails the job" 1 histro
expect_grep "the failed save is said" "$TMP/histro.out" "saving to the history branch ciprof-history failed"
pipeline hist1 main "${MAIN_ENV[@]}" --var CIPROF_HISTORY_BRANCH=ciprof-history --var CIPROF_HISTORY_TOKEN="$HISTORY_TOKEN"
expect_rc "default branch with a history branch" 0 hist1
expect_grep "saved to the branch" "$TMP/hist1.out" "saved $WS/.ciprof/ciprof.db to ciprof-history"
expect_eq "pushed with the project access token" \
	"$(forge_query "$GIT_LOG" 'sorted({(r["user"], r["auth"], r["status"]) for r in reqs if r["service"] == "git-receive-pack" and r["method"] == "POST"})')" \
	"[('ciprof', 'write', 200)]"
expect_grep "the push skips CI (ci.skip)" "$GIT_LOG.push" "push options: ci.skip"
hist_runs=$(git -C "$GIT_ROOT/octo/widgets.git" cat-file blob ciprof-history:ciprof.db >"$TMP/hist.db" 2>/dev/null && runs_in "$TMP/hist.db")
expect_eq "the branch holds the cached history plus this run" "$hist_runs" "$(runs_in "$CACHED")"
rm -rf "$STATE"/gl-cache/ciprof-db-* # every database cache gone (expired, cleared, another runner)
pipeline hist2 feature "${MR_ENV[@]}" --var CIPROF_HISTORY_BRANCH=ciprof-history
expect_rc "MR pipeline without any cache" 0 hist2
expect_grep "no cache" "$TMP/hist2.out" "cache (emulated): no cache ciprof-db-main"
expect_grep "restored from the branch with the job token" "$TMP/hist2.out" "restored $WS/.ciprof/ciprof.db from ciprof-history"
expect_no_grep "a baseline all the same" "$STATE/gl-artifacts/ciprof/ciprof-report/report.json" '"no_baseline": true'
expect_eq "the MR pushed nothing" "$(git -C "$GIT_ROOT/octo/widgets.git" cat-file blob ciprof-history:ciprof.db | cmp - "$TMP/hist.db" && echo same)" same

# --- 15. a merge request from a fork: its pipeline keeps the database, a schedule posts ------
# The fork's pipeline runs in the fork (project 6) without the token; the target project's
# scheduled .ciprof-fork-notes job finds the merge request, downloads the fork's job's
# artifacts from the (fake) API, renders the note itself and posts it.
pipeline refill main "${MAIN_ENV[@]}" # the database cache, gone since section 13
FEATURE_SHA=$(git -C "$WS" rev-parse feature)
mkdir -p "$TMP/fork-artifacts"
forge_start forkapi gitlab --number 7 --fork-project 6 --fork-artifacts "$TMP/fork-artifacts" --head-sha "$FEATURE_SHA"
FORK_LOG=$FORGE_LOG
FORK_ENV=(--env CI_PROJECT_ID=6 --env CI_MERGE_REQUEST_PROJECT_ID=5 --env CI_MERGE_REQUEST_SOURCE_PROJECT_ID=6)
# CIPROF_RUNS=4: the job judges 4 runs together (--head-runs 4), and so must the note.
pipeline forkmr feature "${MR_ENV[@]}" "${FORK_ENV[@]}" --var CIPROF_RUNS=4
expect_rc "the fork's MR pipeline, without the token" 0 forkmr
expect_grep "the fork's run is kept for the companion" "$TMP/forkmr.out" "merge request from a fork: the run's database is in the artifacts"
expect_eq "the fork's artifacts say it judged 4 runs together" \
	"$(cat "$STATE/gl-artifacts/ciprof/ciprof-report/head-runs" 2>/dev/null)" 4
for f in ciprof.db head-run base-branch; do
	[ -s "$STATE/gl-artifacts/ciprof/ciprof-report/$f" ] && ok "the fork's artifacts hold $f" ||
		check_failed "the fork's artifacts lack $f"
done
cp -r "$STATE/gl-artifacts/ciprof/ciprof-report" "$TMP/fork-artifacts/"
# The fork controls its artifacts: its Markdown must never be posted.
printf '<!-- ciprof-report -->\n@everyone **ciprof: no regression** [click](https://evil.example)\n' \
	>"$TMP/fork-artifacts/ciprof-report/report.md"
expect_eq "the fork's pipeline wrote nothing" "$(forge_query "$FORK_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
CI_FILE=("$EXAMPLE" --job ciprof)
pipeline schedprof main "${MAIN_ENV[@]}" --env CI_PIPELINE_SOURCE=schedule --var CIPROF_FORK_NOTES=true
expect_grep "the schedule does not profile" "$TMP/schedprof.out" "job ciprof: rules say never; not run"
CI_FILE=("$EXAMPLE" --job ciprof-fork-notes)
pipeline fnotes main "${MAIN_ENV[@]}" --env CI_PIPELINE_SOURCE=schedule --env CI_PROJECT_ID=5 \
	--var CIPROF_FORK_NOTES=true --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "the fork-notes schedule" 0 fnotes
expect_grep "one note posted" "$TMP/fnotes.out" "1 note(s) posted or updated, 0 merge request(s) from forks skipped"
expect_grep "the note judges the 4 runs as the job did" "$TMP/fnotes.out" \
	"!7: its job judged 4 runs of its commit together: --head-runs 4"
expect_eq "it read the fork's job's four files, checked the head, then posted" \
	"$(forge_query "$FORK_LOG" '[(r["method"], r["path"].replace("/api/v4/projects/", "")) for r in reqs if "artifacts" in r["path"] or r["method"] != "GET" or r["path"].endswith("/merge_requests/7")]')" \
	"[('GET', '5/merge_requests/7'), ('GET', '6/jobs/99/artifacts/ciprof-report/head-run'), ('GET', '6/jobs/99/artifacts/ciprof-report/base-branch'), ('GET', '6/jobs/99/artifacts/ciprof-report/ciprof.db'), ('GET', '6/jobs/99/artifacts/ciprof-report/head-runs'), ('GET', '5/merge_requests/7'), ('POST', '5/merge_requests/7/notes')]"
expect_eq "the same-project MR is left alone" "$(forge_query "$FORK_LOG" 'sum(1 for r in reqs if "/merge_requests/8" in r["path"])')" 0
posted=$(forge_query "$FORK_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"]')
case "$posted" in
*@everyone* | *evil.example*) check_failed "the fork's Markdown was posted: $posted" ;;
"<!-- ciprof-report -->"*"of main"*) ok "the note is ciprof's own rendering of the fork's run" ;;
*) check_failed "the posted note is not a ciprof report: $posted" ;;
esac
case "$posted" in
*"**4 runs of this commit:**"*) ok "the note judged the 4 runs of the fork's commit" ;;
*) check_failed "the note did not judge the fork's 4 runs: $posted" ;;
esac
# head-runs is the fork's data: anything but a number from 2 to 20 is ignored
printf '4 --format html -o /tmp/x\n' >"$TMP/fork-artifacts/ciprof-report/head-runs"
pipeline fnbad main "${MAIN_ENV[@]}" --env CI_PIPELINE_SOURCE=schedule --env CI_PROJECT_ID=5 \
	--var CIPROF_FORK_NOTES=true --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "the schedule with a hostile head-runs" 0 fnbad
expect_grep "a hostile head-runs is ignored" "$TMP/fnbad.out" "!7: the artifacts' head-runs is not a number from 2 to 20; ignored"
expect_grep "the note is still rendered and posted" "$TMP/fnbad.out" "1 note(s) posted or updated"
# a head pipeline for another commit (the MR moved on): nothing is posted
forge_start forkstale gitlab --number 7 --fork-project 6 --fork-artifacts "$TMP/fork-artifacts" \
	--head-sha "$FEATURE_SHA" --pipeline-sha "$MAIN_SHA"
pipeline fstale main "${MAIN_ENV[@]}" --env CI_PIPELINE_SOURCE=schedule --env CI_PROJECT_ID=5 \
	--var CIPROF_FORK_NOTES=true --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "the schedule with a stale pipeline is green" 0 fstale
expect_grep "the stale pipeline is skipped" "$TMP/fstale.out" "its head pipeline is not for its head commit; nothing posted"
expect_eq "nothing posted for it" "$(forge_query "$FORGE_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
CI_FILE=("$EXAMPLE" --job ciprof)

# --- 14. a pinned release: installed when its SHA-256 matches, refused otherwise -------------
# (last: the release then sits in the ciprof-bin cache, and a build from source would rebuild)
"$CIPROF_SRC/scripts/package" --build-dir "$CIPROF_BUILD" --no-source --out "$TMP/dist" >"$TMP/package.out" 2>&1 ||
	fail "scripts/package failed: $(cat "$TMP/package.out")"
TGZ=$(ls "$TMP/dist"/*-linux-*.tar.gz)
SUM=$(sha256sum "$TGZ" | cut -d' ' -f1)
BAD=$(printf '%s' "$SUM" | tr '0-9a-f' '1-9a-f0')
pipeline release feature "${MR_ENV[@]}" --var CIPROF_RELEASE_URL="file://$TGZ" --var CIPROF_RELEASE_SHA256="$SUM"
expect_rc "MR pipeline with a pinned release" 0 release
expect_grep "the release is installed" "$TMP/release.out" "installed $(basename "$TGZ") (SHA-256 checked)"
expect_no_grep "nothing is built or fetched" "$TMP/release.out" "ciprof: built from"
expect_grep "the release's ciprof reports" "$TMP/release.out" "ciprof: verdict"
pipeline badsum feature "${MR_ENV[@]}" --var CIPROF_RELEASE_URL="file://$TGZ" --var CIPROF_RELEASE_SHA256="$BAD"
expect_rc "a wrong SHA-256 fails the job" 1 badsum
expect_grep "the mismatch is said" "$TMP/badsum.out" "does not have the SHA-256 in CIPROF_RELEASE_SHA256; not installed"

outs=("$TMP"/{main,mr1,mr2,opts,twice,cap,needfail,four,rel,notoken,branch,comp,compgate,try1,retry,shallow,mainfail,release,badsum,mirror,badjob,otherhost,rgA,rgB,histro,hist1,hist2,refill,forkmr,schedprof,fnotes,fnbad,fstale}.out)
expect_no_token "every job's output" "${outs[@]}"
for secret in "$JOB_TOKEN" "$HISTORY_TOKEN"; do
	grep -qF -- "$secret" "${outs[@]}" "$GIT_LOG" && check_failed "a git token appears in the output or the server's log" ||
		ok "a git token appears in no output"
done
finish
