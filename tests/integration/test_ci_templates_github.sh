#!/usr/bin/env bash
# The GitHub template end to end in a simulated Actions runner (ci_sim.py): the example
# workflow ciprof.yml with the composite action, on a tiny CMake project, against a fake
# GitHub API on loopback. A push to main saves the database to the (emulated) cache; a pull
# request restores it, reports, uploads the artifact and posts the sticky comment; the next
# push to the PR updates it, also when the suite fails; a fork's PR only uploads, and the
# workflow_run companion ciprof-comment.yml posts that report. actions/checkout is skipped
# (the work tree is prepared here); the cache and artifact actions are emulated; sudo,
# apt-get and sysctl are recording stand-ins, so nothing on this machine is changed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
command -v cmake >/dev/null || fail "cmake is needed"
if ! "$CIPROF" run --no-store -- true >/dev/null 2>"$TMP/probe.err"; then
	echo "SKIP [$TEST_NAME]: ciprof run cannot sample here: $(head -n1 "$TMP/probe.err")"
	exit 0
fi

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
	return getenv("SPIN_FAIL") ? 1 : 0;
}
EOF
printf 'build/\n' >.gitignore
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A &&
	git -c user.name=t -c user.email=t@e commit -q -m "widgets" || fail "git"
MAIN_SHA=$(git rev-parse HEAD)
git checkout -q -b feature
sed -i 's/spin 60/spin 90/' CMakeLists.txt
git -c user.name=t -c user.email=t@e commit -q -am "slower" || fail "git"
PR_SHA=$(git rev-parse HEAD)

