#!/bin/bash
# Symbolization end to end on real programs: C++ names come out demangled, shared-library
# frames are named, and code JIT-compiled into anonymous memory is named through the
# /tmp/perf-PID.map file the program writes (as python -X perf or node --perf-basic-prof do).
# A static executable built with frame pointers: its stacks end at __libc_start_call_main,
# not at the garbage a frame-pointer walk finds past it, and draw no frame-pointer warning;
# stripped, it draws one warning saying so.
. "$(dirname "$0")/lib.sh"
command -v g++ >/dev/null || fail "g++ is needed (build-essential)"

cat >"$TMP/widget.cpp" <<'CPP'
#include <cstdio>
#include <vector>
namespace geo {
template <typename T> struct Widget {
	__attribute__((noinline)) T work(int n)
	{
		volatile T acc = 0;
		for (int i = 0; i < n; i++)
			acc = acc + (T)i * (T)0.5;
		return acc;
	}
};
}
__attribute__((noinline)) double drive(int rounds)
{
	geo::Widget<double> w;
	double s = 0;
	for (int r = 0; r < rounds; r++)
		s += w.work(1000000);
	return s;
}
int main() { std::printf("%f\n", drive(300)); }
CPP
g++ -O2 -g -fno-omit-frame-pointer -o "$TMP/widget" "$TMP/widget.cpp" || fail "cannot compile the C++ program"
run_capture cpp "$CIPROF" run --hz 999 --no-store -o "$TMP/cpp.folded" -- "$TMP/widget"
expect_rc "C++ program" 0 cpp
expect_grep "demangled template member" "$TMP/cpp.folded" "geo::Widget<double>::work(int)"
expect_grep "caller of the member function" "$TMP/cpp.folded" "drive(int);geo::Widget<double>::work(int)"
if grep -q '_ZN3geo' "$TMP/cpp.folded"; then check_failed "mangled names left in the profile"; fi

cat >"$TMP/jit.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* x86-64: mov rcx, imm64; 1: dec rcx; jnz 1b; ret */
static const unsigned char code[] = { 0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0,
				      0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3 };
int main(void)
{
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	uint64_t n = 150000000;
	memcpy(mem + 2, &n, 8);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit::hot loop [compiled]\n", (unsigned long)(uintptr_t)mem, sizeof(code));
	fclose(f);
	void (*fn)(void) = (void (*)(void))mem;
	for (int i = 0; i < 3; i++)
		fn();
	printf("%s\n", path);
	return 0;
}
C
cc -O1 -o "$TMP/jit" "$TMP/jit.c" || fail "cannot compile the JIT program"
run_capture jit "$CIPROF" run --hz 999 --no-store -o "$TMP/jit.folded" -- "$TMP/jit"
expect_rc "JIT program" 0 jit
mapfile=$(cat "$TMP/jit.out")
rm -f "$mapfile"
expect_grep "JIT frame named from its perf map" "$TMP/jit.folded" "jit::hot loop [compiled]"
python3 - "$TMP/jit.folded" <<'PY' || check_failed "JIT samples are not the bulk of the profile"
import sys
total = jit = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    total += int(n)
    if stack.split(";")[-1] == "jit::hot loop [compiled]":
        jit += int(n)
print(f"jit leaf samples: {jit}/{total}")
sys.exit(0 if total and jit / total > 0.8 else 1)
PY

# --- a static executable with frame pointers, then stripped ---------------------------------
cat >"$TMP/p.c" <<'C'
#include <stdio.h>
__attribute__((noinline)) unsigned long hot(long n)
{
	unsigned long h = 0;
	for (long i = 0; i < n; i++)
		h = h * 31 + (unsigned long)i;
	return h;
}
__attribute__((noinline)) unsigned long outer(long n) { return hot(n) + 1; }
int main(void)
{
	printf("%lu\n", outer(300000000L));
	return 0;
}
C
if cc -O2 -g -static -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$TMP/p_static" \
	"$TMP/p.c" 2>"$TMP/static.cc"; then
	run_capture static "$CIPROF" run --hz 999 --unwind fp --no-store -o "$TMP/static.folded" \
		-- "$TMP/p_static"
	expect_rc "static executable" 0 static
	expect_no_grep "static executable with frame pointers" "$TMP/static.err" "frame pointers"
	expect_no_grep "static executable: nothing past libc's start" "$TMP/static.folded" \
		"register_tm_clones"
	python3 - "$TMP/static.folded" <<'PY' || check_failed "static stacks do not start at libc's start"
import sys
total = good = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1] != "hot":
        continue
    total += int(n)
    if frames[1:4] == ["__libc_start_call_main", "main", "outer"]:
        good += int(n)
print(f"hot samples under p_static;__libc_start_call_main;main;outer: {good}/{total}")
sys.exit(0 if total and good / total > 0.9 else 1)
PY
	cp "$TMP/p_static" "$TMP/p_stripped"
	strip "$TMP/p_stripped"
	run_capture stripped "$CIPROF" run --hz 999 --unwind fp --no-store -o "$TMP/stripped.folded" \
		-- "$TMP/p_stripped"
	expect_rc "stripped static executable" 0 stripped
	expect_grep "stripped executable named" "$TMP/stripped.err" "p_stripped is stripped"
	n=$(grep -c "is stripped" "$TMP/stripped.err")
	[ "$n" -eq 1 ] && ok "the stripped warning comes once" ||
		check_failed "the stripped warning comes $n times: $(cat "$TMP/stripped.err")"
	expect_no_grep "stripped executable: no frame-pointer advice" "$TMP/stripped.err" \
		"frame pointers"
else
	ok "no static C library here ($(head -n1 "$TMP/static.cc")); static case not checked"
fi
finish
