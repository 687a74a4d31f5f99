#!/bin/bash
# `ciprof run` is transparent: it exits with the command's status (128+N for signal N, 127
# with a clear message when the command cannot run), forwards SIGTERM/SIGINT to it and still
# writes the profile, and passes stdin, stdout and stderr through untouched.
. "$(dirname "$0")/lib.sh"

# --- exit statuses ----------------------------------------------------------------------
run_capture exit7 "$CIPROF" run --no-store -- sh -c 'exit 7'
expect_rc "sh -c 'exit 7'" 7 exit7

run_capture exit0 "$CIPROF" run --no-store -- true
expect_rc "true" 0 exit0

run_capture segv "$CIPROF" run --no-store -- sh -c 'kill -SEGV $$'
expect_rc "sh killed by SIGSEGV" 139 segv

run_capture noent "$CIPROF" run --no-store -- /nonexistent/prog
expect_rc "/nonexistent/prog" 127 noent
expect_grep "/nonexistent/prog message" "$TMP/noent.err" "cannot run '/nonexistent/prog'"
expect_grep "/nonexistent/prog message" "$TMP/noent.err" "No such file"

printf '#!/bin/sh\necho should not run\n' >"$TMP/not-executable"
chmod 644 "$TMP/not-executable"
run_capture noexec "$CIPROF" run --no-store -- "$TMP/not-executable"
expect_rc "non-executable file (126, as in a shell)" 126 noexec
expect_grep "non-executable file message" "$TMP/noexec.err" "cannot run '$TMP/not-executable'"
expect_grep "non-executable file message" "$TMP/noexec.err" "Permission denied"
if grep -q "should not run" "$TMP/noexec.out"; then
	check_failed "the non-executable file was run anyway"
fi

run_capture isdir "$CIPROF" run --no-store -- "$TMP"
expect_rc "a folder as the command (126)" 126 isdir
expect_grep "folder message" "$TMP/isdir.err" "cannot run '$TMP'"
run_capture et_noexec "$CIPROF" exec-test t -- "$TMP/not-executable"
expect_rc "exec-test of a non-executable file (126)" 126 et_noexec
run_capture et_noent "$CIPROF" exec-test t -- /nonexistent/prog
expect_rc "exec-test of a missing file (127)" 127 et_noent

# A command found through PATH, and one that is not found there.
run_capture path_ok "$CIPROF" run --no-store -- sh -c 'exit 3'
expect_rc "command from PATH" 3 path_ok
run_capture path_missing "$CIPROF" run --no-store -- ciprof-no-such-command-xyz
expect_rc "command missing from PATH" 127 path_missing
expect_grep "missing command message" "$TMP/path_missing.err" \
	"cannot run 'ciprof-no-such-command-xyz'"

# --- signal forwarding --------------------------------------------------------------------
# Background jobs of a non-interactive shell start with SIGINT ignored, and a shell cannot
# trap a signal ignored on entry; so start ciprof through a tiny wrapper restoring defaults.
# With CIPROF_TEST_SETSID=1 it runs without a controlling terminal, as in CI, even when the
# tests are run from one.
start_bg() {
	python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
    signal.signal(s, signal.SIG_DFL)
if os.environ.pop("CIPROF_TEST_SETSID", None):
    os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])' "$@" &
	BG=$!
}

