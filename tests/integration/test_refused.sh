#!/bin/bash
# When perf_event_open is refused and --backend perf was asked for, ciprof names the cause and
# the remedy and exits 3 without running the command (--backend auto, the default, falls back
# to the LD_PRELOAD backend instead: test_fallback.sh). The refusal is real: a seccomp filter
# (tests/tools/deny_perf), as in Docker's default profile; the paranoid case runs unprivileged
# with the paranoid level read from a file (CIPROF_PERF_PARANOID_FILE), since the real sysctl
# is machine-wide.
. "$(dirname "$0")/lib.sh"
DENY=$CIPROF_BUILD/tests/deny_perf
[ -x "$DENY" ] || fail "$DENY not built"

# Docker-like: EPERM from a seccomp filter.
run_capture r1 "$DENY" EPERM "$CIPROF" run --backend perf --no-store -- touch "$TMP/ran"
expect_rc "seccomp EPERM" 3 r1
grep -q "seccomp" "$TMP/r1.err" || check_failed "diagnosis does not name seccomp: $(cat "$TMP/r1.err")"
grep -q -- "--privileged" "$TMP/r1.err" || check_failed "diagnosis gives no remedy: $(cat "$TMP/r1.err")"
[ ! -e "$TMP/ran" ] || check_failed "the command ran although profiling was refused"
ok "seccomp refusal diagnosed: $(head -c 120 "$TMP/r1.err")..."

# ENOSYS from a filter.
run_capture r2 "$DENY" ENOSYS "$CIPROF" run --backend perf --no-store -- true
expect_rc "seccomp ENOSYS" 3 r2
grep -q "ENOSYS" "$TMP/r2.err" && grep -q "seccomp" "$TMP/r2.err" ||
	check_failed "ENOSYS diagnosis: $(cat "$TMP/r2.err")"

# A filter that kills its caller with SIGSYS (systemd's SystemCallFilter=): ciprof probes in a
# throwaway child, so it lives to say so.
for act in KILL TRAP; do
	run_capture "k$act" "$DENY" "$act" "$CIPROF" run --backend perf --no-store -- touch "$TMP/ran"
	expect_rc "seccomp $act (SIGSYS)" 3 "k$act"
	expect_grep "seccomp $act diagnosed" "$TMP/k$act.err" "seccomp filter that kills its caller (SIGSYS"
	[ ! -e "$TMP/ran" ] || check_failed "seccomp $act: the command ran although profiling was refused"
done

# GitHub's runners: perf_event_paranoid 4 for an unprivileged user.
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	echo 4 >"$TMP/paranoid"
	chmod 755 "$TMP"
	run_capture r3 env CIPROF_PERF_PARANOID_FILE="$TMP/paranoid" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$DENY" EACCES "$CIPROF" run --backend perf --no-store -- true
	expect_rc "paranoid 4" 3 r3
	grep -q "perf_event_paranoid is 4" "$TMP/r3.err" &&
		grep -q "sudo sysctl kernel.perf_event_paranoid=2" "$TMP/r3.err" ||
		check_failed "paranoid diagnosis: $(cat "$TMP/r3.err")"
	ok "paranoid 4 diagnosed with its remedy"
else
	ok "paranoid case needs root and setpriv to drop privileges; covered by unit tests"
fi
finish
