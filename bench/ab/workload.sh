#!/usr/bin/env bash
# bench/ab/workload.sh: `ciprof ab` on a bench/verdicts workload, such as workload2, the suite
# the history mode misses a jumpy function on (docs/benchmarks.md, "A second workload, never
# tuned on"), or workload3, on which it finds none of the planted changes ("A third workload").
#
#   bench/ab/workload.sh [CIPROF]        (default: $CIPROF, else ./build/ciprof)
#
# Builds the workload (WL) in a scratch folder and runs, N times each, an A/A comparison (both sides
# `ctest --test-dir build -j2`) and an A/B comparison per percentage in PCTS, whose head runs
# the same suite with FUNC made that much slower (VB_SLOW_FUNC, VB_SLOW_PCT), each with
# --fail-on-regression at ciprof ab's defaults. Prints one line per comparison (exit status,
# rounds, seconds, FUNC's measured change and kind, everything flagged) and a summary.
#
# Environment: WL (workload2: a folder of bench/verdicts), N (6), FUNC (the workload's
# planted.json FUNC20: sip_rounds, the 18 % function, for workload2), PCTS ("20 10"), AB_ARGS
# (more `ciprof ab` options, split on spaces: "--max-rounds 20").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ciprof=$(realpath "${1:-${CIPROF:-./build/ciprof}}")
wl=${WL:-workload2}
[ -f "$here/../verdicts/$wl/planted.json" ] || { echo "no workload $wl in bench/verdicts" >&2; exit 2; }
n=${N:-6}
func=${FUNC:-$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["FUNC20"])' "$here/../verdicts/$wl/planted.json")}
pcts=${PCTS:-20 10}
work=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-bench-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$here/../verdicts/$wl/"*.c "$here/../verdicts/$wl/CMakeLists.txt" "$work/"
cd "$work"
cmake -S . -B build -DCMAKE_BUILD_TYPE= >/dev/null
cmake --build build -j2 >/dev/null
suite="ctest --test-dir build -j2"

one() { # KIND PCT
	local kind=$1 pct=$2 head=$suite rc=0
	[ "$pct" = 0 ] || head="env VB_SLOW_FUNC=$func VB_SLOW_PCT=$pct $suite"
	# shellcheck disable=SC2086 # AB_ARGS is split on purpose
	"$ciprof" -q ab --no-store --format json --fail-on-regression ${AB_ARGS:-} --base "$suite" \
		--head "$head" >out.json 2>err.txt || rc=$?
	[ "$rc" -le 1 ] || { cat err.txt >&2; exit 1; }
	python3 - "$kind" "$rc" "$func" <<'PY'
import json, sys
r = json.load(open("out.json")); kind, rc, func = sys.argv[1:4]
flag = [f"{x['name']}:{x['kind']}:{x['delta']:+.3f}" for x in r["tests"] + r["functions"]
        if x["significant"]]
t = next((x for x in r["functions"] if x["name"] == func), None)
a = r["ab"]
print(f"{kind} rc={rc} rounds={a['rounds']} seconds={a['seconds']:.0f} "
      f"change={t['delta'] if t else float('nan'):+.3f} kind={t['kind'] if t else '-'} "
      f"flagged={','.join(flag) or '-'}", flush=True)
PY
}

for i in $(seq "$n"); do
	one AA 0
	for p in $pcts; do one "AB$p" "$p"; done
done | tee lines.txt
python3 - lines.txt "$func" <<'PY'
import re, sys
rows = [dict(re.findall(r"(\w+)=(\S+)", l), k=l.split()[0]) for l in open(sys.argv[1])]
func = sys.argv[2]
for k in sorted({r["k"] for r in rows}):
    rs = [r for r in rows if r["k"] == k]
    fail = sum(r["rc"] == "1" for r in rs)
    found = sum(r["kind"] == "regression" for r in rs)
    secs = sum(float(r["seconds"]) for r in rs) / len(rs)
    what = f"build failed in {fail}" if k == "AA" else f"{func} found slower in {found}"
    print(f"summary {k}: {what} of {len(rs)}; mean {secs:.0f} s a comparison")
PY
