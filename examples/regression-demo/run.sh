#!/usr/bin/env bash
# examples/regression-demo/run.sh: ciprof report, end to end, in a throwaway git repository.
#
#   examples/regression-demo/run.sh [CIPROF]      (default: $CIPROF, else ./build/ciprof)
#
# 1. Builds a small C test suite (src/: six functions of ~0.2 s each -- checksum, hash, sort,
#    CRC, random walk, primes -- one test per function, marked with include/ciprof.h) in a new
#    git repository in a temporary folder, on main.
# 2. Profiles it DEMO_MAIN_RUNS times (3) with `ciprof run` on main, into .ciprof/ciprof.db
#    inside that repository.
# 3. Makes a pull-request branch in which hash_keys() does 30 % more mixing rounds (20 -> 26),
#    profiles it once, and prints `ciprof report --base main`: the regression, found.
#
# Environment: DEMO_HZ (sampling rate, default 4999), DEMO_MAIN_RUNS (3), DEMO_DIR (use this
# folder and keep it; otherwise a temporary one is removed at the end), DEMO_QUIET=1 (print
# only the report). Exit status: ciprof report's (0), or 1 when a step fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
ciprof=${1:-${CIPROF:-./build/ciprof}}
case "$ciprof" in
/*) ;;
*) ciprof="$(pwd)/$ciprof" ;;
esac
hz=${DEMO_HZ:-4999}
main_runs=${DEMO_MAIN_RUNS:-3}
quiet=${DEMO_QUIET:-0}

say() {
	[ "$quiet" = 1 ] || echo "regression-demo: $*" >&2
}
die() {
	echo "regression-demo: error: $*" >&2
	exit 1
}

[ -x "$ciprof" ] || die "no ciprof binary at $ciprof: build it (cmake -S . -B build && cmake --build build) or pass its path"
command -v git >/dev/null || die "git is needed"
command -v make >/dev/null || die "make is needed"
command -v cc >/dev/null || die "a C compiler (cc) is needed"

if [ -n "${DEMO_DIR:-}" ]; then
	work=$DEMO_DIR
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-demo.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi
repo=$work/repo
db=$repo/.ciprof/ciprof.db
rm -rf "$repo"
mkdir -p "$repo"

# The runs must see this repository as it is, not the CI job this script may run in.
unset GITHUB_BASE_REF GITHUB_HEAD_REF GITHUB_REF_NAME CI_MERGE_REQUEST_TARGET_BRANCH_NAME \
	CI_DEFAULT_BRANCH CI_MERGE_REQUEST_SOURCE_BRANCH_NAME CI_COMMIT_BRANCH CI_COMMIT_REF_NAME \
	BRANCH_NAME GIT_BRANCH CIPROF_DB
git_() {
	git -C "$repo" -c user.name="ciprof demo" -c user.email="demo@ciprof.invalid" \
		-c init.defaultBranch=main -c commit.gpgsign=false "$@"
}

profile() { # profile LABEL: one stored run of `make test`, in the repository (its git state)
	(cd "$repo" && "$ciprof" -q run --hz "$hz" --db "$db" --tag demo="$1" -- make -s test) \
		>"$work/run.log" 2>&1 || {
		cat "$work/run.log" >&2
		die "ciprof run failed ($1)"
	}
}

say "building the demo suite in $repo (a new git repository)"
cp "$here"/src/*.c "$here"/src/*.h "$here"/src/Makefile "$repo"/
cp "$src/include/ciprof.h" "$repo"/
printf 'demo_tests\n*.o\n' >"$repo/.gitignore"
git_ init -q
git_ add -A
git_ commit -q -m "demo suite"
make -s -C "$repo" >/dev/null || die "cannot build the demo suite"

say "profiling main $main_runs times (ciprof run --hz $hz -- make test)"
for i in $(seq 1 "$main_runs"); do
	profile "main-$i"
done

say "pull request: hash_keys() does 26 mixing rounds instead of 20 (30 % more work)"
git_ checkout -q -b pr/stronger-hash
sed -i 's/^#define HASH_ROUNDS 20$/#define HASH_ROUNDS 26/' "$repo/hash.c"
grep -q '^#define HASH_ROUNDS 26$' "$repo/hash.c" || die "could not plant the slowdown"
git_ commit -q -am "hash: more mixing rounds"
make -s -C "$repo" >/dev/null || die "cannot build the pull request"
profile pr

say "ciprof report --base main"
[ "$quiet" = 1 ] || echo >&2
status=0
(cd "$repo" && "$ciprof" report --db "$db" --base main) || status=$?
if [ -n "${DEMO_DIR:-}" ]; then
	"$ciprof" -q report --db "$db" --base main --format html -o "$work/report.html" || true
	"$ciprof" -q report --db "$db" --base main --format svg -o "$work/report.svg" || true
	say "kept $work: repo/ (with .ciprof/ciprof.db), report.html, report.svg"
fi
exit $status
