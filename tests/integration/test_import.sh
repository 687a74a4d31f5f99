#!/bin/bash
# ciprof import: folded, pprof (ours and Go's own) and perf script text stored as runs whose
# `show` matches the source; malformed input is refused with file and position, storing nothing.
source "$(dirname "$0")/lib.sh"

SYNTH=$CIPROF_BUILD/bench/storage/store_synth
[ -x "$SYNTH" ] || fail "store_synth not built ($SYNTH)"
SRC=$TMP/src.db
"$SYNTH" --db "$SRC" --runs 1 --branch main --seed 4 >/dev/null || fail "seeding the source"
DB=$TMP/imp.db
export HOME=$TMP PPROF_TMPDIR=$TMP

# count_runs: the number of runs in $DB.
count_runs() { "$CIPROF" runs --db "$DB" --format json 2>/dev/null |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))' 2>/dev/null || echo 0; }

# 1. folded, from standard input, with git metadata given on the command line.
"$CIPROF" export --db "$SRC" --format folded >"$TMP/src.folded" || fail "export folded"
"$CIPROF" import --db "$DB" --format folded --branch feat/x \
	--commit 0123456789abcdef0123456789abcdef01234567 --test bench - <"$TMP/src.folded" \
	2>"$TMP/f.err" || fail "import folded: $(cat "$TMP/f.err")"
"$CIPROF" show --db "$DB" latest --format folded >"$TMP/f.out" || fail "show folded"
cmp -s "$TMP/src.folded" "$TMP/f.out" || check_failed "folded import: show --format folded differs"
"$CIPROF" runs --db "$DB" --format json >"$TMP/runs.json"
python3 - "$TMP/runs.json" <<'PY' || check_failed "folded import metadata"
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["branch"] == "feat/x" and r["commit"] == "0123456789abcdef0123456789abcdef01234567", r
PY
"$CIPROF" show --db "$DB" latest --by test --format json >"$TMP/ft.json"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tests"]; assert [x["name"] for x in t]==["bench"], t' \
	"$TMP/ft.json" || check_failed "--test: every sample under 'bench'"
ok "folded from stdin: same stacks, branch/commit/test from the options"

# 2. pprof written by ciprof: tests, stacks and period survive.
"$CIPROF" export --db "$SRC" --format pprof -o "$TMP/src.pb.gz" || fail "export pprof"
run_capture p "$CIPROF" import --db "$DB" --format pprof "$TMP/src.pb.gz"
[ "$RC" = 0 ] || fail "import pprof exited $RC: $(cat "$TMP/p.err")"
"$CIPROF" show --db "$DB" latest --format folded >"$TMP/p.out"
cmp -s "$TMP/src.folded" "$TMP/p.out" || check_failed "pprof import: stacks differ"
for by in test function; do
	"$CIPROF" show --db "$SRC" --by $by --top 0 --format json | python3 -c \
		'import json,sys; d=json.load(sys.stdin); d.pop("run"); print(json.dumps(d, sort_keys=True))' \
		>"$TMP/want.$by"
	"$CIPROF" show --db "$DB" latest --by $by --top 0 --format json | python3 -c \
		'import json,sys; d=json.load(sys.stdin); d.pop("run"); print(json.dumps(d, sort_keys=True))' \
		>"$TMP/got.$by"
	cmp -s "$TMP/want.$by" "$TMP/got.$by" || check_failed "pprof import: show --by $by differs"
done
ok "ciprof's own pprof: show --by test and --by function equal the source run's"

# 3. pprof written by Go's runtime/pprof (another writer: addresses, mappings, inlining).
if command -v go >/dev/null; then
	GOCACHE=$TMP/gocache GO111MODULE=off GOPROXY=off go build -o "$TMP/burn" \
		"$CIPROF_SRC/tests/integration/data/burn.go" >"$TMP/go.log" 2>&1 ||
		fail "go build: $(cat "$TMP/go.log")"
	"$TMP/burn" "$TMP/go.pprof" || fail "the Go program failed"
	run_capture g "$CIPROF" import --db "$DB" --format pprof "$TMP/go.pprof"
	[ "$RC" = 0 ] || fail "import of Go's pprof exited $RC: $(cat "$TMP/g.err")"
	go tool pprof -raw "$TMP/go.pprof" >"$TMP/go.raw" 2>/dev/null || fail "go tool pprof -raw"
	go tool pprof -top -sample_index=samples -nodefraction=0 -nodecount=100000 \
		"$TMP/go.pprof" >"$TMP/go.top" 2>/dev/null || fail "go tool pprof -top"
	"$CIPROF" show --db "$DB" latest --top 0 --format json >"$TMP/g.json"
	python3 - "$TMP/go.raw" "$TMP/g.json" "$TMP/go.top" <<'PY' || check_failed "Go pprof import"
