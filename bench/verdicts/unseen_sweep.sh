#!/usr/bin/env bash
# bench/verdicts/unseen_sweep.sh CIPROF N [DIR [NOISE]]: how often `ciprof run` takes a normal
# run for an incomplete one (docs/run.md, "Limits": processes the kernel did not follow, tag
# host.unseen_processes; a CPU's ring buffer fallen silent, tag host.silent_ring_seconds): N
# runs of each of bench/verdicts' four workloads (`ctest --test-dir build -j2`, each workload
# built in DIR, default a new temporary folder) beside NOISE: "loop" (the default: a loop of
# short processes, the shape of a rejudge: a Python process, a true, a shell loop, again and
# again), "hog" (a busy shell loop), or "both" (a loop in odd rounds, a hog in even ones).
# Prints, per workload, the runs, how many were tagged either way, the largest unsampled
# share, and the largest difference between two rings' READ counts in a run (-vv's per-CPU
# lines, kept in DIR/cpus.txt); the stderr of a tagged run is kept in DIR (unseen-*.err), and
# that of a run over 10 % unsampled that was not tagged (untagged-*.err: a fault the checks
# missed). Nothing is timed.
set -u
CIPROF=$(realpath "$1")
N=$2
DIR=${3:-$(mktemp -d /tmp/unseen-sweep.XXXXXX)}
NOISE=${4:-loop}
case $NOISE in loop | hog | both) ;; *) echo "NOISE: loop, hog or both, not $NOISE" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
for w in workload workload2 workload3 workload4; do
	if [ ! -d "$DIR/$w/build" ]; then
		rm -rf "${DIR:?}/$w" && cp -r "$HERE/$w" "$DIR/$w" &&
			cmake -S "$DIR/$w" -B "$DIR/$w/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
			cmake --build "$DIR/$w/build" -j2 >/dev/null || { echo "cannot build $w" >&2; exit 1; }
	fi
done
LOOP=
start_noise() { # $1: the round
	local kind=$NOISE
	[ "$kind" = both ] && { [ $(($1 % 2)) = 1 ] && kind=loop || kind=hog; }
	[ -n "$LOOP" ] && [ "$kind" = "$LOOP_KIND" ] && return
	stop_noise
	if [ "$kind" = loop ]; then
		(while :; do python3 -c 'sum(range(300000))'; /bin/true; sh -c 'for i in 1 2 3; do :; done'; done) &
	else
		(while :; do :; done) &
	fi
	LOOP=$! LOOP_KIND=$kind
	disown "$LOOP" # no job notice when it is killed
}
stop_noise() {
	[ -n "$LOOP" ] && { pkill -P "$LOOP"; kill "$LOOP"; } 2>/dev/null
	LOOP=
}
trap stop_noise EXIT
for i in $(seq 1 "$N"); do
	start_noise "$i"
	for w in workload workload2 workload3 workload4; do
		(cd "$DIR/$w" && "$CIPROF" -vv run --db "$DIR/$w.db" -- ctest --test-dir build -j2 \
			>/dev/null 2>"$DIR/last.err")
		grep -E "CPU [0-9]+: .* CPU-s counted" "$DIR/last.err" | sed "s/^/$w $i $LOOP_KIND /" >>"$DIR/cpus.txt"
		if grep -q "sent no sample\|ring buffer fell silent\|stopped writing to a CPU" "$DIR/last.err"; then
			cp "$DIR/last.err" "$DIR/unseen-$w-$i.err"
		elif "$CIPROF" runs --db "$DIR/$w.db" --limit 1 --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)["runs"][0]
sys.exit(0 if 1 - r["samples"] / (r["cpu_seconds"] * r["hz"]) > 0.10 else 1)'; then
			cp "$DIR/last.err" "$DIR/untagged-$w-$i.err"
		fi
	done
done
stop_noise
for w in workload workload2 workload3 workload4; do
	python3 - "$DIR/$w.db" "$w" "$DIR/cpus.txt" <<'PY'
import re, sqlite3, sys
from collections import defaultdict
db = sqlite3.connect(sys.argv[1])
runs, worst = db.execute(
    "SELECT count(*), max(1.0 - samples / (cpu_seconds * hz)) FROM runs").fetchone()
def tagged(key):
    return db.execute("SELECT count(*) FROM run_tags WHERE key = ?", (key,)).fetchone()[0]
reads = defaultdict(list)  # (round, noise) -> each ring's READs
for line in open(sys.argv[3]):
    f = line.split()
    m = re.search(r"(\d+) reads read", line)
    if f[0] == sys.argv[2] and m:
        reads[(f[1], f[2])].append(int(m.group(1)))
gap = max((max(v) - min(v) for v in reads.values()), default=0)
print(f"{sys.argv[2]}: {runs} runs, {tagged('host.unseen_processes')} tagged "
      f"host.unseen_processes, {tagged('host.silent_ring_seconds')} tagged "
      f"host.silent_ring_seconds; largest unsampled share {100 * (worst or 0):.1f} %; "
      f"largest difference between two rings' READs in a run: {gap}")
PY
done
echo "stderr of tagged runs, if any: $DIR/unseen-*.err; of untagged runs over 10 % unsampled: $DIR/untagged-*.err"
