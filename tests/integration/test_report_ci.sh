#!/usr/bin/env bash
# ciprof report's Markdown in a GitHub Actions pull-request job: the PR's own head commit from
# the event (not the merge commit the run measured), links to the job (the run's recorded job
# URL) and to the HTML report (the run's artifacts, or --artifact-url / CIPROF_ARTIFACT_URL),
# and --id in the marker. Profiles are imported folded stacks; the head run is imported with
# the job's environment, as 'ciprof run' in that job would record it.
source "$(dirname "$0")/lib.sh"

cd "$TMP" || fail "no temp dir"
DB=$TMP/db.sqlite
printf 'suite;main;work 3000\nsuite;main;other 2000\n' >base.folded
printf 'suite;main;work 4500\nsuite;main;other 2000\n' >head.folded
for i in 1 2 3; do
	run_capture import$i "$CIPROF" import --db "$DB" --format folded --branch main \
		--commit "$(printf '%040d' $i)" base.folded
	expect_rc "base run $i" 0 import$i
done
MERGE=$(printf 'b%039d' 0)
PRHEAD=$(printf 'c%039d' 0)
GH=(GITHUB_ACTIONS=true GITHUB_REPOSITORY=octo/widgets GITHUB_RUN_ID=4242
	GITHUB_SERVER_URL=https://github.com GITHUB_REF=refs/pull/7/merge)
run_capture importh env "${GH[@]}" "$CIPROF" import --db "$DB" --format folded --branch feature \
	--commit "$MERGE" head.folded
expect_rc "head run imported in the PR job" 0 importh
cat >event.json <<EOF2
{"pull_request": {"number": 7, "base": {"ref": "main"}, "head": {"sha": "$PRHEAD"}}}
EOF2

run_capture md env "${GH[@]}" GITHUB_EVENT_PATH="$TMP/event.json" \
	"$CIPROF" report --db "$DB" --head 4 --base main --id linux-gcc
expect_rc "report in the PR job" 0 md
expect_grep "the marker carries the id" "$TMP/md.out" "<!-- ciprof-report id=linux-gcc -->"
expect_grep "the PR's head commit, and the merge it was measured on" "$TMP/md.out" \
	"<code>${PRHEAD:0:10}</code> (the PR's head; measured on its merge <code>${MERGE:0:10}</code>)"
expect_grep "the job is linked" "$TMP/md.out" "[CI job](https://github.com/octo/widgets/actions/runs/4242)"
expect_grep "the run's artifacts are linked" "$TMP/md.out" \
	"[HTML report and flame graph](https://github.com/octo/widgets/actions/runs/4242#artifacts)"
run_capture md2 env "${GH[@]}" GITHUB_EVENT_PATH="$TMP/event.json" \
	CIPROF_ARTIFACT_URL=https://example.com/r/report.html "$CIPROF" report --db "$DB" --head 4 --base main
expect_grep "CIPROF_ARTIFACT_URL wins" "$TMP/md2.out" "(https://example.com/r/report.html)"

# An event for another PR: the run's own commit, not a stranger's head.
printf '{"pull_request": {"number": 8, "head": {"sha": "%s"}}}\n' "$PRHEAD" >other.json
run_capture md3 env "${GH[@]}" GITHUB_EVENT_PATH="$TMP/other.json" \
	"$CIPROF" report --db "$DB" --head 4 --base main
expect_no_grep "another PR's head is not shown" "$TMP/md3.out" "${PRHEAD:0:10}"
expect_grep "the run's commit is" "$TMP/md3.out" "Head <code>${MERGE:0:10}</code>"
finish
