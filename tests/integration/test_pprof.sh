#!/bin/bash
# ciprof export --format pprof, read by an independent reader: Go's own `go tool pprof`.
# -raw must hold every sample with its test label; -top must agree with `ciprof show`; mappings
# carry the objects' GNU build ids.
source "$(dirname "$0")/lib.sh"

command -v go >/dev/null || fail "go (Debian's golang-go) is needed: scripts/setup installs it"
SYNTH=$CIPROF_BUILD/bench/storage/store_synth
[ -x "$SYNTH" ] || fail "store_synth not built ($SYNTH)"
DB=$TMP/h.db
"$SYNTH" --db "$DB" --runs 2 --branch main --seed 3 >"$TMP/ids" || fail "seeding the database"
RUN=$(tail -n1 "$TMP/ids")
# go tool pprof keeps state under $HOME/pprof: keep it in the test's directory.
export HOME=$TMP PPROF_TMPDIR=$TMP

run_capture exp "$CIPROF" export --db "$DB" --run "$RUN" --format pprof -o "$TMP/run.pb.gz"
[ "$RC" = 0 ] || fail "export --format pprof exited $RC: $(cat "$TMP/exp.err")"
[ "$(head -c2 "$TMP/run.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || check_failed "not gzip'd"

"$CIPROF" show --db "$DB" "$RUN" --by test --top 0 --format json >"$TMP/tests.json" ||
	fail "show --by test"
"$CIPROF" show --db "$DB" "$RUN" --top 0 --format json >"$TMP/funcs.json" || fail "show"

go tool pprof -raw "$TMP/run.pb.gz" >"$TMP/raw.txt" 2>"$TMP/raw.err" ||
	fail "go tool pprof -raw refused the file: $(cat "$TMP/raw.err")"
python3 - "$TMP/raw.txt" "$TMP/tests.json" <<'PY' || check_failed "pprof -raw totals"
import json, re, sys
raw = open(sys.argv[1]).read().splitlines()
tests = json.load(open(sys.argv[2]))
assert "PeriodType: cpu nanoseconds" in raw, raw[:5]
period = int(next(l for l in raw if l.startswith("Period: ")).split()[1])
assert period > 0
i = raw.index("samples/count cpu/nanoseconds")
per_test, total, cur = {}, 0, None
for line in raw[i + 1:]:
    m = re.match(r"^\s+(\d+)\s+(\d+): [\d ]+$", line)
    if m:
        cur = int(m.group(1))
        assert int(m.group(2)) == cur * period, line  # cpu/nanoseconds = count * period
        total += cur
        continue
    m = re.match(r"^\s+test:\[(.*)\]$", line)
    if m:
        assert cur is not None, line
        per_test[m.group(1)] = per_test.get(m.group(1), 0) + cur
        cur = None
        continue
    if not line.startswith(" "):
        break
    raise AssertionError("unexpected line " + line)
assert total == tests["samples"], (total, tests["samples"])
want = {t["name"] or "(outside tests)": t["samples"] for t in tests["tests"]}
assert per_test == want, (per_test, want)
print("raw: %d samples in %d tests" % (total, len(want)))
PY
ok "go tool pprof -raw: every sample, cpu = count x period, test labels as in show --by test"

go tool pprof -top -sample_index=samples -nodefraction=0 -nodecount=100000 \
	"$TMP/run.pb.gz" >"$TMP/top.txt" 2>"$TMP/top.err" || fail "go tool pprof -top: $(cat "$TMP/top.err")"
python3 - "$TMP/top.txt" "$TMP/funcs.json" <<'PY' || check_failed "pprof -top vs show"
import json, re, sys
top = {}
for line in open(sys.argv[1]):
    m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$", line)
    if m:
        top[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
funcs = json.load(open(sys.argv[2]))["functions"]
assert len(funcs) > 10
show = {}
for f in funcs:
    # pprof prints C++ names without their parameter list.
    name = re.sub(r"\(.*\)$", "", f["name"])
    s, t = show.get(name, (0, 0))
    show[name] = (s + f["self"], max(t, f["total"]))
for name, (self_, total) in show.items():
    assert name in top, name
    assert top[name] == (self_, total), (name, top[name], self_, total)
extra = [n for n, (s, _) in top.items() if n not in show and s]
assert not extra, extra  # only process frames (no self time) are pprof's own
print("top: %d functions agree" % len(show))
PY
ok "go tool pprof -top: flat and cum of every function equal show's self and total"

# One test only.
TEST=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tests"][1]["name"])' "$TMP/tests.json")
"$CIPROF" export --db "$DB" --run "$RUN" --test "$TEST" --format pprof -o "$TMP/one.pb.gz" ||
	fail "export --test"
go tool pprof -raw "$TMP/one.pb.gz" 2>/dev/null | grep -o 'test:\[[^]]*\]' | sort -u >"$TMP/one.tags"
[ "$(cat "$TMP/one.tags")" = "test:[$TEST]" ] || check_failed "--test: labels $(cat "$TMP/one.tags")"
ok "export --test keeps one test"

# Build ids: a real run of a program built with a GNU build id; its mapping (and libc's)
# carry the id readelf reports, through the store, and through an import of the file.
cat >"$TMP/w.c" <<'EOF'
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(long n)
{
	unsigned long x = 1;
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1;
	sink = x;
}
int main(void) { spin(100000000L); return 0; }
EOF
cc -O1 -fno-omit-frame-pointer -Wl,--build-id -o "$TMP/bidprog" "$TMP/w.c" || fail "cannot compile"
BID=$(readelf -n "$TMP/bidprog" | sed -n 's/.*Build ID: *//p')
[ -n "$BID" ] || fail "readelf shows no build id for the test program"
run_capture brun "$CIPROF" run --db "$TMP/b.db" -- "$TMP/bidprog"
[ "$RC" = 0 ] || fail "ciprof run: $(cat "$TMP/brun.err")"
"$CIPROF" export --db "$TMP/b.db" --format pprof -o "$TMP/b.pb.gz" || fail "export of the run"
go tool pprof -raw "$TMP/b.pb.gz" 2>/dev/null | sed -n '/^Mappings/,$p' >"$TMP/bmaps.txt"
grep -Eq "^[0-9]+: 0x0/0x0/0x0 bidprog $BID \[" "$TMP/bmaps.txt" &&
	ok "go tool pprof -raw: the program's mapping carries its build id ($BID)" ||
	check_failed "no 'bidprog $BID' mapping in pprof -raw: $(cat "$TMP/bmaps.txt")"
go tool pprof -top "$TMP/b.pb.gz" 2>/dev/null | head -n1 >"$TMP/bfile.txt"
expect_grep "the main binary is the program, not a library (pprof's first mapping)" \
	"$TMP/bfile.txt" "File: bidprog"
LIBC=$(ldd "$TMP/bidprog" | awk '/libc\.so/ {print $3}')
LIBC_BID=$(readelf -n "$LIBC" | sed -n 's/.*Build ID: *//p')
if grep -q ' libc\.so' "$TMP/bmaps.txt"; then
	grep -Eq " libc\.so\.6 $LIBC_BID \[" "$TMP/bmaps.txt" && ok "libc's mapping carries libc's build id" ||
		check_failed "libc's mapping lacks $LIBC_BID: $(cat "$TMP/bmaps.txt")"
fi
"$CIPROF" -q import --db "$TMP/b.db" --format pprof "$TMP/b.pb.gz" >/dev/null 2>"$TMP/bimp.err" ||
	fail "import of the pprof file: $(cat "$TMP/bimp.err")"
"$CIPROF" export --db "$TMP/b.db" --format pprof -o "$TMP/b2.pb.gz" || fail "export of the import"
go tool pprof -raw "$TMP/b2.pb.gz" 2>/dev/null | grep -Eq "^[0-9]+: 0x0/0x0/0x0 bidprog $BID \[" &&
	ok "an imported pprof file keeps its mappings' build ids" ||
	check_failed "the imported run's export lost the build id"

# A run without a sampling period (a folded import): counts only, so that go tool pprof's
# default view shows the samples, not a total of 0 ns, and an import of it gives the same run.
printf 'prog;main;work 7\nprog;main 3\n' >"$TMP/np.folded"
"$CIPROF" import --db "$TMP/np.db" --format folded "$TMP/np.folded" 2>/dev/null || fail "import folded"
"$CIPROF" export --db "$TMP/np.db" --format pprof -o "$TMP/np.pb.gz" || fail "export of the import"
go tool pprof -top "$TMP/np.pb.gz" >"$TMP/np.top" 2>/dev/null || fail "go tool pprof -top"
grep -q 'Type: samples' "$TMP/np.top" && grep -Eq '^ +7 +70\.00% .* work$' "$TMP/np.top" &&
	grep -q 'of 10 total' "$TMP/np.top" ||
	check_failed "no period: go tool pprof -top does not show the 10 samples: $(cat "$TMP/np.top")"
"$CIPROF" import --db "$TMP/np.db" --format pprof "$TMP/np.pb.gz" 2>/dev/null || fail "re-import"
cmp -s <("$CIPROF" show --db "$TMP/np.db" 1 --format folded) \
	<("$CIPROF" show --db "$TMP/np.db" 2 --format folded) || check_failed "no period: round trip"
ok "a run without a period exports counts only: go tool pprof -top shows its 10 samples"

run_capture bad "$CIPROF" export --db "$DB" --format pprf
[ "$RC" = 2 ] && grep -q 'folded, speedscope or pprof' "$TMP/bad.err" || check_failed "bad --format: $RC"
ok "an unknown format is a usage error naming pprof"
finish