# job NAME RUN_ID EVENT_NAME REF BRANCH WORKFLOW_FILE JOB [extra --env...]: one simulated job
# on a fresh checkout of BRANCH ($WS/.ciprof removed: only the cache brings it back), with the
# event payload $TMP/NAME.event.json (or $EVENT_FILE).
job() {
	local name=$1 run_id=$2 event=$3 ref=$4 branch=$5 wf=$6 jobname=$7
	shift 7
	git -C "$WS" checkout -q "$branch"
	rm -rf "$WS/.ciprof" "$WS/ciprof-report"
	local ref_name=${ref#refs/heads/}
	ref_name=${ref_name#refs/pull/}
	RC=0
	python3 "$SIM" github "$wf" --job "$jobname" --action-dir "$ACTION" \
		--event "${EVENT_FILE:-$TMP/$name.event.json}" --state "$STATE" --log "$TMP/$name.log" \
		--steps-json "$TMP/$name.steps.json" \
		--env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env CI=true --env GITHUB_ACTIONS=true \
		--env GITHUB_WORKSPACE="$WS" --env RUNNER_TEMP="$RT" --env GITHUB_EVENT_NAME="$event" \
		--env GITHUB_EVENT_PATH="${EVENT_FILE:-$TMP/$name.event.json}" --env GITHUB_REF="$ref" \
		--env GITHUB_REF_NAME="$ref_name" --env GITHUB_REPOSITORY=octo/widgets \
		--env GITHUB_API_URL="$FORGE_URL" --env GITHUB_RUN_ID="$run_id" --env GITHUB_JOB="$jobname" \
		--env GITHUB_SHA="$(git -C "$WS" rev-parse HEAD)" \
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

pr_event() { # pr_event FILE NUMBER HEAD_SHA HEAD_REPO
	cat >"$1" <<EOF
{"action": "synchronize", "number": $2,
 "pull_request": {"number": $2, "base": {"ref": "main"},
                  "head": {"ref": "feature", "sha": "$3", "repo": {"full_name": "$4"}}},
 "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
}

forge_start api github --number 7 --head-sha "$PR_SHA"
API_LOG=$FORGE_LOG

# --- 1. push to main: the baseline, saved to the cache -------------------------------------
cat >"$TMP/push.event.json" <<'EOF'
{"ref": "refs/heads/main", "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
job push 100 push refs/heads/main main "$WF/ciprof.yml" profile
expect_rc "push to main" 0 push
expect_eq "build step ran" "$(step_outcome push "ciprof - build")" success
expect_eq "checkout is skipped (not simulated)" "$(grep -c "skipped: 'uses: actions/checkout@v4' is not simulated" "$TMP/push.out")" 1
expect_grep "paranoid 4 is lowered to 2" "$TMP/shims.log" "sudo sysctl -w kernel.perf_event_paranoid=2"
expect_eq "database saved on main" "$(step_outcome push "ciprof - save the base branch's database")" success
[ -f "$STATE/gh-cache/ciprof-db-main-100-1/ciprof.db" ] && ok "cache holds the database" ||
	check_failed "no database in the emulated cache: $(ls -R "$STATE" | head)"
expect_grep "job summary on main" "$TMP/push.summary.md" "<!-- ciprof-report -->"
expect_grep "not a PR: no comment" "$TMP/push.out" "not for a pull request"
expect_eq "no API write on main" "$(forge_query "$API_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0

# --- 2. a pull request: restore, run, report, artifact, comment ----------------------------
pr_event "$TMP/pr1.event.json" 7 "$PR_SHA" octo/widgets
job pr1 101 pull_request refs/pull/7/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "pull request" 0 pr1
expect_grep "main's database restored" "$TMP/pr1.out" "restored ciprof-db-main-100-1"
expect_eq "not saved on a PR" "$(step_outcome pr1 "ciprof - save the base branch's database")" skipped
ART="$STATE/gh-artifacts/101/ciprof-report"
for f in report.md report.html report.svg report.json; do
	[ -s "$ART/$f" ] && ok "artifact holds $f" || check_failed "artifact lacks $f"
done
expect_eq "artifact names the PR" "$(cat "$ART/pr-number" 2>/dev/null)" 7
expect_grep "the report compares with main" "$ART/report.md" "main"
expect_grep "job summary on the PR" "$TMP/pr1.summary.md" "<!-- ciprof-report -->"
expect_eq "one POST" "$(forge_count "$API_LOG" POST '/issues/7/comments$' 201)" 1
expect_eq "posted body is the report" \
	"$(forge_query "$API_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"] == open("'"$ART/report.md"'").read()')" True

# --- 3. the next push to the PR updates the comment, also when the suite fails -------------
EVENT_FILE="$TMP/pr1.event.json" job pr2 102 pull_request refs/pull/7/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature --env SPIN_FAIL=1
expect_rc "failing suite fails the job" 1 pr2
expect_grep "the suite's failure is said" "$TMP/pr2.out" "the test command failed"
expect_eq "still reported" "$(step_outcome pr2 "ciprof - report")" success
expect_eq "still one POST" "$(forge_count "$API_LOG" POST '/issues/7/comments$')" 1
expect_eq "one PATCH of that comment" \
	"$(forge_query "$API_LOG" '[r["path"] for r in reqs if r["method"] == "PATCH"]')" \
	"['/repos/octo/widgets/issues/comments/1000']"

# --- 4. a fork's pull request: no comment from its run, the companion posts it -------------
forge_stop_all
forge_start fork github --number 8 --head-sha "$PR_SHA"
FORK_LOG=$FORGE_LOG
pr_event "$TMP/fork.event.json" 8 "$PR_SHA" mallory/widgets
job fork 103 pull_request refs/pull/8/merge feature "$WF/ciprof.yml" profile \
	--env GITHUB_BASE_REF=main --env GITHUB_HEAD_REF=feature
expect_rc "fork PR run" 0 fork
expect_grep "fork PR explained" "$TMP/fork.out" "pull request from the fork mallory/widgets"
expect_eq "the fork's run writes nothing" "$(forge_query "$FORK_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
expect_eq "its artifact names PR 8" "$(cat "$STATE/gh-artifacts/103/ciprof-report/pr-number" 2>/dev/null)" 8
cat >"$TMP/companion.event.json" <<EOF
{"action": "completed",
 "workflow_run": {"id": 103, "event": "pull_request", "conclusion": "success",
                  "head_sha": "$PR_SHA", "pull_requests": []},
 "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
job companion 104 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "workflow_run companion" 0 companion
expect_grep "artifact downloaded" "$TMP/companion.out" "ciprof-report of run 103"
expect_eq "the companion skips the suite" "$(step_outcome companion "ciprof - run the suite")" skipped
expect_eq "the companion checked the PR's head, then posted" \
	"$(forge_query "$FORK_LOG" '[(r["method"], r["path"]) for r in reqs if r["method"] != "GET" or "/pulls/" in r["path"]]')" \
	"[('GET', '/repos/octo/widgets/pulls/8'), ('POST', '/repos/octo/widgets/issues/8/comments')]"
# a report for another commit is not posted
sed "s/$PR_SHA/$MAIN_SHA/" "$TMP/companion.event.json" >"$TMP/stale.event.json"
job stale 105 workflow_run refs/heads/main main "$WF/ciprof-comment.yml" comment
expect_rc "stale companion: a warning" 0 stale
expect_grep "stale report refused" "$TMP/stale.out" "the report is for another commit"
expect_eq "nothing more posted" "$(forge_count "$FORK_LOG" POST .)" 1

# --- the token ------------------------------------------------------------------------------
expect_no_token "every job's output" "$TMP"/{push,pr1,pr2,fork,companion,stale}.out \
	"$TMP"/*.summary.md
finish
