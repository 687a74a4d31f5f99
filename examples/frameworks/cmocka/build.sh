#!/bin/sh
# Builds the cmocka examples into OUTDIR: OUTDIR/test_cmocka, one binary running four tests,
# and OUTDIR/test_cmocka_leaf (below).
# Needs libcmocka-dev. Frame pointers everywhere so ciprof sees the whole call chain.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
# shellcheck disable=SC2046 # pkg-config output is meant to be split into words
${CC:-cc} -std=c17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" $(pkg-config --cflags cmocka) \
	-o "$1/test_cmocka" "$here/test_cmocka.c" $(pkg-config --libs cmocka)
# OUTDIR/test_cmocka_leaf: the same framework, tests whose hot leaf has no frame.
# shellcheck disable=SC2046
${CC:-cc} -std=c17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" $(pkg-config --cflags cmocka) \
	-o "$1/test_cmocka_leaf" "$here/test_cmocka_leaf.c" $(pkg-config --libs cmocka)
