#!/bin/sh
# Storage benchmark on real profiles: runs a real test suite R times under 'ciprof run' (one
# folded profile per run, as CI would record them), then stores the R profiles with
# bench_storage --folded and compares the database with the summed gzip -6 of each run's
# folded text, like run.sh does for the synthetic workload. FOLDED_DIR=DIR keeps the profiles
# there (and reuses them when it already holds RUNS of them); RUN_ARGS adds options to
# 'ciprof run' (e.g. RUN_ARGS="--unwind dwarf").
# usage: bench/storage/real.sh [BUILD [RUNS [HZ [COMMAND...]]]]
#   default: build 20 999 ctest --test-dir BUILD -L unit   (ciprof's own unit tests)
set -eu
build=${1:-build}
runs=${2:-20}
hz=${3:-999}
if [ $# -gt 3 ]; then shift 3; else set --; fi
[ $# -gt 0 ] || set -- ctest --test-dir "$build" -L unit
cmake --build "$build" --target ciprof bench_storage >/dev/null
if [ -n "${FOLDED_DIR:-}" ]; then
	dir=$FOLDED_DIR
	mkdir -p "$dir"
else
	dir=$(mktemp -d /tmp/ciprof-real-XXXXXX)
	trap 'rm -rf "$dir"' EXIT
fi
i=1
while [ "$i" -le "$runs" ]; do
	out="$dir/run-$(printf %03d "$i").folded"
	if [ ! -s "$out" ]; then
		# the suite's own exit status does not matter here, only that a profile came out
		# shellcheck disable=SC2086 # RUN_ARGS is a list of options
		"$build/ciprof" run --hz "$hz" ${RUN_ARGS:-} --no-store -o "$out" -- "$@" \
			>/dev/null 2>"$dir/err" || :
		[ -s "$out" ] || { cat "$dir/err" >&2; exit 1; }
	fi
	i=$((i + 1))
done
echo "workload: $* (--hz $hz ${RUN_ARGS:-}), $runs runs"
"$build/bench/storage/bench_storage" --folded "$dir"/run-*.folded
