#!/bin/bash
# Integration test of the database commands (runs, show, export, gc) on the real binary.
# The history is seeded by bench/storage's store_synth (synthetic runs whose hottest function
# is known), so the test needs no perf access; when 'ciprof run' can sample here, two real
# runs are stored and listed too.
source "$(dirname "$0")/lib.sh"

SYNTH=$CIPROF_BUILD/bench/storage/store_synth
[ -x "$SYNTH" ] || fail "store_synth not built ($SYNTH); build target store_synth"
DB=$TMP/h.db
"$SYNTH" --db "$DB" --runs 5 --branch main --seed 1 >"$TMP/main.ids" || fail "seeding main"
"$SYNTH" --db "$DB" --runs 3 --branch feature/x --seed 2 --tag os=linux >"$TMP/feat.ids" ||
	fail "seeding feature/x"
LATEST=$(tail -n1 "$TMP/feat.ids")

# runs
run_capture runs "$CIPROF" runs --db "$DB"
[ "$RC" = 0 ] || fail "runs exited $RC: $(cat "$TMP/runs.err")"
[ "$(grep -c 'make test' "$TMP/runs.out")" = 8 ] || check_failed "runs text: want 8 rows"
head -n1 "$TMP/runs.out" | grep -q 'ID.*BRANCH.*COMMIT.*EXIT.*SAMPLES' || check_failed "runs header"
ok "runs text"

run_capture runsj "$CIPROF" runs --db "$DB" --format json --branch feature/x --limit 2
[ "$RC" = 0 ] || fail "runs --format json exited $RC"
python3 - "$TMP/runsj.out" "$LATEST" <<'PY' || check_failed "runs json shape"
import json, re, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
assert len(runs) == 2, runs
assert runs[0]["id"] == int(sys.argv[2]) and runs[0]["id"] > runs[1]["id"]
for r in runs:
    for k in ("id", "commit", "branch", "created_at", "exit_code", "samples", "tags"):
        assert k in r, k
    assert r["branch"] == "feature/x"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created_at"]), r["created_at"]
    assert r["tags"] == {"os": "linux"}, r["tags"]
    assert r["samples"] > 0 and len(r["commit"]) == 40
PY
ok "runs json"

# show
run_capture showj "$CIPROF" show --db "$DB" --format json
[ "$RC" = 0 ] || fail "show exited $RC: $(cat "$TMP/showj.err")"
python3 - "$TMP/showj.out" "$LATEST" <<'PY' || check_failed "show json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["run"] == int(sys.argv[2])
f = d["functions"]
assert f[0]["name"] == "checksum_block", f[0]
assert len(f) > 20 and d["more"] == 0  # JSON lists every function unless --top is given
for x in f:
    assert 0 <= x["self_share"] <= x["total_share"] <= 1 and x["self"] <= x["total"]
PY
ok "show ranks the hottest function first"

run_capture showt "$CIPROF" show --db "$DB" "$LATEST" --by test --top 0 --format json
[ "$RC" = 0 ] || fail "show --by test exited $RC: $(cat "$TMP/showt.err")"
TEST=$(python3 - "$TMP/showt.out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["tests"]
assert abs(sum(x["share"] for x in t) - 1) < 1e-9
assert sum(x["samples"] for x in t) == d["samples"]
assert all(x["cpu_seconds"] > 0 for x in t)
assert any(x["name"] == "" for x in t)  # outside tests
print([x["name"] for x in t if x["name"]][0])
PY
) || check_failed "show --by test json"
ok "show --by test ($TEST)"

run_capture showf "$CIPROF" show --db "$DB" --test "$TEST" --format folded
[ "$RC" = 0 ] || check_failed "show --test --format folded exited $RC"
grep -q "^unit_tests;main;run_tests;" "$TMP/showf.out" || check_failed "folded stacks start at the process"
run_capture showtxt "$CIPROF" show --db "$DB" --test "$TEST" --top 3
grep -q "checksum_block\|%" "$TMP/showtxt.out" || check_failed "show text"
run_capture shownt "$CIPROF" show --db "$DB" --test no-such-test
[ "$RC" = 3 ] && grep -q "no samples of test 'no-such-test'" "$TMP/shownt.err" ||
	check_failed "unknown test: rc $RC"
run_capture showbad "$CIPROF" show --db "$DB" 99999
[ "$RC" = 3 ] && grep -q "no run 99999" "$TMP/showbad.err" || check_failed "unknown run: rc $RC"
run_capture showusage "$CIPROF" show --db "$DB" --by nonsense
[ "$RC" = 2 ] || check_failed "bad --by: rc $RC"
ok "show errors"

