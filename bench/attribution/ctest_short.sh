#!/bin/bash
# bench/attribution/ctest_short.sh: how many CTest tests of one program are lost to "(outside
# tests)" by their length (docs/attribution.md): 60 tests, ctest -j2, each spinning SPIN
# iterations (about 2, 4, 6 and 15 ms of CPU); prints ciprof -v's count of test processes that
# ended before their command line could be read. Run it beside a CPU hog too.
#
#   bench/attribution/ctest_short.sh [CIPROF]      (default: ./build/ciprof)
set -eu
C=$(realpath "${1:-${CIPROF:-./build/ciprof}}")
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-ctshort.XXXXXX")
trap 'rm -rf "$D"' EXIT
cd "$D"
cat > CMakeLists.txt <<'X'
cmake_minimum_required(VERSION 3.16)
project(ct C)
enable_testing()
add_executable(tt tt.c)
foreach(i RANGE 1 60)
  add_test(NAME test_${i} COMMAND tt ${i})
endforeach()
X
cat > tt.c <<'X'
#include <stdlib.h>
__attribute__((noinline)) unsigned long spin(unsigned long n){volatile unsigned long s=0;for(unsigned long i=0;i<n;i++)s+=i;return s;}
int main(int c,char**v){ const char*m=getenv("SPIN"); spin(m?strtoul(m,0,10):100000); return 0;}
X
cmake -S . -B build -DCMAKE_C_FLAGS="-O1 -fno-omit-frame-pointer" >/dev/null && cmake --build build >/dev/null && cd build
for s in 100000 1000000 5000000 20000000; do
  echo "== SPIN=$s"
  SPIN=$s "$C" -v run --no-store --no-pty -- ctest -j2 -Q 2>&1 | grep "ended before\|doorbells rang" || echo "  none lost"
done
