#!/usr/bin/env bash
# ciprof comment against a fake GitHub API on loopback: create then update one sticky comment,
# all pages listed, a foreign marker left alone, Actions' installation token, fork PRs'
# read-only token (403), retries on 5xx and 429, a create that failed yet happened, dry runs,
# the job summary, and the token absent from every output.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

cd "$TMP" || fail "no temp dir"
cat >event.json <<'EOF'
{"action": "synchronize", "number": 7,
 "pull_request": {"number": 7, "base": {"ref": "main"}, "head": {"ref": "feature"}}}
EOF
printf '## ciprof: 2 functions slower\n\n| test | base | head |\n|---|---|---|\n| a | 1 | 2 |\n' >body.md

# gh NAME [ciprof comment args...]: runs ciprof comment in a clean simulated Actions job.
gh() {
	local name=$1
	shift
	run_capture "$name" env -i PATH="$PATH" HOME="$TMP" GITHUB_ACTIONS=true \
		GITHUB_REPOSITORY=octo/widgets GITHUB_API_URL="${API_URL:-$FORGE_URL}" \
		GITHUB_EVENT_PATH="${EVENT-$TMP/event.json}" GITHUB_REF="${REF:-refs/pull/7/merge}" \
		GITHUB_TOKEN="${GH_TOKEN-$TOKEN}" GITHUB_STEP_SUMMARY="$TMP/summary.md" \
		CIPROF_HTTP_BACKOFF_MS=5 CIPROF_HTTP_MAX_WAIT_MS=3000 CIPROF_HTTP_TIMEOUT_MS=5000 \
		${EXTRA_ENV:-} "$CIPROF" comment "$@"
}

# --- 1. first run creates, second run updates the same comment -----------------------------
forge_start create github --seed 5 --foreign-marker --page-size 2
gh create1 --body-file body.md
expect_rc "first comment" 0 create1
gh create2 --body-file body.md
expect_rc "second comment" 0 create2
L=$FORGE_LOG
expect_eq "one POST in all" "$(forge_count "$L" POST '/issues/7/comments$')" 1
expect_eq "the POST created it" "$(forge_count "$L" POST '/issues/7/comments$' 201)" 1
expect_eq "one PATCH in all" "$(forge_count "$L" PATCH '/issues/comments/')" 1
created=1006 # after the 5 seeded comments (1000..1004) and the foreign one (1005)
expect_eq "the PATCH went to the comment created" \
	"$(forge_query "$L" '[r["path"] for r in reqs if r["method"] == "PATCH"][0]')" \
	"/repos/octo/widgets/issues/comments/$created"
expect_eq "the foreign marker comment (1005) was never written" \
	"$(forge_query "$L" 'sum(1 for r in reqs if r["path"].endswith("/1005") and r["method"] != "GET")')" 0
expect_eq "bodies start with the marker" \
	"$(forge_query "$L" 'all(r["body"]["body"].startswith("<!-- ciprof-report -->\n## ciprof") for r in reqs if r["method"] in ("POST", "PATCH"))')" True
# 6 comments in pages of 2 before the first run (3 pages), 7 before the second (4 pages)
expect_eq "every page listed, both runs" \
	"$(forge_query "$L" '[__import__("urllib.parse").parse.parse_qs(r["query"]).get("page", ["1"])[0] for r in reqs if r["method"] == "GET" and r["path"].endswith("/comments")]')" \
	"['1', '2', '3', '1', '2', '3', '4']"
expect_eq "every request carried the token" "$(forge_query "$L" 'all(r["auth"] == "ok" for r in reqs)')" True
expect_eq "JSON requests" "$(forge_query "$L" 'all(r["content_type"] == "application/json" for r in reqs)')" True
expect_grep "first run says posted" "$TMP/create1.err" "posted comment $created on PR #7"
expect_grep "second run says updated" "$TMP/create2.err" "updated comment $created on PR #7"
expect_grep "the foreign marker is mentioned" "$TMP/create2.err" "not by ciprof-bot: left alone"
expect_eq "job summary written twice" "$(grep -c '^## ciprof: 2 functions slower' "$TMP/summary.md")" 2
expect_no_token "create/update" "$TMP"/create*.out "$TMP"/create*.err "$TMP/summary.md"
forge_stop_all

