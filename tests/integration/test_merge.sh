#!/usr/bin/env bash
# ciprof merge copies the runs another database lacks, each once (merging again adds nothing),
# with tags, profiles and outcomes; --dry-run changes nothing; a bad source is named. Then the
# durable history of ci-templates/ciprof-history.sh: three jobs that start from the same saved
# database, each add a run and save to one history branch at the same moment (a pre-receive
# hook holds every push for a second, so they overlap); no run is lost and none is doubled.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh" # expect_eq

HISTORY="$CIPROF_SRC/ci-templates/ciprof-history.sh"
export PATH="$(dirname "$CIPROF"):$PATH"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
export CIPROF_RUN_HZ=499
WORK='i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done'

nruns() { "$CIPROF" runs --db "$1" --limit 1000 --format json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))' 2>/dev/null || echo error; }
jobs_of() { "$CIPROF" runs --db "$1" --limit 1000 --format json 2>/dev/null |
	python3 -c 'import json,sys; print(" ".join(sorted(r["tags"].get("job", "-") for r in json.load(sys.stdin)["runs"])))'; }

mkdir -p "$TMP/repo" && cd "$TMP/repo" || fail "cd"
git init -q -b main . && git commit -q --allow-empty -m one || fail "git"
for j in base1 base2; do
	"$CIPROF" run -q --db "$TMP/x.db" --tag job=$j -- sh -c "$WORK" || fail "ciprof run $j"
done
cp "$TMP/x.db" "$TMP/a.db" && cp "$TMP/x.db" "$TMP/b.db"
"$CIPROF" run -q --db "$TMP/a.db" --tag job=a -- sh -c "$WORK" || fail "ciprof run a"
"$CIPROF" run -q --db "$TMP/b.db" --tag job=b -- sh -c "$WORK" || fail "ciprof run b"

# --- ciprof merge ------------------------------------------------------------------------------
cp "$TMP/a.db" "$TMP/m.db"
run_capture dry "$CIPROF" merge --dry-run --db "$TMP/m.db" "$TMP/b.db"
expect_rc "merge --dry-run" 0 dry
expect_grep "--dry-run says what" "$TMP/dry.err" "would copy 1 run from $TMP/b.db"
expect_eq "--dry-run changes nothing" "$(nruns "$TMP/m.db")" 3
run_capture m1 "$CIPROF" merge --db "$TMP/m.db" "$TMP/b.db"
expect_rc "merge" 0 m1
expect_grep "merge reports" "$TMP/m1.err" "copied 1 run from $TMP/b.db into $TMP/m.db (2 already there)"
expect_eq "the union of both jobs" "$(jobs_of "$TMP/m.db")" "a b base1 base2"
run_capture m2 "$CIPROF" merge --db "$TMP/m.db" "$TMP/b.db" "$TMP/a.db"
expect_rc "merging again" 0 m2
expect_eq "merging again adds nothing" "$(nruns "$TMP/m.db")" 4
bid=$("$CIPROF" runs --db "$TMP/b.db" --limit 1 --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
mid=$("$CIPROF" runs --db "$TMP/m.db" --limit 1 --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
"$CIPROF" show --db "$TMP/b.db" "$bid" --format folded 2>/dev/null | sort >"$TMP/b.folded"
"$CIPROF" show --db "$TMP/m.db" "$mid" --format folded 2>/dev/null | sort >"$TMP/m.folded"
if [ -s "$TMP/b.folded" ] && cmp -s "$TMP/b.folded" "$TMP/m.folded"; then
	ok "the merged run's profile is the source's"
else
	check_failed "the merged run's profile differs: $(diff "$TMP/b.folded" "$TMP/m.folded" | head -5)"
fi
"$CIPROF" merge --db "$TMP/new.db" "$TMP/m.db" 2>/dev/null
expect_eq "merge into a new database" "$(nruns "$TMP/new.db")" 4
# Two runs of one command in one second with the same samples (a fixed-period sampler counts a
# steady loop almost exactly, and CI saw base1 and base2 collapse into one): still two runs.
for j in twin1 twin2; do
	"$CIPROF" run -q --db "$TMP/twins.db" --tag job=$j -- true || fail "ciprof run $j"
done
"$CIPROF" merge --db "$TMP/twins-merged.db" "$TMP/twins.db" 2>/dev/null
expect_eq "runs alike but for their tags stay two" "$(jobs_of "$TMP/twins-merged.db")" "twin1 twin2"
printf 'not a database' >"$TMP/bad.db"
run_capture bad "$CIPROF" merge --db "$TMP/m.db" "$TMP/bad.db"
expect_rc "a bad source" 3 bad
expect_grep "the bad source is named" "$TMP/bad.err" "$TMP/bad.db"
run_capture usage "$CIPROF" merge --db "$TMP/m.db"
expect_rc "no source" 2 usage

# --- the history branch, three racing jobs -----------------------------------------------------
git init -q --bare "$TMP/origin.git" || fail "git init --bare"
cat >"$TMP/origin.git/hooks/pre-receive" <<'HOOK'
#!/bin/sh
sleep 1
HOOK
chmod +x "$TMP/origin.git/hooks/pre-receive"
git remote add origin "$TMP/origin.git" && git push -q origin main || fail "git push"
run_capture first bash "$HISTORY" save ciprof-history "$TMP/x.db"
expect_rc "the first save creates the branch" 0 first
for j in c d e; do
	git clone -q "$TMP/origin.git" "$TMP/job-$j" || fail "clone"
	(cd "$TMP/job-$j" && bash "$HISTORY" restore ciprof-history .ciprof/ciprof.db &&
		"$CIPROF" run -q --db .ciprof/ciprof.db --tag job=$j -- sh -c "$WORK") >"$TMP/prep-$j.log" 2>&1 ||
		check_failed "job $j could not restore and run: $(cat "$TMP/prep-$j.log")"
done
for j in c d e; do
	(cd "$TMP/job-$j" && bash "$HISTORY" save ciprof-history .ciprof/ciprof.db) >"$TMP/save-$j.log" 2>&1 &
done
wait
for j in c d e; do
	expect_grep "job $j saved" "$TMP/save-$j.log" "saved .ciprof/ciprof.db to ciprof-history"
done
retries=$(cat "$TMP"/save-*.log | grep -c "moved meanwhile" || true)
ok "$retries save(s) found the branch moved and merged again"
git clone -q --branch ciprof-history "$TMP/origin.git" "$TMP/final" || fail "clone the history branch"
expect_eq "no run lost, none doubled" "$(jobs_of "$TMP/final/ciprof.db")" "base1 base2 c d e"
expect_eq "the branch is one commit" "$(git -C "$TMP/final" rev-list --count HEAD)" 1
finish