import json, re, sys
raw = open(sys.argv[1]).read().splitlines()
i = raw.index("samples/count cpu/nanoseconds")
total = 0
for line in raw[i + 1:]:
    m = re.match(r"^\s+(\d+)\s+\d+: ", line)
    if m:
        total += int(m.group(1))
    elif not line.startswith(" "):
        break
d = json.load(open(sys.argv[2]))
assert d["samples"] == total and total > 0, (d["samples"], total)
burn = [f for f in d["functions"] if f["name"] == "main.burn"]
assert burn and burn[0]["module"] == "burn", d["functions"][:3]
top = {}
for line in open(sys.argv[3]):
    m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(\S+)\s*$", line)
    if m:
        top[m.group(3)] = (int(m.group(1)), int(m.group(2)))
assert (burn[0]["self"], burn[0]["total"]) == top["main.burn"], (burn, top["main.burn"])
assert 2 * burn[0]["total"] >= total, (burn, total)  # the program's hot function
print("go: %d samples, main.burn self %d total %d" % (total, burn[0]["self"], burn[0]["total"]))
PY
	ok "Go's runtime/pprof file: every sample, main.burn in module burn"
else
	echo "note [$TEST_NAME]: go not installed, Go's pprof writer not tried" >&2
fi

# 4. perf script text: a fixed sample (names with spaces, C++ parameters, offsets, a garbage
# caller outside every mapping) ...
printf '%s\n' \
	'my prog 12/13 [001] 100.000001:     250000 cpu-clock:u: ' \
	$'\t          4005d6 ns::Foo::bar(int, char const*)+0x16 (/tmp/a b/prog)' \
	$'\t          400610 main+0x2a (/tmp/a b/prog)' \
	$'\t    7f0000001234 __libc_start_main+0xf3 (/lib/x86_64-linux-gnu/libc.so.6)' \
	$'\t2d00702d00622d00 [unknown] ([unknown])' '' \
	'my prog 12/13 [000] 100.000251:     250000 cpu-clock:u: ' \
	$'\t          400610 main+0x2a (/tmp/a b/prog)' \
	$'\t    7f0000001234 __libc_start_main+0xf3 (/lib/x86_64-linux-gnu/libc.so.6)' '' \
	'my prog 12/13 [000] 100.000501:     250000 cpu-clock:u: ' \
	$'\t          400610 main+0x2a (/tmp/a b/prog)' \
	$'\t    7f0000001234 __libc_start_main+0xf3 (/lib/x86_64-linux-gnu/libc.so.6)' '' \
	>"$TMP/fixed.perf"
run_capture s "$CIPROF" import --db "$DB" --format perf-script "$TMP/fixed.perf"
[ "$RC" = 0 ] || fail "import perf-script exited $RC: $(cat "$TMP/s.err")"
"$CIPROF" show --db "$DB" latest --format folded >"$TMP/s.out"
printf '%s\n' 'my prog;__libc_start_main;main 2' \
	'my prog;__libc_start_main;main;ns::Foo::bar(int, char const*) 1' >"$TMP/s.want"
cmp -s "$TMP/s.want" "$TMP/s.out" || check_failed "perf script stacks: $(cat "$TMP/s.out")"
"$CIPROF" show --db "$DB" latest --top 0 --format json >"$TMP/s.json"
python3 - "$TMP/s.json" <<'PY' || check_failed "perf script modules"
import json, sys
f = {x["name"]: x for x in json.load(open(sys.argv[1]))["functions"]}
assert f["main"]["module"] == "prog" and f["main"]["self"] == 2, f
assert f["__libc_start_main"]["module"] == "libc.so.6", f
PY
"$CIPROF" runs --db "$DB" --format json | python3 -c \
	'import json,sys; r=json.load(sys.stdin)["runs"][0]; assert r["samples"]==3, r' ||
	check_failed "perf script: 3 samples"
# Imported outside a git work tree, the run has no commit: show's header says so without a
# stray space ("run N: (no branch), 3 samples").
mkdir -p "$TMP/nogit"
(cd "$TMP/nogit" && GIT_CEILING_DIRECTORIES=$TMP "$CIPROF" import --db "$TMP/nogit.db" \
	--format perf-script "$TMP/fixed.perf" 2>/dev/null) || fail "import outside a work tree"
