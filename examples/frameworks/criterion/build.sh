#!/bin/sh
# Builds the Criterion example into OUTDIR: OUTDIR/test_criterion, one binary (Criterion
# provides main) running four tests, each in a worker process. Needs libcriterion-dev.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
# shellcheck disable=SC2046 # pkg-config output is meant to be split into words
${CC:-cc} -std=c17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" $(pkg-config --cflags criterion) \
	-o "$1/test_criterion" "$here/test_criterion.c" $(pkg-config --libs criterion)
