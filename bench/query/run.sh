#!/bin/sh
# Query benchmark: merging the last 100 runs of a branch at 1k, 10k and 100k stored runs.
# Building the 100k history takes about a minute. usage: bench/query/run.sh [BUILD]
set -eu
build=${1:-build}
cmake --build "$build" --target bench_query >/dev/null
"$build/bench/query/bench_query" --sizes 1000,10000,100000 --stacks 300 --reps 21
