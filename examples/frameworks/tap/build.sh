#!/bin/sh
# Builds the TAP example into OUTDIR: OUTDIR/test_tap, one process printing TAP for four tests.
# Frame pointers everywhere so ciprof sees the whole call chain.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
${CC:-cc} -std=c17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" -o "$1/test_tap" "$here/test_tap.c"
