#!/bin/bash
# Samples a stack rule could not name (docs/attribution.md, Known limits), in a cmocka suite
# named by the cmocka stack rule:
# - test_sort runs qsort with its own comparison and test_alloc malloc and free, which Debian's
#   libc runs without frame pointers, so under the default --unwind fp those samples' stacks
#   end inside libc, above the test's frame: ciprof run says how many samples that left
#   outside tests, where their stacks end, and that --unwind dwarf keeps them; --unwind dwarf
#   says nothing and gives test_sort and test_alloc those samples back (the figure is real);
#   the LD_PRELOAD backend warns too, with its own advice;
# - test_threads runs its work on threads it starts (spin_worker), whose stacks begin at
#   start_thread: ciprof run says so, naming spin_worker, under any unwinding;
# - the same work with no cmocka (no rule names anything): no warning, since a harness's own
#   time in libc or on its threads is outside tests anyway.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require libcmocka-dev pkg-config --exists cmocka
require_sampling
BIN=$TMP/rule_losses
# shellcheck disable=SC2046
cc -O2 -g -fno-omit-frame-pointer -o "$BIN" "$CIPROF_SRC/tests/integration/data/rule_losses.c" \
	$(pkg-config --cflags --libs cmocka) || fail "cannot build rule_losses.c"
cd "$TMP" || fail "cannot enter $TMP"

# profile NAME [OPTION...] -- ARG...: a stored run in $TMP/NAME.db, its stderr in NAME.err
profile() {
	local name=$1
	shift
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	"$CIPROF" run --db "$TMP/$name.db" "${opts[@]}" -- "$BIN" "$@" >/dev/null 2>"$TMP/$name.err" ||
		fail "ciprof run ${opts[*]} failed: $(tail -3 "$TMP/$name.err")"
}

# outside NAME: "OUTSIDE SORT ALLOC TOTAL" samples of the run in NAME.db
outside() {
	"$CIPROF" show --db "$TMP/$1.db" --by test --format json | python3 -c '
import json, sys
t = {x["name"]: x["samples"] for x in json.load(sys.stdin)["tests"]}
print(t.get("", 0), t.get("test_sort", 0), t.get("test_alloc", 0), sum(t.values()))'
}

# warned NAME: the warning's share (a number), or nothing
warned() {
	sed -n 's/^ciprof: warning: \([0-9.]*\)% of samples are outside tests because their call stacks end inside libc.*/\1/p' "$TMP/$1.err"
}

# threads NAME: the thread warning's share, or nothing; it must name spin_worker first (the
# function the threads spend their time in; a sample of the thread's start or end in libc,
# __getpagesize say, may follow it)
threads() {
	sed -n 's/^ciprof: warning: \([0-9.]*\)% of samples are outside tests because they ran on threads (in spin_worker[^)]*) of a process whose tests a stack rule names.*ciprof_test_begin.*/\1/p' "$TMP/$1.err"
}

profile fp --
read -r out sort alloc total < <(outside fp)
share=$(warned fp)
[ -n "$share" ] || fail "no libc warning under --unwind fp (outside tests $out of $total): $(cat "$TMP/fp.err")"
grep -q 'end inside libc (in .*msort_with_tmp\|end inside libc (in .*malloc\|end inside libc (in .*free' "$TMP/fp.err" ||
	check_failed "the warning does not name where the stacks end: $(grep warning "$TMP/fp.err")"
grep -q -- '--unwind dwarf keeps them' "$TMP/fp.err" || check_failed "no --unwind dwarf advice"
# The figure is the samples outside tests, not more (every outside sample here ends in libc
# or is the program's start).
python3 -c "import sys; s, o, t = float('$share'), $out, $total; sys.exit(0 if s <= 100.0 * o / t + 0.1 and s >= 10 else 1)" ||
	check_failed "warning says $share %, but $out of $total samples are outside tests"
tshare=$(threads fp)
[ -n "$tshare" ] || check_failed "no thread warning naming spin_worker: $(grep warning "$TMP/fp.err")"
python3 -c "import sys; s, t, o, n = float('$share'), float('${tshare:-0}'), $out, $total; sys.exit(0 if s + t <= 100.0 * o / n + 0.2 and t >= 2 else 1)" ||
	check_failed "warnings say $share % (libc) and $tshare % (threads), but $out of $total samples are outside tests"
ok "--unwind fp: $share % of samples said outside tests for libc, $tshare % for threads ($out of $total outside)"

profile dwarf --unwind dwarf --
read -r dout dsort dalloc dtotal < <(outside dwarf)
[ -z "$(warned dwarf)" ] || check_failed "--unwind dwarf warned about libc: $(grep warning "$TMP/dwarf.err")"
[ -n "$(threads dwarf)" ] || check_failed "--unwind dwarf did not warn about the test's threads: $(grep warning "$TMP/dwarf.err")"
# dwarf gives the tests their libc time back: the advice is true
python3 -c "import sys; sys.exit(0 if $dout / $dtotal < 0.5 * $out / $total and $dsort > 2 * $sort else 1)" ||
	check_failed "--unwind dwarf did not give the tests their libc samples back: outside $dout of $dtotal (fp: $out of $total), test_sort $dsort (fp: $sort)"
ok "--unwind dwarf: no libc warning, the thread warning, outside tests $dout of $dtotal, test_sort $dsort (fp $sort), test_alloc $dalloc (fp $alloc)"

if "$CIPROF" run --backend preload --no-store -- true >/dev/null 2>&1; then
	profile pre --backend preload --
	grep -q 'end inside libc (in .*LD_PRELOAD backend walks frame pointers only; the perf backend.s --unwind dwarf keeps them' "$TMP/pre.err" ||
		check_failed "no libc warning with the preload backend's advice: $(cat "$TMP/pre.err")"
	# a stripped libcmocka ends every test's stack: that alone is no warning
	grep -q 'stop short of the program' "$TMP/pre.err" &&
		check_failed "the preload backend warned about stacks ending in the stripped libcmocka: $(grep 'stop short' "$TMP/pre.err")"
	ok "preload backend: warned with its own advice"
else
	echo "ok   [$TEST_NAME]: (preload backend unavailable here: not checked)"
fi

profile plain -- plain
grep -q 'warning: .*% of samples are outside tests' "$TMP/plain.err" &&
	check_failed "warned with no stack rule naming anything: $(grep warning "$TMP/plain.err")"
ok "no cmocka: no warning"

[ "$FAILURES" = 0 ] || exit 1
