#!/bin/bash
# Symbolization end to end on real programs: C++ names come out demangled, shared-library
# frames are named, and code JIT-compiled into anonymous memory is named through the
# /tmp/perf-PID.map file the program writes (as python -X perf or node --perf-basic-prof do).
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
finish
