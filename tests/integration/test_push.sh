#!/bin/bash
# ciprof push against a fake Pyroscope on loopback (fake_pyroscope.py), which decodes every
# profile it receives with `go tool pprof`: every sample and the test labels arrive, the
# application name carries branch/commit/ci/pr, authentication and the tenant header are
# right, retries stay within their budget, and the token is never printed.
source "$(dirname "$0")/lib.sh"

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
command -v go >/dev/null || fail "go (Debian's golang-go) is needed: scripts/setup installs it"
unset CIPROF_PUSH_TOKEN CIPROF_PUSH_PASSWORD CIPROF_PUSH_USER CIPROF_PUSH_SERVER CIPROF_PUSH_APP \
	CIPROF_PUSH_TENANT CIPROF_CONFIG
export CIPROF_HTTP_BACKOFF_MS=20 CIPROF_HTTP_TIMEOUT_MS=60000
TOKEN="psc_ciprofTestToken$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
PIDS=()
stop_all() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PIDS=()
}
trap 'stop_all; cleanup' EXIT

# start NAME [fake_pyroscope args]: sets URL and LOG.
start() {
	local name=$1
	shift
	LOG=$TMP/$name.jsonl
	mkdir -p "$TMP/$name.work"
	python3 "$CIPROF_SRC/tests/integration/fake_pyroscope.py" --port-file "$TMP/$name.port" \
		--log "$LOG" --workdir "$TMP/$name.work" --timeout 200 "$@" 2>"$TMP/$name.srv.err" &
	PIDS+=($!)
	local i
	for i in $(seq 200); do
		[ -s "$TMP/$name.port" ] && break
		sleep 0.05
	done
	[ -s "$TMP/$name.port" ] || fail "fake Pyroscope did not start: $(cat "$TMP/$name.srv.err")"
	URL="http://127.0.0.1:$(cat "$TMP/$name.port")"
}

# no_token FILE...: the token appears in none of them.
no_token() {
	local f
	for f in "$@"; do
		! grep -q "$TOKEN" "$f" || check_failed "the token was printed in $(basename "$f")"
	done
}

SYNTH=$CIPROF_BUILD/bench/storage/store_synth
DB=$TMP/h.db
"$SYNTH" --db "$DB" --runs 1 --branch main --seed 5 >/dev/null || fail "seeding"
# A second run, imported in a GitLab MR pipeline: ci and pr labels come from its metadata.
"$CIPROF" export --db "$DB" --format folded >"$TMP/run.folded"
env GITLAB_CI=true CI_MERGE_REQUEST_IID=42 CI_COMMIT_REF_NAME=feature/fast \
	"$CIPROF" import --db "$DB" --format folded --branch feature/fast \
	--commit 89abcdef0123456789abcdef0123456789abcdef --test suite.all "$TMP/run.folded" \
	2>"$TMP/imp.err" || fail "import: $(cat "$TMP/imp.err")"
"$CIPROF" show --db "$DB" 1 --by test --top 0 --format json >"$TMP/tests1.json"
COMMIT1=$("$CIPROF" runs --db "$DB" --format json | python3 -c \
	'import json,sys; print([r for r in json.load(sys.stdin)["runs"] if r["id"] == 1][0]["commit"])')

# 1. Bearer token and tenant; two 503s first, then accepted.
start ok --token "$TOKEN" --tenant team-a --fail 2
CIPROF_PUSH_TOKEN=$TOKEN run_capture push1 "$CIPROF" -v -v push --db "$DB" 1 --server "$URL/" \
	--app widgets --tenant team-a
[ "$RC" = 0 ] || fail "push exited $RC: $(cat "$TMP/push1.err")"
no_token "$TMP/push1.out" "$TMP/push1.err"
python3 - "$LOG" "$TMP/tests1.json" "$COMMIT1" <<'PY' || check_failed "what Pyroscope received"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["status"] for r in reqs] == [503, 503, 200], [r["status"] for r in reqs]
r = reqs[-1]
assert r["auth"] == "Bearer" and r["auth_ok"] and r["tenant"] == "team-a", r
q = r["query"]
assert q["name"] == "widgets.cpu{branch=main,commit=%s}" % sys.argv[3], q
assert q["format"] == "pprof" and q["spyName"] == "ciprof" and q["sampleRate"] == "99", q
assert int(q["until"]) > int(q["from"]) > 1_000_000_000, q
assert r["content_type"].startswith("multipart/form-data; boundary="), r
t = json.load(open(sys.argv[2]))
p = r["profile"]
assert p["samples"] == t["samples"], (p["samples"], t["samples"])
assert p["tests"] == {x["name"] or "(outside tests)": x["samples"] for x in t["tests"]}, p["tests"]
assert p["period_type"] == "cpu nanoseconds" and p["cpu_ns"] == p["samples"] * p["period"], p
print("pyroscope got %d samples in %d tests after 2 retries" % (p["samples"], len(p["tests"])))
PY
ok "bearer token + tenant, retried past two 503s: every sample and test label, decoded by go tool pprof"

