#!/bin/bash
# A frameless hot leaf under the default --unwind fp (docs/unwinding.md): the cmocka example
# test_cmocka_leaf, whose four tests each call leaf_mix (no frame of its own) from their own
# loop. The kernel's frame-pointer walk skips leaf_mix's caller, the test function; ciprof
# puts it back from a 512-byte stack copy and leaf_mix's CFI.
# - default options: every test gets its share of the CPU within 2 points of what it measured
#   itself, and at least 95 % of leaf_mix's samples have their test as caller;
# - --unwind dwarf agrees (same caller check, same tolerance);
# - so does the LD_PRELOAD backend (its sampler copies 512 bytes of stack too), and its walk
#   alone (--unwind fp-only) loses the caller;
# - --unwind fp-only (the kernel's walk alone) loses the caller: the checks above mean
#   something.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

fw_require libcmocka-dev pkg-config --exists cmocka
fw_build cmocka
BIN=$FW_OUT/test_cmocka_leaf
[ -x "$BIN" ] || fail "$BIN not built"
cd "$TMP" || fail "cannot enter $TMP"

# leaf_callers FILE: "BYTEST TOTAL PERCENT": of leaf_mix's samples, how many were called by a
# test_leaf_* function.
leaf_callers() {
	python3 - "$1" <<'PY'
import sys
total = by_test = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1] != "leaf_mix":
        continue
    total += int(count)
    if len(frames) >= 2 and frames[-2].startswith("test_leaf_"):
        by_test += int(count)
print(by_test, total, f"{100.0 * by_test / total:.1f}" if total else "0.0")
PY
}

# profile LABEL [OPTION...]: runs the suite under ciprof run OPTION..., checks the status,
# leaves LABEL.folded, LABEL.truth and LABEL.show (ciprof show --by test --format json).
profile() {
	local label=$1
	shift
	rm -f "$label.truth"
	run_capture "$label" env CIPROF_TRUTH="$TMP/$label.truth" "$CIPROF" run -v \
		--db "$TMP/$label.db" -o "$TMP/$label.folded" "$@" -- "$BIN"
	expect_rc "$label: ciprof run $* -- test_cmocka_leaf" 0 "$label"
	run_capture "$label.show" "$CIPROF" show --db "$TMP/$label.db" --by test --format json
	expect_rc "$label: ciprof show --by test" 0 "$label.show"
}

# expect_right LABEL: LABEL's tests within 2 points of the truth, and at least 95 % of
# leaf_mix's samples called by their test.
expect_right() {
	local label=$1 by_test total pct
	if python3 "$FW_SRC/compare_truth.py" "$TMP/$label.show.out" "$label.truth" --tolerance 2; then
		ok "$label: every test within 2 points of its own CPU accounting"
	else
		check_failed "$label: per-test shares do not match the truth (see above)"
	fi
	read -r by_test total pct < <(leaf_callers "$label.folded")
	if [ "$total" -ge 200 ] && python3 -c 'import sys; sys.exit(float(sys.argv[1]) < 95)' "$pct"; then
		ok "$label: $by_test of $total leaf_mix samples ($pct %) are called by their test"
	else
		check_failed "$label: only $by_test of $total leaf_mix samples ($pct %) are called by a test; stacks:"
		sort -t' ' -k2 -nr "$label.folded" | head -5 | sed 's/^/    /' >&2
	fi
}

# 1. Default options: right tests, right caller.
profile default
expect_right default
expect_grep "default: -v says what the CFI did" "$TMP/default.err" "stacks checked against the leaf's CFI"
grep "leaf's CFI" "$TMP/default.err" | sed "s/^/note [$TEST_NAME]: /"

# 2. --unwind dwarf agrees.
profile dwarf --unwind dwarf
expect_right dwarf

# 3. The LD_PRELOAD backend puts the caller back the same way, from the stack copy its
#    sampler takes (docs/preload.md).
profile preload --backend preload
expect_right preload
expect_grep "preload: -v says what the CFI did" "$TMP/preload.err" "stacks checked against the leaf's CFI"

# 4. The preload sampler's walk alone loses the caller too.
profile plfponly --backend preload --unwind fp-only
read -r by_test total pct < <(leaf_callers plfponly.folded)
if [ "$total" -ge 200 ] && python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 10)' "$pct"; then
	ok "preload fp-only: $by_test of $total leaf_mix samples ($pct %) name their test: the walk alone loses it"
else
	check_failed "preload fp-only: $by_test of $total leaf_mix samples ($pct %) name their test; check 3 proves nothing"
fi

# 5. The kernel's walk alone loses the caller.
profile fponly --unwind fp-only
read -r by_test total pct < <(leaf_callers fponly.folded)
if [ "$total" -ge 200 ] && python3 -c 'import sys; sys.exit(float(sys.argv[1]) > 10)' "$pct"; then
	ok "fp-only: $by_test of $total leaf_mix samples ($pct %) name their test: the walk alone loses it"
else
	check_failed "fp-only: $by_test of $total leaf_mix samples ($pct %) name their test; the checks above prove nothing"
fi
if python3 "$FW_SRC/compare_truth.py" "$TMP/fponly.show.out" fponly.truth --tolerance 2 >/dev/null; then
	check_failed "fp-only: the tests matched the truth without the leaf's CFI"
else
	ok "fp-only: per-test shares are wrong without the leaf's CFI"
fi
finish
