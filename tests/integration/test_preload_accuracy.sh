#!/bin/bash
# Accuracy of the LD_PRELOAD backend (--backend preload) at 999 Hz on the multi-process,
# multi-thread workload (a parent, a forked child, a thread, a program exec'd through sh):
# each burn_* function's share within 3 points of the truth the workload measured, complete
# call chains, the process name as root frame, samples matching the CPU time. Then the same
# with the roles run one after another.
. "$(dirname "$0")/lib.sh"

WORKLOAD=$CIPROF_BUILD/examples/accuracy/accuracy_workload
[ -x "$WORKLOAD" ] || fail "$WORKLOAD not built (target accuracy_workload)"
[ -f "$CIPROF_BUILD/libciprof-preload.so" ] || fail "libciprof-preload.so not built next to ciprof"
CHECK=$(dirname "$0")/accuracy_check.py

for mode in concurrent sequential; do
	extra=()
	[ "$mode" = sequential ] && extra=(--sequential)
	run_capture "$mode" "$CIPROF" run --backend preload --hz 999 --no-store \
		-o "$TMP/$mode.folded" -- "$WORKLOAD" --truth "$TMP/$mode.truth" "${extra[@]}"
	expect_rc "preload, $mode roles" 0 "$mode"
	[ "$RC" -eq 0 ] || continue
	total=$(check_folded "$TMP/$mode.folded") || { check_failed "bad folded profile: $total"; continue; }
	if python3 "$CHECK" "$TMP/$mode.folded" "$TMP/$mode.truth" 999 \
		"$(basename "$WORKLOAD")" 3; then
		ok "preload, $mode: shares within 3 points of the truth ($total samples)"
	else
		check_failed "preload, $mode: the profile does not match the truth (see above)"
	fi
	grep -q "0 lost" "$TMP/$mode.err" || check_failed "samples were lost: $(grep samples "$TMP/$mode.err")"
done
finish
