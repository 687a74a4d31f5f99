#!/bin/bash
# Accuracy: profile a workload that knows how much CPU each of its functions used (a parent,
# a forked child, a thread and a program exec'd through sh) and compare ciprof's folded
# profile with that truth: each burn_* function's inclusive share of samples within 2 points
# of its true share, complete call chains (burn_X -> spin_X), the process name as root frame,
# and a sample total matching the CPU time used.
. "$(dirname "$0")/lib.sh"

WORKLOAD=$CIPROF_BUILD/examples/accuracy/accuracy_workload
HZ=999
[ -x "$WORKLOAD" ] || fail "$WORKLOAD not built (target accuracy_workload)"

run_capture run "$CIPROF" run --hz $HZ --no-store -o "$TMP/p.folded" --format folded -- \
	"$WORKLOAD" --truth "$TMP/truth.txt"
expect_rc "ciprof run accuracy_workload" 0 run
[ "$RC" -eq 0 ] || finish
[ -s "$TMP/truth.txt" ] || fail "the workload wrote no truth file"
total=$(check_folded "$TMP/p.folded") || fail "bad folded profile: $total"
ok "folded profile is well-formed, $total samples"

# The root frame names the process: its executable's base name, in full or cut to the
# kernel's 15-byte comm.
exe=$(basename "$WORKLOAD")

python3 "$(dirname "$0")/accuracy_check.py" "$TMP/p.folded" "$TMP/truth.txt" "$HZ" "$exe" 2 ||
	check_failed "profile does not match the truth (see above)"
[ "$FAILURES" -eq 0 ] && ok "shares, call chains, root frames and sample total match the truth"
finish