# 2. The labels of a CI run, from the configuration file and the environment.
start labels
mkdir -p "$TMP/repo" && printf 'push:\n  app: from-file\n' >"$TMP/repo/.ciprof.yml"
(cd "$TMP/repo" && CIPROF_PUSH_SERVER=$URL run_capture push2 "$CIPROF" push --db "$DB" 2)
[ "$RC" = 0 ] || check_failed "push of the imported run exited $RC: $(cat "$TMP/push2.err")"
python3 - "$LOG" <<'PY' || check_failed "labels of the MR run"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
want = "from-file.cpu{branch=feature/fast,commit=89abcdef0123456789abcdef0123456789abcdef,ci=gitlab,pr=42}"
assert r["query"]["name"] == want, r["query"]["name"]
assert r["auth"] == "none" and r["profile"]["tests"] == {"suite.all": r["profile"]["samples"]}, r
# a folded import has no sampling period: counts only, no CPU time of 0 ns
assert r["profile"]["sample_types"] == "samples/count" and r["profile"]["samples"] > 0, r
PY
ok "push.app from .ciprof.yml, server from CIPROF_PUSH_SERVER, ci=gitlab and pr=42 labels"

# 3. A wrong token: 401, the server's echo of it redacted, exit 3.
start bad --token "the-right-one"
CIPROF_PUSH_TOKEN=$TOKEN run_capture push3 "$CIPROF" -v -v push --db "$DB" --server "$URL"
[ "$RC" = 3 ] || check_failed "wrong token: exit $RC"
grep -q "HTTP 401" "$TMP/push3.err" && grep -q 'Bearer \*\*\*' "$TMP/push3.err" ||
	check_failed "wrong token: message $(cat "$TMP/push3.err")"
no_token "$TMP/push3.out" "$TMP/push3.err"
ok "a refused token: exit 3, HTTP 401 named, the echoed token shown as ***"

# 4. Basic authentication.
start basic --basic "ci-bot:pa55:word"
CIPROF_PUSH_PASSWORD="pa55:word" run_capture push4 "$CIPROF" push --db "$DB" --server "$URL" \
	--user ci-bot
[ "$RC" = 0 ] || check_failed "basic auth: exit $RC: $(cat "$TMP/push4.err")"
[ "$(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readlines()[-1]); print(r["auth"], r["auth_ok"])' "$LOG")" = "Basic True" ] ||
	check_failed "basic auth header"
! grep -q "pa55" "$TMP/push4.err" || check_failed "the password was printed"
ok "basic authentication with --user and CIPROF_PUSH_PASSWORD"

# A wrong password: the server echoes the Authorization header, which holds user:password
# base64'd - as good as the password, so it is redacted too, and so is every prefix of it that
# shortening the message could leave.
PW="wr0ng-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
B64=$(printf 'ci-bot:%s' "$PW" | base64 -w0)
CIPROF_PUSH_PASSWORD=$PW run_capture push4b "$CIPROF" -v -v push --db "$DB" --server "$URL" \
	--user ci-bot
[ "$RC" = 3 ] && grep -q "HTTP 401" "$TMP/push4b.err" && grep -q 'Basic \*\*\*' "$TMP/push4b.err" ||
	check_failed "wrong password: exit $RC, $(cat "$TMP/push4b.err")"
! grep -q -e "$PW" -e "${B64:0:12}" "$TMP/push4b.out" "$TMP/push4b.err" ||
	check_failed "the basic credentials were printed: $(cat "$TMP/push4b.err")"
ok "a refused password: exit 3, the echoed basic credentials shown as ***"

# 5. The retry budget: a server that always fails gets exactly CIPROF_HTTP_RETRIES attempts.
start down --fail '*'
CIPROF_HTTP_RETRIES=3 run_capture push5 "$CIPROF" push --db "$DB" --server "$URL"
[ "$RC" = 3 ] && grep -q "HTTP 503 after 3 attempts" "$TMP/push5.err" ||
	check_failed "always 503: exit $RC, $(cat "$TMP/push5.err")"
[ "$(wc -l <"$LOG")" = 3 ] || check_failed "always 503: $(wc -l <"$LOG") requests, want 3"
ok "a failing server: 3 attempts, then exit 3"

