#!/bin/bash
# ciprof report end to end, on the real binary: examples/regression-demo (3 runs of main, one
# pull-request run in which hash_keys() does 30 % more work) must report exactly that function
# as the top regression (advisory on 3 runs); ten A/A comparisons of the unchanged program must
# fail no build and flag something in at most one; the formats must be well-formed (SVG and
# HTML parse as XML) and exit codes follow the contract.
. "$(dirname "$0")/lib.sh"

DEMO=$TMP/demo
REPO=$DEMO/repo
DB=$REPO/.ciprof/ciprof.db

# report ARGS...: ciprof report in the demo repository (its git state), stdout to $TMP/r.out.
report() {
	RC=0
	(cd "$REPO" && "$CIPROF" -q report --db "$DB" "$@") >"$TMP/r.out" 2>"$TMP/r.err" </dev/null ||
		RC=$?
}

# --- the demo: 3 main runs, 1 PR run with the planted slowdown ---
RC=0
DEMO_DIR=$DEMO DEMO_QUIET=1 bash "$CIPROF_SRC/examples/regression-demo/run.sh" "$CIPROF" \
	>"$TMP/demo.out" 2>"$TMP/demo.err" </dev/null || RC=$?
expect_rc "the regression demo runs" 0 demo
[ "$RC" -eq 0 ] || finish
head -1 "$TMP/demo.out" | grep -qx '<!-- ciprof-report -->' && ok "Markdown starts with the marker" ||
	check_failed "the Markdown's first line is not the marker"
expect_grep "the verdict is regression" "$TMP/demo.out" "**ciprof: ▲ regression**"
expect_grep "hash_keys is named" "$TMP/demo.out" "<code>hash&#95;keys</code>"

report --base main --format json
expect_rc "report --format json" 0 r
python3 - "$TMP/r.out" <<'PY' || check_failed "the planted regression is not reported as expected (above)"
import json, sys
r = json.load(open(sys.argv[1]))
errors = []
if r["verdict"] != "regression":
    errors.append(f"verdict {r['verdict']!r}, expected 'regression'")
if len(r["base"]) != 3 or not isinstance(r["head"], int):
    errors.append(f"head {r['head']!r} / base {r['base']!r}: expected one head and 3 base runs")
regs = [f for f in r["functions"] if f["kind"] == "regression"]
if not regs:
    errors.append("no function regressed")
else:
    top = regs[0]
    print(f"top regression: {top['name']} ({top['measure']}) {top['delta']:+.1%}, "
          f"q = {top['q_value']:.2g}, shares {top['base_share']:.3f} -> {top['head_share']:.3f}")
    if top["name"] != "hash_keys" or top["measure"] != "self" or not top["significant"]:
        errors.append(f"top regression is {top['name']} ({top['measure']}), expected hash_keys self")
    if not 0.18 <= top["delta"] <= 0.45:
        errors.append(f"hash_keys changed by {top['delta']:+.1%}, expected about +30 %")
others = [f"{f['name']} ({f['measure']}, {f['kind']}, {f['delta']:+.1%})"
          for f in r["functions"]
          if f["significant"] and not (f["name"] == "hash_keys" and f["measure"] == "self")]
if others:
    errors.append("unchanged functions flagged: " + ", ".join(others))
tests = [t["name"] for t in r["tests"] if t["significant"]]
if tests not in ([], ["test_hash"]):
    errors.append(f"tests flagged: {tests}, expected at most test_hash")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
[ "$FAILURES" -eq 0 ] && ok "hash_keys is the top regression (self, significant); nothing else flagged"

