#!/bin/bash
# Command-line contract: usage errors exit 2 with a message on stderr, --help exits 0 with
# usage on stdout, `ciprof version` names itself.
. "$(dirname "$0")/lib.sh"

# usage_error NAME ARGS...: ciprof ARGS must exit 2, say something on stderr, run nothing.
usage_error() {
	local name=$1
	shift
	run_capture "$name" "$CIPROF" "$@"
	expect_rc "ciprof $*" 2 "$name"
	if [ ! -s "$TMP/$name.err" ]; then
		check_failed "ciprof $*: no message on stderr"
	fi
}

usage_error no_cmd run
usage_error no_cmd2 run --no-store --
usage_error hz0 run --hz 0 -- true
usage_error hz_big run --hz 10001 -- true
usage_error hz_abc run --hz abc -- true
usage_error hz_trailing run --hz 99x -- true
usage_error unknown_opt run --no-such-option -- true
usage_error unknown_cmd no-such-command
usage_error unknown_global --no-such-global-option
usage_error format_bad run -o "$TMP/x" --format svg -- true
usage_error nothing
expect_grep "--hz 0 message" "$TMP/hz0.err" "--hz"
# A mistyped command is answered with the nearest one, as a mistyped --base is.
usage_error typo_cmd reprot
expect_grep "a mistyped command" "$TMP/typo_cmd.err" "did you mean report?"
usage_error typo_help help rnus
expect_grep "help of a mistyped command" "$TMP/typo_help.err" "did you mean runs?"
if grep -q "did you mean" "$TMP/unknown_cmd.err"; then
	check_failed "no-such-command: a suggestion for a name near no command"
fi
# An empty NAME (`ciprof exec-test $(EMPTY) -- CMD`) leaves `--` first: CMD's first word must
# not become the name. CMD touches a file, so running it shows.
usage_error exec_test_no_name exec-test -- touch "$TMP/exec_test_ran"
expect_grep "exec-test with no name" "$TMP/exec_test_no_name.err" "no test name given"
[ ! -e "$TMP/exec_test_ran" ] || check_failed "exec-test -- CMD ran CMD without a test name"
usage_error exec_test_empty exec-test "" -- true
expect_grep "exec-test with an empty name" "$TMP/exec_test_empty.err" "must not be empty"
run_capture exec_test_dash "$CIPROF" exec-test -- -odd -- true
expect_rc "exec-test -- -odd -- true (a name starting with -)" 0 exec_test_dash

# A usage error must not run the command.
run_capture no_side_effect "$CIPROF" run --hz 0 -- touch "$TMP/ran"
[ -e "$TMP/ran" ] && check_failed "a usage error still ran the command"

# The edges of --hz are accepted.
for hz in 1 10000; do
	run_capture "hz$hz" "$CIPROF" run --hz "$hz" --no-store -- true
	expect_rc "ciprof run --hz $hz -- true" 0 "hz$hz"
done

# help_ok NAME ARGS...: exits 0, prints usage on stdout.
help_ok() {
	local name=$1
	shift
	run_capture "$name" "$CIPROF" "$@"
	expect_rc "ciprof $*" 0 "$name"
	expect_grep "ciprof $*" "$TMP/$name.out" "usage: ciprof"
}
help_ok help_main --help
help_ok help_cmd help
help_ok help_run run --help
help_ok help_help_run help run
expect_grep "run --help lists its options" "$TMP/help_run.out" "--hz"
expect_grep "run --help lists its options" "$TMP/help_run.out" "--no-store"
expect_grep "ciprof --help lists commands" "$TMP/help_main.out" "run"

run_capture version "$CIPROF" version
expect_rc "ciprof version" 0 version
if head -1 "$TMP/version.out" | grep -qE '^ciprof [0-9]+\.[0-9]+'; then
	ok "ciprof version: $(head -1 "$TMP/version.out")"
else
	check_failed "ciprof version printed '$(head -1 "$TMP/version.out")'"
fi