"$CIPROF" show --db "$TMP/nogit.db" --top 1 | head -1 >"$TMP/nogit.head"
grep -Eq '^run 1: .*[^ ], 3 samples$' "$TMP/nogit.head" ||
	check_failed "show's header without a commit: $(cat "$TMP/nogit.head")"
ok "perf script text: stacks, modules, offsets dropped, the stray caller cut"

# ... and, where perf may record here, a real recording.
if perf record -e cpu-clock -F 499 -g -o "$TMP/perf.data" -- \
	sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done' >"$TMP/rec.log" 2>&1; then
	perf script -i "$TMP/perf.data" >"$TMP/real.perf" 2>/dev/null || fail "perf script"
	WANT=$(grep -c 'cpu-clock' "$TMP/real.perf")
	"$CIPROF" import --db "$DB" --format perf-script - <"$TMP/real.perf" 2>"$TMP/r.err" ||
		fail "import of real perf script output: $(cat "$TMP/r.err")"
	GOT=$("$CIPROF" runs --db "$DB" --format json | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["runs"][0]["samples"])')
	[ "$GOT" = "$WANT" ] || check_failed "real perf script: $GOT samples stored, $WANT recorded"
	"$CIPROF" show --db "$DB" latest --format folded | grep -q '^sh;' ||
		check_failed "real perf script: stacks start at the process 'sh'"
	ok "perf record -g | perf script: all $WANT samples"
else
	echo "note [$TEST_NAME]: perf record refused here, skipped the live recording" >&2
fi

# 5. Malformed input: exit 3, the file and position named, nothing stored.
BEFORE=$(count_runs)
printf 'a;b 10\na;b;c x1\n' >"$TMP/bad.folded"
run_capture e1 "$CIPROF" import --db "$DB" --format folded "$TMP/bad.folded"
[ "$RC" = 3 ] && grep -q "bad.folded:2:7: sample count is not a whole number" "$TMP/e1.err" ||
	check_failed "bad folded: rc $RC, $(cat "$TMP/e1.err")"
printf 'garbage line\n' >"$TMP/bad.perf"
run_capture e2 "$CIPROF" import --db "$DB" --format perf-script "$TMP/bad.perf"
[ "$RC" = 3 ] && grep -q "bad.perf:1:1: expected a sample header" "$TMP/e2.err" ||
	check_failed "bad perf script: rc $RC, $(cat "$TMP/e2.err")"
head -c 700 "$TMP/src.pb.gz" >"$TMP/cut.pb.gz"
run_capture e3 "$CIPROF" import --db "$DB" --format pprof "$TMP/cut.pb.gz"
[ "$RC" = 3 ] && grep -q "cut.pb.gz: byte 700: gzip data ends early" "$TMP/e3.err" ||
	check_failed "truncated pprof: rc $RC, $(cat "$TMP/e3.err")"
run_capture e4 "$CIPROF" import --db "$DB" --format pprof "$TMP/bad.folded"
[ "$RC" = 3 ] && grep -q "bad.folded: not a pprof profile" "$TMP/e4.err" ||
	check_failed "text as pprof: rc $RC, $(cat "$TMP/e4.err")"
run_capture e5 "$CIPROF" import --db "$DB" --format pprof "$TMP/missing"
[ "$RC" = 3 ] && grep -q "missing" "$TMP/e5.err" || check_failed "missing file: rc $RC"
head -c -20 "$TMP/fixed.perf" >"$TMP/cut.perf"
run_capture e8 "$CIPROF" import --db "$DB" --format perf-script "$TMP/cut.perf"
[ "$RC" = 3 ] && grep -q "cut.perf:13:[0-9]*: the text ends inside a line (truncated?)" "$TMP/e8.err" ||
	check_failed "truncated perf script: rc $RC, $(cat "$TMP/e8.err")"
: >"$TMP/empty.pb.gz"
run_capture e7 "$CIPROF" import --db "$DB" --format pprof "$TMP/empty.pb.gz"
[ "$RC" = 3 ] && grep -q "empty.pb.gz: empty file, not a pprof profile" "$TMP/e7.err" ||
	check_failed "empty pprof: rc $RC, $(cat "$TMP/e7.err")"
run_capture e6 "$CIPROF" import --db "$DB" "$TMP/bad.folded"
[ "$RC" = 2 ] && grep -q -- "--format is required" "$TMP/e6.err" || check_failed "no --format: rc $RC"
[ "$(count_runs)" = "$BEFORE" ] || check_failed "a refused import stored a run"
ok "malformed input: exit 3 with file:line:column (or byte), nothing stored"