# export
run_capture expf "$CIPROF" export --db "$DB" --run "$LATEST" --format folded
run_capture showf2 "$CIPROF" show --db "$DB" "$LATEST" --format folded
cmp -s "$TMP/expf.out" "$TMP/showf2.out" || check_failed "export folded != show folded"
run_capture exps "$CIPROF" export --db "$DB" --format speedscope -o "$TMP/run.speedscope.json"
[ "$RC" = 0 ] || fail "export speedscope exited $RC: $(cat "$TMP/exps.err")"
python3 - "$TMP/run.speedscope.json" "$TMP/expf.out" <<'PY' || check_failed "speedscope structure"
# The structure speedscope's importer requires (file-format-schema.json, "sampled" profiles).
import json, sys
d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
frames = d["shared"]["frames"]
assert frames and all(isinstance(f["name"], str) for f in frames)
assert all(isinstance(f.get("line", 0), int) for f in frames)
profs = d["profiles"]
assert 0 <= d["activeProfileIndex"] < len(profs)
assert len(profs) > 2  # the whole run, then one per test
for p in profs:
    assert p["type"] == "sampled"
    assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes")
    assert isinstance(p["name"], str) and p["startValue"] == 0
    assert len(p["samples"]) == len(p["weights"]) > 0
    assert p["endValue"] == sum(p["weights"])
    for s in p["samples"]:
        assert all(0 <= i < len(frames) for i in s)
# The whole-run profile holds the same stacks as the folded export.
folded = {}
for line in open(sys.argv[2]):
    stack, n = line.rsplit(" ", 1)
    folded[stack] = int(n)
p = profs[0]
per = p["endValue"] // sum(folded.values())
got = {}
for s, w in zip(p["samples"], p["weights"]):
    k = ";".join(frames[i]["name"] for i in s)
    got[k] = got.get(k, 0) + w // per
assert got == folded
PY
run_capture expnofmt "$CIPROF" export --db "$DB"
[ "$RC" = 2 ] || check_failed "export without --format: rc $RC"
ok "export folded and speedscope"

# gc: each synthetic run is of its own commit, so folding leaves them all; --no-fold deletes
run_capture gcfold "$CIPROF" gc --db "$DB" --keep-runs 4
[ "$RC" = 0 ] || fail "gc exited $RC: $(cat "$TMP/gcfold.err")"
grep -q "deleted 0 runs, kept 8" "$TMP/gcfold.err" ||
	check_failed "gc folding runs of distinct commits: $(cat "$TMP/gcfold.err")"
run_capture gc "$CIPROF" gc --db "$DB" --keep-runs 4 --no-fold
[ "$RC" = 0 ] || fail "gc exited $RC: $(cat "$TMP/gc.err")"
grep -q "deleted 4 runs, kept 4" "$TMP/gc.err" || check_failed "gc summary: $(cat "$TMP/gc.err")"
run_capture runs2 "$CIPROF" runs --db "$DB" --format json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]; assert len(r)==4' \
	"$TMP/runs2.out" || check_failed "4 runs after gc"
run_capture show2 "$CIPROF" show --db "$DB" --format json
[ "$RC" = 0 ] || check_failed "show after gc: rc $RC"
run_capture gcusage "$CIPROF" gc --db "$DB"
[ "$RC" = 2 ] || check_failed "gc without a rule: rc $RC"
ok "gc"

# Refused databases: exit 3, a message naming the file, the file untouched.
run_capture missing "$CIPROF" runs --db "$TMP/nope.db"
[ "$RC" = 3 ] && grep -q "no database at $TMP/nope.db" "$TMP/missing.err" ||
	check_failed "missing db: rc $RC"
[ ! -e "$TMP/nope.db" ] || check_failed "a read command created the database"
head -c 8192 /dev/urandom >"$TMP/junk.db"
cp "$TMP/junk.db" "$TMP/junk.orig"
run_capture junk "$CIPROF" show --db "$TMP/junk.db"
[ "$RC" = 3 ] && grep -q "not a ciprof database" "$TMP/junk.err" || check_failed "junk db: rc $RC"
cmp -s "$TMP/junk.db" "$TMP/junk.orig" || check_failed "junk db was modified"
cp "$DB" "$TMP/newer.db"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version=7"); c.commit(); c.close()' "$TMP/newer.db"
cp "$TMP/newer.db" "$TMP/newer.orig"
run_capture newer "$CIPROF" runs --db "$TMP/newer.db"
[ "$RC" = 3 ] && grep -q "newer than this ciprof" "$TMP/newer.err" || check_failed "newer db: rc $RC"
cmp -s "$TMP/newer.db" "$TMP/newer.orig" || check_failed "newer db was modified"
ok "missing, corrupt and newer databases refused"

