#!/bin/sh
# Scale benchmark: JUnit outcomes matched to tests at 37,500 and 300,000 cases (CPU seconds and
# their ratio: 8 is linear, 64 quadratic), and the peak memory of parsing a perf map whose one
# name is 50 MB. usage: bench/scale/run.sh [BUILD]
set -eu
build=${1:-build}
cmake --build "$build" --target bench_scale >/dev/null
"$build/bench/scale/bench_scale"
