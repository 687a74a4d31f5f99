#!/bin/bash
# bench/scale/report_functions.sh: the CPU time of one `ciprof report` against the number of
# functions in the suite (docs/benchmarks.md, "Hostile sizes"). For each N, a store of M main
# runs (default 30, the history a report loads at most) and 3 runs of one head commit (report
# judges the head's runs together), each run N
# functions under 550 callers with seeded counts of 5-200 samples; then each CIPROF given reports
# the head against main (JSON), in turn; their CPU seconds (user + system) are printed. From
# 5,000 to 20,000 functions a linear cost grows 4 times, a quadratic one 16.
#
#   bench/scale/report_functions.sh [-n "N..."] [-m M] CIPROF...   (default N: 1000 5000 20000)
set -eu
SIZES="1000 5000 20000" M=30
while getopts n:m: o; do case $o in n) SIZES=$OPTARG ;; m) M=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,11p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-repfn.XXXXXX")
trap 'rm -rf "$D"' EXIT
cat >"$D/gen.py" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
r, base = random.Random(seed), random.Random(1)
for i in range(n):
    c = int(base.uniform(5, 200))
    c = max(1, int(r.gauss(c, c ** 0.5)))
    print(f"suite;main;mod{i % 50};caller{i % 500};fn_{i} {c}")
PY
first=$1
for n in $SIZES; do
	db="$D/s$n.db"
	for i in $(seq 1 "$M"); do
		python3 "$D/gen.py" "$n" "$i" >"$D/r.folded"
		"$first" import -q --db "$db" --format folded --branch main \
			--commit "$(printf '%040d' "$i")" "$D/r.folded"
	done
	for j in 1 2 3; do
		python3 "$D/gen.py" "$n" $((100 + j)) >"$D/r.folded"
		"$first" import -q --db "$db" --format folded --branch pr \
			--commit "$(printf 'a%039d' 0)" "$D/r.folded"
	done
	for c in "$@"; do
		/usr/bin/time -f "%U %S" -o "$D/t" "$c" report -q --db "$db" --head $((M + 3)) --base main \
			--format json -o "$D/out.json" 2>/dev/null || true
		awk -v n="$n" -v c="$c" '{ printf "%6d functions  %-40s %8.2f CPU-s\n", n, c, $1 + $2 }' "$D/t"
	done
done
