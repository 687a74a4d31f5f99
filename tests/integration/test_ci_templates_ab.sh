#!/usr/bin/env bash
# The templates' A/B mode end to end in the simulated runners (ci_sim.py), on a tiny CMake
# project whose pull request makes one test 3x slower: GitHub (workflows/ciprof-ab.yml, input
# ab: 'true') and GitLab (CIPROF_AB=true) check out the merge-base in a worktree, build it with
# the build command, run ciprof ab, keep the reports and post the comment, with no cache. sudo,
# apt-get and sysctl are recording stand-ins; the forge is a fake API on loopback.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/setup installs it)"
command -v cmake >/dev/null || fail "cmake is needed"
require_sampling

SIM="$CIPROF_SRC/tests/integration/ci_sim.py"
WS="$TMP/ws"
STATE="$TMP/state"
RT="$TMP/runner-temp"
SHIMS="$TMP/shims"
mkdir -p "$WS" "$STATE" "$RT" "$SHIMS"
for tool in sudo sysctl apt-get; do
	printf '#!/bin/sh\necho "%s $*" >>"$SHIM_LOG"\n' "$tool" >"$SHIMS/$tool"
	chmod +x "$SHIMS/$tool"
done
echo 2 >"$TMP/paranoid"

cd "$WS" || fail "no work tree"
cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(widgets C)
enable_testing()
add_executable(spin spin.c)
add_test(NAME spin_small COMMAND spin 20)
add_test(NAME spin_large COMMAND spin 30)
EOF
cp "$CIPROF_SRC/tests/integration/data/spin.c" spin.c
printf 'build/\n' >.gitignore
git init -q -b main . && git -c user.name=t -c user.email=t@e add -A &&
	git -c user.name=t -c user.email=t@e commit -q -m "widgets" || fail "git"
git checkout -q -b feature
sed -i 's/spin 30)/spin 90)/' CMakeLists.txt
git -c user.name=t -c user.email=t@e commit -q -am "slower" || fail "git"
PR_SHA=$(git rev-parse HEAD)
BUILD='cmake -S . -B build >/dev/null && cmake --build build >/dev/null'
bash -c "$BUILD" || fail "cannot build the project"

# A report of the planted slowdown: A/B heading, spin_large slower. spin_large is ~30 ms of CPU a
# run: at 499 Hz and 4 rounds (15-30 samples a side, 3 degrees of freedom) its 3x change went
# unflagged in both jobs of one full ctest run under load 9-11, so 4999 Hz and up to 6 rounds;
# on a mismatch every item's figures are printed. It failed again at 4999 Hz (+230 %, p 0.29):
# both tests run one program, and under load ciprof read a test's start only after the test
# ended, so that run's samples went outside tests and the rounds' ratios swung; such a process
# is now named by elimination (test_ctest_late.sh, docs/attribution.md).
check_report() { # WHAT FILE
	expect_grep "$1: headed A/B on one machine" "$2" "A/B on one machine:"
	python3 - "${2%.md}.json" <<'PY' || check_failed "$1: the JSON report is not as expected (above)"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in r["tests"]}
ok = r["verdict"] == "regression" and t.get("spin_large", {}).get("kind") == "regression" \
    and not t.get("spin_small", {}).get("significant") and r["ab"]["rounds"] >= 1
