#!/bin/bash
# --backend auto (the default) falls back to the LD_PRELOAD backend when perf_event_open is
# refused, saying so in one line, and its profile still agrees with the truth: ciprof runs
# under a real seccomp filter denying perf_event_open (tests/tools/deny_perf), as Docker's
# default profile does, on the multi-process, multi-thread accuracy workload at 999 Hz.
. "$(dirname "$0")/lib.sh"

DENY=$CIPROF_BUILD/tests/deny_perf
WORKLOAD=$CIPROF_BUILD/examples/accuracy/accuracy_workload
[ -x "$DENY" ] || fail "$DENY not built"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD not built (target accuracy_workload)"
LINE="ciprof: perf_event_open refused (seccomp filter: EPERM); sampling with the LD_PRELOAD backend"

run_capture fb "$DENY" EPERM "$CIPROF" run --hz 999 --no-store -o "$TMP/fb.folded" -- \
	"$WORKLOAD" --truth "$TMP/truth.txt"
expect_rc "auto under a seccomp filter" 0 fb
expect_grep "the fallback is announced" "$TMP/fb.err" "$LINE"
n=$(grep -c "perf_event_open" "$TMP/fb.err")
[ "$n" -eq 1 ] && ok "the refusal takes one line" ||
	check_failed "the refusal takes $n lines, not one: $(cat "$TMP/fb.err")"
if [ "$RC" -eq 0 ]; then
	total=$(check_folded "$TMP/fb.folded") || fail "bad folded profile: $total"
	if python3 "$(dirname "$0")/accuracy_check.py" "$TMP/fb.folded" "$TMP/truth.txt" 999 \
		"$(basename "$WORKLOAD")" 3; then
		ok "fallback profile: shares within 3 points of the truth ($total samples)"
	else
		check_failed "fallback profile does not match the truth (see above)"
	fi
fi

# ENOSYS (a filter that hides the system call) falls back too; -v shows the full diagnosis.
run_capture nosys "$DENY" ENOSYS "$CIPROF" run -v --no-store -- sh -c 'exit 5'
expect_rc "ENOSYS fallback keeps the command's status" 5 nosys
expect_grep "ENOSYS fallback" "$TMP/nosys.err" "perf_event_open refused (seccomp filter: ENOSYS); sampling with the LD_PRELOAD backend"
expect_grep "-v gives the diagnosis" "$TMP/nosys.err" "--security-opt seccomp=unconfined"

# A filter that kills the caller of perf_event_open (SIGSYS: systemd's SystemCallFilter=,
# SECCOMP_RET_KILL_PROCESS or SECCOMP_RET_TRAP) must not kill ciprof: it falls back too.
for act in KILL TRAP; do
	run_capture "sigsys$act" "$DENY" "$act" "$CIPROF" run --no-store -o "$TMP/sigsys$act.folded" -- \
		sh -c 'echo ran; exit 6'
	expect_rc "seccomp $act fallback keeps the command's status" 6 "sigsys$act"
	expect_grep "seccomp $act fallback" "$TMP/sigsys$act.err" "perf_event_open refused (seccomp filter: SIGSYS); sampling with the LD_PRELOAD backend"
	expect_grep "seccomp $act: the command ran" "$TMP/sigsys$act.out" "ran"
done

# -q hides the notice; --backend perf does not fall back (test_refused.sh checks its message).
run_capture quiet "$DENY" EPERM "$CIPROF" run -q --no-store -- true
expect_rc "quiet fallback" 0 quiet
[ ! -s "$TMP/quiet.err" ] && ok "-q prints nothing" || check_failed "-q printed: $(cat "$TMP/quiet.err")"
run_capture strict "$DENY" EPERM "$CIPROF" run --backend perf --no-store -- touch "$TMP/ran"
expect_rc "--backend perf refuses" 3 strict
[ ! -e "$TMP/ran" ] && ok "--backend perf did not run the command" ||
	check_failed "--backend perf ran the command although perf_event_open was refused"
finish
