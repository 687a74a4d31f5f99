#!/usr/bin/env bash
# ciprof-history.sh: the profile database kept on a dedicated branch of the repository, so
# that history outlives CI caches (docs/ci.md, "History that lasts").
#
#   ciprof-history.sh restore BRANCH DB   merge the branch's database into DB (DB may be missing)
#   ciprof-history.sh save BRANCH DB      merge DB into the branch's database and push it
#
# The branch holds one commit without parents whose tree is the single file ciprof.db, so it
# never grows the repository's history. save pushes with --force-with-lease on the commit it
# fetched: when another job saved in between, the push is refused, and save fetches again,
# merges again (ciprof merge copies each run once) and retries, so two racing jobs both keep
# their runs. Runs in the current git repository with its remote "origin" (CIPROF_HISTORY_REMOTE
# overrides: a remote's name or a URL); credentials come from git's configuration (e.g.
# GIT_CONFIG_COUNT variables). CIPROF_HISTORY_PUSH_OPTION, when set, is sent with the push
# (git push -o; GitLab: ci.skip, so the push starts no pipeline).
set -euo pipefail

die() { echo "ciprof-history: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: ciprof-history.sh restore|save BRANCH DB"
cmd=$1 branch=$2 db=$3
remote=${CIPROF_HISTORY_REMOTE:-origin}
attempts=${CIPROF_HISTORY_ATTEMPTS:-8}
git check-ref-format --branch "$branch" >/dev/null 2>&1 || die "'$branch' is not a branch name"
command -v ciprof >/dev/null || die "ciprof is not on PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-history.XXXXXX")
trap 'rm -rf "$work"' EXIT
ref="refs/ciprof-history/$branch"

# fetch_db OUT: the branch's database into OUT (none: OUT absent); prints the commit or "".
fetch_db() {
	local out=$1
	rm -f "$out"
	if git fetch -q --no-tags --depth=1 "$remote" "+refs/heads/$branch:$ref" 2>"$work/fetch.err"; then
		git cat-file blob "$ref:ciprof.db" >"$out" 2>/dev/null ||
			die "$branch holds no ciprof.db: is it the history branch?"
		git rev-parse "$ref"
	elif git ls-remote --exit-code "$remote" "refs/heads/$branch" >/dev/null 2>&1; then
		cat "$work/fetch.err" >&2
		die "cannot fetch $branch from $remote"
	else
		echo "" # no history yet
	fi
}

case "$cmd" in
restore)
	old=$(fetch_db "$work/history.db")
	if [ -z "$old" ]; then
		echo "ciprof-history: no branch $branch yet: nothing to restore"
		exit 0
	fi
	if [ -f "$db" ]; then
		ciprof -q merge --db "$work/history.db" "$db"
	fi
	mkdir -p "$(dirname "$db")"
	mv "$work/history.db" "$db"
	echo "ciprof-history: restored $db from $branch (${old:0:12})"
	;;
save)
	[ -f "$db" ] || die "no database at $db to save"
	for attempt in $(seq 1 "$attempts"); do
		old=$(fetch_db "$work/history.db")
		ciprof -q merge --db "$work/history.db" "$db"
		blob=$(git hash-object -w "$work/history.db")
		tree=$(printf '100644 blob %s\tciprof.db\n' "$blob" | git mktree)
		commit=$(git -c user.name=ciprof -c user.email=ciprof@localhost commit-tree "$tree" -m "ciprof history")
		popt=()
		[ -n "${CIPROF_HISTORY_PUSH_OPTION:-}" ] && popt=(-o "$CIPROF_HISTORY_PUSH_OPTION")
		if git push -q "${popt[@]}" --force-with-lease="refs/heads/$branch:$old" "$remote" "$commit:refs/heads/$branch" 2>"$work/push.err"; then
			echo "ciprof-history: saved $db to $branch (attempt $attempt)"
			exit 0
		fi
		echo "ciprof-history: $branch moved meanwhile (attempt $attempt): fetching and merging again"
		sleep "$((RANDOM % 3 + 1))"
	done
	cat "$work/push.err" >&2
	die "could not push $branch after $attempts attempts"
	;;
*) die "unknown command '$cmd' (restore or save)" ;;
esac