# -q and -v work after any command name as well as before it; -q silences summaries.
for c in run exec-test runs show report export gc comment config version help; do
	run_capture "help_$c" "$CIPROF" help "$c"
	[ "$RC" = 0 ] || check_failed "ciprof help $c: rc $RC"
	grep -q -- "--quiet" "$TMP/help_$c.out" || check_failed "ciprof help $c does not list -q"
done
run_capture help_help "$CIPROF" help --help
expect_rc "ciprof help --help" 0 help_help
expect_grep "help --help shows the usage" "$TMP/help_help.out" "usage: ciprof"
for c in runs show report export; do
	args=()
	[ "$c" = export ] && args=(--format folded)
	run_capture "q_$c" "$CIPROF" "$c" -q --db "$TMP/none.db" "${args[@]}"
	[ "$RC" = 3 ] || check_failed "ciprof $c -q: rc $RC (want 3: no database), $(cat "$TMP/q_$c.err")"
	run_capture "v_$c" "$CIPROF" "$c" --verbose --db "$TMP/none.db" "${args[@]}"
	[ "$RC" = 3 ] || check_failed "ciprof $c --verbose: rc $RC, $(cat "$TMP/v_$c.err")"
done
# -vv before the command, as a command's own -vv: debug messages
run_capture vv_run "$CIPROF" -vv run --no-store -- true
expect_rc "ciprof -vv run" 0 vv_run
expect_grep "-vv is debug" "$TMP/vv_run.err" "debug:"
run_capture vx "$CIPROF" -vx runs
expect_rc "ciprof -vx" 2 vx
# ciprof runs on a terminal: a long command is cut to the line with "…"; piped, it is whole.
printf 'prog;main;work 5\n' >"$TMP/long.folded"
LONGTAG=$(printf 'x%.0s' $(seq 1 150))
run_capture long_imp "$CIPROF" -q import --db "$TMP/long.db" --format folded --tag "k=$LONGTAG" \
	"$TMP/long.folded"
expect_rc "import with a long command line" 0 long_imp
run_capture long_pipe "$CIPROF" runs --db "$TMP/long.db"
expect_grep "piped, the command is whole" "$TMP/long_pipe.out" "k=$LONGTAG $TMP/long.folded"
if command -v script >/dev/null; then
	script -qec "stty cols 100; '$CIPROF' runs --db '$TMP/long.db'" /dev/null </dev/null |
		tr -d '\r' >"$TMP/long_tty.out"
	widest=$(python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$TMP/long_tty.out")
	[ "$widest" = 100 ] && ok "on a 100-column terminal every line fits" ||
		check_failed "on a 100-column terminal the widest line is $widest columns"
	expect_grep "and the cut is marked" "$TMP/long_tty.out" "…"
fi
run_capture q_run "$CIPROF" run -q --no-store -- true
expect_rc "run -q" 0 q_run
[ ! -s "$TMP/q_run.err" ] || check_failed "run -q printed: $(cat "$TMP/q_run.err")"
"$CIPROF" run --db "$TMP/gc.db" -- true >/dev/null 2>&1
run_capture q_gc "$CIPROF" -q gc --db "$TMP/gc.db" --keep-runs 1
expect_rc "ciprof -q gc" 0 q_gc
[ ! -s "$TMP/q_gc.err" ] || check_failed "ciprof -q gc printed: $(cat "$TMP/q_gc.err")"
run_capture gc_loud "$CIPROF" gc --db "$TMP/gc.db" --keep-runs 1
expect_grep "gc without -q says what it did" "$TMP/gc_loud.err" "gc: deleted"
ok "-q and -v"

# The summary counts in the singular for one.
run_capture one_proc "$CIPROF" run --no-store -- true
expect_rc "run -- true" 0 one_proc
expect_grep "one process, in the singular" "$TMP/one_proc.err" "1 process, 1 thread,"

# A profile written to a full standard output is an error, not a silent loss.
RC=0
"$CIPROF" run --hz 999 --no-store -o - -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' \
	>/dev/full 2>"$TMP/full.err" || RC=$?
expect_rc "run -o - to /dev/full" 3 full
expect_grep "full stdout message" "$TMP/full.err" "No space left on device"

finish
