#!/bin/bash
# Under the LD_PRELOAD backend, `ciprof run` stays transparent: the command's exit status
# (128+N for signal N, 127 with a message when it cannot run), SIGTERM forwarded and the
# profile still written; and programs LD_PRELOAD cannot reach (static binaries) are reported
# by name as unsampled, whether they are the command, exec'd, run by sh, or posix_spawn'd.
. "$(dirname "$0")/lib.sh"

PROBE=$CIPROF_BUILD/tests/preload_probe
STATIC=$CIPROF_BUILD/tests/preload_probe_static
for f in "$PROBE" "$STATIC"; do [ -x "$f" ] || fail "$f not built"; done
file "$STATIC" 2>/dev/null | grep -q "statically linked" || [ ! -x "$(command -v file)" ] ||
	fail "$STATIC is not a static binary"
run() {
	local name=$1
	shift
	run_capture "$name" "$CIPROF" run --backend preload --no-store -o "$TMP/$name.folded" -- "$@"
}

# --- exit statuses --------------------------------------------------------------------------
run exit7 "$PROBE" exit 7
expect_rc "exit(7)" 7 exit7
run segv "$PROBE" kill 11
expect_rc "killed by SIGSEGV" 139 segv
run kill9 sh -c 'kill -KILL $$'
expect_rc "killed by SIGKILL" 137 kill9
run noent /nonexistent/prog
expect_rc "/nonexistent/prog" 127 noent
expect_grep "message" "$TMP/noent.err" "cannot run '/nonexistent/prog': No such file or directory"
run missing ciprof-no-such-command-xyz
expect_rc "command missing from PATH" 127 missing

# --- the library cannot be found: a clear error, the command does not run ------------------
RC=0
CIPROF_PRELOAD_LIB=/nonexistent/libciprof-preload.so "$CIPROF" run --backend preload \
	--no-store -- touch "$TMP/ran" >"$TMP/nolib.out" 2>"$TMP/nolib.err" </dev/null || RC=$?
expect_rc "CIPROF_PRELOAD_LIB pointing nowhere" 3 nolib
expect_grep "names the variable" "$TMP/nolib.err" "CIPROF_PRELOAD_LIB"
[ ! -e "$TMP/ran" ] && ok "the command did not run without its sampler" ||
	check_failed "the command ran although the sampler library is missing"

# --- SIGTERM to ciprof reaches the command; the profile is still written ---------------------
# No sleeping on the clock: the command says when its trap is set (a ready file holding its
# pid), and the test waits until it has burned some CPU time, so that the profile has samples.
python3 -c 'import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$CIPROF" run --backend preload --no-store \
	-o "$TMP/term.folded" -- sh -c 'trap "exit 42" TERM; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"
		while :; do :; done' sh "$TMP/term.ready" \
	>"$TMP/term.out" 2>"$TMP/term.err" </dev/null &
pid=$!
cmd_pid=
for i in $(seq 1200); do # up to 60 s for the command to start, under any load
	[ -s "$TMP/term.ready" ] && cmd_pid=$(cat "$TMP/term.ready") && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.05
done
if [ -z "$cmd_pid" ]; then
	kill -KILL $pid 2>/dev/null
	fail "the command never started under ciprof: $(cat "$TMP/term.err")"
fi
wait_cpu "$cmd_pid" 30
kill -TERM $pid
RC=0
wait $pid || RC=$?
expect_rc "SIGTERM forwarded, the command's trap exits 42" 42 term
n=$(check_folded "$TMP/term.folded") && ok "profile written after SIGTERM: $n samples" ||
	check_failed "no profile after SIGTERM: $n"
grep -q "^sh;" "$TMP/term.folded" && ok "the busy shell was sampled" ||
	check_failed "no stack rooted at sh"

# --- static binaries are named as unsampled -------------------------------------------------
NOTE="not sampled: $STATIC (a static"
run static_cmd "$STATIC" burn 0.1
expect_rc "static command" 0 static_cmd
expect_grep "static command reported" "$TMP/static_cmd.err" "$NOTE"
run static_exec "$PROBE" exec "$STATIC" burn 0.1
expect_rc "static exec'd" 0 static_exec
expect_grep "exec'd static program reported" "$TMP/static_exec.err" "$NOTE"
run static_sh sh -c "$STATIC burn 0.1; $STATIC burn 0.1; $PROBE burn 0.2"
expect_rc "static run by sh" 0 static_sh
expect_grep "static program run twice by sh" "$TMP/static_sh.err" "2 runs)"
grep -q "probe_burn" "$TMP/static_sh.folded" && ok "the dynamic program next to it was sampled" ||
	check_failed "the dynamic program run by sh was not sampled"
run static_spawn "$PROBE" spawn "$STATIC" burn 0.1
expect_rc "static posix_spawn'd" 0 static_spawn
expect_grep "spawned static program reported" "$TMP/static_spawn.err" "$NOTE"
run dynamic "$PROBE" exec "$PROBE" burn 0.1
if grep -q "not sampled" "$TMP/dynamic.err"; then
	check_failed "a dynamic program was reported unsampled: $(grep 'not sampled' "$TMP/dynamic.err")"
else
	ok "no false report for a dynamic program"
fi
finish