# 6. Extreme but valid input is stored readably: one stack 20,000 frames deep of a repeated
# frame, and 100,000 stacks of one sample each (both compress beyond what the store's readers
# once allowed: the import succeeded and every later command called the database corrupt).
python3 -c 'print("p;" + "rec;" * 20000 + "leaf 1")' >"$TMP/deep.folded"
python3 -c '
for i in range(100000): print("p;f%d 1" % i)' >"$TMP/flat.folded"
for f in deep flat; do
	"$CIPROF" import --db "$TMP/$f.db" --format folded "$TMP/$f.folded" 2>"$TMP/$f.err" ||
		fail "import of $f.folded: $(cat "$TMP/$f.err")"
	"$CIPROF" show --db "$TMP/$f.db" --format folded >"$TMP/$f.out" 2>"$TMP/$f.err" ||
		check_failed "$f.folded stored, then unreadable: $(cat "$TMP/$f.err")"
	cmp -s <(sort "$TMP/$f.folded") <(sort "$TMP/$f.out") || check_failed "$f.folded: show differs"
done
ok "a 20,000-frame stack and 100,000 one-sample stacks import and read back"

# Stacks deeper than the store keeps (PROFILE_MAX_DEPTH, a million frames) are refused where
# they are, in each format, and nothing is stored.
BEFORE=$(count_runs)
python3 -c 'print("p;" + "rec;" * 1000000 + "leaf 1")' >"$TMP/toodeep.folded"
run_capture d1 "$CIPROF" import --db "$DB" --format folded "$TMP/toodeep.folded"
[ "$RC" = 3 ] && grep -q "toodeep.folded:1:3999999: a stack deeper than 1000000 frames" "$TMP/d1.err" ||
	check_failed "too deep folded: rc $RC, $(head -c 300 "$TMP/d1.err")"
python3 -c '
import sys
sys.stdout.write("p 1/1 [000] 1.000000: 1000 cpu-clock:\n")
sys.stdout.write("\t1 rec+0x1 (/bin/p)\n" * 1000000 + "\n")' >"$TMP/toodeep.perf"
run_capture d2 "$CIPROF" import --db "$DB" --format perf-script "$TMP/toodeep.perf"
[ "$RC" = 3 ] && grep -q "toodeep.perf:1000001:1: a call chain deeper than 1000000 frames" "$TMP/d2.err" ||
	check_failed "too deep perf script: rc $RC, $(head -c 300 "$TMP/d2.err")"
# pprof, written by hand: one location (one line of one function) a million times in a sample.
python3 - "$TMP/toodeep.pb" <<'PY'
import sys
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v: return bytes(out)
def field(num, payload):  # length-delimited
    return varint(num << 3 | 2) + varint(len(payload)) + payload
def vfield(num, v):
    return varint(num << 3) + varint(v)
strings = [b"", b"samples", b"count", b"rec"]
prof = field(1, vfield(1, 1) + vfield(2, 2))                      # sample_type samples/count
prof += field(2, field(1, varint(1) * 1000000) + field(2, varint(1)))  # sample
prof += field(4, vfield(1, 1) + field(4, vfield(1, 1)))          # location 1: function 1
prof += field(5, vfield(1, 1) + vfield(2, 3))                    # function 1 "rec"
for s in strings:
    prof += field(6, s)
open(sys.argv[1], "wb").write(prof)
PY
run_capture d3 "$CIPROF" import --db "$DB" --format pprof "$TMP/toodeep.pb"
[ "$RC" = 3 ] && grep -q "toodeep.pb: sample 0: a stack deeper than 1000000 frames" "$TMP/d3.err" ||
	check_failed "too deep pprof: rc $RC, $(head -c 300 "$TMP/d3.err")"
[ "$(count_runs)" = "$BEFORE" ] || check_failed "a refused deep stack stored a run"
ok "stacks deeper than a million frames: refused with file and position in all three formats"
# 7. Edge cases of real files. perf script names a file deleted since it was mapped
# "(/path (deleted))": the module is the file's name, the offset goes as for other frames.
printf '%s\n' 'prog 123 [000] 1.000: 1001001 cpu-clock:' \
	$'\t4005d6 foo+0x10 (/tmp/t (deleted))' $'\t4005d7 main+0x10 (/tmp/t (deleted))' '' \
	>"$TMP/del.perf"