# --- 2. Actions' GITHUB_TOKEN: GET /user is refused, comments are github-actions[bot]'s ---
forge_start install github --installation-token --existing --foreign-marker --seed 1
gh install --body-file body.md
expect_rc "installation token" 0 install
expect_eq "no POST" "$(forge_count "$FORGE_LOG" POST .)" 0
expect_eq "PATCH of the bot's comment (1002, after a human's and a foreign marker)" \
	"$(forge_query "$FORGE_LOG" '[r["path"] for r in reqs if r["method"] == "PATCH"]')" \
	"['/repos/octo/widgets/issues/comments/1002']"
forge_stop_all

# --- 3. fork PR: read-only token, 403 on write (the server even echoes the token) ----------
forge_start readonly github --fault 'POST:/comments:403:*' --leak-token
gh readonly --body-file body.md
expect_rc "403 is a warning" 0 readonly
expect_grep "403 is explained" "$TMP/readonly.err" "HTTP 403: Resource not accessible by integration"
expect_grep "workflow_run is suggested" "$TMP/readonly.err" "workflow_run"
expect_grep "the echoed token is redacted" "$TMP/readonly.err" "(token ***)"
gh readonly_strict --body-file body.md --strict
expect_rc "403 with --strict" 3 readonly_strict
expect_grep "--strict says error" "$TMP/readonly_strict.err" "error: comment not posted"
expect_no_token "403" "$TMP"/readonly*.out "$TMP"/readonly*.err
forge_stop_all

# --- 4. retries: 500 on listing, 429 with Retry-After: 0 on create --------------------------
# (then GitHub's primary rate limit: 403 with X-RateLimit-Remaining: 0, reset in the past)
forge_start retry github --fault 'GET:/comments:500:1' --fault 'POST:/comments:429:1:Retry-After=0' \
	--fault 'GET:/user:503:1' --fault 'GET:/comments:403:1:X-RateLimit-Remaining=0:X-RateLimit-Reset=1'
gh retry -vv --body-file body.md
expect_rc "retried" 0 retry
expect_eq "GET /user answered 503 then 200" "$(forge_query "$FORGE_LOG" '[r["status"] for r in reqs if r["path"] == "/user"]')" "[503, 200]"
expect_eq "listing answered 500, 403 (rate limit), then 200" "$(forge_query "$FORGE_LOG" '[r["status"] for r in reqs if r["method"] == "GET" and r["path"].endswith("/comments")]')" "[500, 403, 200]"
expect_no_token "debug log" "$TMP/retry.out" "$TMP/retry.err"
expect_eq "create answered 429 then 201" "$(forge_query "$FORGE_LOG" '[r["status"] for r in reqs if r["method"] == "POST"]')" "[429, 201]"
expect_grep "retries are logged" "$TMP/retry.err" "retrying in"
forge_stop_all

# a rate limit longer than the waiting budget is not waited for
forge_start limited github --fault 'GET:/comments:429:*:Retry-After=3600'
start=$(date +%s)
gh limited --body-file body.md
expect_rc "long rate limit: a warning" 0 limited
expect_grep "long rate limit explained" "$TMP/limited.err" "asks to wait 3600 s, more than the 3 s allowed"
[ $(($(date +%s) - start)) -lt 20 ] && ok "long rate limit: no long wait" || check_failed "waited for the rate limit"
forge_stop_all

