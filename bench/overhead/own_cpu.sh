#!/bin/bash
# ciprof's own CPU per run on a process-heavy workload, for two installed copies side by side.
#
#   bench/overhead/own_cpu.sh [--rounds N] [--procs N] [--hz HZ] [--unwind MODE]
#       [--workload 'SHELL CMD'] [--before-arg ARG] [--after-arg ARG] BEFORE AFTER
#
# BEFORE and AFTER are install prefixes (`cmake --install build --prefix DIR`): DIR/bin/ciprof.
# The workload is sh starting --procs processes (default 300) of 3 ms of CPU each
# (build/tests/burn_ms of this source tree's build, $CIPROF_BUILD or ./build). Each round runs
# both copies (the order alternates) as
#   perf stat --no-inherit -e task-clock -- DIR/bin/ciprof run --no-store -o /dev/null
#       --hz HZ [--unwind MODE] -- sh -c '...' burn_ms
# so only ciprof's own process is counted, not the workload. --workload replaces the workload
# with sh -c 'SHELL CMD'; --before-arg/--after-arg (repeatable) add an option to one side's
# `ciprof run` (BEFORE and AFTER may then be one copy: --after-arg --no-symbol-cache).
# Prints each round's own CPU in ms and the ratio AFTER/BEFORE, then medians. Run it niced on
# a shared machine: only the side-by-side ratios mean anything there. Not part of ctest.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${CIPROF_BUILD:-$src/build}
rounds=10
procs=300
hz=999
unwind=
workload=
before_args=() after_args=()
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--procs) procs=$2; shift ;;
	--hz) hz=$2; shift ;;
	--unwind) unwind=$2; shift ;;
	--workload) workload=$2; shift ;;
	--before-arg) before_args+=("$2"); shift ;;
	--after-arg) after_args+=("$2"); shift ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "own_cpu.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
if [ $# -ne 2 ]; then
	echo "usage: own_cpu.sh [--rounds N] [--procs N] [--hz HZ] [--unwind MODE] BEFORE AFTER" >&2
	exit 2
fi
before=$1/bin/ciprof
after=$2/bin/ciprof
burn=$build/tests/burn_ms
for f in "$before" "$after" "$burn"; do
	[ -x "$f" ] || { echo "own_cpu.sh: $f not found" >&2; exit 1; }
done
command -v perf >/dev/null || { echo "own_cpu.sh: perf is needed" >&2; exit 1; }

work="i=0; while [ \$i -lt $procs ]; do \"\$0\" 3 /dev/null; i=\$((i+1)); done"
[ -n "$workload" ] && work=$workload
opts=(--no-store -o /dev/null --hz "$hz")
[ -n "$unwind" ] && opts+=(--unwind "$unwind")

# ciprof's own task-clock in ms for one run of the workload under $1 (more run options after it).
own_ms() {
	local out bin=$1
	shift
	out=$(perf stat --no-inherit -x, -e task-clock -- "$bin" run "${opts[@]}" "$@" -- \
		sh -c "$work" "$burn" 2>&1 >/dev/null | grep task-clock)
	echo "${out%%,*}"
}

if [ -n "$workload" ]; then
	echo "ciprof's own CPU (ms) per run: sh -c '$workload', --hz $hz${unwind:+ --unwind $unwind}"
else
	echo "ciprof's own CPU (ms) per run: $procs processes x 3 ms, --hz $hz${unwind:+ --unwind $unwind}"
fi
[ ${#before_args[@]} -gt 0 ] && echo "before: ${before_args[*]}"
[ ${#after_args[@]} -gt 0 ] && echo "after: ${after_args[*]}"
printf '%-6s %10s %10s %8s\n' round before after ratio
b_all=() a_all=() r_all=()
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then
		b=$(own_ms "$before" ${before_args[@]+"${before_args[@]}"})
		a=$(own_ms "$after" ${after_args[@]+"${after_args[@]}"})
	else
		a=$(own_ms "$after" ${after_args[@]+"${after_args[@]}"})
		b=$(own_ms "$before" ${before_args[@]+"${before_args[@]}"})
	fi
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
	printf '%-6s %10.1f %10.1f %8s\n' "$r" "$b" "$a" "$ratio"
	b_all+=("$b") a_all+=("$a") r_all+=("$ratio")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-6s %10.1f %10.1f %8.3f\n' median "$(median "${b_all[@]}")" "$(median "${a_all[@]}")" \
	"$(median "${r_all[@]}")"