if not ok:
    print(f"  mismatch: verdict {r['verdict']}, tests {[(k, v['kind']) for k, v in t.items()]}, "
          f"ab {r['ab']}", file=sys.stderr)
    for x in r["tests"] + r["functions"]:
        print(f"    {x.get('measure', 'test')} {x['name']!r}: change {x.get('change')}, "
              f"p {x.get('p_value')}, q {x.get('q_value')}, kind {x.get('kind')}, "
              f"tested {x.get('tested')}, noise {x.get('noise_cv')}, "
              f"seconds {x.get('base_seconds')} -> {x.get('head_seconds')}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# --- GitHub ----------------------------------------------------------------------------------
forge_start api github --number 7 --head-sha "$PR_SHA" --timeout 900 # the jobs build ciprof first
cat >"$TMP/pr.event.json" <<EOF
{"action": "synchronize", "number": 7,
 "pull_request": {"number": 7, "base": {"ref": "main"},
                  "head": {"ref": "feature", "sha": "$PR_SHA", "repo": {"full_name": "octo/widgets"}}},
 "repository": {"full_name": "octo/widgets", "default_branch": "main"}}
EOF
# The example workflow, with this project's commands and a short budget.
SED_BUILD=${BUILD//&/\\&} # '&' is the match in a sed replacement
sed -e "s|build: .*|build: $SED_BUILD|" -e "s|ab-args: .*|ab-args: --max-rounds 6 --hz 4999|" \
	-e "s|command: .*|command: ctest --test-dir build|" \
	-e "s|run: cmake .*|run: $SED_BUILD|" \
	"$CIPROF_SRC/ci-templates/github/workflows/ciprof-ab.yml" >"$TMP/ciprof-ab.yml"
RC=0
python3 "$SIM" github "$TMP/ciprof-ab.yml" --job ab --action-dir "$CIPROF_SRC/ci-templates/github" \
	--event "$TMP/pr.event.json" --state "$STATE" --log "$TMP/gh.log" --steps-json "$TMP/gh.steps.json" \
	--env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env CI=true --env GITHUB_ACTIONS=true \
	--env GITHUB_WORKSPACE="$WS" --env RUNNER_TEMP="$RT" --env GITHUB_EVENT_NAME=pull_request \
	--env GITHUB_EVENT_PATH="$TMP/pr.event.json" --env GITHUB_REF=refs/pull/7/merge \
	--env GITHUB_REF_NAME=7/merge --env GITHUB_REPOSITORY=octo/widgets --env GITHUB_BASE_REF=main \
	--env GITHUB_HEAD_REF=feature --env GITHUB_API_URL="$FORGE_URL" --env GITHUB_RUN_ID=201 \
	--env GITHUB_JOB=ab --env GITHUB_SHA="$PR_SHA" --env GITHUB_STEP_SUMMARY="$TMP/gh.summary.md" \
	--env SIM_GITHUB_TOKEN="$TOKEN" --env CIPROF_PERF_PARANOID_FILE="$TMP/paranoid" \
	--env SHIM_LOG="$TMP/shims.log" --env CIPROF_HTTP_BACKOFF_MS=5 --env CIPROF_HTTP_MAX_WAIT_MS=3000 \
	>"$TMP/gh.out" 2>&1 </dev/null || RC=$?
ln -sf gh.out "$TMP/gh.err"
expect_rc "GitHub A/B job" 0 gh
step() { python3 -c 'import json,sys; print(",".join(s["outcome"] for s in json.load(open(sys.argv[1])) if s["name"] == sys.argv[2]) or "absent")' "$TMP/gh.steps.json" "$1"; }
expect_eq "the A/B step ran" "$(step "ciprof - A/B comparison with the merge-base")" success
expect_eq "no cache restored in A/B mode" "$(step "ciprof - restore the base branch's database")" skipped
expect_eq "no history report in A/B mode" "$(step "ciprof - report")" skipped
expect_grep "the merge-base is the base" "$TMP/gh.out" "base is the merge-base $(git -C "$WS" rev-parse main)"
ART="$STATE/gh-artifacts/201/ciprof-report"
for f in report.md report.html report.svg report.json; do
	[ -s "$ART/$f" ] && ok "GitHub artifact holds $f" || check_failed "GitHub artifact lacks $f"
done
check_report GitHub "$ART/report.md"
expect_eq "one POST of the comment" "$(forge_count "$FORGE_LOG" POST '/issues/7/comments$' 201)" 1
expect_eq "the comment is the A/B report" \
	"$(forge_query "$FORGE_LOG" '[r for r in reqs if r["method"] == "POST"][0]["body"]["body"] == open("'"$ART/report.md"'").read()')" True
[ -z "$(git -C "$WS" worktree list | sed -n 2p)" ] && ok "the base worktree is removed" ||
	check_failed "worktrees left: $(git -C "$WS" worktree list)"
forge_stop_all

# --- GitLab ----------------------------------------------------------------------------------
forge_start gl gitlab --number 7 --timeout 900
rm -rf "$WS/.ciprof" "$WS/ciprof-report"
RC=0
python3 "$SIM" gitlab "$CIPROF_SRC/ci-templates/gitlab/example.gitlab-ci.yml" \
	--template "$CIPROF_SRC/ci-templates/gitlab/ciprof.gitlab-ci.yml" --job ciprof --state "$STATE" \
	--log "$TMP/gl.log" --env PATH="$SHIMS:$PATH" --env HOME="$TMP" --env TMPDIR="$RT" --env CI=true \
	--env GITLAB_CI=true --env CI_PROJECT_DIR="$WS" --env CI_DEFAULT_BRANCH=main \
	--env CI_API_V4_URL="$FORGE_URL/api/v4" --env CI_PROJECT_ID=5 --env CI_JOB_NAME=ciprof \
	--env CI_COMMIT_SHA="$PR_SHA" --env SHIM_LOG="$TMP/shims.log" --env CIPROF_HTTP_BACKOFF_MS=5 \
	--env CIPROF_HTTP_MAX_WAIT_MS=3000 --env CI_PIPELINE_SOURCE=merge_request_event \
	--env CI_MERGE_REQUEST_IID=7 --env CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main \
	--env CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=feature --env CI_COMMIT_REF_NAME=feature \
	--var CIPROF_SOURCE_DIR="$CIPROF_SRC" --var CIPROF_GITLAB_TOKEN="$TOKEN" --var CIPROF_AB=true \
	--var CIPROF_AB_ARGS="--max-rounds 6 --hz 4999" --var CIPROF_BUILD_COMMAND="$BUILD" \
	--var CIPROF_COMMAND="ctest --test-dir build" >"$TMP/gl.out" 2>&1 </dev/null || RC=$?
ln -sf gl.out "$TMP/gl.err"
expect_rc "GitLab A/B job" 0 gl
GART="$STATE/gl-artifacts/ciprof/ciprof-report"
for f in report.md report.html report.svg report.json; do
	[ -s "$GART/$f" ] && ok "GitLab artifacts hold $f" || check_failed "GitLab artifacts lack $f"
done
check_report GitLab "$GART/report.md"
expect_no_grep "no history-mode run in A/B mode" "$TMP/gl.out" "the suite exited with status"
expect_eq "one POST of the note" "$(forge_count "$FORGE_LOG" POST '/api/v4/projects/5/merge_requests/7/notes$' 201)" 1
expect_no_token "every job's output" "$TMP"/gh.out "$TMP"/gl.out "$TMP"/gh.summary.md
finish
