#!/bin/sh
# Builds the Check example into OUTDIR: OUTDIR/test_check, one binary running four tests in
# two test cases. Needs check (Debian ships Check as static libraries only).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
# shellcheck disable=SC2046 # pkg-config output is meant to be split into words
${CC:-cc} -std=c17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" $(pkg-config --cflags check) \
	-o "$1/test_check" "$here/test_check.c" $(pkg-config --libs check)
