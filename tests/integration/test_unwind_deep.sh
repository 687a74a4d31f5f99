#!/bin/bash
# Recursion deeper than the stack depth limits (docs/unwinding.md, "Deep stacks"): a program
# built with frame pointers recursing 300 levels deep.
# - --unwind fp: the kernel's chain stops at kernel.perf_event_max_stack frames (127 by
#   default); ciprof says the stacks are deeper than that limit, naming the sysctl, and does
#   not blame missing frame pointers;
# - --unwind dwarf (with a stack copy big enough): stacks stop at ciprof's own 256-frame cap,
#   and ciprof says so.
. "$(dirname "$0")/lib.sh"
require_sampling
cd "$TMP" || fail "cannot enter $TMP"

cat >deep.c <<'C'
#include <stdlib.h>
__attribute__((noinline)) unsigned long leaf(unsigned long n)
{
	volatile unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i;
	return s;
}
__attribute__((noinline)) unsigned long rec(int d, unsigned long n)
{
	if (d == 0)
		return leaf(n);
	unsigned long r = rec(d - 1, n);
	return r + 1;
}
int main(int argc, char **argv)
{
	(void)argc;
	unsigned long s = 0;
	for (int i = 0; i < 20; i++)
		s += rec(atoi(argv[1]), 20000000);
	return s == 0;
}
C
cc -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o deep deep.c ||
	fail "cannot compile the recursive program"

# --backend perf: the limits are perf's; a machine refusing perf_event_open skips.
"$CIPROF" run --backend perf --no-store -- true >/dev/null 2>"$TMP/perf.err" ||
	skip "perf_event_open refused here: $(head -n1 "$TMP/perf.err")"

max=$(cat /proc/sys/kernel/perf_event_max_stack 2>/dev/null || echo 127)
run_capture fp "$CIPROF" run --backend perf --hz 999 --unwind fp --no-store -o fp.folded -- ./deep 300
expect_rc "--unwind fp, depth 300" 0 fp
expect_no_grep "--unwind fp: no frame-pointer advice" fp.err "without frame pointers"
if [ "$max" -lt 256 ]; then
	expect_grep "--unwind fp: the kernel's limit named" fp.err \
		"deeper than the kernel's limit of $max frames (kernel.perf_event_max_stack)"
else
	expect_grep "--unwind fp: ciprof's limit named" fp.err "deeper than ciprof's limit of 256 frames"
fi

run_capture dwarf "$CIPROF" run --backend perf --hz 999 --unwind dwarf --stack-size 65528 \
	--no-store -o dwarf.folded -- ./deep 300
expect_rc "--unwind dwarf, depth 300" 0 dwarf
expect_grep "--unwind dwarf: the 256-frame cap named" dwarf.err \
	"deeper than ciprof's limit of 256 frames"
expect_no_grep "--unwind dwarf: no frame-pointer advice" dwarf.err "without frame pointers"
# The cap is real: the deepest stack has 256 frames below the process.
deepest=$(awk '{ n = split($1, f, ";"); if (n > m) m = n } END { print m - 1 }' dwarf.folded)
[ "$deepest" -eq 256 ] && ok "--unwind dwarf stacks stop at 256 frames" ||
	check_failed "--unwind dwarf: the deepest stack has $deepest frames, not 256"
finish
