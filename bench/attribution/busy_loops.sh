# bench/attribution/busy_loops.sh: sourced by preload_thread_marks.sh and preload_many_marks.sh.
# Reads -l LOOPS (busy loops beside the runs, default 4) and -n RUNS (default 4) from the
# caller's arguments (the caller then shifts by OPTIND - 1), makes the scratch directory D,
# and busy_start starts the loops; both are gone when the caller exits.
LOOPS=4 RUNS=4
while getopts l:n: o; do
	case $o in l) LOOPS=$OPTARG ;; n) RUNS=$OPTARG ;; *) exit 2 ;; esac
done
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-bench-marks.XXXXXX")
BUSY=()
busy_cleanup() { [ ${#BUSY[@]} -eq 0 ] || kill "${BUSY[@]}" 2>/dev/null; rm -rf "$D"; }
trap busy_cleanup EXIT
busy_start() {
	for _ in $(seq "$LOOPS"); do
		bash -c 'while :; do :; done' &
		BUSY+=($!)
	done
	echo "$LOOPS busy loops on $(nproc) CPUs"
}
