#!/bin/bash
# bench/attribution/lowhz_pertest.sh: per-test CPU seconds against each test's own getrusage at
# a given --hz (docs/run.md, "CPU seconds"): 150 CTest tests of 5-20 ms of CPU, ctest -j2.
# Per-test figures are whole sampling periods, so at --hz 99 short tests are coarse.
#
#   bench/attribution/lowhz_pertest.sh [CIPROF] [HZ]     (defaults: ./build/ciprof, 99)
#
# Prints how many tests, the worst under and over, how many are more than 30 % off, and the
# two worst each way.
set -eu
CIPROF=$(realpath "${1:-${CIPROF:-./build/ciprof}}")
HZ=${2:-99}
D=$(mktemp -d "${TMPDIR:-/tmp}/ciprof-lowhz.XXXXXX")
trap 'rm -rf "$D"' EXIT
cd "$D"
cat > t.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long spin(long n){ unsigned long h=1; for(long i=0;i<n;i++){h^=i; h*=0x9E3779B97F4A7C15UL;} return h; }
int main(int c, char **v){ int i=atoi(v[1]); sink+=spin((5+i%10)*1000000L);
  struct rusage r; getrusage(RUSAGE_SELF,&r); char fn[64]; snprintf(fn,64,"own/%d",i); FILE*f=fopen(fn,"w");
  fprintf(f,"%d %.6f\n",i,r.ru_utime.tv_sec+r.ru_utime.tv_usec/1e6+r.ru_stime.tv_sec+r.ru_stime.tv_usec/1e6); fclose(f); return 0; }
C
cat > CMakeLists.txt <<'C'
cmake_minimum_required(VERSION 3.16)
project(lowhz C)
set(CMAKE_C_FLAGS "-O2 -g -fno-omit-frame-pointer")
add_executable(t t.c)
enable_testing()
foreach(i RANGE 0 149)
  add_test(NAME case_${i} COMMAND t ${i} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endforeach()
C
cmake -S . -B build >/dev/null && cmake --build build >/dev/null && mkdir -p build/own && cd build
"$CIPROF" -q run --hz "$HZ" --db "$D/db" -- ctest -j2 >/dev/null
"$CIPROF" show --db "$D/db" --by test --format json > by_test.json
python3 - <<'P'
import json, glob
own = {}
for f in glob.glob('own/*'):
    i, v = open(f).read().split(); own['case_' + i] = float(v)
rows = [(t['cpu_seconds'], own[t['name']], t['name']) for t in json.load(open('by_test.json'))['tests'] if t['name'] in own]
errs = sorted((c - o) / o for c, o, n in rows)
print('tests', len(rows), 'worst under %.0f%%' % (100 * errs[0]), 'worst over %.0f%%' % (100 * errs[-1]),
      'off by more than 30%%: %d' % sum(abs(e) > 0.3 for e in errs))
for c, o, n in sorted(rows, key=lambda r: (r[0] - r[1]) / r[1])[:2] + sorted(rows, key=lambda r: (r[0] - r[1]) / r[1])[-2:]:
    print('  %-10s ciprof %.4f s   own getrusage %.4f s' % (n, c, o))
P