# descendants PID: prints the pids of all processes below PID.
descendants() {
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# wait_for_child PID COMM: waits (up to 10 s) until a process named COMM runs below PID;
# its pid lands in CHILD.
wait_for_child() {
	local i c
	for i in $(seq 100); do
		for c in $(descendants "$1"); do
			if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$2" ]; then
				CHILD=$c
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

# kill_tree PID: SIGKILLs PID and every process below it (listed first: orphans would be
# reparented out of reach), so a failed check leaves no busy loop behind.
kill_tree() {
	local below c
	below=$(descendants "$1")
	kill -KILL "$1" 2>/dev/null
	for c in $below; do
		kill -KILL "$c" 2>/dev/null
	done
}

# signal_test NAME SIGNAL EXPECTED_RC CMD...: runs ciprof on CMD in the background, sends
# SIGNAL to ciprof once CMD is running and has burned some CPU, and checks the status and
# that the profile was still written with samples of the command in it.
signal_test() {
	local name=$1 sig=$2 expect=$3 comm=$4
	shift 4
	start_bg "$CIPROF" run --no-store -o "$TMP/$name.folded" -- "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	local pid=$BG
	if ! wait_for_child "$pid" "$comm"; then
		kill_tree "$pid"
		wait "$pid" 2>/dev/null
		check_failed "$name: the command '$comm' never started under ciprof"
		return
	fi
	wait_cpu "$CHILD" 30
	kill -"$sig" "$pid"
	local i
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		check_failed "$name: ciprof still running 10 s after SIG$sig; killing it"
		kill_tree "$pid"
	fi
	RC=0
	wait "$pid" || RC=$?
	expect_rc "$name (SIG$sig forwarded)" "$expect" "$name"
	# ciprof must not leave the command behind (a zombie would be reaped by init).
	if [ -e /proc/"$CHILD" ] && [ "$(awk '{print $3}' /proc/"$CHILD"/stat 2>/dev/null)" != Z ]; then
		check_failed "$name: the command (pid $CHILD) still runs after ciprof exited"
		kill_tree "$CHILD"
	fi
	local n
	if n=$(check_folded "$TMP/$name.folded" 2>"$TMP/$name.check"); then
		ok "$name: profile written after SIG$sig, $n samples"
		if grep -q "^$comm;" "$TMP/$name.folded"; then
			ok "$name: the busy command '$comm' was sampled"
		else
			check_failed "$name: no stack rooted at '$comm' in the profile"
		fi
	else
		check_failed "$name: no usable profile after SIG$sig: $(cat "$TMP/$name.check")"
	fi
}

signal_test term_trap TERM 42 sh sh -c 'trap "exit 42" TERM; while :; do :; done'
signal_test int_trap INT 43 sh sh -c 'trap "exit 43" INT; while :; do :; done'
# Untrapped: the command dies of the signal, ciprof exits 128+15. The command is a busy
# loop in a shell (named "sh") so that the profile has samples.
signal_test term_plain TERM 143 sh sh -c 'while :; do :; done'

# --- signals reach what CMD started -------------------------------------------------------
# The CI templates run `ciprof run -- bash -c "..."`. Without a terminal, a signal sent to
# ciprof must reach the program bash runs too (CMD's whole process group), not bash alone:
# SIGTERM must not leave it running orphaned, SIGINT must not let the script go on.
# group_signal_test NAME SIGNAL EXPECTED_RC [CIPROF RUN OPTIONS...]
group_signal_test() {
	local name=$1 sig=$2 expect=$3 i grandchild
	shift 3
	rm -f "$TMP/$name.pid"
	CIPROF_TEST_SETSID=1 start_bg "$CIPROF" run --no-store "$@" -- bash -c \
		'sh -c "echo \$\$ >\"$1.tmp\"; mv \"$1.tmp\" \"$1\"; exec sleep 30"; echo went on' \
		bash "$TMP/$name.pid" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
	local pid=$BG
	for i in $(seq 300); do
		[ -s "$TMP/$name.pid" ] && break
		sleep 0.1
	done
	grandchild=$(cat "$TMP/$name.pid" 2>/dev/null)
	if [ -z "$grandchild" ]; then
		kill_tree "$pid"
		wait "$pid" 2>/dev/null
		check_failed "$name: the program under bash -c never started"
		return
	fi
	kill -"$sig" "$pid"
	RC=0
	wait "$pid" || RC=$?
	expect_rc "$name: bash -c under ciprof, SIG$sig" "$expect" "$name"
	if grep -q "went on" "$TMP/$name.out"; then
		check_failed "$name: the script went on after SIG$sig"
	fi
	# The sleep was bash's child: once bash is gone it is init's, which reaps it; poll.
	for i in $(seq 100); do
		kill -0 "$grandchild" 2>/dev/null || break
		[ "$(awk '{print $3}' /proc/"$grandchild"/stat 2>/dev/null)" = Z ] && break
		sleep 0.1
	done
	if kill -0 "$grandchild" 2>/dev/null &&
		[ "$(awk '{print $3}' /proc/"$grandchild"/stat 2>/dev/null)" != Z ]; then
		check_failed "$name: the program bash ran (pid $grandchild) survived SIG$sig to ciprof"
		kill -KILL "$grandchild"
	else
		ok "$name: SIG$sig to ciprof ended the program bash -c ran"
	fi
}
group_signal_test term_group TERM 143
group_signal_test int_group INT 130
group_signal_test term_group_pty TERM 143 --pty

# --- signals after the command's end -----------------------------------------------------
# A second SIGTERM/SIGINT while ciprof works after CMD's end (reading JUnit files,
# symbolizing, storing) must not lose the run. The JUnit "file" is a FIFO: ciprof blocks
# opening it after CMD has exited, exactly where the signals must be harmless.
mkfifo "$TMP/junit.fifo"
start_bg "$CIPROF" run --db "$TMP/late.db" --junit "$TMP/junit.fifo" -o "$TMP/late.folded" \
	-- sh -c 'exit 5' >"$TMP/late.out" 2>"$TMP/late.err"
late_pid=$BG
# Opening the FIFO for writing waits until ciprof opens it for reading: CMD has ended.
exec 7>"$TMP/junit.fifo"
kill -TERM "$late_pid"
kill -INT "$late_pid"
kill -HUP "$late_pid"
printf '<testsuite name="s"><testcase name="t"/></testsuite>\n' >&7
exec 7>&-
RC=0
wait "$late_pid" || RC=$?
expect_rc "SIGTERM, SIGINT and SIGHUP after CMD ended: CMD's status" 5 late
expect_grep "the run is still stored" "$TMP/late.err" "stored run 1"
[ -s "$TMP/late.folded" ] || grep -q "samples" "$TMP/late.err" ||
	check_failed "no profile written after the late signals"

# --- SIGKILL to ciprof ends CMD (parent-death signal) -------------------------------------
start_bg "$CIPROF" run --no-store -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; while :; do :; done' \
	sh "$TMP/orphan.pid" >"$TMP/orphan.out" 2>"$TMP/orphan.err"
orphan_ciprof=$BG
for i in $(seq 200); do
	[ -s "$TMP/orphan.pid" ] && break
	sleep 0.05
done
orphan=$(cat "$TMP/orphan.pid" 2>/dev/null)
kill -KILL "$orphan_ciprof"
wait "$orphan_ciprof" 2>/dev/null
if [ -z "$orphan" ]; then
	check_failed "the command under ciprof never started"
else
	for i in $(seq 200); do
		[ -e /proc/"$orphan" ] && [ "$(awk '{print $3}' /proc/"$orphan"/stat 2>/dev/null)" != Z ] || break
		sleep 0.05
	done
	if [ -e /proc/"$orphan" ] && [ "$(awk '{print $3}' /proc/"$orphan"/stat 2>/dev/null)" != Z ]; then
		check_failed "the command (pid $orphan) still runs after ciprof was SIGKILLed"
		kill -KILL "$orphan"
	else
		ok "SIGKILL to ciprof ends its command"
	fi
fi

# --- what CMD inherits ------------------------------------------------------------------------
# CMD's own files get the numbers they would get without ciprof: the marks pipe sits high.
"$CIPROF" run --no-store -- sh -c 'echo "ctl $CIPROF_CONTROL_FD"; ls /proc/self/fd' \
	>"$TMP/fds.out" 2>"$TMP/fds.err" </dev/null
ctl=$(sed -n 's/^ctl //p' "$TMP/fds.out")
grep -vx -e "$ctl" -e 'ctl .*' "$TMP/fds.out" | sort -n >"$TMP/fds.got"
sh -c 'ls /proc/self/fd' </dev/null | sort -n >"$TMP/fds.expect"
if [ -n "$ctl" ] && [ "$ctl" -ge 100 ]; then
	ok "the marks pipe is on a high fd ($ctl)"
else
	check_failed "the marks pipe takes fd '$ctl', a number CMD's own files would get"
fi
if cmp -s "$TMP/fds.got" "$TMP/fds.expect"; then
	ok "CMD's other file descriptors are its own"
else
	check_failed "CMD's fds differ: $(tr '\n' ' ' <"$TMP/fds.got") vs $(tr '\n' ' ' <"$TMP/fds.expect")"
fi
RC=0
mask=$("$CIPROF" run --no-store -- sh -c 'grep -E "^Sig(Blk|Ign)" /proc/self/status' 2>/dev/null) || RC=$?
bare=$(sh -c 'grep -E "^Sig(Blk|Ign)" /proc/self/status')
[ "$mask" = "$bare" ] && ok "CMD's signal mask and ignored signals are ciprof's own" ||
	check_failed "CMD's signal state differs: '$mask' vs '$bare'"

# --- input and output pass through --------------------------------------------------------
printf 'a\nb\0c' >"$TMP/printf.expect"
RC=0
"$CIPROF" run --no-store -- printf 'a\nb\0c' >"$TMP/printf.out" 2>"$TMP/printf.err" || RC=$?
expect_rc "printf" 0 printf
if cmp -s "$TMP/printf.expect" "$TMP/printf.out"; then
	ok "stdout is byte-identical"
else
	check_failed "stdout differs: expected $(od -c "$TMP/printf.expect" | head -2), got $(od -c "$TMP/printf.out" | head -2)"
fi

RC=0
out=$(echo hi | "$CIPROF" run --no-store -- cat 2>"$TMP/cat.err") || RC=$?
expect_rc "echo hi | cat" 0 cat
[ "$out" = hi ] && ok "stdin reaches the command" || check_failed "stdin: got '$out', expected 'hi'"

# A megabyte of binary data through stdin and stdout, and stderr apart from stdout.
head -c 1048576 /dev/urandom >"$TMP/big.in"
RC=0
"$CIPROF" run --no-store -- cat <"$TMP/big.in" >"$TMP/big.out" 2>"$TMP/big.err" || RC=$?
expect_rc "cat of 1 MiB" 0 big
cmp -s "$TMP/big.in" "$TMP/big.out" && ok "1 MiB of binary data passes through" ||
	check_failed "1 MiB through cat came out different ($(wc -c <"$TMP/big.out") bytes)"

RC=0
"$CIPROF" run --no-store -- sh -c 'echo to-out; echo to-err >&2' \
	>"$TMP/split.out" 2>"$TMP/split.err" </dev/null || RC=$?
expect_rc "stdout/stderr split" 0 split
[ "$(cat "$TMP/split.out")" = to-out ] && ok "stdout holds only the command's stdout" ||
	check_failed "stdout is '$(cat "$TMP/split.out")', expected 'to-out'"
expect_grep "stderr passes through" "$TMP/split.err" "to-err"

finish
