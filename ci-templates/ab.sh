#!/usr/bin/env bash
# The A/B mode of the CI templates (GitHub action input `ab`, GitLab variable CIPROF_AB), shared
# by both: checks out the merge-base of HEAD with the base branch in a worktree, builds it with
# the project's build command, runs `ciprof ab` (base: the suite in that worktree; head: the
# suite here) and writes the report in every format. No stored history is needed.
#
#   ab.sh BASE_BRANCH OUT_DIR
#
# Environment: CIPROF_AB_COMMAND (the suite, a shell command line run from the top of each
# work tree), CIPROF_AB_BUILD (the build command, run in the base worktree; the head is built
# by the job before), CIPROF_AB_ARGS (more `ciprof ab` options, split on spaces), CIPROF_AB_DIR
# (where the worktree goes; default $RUNNER_TEMP or $TMPDIR, + /ciprof-base).
# Writes OUT_DIR/report.{json,md,html,svg} and OUT_DIR/verdict. Exit status: ciprof ab's
# (0 compared, 1 regression, 3 a side failed) or 3 when the base cannot be checked out or built.
set -uo pipefail

base=${1:?usage: ab.sh BASE_BRANCH OUT_DIR}
out=${2:?usage: ab.sh BASE_BRANCH OUT_DIR}
cmd=${CIPROF_AB_COMMAND:?CIPROF_AB_COMMAND: the suite to compare}
build=${CIPROF_AB_BUILD:-}
wt=${CIPROF_AB_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ciprof-base}
mkdir -p "$out"

mb=""
for ref in "origin/$base" "$base"; do
	mb=$(git merge-base "$ref" HEAD 2>/dev/null) && break
done
if [ -z "$mb" ]; then
	echo "ciprof: ab: no merge-base of HEAD with $base: fetch its history (actions/checkout" \
		"fetch-depth: 0, GitLab GIT_DEPTH: 0)" >&2
	exit 3
fi
git worktree remove --force "$wt" >/dev/null 2>&1
rm -rf "$wt"
if ! git worktree add --detach "$wt" "$mb" >/dev/null; then
	echo "ciprof: ab: cannot check out the merge-base $mb in $wt" >&2
	exit 3
fi
echo "ciprof: ab: base is the merge-base $mb of HEAD with $base, in $wt"
if [ -n "$build" ] && ! (cd "$wt" && bash -c "$build"); then
	echo "ciprof: ab: building the base ($mb) with '$build' failed" >&2
	exit 3
fi

rc=0
# shellcheck disable=SC2086 # CIPROF_AB_ARGS is a list of options
ciprof ab --base-dir "$wt" --base "cd $(printf '%q' "$wt") && $cmd" --head "$cmd" \
	--format json --fail-on-regression -o "$out/report.json" ${CIPROF_AB_ARGS:-} || rc=$?
if [ "$rc" -le 1 ] && [ -s "$out/report.json" ]; then
	id=$(grep -o '"id": *"[^"]*"' "$out/report.json" | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')
	for f in md html svg; do
		ciprof -q report --ab "$id" --format "$f" -o "$out/report.$f" ||
			echo "ciprof: ab: rendering the $f report failed" >&2
	done
	sed -n 's/.*"verdict": *"\([a-z]*\)".*/\1/p' "$out/report.json" | head -n1 >"$out/verdict"
fi
git worktree remove --force "$wt" >/dev/null 2>&1
exit "$rc"
