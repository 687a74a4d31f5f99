#!/usr/bin/env bash
# bench/ab/run.sh: false-alarm and detection rates of `ciprof ab` on this machine.
#
#   bench/ab/run.sh [CIPROF]        (default: $CIPROF, else ./build/ciprof)
#
# Builds suite.c (four steady loops, one memory-bound pointer chase; target() holds ~5 % of
# the CPU, ~0.5 CPU-s a run) and runs AA comparisons of identical sides (`suite 1000` both)
# and AB comparisons with a +10 % slowdown of target() on the head (`suite 1100`), each with
# --fail-on-regression at ciprof ab's defaults plus ARGS. Prints one line per comparison and
# a summary: A/A comparisons that failed the build (false alarms), A/B comparisons that found
# target() slower with nothing else flagged (detections), rounds and seconds used.
#
# Environment: AA (20), AB (20), ARGS (extra ciprof ab options, e.g. "--hz 4999"),
# OTHER (a second ciprof binary: each comparison is then stored in a scratch database and also
# judged by OTHER's `ciprof report --ab ID` on the very same rounds, printed as other_*, with
# a second summary line: two versions of the statistics side by side, on identical data).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ciprof=${1:-${CIPROF:-./build/ciprof}}
aa=${AA:-20}
ab=${AB:-20}
args=${ARGS:-}
other=${OTHER:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-bench-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$work/suite" "$here/suite.c"

one() { # KIND HEAD_SCALE
	local kind=$1 scale=$2 rc=0 orc=0 store=--no-store
	[ -z "$other" ] || store="--db $work/ab.db"
	# shellcheck disable=SC2086
	"$ciprof" -q ab $store --format json --fail-on-regression $args \
		--base "$work/suite 1000" --head "$work/suite $scale" >"$work/out.json" 2>"$work/err" || rc=$?
	echo '{}' >"$work/other.json"
	if [ -n "$other" ]; then
		id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ab"]["id"])' "$work/out.json")
		"$other" -q report --db "$work/ab.db" --ab "$id" --format json --fail-on-regression \
			>"$work/other.json" 2>"$work/err" || orc=$?
	fi
	python3 - "$work/out.json" "$kind" "$rc" "$work/other.json" "$orc" <<'PY'
import json, sys
def judge(r):
    flag = [f"{x['name']}:{x['kind']}" for x in r["tests"] + r["functions"] if x["significant"]]
    t = next((x for x in r["functions"] if x["name"] == "target"), None)
    found = t is not None and t["kind"] == "regression" and flag == ["target:regression"]
    return flag, t, found
r = json.load(open(sys.argv[1])); kind = sys.argv[2]; rc = int(sys.argv[3])
flag, t, found = judge(r)
a = r["ab"]
line = (f"{kind} rc={rc} verdict={r['verdict']} rounds={a['rounds']} stopped={a['stopped']} "
        f"seconds={a['seconds']:.1f} undecided={a['undecided']} "
        f"target={t['delta'] if t else float('nan'):+.3f} found={int(found)} flagged={','.join(flag) or '-'}")
o = json.load(open(sys.argv[4]))
if o:
    oflag, _, ofound = judge(o)
    line += f" other_rc={sys.argv[5]} other_found={int(ofound)} other_flagged={','.join(oflag) or '-'}"
print(line)
PY
}

for i in $(seq "$aa"); do one AA 1000; done | tee "$work/aa.txt"
for i in $(seq "$ab"); do one AB 1100; done | tee "$work/ab.txt"
python3 - "$work/aa.txt" "$work/ab.txt" "$args" <<'PY'
import re, sys
def rows(f):
    return [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(f) if l.strip()]
aa, ab = rows(sys.argv[1]), rows(sys.argv[2])
fa = sum(r["rc"] == "1" for r in aa)
det = sum(r["found"] == "1" for r in ab)
other = sum(r["flagged"] not in ("-", "target:regression") for r in aa + ab)
def mean(rs, k):
    return sum(float(r[k]) for r in rs) / max(len(rs), 1)
print(f"summary (ARGS='{sys.argv[3]}'): A/A failed the build in {fa} of {len(aa)}; "
      f"A/B found the +10 % slowdown of target() alone in {det} of {len(ab)}; "
      f"comparisons flagging something else: {other}; "
      f"mean rounds A/A {mean(aa, 'rounds'):.1f}, A/B {mean(ab, 'rounds'):.1f}; "
      f"mean seconds A/A {mean(aa, 'seconds'):.1f}, A/B {mean(ab, 'seconds'):.1f}")
if all("other_rc" in r for r in aa + ab) and aa + ab:
    ofa = sum(r["other_rc"] == "1" for r in aa)
    odet = sum(r["other_found"] == "1" for r in ab)
    oother = sum(r["other_flagged"] not in ("-", "target:regression") for r in aa + ab)
    print(f"summary of OTHER on the same rounds: A/A failed the build in {ofa} of {len(aa)}; "
          f"A/B found it alone in {odet} of {len(ab)}; comparisons flagging something else: "
          f"{oother}")
PY
