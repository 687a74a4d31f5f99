#!/bin/bash
# The symbol cache across runs (docs/symbolization.md): a second run of the same program takes
# its names from the cache ($CIPROF_SYMBOL_CACHE), with no libdwfl session for what the first
# run already named; a program rebuilt at the same path (a new build id) gets its new names;
# corrupt cache files are reported by name and line and the run still succeeds with the right
# names; --no-symbol-cache neither reads nor writes the cache.
. "$(dirname "$0")/lib.sh"

command -v cc >/dev/null || skip "no C compiler"
export CIPROF_SYMBOL_CACHE=$TMP/cache

# hot VERSION: builds $TMP/hot whose CPU goes to hot_VERSION (no -g: named by ranges).
hot() {
	cat >"$TMP/hot.c" <<EOF
__attribute__((noinline)) static unsigned long hot_$1(unsigned long n)
{
	volatile unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}
int main(void) { return hot_$1(150000000UL) == 42; }
EOF
	cc -O1 -fno-omit-frame-pointer -o "$TMP/hot.tmp" "$TMP/hot.c" && mv -f "$TMP/hot.tmp" "$TMP/hot" ||
		fail "cannot build the test program"
}

# frames FOLDED: the set of frame names in a folded profile, one a line, sorted.
frames() {
	sed 's/ [0-9]*$//' "$1" | tr ';' '\n' | sort -u
}

# sessions NAME: libdwfl sessions of run NAME (-v); hits NAME: addresses from the cache.
sessions() { sed -n 's/.*symbols: \([0-9]*\) libdwfl sessions.*/\1/p' "$TMP/$1.err"; }
hits() { sed -n 's/.*symbol cache: \([0-9]*\) addresses from the cache.*/\1/p' "$TMP/$1.err"; }

hot v1
run_capture first "$CIPROF" run -v --no-store --hz 999 -o "$TMP/first.folded" -- "$TMP/hot"
expect_rc "first run" 0 first
expect_grep "first run names the hot function" "$TMP/first.folded" "hot_v1"
ls "$CIPROF_SYMBOL_CACHE"/*.sym >/dev/null 2>&1 && ok "cache files written" ||
	check_failed "no cache file in $CIPROF_SYMBOL_CACHE: $(cat "$TMP/first.err")"
[ "$(sessions first)" -ge 1 ] && ok "first run: $(sessions first) libdwfl sessions" ||
	check_failed "first run: no libdwfl session counted: $(cat "$TMP/first.err")"

run_capture second "$CIPROF" run -v --no-store --hz 999 -o "$TMP/second.folded" -- "$TMP/hot"
expect_rc "second run" 0 second
expect_grep "second run names the hot function" "$TMP/second.folded" "hot_v1"
[ "$(hits second)" -ge 1 ] && ok "second run: $(hits second) addresses from the cache" ||
	check_failed "second run: nothing from the cache: $(cat "$TMP/second.err")"
# Samples land where they will: when every frame of the second run is a function the first
# run named (and none is the vdso, or an unnamed module+0x address), nothing was left for a
# session to find.
if [ -z "$(comm -13 <(frames "$TMP/first.folded") <(frames "$TMP/second.folded"))" ] &&
	! grep -q '\[vdso\]\|+0x' "$TMP/second.folded"; then
	[ "$(sessions second)" = 0 ] && ok "second run: no libdwfl session" ||
		check_failed "second run: $(sessions second) sessions for functions the first named"
else
	ok "second run sampled new functions ($(sessions second) sessions): not counted"
fi

# Rebuilt: another build id at the same path, the new name only.
hot v2
run_capture rebuilt "$CIPROF" run -v --no-store --hz 999 -o "$TMP/rebuilt.folded" -- "$TMP/hot"
expect_rc "rebuilt program" 0 rebuilt
expect_grep "rebuilt program: the new name" "$TMP/rebuilt.folded" "hot_v2"
expect_no_grep "rebuilt program: no stale name" "$TMP/rebuilt.folded" "hot_v1"

# Corrupt: every cache file damaged; the run succeeds, says which file, and names right.
for f in "$CIPROF_SYMBOL_CACHE"/*.sym; do
	sed -i '5s/^./Q/' "$f"
done
run_capture corrupt "$CIPROF" run --no-store --hz 999 -o "$TMP/corrupt.folded" -- "$TMP/hot"
expect_rc "corrupt cache" 0 corrupt
expect_grep "corrupt cache: the file and line are named" "$TMP/corrupt.err" ".sym:5: "
expect_grep "corrupt cache: the right name" "$TMP/corrupt.folded" "hot_v2"

# --no-symbol-cache: the folder is not touched.
rm -rf "$CIPROF_SYMBOL_CACHE"
run_capture off "$CIPROF" run -v --no-store --no-symbol-cache --hz 999 -o "$TMP/off.folded" -- "$TMP/hot"
expect_rc "--no-symbol-cache" 0 off
expect_grep "--no-symbol-cache: names" "$TMP/off.folded" "hot_v2"
[ ! -e "$CIPROF_SYMBOL_CACHE" ] && ok "--no-symbol-cache writes nothing" ||
	check_failed "--no-symbol-cache made $CIPROF_SYMBOL_CACHE"
expect_no_grep "--no-symbol-cache: no cache line" "$TMP/off.err" "symbol cache:"

finish
