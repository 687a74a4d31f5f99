#!/usr/bin/env bash
# bench/ab/late.sh: `ciprof ab` on the CI templates' A/B test project while ciprof itself is
# starved, two ciprof binaries alternately (side by side under the same load).
#
#   bench/ab/late.sh CIPROF_A CIPROF_B [N]     (N comparisons of each, default 10)
#
# The project is tests/integration/test_ci_templates_ab.sh's: one program `spin`, tests
# spin_small (`spin 20`) and spin_large (`spin 30`, `spin 90` on the head), compared as
# ci-templates/ab.sh calls ciprof ab (base behind `cd DIR && ctest`, head plain ctest,
# --max-rounds 6 --hz 4999). During each comparison a loop stops that ciprof process, and only
# it, for STOP_S seconds (0.15) of every STOP_S + RUN_S (0.05): a machine too loaded to run
# ciprof while a short test starts and ends, made frequent. Per comparison it prints whether
# the template test's check holds (verdict regression, spin_large slower, spin_small not
# flagged), and of its 12 runs how many lost one test's samples to "(outside tests)" and how
# many lost every test's (the ctest itself missed).
set -euo pipefail
a=${1:?usage: late.sh CIPROF_A CIPROF_B [N]}
b=${2:?usage: late.sh CIPROF_A CIPROF_B [N]}
n=${3:-10}
stop_s=${STOP_S:-0.15}
run_s=${RUN_S:-0.05}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-late.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ws=$tmp/ws
mkdir -p "$ws"
cd "$ws"
cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(widgets C)
enable_testing()
add_executable(spin spin.c)
add_test(NAME spin_small COMMAND spin 20)
add_test(NAME spin_large COMMAND spin 30)
EOF
cp "$src/tests/integration/data/spin.c" spin.c
cp -r "$ws" "$tmp/base"
sed -i 's/spin 30)/spin 90)/' CMakeLists.txt
for d in "$ws" "$tmp/base"; do
	cmake -S "$d" -B "$d/build" >/dev/null && cmake --build "$d/build" >/dev/null
done

for i in $(seq "$n"); do
	for side in A B; do
		bin=$a
		[ "$side" = B ] && bin=$b
		db=$tmp/$side-$i.db
		rc=0
		"$bin" ab --db "$db" --base "cd $(printf '%q' "$tmp/base") && ctest --test-dir build" \
			--head "ctest --test-dir build" --format json --fail-on-regression \
			-o "$tmp/$side-$i.json" --max-rounds 6 --hz 4999 >/dev/null 2>"$tmp/$side-$i.err" &
		pid=$!
		while kill -0 "$pid" 2>/dev/null; do
			kill -STOP "$pid" 2>/dev/null || true
			sleep "$stop_s"
			kill -CONT "$pid" 2>/dev/null || true
			sleep "$run_s"
		done
		wait "$pid" || rc=$?
		lost_one=0 lost_all=0
		for id in $("$bin" runs --db "$db" --limit 0 --format json |
			python3 -c 'import json,sys; print(" ".join(str(r["id"]) for r in json.load(sys.stdin)["runs"]))'); do
			case $("$bin" show --db "$db" --run "$id" --by test --format json | python3 -c '
import json, sys
t = {x["name"]: x["samples"] for x in json.load(sys.stdin)["tests"]}
zero = [n for n in ("spin_small", "spin_large") if not t.get(n)]
print(len(zero))') in
			1) lost_one=$((lost_one + 1)) ;;
			2) lost_all=$((lost_all + 1)) ;;
			esac
		done
		python3 - "$tmp/$side-$i.json" "$side" "$i" "$rc" "$lost_one" "$lost_all" <<'PY'
import json, sys
path, side, i, rc, one, whole = sys.argv[1:]
try:
    r = json.load(open(path))
except (OSError, ValueError):
    print(f"{side} {i}: exit {rc}, no report")
    sys.exit(0)
t = {x["name"]: x for x in r["tests"]}
large = t.get("spin_large", {})
ok = r["verdict"] == "regression" and large.get("kind") == "regression" \
    and not t.get("spin_small", {}).get("significant")
print(f"{side} {i}: {'pass' if ok else 'FAIL'} (verdict {r['verdict']}, spin_large "
      f"{large.get('kind')} p {large.get('p_value', 1):.3g}); runs with one test lost {one}/12, "
      f"with every test lost {whole}/12")
PY
	done
done
