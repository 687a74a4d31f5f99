#!/bin/bash
# ciprof ab on two CTest builds: each test of both sides runs in turn (ctest -R '^NAME$', the
# suite's own -j kept), base first in odd rounds and head first in even ones; tests are named
# in the report; a planted 3x slowdown of one test (whose name holds regex characters) is that
# test's regression; a test on one side only is said and left out.
. "$(dirname "$0")/lib.sh"

command -v cmake >/dev/null && command -v ctest >/dev/null || fail "cmake and ctest are needed"
W=$TMP/work
cc -O1 -fno-omit-frame-pointer -o "$W" "$CIPROF_SRC/tests/integration/ab/work.c" ||
	fail "cannot compile the workload"
LOG=$TMP/order.log
mkdir -p "$TMP/src"
cat >"$TMP/src/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.10)
project(abct NONE)
enable_testing()
add_test(NAME steady COMMAND sh -c "echo steady-\${SIDE} >>$LOG; $W 30 0")
add_test(NAME "slow.one+" COMMAND sh -c "echo slow-\${SIDE} >>$LOG; $W 0 \${SLOW}")
if(EXTRA)
  add_test(NAME extra COMMAND $W 1 1)
endif()
CM
cmake -S "$TMP/src" -B "$TMP/base" -DSIDE=B -DSLOW=30 >/dev/null &&
	cmake -S "$TMP/src" -B "$TMP/head" -DSIDE=H -DSLOW=90 -DEXTRA=1 >/dev/null ||
	fail "cannot configure the CTest projects"
cd "$TMP" || fail "cannot enter $TMP"

run_capture ab "$CIPROF" ab --no-store --hz 999 --max-rounds 2 --format json \
	--base "ctest --test-dir base -j2" --head "ctest --test-dir head -j2"
expect_rc "ab on two ctest builds" 0 ab
want="steady-B steady-H slow-B slow-H steady-H steady-B slow-H slow-B"
got=$(tr '\n' ' ' <"$LOG" | sed 's/ $//')
[ "$got" = "$want" ] && ok "each test of both sides in turn, ABBA by round" ||
	check_failed "run order '$got', expected '$want'"
grep -q "test extra is listed by the head side only: not compared" "$TMP/ab.err" &&
	ok "a test on one side only is said" || check_failed "no warning about the test 'extra'"
python3 - "$TMP/ab.out" <<'PY' || check_failed "the per-test comparison is not as expected (above)"
import json, sys
r = json.load(open(sys.argv[1]))
t = {x["name"]: x for x in r["tests"]}
errors = []
if set(t) - {""} != {"steady", "slow.one+"}:
    errors.append(f"tests {sorted(t)}")
s = t.get("slow.one+", {})
if not 1.5 <= s.get("delta", 0) <= 2.5:
    errors.append(f"slow.one+ changed by {s.get('delta')}")
if t.get("steady", {}).get("significant"):
    errors.append("steady flagged")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

# --per-test no: whole-suite rounds even for ctest.
: >"$LOG"
run_capture suite "$CIPROF" ab --no-store --hz 99 --max-rounds 1 --per-test no \
	--base "ctest --test-dir base" --head "ctest --test-dir head"
expect_rc "--per-test no" 0 suite
[ "$(wc -l <"$LOG")" -eq 4 ] && ok "--per-test no runs each suite once per round" ||
	check_failed "--per-test no: $(wc -l <"$LOG") test runs logged, expected 4"
run_capture pt "$CIPROF" ab --no-store --per-test yes --base "true" --head "true"
expect_rc "--per-test yes without ctest" 2 pt
finish