# Read commands open the file read-only: an older schema is refused, not migrated, and the
# file is left byte for byte as it was.
cp "$DB" "$TMP/older.db"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE results"); c.execute("PRAGMA user_version=2"); c.commit(); c.close()' "$TMP/older.db"
cp "$TMP/older.db" "$TMP/older.orig"
for cmd in runs show export report; do
	args=()
	[ "$cmd" = export ] && args=(--format folded)
	run_capture "older_$cmd" "$CIPROF" "$cmd" --db "$TMP/older.db" "${args[@]}"
	[ "$RC" = 3 ] && grep -q "needs an upgrade" "$TMP/older_$cmd.err" ||
		check_failed "$cmd on an older schema: rc $RC: $(cat "$TMP/older_$cmd.err")"
	cmp -s "$TMP/older.db" "$TMP/older.orig" || check_failed "$cmd migrated or changed the file"
done
ok "read commands leave an older database untouched"

# A read-only folder (as on read-only media): read commands still work.
mkdir "$TMP/ro"
cp "$DB" "$TMP/ro/h.db"
rm -f "$TMP/ro/h.db-wal" "$TMP/ro/h.db-shm"
chmod 444 "$TMP/ro/h.db"
chmod 555 "$TMP/ro"
as_user=()
if [ "$(id -u)" = 0 ]; then
	# root writes anywhere: read as nobody. The build tree must be reachable for it.
	if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
		test -x "$CIPROF" 2>/dev/null; then
		chmod 755 "$TMP"
		as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	else
		as_user=(skip)
	fi
fi
if [ "${as_user[0]:-}" = skip ]; then
	echo "note [$TEST_NAME]: cannot drop root here; read-only folder check skipped"
else
	for cmd in runs show export report; do
		args=()
		[ "$cmd" = export ] && args=(--format folded)
		run_capture "ro_$cmd" "${as_user[@]}" "$CIPROF" "$cmd" --db "$TMP/ro/h.db" "${args[@]}"
		[ "$RC" = 0 ] || [ "$cmd" = report ] && [ "$RC" != 3 ] ||
			check_failed "$cmd in a read-only folder: rc $RC: $(cat "$TMP/ro_$cmd.err")"
	done
	grep -q "make test" "$TMP/ro_runs.out" || check_failed "runs in a read-only folder listed nothing"
	ok "read commands work in a read-only folder"
fi
chmod 755 "$TMP/ro"
chmod 700 "$TMP"

# The default path: CIPROF_DB, else .ciprof/ciprof.db at the work tree's top.
git init -q "$TMP/repo" && mkdir -p "$TMP/repo/src/deep"
run_capture defpath env -u CIPROF_DB -C "$TMP/repo/src/deep" "$CIPROF" runs
grep -q "no database at $TMP/repo/.ciprof/ciprof.db" "$TMP/defpath.err" ||
	check_failed "default path: $(cat "$TMP/defpath.err")"
run_capture envpath env -C "$TMP/repo/src/deep" CIPROF_DB="$DB" "$CIPROF" runs
[ "$RC" = 0 ] || check_failed "CIPROF_DB: rc $RC"
ok "default database path"

# Real runs, when this machine lets ciprof sample.
run_capture real1 env -C "$TMP/repo" "$CIPROF" run --db "$TMP/real.db" -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
if [ "$RC" = 0 ]; then
	run_capture real2 env -C "$TMP/repo" "$CIPROF" run --db "$TMP/real.db" -- true
	run_capture realruns "$CIPROF" runs --db "$TMP/real.db" --format json
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"]; assert len(r)==2' \
		"$TMP/realruns.out" || check_failed "two real runs listed"
	ok "two real runs stored and listed"
	# A writer checks the file first: nothing is stored into a database that is corrupt,
	# wherever the damage is (each page of a copy in turn, where SQLite's quick_check sees it).
	python3 - "$TMP/real.db" "$TMP/corrupt" <<'PY' || check_failed "could not corrupt a copy"
