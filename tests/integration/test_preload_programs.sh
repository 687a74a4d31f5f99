#!/bin/bash
# Programs that the LD_PRELOAD sampler must not disturb, and still sample: sleeping in
# nanosleep/poll/select between bursts of CPU, resetting every signal to its default and
# blocking them all, taking the sampler's own signal (sampling steps aside, with a warning),
# many threads, an environment cleared before exec (the sampler is put back), vfork and
# posix_spawn children, and AddressSanitizer programs (ASan first in LD_PRELOAD or linked in).
# The programs are modes of tests/tools/preload_probe.c. Last, -O2 code without frame
# pointers: its stacks stop short, and ciprof says so with advice that fits this backend.
. "$(dirname "$0")/lib.sh"

PROBE=$CIPROF_BUILD/tests/preload_probe
ASAN=$CIPROF_BUILD/tests/preload_probe_asan
for f in "$PROBE" "$ASAN"; do [ -x "$f" ] || fail "$f not built"; done
HZ=999

# prof NAME ARGS...: ciprof run --backend preload on ARGS, profile in $TMP/NAME.folded.
prof() {
	local name=$1
	shift
	run_capture "$name" "$CIPROF" run --backend preload --hz $HZ --no-store \
		-o "$TMP/$name.folded" -- "$@"
}

# samples_of NAME FUNCTION: samples whose stack holds FUNCTION.
samples_of() {
	awk -v f="$2" '{ n = split($1, a, ";"); for (i = 1; i <= n; i++) if (a[i] == f) { s += $NF; break } }
		END { print s + 0 }' "$TMP/$1.folded"
}

# expect_samples NAME FUNCTION MIN: at least MIN samples with FUNCTION on the stack.
expect_samples() {
	local n
	n=$(samples_of "$1" "$2")
	if [ "$n" -ge "$3" ]; then
		ok "$1: $n samples in $2"
	else
		check_failed "$1: $n samples in $2, expected at least $3; profile:"
		sed 's/^/    /' "$TMP/$1.folded" | head -20 >&2
	fi
}

# --- sleeping: CPU-time timers do not fire while asleep; a syscall is never broken ---------
prof sleepy "$PROBE" sleepy 200
expect_rc "nanosleep/poll/select loop" 0 sleepy
expect_grep "every sleep completed" "$TMP/sleepy.out" "sleeps 600 "
expect_samples sleepy probe_sleepy 200 # 200 x 2 ms of CPU = 400 samples at 999 Hz
echo "    $(cat "$TMP/sleepy.out") (EINTR is retried by the program; counted, not an error)"

# --- a program resetting all signals and blocking them keeps running, and sampled ----------
prof reset "$PROBE" reset-signals 0.4
expect_rc "reset and block every signal" 0 reset
expect_samples reset probe_burn 250

# --- a program taking the sampler's signal: it gets it, sampling stops there, with a note ---
prof own "$PROBE" own-handler 0.2
expect_rc "program handler on the timer signal" 0 own
expect_grep "the program's handler ran" "$TMP/own.out" "handled"
expect_grep "the user is told" "$TMP/own.err" "sampling stopped in this process"

# --- threads: each one has its own timer and ring --------------------------------------------
prof threads "$PROBE" threads 12 0.15
expect_rc "12 threads" 0 threads
expect_samples threads probe_thread_burn 1200 # 12 x 0.15 s = 1.8 CPU-s
expect_grep "threads counted" "$TMP/threads.err" "1 process, 13 threads"

# --- the environment cleared before exec: LD_PRELOAD is put back -----------------------------
prof clearenv "$PROBE" clearenv-exec "$PROBE" burn 0.3
expect_rc "execve with an empty environment" 0 clearenv
expect_samples clearenv probe_burn 200

# --- vfork and posix_spawn children are sampled ---------------------------------------------
prof vfork "$PROBE" vfork-exec "$PROBE" burn 0.3
expect_rc "vfork + exec" 0 vfork
expect_samples vfork probe_burn 200
prof spawn "$PROBE" spawn "$PROBE" burn 0.3
expect_rc "posix_spawn" 0 spawn
expect_samples spawn probe_burn 200
prof shell sh -c "$PROBE burn 0.2; $PROBE burn 0.2"
expect_rc "through sh" 0 shell
expect_samples shell probe_burn 300

