#!/usr/bin/env bash
# ciprof comment against a fake GitLab API on loopback: one MR note created then updated (PUT),
# every page listed (X-Next-Page), system notes and a foreign marker left alone, a project
# given by path, 403 and missing tokens explained, retries on 5xx and 429, and the token
# (PRIVATE-TOKEN) absent from every output.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh"

cd "$TMP" || fail "no temp dir"
printf '## ciprof: no change\n\nNothing got slower.\n' >body.md

# gl NAME [ciprof comment args...]: ciprof comment in a clean simulated GitLab MR pipeline.
gl() {
	local name=$1
	shift
	run_capture "$name" env -i PATH="$PATH" HOME="$TMP" GITLAB_CI=true CI=true \
		CI_API_V4_URL="$FORGE_URL/api/v4" CI_PROJECT_ID="${PROJECT:-5}" \
		CI_MERGE_REQUEST_IID="${IID-7}" CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main \
		CIPROF_GITLAB_TOKEN="${GL_TOKEN-$TOKEN}" \
		CIPROF_HTTP_BACKOFF_MS=5 CIPROF_HTTP_MAX_WAIT_MS=3000 CIPROF_HTTP_TIMEOUT_MS=5000 \
		${EXTRA_ENV:-} "$CIPROF" comment "$@"
}

# --- 1. first run creates, second run updates the same note ------------------------------
forge_start create gitlab --seed 3 --foreign-marker --system-marker --page-size 2
gl create1 --body-file body.md
expect_rc "first note" 0 create1
gl create2 --body-file body.md
expect_rc "second note" 0 create2
L=$FORGE_LOG
notes=/api/v4/projects/5/merge_requests/7/notes
expect_eq "one POST in all" "$(forge_count "$L" POST "^$notes\$" 201)" 1
expect_eq "one PUT in all" "$(forge_count "$L" PUT "^$notes/")" 1
# seeded: 1000..1002 (humans), 1003 (foreign marker), 1004 (system note by ciprof's user)
expect_eq "the PUT went to the note created (1005)" \
	"$(forge_query "$L" '[(r["path"], r["status"]) for r in reqs if r["method"] == "PUT"]')" \
	"[('$notes/1005', 200)]"
expect_eq "no write to the foreign or the system note" \
	"$(forge_query "$L" 'sum(1 for r in reqs if r["method"] != "GET" and r["path"].endswith(("/1003", "/1004")))')" 0
expect_eq "bodies start with the marker" \
	"$(forge_query "$L" 'all(r["body"]["body"].startswith("<!-- ciprof-report -->\n## ciprof") for r in reqs if r["method"] in ("POST", "PUT"))')" True
expect_eq "every page listed, both runs (5 notes, then 6, by 2)" \
	"$(forge_query "$L" '[__import__("urllib.parse").parse.parse_qs(r["query"])["page"][0] for r in reqs if r["method"] == "GET" and r["path"].endswith("/notes")]')" \
	"['1', '2', '3', '1', '2', '3']"
expect_eq "notes listed oldest first" \
	"$(forge_query "$L" 'all("sort=asc" in r["query"] for r in reqs if r["path"].endswith("/notes") and r["method"] == "GET")')" True
expect_eq "every request carried PRIVATE-TOKEN" "$(forge_query "$L" 'all(r["auth"] == "ok" for r in reqs)')" True
expect_grep "first run says posted" "$TMP/create1.err" "posted comment 1005 on MR !7"
expect_grep "second run says updated" "$TMP/create2.err" "updated comment 1005 on MR !7"
expect_no_token "create/update" "$TMP"/create*.out "$TMP"/create*.err
forge_stop_all

# --- 2. a project given by path is URL-encoded --------------------------------------------
forge_start path gitlab --project 'group%2Fsub%2Fwidgets'
PROJECT=group/sub/widgets gl path --body-file body.md
expect_rc "project path" 0 path
expect_eq "posted to the encoded path" \
	"$(forge_count "$FORGE_LOG" POST '^/api/v4/projects/group%2Fsub%2Fwidgets/merge_requests/7/notes$' 201)" 1
forge_stop_all

# --- 3. 403: a token that may not write ---------------------------------------------------
forge_start denied gitlab --fault 'POST:/notes:403:*' --leak-token
gl denied --body-file body.md
expect_rc "403 is a warning" 0 denied
expect_grep "403 is explained" "$TMP/denied.err" "HTTP 403"
expect_grep "the fix is named" "$TMP/denied.err" "project access token with the 'api' scope"
expect_grep "the echoed token is redacted" "$TMP/denied.err" "(token ***)"
gl denied_strict --body-file body.md --strict
expect_rc "403 with --strict" 3 denied_strict
expect_no_token "403" "$TMP"/denied*.out "$TMP"/denied*.err
forge_stop_all

# --- 4. retries: 500 on listing, 429 (Retry-After: 0) on create, 502 on update -------------
forge_start retry gitlab --existing --fault 'GET:/notes:500:1' --fault 'PUT:/notes:429:1:Retry-After=0' \
	--fault 'PUT:/notes:502:1'
gl retry -v --body-file body.md
expect_rc "retried" 0 retry
expect_eq "listing answered 500 then 200" \
	"$(forge_query "$FORGE_LOG" '[r["status"] for r in reqs if r["method"] == "GET" and r["path"].endswith("/notes")]')" "[500, 200]"
expect_eq "update answered 429, 502, then 200" \
	"$(forge_query "$FORGE_LOG" '[r["status"] for r in reqs if r["method"] == "PUT"]')" "[429, 502, 200]"
expect_eq "no POST when ciprof's note exists" "$(forge_count "$FORGE_LOG" POST .)" 0
forge_stop_all

# --- 5. no token, no MR, wrong token -------------------------------------------------------
forge_start misc gitlab
GL_TOKEN="" gl notoken --body-file body.md
expect_rc "no token: a warning" 0 notoken
expect_grep "no token explained" "$TMP/notoken.err" "CIPROF_GITLAB_TOKEN is not set"
GL_TOKEN="" gl notoken_strict --body-file body.md --strict
expect_rc "no token, --strict" 3 notoken_strict
IID="" gl nomr --body-file body.md --strict
expect_rc "branch pipeline: nothing to do" 0 nomr
expect_grep "no MR explained" "$TMP/nomr.err" "not for a merge request"
GL_TOKEN="glpat-wrongwrongwrong" gl wrong --body-file body.md
expect_rc "wrong token: a warning" 0 wrong
expect_grep "401 explained" "$TMP/wrong.err" "CIPROF_GITLAB_TOKEN was rejected (HTTP 401)"
expect_no_grep "wrong token not printed" "$TMP/wrong.err" "glpat-wrongwrongwrong"
gl dry --dry-run --body-file body.md
expect_rc "dry run" 0 dry
expect_grep "dry run prints the POST" "$TMP/dry.out" "POST $FORGE_URL/api/v4/projects/5/merge_requests/7/notes"
expect_eq "dry run writes nothing" "$(forge_query "$FORGE_LOG" 'sum(1 for r in reqs if r["method"] != "GET")')" 0
expect_no_token "misc" "$TMP"/{notoken,nomr,wrong,dry}.{out,err}
forge_stop_all

finish