run_capture x1 "$CIPROF" import --db "$TMP/del.db" --format perf-script "$TMP/del.perf"
[ "$RC" = 0 ] || fail "import of del.perf exited $RC: $(cat "$TMP/x1.err")"
"$CIPROF" show --db "$TMP/del.db" --format folded >"$TMP/del.out"
[ "$(cat "$TMP/del.out")" = "prog;main;foo 1" ] || check_failed "deleted DSO: $(cat "$TMP/del.out")"
"$CIPROF" show --db "$TMP/del.db" --top 0 --format json | python3 -c '
import json, sys
f = {x["name"]: x["module"] for x in json.load(sys.stdin)["functions"]}
assert f == {"foo": "t", "main": "t"}, f' || check_failed "deleted DSO: modules"
ok "perf script: a deleted DSO's frames are foo and main in module t"

# A gzip file of two members (cat a.gz b.gz) is one profile, as go tool pprof reads it; bytes
# after the gzip data that are no member are refused with their offset.
zcat "$TMP/src.pb.gz" >"$TMP/src.pb" || fail "zcat"
{ head -c 40 "$TMP/src.pb" | gzip; tail -c +41 "$TMP/src.pb" | gzip; } >"$TMP/two.pb.gz"
run_capture x2 "$CIPROF" import --db "$TMP/two.db" --format pprof "$TMP/two.pb.gz"
[ "$RC" = 0 ] || check_failed "two-member gzip: rc $RC, $(cat "$TMP/x2.err")"
"$CIPROF" show --db "$TMP/two.db" --format folded >"$TMP/two.out" 2>/dev/null
cmp -s "$TMP/src.folded" "$TMP/two.out" || check_failed "two-member gzip: stacks differ"
size=$(stat -c %s "$TMP/src.pb.gz")
{ cat "$TMP/src.pb.gz"; echo garbage; } >"$TMP/trail.pb.gz"
run_capture x3 "$CIPROF" import --db "$TMP/two.db" --format pprof "$TMP/trail.pb.gz"
[ "$RC" = 3 ] && grep -q "trail.pb.gz: byte $size: 8 bytes after the end of the gzip data" "$TMP/x3.err" ||
	check_failed "trailing garbage: rc $RC, $(cat "$TMP/x3.err")"
# a member that is not a profile: the size named is the file's
{ head -c 40 "$TMP/src.pb" | gzip; printf '\377\377\377' | gzip; } >"$TMP/badtwo.pb.gz"
run_capture x4 "$CIPROF" import --db "$TMP/two.db" --format pprof "$TMP/badtwo.pb.gz"
[ "$RC" = 3 ] && grep -q "the 43 bytes that the file's $(stat -c %s "$TMP/badtwo.pb.gz") gunzip to" \
	"$TMP/x4.err" || check_failed "bad two-member gzip: rc $RC, $(cat "$TMP/x4.err")"
ok "pprof: a two-member gzip reads whole; trailing garbage is refused at its byte"

# Folded: counts whose sum passes 2^64 - 1 are refused at their line (not wrapped), and a
# UTF-8 byte order mark is not part of the first frame.
printf 'a;b 9223372036854775807\na;b 9223372036854775807\na;b 3\n' >"$TMP/wrap.folded"
run_capture x5 "$CIPROF" import --db "$TMP/wrap.db" --format folded "$TMP/wrap.folded"
[ "$RC" = 3 ] && grep -q "wrap.folded:3: this stack's sample counts add up to more than" "$TMP/x5.err" ||
	check_failed "folded sum overflow: rc $RC, $(cat "$TMP/x5.err")"
[ ! -e "$TMP/wrap.db" ] || [ "$("$CIPROF" runs --db "$TMP/wrap.db" --format json |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')" = 0 ] ||
	check_failed "an overflowing folded file stored a run"
printf '\357\273\277prog;f 2\n' >"$TMP/bom.folded"
run_capture x6 "$CIPROF" import --db "$TMP/bom.db" --format folded "$TMP/bom.folded"
[ "$RC" = 0 ] || check_failed "BOM folded: rc $RC, $(cat "$TMP/x6.err")"
[ "$("$CIPROF" show --db "$TMP/bom.db" --format folded)" = "prog;f 2" ] ||
	check_failed "BOM folded: $("$CIPROF" show --db "$TMP/bom.db" --format folded | od -c | head -2)"
ok "folded: sums past 2^64 - 1 refused at their line; a byte order mark skipped"
finish
