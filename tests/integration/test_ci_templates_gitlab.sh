#!/usr/bin/env bash
# The GitLab template end to end in a simulated GitLab runner (ci_sim.py): example.gitlab-ci.yml
# extending .ciprof from ciprof.gitlab-ci.yml, on a tiny CMake project, against a fake GitLab
# API on loopback. The default branch's pipeline builds ciprof (cached for the next jobs),
# keeps the job's own before_script, does not override .ciprof.yml's rate and pushes the
# database to the (emulated) cache; merge request pipelines pull it, report, keep
# ciprof-report/ as exposed artifacts and post then update one MR note; CIPROF_RUN_OPTIONS
# reach ciprof run; an MR into a branch never profiled says why there is no baseline; a
# branch pipeline without an MR runs nothing. `include:` is not fetched (the template is
# passed in), image and tags are not simulated, and ciprof's source comes from
# CIPROF_SOURCE_DIR instead of a clone; sudo and apt-get are recording stand-ins.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
command -v cmake >/dev/null || fail "cmake is needed"
if ! "$CIPROF" run --no-store -- true >/dev/null 2>"$TMP/probe.err"; then
	skip "ciprof run cannot sample here: $(head -n1 "$TMP/probe.err")"
fi

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
cat >spin.c <<'EOF'
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void work(long n)
{
	for (long i = 0; i < n * 1000000L; i++)
		sink += (unsigned long)i * 2654435761u;
}
int main(int argc, char **argv)
{
	work(argc > 1 ? atol(argv[1]) : 10);
	return 0;
}
EOF
printf 'build/\n' >.gitignore
printf 'run:\n  hz: 173\n' >.ciprof.yml # the template must not override it
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A &&
	git -c user.name=t -c user.email=t@e commit -q -m "widgets" || fail "git"
git checkout -q -b feature
sed -i 's/spin 60/spin 90/' CMakeLists.txt
git -c user.name=t -c user.email=t@e commit -q -am "slower" || fail "git"

forge_start api gitlab --number 7
API_LOG=$FORGE_LOG

# pipeline NAME BRANCH [--env/--var ...]: one simulated job on a fresh checkout, of CI_FILE
# (the example's job "ciprof" unless changed).
CI_FILE=("$EXAMPLE" --job ciprof)
pipeline() {
	local name=$1 branch=$2
	shift 2
	git -C "$WS" checkout -q "$branch"
	rm -rf "$WS/.ciprof" "$WS/.ciprof-install" "$WS/.project-setup-ran" "$WS/ciprof-report" "$STATE/gl-artifacts"
	RC=0
	python3 "$SIM" gitlab "${CI_FILE[@]}" --template "$TEMPLATE" --state "$STATE" \
		--log "$TMP/$name.log" \
		--env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env TMPDIR="$RUNNER_TMP" --env CI=true \
		--env GITLAB_CI=true --env CI_PROJECT_DIR="$WS" --env CI_DEFAULT_BRANCH=main \
		--env CI_API_V4_URL="$FORGE_URL/api/v4" --env CI_PROJECT_ID=5 --env CI_JOB_NAME=ciprof \
		--env CI_COMMIT_SHA="$(git -C "$WS" rev-parse HEAD)" --env SHIM_LOG="$TMP/shims.log" \
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

# --- 3. the next MR pipeline updates the note --------------------------------------------
pipeline mr2 feature "${MR_ENV[@]}" --var CIPROF_GITLAB_TOKEN="$TOKEN"
expect_rc "second MR pipeline" 0 mr2
expect_eq "still one POST" "$(forge_count "$API_LOG" POST .)" 1
expect_eq "one PUT of that note" \
	"$(forge_query "$API_LOG" '[r["path"] for r in reqs if r["method"] == "PUT"]')" \
	"['/api/v4/projects/5/merge_requests/7/notes/1000']"

# --- 3b. CIPROF_RUN_OPTIONS reach ciprof run ----------------------------------------------
pipeline opts feature "${MR_ENV[@]}" --var CIPROF_RUN_OPTIONS="--tag suite=widgets --hz 211"
expect_rc "MR pipeline with CIPROF_RUN_OPTIONS" 0 opts
expect_grep "the option reaches ciprof run" "$TMP/opts.out" "at 211 Hz"
tags=$("$CIPROF" runs --db "$WS/.ciprof/ciprof.db" --limit 1 --format json 2>&1 |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["tags"].get("suite"))' 2>&1)
expect_eq "its tag is stored" "$tags" widgets

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

expect_no_token "every job's output" "$TMP"/{main,mr1,mr2,opts,rel,notoken,branch,comp,compgate}.out
finish