# --- 5. a create that failed with 502 although the comment was made: no duplicate ---------
forge_start flaky github --fault 'POST:/comments:502:1:Apply=1'
gh flaky --body-file body.md
expect_rc "502 after create" 0 flaky
expect_eq "one POST (502), then the comment found and PATCHed" \
	"$(forge_query "$FORGE_LOG" '[(r["method"], r["status"]) for r in reqs if r["method"] != "GET"]')" \
	"[('POST', 502), ('PATCH', 200)]"
forge_stop_all

# --- 6. persistent 5xx: bounded, a warning, exit 0 (3 with --strict) -----------------------
forge_start down github --fault 'GET:/comments:503:*'
gh down --body-file body.md
expect_rc "server down" 0 down
expect_grep "attempts are bounded" "$TMP/down.err" "HTTP 503 after 5 attempts"
gh down_strict --body-file body.md --strict
expect_rc "server down, --strict" 3 down_strict
forge_stop_all

# --- 7. the next page on another host: the token is not sent there -------------------------
forge_start evil github --seed 4 --link-host 127.0.0.2:9
gh evil --body-file body.md --strict
expect_rc "foreign Link refused" 3 evil
expect_grep "foreign Link explained" "$TMP/evil.err" "refusing to send the token there"
expect_eq "no write" "$(forge_count "$FORGE_LOG" POST .)" 0
forge_stop_all

# --- 8. dry runs --------------------------------------------------------------------------
forge_start dry github --existing
GH_TOKEN="" gh dry_notoken --dry-run --body-file body.md
expect_rc "dry run without a token" 0 dry_notoken
expect_grep "dry run prints the POST" "$TMP/dry_notoken.out" "POST $FORGE_URL/repos/octo/widgets/issues/7/comments"
expect_grep "dry run prints the body" "$TMP/dry_notoken.out" "## ciprof: 2 functions slower"
expect_grep "dry run prints the marker" "$TMP/dry_notoken.out" "<!-- ciprof-report -->"
expect_eq "no request without a token" "$(wc -l <"$FORGE_LOG")" 0
gh dry_token --dry-run --body-file body.md
expect_rc "dry run with a token" 0 dry_token
expect_grep "dry run finds the comment to PATCH" "$TMP/dry_token.out" "PATCH $FORGE_URL/repos/octo/widgets/issues/comments/1000"
expect_eq "dry run writes nothing" "$(forge_query "$FORGE_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
expect_no_token "dry runs" "$TMP"/dry_*.out "$TMP"/dry_*.err
forge_stop_all

# --- 9. PR number from GITHUB_REF; not a PR; comments off; head check; Enterprise prefix ---
forge_start misc github --prefix /api/v3
EVENT="" API_URL="$FORGE_URL/api/v3" gh ref --body-file body.md
expect_rc "PR from GITHUB_REF, API under /api/v3" 0 ref
expect_eq "posted under /api/v3" "$(forge_count "$FORGE_LOG" POST '^/api/v3/repos/octo/widgets/issues/7/comments$' 201)" 1
rm -f "$TMP/summary.md"
EVENT="" REF=refs/heads/main API_URL="$FORGE_URL/api/v3" gh push --body-file body.md --strict
expect_rc "not a PR is not a failure, even --strict" 0 push
expect_grep "not a PR explained" "$TMP/push.err" "not for a pull request"
expect_grep "summary written outside PRs too" "$TMP/summary.md" "functions slower"
EXTRA_ENV="CIPROF_COMMENT_ENABLED=false" API_URL="$FORGE_URL/api/v3" gh off --body-file body.md
expect_rc "comments off" 0 off
expect_grep "comments off explained" "$TMP/off.err" "comment.enabled is false (environment (CIPROF_COMMENT_ENABLED))"
EXTRA_ENV="CIPROF_PR_NUMBER=7 CIPROF_PR_HEAD_SHA=fedcba9876" EVENT="" REF=refs/heads/main \
	API_URL="$FORGE_URL/api/v3" gh wrong_head --body-file body.md --strict
