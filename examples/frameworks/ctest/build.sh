#!/bin/sh
# Configures and builds the CTest example into OUTDIR; then `ctest --test-dir OUTDIR [-j2]`
# runs its four tests, each one or more processes. Needs cmake and a C compiler.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
cmake -S "$here" -B "$1" >"$1.configure.log" 2>&1 || { cat "$1.configure.log" >&2; exit 1; }
cmake --build "$1" >"$1.build.log" 2>&1 || { cat "$1.build.log" >&2; exit 1; }
rm -f "$1.configure.log" "$1.build.log"