import sqlite3, sys
good = open(sys.argv[1], "rb").read()
psize = int.from_bytes(good[16:18], "big")
n = 0
for page in range(1, len(good) // psize):
    bad = bytearray(good)
    bad[page * psize + 8:page * psize + 72] = b"\xff" * 64
    path = "%s%d.db" % (sys.argv[2], page)
    open(path, "wb").write(bad)
    c = sqlite3.connect(path)
    try:
        ok = c.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        ok = False
    c.close()
    if ok:
        continue
    open(path + ".orig", "wb").write(bad)
    n += 1
sys.exit(0 if n else 1)
PY
	for orig in "$TMP"/corrupt*.db.orig; do
		db=${orig%.orig}
		run_capture corrupt_run "$CIPROF" run --db "$db" -- true
		[ "$RC" = 3 ] && grep -q "corrupt" "$TMP/corrupt_run.err" ||
			check_failed "run into $(basename "$db"): rc $RC: $(cat "$TMP/corrupt_run.err")"
		cmp -s "$db" "$orig" || check_failed "run wrote into the corrupt $(basename "$db")"
	done
	ok "run refuses a corrupt database and leaves it as it was"

	# The store is checked before CMD runs: a file that is no database at the database's
	# path costs no suite. CMD touches a file, so running it shows.
	head -c 8192 /dev/urandom >"$TMP/notadb.db"
	run_capture notadb "$CIPROF" run --db "$TMP/notadb.db" -- touch "$TMP/notadb_ran"
	expect_rc "run into a file that is no database" 3 notadb
	expect_grep "run into a file that is no database" "$TMP/notadb.err" "CMD was not run"
	[ ! -e "$TMP/notadb_ran" ] || check_failed "run into a non-database ran CMD first"
	# A database that fails only after CMD ran (CMD replaces it here): the profile is
	# written beside it, and the message says where.
	run_capture late "$CIPROF" run --db "$TMP/late.db" -- sh -c \
		'head -c 8192 /dev/urandom >"$1"; rm -f "$1-wal" "$1-shm"' sh "$TMP/late.db"
	expect_rc "run whose database breaks during CMD" 3 late
	expect_grep "the run was not stored" "$TMP/late.err" "the run was not stored"
	saved=$(ls "$TMP"/late.db.run-*.folded 2>/dev/null | head -n1)
	if [ -n "$saved" ] && grep -qF "written to $saved" "$TMP/late.err" && grep -q '^sh' "$saved"; then
		ok "a profile that could not be stored is written beside the database: $saved"
	else
		check_failed "no folded profile beside the database, or not named; stderr was:"
		sed 's/^/    /' "$TMP/late.err" >&2
	fi
	# Where a small file system can be mounted (root, outside a restricted container): a
	# read-only mount is refused before CMD and says so; a disk that fills up during CMD
	# says the disk may be full, and the profile lands in $TMPDIR instead.
	mkdir -p "$TMP/mnt" "$TMP/spill"
	if mount -t tmpfs -o size=2m tmpfs "$TMP/mnt" 2>/dev/null; then
		"$CIPROF" -q run --db "$TMP/mnt/m.db" -- true || check_failed "run into the tmpfs"
		mount -o remount,ro "$TMP/mnt"
		run_capture romount "$CIPROF" run --db "$TMP/mnt/m.db" -- touch "$TMP/romount_ran"
		expect_rc "run into a read-only mount" 3 romount
		expect_grep "run into a read-only mount" "$TMP/romount.err" "read-only"
		[ ! -e "$TMP/romount_ran" ] || check_failed "run into a read-only mount ran CMD"
		mount -o remount,rw "$TMP/mnt"
		run_capture full env TMPDIR="$TMP/spill" "$CIPROF" run --db "$TMP/mnt/m.db" -- \
			sh -c 'cat /dev/zero >"$1/fill" 2>/dev/null; exit 0' sh "$TMP/mnt"
		expect_rc "run whose disk fills up during CMD" 3 full
		expect_grep "run whose disk fills up during CMD" "$TMP/full.err" "full"
		ls "$TMP"/spill/ciprof-run-*.folded >/dev/null 2>&1 &&
			expect_grep "the spilled profile is named" "$TMP/full.err" "$TMP/spill/ciprof-run-" ||
			check_failed "no profile in \$TMPDIR after a full disk: $(cat "$TMP/full.err")"
		umount "$TMP/mnt"
	else
		echo "note [$TEST_NAME]: cannot mount a tmpfs here; read-only and full disks skipped"
	fi
else
	echo "note [$TEST_NAME]: 'ciprof run' cannot sample here (rc $RC); real runs skipped"
fi
finish
