#!/bin/sh
# Storage benchmark: histories of 20, 100 and 300 runs of a few thousand stacks; prints the database size
# against the summed gzip -6 size of each run's folded text. usage: bench/storage/run.sh [BUILD]
set -eu
build=${1:-build}
cmake --build "$build" --target bench_storage >/dev/null
"$build/bench/storage/bench_storage" --runs 20 --stacks 3000 --funcs 300 --tests 40
echo "--- 100 runs"
"$build/bench/storage/bench_storage" --runs 100 --stacks 3000 --funcs 300 --tests 40
echo "--- 300 runs (the segment tree's share grows as n log n)"
"$build/bench/storage/bench_storage" --runs 300 --stacks 3000 --funcs 300 --tests 40
