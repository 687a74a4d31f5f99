#!/usr/bin/env bash
# bench/ab/bell.sh: CTest tests too short for ciprof's 25 ms rounds, two ciprof binaries
# alternately (side by side under the same load).
#
#   bench/ab/bell.sh CIPROF_A CIPROF_B [N]     (N runs of each, default 10)
#
# Naming: a project of five tests that run one program `spin` for 5-30 ms of CPU each
# (`ctest -j2`); per binary, the runs in which a test's samples went outside tests and the
# tests so lost. Cost: `sh -c` running /bin/true 1000 times (an exec every ~1 ms, each one
# ringing the exec doorbells), wall time B / A per pair and the median ratio.
# Set HOG=1 for a CPU hog on every core during the runs.
set -euo pipefail
a=$(realpath "${1:?usage: bell.sh CIPROF_A CIPROF_B [N]}")
b=$(realpath "${2:?usage: bell.sh CIPROF_A CIPROF_B [N]}")
n=${3:-10}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-bell.XXXXXX")
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT

cd "$tmp"
cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(bell C)
enable_testing()
add_executable(spin spin.c)
add_test(NAME spin_small COMMAND spin 20)
add_test(NAME spin_large COMMAND spin 30)
add_test(NAME spin_a COMMAND spin 5)
add_test(NAME spin_b COMMAND spin 6)
add_test(NAME spin_c COMMAND spin 7)
EOF
cp "$src/tests/integration/data/spin.c" spin.c
git init -q . # the store goes to --db; git only so that run finds a work tree
cmake -S . -B build >/dev/null && cmake --build build >/dev/null

if [ "${HOG:-0}" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		(while :; do :; done) &
		hogs+=($!)
	done
fi

declare -A lostruns=([a]=0 [b]=0) lost=([a]=0 [b]=0)
ratios=()
for i in $(seq "$n"); do
	for which in a b; do
		c=$a
		[ "$which" = b ] && c=$b
		rm -f db.sqlite
		"$c" -q run --db db.sqlite -- ctest --test-dir build -j2 >/dev/null 2>&1
		k=$("$c" show --db db.sqlite --by test --format json | python3 -c '
import json, sys
t = {x["name"]: x["samples"] for x in json.load(sys.stdin)["tests"]}
print(sum(1 for k in ("spin_small", "spin_large", "spin_a", "spin_b", "spin_c") if not t.get(k)))')
		[ "$k" -gt 0 ] && lostruns[$which]=$((lostruns[$which] + 1))
		lost[$which]=$((lost[$which] + k))
	done
	ta=$( { /usr/bin/time -f %e "$a" -q run --no-store -- sh -c 'for i in $(seq 1000); do /bin/true; done' >/dev/null; } 2>&1 | tail -1)
	tb=$( { /usr/bin/time -f %e "$b" -q run --no-store -- sh -c 'for i in $(seq 1000); do /bin/true; done' >/dev/null; } 2>&1 | tail -1)
	ratios+=("$(python3 -c "print(f'{$tb / $ta:.3f}')")")
done
echo "naming, $n runs each: A lost a test in ${lostruns[a]} runs (${lost[a]} of $((5 * n)) tests); B in ${lostruns[b]} runs (${lost[b]} of $((5 * n)) tests)"
echo "cost, 1000 execs: wall B/A per pair ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