# --- AddressSanitizer: it must keep working, and be sampled -----------------------------------
prof asan "$ASAN" burn 0.3
expect_rc "ASan program" 0 asan
expect_samples asan probe_burn 200
prof asan_threads "$ASAN" threads 2 0.2
expect_rc "ASan program with threads" 0 asan_threads
expect_samples asan_threads probe_thread_burn 300
prof asan_overflow "$ASAN" overflow
expect_rc "ASan still reports a heap overflow (exit 1)" 1 asan_overflow
expect_grep "ASan's report" "$TMP/asan_overflow.err" "heap-buffer-overflow"
LIBASAN=$(cc -print-file-name=libasan.so 2>/dev/null)
if [ -f "$LIBASAN" ]; then
	# From a git work tree: ciprof's libgit2 then calls strerror(), which is what made a
	# ciprof carrying the user's libasan.so hang for ever in exit() (glibc's locale lock
	# broken by ASan's start-up inside libp11-kit's constructor: cli/main.c). Every time,
	# so this step hangs without the fix; the watchdog turns that into a failure with the
	# stacks instead of a ctest timeout.
	git init -q "$TMP/repo" || fail "git init failed"
	run_watched asan_first env -C "$TMP/repo" LD_PRELOAD="$LIBASAN" \
		"$CIPROF" run --backend preload --hz $HZ --no-store \
		-o "$TMP/asan_first.folded" -- "$ASAN" burn 0.3
	expect_rc "ASan runtime first in the user's LD_PRELOAD" 0 asan_first
	expect_samples asan_first probe_burn 200
	# The runtime is the command's, not ciprof's: ciprof runs itself again without it (no
	# libasan in its own maps), and the command gets the user's LD_PRELOAD unchanged, ASan
	# first, the sampler after it, and nothing of ciprof's bookkeeping.
	run_watched asan_self env -C "$TMP/repo" LD_PRELOAD="$LIBASAN" \
		ASAN_OPTIONS=detect_leaks=0 "$CIPROF" -q run --backend preload --no-store -- \
		sh -c 'echo "ciprof maps $(grep -c libasan /proc/$PPID/maps)";
			echo "LD_PRELOAD=$LD_PRELOAD"; echo "saved $(env | grep -c ^CIPROF_SAVED)"'
	expect_rc "sh under ciprof, ASan in LD_PRELOAD" 0 asan_self
	expect_grep "no ASan runtime inside ciprof" "$TMP/asan_self.out" "ciprof maps 0"
	expect_grep "the command's LD_PRELOAD: ASan first, then the sampler" \
		"$TMP/asan_self.out" "LD_PRELOAD=$LIBASAN:"
	expect_grep "ciprof's saved LD_PRELOAD is not passed on" "$TMP/asan_self.out" "saved 0"
fi
RC=0
ASAN_OPTIONS=verify_asan_link_order=1 "$CIPROF" run --backend preload --no-store -- \
	"$ASAN" burn 0.05 >"$TMP/asan_strict.out" 2>"$TMP/asan_strict.err" </dev/null || RC=$?
[ "$RC" -ne 0 ] && grep -q "does not come first" "$TMP/asan_strict.err" &&
	ok "ASAN_OPTIONS=verify_asan_link_order=1 is respected (and refuses, as documented)" ||
	check_failed "verify_asan_link_order=1: status $RC, $(head -3 "$TMP/asan_strict.err")"

# --- code built without frame pointers ------------------------------------------------------
cat >"$TMP/nofp.c" <<'C'
#include <stdio.h>
__attribute__((noinline)) unsigned long leaf(long n)
{
	unsigned long h = 0;
	for (long i = 0; i < n; i++)
		h = h * 31 + (unsigned long)i;
	return h;
}
__attribute__((noinline)) unsigned long mid(long n) { return leaf(n) + 1; }
__attribute__((noinline)) unsigned long outer(long n) { return mid(n) * 3; }
int main(void) { printf("%lu\n", outer(300000000L)); return 0; }
C
if cc -O2 -fomit-frame-pointer -g "$TMP/nofp.c" -o "$TMP/nofp" 2>"$TMP/cc.err"; then
	run_capture nofp "$CIPROF" run --backend preload --no-store -o "$TMP/nofp.folded" -- "$TMP/nofp"
	expect_rc "an -O2 program without frame pointers" 0 nofp
	expect_grep "short stacks are warned about" "$TMP/nofp.err" \
		"of samples have call stacks that stop short of the program's entry point (most end in nofp)"
	expect_grep "with advice for this backend" "$TMP/nofp.err" \
		"the LD_PRELOAD backend walks frame pointers only; rebuild with -fno-omit-frame-pointer"
	expect_no_grep "no perf-only advice" "$TMP/nofp.err" "try --unwind dwarf"
else
	check_failed "cannot build an -O2 program: $(head -3 "$TMP/cc.err")"
fi
finish
