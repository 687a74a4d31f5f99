# Helpers for the comment and CI-template tests (sourced after lib.sh): start and stop the fake
# forge APIs (fake_forge.py, loopback only), and question their request logs.

# Never send a loopback request through a proxy from the environment.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1

FAKE_FORGE="$CIPROF_SRC/tests/integration/fake_forge.py"
FORGE_PIDS=()

# A token that looks real and is easy to grep for.
TOKEN="ghp_ciprofTestToken$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

# forge_start NAME API [fake_forge args...]: starts a fake API; sets FORGE_PORT, FORGE_URL
# (its root) and FORGE_LOG ($TMP/NAME.jsonl). The server lives until forge_stop_all (the EXIT trap)
# or 30 minutes: a loaded machine may take minutes to get through a template simulation.
forge_start() {
	local name=$1 api=$2
	shift 2
	FORGE_LOG="$TMP/$name.jsonl"
	: >"$FORGE_LOG"
	rm -f "$TMP/$name.port"
	python3 "$FAKE_FORGE" --api "$api" --token "$TOKEN" --port-file "$TMP/$name.port" \
		--log "$FORGE_LOG" --timeout 3600 --parent $$ "$@" 2>"$TMP/$name.server.err" &
	FORGE_PIDS+=($!)
	local i
	for i in $(seq 1200); do # up to 60 s: python starts slowly on a loaded machine
		[ -s "$TMP/$name.port" ] && break
		sleep 0.05
	done
	[ -s "$TMP/$name.port" ] || fail "fake $api API did not start: $(cat "$TMP/$name.server.err")"
	FORGE_PORT=$(cat "$TMP/$name.port")
	FORGE_URL="http://127.0.0.1:$FORGE_PORT"
}

# forge_stop_all: ends every fake API this test started (by their process ids).
forge_stop_all() {
	local pid
	for pid in "${FORGE_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	FORGE_PIDS=()
}
trap 'forge_stop_all; cleanup' EXIT

# forge_count LOG METHOD PATH_REGEX [STATUS]: how many logged requests match.
forge_count() {
	python3 - "$@" <<'PY'
import json, re, sys
log, method, path = sys.argv[1:4]
status = int(sys.argv[4]) if len(sys.argv) > 4 else None
n = 0
for line in open(log, encoding="utf-8"):
    r = json.loads(line)
    if r["method"] == method and re.search(path, r["path"]) and \
            (status is None or r["status"] == status):
        n += 1
print(n)
PY
}

# forge_query LOG PYTHON_EXPR: evaluates EXPR with `reqs` (the list of logged requests) and
# prints the result.
forge_query() {
	python3 - "$1" "$2" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
print(eval(sys.argv[2]))
PY
}

# expect_eq WHAT GOT WANT
expect_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1: $2"
	else
		check_failed "$1: got '$2', expected '$3'"
	fi
}

# expect_no_token WHAT FILE...: the token appears in none of the files.
expect_no_token() {
	local what=$1
	shift
	if grep -qF -- "$TOKEN" "$@"; then
		check_failed "$what: the token appears in $(grep -lF -- "$TOKEN" "$@" | xargs -n1 basename | tr '\n' ' ')"
	else
		ok "$what: the token appears in no output"
	fi
}