expect_rc "wrong head commit refused" 3 wrong_head
expect_grep "wrong head explained" "$TMP/wrong_head.err" "not fedcba9876 (CIPROF_PR_HEAD_SHA)"
EXTRA_ENV="CIPROF_PR_NUMBER=7 CIPROF_PR_HEAD_SHA=0123456789ab" EVENT="" REF=refs/heads/main \
	API_URL="$FORGE_URL/api/v3" gh right_head --body-file body.md --strict
expect_rc "right head commit, PR from CIPROF_PR_NUMBER" 0 right_head
expect_eq "posted once, then updated" "$(forge_query "$FORGE_LOG" '[r["method"] for r in reqs if r["method"] != "GET"]')" "['POST', 'PATCH']"
GH_TOKEN="" gh notoken --body-file body.md
expect_rc "no token: a warning" 0 notoken
expect_grep "no token explained" "$TMP/notoken.err" "GITHUB_TOKEN is not set"
expect_no_token "misc" "$TMP"/{ref,push,off,wrong_head,right_head}.{out,err}
forge_stop_all

# --- 10. the default body: 'ciprof report' of the latest run against the PR's base -------
if "$CIPROF" run --db "$TMP/db/ciprof.db" -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' \
	>/dev/null 2>"$TMP/run.err"; then
	forge_start report github
	EXTRA_ENV="CIPROF_DB=$TMP/db/ciprof.db" gh report -v
	expect_rc "default body" 0 report
	expect_grep "the report is taken against the PR's base" "$TMP/report.err" \
		"body from 'ciprof report --base main' (the pull request's target branch)"
	expect_eq "the posted body is the report" \
		"$(forge_query "$FORGE_LOG" '[r["body"]["body"].startswith("<!-- ciprof-report -->\n") and "ciprof" in r["body"]["body"] for r in reqs if r["method"] == "POST"]')" "[True]"
	EXTRA_ENV="CIPROF_DB=$TMP/db/none.db" gh report_nodb --strict
	expect_rc "no database: not posted, --strict" 3 report_nodb
	expect_grep "the report's failure is said" "$TMP/report_nodb.err" "'ciprof report --format md --base main' failed"
	forge_stop_all
else
	echo "note [$TEST_NAME]: default body not tested: ciprof run cannot sample here ($(head -n1 "$TMP/run.err"))"
fi

# --- 10a. the default body is of this job's run, never another branch's ------------------
# One database, four imported runs: main twice, this PR's head (feature, 1111...), then
# another branch's (other, 2222...), the newest. The PR job's checkout is the merge commit
# (3333..., GITHUB_SHA); the event names the PR's head.
printf 'suite;main;work 2000\nsuite;main;rest 1000\n' >base.folded
printf 'suite;main;work 3000\nsuite;main;rest 1000\n' >head.folded
DB10=$TMP/db10/ciprof.db
mkdir -p "$TMP/db10"
for r in main:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:base main:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:base \
	feature:1111111111111111111111111111111111111111:head other:2222222222222222222222222222222222222222:head; do
	IFS=: read -r br sha f <<<"$r"
	run_capture imp10 "$CIPROF" import --db "$DB10" --format folded --branch "$br" --commit "$sha" \
		--test t "$f.folded"
	[ "$RC" -eq 0 ] || expect_rc "import $br" 0 imp10
done
printf '%s\n' '{"action": "synchronize", "number": 7, "pull_request": {"number": 7,' \
	'"base": {"ref": "main"}, "head": {"ref": "feature", "sha": "1111111111111111111111111111111111111111"}}}' \
	>event_head.json
forge_start ownrun github
EXTRA_ENV="CIPROF_DB=$DB10 GITHUB_SHA=3333333333333333333333333333333333333333 GITHUB_HEAD_REF=feature" \
	EVENT="$TMP/event_head.json" gh ownrun --strict