# --- exit codes ---
# Three runs of main cannot show how often a function jumps by chance: the +30 % is reported,
# and gates the build only from 20 runs on (report/stats.h, STATS_SHORT_MAX_DOF; a change that
# stands out from such a jump gates earlier: tests/unit/test_report_gate.c,
# tests/integration/test_report_wide.sh).
report --base main --fail-on-regression
expect_rc "--fail-on-regression with a regression on 3 runs is advisory" 0 r
# It says why. The short history always applies here; when other processes kept the machine
# busier during the head run than during main's runs (this test beside others under ctest -j,
# or a CPU hog), the report gives that reason first, and the head run's load is not this
# test's to choose (tests/unit/test_report_gate.c checks each reason and their order).
if grep -qF "CPUs busy while the head run ran" "$TMP/r.out"; then
	ok "it says why: a busier machine during the head run (given before the short history)"
else
	expect_grep "it says why" "$TMP/r.out" "fewer than the 20 that show how often a function jumps"
fi
report --base main --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); h=[f for f in r["functions"] if f["name"]=="hash_keys" and f["measure"]=="self"][0]; sys.exit(0 if r["advisory"] and r["summary"]["gating_regressions"]==0 and h["gates"] is False else 1)' \
	"$TMP/r.out" && ok "JSON: advisory, hash_keys regressed but does not gate" ||
	check_failed "JSON: advisory, gating_regressions and gates not as expected"
report --base main --format bogus
expect_rc "an unknown format is a usage error" 2 r
report --base main --alpha 2
expect_rc "--alpha out of range is a usage error" 2 r
report --head 999
expect_rc "an unknown head run is a runtime error" 3 r
RC=0
"$CIPROF" report --db "$TMP/none.db" >"$TMP/r.out" 2>"$TMP/r.err" || RC=$?
expect_rc "a missing database is a runtime error" 3 r

# --- .ciprof.yml: report.* keys apply, flags win, a typo is a usage error ---
printf 'report:\n  min-change: 50\n' >"$REPO/.ciprof.yml"
report --base main --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["verdict"]=="ok" and r["options"]["min_change"]==0.5 else 1)' \
	"$TMP/r.out" && ok ".ciprof.yml report.min-change: 50 hides a 30 % change" ||
	check_failed ".ciprof.yml report.min-change was not applied"
report --base main --format json --min-change 5
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["verdict"]=="regression" else 1)' \
	"$TMP/r.out" && ok "--min-change overrides .ciprof.yml" || check_failed "--min-change did not override .ciprof.yml"
printf 'report:\n  min-chnge: 50\n' >"$REPO/.ciprof.yml"
report --base main
expect_rc "an unknown .ciprof.yml key is a usage error" 2 r
rm -f "$REPO/.ciprof.yml"

# --- Markdown: findings first, trend charts, --id, links ---
report --base main
awk 'NR <= 25' "$TMP/r.out" | grep -q 'hash&#95;keys' && ok "the finding is within the first 25 lines" ||
	check_failed "hash_keys is not named in the first 25 lines"
python3 "$CIPROF_SRC/tests/tools/check_xychart.py" "$TMP/r.out" >"$TMP/xy.out" 2>&1 &&
	ok "the trend charts are well-formed xychart-beta blocks: $(tr '\n' ';' <"$TMP/xy.out")" ||
	check_failed "trend charts: $(cat "$TMP/xy.out")"
expect_grep "a suite chart over the 3 base runs and the head" "$TMP/xy.out" "Suite CPU seconds per run\", 4 points"
expect_grep "a chart of the flagged function" "$TMP/xy.out" "hash_keys self CPU seconds\", 4 points"
report --base main --id linux-gcc --trend-runs 0
head -1 "$TMP/r.out" | grep -qx '<!-- ciprof-report id=linux-gcc -->' && ok "--id names the marker" ||
	check_failed "--id: first line $(head -1 "$TMP/r.out")"
expect_no_grep "--trend-runs 0: no chart" "$TMP/r.out" "mermaid"
report --base main --id 'x -->'
expect_rc "a bad --id is a usage error" 2 r
report --base main --artifact-url 'https://example.com/report.html'
expect_grep "the artifact is linked" "$TMP/r.out" "[HTML report and flame graph](https://example.com/report.html)"
report --base main --artifact-url 'javascript:alert(1)'
expect_no_grep "an unsafe URL is not linked" "$TMP/r.out" "javascript"

