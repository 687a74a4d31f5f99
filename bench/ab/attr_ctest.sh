#!/usr/bin/env bash
# bench/ab/attr_ctest.sh: test_attr_ctest's bash-c case (examples/frameworks/ctest behind
# `bash -c "cd DIR && ctest -j2"`) with a CPU hog on every core, two ciprof binaries
# alternately (side by side under the same load).
#
#   bench/ab/attr_ctest.sh CIPROF_A CIPROF_B [N]     (N runs of each, default 20)
#
# Per binary: the runs whose per-test shares compare_truth.py rejects (a test more than 5
# points from its own measured CPU time, as the test checks), the runs that warned that the
# kernel moved per-task counts to the exec doorbells, and the largest excess of one test's
# CPU seconds over its measured time. HOG=0 runs without the hogs.
set -euo pipefail
a=$(realpath "${1:?usage: attr_ctest.sh CIPROF_A CIPROF_B [N]}")
b=$(realpath "${2:?usage: attr_ctest.sh CIPROF_A CIPROF_B [N]}")
n=${3:-20}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-attr-ctest.XXXXXX")
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$src/examples/frameworks/ctest/build.sh" "$tmp/fw" >/dev/null
if [ "${HOG:-1}" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		hogs+=($!)
	done
fi

declare -A failed=([a]=0 [b]=0) warned=([a]=0 [b]=0) worst=([a]=0 [b]=0)
for i in $(seq "$n"); do
	for which in a b; do
		c=$a
		[ "$which" = b ] && c=$b
		rm -f "$tmp/db" "$tmp/truth"
		CIPROF_SYMBOL_CACHE=$tmp/symbols CIPROF_TRUTH=$tmp/truth "$c" run --hz 499 \
			--db "$tmp/db" -- bash -c "cd '$tmp/fw' && ctest -j2" >/dev/null 2>"$tmp/err"
		grep -q "to the exec doorbells" "$tmp/err" && warned[$which]=$((warned[$which] + 1))
		"$c" show --db "$tmp/db" --by test --format json >"$tmp/show.json"
		python3 "$src/examples/frameworks/compare_truth.py" "$tmp/show.json" "$tmp/truth" \
			>/dev/null 2>&1 || failed[$which]=$((failed[$which] + 1))
		x=$(python3 -c '
import json, sys
truth = {}
for line in open(sys.argv[2]):
    k, v = line.split()
    truth[k] = truth.get(k, 0.0) + float(v)
got = {t["name"]: t["cpu_seconds"] for t in json.load(open(sys.argv[1]))["tests"]}
print(f"{max(got.get(k, 0.0) - v for k, v in truth.items()):.3f}")' "$tmp/show.json" "$tmp/truth")
		worst[$which]=$(python3 -c "print(max($x, ${worst[$which]}))")
		echo "run $i $which: excess $x s"
	done
done
for which in a b; do
	c=$a
	[ "$which" = b ] && c=$b
	echo "$which ($c): ${failed[$which]} of $n runs failed the 5-point check;" \
		"${warned[$which]} warned of counts moved to the doorbells;" \
		"largest excess of one test ${worst[$which]} s"
done