expect_rc "the PR's run is posted, though another branch's is newer" 0 ownrun
expect_grep "the choice is said" "$TMP/ownrun.err" \
	"the newest run (4) is of branch 'other' at 222222222222, not this job's: reporting run 3 instead"
expect_eq "the posted body reports the PR head's run, not the other branch's" \
	"$(forge_query "$FORGE_LOG" '[("1111111" in r["body"]["body"], "2222222" in r["body"]["body"]) for r in reqs if r["method"] == "POST"]')" \
	"[(True, False)]"
# the job's commit alone (no head in the event, no branch variable) finds it too
EXTRA_ENV="CIPROF_DB=$DB10 GITHUB_SHA=1111111111111111111111111111111111111111" gh ownrun_sha --strict
expect_rc "found by GITHUB_SHA" 0 ownrun_sha
expect_grep "found by GITHUB_SHA: run 3" "$TMP/ownrun_sha.err" "reporting run 3 instead"
forge_stop_all
# no run of this job at all: a warning and nothing posted (exit 0), exit 3 with --strict
forge_start norun github
: >"$TMP/summary.md"
EXTRA_ENV="CIPROF_DB=$DB10 GITHUB_SHA=3333333333333333333333333333333333333333 GITHUB_HEAD_REF=nope" \
	gh norun
expect_rc "no run of this job: not posted" 0 norun
expect_grep "not posted, said" "$TMP/norun.err" \
	"warning: comment not posted: no run of this job's commit 333333333333 or branch 'nope'"
expect_grep "the newest run named" "$TMP/norun.err" "the newest, run 4, is of branch 'other'"
EXTRA_ENV="CIPROF_DB=$DB10 GITHUB_SHA=3333333333333333333333333333333333333333 GITHUB_HEAD_REF=nope" \
	gh norun_strict --strict
expect_rc "no run of this job, --strict" 3 norun_strict
expect_eq "nothing posted" "$(forge_count "$FORGE_LOG" POST .)" 0
expect_eq "no report in the job summary" "$(wc -c <"$TMP/summary.md")" 0
forge_stop_all

# --- 10b. --id: the jobs of a CI matrix keep one comment each ---------------------------
forge_start ids github
gh id_linux1 --id linux-gcc --body-file body.md
gh id_macos1 --id macos --body-file body.md
gh id_linux2 --id linux-gcc --body-file body.md
gh id_plain --body-file body.md
for n in id_linux1 id_macos1 id_linux2 id_plain; do expect_rc "--id $n" 0 "$n"; done
L=$FORGE_LOG
expect_eq "three comments created (linux-gcc, macos, no id)" "$(forge_count "$L" POST '/issues/7/comments$' 201)" 3
expect_eq "the second linux-gcc run updated the first linux-gcc comment" \
	"$(forge_query "$L" '[r["path"].rsplit("/", 1)[1] for r in reqs if r["method"] == "PATCH"]')" "['1000']"
expect_eq "each body carries its id's marker" \
	"$(forge_query "$L" '[r["body"]["body"].split("\n", 1)[0] for r in reqs if r["method"] in ("POST", "PATCH")]')" \
	"['<!-- ciprof-report id=linux-gcc -->', '<!-- ciprof-report id=macos -->', '<!-- ciprof-report id=linux-gcc -->', '<!-- ciprof-report -->']"
forge_stop_all
run_capture badid "$CIPROF" comment --id 'a -->x' --dry-run
expect_rc "an --id that could end the marker" 2 badid
expect_grep "bad --id explained" "$TMP/badid.err" "--id takes 1 to 64"

# --- 11. usage errors ---------------------------------------------------------------------
run_capture usage "$CIPROF" comment --provider bitbucket
expect_rc "unknown provider" 2 usage
run_capture nofile env -i PATH="$PATH" "$CIPROF" comment --provider github --body-file "$TMP/none.md"
expect_rc "missing body file: a warning" 0 nofile
expect_grep "missing body file named" "$TMP/nofile.err" "none.md"

finish
