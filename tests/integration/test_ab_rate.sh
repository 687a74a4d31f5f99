#!/bin/bash
# ciprof ab's sampling rate is what docs/ab.md says: its own default (read from the page's
# "samples at **N Hz** by default" and from `ciprof ab --help`), which run.hz and
# CIPROF_RUN_HZ do not change; ab.hz in .ciprof.yml sets it, CIPROF_AB_HZ wins over the
# file, --hz over both. The rate is read back from the stored runs (`ciprof runs` JSON).
. "$(dirname "$0")/lib.sh"
unset CIPROF_AB_HZ CIPROF_RUN_HZ CIPROF_CONFIG

W=$TMP/work
cc -O1 -fno-omit-frame-pointer -o "$W" "$CIPROF_SRC/tests/integration/ab/work.c" ||
	fail "cannot compile the workload"
cd "$TMP" || fail "cannot enter $TMP"

doc=$(grep -o 'samples at \*\*[0-9]* Hz\*\* by default' "$CIPROF_SRC/docs/ab.md" | grep -o '[0-9][0-9]*')
[ -n "$doc" ] || fail "docs/ab.md does not say 'samples at **N Hz** by default'"
"$CIPROF" ab --help >"$TMP/help.txt" 2>&1
grep -q "ab has its own sampling rate" "$TMP/help.txt" &&
	ok "ciprof ab --help says ab has its own rate" ||
	check_failed "ciprof ab --help does not say that ab has its own sampling rate"
grep -q -- "--hz N .*default $doc; ab.hz, CIPROF_AB_HZ" "$TMP/help.txt" &&
	ok "ab's --hz option names ab.hz, CIPROF_AB_HZ and default $doc" ||
	check_failed "ab's --hz help line does not name 'default $doc; ab.hz, CIPROF_AB_HZ'"
[ "$("$CIPROF" config --get ab.hz 2>&1)" = "$doc" ] && ok "ciprof config: ab.hz is $doc by default" ||
	check_failed "ciprof config --get ab.hz is not $doc"

# rate_of NAME EXPECTED WHAT [ENV=V...] -- [AB OPTIONS...]: one round of identical sides,
# stored in its own database; every stored run must have been sampled at EXPECTED Hz.
rate_of() {
	local name=$1 want=$2 what=$3
	shift 3
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	run_capture "$name" env "${envs[@]}" "$CIPROF" ab --db "$TMP/$name.db" --max-rounds 1 \
		--format json "$@" --base "'$W' 2 2" --head "'$W' 2 2"
	if [ "$RC" -ne 0 ]; then
		check_failed "$what: ciprof ab exited $RC: $(tail -3 "$TMP/$name.err")"
		return
	fi
	"$CIPROF" runs --db "$TMP/$name.db" --format json >"$TMP/$name.runs" 2>&1
	local got
	got=$(python3 -c 'import json,sys; print(" ".join(sorted({str(r["hz"]) for r in json.load(open(sys.argv[1]))["runs"]})))' \
		"$TMP/$name.runs" 2>&1)
	[ "$got" = "$want" ] && ok "$what: both sides sampled at $want Hz" ||
		check_failed "$what: runs sampled at '$got' Hz, expected $want"
}

rate_of default "$doc" "no setting" --
rate_of runenv "$doc" "CIPROF_RUN_HZ (ciprof run's) does not apply" CIPROF_RUN_HZ=99 --
printf 'run:\n  hz: 99\n' >"$TMP/run.yml"
rate_of runhz2 "$doc" "run.hz in .ciprof.yml does not apply" CIPROF_CONFIG="$TMP/run.yml" --
printf 'ab:\n  hz: 1499\n' >"$TMP/ab.yml"
rate_of abfile 1499 "ab.hz in .ciprof.yml" CIPROF_CONFIG="$TMP/ab.yml" --
rate_of abenv 1999 "CIPROF_AB_HZ wins over the file" CIPROF_CONFIG="$TMP/ab.yml" CIPROF_AB_HZ=1999 --
rate_of abflag 299 "--hz wins over both" CIPROF_CONFIG="$TMP/ab.yml" CIPROF_AB_HZ=1999 -- --hz 299
finish