# --- no baseline: a message in every format, exit 0 and a warning; with --fail-on-regression
# an unknown base is an error naming the branches that exist (a typo must not pass forever) ---
for fmt in md json html svg; do
	report --base no-such-branch --format "$fmt"
	expect_rc "no baseline ($fmt)" 0 r
	expect_grep "no baseline ($fmt) says so" "$TMP/r.out" "no-such-branch"
done
(cd "$REPO" && "$CIPROF" report --db "$DB" --base no-such-branch) >/dev/null 2>"$TMP/w.err" </dev/null
expect_grep "an unknown --base warns" "$TMP/w.err" "warning"
expect_grep "the warning names the branches" "$TMP/w.err" "branches: "
report --base mian --fail-on-regression
expect_rc "an unknown --base with --fail-on-regression is an error" 3 r
expect_grep "the error lists the branches" "$TMP/r.err" "(branches: "
expect_grep "the error lists main" "$TMP/r.err" "main"
report --base no-such-branch --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["no_baseline"] and r["verdict"]=="ok" and r["base"]==[] else 1)' \
	"$TMP/r.out" && ok "no baseline: JSON verdict ok, no_baseline true" ||
	check_failed "no baseline: unexpected JSON"

# --- other baselines: a run id, a commit ---
report --base 1 --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["base"]==[1] and r["baseline"]=="run 1" else 1)' \
	"$TMP/r.out" && ok "--base 1 compares with run 1" || check_failed "--base 1: unexpected baseline"
# One base run is too little history to learn noise from: the regression is reported, but it
# is advisory and --fail-on-regression does not fail the build. On imported profiles (one
# function 3x slower, nine steady), so that the regression itself is certain: the profiled
# demo's +30 % against one run was widened away by a loaded machine's head once (CI, a hog).
printf 'suite;main;fn_%s 1000\n' a b c d e f g h >"$TMP/adv-base.folded"
cp "$TMP/adv-base.folded" "$TMP/adv-head.folded"
echo 'suite;main;work 1000' >>"$TMP/adv-base.folded"
echo 'suite;main;work 3000' >>"$TMP/adv-head.folded"
ADV=(--db "$TMP/adv.db")
"$CIPROF" -q import "${ADV[@]}" --format folded --branch main --commit "$(printf '1%.0s' {1..40})" \
	"$TMP/adv-base.folded" && "$CIPROF" -q import "${ADV[@]}" --format folded --branch pr \
	--commit "$(printf '2%.0s' {1..40})" "$TMP/adv-head.folded" || fail "cannot import the advisory runs"
run_capture r "$CIPROF" report "${ADV[@]}" --head 2 --base 1 --format json --fail-on-regression
expect_rc "a regression on one base run is advisory" 0 r
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["verdict"]=="regression" and r["advisory"] and "noise" in r["advisory_reason"] else 1)' \
	"$TMP/r.out" && ok "advisory: verdict regression, advisory true with its reason" ||
	check_failed "advisory: unexpected JSON $(head -c 300 "$TMP/r.out")"
run_capture r "$CIPROF" report "${ADV[@]}" --head 2 --base 1
expect_grep "the Markdown says it is advisory" "$TMP/r.out" "**Advisory:** this verdict does not fail the build"
main_commit=$(git -C "$REPO" rev-parse main)
report --base "${main_commit:0:8}" --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["base"]==[1,2,3] else 1)' \
	"$TMP/r.out" && ok "--base COMMIT compares with the 3 runs at that commit" ||
	check_failed "--base COMMIT: unexpected baseline $(head -c 300 "$TMP/r.out")"