# 6. The CI templates' push steps (their scripts, run here as the runners would run them).
start tpl --token "$TOKEN"
python3 - "$CIPROF_SRC/ci-templates" "$TMP/gh.sh" "$TMP/gl.sh" <<'PY' || fail "template push steps"
import sys, yaml
tpl, gh, gl = sys.argv[1:4]
a = yaml.safe_load(open(tpl + "/github/action.yml"))
step = next(s for s in a["runs"]["steps"] if s.get("name") == "ciprof - push to Pyroscope")
assert "inputs.push-server != ''" in step["if"] and "stored == 'true'" in step["if"], step["if"]
assert step["env"]["CIPROF_PUSH_TOKEN"] == "${{ inputs.push-token }}", step["env"]
open(gh, "w").write(step["run"])
j = yaml.safe_load(open(tpl + "/gitlab/ciprof.gitlab-ci.yml"))[".ciprof"]
open(gl, "w").write(next(x for x in j["script"] if "ciprof push" in x))
PY
PATH="$(dirname "$CIPROF"):$PATH" CIPROF_DB=$DB CIPROF_PUSH_SERVER=$URL CIPROF_PUSH_TOKEN=$TOKEN \
	HEAD_RUN=1 CIPROF_PUSH_TENANT= CIPROF_PUSH_APP=gh-app run_capture gh bash "$TMP/gh.sh"
[ "$RC" = 0 ] || check_failed "GitHub push step: exit $RC: $(cat "$TMP/gh.err")"
PATH="$(dirname "$CIPROF"):$PATH" CIPROF_DB=$DB CIPROF_PUSH_SERVER=$URL CIPROF_PUSH_TOKEN=$TOKEN \
	before=1 after=2 run_capture gl bash "$TMP/gl.sh"
[ "$RC" = 0 ] || check_failed "GitLab push step: exit $RC: $(cat "$TMP/gl.err")"
no_token "$TMP/gh.out" "$TMP/gh.err" "$TMP/gl.out" "$TMP/gl.err"
python3 - "$LOG" <<'PY' || check_failed "template pushes"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["status"] for x in r] == [200, 200] and all(x["auth_ok"] for x in r), r
assert r[0]["query"]["name"].startswith("gh-app.cpu{branch=main,"), r[0]["query"]
assert "pr=42" in r[1]["query"]["name"], r[1]["query"]  # the GitLab step pushed run 2
PY
# Without a server the GitLab step sends nothing; a failed push is only a warning.
PATH="$(dirname "$CIPROF"):$PATH" CIPROF_DB=$DB CIPROF_PUSH_SERVER= before=1 after=2 \
	run_capture gl0 bash "$TMP/gl.sh"
[ "$RC" = 0 ] && [ "$(wc -l <"$LOG")" = 2 ] || check_failed "GitLab step without a server"
PATH="$(dirname "$CIPROF"):$PATH" CIPROF_DB=$DB CIPROF_PUSH_SERVER=http://127.0.0.1:1 \
	CIPROF_HTTP_RETRIES=1 HEAD_RUN=1 run_capture gh1 bash "$TMP/gh.sh"
[ "$RC" = 0 ] && grep -q '::warning title=ciprof::ciprof push to Pyroscope failed' "$TMP/gh1.out" ||
	check_failed "GitHub step, server down: exit $RC, $(cat "$TMP/gh1.out")"
ok "CI templates: the GitHub step and the GitLab script push with the token, warn on failure"

# 7. Usage errors.
run_capture u1 "$CIPROF" push --db "$DB"
[ "$RC" = 2 ] && grep -q "no Pyroscope server" "$TMP/u1.err" || check_failed "no server: $RC"
CIPROF_PUSH_TOKEN=$TOKEN run_capture u2 "$CIPROF" push --db "$DB" --server "http://u:$TOKEN@127.0.0.1:1"
[ "$RC" = 3 ] && grep -q "holds credentials" "$TMP/u2.err" || check_failed "credentials in URL: $RC"
no_token "$TMP/u2.err"
# A token put in the URL's query instead: refused before anything is sent, never printed, also
# not by --dry-run.
for dry in "" --dry-run; do
	CIPROF_PUSH_TOKEN=$TOKEN run_capture u2q "$CIPROF" -v -v push --db "$DB" $dry \
		--server "$URL/?token=$TOKEN"
	no_token "$TMP/u2q.out" "$TMP/u2q.err"
done
CIPROF_PUSH_TOKEN=$TOKEN run_capture u2q "$CIPROF" push --db "$DB" --server "$URL/?token=$TOKEN"
[ "$RC" = 3 ] && grep -q "has a query or fragment" "$TMP/u2q.err" ||
	check_failed "a query in the URL: exit $RC, $(cat "$TMP/u2q.err")"
CIPROF_PUSH_TOKEN=$TOKEN run_capture u3 "$CIPROF" push --db "$DB" --server "$URL" --user x
[ "$RC" = 2 ] || check_failed "token and user together: $RC"
run_capture u4 "$CIPROF" push --db "$DB" 99 --server "$URL"
[ "$RC" = 3 ] || check_failed "unknown run: $RC"
ok "usage: no server, credentials in the URL, token with user, unknown run"
finish
