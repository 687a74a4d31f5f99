#!/bin/bash
# Names are attacker-controlled (symbol tables, perf maps, test names, branch names): control
# characters never reach a terminal or CI log raw (colours, screen clears, fake "::error::"
# workflow commands), and names that are not UTF-8 are repaired, never dropped, in JSON.
. "$(dirname "$0")/lib.sh"

# A JIT function and a test, both with hostile names, so every output has one to print.
cat >"$TMP/hostile.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
/* x86-64: mov rcx, imm64; 1: dec rcx; jnz 1b; ret */
static const unsigned char code[] = {0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
static void mark(const char *what, const char *test)
{
	const char *fd = getenv("CIPROF_CONTROL_FD");
	if (fd)
		dprintf(atoi(fd), "%s %ld %s\n", what, (long)syscall(SYS_gettid), test);
}
int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
	                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	uint64_t n = 60000000;
	memcpy(mem + 2, &n, 8);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)mem, sizeof(code), argv[1]);
	fclose(f);
	void (*fn)(void) = (void (*)(void))mem;
	mark("begin", argv[2]);
	fn();
	fn();
	mark("end", argv[2]);
	fn();
	printf("%s\n", path);
	return 0;
}
C
cc -O1 -o "$TMP/hostile" "$TMP/hostile.c" || fail "cannot compile the test program"

FN=$'jit\e[31mred\a\rcr::error::fake\xff\xfeend'
TEST=$'test\e[2J\x9b1m\r::warning::x\xc3'
DB=$TMP/h.db
run_capture run "$CIPROF" run --hz 999 --db "$DB" -- "$TMP/hostile" "$FN" "$TEST"
rm -f "$(cat "$TMP/run.out" 2>/dev/null)"
[ "$RC" = 0 ] || fail "ciprof run: rc $RC: $(cat "$TMP/run.err")"

# no_raw_controls NAME FILE: FILE holds no ESC, BEL, CR, C1 CSI or invalid UTF-8.
no_raw_controls() {
	if python3 - "$2" <<'PY'; then
import sys
b = open(sys.argv[1], "rb").read()
bad = [c for c in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b") if c in b]
try:
    b.decode("utf-8")
except UnicodeDecodeError as e:
    bad.append(str(e).encode())
if bad:
    print("raw:", bad)
    sys.exit(1)
PY
		ok "$1: no raw control character, valid UTF-8"
	else
		check_failed "$1: raw control characters or invalid UTF-8 in the output"
	fi
}

no_raw_controls "run summary" "$TMP/run.err"
grep -q "jit␛\[31mred␇␍cr::error::fake" "$TMP/run.err" &&
	ok "run summary shows the function name with control pictures" ||
	check_failed "run summary: the JIT function is not shown escaped: $(grep jit "$TMP/run.err")"

run_capture show "$CIPROF" show --db "$DB" --top 0
no_raw_controls "show" "$TMP/show.out"
grep -q "jit␛" "$TMP/show.out" || check_failed "show: the JIT function is missing"
run_capture showt "$CIPROF" show --db "$DB" --by test
no_raw_controls "show --by test" "$TMP/showt.out"
grep -q "test␛\[2J" "$TMP/showt.out" || check_failed "show --by test: the test is missing"
run_capture runs "$CIPROF" runs --db "$DB"
no_raw_controls "runs (the command line holds the names)" "$TMP/runs.out"

# Warnings and errors hold names too (a --junit pattern, an unknown test): escaped as well.
run_capture warn "$CIPROF" run --no-store --junit "$TEST" -- true
no_raw_controls "warning naming a --junit pattern" "$TMP/warn.err"
grep -q "matches no file" "$TMP/warn.err" || check_failed "no --junit warning: $(cat "$TMP/warn.err")"
run_capture err "$CIPROF" show --db "$DB" --test "$TEST"x
[ "$RC" = 3 ] || check_failed "show --test of an unknown test: rc $RC"
no_raw_controls "error naming an unknown test" "$TMP/err.err"

# JSON: every function and test is there, names repaired to valid UTF-8.
run_capture showj "$CIPROF" show --db "$DB" --format json
run_capture showtj "$CIPROF" show --db "$DB" --by test --format json
run_capture runsj "$CIPROF" runs --db "$DB" --format json
run_capture ss "$CIPROF" export --db "$DB" --format speedscope
python3 - "$TMP" <<'PY' && ok "JSON keeps every hostile name" || check_failed "JSON lost or broke a name"
import json, sys
t = sys.argv[1]
fn = json.load(open(t + "/showj.out"))
names = [f["name"] for f in fn["functions"]]
assert any(n.startswith("jit\x1b[31mred\x07\rcr::error::fake\ufffd\ufffdend") for n in names), names
tests = json.load(open(t + "/showtj.out"))["tests"]
assert any(x["name"] == "test\x1b[2J\ufffd1m\r::warning::x\ufffd" for x in tests), tests
runs = json.load(open(t + "/runsj.out"))["runs"]
assert "\ufffd" in runs[0]["command"], runs[0]["command"]
ss = json.load(open(t + "/ss.out"))
frames = ss["shared"]["frames"]
assert any(f["name"].startswith("jit\x1b") for f in frames), [f["name"] for f in frames]
for p in ss["profiles"]:
    for stack in p["samples"]:
        assert all(0 <= i < len(frames) for i in stack), (stack, len(frames))
assert any("test\x1b" in p["name"] for p in ss["profiles"]), [p["name"] for p in ss["profiles"]]
PY

# show --by test --format json lists every test; --top N keeps N and says how many more.
python3 - "$TMP/showtj.out" <<'PY' || check_failed "show --by test JSON: samples and tests disagree"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["more"] == 0, d["more"]
assert sum(x["samples"] for x in d["tests"]) == d["samples"], d
PY
run_capture top1 "$CIPROF" show --db "$DB" --by test --format json --top 1
python3 - "$TMP/top1.out" "$TMP/showtj.out" <<'PY' || check_failed "show --top 1 JSON: 'more' is wrong"
import json, sys
d, all_ = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(d["tests"]) == 1 and d["more"] == len(all_["tests"]) - 1 >= 1, d
PY
ok "show JSON lists every row, 'more' counts what --top left out"
finish
