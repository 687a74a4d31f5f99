#!/bin/bash
# Under the LD_PRELOAD backend, a TMPDIR without room for the sampler's files (a full disk, a
# small tmpfs) is named as the cause: "cannot write the sampler's files in DIR: No space left
# on device", with how many processes and threads went unsampled, never blamed on the ring
# count (CIPROF_PRELOAD_SLOTS) or on LD_PRELOAD. A 1 MiB tmpfs is mounted in a private mount
# namespace (unshare), so nothing is left mounted; without one the test is skipped.
. "$(dirname "$0")/lib.sh"

TOOL=$CIPROF_BUILD/tests/burn_ms
[ -x "$TOOL" ] || fail "$TOOL is not built"
NS=(unshare -m)
[ "$(id -u)" = 0 ] || NS=(unshare -rm)
"${NS[@]}" true 2>/dev/null || skip "no private mount namespace here (${NS[*]})"
mkdir -p "$TMP/small"

# in_small_tmpdir NAME KB CMD...: CMD under `ciprof run --backend preload` with TMPDIR a
# 1 MiB tmpfs of which KB KiB are taken.
in_small_tmpdir() {
	local name=$1 kb=$2
	shift 2
	run_capture "$name" "${NS[@]}" sh -c '
		mount -t tmpfs -o size=1m tmpfs "$1" || exit 77
		dd if=/dev/zero of="$1/fill" bs=1k count="$2" 2>/dev/null
		dir=$1
		shift 2
		TMPDIR=$dir exec "$@"' sh "$TMP/small" "$kb" \
		"$CIPROF" run --backend preload --no-store -- "$@"
	[ "$RC" -ne 77 ] || skip "cannot mount a tmpfs in a private mount namespace"
}

# Full: not even a process's file fits.
in_small_tmpdir full 2000 "$TOOL" 30 "$TMP/truth"
expect_rc "a full TMPDIR: the command's status" 0 full
expect_grep "a full TMPDIR is named" "$TMP/full.err" \
	"cannot write the sampler's files in $TMP/small/ciprof-preload."
expect_grep "with the errno" "$TMP/full.err" ": No space left on device; 1 processes were not sampled"
expect_no_grep "not blamed on the ring count" "$TMP/full.err" "more threads at once"
expect_no_grep "not blamed on LD_PRELOAD" "$TMP/full.err" "never loaded the sampler"

# About 140 KiB free: the file (its header and event ring) fits, the thread's ring does not.
in_small_tmpdir ring 880 "$TOOL" 30 "$TMP/truth"
expect_rc "a small TMPDIR: the command's status" 0 ring
expect_grep "a thread whose ring did not fit is counted" "$TMP/ring.err" \
	": No space left on device; 1 threads were not sampled"
expect_no_grep "not blamed on the ring count" "$TMP/ring.err" "more threads at once"
finish
