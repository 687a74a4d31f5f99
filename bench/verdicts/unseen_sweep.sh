#!/usr/bin/env bash
# bench/verdicts/unseen_sweep.sh CIPROF N [DIR]: how often `ciprof run` tags a normal run
# host.unseen_processes (processes the kernel did not follow, docs/run.md "Limits"): N runs
# of each of bench/verdicts' four workloads (`ctest --test-dir build -j2`, each workload built
# in DIR, default a new temporary folder), with a loop of short processes beside them (the
# shape of a rejudge: a Python process, a true, a shell loop, again and again). Prints, per
# workload, the runs, how many were tagged, and the largest unsampled share; the stderr of a
# tagged run is kept in DIR (unseen-*.err), and that of a run over 10 % unsampled that was not
# tagged (untagged-*.err: a fault the check missed). Nothing is timed.
set -u
CIPROF=$(realpath "$1")
N=$2
DIR=${3:-$(mktemp -d /tmp/unseen-sweep.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
for w in workload workload2 workload3 workload4; do
	if [ ! -d "$DIR/$w/build" ]; then
		rm -rf "${DIR:?}/$w" && cp -r "$HERE/$w" "$DIR/$w" &&
			cmake -S "$DIR/$w" -B "$DIR/$w/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
			cmake --build "$DIR/$w/build" -j2 >/dev/null || { echo "cannot build $w" >&2; exit 1; }
	fi
done
(while :; do python3 -c 'sum(range(300000))'; /bin/true; sh -c 'for i in 1 2 3; do :; done'; done) &
LOOP=$!
trap 'kill $LOOP 2>/dev/null' EXIT
for i in $(seq 1 "$N"); do
	for w in workload workload2 workload3 workload4; do
		(cd "$DIR/$w" && "$CIPROF" -vv run --db "$DIR/$w.db" -- ctest --test-dir build -j2 \
			>/dev/null 2>"$DIR/last.err")
		if grep -q "sent no sample" "$DIR/last.err"; then
			cp "$DIR/last.err" "$DIR/unseen-$w-$i.err"
		elif "$CIPROF" runs --db "$DIR/$w.db" --limit 1 --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)["runs"][0]
sys.exit(0 if 1 - r["samples"] / (r["cpu_seconds"] * r["hz"]) > 0.10 else 1)'; then
			cp "$DIR/last.err" "$DIR/untagged-$w-$i.err"
		fi
	done
done
kill $LOOP 2>/dev/null
for w in workload workload2 workload3 workload4; do
	python3 - "$DIR/$w.db" "$w" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs, worst = db.execute(
    "SELECT count(*), max(1.0 - samples / (cpu_seconds * hz)) FROM runs").fetchone()
tagged = db.execute("SELECT count(*) FROM run_tags WHERE key = 'host.unseen_processes'"
                    ).fetchone()[0]
print(f"{sys.argv[2]}: {runs} runs, {tagged} tagged host.unseen_processes, "
      f"largest unsampled share {100 * (worst or 0):.1f} %")
PY
done
echo "stderr of tagged runs, if any: $DIR/unseen-*.err; of untagged runs over 10 % unsampled: $DIR/untagged-*.err"
