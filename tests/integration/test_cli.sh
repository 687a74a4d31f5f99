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

finish