# --- the formats parse ---
report --base main --format svg -o "$TMP/report.svg"
expect_rc "report --format svg -o" 0 r
report --base main --format html -o "$TMP/report.html"
expect_rc "report --format html -o" 0 r
python3 - "$TMP/report.svg" "$TMP/report.html" <<'PY' || check_failed "SVG or HTML is malformed (above)"
import sys, xml.etree.ElementTree as ET
svg, html = sys.argv[1], sys.argv[2]
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(svg).getroot()
assert root.tag == ns + "svg", root.tag
titles = [t.text for t in root.iter(ns + "title")]
hot = [t for t in titles if t.startswith("hash_keys")]
assert hot and "change: +" in hot[0], hot
print(f"svg: {len(titles)} frames with tooltips; hash_keys: {hot[0].splitlines()[-2]}")
text = open(html, encoding="utf-8").read()
ET.fromstring(text.replace("<!DOCTYPE html>", "", 1))  # well-formed (polyglot XHTML)
import re
csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1)
assert re.search(r"script-src 'sha256-[A-Za-z0-9+/]{43}=';", csp) and "unsafe" not in csp, csp
scripts = re.findall(r"<script>", text)
assert len(scripts) == 1 and "<svg" in text and 'id="ciprof-data"' in text
assert "<table>" in text and "hash&#95;keys" not in text  # cmark decoded the entities
print("html: well-formed, tables, inline SVG, one script admitted by its hash")
PY
[ "$FAILURES" -eq 0 ] && ok "SVG and HTML are well-formed XML with the expected content"
if command -v xmllint >/dev/null; then
	xmllint --noout "$TMP/report.svg" 2>"$TMP/xmllint.err" && ok "xmllint: the SVG is well-formed" ||
		{ check_failed "xmllint rejects the SVG"; cat "$TMP/xmllint.err" >&2; }
else
	echo "note [$TEST_NAME]: xmllint not installed (Debian: libxml2-utils); checked with python only" >&2
fi

# --- A/A: ten comparisons of identical code fail no build, and flag something in at most one ---
# (issue 10's bar: a function of identical code jumps now and then, 18 % once on a loaded
# machine with 4 history runs; on so short a history such a jump never gates the build)
# Back on main (the unchanged program), 8 more runs: main then has 11 runs at one commit.
git -C "$REPO" checkout -q main || fail "cannot check out main in the demo repository"
make -s -C "$REPO" >/dev/null 2>&1 || fail "cannot rebuild the demo suite on main"
for i in $(seq 1 8); do
	(cd "$REPO" && "$CIPROF" -q run --hz 4999 --db "$DB" -- make -s test) >/dev/null 2>&1 ||
		fail "ciprof run (A/A run $i) failed"
done
ids=$("$CIPROF" runs --db "$DB" --branch main --limit 0 --format json |
	python3 -c 'import json,sys; print(" ".join(str(r["id"]) for r in sorted(json.load(sys.stdin)["runs"], key=lambda r: r["id"])))')
set -- $ids
[ $# -eq 11 ] || fail "expected 11 runs of main, found $# ($ids)"
shift # the first run has no earlier run to compare with
flagged=0
for head in "$@"; do
	report --head "$head" --base main --format json --fail-on-regression
	[ "$RC" -eq 0 ] || check_failed "A/A head $head failed the build (exit $RC)"
	summary=$(python3 - "$TMP/r.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
flags = [f"{x['name']} {x.get('measure', 'test')} {x['delta']:+.1%}"
         for x in r["functions"] + r["tests"] if x["significant"]]
print(f"{r['verdict']} base={r['base']} factor={r['scale']['factor']:.3f} "
      f"cv={r['summary']['run_to_run_cv']:.3f} flagged=[{', '.join(flags)}]")
sys.exit(1 if flags or r["verdict"] != "ok" else 0)
PY
	) || flagged=$((flagged + 1))
	echo "     A/A head $head: $summary"
done
[ "$flagged" -le 1 ] && ok "ten A/A comparisons of identical code: $flagged flagged anything" ||
	check_failed "$flagged of ten A/A comparisons flagged something"
finish
