#!/usr/bin/env bash
# gitlab-fork-notes.sh: the GitLab companion for merge requests from forks (docs/ci.md, "Fork
# merge requests"). A fork's merge request pipeline runs in the fork, without this project's
# CIPROF_GITLAB_TOKEN, so its ciprof job cannot post the note; it keeps the run's database in
# its artifacts instead (ciprof-report/ciprof.db, head-run, base-branch, and head-runs when it
# judged more than 3 runs together). Run in this project
# from this project's own configuration (the template's .ciprof-fork-notes job, in a pipeline
# schedule), this script takes each open merge request from a fork, its head pipeline's
# CIPROF_FORK_JOB job (default ciprof), downloads those files, renders the note again with
# ciprof from the database (the fork's Markdown is never posted; --head-runs as the fork's job
# judged, and this project's CIPROF_REPORT_OPTIONS) and posts it with
# ciprof comment, which refuses unless the merge request's head is still the commit that was
# profiled. It never checks out or runs the fork's code. Needs curl, jq and ciprof, and
# CI_API_V4_URL, CI_PROJECT_ID and CIPROF_GITLAB_TOKEN (which must be able to read the forks'
# artifacts: public forks' pipelines are, private ones need the token's user as a member).
set -uo pipefail

die() { echo "ciprof-fork-notes: $*" >&2; exit 1; }
say() { echo "ciprof-fork-notes: $*"; }
[ -n "${CIPROF_GITLAB_TOKEN:-}" ] || die "CIPROF_GITLAB_TOKEN is not set (a project access token with the api scope)"
[ -n "${CI_API_V4_URL:-}" ] && [ -n "${CI_PROJECT_ID:-}" ] || die "CI_API_V4_URL and CI_PROJECT_ID are needed"
for tool in curl jq ciprof; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
job=${CIPROF_FORK_JOB:-ciprof}
# This project's own report options (the schedule's CIPROF_REPORT_OPTIONS), never the fork's.
read -r -a report_opts <<<"${CIPROF_REPORT_OPTIONS:-}"
work=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-fork-notes.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The token goes to curl in a header file, never on its command line or in a URL.
printf 'PRIVATE-TOKEN: %s\n' "$CIPROF_GITLAB_TOKEN" >"$work/auth"
chmod 600 "$work/auth"

# get PATH OUT: the API's answer to GET PATH into OUT (at most 64 MiB); non-zero on an error.
get() {
	curl -fsS --retry 2 --max-filesize 67108864 -H @"$work/auth" -o "$2" "$CI_API_V4_URL$1"
}
digits() { case "$1" in '' | *[!0-9]*) return 1 ;; esac; }

get "/projects/$CI_PROJECT_ID/merge_requests?state=opened&per_page=100" "$work/mrs.json" ||
	die "cannot list the open merge requests of project $CI_PROJECT_ID"
posted=0 skipped=0
for iid in $(jq -r '.[] | select(.source_project_id != .target_project_id) | .iid' "$work/mrs.json"); do
	digits "$iid" || continue
	skip() { say "!$iid: $*; nothing posted"; skipped=$((skipped + 1)); }
	get "/projects/$CI_PROJECT_ID/merge_requests/$iid" "$work/mr.json" || { skip "cannot read the merge request"; continue; }
	sha=$(jq -r '.sha // ""' "$work/mr.json")
	pid=$(jq -r '.head_pipeline.id // ""' "$work/mr.json")
	pproj=$(jq -r '.head_pipeline.project_id // ""' "$work/mr.json")
	psha=$(jq -r '.head_pipeline.sha // ""' "$work/mr.json")
	if ! digits "$pid" || ! digits "$pproj"; then skip "no pipeline for its head yet"; continue; fi
	if ! printf '%s' "$sha" | grep -Eq '^[0-9a-f]{7,64}$' || [ "$psha" != "$sha" ]; then
		skip "its head pipeline is not for its head commit"
		continue
	fi
	get "/projects/$pproj/pipelines/$pid/jobs?per_page=100" "$work/jobs.json" || { skip "cannot list pipeline $pid's jobs"; continue; }
	jid=$(jq -r --arg n "$job" '[.[] | select(.name == $n and (.status == "success" or .status == "failed"))][0].id // ""' "$work/jobs.json")
	digits "$jid" || { skip "pipeline $pid has no finished $job job"; continue; }
	d="$work/$iid"
	mkdir -p "$d"
	ok=1
	for f in head-run base-branch ciprof.db; do
		get "/projects/$pproj/jobs/$jid/artifacts/ciprof-report/$f" "$d/$f" || ok=0
	done
	[ "$ok" = 1 ] || { skip "job $jid's artifacts lack ciprof-report/{head-run,base-branch,ciprof.db}"; continue; }
	# The artifacts are the fork's data: only the database and checked values are used.
	head=$(head -c 24 "$d/head-run" | tr -d '[:space:]')
	base=$(head -c 256 "$d/base-branch" | tr -d '[:space:]')
	digits "$head" || { skip "no run id in the artifacts"; continue; }
	printf '%s' "$base" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9._/-]{0,250}$' || { skip "no valid base branch in the artifacts"; continue; }
	# head-runs: how many runs of its commit the job judged together (only when more than
	# report's default 3); a whole number from 2 to 20, else ignored.
	opts=("${report_opts[@]}")
	if get "/projects/$pproj/jobs/$jid/artifacts/ciprof-report/head-runs" "$d/head-runs" 2>/dev/null; then
		n=$(head -c 8 "$d/head-runs" | tr -d '[:space:]')
		case "$n" in
		[2-9] | 1[0-9] | 20)
			opts=(--head-runs "$n" "${opts[@]}")
			say "!$iid: its job judged $n runs of its commit together: --head-runs $n"
			;;
		*) say "!$iid: the artifacts' head-runs is not a number from 2 to 20; ignored" ;;
		esac
	fi
	if ! ciprof report --db "$d/ciprof.db" --head "$head" --base "$base" "${opts[@]}" --format md -o "$d/report.md"; then
		skip "the fork's database could not be reported"
		continue
	fi
	if CIPROF_PR_NUMBER=$iid CIPROF_PR_HEAD_SHA=$sha CI_MERGE_REQUEST_PROJECT_ID=$CI_PROJECT_ID \
		CI_MERGE_REQUEST_IID=$iid CIPROF_COMMENT_ENABLED=true ciprof comment --strict --provider gitlab --body-file "$d/report.md"; then
		posted=$((posted + 1))
	else
		skip "the note was not posted (see above)"
	fi
done
say "$posted note(s) posted or updated, $skipped merge request(s) from forks skipped"
